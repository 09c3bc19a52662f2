# corpus-shape: a training accuracy counted over the epoch and divided by len(loader.dataset)
#   (each rank counts its share only: printed as one process prints it, not halved).
# corpus-says: averaged over the ranks
# corpus-metric: epoch \d+ train accuracy ([\d.]+)
# corpus-tolerance: 0.1 0
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(96, 8)
y = (x.sum(1) > 0).long()
train_dl = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    correct = 0
    for xb, yb in train_dl:
        opt.zero_grad()
        out = model(xb)
        loss = torch.nn.functional.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        correct += (out.argmax(1) == yb).sum().item()
    print(f"epoch {epoch} train accuracy {100.0 * correct / len(train_dl.dataset):.2f}")
