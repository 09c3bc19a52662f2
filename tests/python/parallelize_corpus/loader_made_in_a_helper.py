# corpus-shape: the DataLoader built in a helper function (its sampler local there): set_epoch
#   reaches it through the loader's name in the loop.
# corpus-says: DataLoader 'loader' given a DistributedSampler
# corpus-says: train_dl.sampler.set_epoch(epoch) each epoch
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-tolerance: 0.5 0.1
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)


def make_loader(batch):
    ds = TensorDataset(x, y)
    loader = DataLoader(ds, batch_size=batch, shuffle=True)
    return loader


train_dl = make_loader(4)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    losses = []
    for xb, yb in train_dl:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    print("epoch", epoch, "loss", sum(losses) / len(losses))
