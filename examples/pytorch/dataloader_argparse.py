"""Classifies four Gaussian blobs with a small MLP: argparse, a main guard, DataLoaders, a StepLR
schedule, an evaluation loop and a saved state dict. One process; `hoop-parallelize` makes it
distributed (see README.md here)."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


def blobs(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 4, (n,), generator=g)
    centres = torch.tensor([[2.0, 2.0], [-2.0, 2.0], [-2.0, -2.0], [2.0, -2.0]])
    return centres[labels] + torch.randn(n, 2, generator=g) * 1.2, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--save", default="blobs_model.pt")
    args = parser.parse_args()
    torch.manual_seed(0)

    train_loader = DataLoader(TensorDataset(*blobs(4096, 1)), batch_size=args.batch_size, shuffle=True)
    test_loader = DataLoader(TensorDataset(*blobs(1024, 2)), batch_size=256)
    model = nn.Sequential(nn.Linear(2, 32), nn.ReLU(), nn.Linear(32, 4))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)

    first = None
    for epoch in range(args.epochs):
        model.train()
        for x, y in train_loader:
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
        scheduler.step()
        model.eval()
        correct, total = 0, 0
        with torch.no_grad():
            for x, y in test_loader:
                correct += (model(x).argmax(1) == y).sum().item()
                total += len(y)
        accuracy = 100.0 * correct / total
        first = accuracy if first is None else first
        print(f"epoch {epoch}: test accuracy {accuracy:.1f}%")
    torch.save(model.state_dict(), args.save)
    print(f"final accuracy {accuracy:.1f}% (first epoch {first:.1f}%)")


if __name__ == "__main__":
    main()
