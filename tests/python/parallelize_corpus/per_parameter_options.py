# corpus-shape: torch.optim's per-parameter options: parameter groups for a pretrained-style
#   backbone (model.base) and a new head (model.classifier) with a rate of its own, the default
#   rate for the rest; StepLR; the accuracy over a held-out set at the end.
# corpus-says: a parameter group's learning rate scaled by the number of ranks
# corpus-says-ddp: model 'model' wrapped in DistributedDataParallel
# corpus-says-horovod: optimizer wrapped in hvd.DistributedOptimizer
# corpus-metric: held-out accuracy ([\d.]+)
# corpus-tolerance: 0.1 0.05
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.base = nn.Sequential(nn.Linear(6, 24), nn.ReLU())
        self.classifier = nn.Linear(24, 2)

    def forward(self, x):
        return self.classifier(self.base(x))


torch.manual_seed(0)
x = torch.randn(640, 6)
y = (x[:, 0] * x[:, 1] > 0).long()
train_loader = DataLoader(TensorDataset(x[:512], y[:512]), batch_size=16, shuffle=True)
model = Net()
optimizer = torch.optim.SGD([
    {"params": model.base.parameters()},
    {"params": model.classifier.parameters(), "lr": 2e-2},
], lr=5e-2, momentum=0.9)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=4, gamma=0.5)
for epoch in range(6):
    model.train()
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        optimizer.step()
    scheduler.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
model.eval()
with torch.no_grad():
    accuracy = (model(x[512:]).argmax(1) == y[512:]).float().mean().item()
print(f"held-out accuracy {accuracy:.3f}")
