# corpus-shape: PyTorch's transfer-learning tutorial: a dict of DataLoaders made by one
#   comprehension over the phases, one loop over ["train", "val"] that iterates
#   dataloaders[phase] and runs backward only in training, ratios over dataset_sizes[phase], the
#   best weights kept in a TemporaryDirectory of the process's own and loaded back at the end.
# corpus-says: on each loader of dataloaders each epoch
# corpus-says: a ratio over dataset_sizes[phase]
# corpus-says: temporary directory
# corpus-metric: val Loss: [\d.]+ Acc: ([\d.]+)
# corpus-metric: Best val Acc: ([\d.]+)
# corpus-tolerance: 0.08 0.03
import os
import time
from tempfile import TemporaryDirectory

import torch
import torch.nn as nn
import torch.optim as optim
from torch.optim import lr_scheduler
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(11)
images = torch.randn(720, 3, 8, 8)
classes = (images[:, 0].mean((1, 2)) > images[:, 2].mean((1, 2))).long()
image_datasets = {"train": TensorDataset(images[:600], classes[:600]),
                  "val": TensorDataset(images[600:], classes[600:])}
dataloaders = {x: DataLoader(image_datasets[x], batch_size=24, shuffle=True) for x in ["train", "val"]}
dataset_sizes = {x: len(image_datasets[x]) for x in ["train", "val"]}
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


class SmallNet(nn.Module):
    """Stands for a pretrained backbone whose classifier is replaced."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                      nn.Flatten())
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(self.features(x))


def train_model(model, criterion, optimizer, scheduler, num_epochs=5):
    since = time.time()
    with TemporaryDirectory() as tempdir:
        best_model_params_path = os.path.join(tempdir, "best_model_params.pt")
        torch.save(model.state_dict(), best_model_params_path)
        best_acc = 0.0
        for epoch in range(num_epochs):
            print(f"Epoch {epoch}/{num_epochs - 1}")
            print("-" * 10)
            for phase in ["train", "val"]:
                if phase == "train":
                    model.train()
                else:
                    model.eval()
                running_loss = 0.0
                running_corrects = 0
                for inputs, labels in dataloaders[phase]:
                    inputs = inputs.to(device)
                    labels = labels.to(device)
                    optimizer.zero_grad()
                    with torch.set_grad_enabled(phase == "train"):
                        outputs = model(inputs)
                        _, preds = torch.max(outputs, 1)
                        loss = criterion(outputs, labels)
                        if phase == "train":
                            loss.backward()
                            optimizer.step()
                    running_loss += loss.item() * inputs.size(0)
                    running_corrects += torch.sum(preds == labels.data)
                if phase == "train":
                    scheduler.step()
                epoch_loss = running_loss / dataset_sizes[phase]
                epoch_acc = running_corrects.double() / dataset_sizes[phase]
                print(f"{phase} Loss: {epoch_loss:.4f} Acc: {epoch_acc:.4f}")
                if phase == "val" and epoch_acc > best_acc:
                    best_acc = epoch_acc
                    torch.save(model.state_dict(), best_model_params_path)
        time_elapsed = time.time() - since
        print(f"Training complete in {time_elapsed // 60:.0f}m {time_elapsed % 60:.0f}s")
        print(f"Best val Acc: {best_acc:4f}")
        model.load_state_dict(torch.load(best_model_params_path))
    return model


model_ft = SmallNet()
num_ftrs = model_ft.fc.in_features
model_ft.fc = nn.Linear(num_ftrs, 2)
model_ft = model_ft.to(device)
criterion = nn.CrossEntropyLoss()
optimizer_ft = optim.SGD(model_ft.parameters(), lr=0.05, momentum=0.9)
exp_lr_scheduler = lr_scheduler.StepLR(optimizer_ft, step_size=5, gamma=0.1)
model_ft = train_model(model_ft, criterion, optimizer_ft, exp_lr_scheduler, num_epochs=8)
torch.save(model_ft.state_dict(), "model_ft.pt")
