# corpus-shape: class imbalance handled with a WeightedRandomSampler given to the training
#   DataLoader (made beside it, by name), and one with replacement in place: each epoch one draw of
#   the script's sampler, the same on every rank (its generator seeded alike, plus the epoch), dealt
#   out between the ranks, so together they train on what one process draws.
# corpus-says: its WeightedRandomSampler's draws dealt out between the ranks
# corpus-says: train_loader.sampler.set_epoch(epoch) each epoch
# corpus-metric: minority recall ([\d.]+)
# corpus-tolerance: 0.05 0.01
import torch
from torch.utils.data import DataLoader, RandomSampler, TensorDataset, WeightedRandomSampler

torch.manual_seed(9)
x = torch.randn(400, 4)
y = (x[:, 0] + 0.8 * x[:, 1] + 0.5 * torch.randn(400) > 1.2).long()
weights = torch.where(y == 1, 1.0 / (y == 1).sum(), 1.0 / (y == 0).sum())
sampler = WeightedRandomSampler(weights, num_samples=len(weights), replacement=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=20, sampler=sampler)
warm_loader = DataLoader(TensorDataset(x, y), batch_size=20,
                         sampler=RandomSampler(range(len(y)), replacement=True, num_samples=200))
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.02)
for xb, yb in warm_loader:
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(xb), yb).backward()
    opt.step()
for epoch in range(4):
    for xb, yb in train_loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    with torch.no_grad():
        hits = ((model(x).argmax(1) == 1) & (y == 1)).sum().item()
    print(f"epoch {epoch} minority recall {hits / (y == 1).sum().item():.3f}")
