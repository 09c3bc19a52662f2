# corpus-shape: a set_seed() helper seeding random, numpy and torch; a map-style Dataset class
#   that augments with numpy's generator in __getitem__; a model made in a build function; the
#   epoch-average loss as a meter outside no_grad; class names as a module constant.
# corpus-metric: epoch \d+: loss ([\d.]+) acc ([\d.]+)
# corpus-tolerance: 0.4 0.05
import random

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

CLASSES = ("low", "mid", "high")


def set_seed(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


class NoisyLevels(Dataset):
    def __init__(self, n):
        rng = np.random.RandomState(0)
        self.levels = rng.randint(0, len(CLASSES), size=n)

    def __len__(self):
        return len(self.levels)

    def __getitem__(self, idx):
        label = int(self.levels[idx])
        x = np.full(6, label, dtype=np.float32) + np.random.normal(0, 0.4, 6).astype(np.float32)
        return torch.from_numpy(x), label


def build_model():
    return nn.Sequential(nn.Linear(6, 20), nn.ReLU(), nn.Linear(20, len(CLASSES)))


set_seed(2024)
dataset = NoisyLevels(300)
loader = DataLoader(dataset, batch_size=15, shuffle=True)
model = build_model()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, nesterov=True)
loss_fn = nn.CrossEntropyLoss()
for epoch in range(4):
    running_loss, running_correct, batches = 0.0, 0, 0
    for inputs, labels in loader:
        optimizer.zero_grad()
        outputs = model(inputs)
        loss = loss_fn(outputs, labels)
        loss.backward()
        optimizer.step()
        running_loss += loss.item()
        running_correct += (outputs.argmax(1) == labels).float().mean().item()
        batches += 1
    print(f"epoch {epoch}: loss {running_loss / batches:.4f} acc {running_correct / batches:.4f}")
