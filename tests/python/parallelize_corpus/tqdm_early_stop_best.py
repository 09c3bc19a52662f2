# corpus-shape: a Kaggle-style loop: tqdm over the batches with a running loss as its postfix,
#   a validation pass with accuracy, the best model saved, early stopping with patience, then the
#   best weights loaded back (every rank) and the test set scored with them.
# corpus-metric: test accuracy ([\d.]+)
# corpus-metric: best val accuracy ([\d.]+)
# corpus-tolerance: 0.15 0
# corpus-rank0-stderr: it/s
import copy

import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

SEED = 7
np.random.seed(SEED)
torch.manual_seed(SEED)
features = np.random.randn(600, 10).astype(np.float32)
targets = (features[:, 0] * features[:, 1] > 0).astype(np.int64)
X_train, X_val, X_test = np.split(features, [400, 500])
y_train, y_val, y_test = np.split(targets, [400, 500])
train_loader = DataLoader(TensorDataset(torch.from_numpy(X_train), torch.from_numpy(y_train)), batch_size=20,
                          shuffle=True, drop_last=True)
val_loader = DataLoader(TensorDataset(torch.from_numpy(X_val), torch.from_numpy(y_val)), batch_size=50)
test_loader = DataLoader(TensorDataset(torch.from_numpy(X_test), torch.from_numpy(y_test)), batch_size=50)

model = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 2))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=5e-3)


def score(loader):
    model.eval()
    right, seen = 0, 0
    with torch.no_grad():
        for xb, yb in loader:
            right += (model(xb).argmax(1) == yb).sum().item()
            seen += len(yb)
    return right / seen


best_acc, patience, waited = 0.0, 3, 0
for epoch in range(40):
    model.train()
    loop = tqdm(train_loader, leave=False)
    running = 0.0
    for step, (xb, yb) in enumerate(loop, 1):
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        running += loss.item()
        loop.set_description(f"Epoch [{epoch}]")
        loop.set_postfix(loss=running / step)
    val_acc = score(val_loader)
    if val_acc > best_acc:
        best_acc, waited = val_acc, 0
        torch.save(model.state_dict(), "best_model.pt")
        best_state = copy.deepcopy(model.state_dict())
    else:
        waited += 1
        if waited >= patience:
            print(f"early stopping at epoch {epoch}")
            break

model.load_state_dict(torch.load("best_model.pt"))
print(f"best val accuracy {best_acc:.4f}")
print(f"test accuracy {score(test_loader):.4f}")
