# corpus-shape: a job that checkpoints every epoch (model, optimizer, scheduler, epoch in one
#   dict, written to a temporary name and moved into place) and resumes from the checkpoint when
#   one exists (every rank loads it, map_location to the CPU). Run twice: the second run resumes.
# corpus-runs: 2
# corpus-metric: epoch (\d+) loss
# corpus-metric: resumed at epoch (\d+)
# corpus-tolerance: 0 0
import os

import torch
from torch.utils.data import DataLoader, TensorDataset

CKPT = "ckpt/last.pt"
EPOCHS_PER_RUN = 2

torch.manual_seed(0)
x = torch.randn(128, 6)
y = x @ torch.arange(1.0, 7.0).unsqueeze(1)
loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
net = torch.nn.Sequential(torch.nn.Linear(6, 12), torch.nn.Tanh(), torch.nn.Linear(12, 1))
optim = torch.optim.RMSprop(net.parameters(), lr=1e-3)
sched = torch.optim.lr_scheduler.ExponentialLR(optim, gamma=0.9)
start = 0
if os.path.exists(CKPT):
    state = torch.load(CKPT, map_location="cpu")
    net.load_state_dict(state["model"])
    optim.load_state_dict(state["optim"])
    sched.load_state_dict(state["sched"])
    start = state["epoch"] + 1
    print(f"resumed at epoch {start}")
os.makedirs(os.path.dirname(CKPT), exist_ok=True)
for epoch in range(start, start + EPOCHS_PER_RUN):
    for xb, yb in loader:
        optim.zero_grad()
        loss = torch.nn.functional.mse_loss(net(xb), yb)
        loss.backward()
        optim.step()
    sched.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
    torch.save({"model": net.state_dict(), "optim": optim.state_dict(), "sched": sched.state_dict(),
                "epoch": epoch}, CKPT + ".tmp")
    os.replace(CKPT + ".tmp", CKPT)
