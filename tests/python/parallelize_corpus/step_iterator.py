# corpus-shape: a loop over optimizer steps, not epochs (as step-based trainers run): batches
#   taken with next() from an iterator over the DataLoader, made again when it runs out; a cosine
#   schedule stepped every step; the loss logged every few steps; the accuracy at the end.
# corpus-says: DataLoader 'loader' given a DistributedSampler
# corpus-says: loader.sampler's epoch advanced each time the loop starts the data over
# corpus-metric: final accuracy ([\d.]+)
# corpus-tolerance: 0.1 0.05
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
g = torch.Generator().manual_seed(1)
x = torch.randn(600, 10, generator=g)
y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
loader = DataLoader(TensorDataset(x, y), batch_size=20, shuffle=True, drop_last=True)
model = nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 2))
opt = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.01)
max_steps = 90
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max_steps)
step = 0
data_iter = iter(loader)
while step < max_steps:
    try:
        xb, yb = next(data_iter)
    except StopIteration:
        data_iter = iter(loader)
        xb, yb = next(data_iter)
    loss = F.cross_entropy(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    step += 1
    if step % 30 == 0:
        print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.5f}")
model.eval()
with torch.no_grad():
    acc = (model(x).argmax(1) == y).float().mean().item()
print(f"final accuracy {acc:.3f}")
