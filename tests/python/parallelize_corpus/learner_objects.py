# corpus-shape: a data object that builds its loaders as attributes, and a learner object given
#   the training loader, with its model, optimizer and one_epoch() method; the epoch loop at the
#   top of the script calls learner.one_epoch() and prints the mean loss it returns.
# corpus-says: DataLoader 'self.train_loader' given a DistributedSampler
# corpus-says: learner.loader.sampler.set_epoch(epoch) each epoch
# corpus-metric: epoch 3 loss ([\d.]+)
# corpus-tolerance: 0.5 0.05
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Data:
    def __init__(self, n=400, batch=25):
        g = torch.Generator().manual_seed(3)
        x = torch.randn(n, 5, generator=g)
        y = (x[:, 1] - x[:, 2] > 0).long()
        self.train_loader = DataLoader(TensorDataset(x, y), batch_size=batch, shuffle=True)


class Learner:
    def __init__(self, loader, lr=0.2):
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
        self.opt = torch.optim.SGD(self.net.parameters(), lr=lr)
        self.loader = loader

    def one_epoch(self):
        total = 0.0
        for xb, yb in self.loader:
            self.opt.zero_grad()
            loss = F.cross_entropy(self.net(xb), yb)
            loss.backward()
            self.opt.step()
            total += loss.item()
        return total / len(self.loader)


data = Data()
learner = Learner(data.train_loader)
for epoch in range(4):
    avg = learner.one_epoch()
    print(f"epoch {epoch} loss {avg:.4f}")
