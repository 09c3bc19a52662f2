# corpus-shape: class imbalance handled with a WeightedRandomSampler given to the training
#   DataLoader: a sampler of the script's own cannot be split between ranks automatically, so the
#   conversion refuses, naming the line and what to do by hand.
# corpus-refused: has a sampler of its own
import torch
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

torch.manual_seed(9)
x = torch.randn(200, 4)
y = (x[:, 0] > 1.0).long()
weights = torch.where(y == 1, 1.0 / (y == 1).sum(), 1.0 / (y == 0).sum())
sampler = WeightedRandomSampler(weights, num_samples=len(weights), replacement=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=20, sampler=sampler)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for xb, yb in train_loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    print("epoch", epoch)
