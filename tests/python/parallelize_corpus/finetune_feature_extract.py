# corpus-shape: PyTorch's finetuning tutorial with feature extraction: a frozen backbone whose new
#   head alone trains, the optimizer given params_to_update, a list filled from
#   named_parameters() (the whole model must still be wrapped or broadcast: it is found through
#   what was appended), the dict of loaders passed to train_model(model, dataloaders, ...), ratios
#   over len(dataloaders[phase].dataset), the best weights kept with copy.deepcopy. No global
#   seed: each process makes the model its own way, so rank 0's must reach the others.
# corpus-says-ddp: model 'model_ft' wrapped in DistributedDataParallel
# corpus-metric: val Loss: ([\d.]+)
# corpus-metric: Best val Acc: ([\d.]+)
# corpus-tolerance: 0.3 0.05
import copy
import time

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import TensorDataset

data_gen = torch.Generator().manual_seed(7)
imgs = torch.randn(600, 3, 8, 8, generator=data_gen)
lbl = (imgs[:, 1].mean((1, 2)) > 0).long()
image_datasets = {"train": TensorDataset(imgs[:480], lbl[:480]), "val": TensorDataset(imgs[480:], lbl[480:])}
batch_size = 16
dataloaders_dict = {x: torch.utils.data.DataLoader(image_datasets[x], batch_size=batch_size, shuffle=True, num_workers=0)
                    for x in ["train", "val"]}
device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")


def train_model(model, dataloaders, criterion, optimizer, num_epochs=25, is_inception=False):
    since = time.time()
    val_acc_history = []
    best_model_wts = copy.deepcopy(model.state_dict())
    best_acc = 0.0
    for epoch in range(num_epochs):
        print("Epoch {}/{}".format(epoch, num_epochs - 1))
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
                    loss = criterion(outputs, labels)
                    _, preds = torch.max(outputs, 1)
                    if phase == "train":
                        loss.backward()
                        optimizer.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += torch.sum(preds == labels.data)
            epoch_loss = running_loss / len(dataloaders[phase].dataset)
            epoch_acc = running_corrects.double() / len(dataloaders[phase].dataset)
            print("{} Loss: {:.4f} Acc: {:.4f}".format(phase, epoch_loss, epoch_acc))
            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model.state_dict())
            if phase == "val":
                val_acc_history.append(epoch_acc)
    time_elapsed = time.time() - since
    print("Training complete in {:.0f}m {:.0f}s".format(time_elapsed // 60, time_elapsed % 60))
    print("Best val Acc: {:4f}".format(best_acc))
    model.load_state_dict(best_model_wts)
    return model, val_acc_history


def set_parameter_requires_grad(model, feature_extracting):
    if feature_extracting:
        for param in model.parameters():
            param.requires_grad = False


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(3, 8), nn.Tanh())
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(self.features(x))


feature_extract = True
model_ft = Backbone()
set_parameter_requires_grad(model_ft, feature_extract)
model_ft.fc = nn.Linear(model_ft.fc.in_features, 2)
model_ft = model_ft.to(device)
params_to_update = model_ft.parameters()
print("Params to learn:")
if feature_extract:
    params_to_update = []
    for name, param in model_ft.named_parameters():
        if param.requires_grad:
            params_to_update.append(param)
            print("\t", name)
else:
    for name, param in model_ft.named_parameters():
        if param.requires_grad:
            print("\t", name)
optimizer_ft = optim.SGD(params_to_update, lr=0.05, momentum=0.9)
criterion = nn.CrossEntropyLoss()
model_ft, hist = train_model(model_ft, dataloaders_dict, criterion, optimizer_ft, num_epochs=8)
