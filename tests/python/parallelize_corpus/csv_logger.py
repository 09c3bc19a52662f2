# corpus-shape: metrics written to a CSV file opened at the top with open(..., "w") and
#   csv.writer (not in a with block), a header row, a row per epoch, the file closed at the end;
#   the final weights saved with numpy.
# corpus-metric: epoch \d+ val_mse ([\d.]+)
# corpus-tolerance: 0.5 0.05
import csv

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(11)
X = torch.rand(200, 3)
Y = (X ** 2).sum(1, keepdim=True)
train_set, val_set = TensorDataset(X[:160], Y[:160]), TensorDataset(X[160:], Y[160:])
train_loader = DataLoader(train_set, batch_size=16, shuffle=True)
val_loader = DataLoader(val_set, batch_size=40)
net = nn.Sequential(nn.Linear(3, 24), nn.ReLU(), nn.Linear(24, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.5)
log_file = open("metrics.csv", "w", newline="")
log = csv.writer(log_file)
log.writerow(["epoch", "train_mse", "val_mse"])
for epoch in range(4):
    net.train()
    train_mse = 0.0
    for xb, yb in train_loader:
        opt.zero_grad()
        loss = nn.functional.mse_loss(net(xb), yb)
        loss.backward()
        opt.step()
        train_mse += loss.item() / len(train_loader)
    net.eval()
    with torch.no_grad():
        val_mse = sum(nn.functional.mse_loss(net(xb), yb).item() for xb, yb in val_loader) / len(val_loader)
    log.writerow([epoch, f"{train_mse:.5f}", f"{val_mse:.5f}"])
    print(f"epoch {epoch} val_mse {val_mse:.4f}")
log_file.close()
np.save("weights.npy", np.concatenate([p.detach().numpy().ravel() for p in net.parameters()]))
