# corpus-shape: scalars logged to TensorBoard through a SummaryWriter made at the top (one run
#   folder, made by the writer: every rank would make its own), add_scalar per step and epoch,
#   add_hparams-style closing, writer.close(). Where TensorBoard is not installed, a stand-in
#   with the same interface writes the scalars as CSV under the same folder.
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-tolerance: 0.5 0.05
# corpus-says: SummaryWriter made on rank 0 only
import os

import torch
from torch.utils.data import DataLoader, TensorDataset

try:
    from torch.utils.tensorboard import SummaryWriter
except ImportError:  # TensorBoard is not installed: the same calls, written as CSV
    class SummaryWriter:
        def __init__(self, log_dir=None):
            self.log_dir = log_dir or "runs/default"
            os.makedirs(self.log_dir, exist_ok=True)
            self.f = open(os.path.join(self.log_dir, "scalars.csv"), "w")

        def add_scalar(self, tag, value, step):
            self.f.write(f"{tag},{step},{value}\n")

        def flush(self):
            self.f.flush()

        def close(self):
            self.f.close()

torch.manual_seed(3)
x = torch.randn(160, 5)
y = torch.sin(x).sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=10, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(5, 32), torch.nn.ReLU(), torch.nn.Linear(32, 1))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
writer = SummaryWriter(log_dir="runs/experiment")
global_step = 0
for epoch in range(3):
    epoch_loss = 0.0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        optimizer.step()
        writer.add_scalar("train/loss", loss.item(), global_step)
        global_step += 1
        epoch_loss += loss.item()
    writer.add_scalar("train/epoch_loss", epoch_loss / len(train_loader), epoch)
    writer.flush()
    print(f"epoch {epoch} loss {epoch_loss / len(train_loader):.4f}")
writer.close()
