# corpus-shape: a model that keeps layers its forward() never runs: an auxiliary head kept for a
#   later experiment, and inside a block class of the script a projection left over from an
#   older version. DistributedDataParallel stops such a script at its second step unless it
#   looks for unused parameters.
# corpus-metric: epoch \d+ train loss ([\d.]+)
# corpus-metric: val accuracy ([\d.]+)
# corpus-says-ddp: finding unused parameters
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.old_proj = nn.Linear(width, width)  # no longer used
        self.act = nn.GELU()

    def forward(self, x):
        return x + self.act(self.fc(x))


class Net(nn.Module):
    def __init__(self, width=32, classes=4):
        super().__init__()
        self.stem = nn.Linear(10, width)
        self.blocks = nn.Sequential(Block(width), Block(width))
        self.head = nn.Linear(width, classes)
        self.aux_head = nn.Linear(width, classes)  # for a later experiment

    def features(self, x):
        return self.blocks(F.relu(self.stem(x)))

    def forward(self, x):
        return self.head(self.features(x))


g = torch.Generator().manual_seed(1)
X = torch.randn(1200, 10, generator=g)
y = (X[:, 0] > 0).long() + 2 * (X[:, 1] + X[:, 2] > 0).long()
train = torch.utils.data.TensorDataset(X[:1000], y[:1000])
val = torch.utils.data.TensorDataset(X[1000:], y[1000:])
train_loader = torch.utils.data.DataLoader(train, batch_size=50, shuffle=True)
val_loader = torch.utils.data.DataLoader(val, batch_size=100)

model = Net()
optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
for epoch in range(4):
    model.train()
    total, batches = 0.0, 0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
        total += loss.item()
        batches += 1
    print(f"epoch {epoch} train loss {total / batches:.4f}")

model.eval()
correct = 0
with torch.no_grad():
    for xb, yb in val_loader:
        correct += (model(xb).argmax(1) == yb).sum().item()
print(f"val accuracy {correct / len(val):.4f}")
