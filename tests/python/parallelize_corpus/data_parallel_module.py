# corpus-shape: a script written for one process on several GPUs: the model wrapped in
#   nn.DataParallel when more than one GPU is seen, its weights saved through .module. Each rank
#   keeps to its own GPU: DataParallel kept to it (horovod) or dropped for DDP's wrap (ddp).
# corpus-says: nn.DataParallel
# corpus-metric: epoch \d+ mean loss ([\d.]+)
# corpus-tolerance: 0.3 0.02
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(2)
features = torch.randn(384, 4)
targets = (features[:, 1] - features[:, 2] > 0).long()
loader = DataLoader(TensorDataset(features, targets), batch_size=16, shuffle=True)
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)).to(device)
if torch.cuda.device_count() > 1:
    print("Let's use", torch.cuda.device_count(), "GPUs!")
model = nn.DataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)
for epoch in range(3):
    total, batches = 0.0, 0
    for xb, yb in loader:
        xb, yb = xb.to(device), yb.to(device)
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item()
        batches += 1
    print(f"epoch {epoch} mean loss {total / batches:.4f}")
torch.save(model.module.state_dict(), "weights.pt")
