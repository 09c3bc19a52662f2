# Logistic regression on a linearly separable set, no shuffling, no main guard; the metrics go
# to a JSON file at the end. One process; `hoop-parallelize` makes it distributed (see
# README.md here).
import json

import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
features = torch.randn(4096, 4)
labels = (features @ torch.tensor([1.0, -2.0, 0.5, 1.5]) > 0).long()
train_data = DataLoader(TensorDataset(features, labels), batch_size=128)
model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

history = []
for epoch in range(6):
    for x, y in train_data:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    hits = 0
    with torch.no_grad():
        hits += (model(features).argmax(1) == labels).sum().item()
    history.append(100.0 * hits / len(labels))

with open("json_metrics.json", "w") as out:
    json.dump({"accuracy": history}, out)
print(f"final accuracy {history[-1]:.1f}% (first epoch {history[0]:.1f}%)")
