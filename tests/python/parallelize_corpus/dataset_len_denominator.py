# corpus-shape: epoch metrics summed per sample and divided by the dataset's length through
#   its own name (len(train_set)), and with /= len(loader.dataset): each rank's share is only
#   part of the set, so both are taken over that share and averaged, not halved.
# corpus-metric: epoch \d+ train loss ([\d.]+)
# corpus-metric: epoch \d+ .*train accuracy ([\d.]+)
# corpus-tolerance: 0.3 0.02
# corpus-says: len(train_set)
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(8)
inputs = torch.randn(300, 5)
labels = (inputs[:, 0] + inputs[:, 1] > 0).long()
train_set = TensorDataset(inputs, labels)
train_loader = DataLoader(train_set, batch_size=25, shuffle=True)
model = nn.Sequential(nn.Linear(5, 10), nn.ReLU(), nn.Linear(10, 2))
optimizer = torch.optim.Adamax(model.parameters(), lr=2e-2)
criterion = nn.CrossEntropyLoss(reduction="sum")
for epoch in range(4):
    train_loss, train_correct = 0.0, 0
    for xb, yb in train_loader:
        optimizer.zero_grad()
        out = model(xb)
        loss = criterion(out, yb)
        (loss / len(xb)).backward()
        optimizer.step()
        train_loss += loss.item()
        train_correct += (out.argmax(1) == yb).sum().item()
    train_loss = train_loss / len(train_set)
    train_correct /= len(train_loader.dataset)
    print(f"epoch {epoch} train loss {train_loss:.4f}, train accuracy {train_correct:.4f}")
