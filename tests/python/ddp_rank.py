"""DistributedDataParallel over a given backend, for test_torch_backend.py: a small CNN trained
STEPS steps with momentum SGD on a fixed global batch stream, each rank on its slice of every
global batch (or, with backend "single", one process on the whole batch and no torch.distributed
at all). Rank 0 saves the final parameters to OUT.

Usage: ddp_rank.py BACKEND STEPS OUT
"""
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import hoop.torch  # noqa: F401  (registers "hoop")

GLOBAL_BATCH = 24


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 10))


def batches(steps):
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        yield torch.randn(GLOBAL_BATCH, 1, 8, 8, generator=g), torch.randint(0, 10, (GLOBAL_BATCH,), generator=g)


def main():
    backend, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    net = model()
    rank, size = 0, 1
    if backend != "single":
        dist.init_process_group(backend)
        rank, size = dist.get_rank(), dist.get_world_size()
        net = nn.parallel.DistributedDataParallel(net)
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    share = GLOBAL_BATCH // size
    for x, y in batches(steps):
        xs, ys = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]
        opt.zero_grad()
        nn.functional.cross_entropy(net(xs), ys).backward()
        opt.step()
    if rank == 0:
        plain = net.module if backend != "single" else net
        torch.save({k: v.detach().clone() for k, v in plain.state_dict().items()}, out)
    if backend != "single":
        dist.destroy_process_group()
    print(f"rank {rank}: trained {steps} steps over {backend}", flush=True)


if __name__ == "__main__":
    main()
