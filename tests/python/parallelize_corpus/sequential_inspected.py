# corpus-shape: an nn.Sequential model looked into by index, length and iteration (model[0],
#   len(model), `for layer in model`), in a helper called once before the optimizer is built and
#   again after every epoch, and at the top level after training. DistributedDataParallel has no
#   items, no len() and no iteration: after the wrap they are the wrapped model's, and the helper,
#   which also runs before the wrap, reads them from whichever model it is given.
# corpus-says-ddp: model[...] read from the wrapped model's .module (in describe(), which also runs before the wrap
# corpus-says-ddp: len(model) read from the wrapped model's .module
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-metric: first layer norm ([\d.]+)
# corpus-tolerance: 0.1 0
import torch
import torch.nn as nn

torch.manual_seed(3)
X = torch.randn(384, 5)
Y = (X[:, 0] * 0.7 - X[:, 2] + 0.3 * X[:, 4]).unsqueeze(1)

model = nn.Sequential(nn.Linear(5, 16), nn.Tanh(), nn.Linear(16, 1))


def describe(tag):
    widths = [layer.out_features for layer in model if isinstance(layer, nn.Linear)]
    print(f"{tag}: {len(model)} layers, widths {widths}, first layer norm {model[0].weight.norm().item():.4f}")


describe("start")
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(4):
    total = 0.0
    for i in range(0, 384, 32):
        loss = nn.functional.mse_loss(model(X[i:i + 32]), Y[i:i + 32])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        total += loss.item()
    print(f"epoch {epoch} loss {total / 12:.4f}")
    describe(f"after epoch {epoch}")
print("last layer bias", float(model[len(model) - 1].bias))
