"""Learns XOR-like labels with Adam given its learning rate by position, a cosine schedule, and
writes the per-epoch loss to a CSV file. One process; `hoop-parallelize` makes it distributed
(see README.md here)."""
import csv

import torch
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset


def run():
    torch.manual_seed(0)
    x = torch.rand(4096, 2) * 2 - 1
    y = ((x[:, 0] > 0) ^ (x[:, 1] > 0)).float().unsqueeze(1)
    train = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    model = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 1))
    opt = optim.Adam(model.parameters(), 1e-2)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
    losses = []
    for epoch in range(10):
        running = 0.0
        for xb, yb in train:
            opt.zero_grad()
            loss = nn.functional.binary_cross_entropy_with_logits(model(xb), yb)
            loss.backward()
            opt.step()
            running += loss.item() * len(xb)
        sched.step()
        losses.append(running / len(x))
    with open("adam_losses.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["epoch", "loss"])
        w.writerows(enumerate(losses))
    print(f"final loss {losses[-1]:.4f} (first epoch {losses[0]:.4f})")


if __name__ == "__main__":
    run()
