# corpus-shape: gradient accumulation (step() on every 3rd pass; 10 batches per rank and epoch,
#   so every epoch ends on a short round) with clip_grad_value_ before the step, AdamW.
# corpus-says-horovod: opt.synchronize() after each backward pass
# corpus-metric: epoch \d+ mean loss ([\d.]+)
# corpus-tolerance: 0.5 0.1
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
accum = 3
for epoch in range(3):
    total = 0.0
    for step, (xb, yb) in enumerate(train_loader):
        loss = torch.nn.functional.mse_loss(model(xb), yb) / accum
        loss.backward()
        total += loss.item() * accum
        if (step + 1) % accum == 0:
            torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
    print("epoch", epoch, "mean loss", total / len(train_loader))
