"""Regression with the training and the evaluation in functions of their own, called from an
epoch loop; SGD imported from torch.optim by name, a StepLR schedule, argparse. One process;
`hoop-parallelize` makes it distributed (see README.md here)."""
import argparse

import torch
import torch.nn.functional as F
from torch.optim import SGD
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    w = torch.arange(1.0, 9.0).unsqueeze(1) / 8
    return TensorDataset(x, x @ w + 0.05 * torch.randn(n, 1, generator=g))


def train_epoch(model, loader, optimizer):
    model.train()
    for x, y in loader:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()


def evaluate(model, loader):
    model.eval()
    total_loss, count = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            total_loss += F.mse_loss(model(x), y, reduction="sum").item()
            count += len(x)
    return total_loss / count


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--lr", type=float, default=0.01)
    args = parser.parse_args()
    torch.manual_seed(0)
    train_loader = DataLoader(make_data(4096, 1), batch_size=32, shuffle=True)
    val_loader = DataLoader(make_data(1024, 2), batch_size=128)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    optimizer = SGD(model.parameters(), lr=args.lr, momentum=0.9)
    scheduler = StepLR(optimizer, step_size=2, gamma=0.7)
    first = evaluate(model, val_loader)
    for epoch in range(args.epochs):
        train_epoch(model, train_loader, optimizer)
        scheduler.step()
        print(f"epoch {epoch}: validation loss {evaluate(model, val_loader):.4f}")
    print(f"final loss {evaluate(model, val_loader):.4f} (first epoch {first:.4f})")


if __name__ == "__main__":
    main()
