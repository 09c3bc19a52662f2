# corpus-shape: everything in functions: parse_args(), a build() returning model and optimizer,
#   a fit() generator yielding each epoch's loss, main(argv) returning an exit code, and
#   `sys.exit(main())` behind the main guard; a JSON summary written at the end.
# corpus-args: --epochs 3
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-tolerance: 0.5 0.05
import argparse
import json
import sys

import torch
from torch.utils.data import DataLoader, TensorDataset


def parse_args(argv):
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--lr", type=float, default=0.02)
    return p.parse_args(argv)


def build(lr):
    model = torch.nn.Sequential(torch.nn.Linear(7, 14), torch.nn.Sigmoid(), torch.nn.Linear(14, 1))
    optimizer = torch.optim.RAdam(model.parameters(), lr=lr)
    return model, optimizer


def fit(model, optimizer, loader, epochs):
    for epoch in range(epochs):
        total = 0.0
        for features, target in loader:
            optimizer.zero_grad()
            loss = torch.nn.functional.smooth_l1_loss(model(features), target)
            loss.backward()
            optimizer.step()
            total += loss.item()
        yield epoch, total / len(loader)


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    torch.manual_seed(17)
    features = torch.randn(140, 7)
    target = features.mean(1, keepdim=True).relu()
    loader = DataLoader(TensorDataset(features, target), batch_size=10, shuffle=True)
    model, optimizer = build(args.lr)
    history = []
    for epoch, loss in fit(model, optimizer, loader, args.epochs):
        print(f"epoch {epoch} loss {loss:.4f}")
        history.append(loss)
    with open("summary.json", "w") as f:
        json.dump({"losses": history}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
