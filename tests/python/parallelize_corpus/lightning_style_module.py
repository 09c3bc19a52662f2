# corpus-shape: a Lightning-style module without Lightning: configure_optimizers() returns the
#   optimizer (assigned in the constructor), training_step() and validation_step() return the
#   loss, and a fit() function outside the class runs the epochs over the loaders it is given.
# corpus-says: loader.sampler.set_epoch(epoch) each epoch
# corpus-says-ddp: model 'self.model' wrapped in DistributedDataParallel
# corpus-says-horovod: optimizer wrapped in hvd.DistributedOptimizer
# corpus-metric: val_loss=([\d.]+)
# corpus-tolerance: 0.5 0.05
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class LitRegressor:
    def __init__(self, lr=0.05):
        torch.manual_seed(0)
        self.lr = lr
        self.model = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 1))
        self.optimizer = self.configure_optimizers()

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.lr)

    def training_step(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self.model(x), y)

    def validation_step(self, batch):
        x, y = batch
        return nn.functional.mse_loss(self.model(x), y, reduction="sum")


def fit(module, loader, val_loader, epochs):
    for epoch in range(epochs):
        for batch in loader:
            module.optimizer.zero_grad()
            loss = module.training_step(batch)
            loss.backward()
            module.optimizer.step()
        total = 0.0
        with torch.no_grad():
            for batch in val_loader:
                total += module.validation_step(batch).item()
        print(f"epoch {epoch}: val_loss={total / len(val_loader.dataset):.4f}")


if __name__ == "__main__":
    g = torch.Generator().manual_seed(7)
    x = torch.randn(500, 4, generator=g)
    y = (x[:, :1] * 2 - x[:, 1:2]).tanh()
    train_loader = DataLoader(TensorDataset(x[:400], y[:400]), batch_size=20, shuffle=True)
    val_loader = DataLoader(TensorDataset(x[400:], y[400:]), batch_size=50)
    fit(LitRegressor(), train_loader, val_loader, epochs=5)
