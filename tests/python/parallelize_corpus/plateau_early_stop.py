# corpus-shape: ReduceLROnPlateau and early stopping on a validation loss (the whole validation
#   set on every rank): every rank must take the same decisions or they leave at different epochs.
# corpus-says: val_loss averaged over the ranks after the no_grad block
# corpus-metric: final val loss ([\d.]+)
# corpus-tolerance: 0.5 0.05
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x, xv = torch.randn(80, 8), torch.randn(40, 8)
y, yv = x.sum(1, keepdim=True), xv.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
val_loader = DataLoader(TensorDataset(xv, yv), batch_size=10)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
best, bad = float("inf"), 0
for epoch in range(30):
    model.train()
    for xb, yb in train_loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        opt.step()
    model.eval()
    val_loss = 0.0
    with torch.no_grad():
        for xb, yb in val_loader:
            val_loss += torch.nn.functional.mse_loss(model(xb), yb, reduction="sum").item()
    val_loss /= len(val_loader.dataset)
    plateau.step(val_loss)
    if val_loss < best - 1e-3:
        best, bad = val_loss, 0
    else:
        bad += 1
        if bad >= 3:
            print("early stop at epoch", epoch)
            break
print("final val loss", val_loss)
