# corpus-shape: AMP as its docs show it (autocast + GradScaler; on the GPU where there is one,
#   the scaler off on the CPU): scaler.scale(loss).backward(), unscale_, clip, scaler.step.
# corpus-says-horovod: opt.synchronize() before the gradients are unscaled (AMP)
# corpus-metric: epoch \d+ mean loss ([\d.]+)
# corpus-tolerance: 0.5 0.1
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
scaler = torch.cuda.amp.GradScaler(enabled=device == "cuda")
for epoch in range(3):
    total = 0.0
    for xb, yb in train_loader:
        xb, yb = xb.to(device), yb.to(device)
        opt.zero_grad()
        with torch.autocast(device, enabled=device == "cuda"):
            loss = torch.nn.functional.mse_loss(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        total += loss.item()
    print("epoch", epoch, "mean loss", total / len(train_loader))
