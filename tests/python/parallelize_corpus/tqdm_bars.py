# corpus-shape: a tqdm bar per epoch (drawn by rank 0 only) with the loss as its postfix.
# corpus-says: the progress bar drawn by rank 0 only
# corpus-says: train_loader.sampler.set_epoch(epoch)
# corpus-rank0-stderr: it/s
# corpus-metric: epoch \d+ done, loss ([\d.]+)
# corpus-tolerance: 0.5 0.1
import torch
from torch.utils.data import DataLoader, TensorDataset
from tqdm import tqdm

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    bar = tqdm(train_loader, desc=f"epoch {epoch}")
    running = 0.0
    for i, (xb, yb) in enumerate(bar):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        running += loss.item()
        bar.set_postfix(loss=running / (i + 1))
    print(f"epoch {epoch} done, loss {running / len(train_loader):.4f}")
