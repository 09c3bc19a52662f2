# corpus-shape: a trainer object that keeps the model it is given (self.model = model) and builds
#   its optimizer from the constructor's argument (SGD(model.parameters())); the loader is handed
#   to its method each epoch (trainer.train_epoch(train_dl)) and the weights saved through
#   self.model. The wrapped model must be the one self.model calls, or nothing is averaged.
# corpus-says-ddp: kept as self.model
# corpus-says: train_dl.sampler.set_epoch(epoch) each epoch
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-tolerance: 0.3 0.02
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(12)
X = torch.randn(480, 5)
Y = (X[:, 0] * 0.7 - X[:, 4] > 0).long()


class Trainer:
    def __init__(self, model, lr):
        self.model = model
        self.optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
        self.loss_fn = nn.CrossEntropyLoss()

    def train_epoch(self, loader):
        self.model.train()
        total, count = 0.0, 0
        for xb, yb in loader:
            self.optimizer.zero_grad()
            loss = self.loss_fn(self.model(xb), yb)
            loss.backward()
            self.optimizer.step()
            total += loss.item() * len(xb)
            count += len(xb)
        return total / count

    def save(self, path):
        torch.save(self.model.state_dict(), path)


train_dl = DataLoader(TensorDataset(X, Y), batch_size=24, shuffle=True)
trainer = Trainer(nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 2)), lr=0.05)
for epoch in range(4):
    print(f"epoch {epoch} loss {trainer.train_epoch(train_dl):.4f}")
trainer.save("trainer_model.pt")
