# corpus-shape: torchvision's classification reference (references/classification/train.py): a
#   get_args_parser(), load_data() returning the datasets and their samplers (RandomSampler for
#   training, SequentialSampler for the test set), DataLoaders given those samplers,
#   train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, print_freq) and
#   evaluate() under torch.inference_mode(), a checkpoint dict with the args saved every epoch.
# corpus-says: given a DistributedSampler in place of its RandomSampler
# corpus-says: data_loader.sampler.set_epoch(epoch) each epoch
# corpus-metric: Acc@1 ([\d.]+)
# corpus-tolerance: 0.1 2
import argparse
import time

import torch
import torch.utils.data
from torch import nn


def train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, print_freq):
    model.train()
    start = time.time()
    for i, (image, target) in enumerate(data_loader):
        image, target = image.to(device), target.to(device)
        output = model(image)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i % print_freq == 0:
            print(f"Epoch: [{epoch}] [{i}/{len(data_loader)}] loss: {loss.item():.4f}")
    print(f"Epoch {epoch} took {time.time() - start:.2f}s")


def evaluate(model, criterion, data_loader, device):
    model.eval()
    correct, total = 0, 0
    with torch.inference_mode():
        for image, target in data_loader:
            output = model(image.to(device))
            correct += (output.argmax(1) == target.to(device)).sum().item()
            total += target.numel()
    acc = 100.0 * correct / total
    print(f"Acc@1 {acc:.3f}")
    return acc


def load_data(n):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 1, 8, 8, generator=g)
    y = (x.mean((1, 2, 3)) > 0).long()
    dataset = torch.utils.data.TensorDataset(x[: n * 3 // 4], y[: n * 3 // 4])
    dataset_test = torch.utils.data.TensorDataset(x[n * 3 // 4:], y[n * 3 // 4:])
    train_sampler = torch.utils.data.RandomSampler(dataset)
    test_sampler = torch.utils.data.SequentialSampler(dataset_test)
    return dataset, dataset_test, train_sampler, test_sampler


def main(args):
    device = torch.device(args.device)
    torch.manual_seed(0)
    dataset, dataset_test, train_sampler, test_sampler = load_data(400)
    data_loader = torch.utils.data.DataLoader(dataset, batch_size=args.batch_size, sampler=train_sampler)
    data_loader_test = torch.utils.data.DataLoader(dataset_test, batch_size=64, sampler=test_sampler)
    model = nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2)).to(device)
    criterion = nn.CrossEntropyLoss(label_smoothing=args.label_smoothing)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.wd)
    lr_scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=args.lr_step_size, gamma=args.lr_gamma)
    for epoch in range(args.start_epoch, args.epochs):
        train_one_epoch(model, criterion, optimizer, data_loader, device, epoch, args.print_freq)
        lr_scheduler.step()
        evaluate(model, criterion, data_loader_test, device=device)
        checkpoint = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch, "args": args}
        torch.save(checkpoint, "checkpoint.pth")


def get_args_parser():
    parser = argparse.ArgumentParser(description="PyTorch Classification Training", add_help=True)
    parser.add_argument("--device", default="cpu", type=str)
    parser.add_argument("-b", "--batch-size", default=16, type=int)
    parser.add_argument("--epochs", default=4, type=int)
    parser.add_argument("--lr", default=0.05, type=float)
    parser.add_argument("--momentum", default=0.9, type=float)
    parser.add_argument("--wd", "--weight-decay", default=1e-4, type=float, dest="wd")
    parser.add_argument("--label-smoothing", default=0.0, type=float)
    parser.add_argument("--lr-step-size", default=30, type=int)
    parser.add_argument("--lr-gamma", default=0.1, type=float)
    parser.add_argument("--print-freq", default=10, type=int)
    parser.add_argument("--start-epoch", default=0, type=int)
    return parser


if __name__ == "__main__":
    args = get_args_parser().parse_args()
    main(args)
