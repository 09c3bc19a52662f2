# corpus-shape: an engine object made from the model before the optimizer (`engine =
#   Classifier(model=net, device=device)` whose base class keeps `self.net = model.to(device)`),
#   the optimizer then built from the script's own name (SGD(net.parameters())) and passed to
#   the engine's step. DDP averages only what goes through the wrapper, so the engine must hold
#   the wrapped model; its own attributes (self.net.head) are read through .module.
# corpus-says-ddp: kept as engine.net
# corpus-says-ddp: self.net.head read from the wrapped model's .module
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-tolerance: 0.3 0.02
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(5)
X = torch.randn(512, 6)
Y = (X[:, 1] - 0.5 * X[:, 3] + 0.2 * X[:, 5] > 0).long()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 24), nn.Tanh())
        self.head = nn.Linear(24, 2)

    def forward(self, x):
        return self.head(self.body(x))


class Engine:
    def __init__(self, model, device):
        self.device = device
        self.net = model.to(device)
        self.loss_fn = nn.CrossEntropyLoss()


class Classifier(Engine):
    def step(self, xb, yb, optimizer):
        optimizer.zero_grad()
        loss = self.loss_fn(self.net(xb.to(self.device)), yb.to(self.device))
        loss.backward()
        optimizer.step()
        return loss.item()

    def head_norm(self):
        return self.net.head.weight.norm().item()


device = "cpu"
net = Net()
engine = Classifier(model=net, device=device)
optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
for epoch in range(4):
    total = 0.0
    for xb, yb in loader:
        total += engine.step(xb, yb, optimizer)
    print(f"epoch {epoch} loss {total / len(loader):.4f} head {engine.head_norm():.3f}")
torch.save(net.state_dict(), "engine_net.pt")
