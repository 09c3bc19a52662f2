# corpus-shape: a helper returns a dict of DataLoaders filled key by key; training iterates
#   loaders["train"] in a function given the dict, evaluation loaders["val"] under no_grad,
#   counted over n_val = len(val_set): every loader of the dict is split, the counts averaged.
# corpus-says: on each loader of loaders each epoch
# corpus-says: a ratio over n_val
# corpus-metric: epoch \d+ val accuracy ([\d.]+)
# corpus-tolerance: 0.06 0.02
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(5)
features = torch.randn(560, 6)
target = (features[:, 1] + 0.5 * features[:, 4] + 0.4 * torch.randn(560) > 0).long()
train_set = TensorDataset(features[:440], target[:440])
val_set = TensorDataset(features[440:], target[440:])
n_val = len(val_set)


def make_loaders(batch_size):
    loaders = {}
    loaders["train"] = DataLoader(train_set, batch_size=batch_size, shuffle=True)
    loaders["val"] = DataLoader(val_set, batch_size=2 * batch_size)
    return loaders


def train_one_epoch(model, optimizer, loaders):
    model.train()
    for xb, yb in loaders["train"]:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(xb), yb).backward()
        optimizer.step()


def main():
    loaders = make_loaders(20)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(4):
        train_one_epoch(model, optimizer, loaders)
        model.eval()
        correct = 0
        with torch.no_grad():
            for xb, yb in loaders["val"]:
                correct += (model(xb).argmax(1) == yb).sum().item()
        print(f"epoch {epoch} val accuracy {correct / n_val:.4f}")


if __name__ == "__main__":
    main()
