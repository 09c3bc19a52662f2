# corpus-shape: a regression loop clipping the gradients' norm before step(), OneCycleLR stepped
#   per batch (its max_lr overrides the optimizer's rate, so it is scaled too).
# corpus-says: OneCycleLR's max_lr scaled
# corpus-says-horovod: opt.synchronize() before the gradients are clipped
# corpus-metric: epoch \d+ mean loss ([\d.]+)
# corpus-tolerance: 0.5 0.05
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=3 * len(train_loader))
for epoch in range(3):
    total = 0.0
    for xb, yb in train_loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
        total += loss.item()
    print("epoch", epoch, "mean loss", total / len(train_loader))
