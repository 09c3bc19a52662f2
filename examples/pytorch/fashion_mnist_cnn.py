"""A small CNN on (part of) Fashion-MNIST from Debian's dataset-fashion-mnist, logging its
progress with the logging module and saving a checkpoint. One process; `hoop-parallelize`
makes it distributed (see README.md here)."""
import gzip
import logging
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

DATA = "/usr/share/datasets/fashion-mnist"
logging.basicConfig(level=logging.INFO, format="%(message)s")
log = logging.getLogger("fashion")


def read(name, offset, count):
    with gzip.open(os.path.join(DATA, name + ".gz"), "rb") as f:
        raw = np.frombuffer(f.read(), np.uint8, offset=offset)
    return raw[:count * (784 if offset == 16 else 1)]


def dataset(prefix, count):
    x = torch.tensor(read(f"{prefix}-images-idx3-ubyte", 16, count), dtype=torch.float32).view(-1, 1, 28, 28) / 255
    y = torch.tensor(read(f"{prefix}-labels-idx1-ubyte", 8, count).astype(np.int64))
    return TensorDataset(x, y)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 5, padding=2)
        self.fc = nn.Linear(8 * 14 * 14, 10)

    def forward(self, x):
        return self.fc(F.max_pool2d(F.relu(self.conv(x)), 2).flatten(1))


if __name__ == "__main__":
    torch.manual_seed(0)
    train_loader = DataLoader(dataset("train", 6000), batch_size=50, shuffle=True)
    test_loader = DataLoader(dataset("t10k", 1000), batch_size=500)
    model = Net()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    first = None
    for epoch in range(3):
        for images, labels in train_loader:
            optimizer.zero_grad()
            loss = F.cross_entropy(model(images), labels)
            loss.backward()
            optimizer.step()
        correct = 0
        seen = 0
        with torch.no_grad():
            for images, labels in test_loader:
                correct += (model(images).argmax(1) == labels).sum().item()
                seen += len(labels)
        first = correct / seen if first is None else first
        log.info("epoch %d: test accuracy %.1f%%", epoch, 100 * correct / seen)
    torch.save({"model": model.state_dict(), "epoch": 3}, "fashion_checkpoint.pt")
    print(f"final accuracy {100 * correct / seen:.1f}% (first epoch {100 * first:.1f}%)")
