# corpus-shape: the "What is torch.nn really?" tutorial's last form: get_data() returns the two
#   loaders as a tuple, get_model() returns the model and its optimizer as a tuple (`model, opt
#   = get_model()`), a loss_batch() helper runs backward and the step when given the optimizer,
#   fit() loops over the loaders given to it, and both loaders are wrapped in a
#   WrappedDataLoader that applies a preprocessing function (its sampler under .dl).
# corpus-says: (the loader under its wrapper's .dl) each epoch
# corpus-says-ddp: model 'model' wrapped in DistributedDataParallel
# corpus-says-horovod: optimizer wrapped in hvd.DistributedOptimizer
# corpus-metric: val_loss ([\d.]+)
# corpus-tolerance: 0.3 0.03
import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, optim
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(1)
x_train = torch.randn(800, 64)
y_train = (x_train[:, :8].sum(1) > 0).long()
x_valid = torch.randn(200, 64)
y_valid = (x_valid[:, :8].sum(1) > 0).long()
train_ds = TensorDataset(x_train, y_train)
valid_ds = TensorDataset(x_valid, y_valid)
bs = 32
lr = 0.1
epochs = 3
loss_func = F.cross_entropy


def get_data(train_ds, valid_ds, bs):
    return (
        DataLoader(train_ds, batch_size=bs, shuffle=True),
        DataLoader(valid_ds, batch_size=bs * 2),
    )


def preprocess(x, y):
    return x.view(-1, 1, 8, 8), y


class WrappedDataLoader:
    def __init__(self, dl, func):
        self.dl = dl
        self.func = func

    def __len__(self):
        return len(self.dl)

    def __iter__(self):
        for b in self.dl:
            yield self.func(*b)


def loss_batch(model, loss_func, xb, yb, opt=None):
    loss = loss_func(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item(), len(xb)


def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
    for epoch in range(epochs):
        model.train()
        for xb, yb in train_dl:
            loss_batch(model, loss_func, xb, yb, opt)
        model.eval()
        with torch.no_grad():
            losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
        val_loss = np.sum(np.multiply(losses, nums)) / np.sum(nums)
        print(f"epoch {epoch} val_loss {val_loss:.4f}")


def get_model():
    model = nn.Sequential(
        nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 2))
    return model, optim.SGD(model.parameters(), lr=lr, momentum=0.9)


train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
train_dl = WrappedDataLoader(train_dl, preprocess)
valid_dl = WrappedDataLoader(valid_dl, preprocess)
model, opt = get_model()
fit(epochs, model, loss_func, opt, train_dl, valid_dl)
