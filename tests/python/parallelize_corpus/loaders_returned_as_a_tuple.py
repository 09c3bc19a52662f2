# corpus-shape: PyTorch's ImageNet example's arrangement: loaders returned as a tuple by one
#   function, trained on by another that takes the loader as an argument, main() returns.
# corpus-says: DataLoader built at line
# corpus-says: train_loader.sampler.set_epoch(epoch) each epoch
# corpus-metric: epoch \d+ loss ([\d.]+)
# corpus-tolerance: 0.5 0.1
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x, xv = torch.randn(80, 8), torch.randn(40, 8)
y, yv = x.sum(1, keepdim=True), xv.sum(1, keepdim=True)


def get_loaders(bs):
    train_ds = TensorDataset(x, y)
    val_ds = TensorDataset(xv, yv)
    return DataLoader(train_ds, batch_size=bs, shuffle=True), DataLoader(val_ds, batch_size=20)


def train_one_epoch(model, loader, opt):
    total = 0.0
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item()
    return total / len(loader)


def main():
    train_loader, val_loader = get_loaders(4)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        loss = train_one_epoch(model, train_loader, opt)
        print("epoch", epoch, "loss", loss)
    return model


if __name__ == "__main__":
    main()
