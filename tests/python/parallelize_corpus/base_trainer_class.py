# corpus-shape: pytorch-template's trainer: a Trainer class given the model, criterion, optimizer
#   and loaders by keyword from main(), keeping them as attributes; train() runs the epochs and
#   calls _train_epoch(epoch), which iterates self.data_loader, and _valid_epoch(epoch), which
#   iterates self.valid_data_loader under no_grad; a running mean of the loss as a meter; the
#   best model saved by monitoring the validation loss.
# corpus-says: DataLoader 'data_loader' given a DistributedSampler
# corpus-says: self.data_loader.sampler.set_epoch(epoch) each epoch
# corpus-metric: val_loss\s+: ([\d.]+)
# corpus-metric: val_accuracy\s+: ([\d.]+)
# corpus-tolerance: 0.35 0.05
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self, model, criterion, optimizer, epochs, data_loader, valid_data_loader=None):
        self.model = model
        self.criterion = criterion
        self.optimizer = optimizer
        self.epochs = epochs
        self.data_loader = data_loader
        self.valid_data_loader = valid_data_loader
        self.mnt_best = float("inf")

    def _train_epoch(self, epoch):
        self.model.train()
        running, seen = 0.0, 0
        for batch_idx, (data, target) in enumerate(self.data_loader):
            self.optimizer.zero_grad()
            loss = self.criterion(self.model(data), target)
            loss.backward()
            self.optimizer.step()
            running += loss.item() * len(data)
            seen += len(data)
        return {"loss": running / seen}

    def _valid_epoch(self, epoch):
        self.model.eval()
        total_loss = 0.0
        correct = 0
        with torch.no_grad():
            for data, target in self.valid_data_loader:
                output = self.model(data)
                total_loss += self.criterion(output, target).item() * len(data)
                correct += (output.argmax(1) == target).sum().item()
        n = len(self.valid_data_loader.dataset)
        return {"val_loss": total_loss / n, "val_accuracy": correct / n}

    def train(self):
        for epoch in range(1, self.epochs + 1):
            log = {"epoch": epoch, **self._train_epoch(epoch), **self._valid_epoch(epoch)}
            for key, value in log.items():
                print(f"    {key:15s}: {value}")
            if log["val_loss"] < self.mnt_best:
                self.mnt_best = log["val_loss"]
                torch.save({"epoch": epoch, "state_dict": self.model.state_dict()}, "model_best.pth")


def blobs(n, seed):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 3, (n,), generator=g)
    x = torch.randn(n, 6, generator=g) * 0.6 + F.one_hot(y, 6).float() * 2
    return TensorDataset(x, y)


def main():
    torch.manual_seed(0)
    data_loader = DataLoader(blobs(480, 1), batch_size=24, shuffle=True)
    valid_data_loader = DataLoader(blobs(150, 2), batch_size=50)
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 3))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    trainer = Trainer(model, nn.CrossEntropyLoss(), optimizer, epochs=4, data_loader=data_loader,
                      valid_data_loader=valid_data_loader)
    trainer.train()


if __name__ == "__main__":
    main()
