# corpus-shape: the older CIFAR tutorials' validation split: an index list shuffled by NumPy's
#   unseeded generator, cut into train_idx and valid_idx, each given to a SubsetRandomSampler
#   over the one dataset; losses divided by len(loader.sampler). The training loader becomes a
#   DistributedSampler over Subset(dataset, train_idx), and every rank must cut the same list
#   (NumPy seeded alike on every rank), or the ranks' shares overlap and leak the validation part.
#   The split is unseeded, so each run's last validation loss spreads widely (0.08 to 0.22 over
#   runs); the best one, compared here, spreads less (0.09 to 0.13).
# corpus-says: in place of its SubsetRandomSampler, over Subset(dataset, train_idx)
# corpus-says: numpy random generator(s) seeded alike on every rank
# corpus-metric: Best validation loss: ([\d.]+)
# corpus-tolerance: 0.3 0.03
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.sampler import SubsetRandomSampler

torch.manual_seed(21)
X = torch.randn(2400, 8)  # enough that a random split moves the validation loss little
Y = ((X[:, 0] + X[:, 1] * X[:, 2]) > 0).long()
full = TensorDataset(X, Y)

valid_size = 0.2
num_train = len(full)
indices = list(range(num_train))
np.random.shuffle(indices)
split = int(np.floor(valid_size * num_train))
train_idx, valid_idx = indices[split:], indices[:split]

train_loader = DataLoader(full, batch_size=24, sampler=SubsetRandomSampler(train_idx))
valid_sampler = SubsetRandomSampler(valid_idx)
valid_loader = DataLoader(full, batch_size=24, sampler=valid_sampler)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 2)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


model = Net()
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
valid_loss_min = np.inf
for epoch in range(5):
    train_loss, valid_loss = 0.0, 0.0
    model.train()
    for data, target in train_loader:
        optimizer.zero_grad()
        loss = criterion(model(data), target)
        loss.backward()
        optimizer.step()
        train_loss += loss.item() * data.size(0)
    model.eval()
    for data, target in valid_loader:
        valid_loss += criterion(model(data), target).item() * data.size(0)
    train_loss = train_loss / len(train_loader.sampler)
    valid_loss = valid_loss / len(valid_loader.sampler)
    print(f"Epoch: {epoch} \tTraining Loss: {train_loss:.6f} \tValidation Loss: {valid_loss:.6f}")
    valid_loss_min = min(valid_loss_min, valid_loss)
print(f"Best validation loss: {valid_loss_min:.6f}")
