#!/usr/bin/python3
"""perf/torch_train.py: the PyTorch twin of hoop-train, for side-by-side throughput.

The same models (trainer/model.h: LeNet with 16 and 32 channels, the small ResNet with batch
norm, ResNet-18/34 on Fashion-MNIST padded to 32x32), the same Fashion-MNIST files and normalisation, the same SGD (momentum, weight decay,
cosine schedule) and the same batch, in one process with --threads intra-op threads. Reports
images/s over the training steps only (evaluation excluded, as hoop-train's images_per_s) and
the test accuracy after each epoch. Needs Debian's python3-torch: run it with /usr/bin/python3.
With --device cuda (a PyTorch with CUDA, as on the GPU machine) the model and the data sets live on
the GPU, with PyTorch's defaults for TF32 (convolutions may use it, matrix products do not), as
hoop-train --device cuda's; an epoch's time ends with the device's work (synchronised).
--benchmark sets cudnn.benchmark (cuDNN's algorithms chosen by measurement, per shape);
--precision bf16 runs forward and loss under torch.autocast in bf16 (f32 weights, as hoop-train
--precision bf16), on the CPU or the GPU; --channels-last puts the model and images in NHWC.

usage: /usr/bin/python3 perf/torch_train.py [--model lenet|resnet|resnet18|resnet34] [--epochs N] [--batch N]
         [--lr X] [--threads N] [--train-limit N] [--test-limit N] [--seed N] [--data DIR] [--json FILE]
         [--device cpu|cuda] [--precision fp32|bf16] [--channels-last] [--benchmark]
"""
import argparse
import gzip
import json
import math
import os
import struct
import sys
import time

try:
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:
    sys.exit(f"torch_train.py: {e} (install Debian's python3-torch and run with /usr/bin/python3)")

MEAN, STD = 0.2860, 0.3530


def idx(path):
    for p in (path + ".gz", path):
        if os.path.exists(p):
            data = (gzip.open if p.endswith(".gz") else open)(p, "rb").read()
            magic, = struct.unpack(">I", data[:4])
            dims = struct.unpack(">" + "I" * (magic & 0xFF), data[4:4 + 4 * (magic & 0xFF)])
            return np.frombuffer(data, np.uint8, offset=4 + 4 * len(dims)).reshape(dims)
    sys.exit(f"torch_train.py: no {path}.gz (or {path})")


class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = nn.Conv2d(1, 16, 5, padding=2), nn.Conv2d(16, 32, 5)
        self.fc1, self.fc2, self.fc3 = nn.Linear(800, 120), nn.Linear(120, 84), nn.Linear(84, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2).flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, i, o, stride):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(i, o, 3, stride, 1, bias=False), nn.BatchNorm2d(o)
        self.conv2, self.bn2 = nn.Conv2d(o, o, 3, 1, 1, bias=False), nn.BatchNorm2d(o)
        self.shortcut = nn.Sequential()
        if i != o or stride != 1:
            self.shortcut = nn.Sequential(nn.Conv2d(i, o, 1, stride, bias=False), nn.BatchNorm2d(o))

    def forward(self, x):
        y = self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x)))))
        return F.relu(y + self.shortcut(x))


class DeepResNet(nn.Module):
    """ResNet-18/34 in their CIFAR form (hoop-train's resnet18/resnet34): 3x3 stem of 64, four
    stages of basic blocks (64, 128, 256, 512 channels), average pooling, 512-10."""

    def __init__(self, blocks, channels=1):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(channels, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64)
        layers, i = [], 64
        for stage, n in enumerate(blocks):
            o = 64 << stage
            for b in range(n):
                layers.append(Block(i, o, 2 if b == 0 and stage > 0 else 1))
                i = o
        self.blocks = nn.Sequential(*layers)
        self.fc = nn.Linear(512, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def make_model(name):
    """The model called `name` (hoop-train's --model)."""
    return {"lenet": LeNet, "resnet": lambda: ResNet(), "resnet18": lambda: DeepResNet([2, 2, 2, 2]),
            "resnet34": lambda: DeepResNet([3, 4, 6, 3])}[name]()


def pad_for(name):
    """Black border that brings Fashion-MNIST's 28x28 to the model's input (32x32 for resnet18/34)."""
    return 2 if name in ("resnet18", "resnet34") else 0


def prepare(x, name):
    """uint8 images (N x 28 x 28) as the model's normalised N x 1 x H x W float input."""
    x = torch.tensor(x, dtype=torch.float32).div_(255).sub_(MEAN).div_(STD).unsqueeze(1)
    p = pad_for(name)
    return F.pad(x, (p, p, p, p), value=-MEAN / STD) if p else x


MODELS = ["lenet", "resnet", "resnet18", "resnet34"]


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(1, 16, 3, 1, 1, bias=False), nn.BatchNorm2d(16)
        self.blocks = nn.Sequential(Block(16, 16, 1), Block(16, 32, 2), Block(32, 64, 2))
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.blocks(F.relu(self.bn(self.conv(x))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


def main():
    ap = argparse.ArgumentParser(description="PyTorch twin of hoop-train (one process)")
    ap.add_argument("--model", choices=MODELS, default="lenet", help="as hoop-train --model (default lenet)")
    ap.add_argument("--epochs", type=int, default=1, help="default 1")
    ap.add_argument("--batch", type=int, default=0, help="default: lenet 32, resnet 64 (as hoop-train)")
    ap.add_argument("--lr", type=float, default=0, help="default: lenet 0.025, resnet 0.05 (as hoop-train, 1 rank)")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    ap.add_argument("--weight-decay", type=float, default=5e-4, help="SGD weight decay (default 5e-4)")
    ap.add_argument("--threads", type=int, default=1, help="intra-op threads (default 1)")
    ap.add_argument("--train-limit", type=int, default=0, help="training images used (default all)")
    ap.add_argument("--test-limit", type=int, default=0, help="test images evaluated (default all)")
    ap.add_argument("--seed", type=int, default=1, help="torch.manual_seed (default 1)")
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist",
                    help="the Fashion-MNIST idx files (default /usr/share/datasets/fashion-mnist)")
    ap.add_argument("--json", help="write the per-epoch results here")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="default cpu")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32", help="bf16: torch.autocast")
    ap.add_argument("--channels-last", action="store_true", help="the model and images in NHWC")
    ap.add_argument("--benchmark", action="store_true", help="torch.backends.cudnn.benchmark = True")
    a = ap.parse_args()
    torch.backends.cudnn.benchmark = a.benchmark
    fmt = torch.channels_last if a.channels_last else torch.contiguous_format
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("torch_train.py: --device cuda: this PyTorch sees no CUDA device")
    dev = torch.device(a.device)
    batch = a.batch or (32 if a.model == "lenet" else 64)
    lr = a.lr or (0.025 if a.model == "lenet" else 0.05)
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    def load(split, limit):
        x = idx(os.path.join(a.data, f"{split}-images-idx3-ubyte"))
        y = idx(os.path.join(a.data, f"{split}-labels-idx1-ubyte"))
        if limit:
            x, y = x[:limit], y[:limit]
        return prepare(x, a.model).to(dev).contiguous(memory_format=fmt), torch.tensor(y.astype(np.int64)).to(dev)

    xtr, ytr = load("train", a.train_limit)
    xte, yte = load("t10k", a.test_limit)
    model = make_model(a.model).to(dev).to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=a.momentum, weight_decay=a.weight_decay)
    n = len(xtr)
    steps = math.ceil(n / batch)
    total = steps * a.epochs
    gen = torch.Generator().manual_seed(a.seed)
    results, step, begin = [], 0, time.time()
    for epoch in range(a.epochs):
        model.train()
        perm = torch.randperm(n, generator=gen).to(dev)
        t0 = time.time()
        for s in range(steps):
            for g in opt.param_groups:
                g["lr"] = lr * 0.5 * (1 + math.cos(math.pi * min(1.0, step / total)))
            i = perm[s * batch:(s + 1) * batch]
            opt.zero_grad()
            with torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                loss = F.cross_entropy(model(xtr[i]), ytr[i])
            loss.backward()
            opt.step()
            step += 1
        if a.device == "cuda":
            torch.cuda.synchronize()
        train_s = time.time() - t0
        model.eval()
        with torch.no_grad(), torch.autocast(device_type=a.device, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
            correct = sum((model(xte[j:j + 500]).argmax(1) == yte[j:j + 500]).sum().item() for j in range(0, len(xte), 500))
        r = {"epoch": epoch + 1, "train_s": train_s, "images": n, "images_per_s": n / train_s,
             "test_acc": correct / len(xte), "wall_s": time.time() - begin}
        results.append(r)
        print(f"torch {a.model}: epoch {epoch + 1}/{a.epochs}: {r['images_per_s']:.0f} images/s, "
              f"test acc {100 * r['test_acc']:.2f}% ({a.device if a.device == 'cuda' else str(a.threads) + ' thread(s)'}, batch {batch}, "
              f"{a.precision}{', channels_last' if a.channels_last else ''}{', cudnn.benchmark' if a.benchmark else ''}, "
              f"torch {torch.__version__})", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"model": a.model, "ranks": 1, "batch": batch, "threads": a.threads, "system": "torch", "device": a.device,
                       "torch": torch.__version__, "epochs": results}, f)


if __name__ == "__main__":
    main()
