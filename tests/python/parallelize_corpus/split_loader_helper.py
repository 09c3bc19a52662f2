# corpus-shape: one helper makes every split's DataLoader (get_dataloader(split), shuffled only
#   for training, as many repositories write it); the validation accuracy each epoch is counted
#   over the whole validation split, which must stay whole on every rank.
# corpus-says: only the shuffled ones it makes are split between the ranks
# corpus-says: train_loader.sampler.set_epoch(epoch) each epoch
# corpus-metric: val acc ([\d.]+)
# corpus-tolerance: 0.08 0.03
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

g = torch.Generator().manual_seed(0)
X = torch.randn(600, 5, generator=g)
Y = (X[:, 0] - X[:, 3] > 0).long()


def get_dataloader(split, batch_size=20):
    if split == "train":
        ds = TensorDataset(X[:480], Y[:480])
    else:
        ds = TensorDataset(X[480:], Y[480:])
    return DataLoader(ds, batch_size=batch_size, shuffle=(split == "train"))


train_loader = get_dataloader("train")
val_loader = get_dataloader("val", batch_size=60)
torch.manual_seed(0)
model = nn.Linear(5, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for xb, yb in train_loader:
        opt.zero_grad()
        nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    correct = 0
    with torch.no_grad():
        for xb, yb in val_loader:
            correct += (model(xb).argmax(1) == yb).sum().item()
    print(f"epoch {epoch} val acc {correct / len(val_loader.dataset):.3f}")
