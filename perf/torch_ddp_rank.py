#!/usr/bin/python3
"""perf/torch_ddp_rank.py: one rank of perf/torch-ddp (run under hooprun; Debian's python3-torch).

  train:     DistributedDataParallel over --backend on perf/torch_train.py's ResNet (or LeNet),
             Fashion-MNIST, the same seed, model and per-rank batch for every backend; each rank
             trains on its slice of every global batch. After --warmup steps, times --steps steps
             and rank 0 prints one JSON line: {"mode": "train", "backend", "images_per_s", ...}.
  compute:   the same training without DDP (each rank's model alone, no gradient exchanged;
             --backend only for the barriers around the timed steps): the ceiling DDP over any
             backend can reach, reported as backend "none".
  allreduce: dist.all_reduce of float32 tensors of each --sizes over --backend, --iters timed
             calls after --warmup, with a barrier before each size; rank 0 prints one JSON line
             per size: {"mode": "allreduce", "backend", "bytes", "us"} (median microseconds).

usage: torch_ddp_rank.py train|compute|allreduce --backend hoop|gloo [--model resnet|lenet] [--batch N]
         [--steps N] [--warmup N] [--sizes 4K,64M] [--iters N] [--threads N] [--data DIR]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_train  # noqa: E402  (the models and the data reader)

import hoop.torch  # noqa: E402,F401  (registers "hoop")


def size_of(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def train(a, rank, size):
    x = torch_train.idx(os.path.join(a.data, "train-images-idx3-ubyte"))
    y = torch_train.idx(os.path.join(a.data, "train-labels-idx1-ubyte"))
    n = a.batch * size * (a.warmup + a.steps)
    x = torch_train.prepare(x[:n], a.model)
    y = torch.tensor(y[:n].astype("int64"))
    torch.manual_seed(1)
    model = torch_train.make_model(a.model)
    ddp = torch.nn.parallel.DistributedDataParallel(model) if a.mode == "train" else model
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    start = None
    for step in range(a.warmup + a.steps):
        if step == a.warmup:
            dist.barrier()
            start = time.perf_counter()
        at = (step * size + rank) * a.batch
        opt.zero_grad()
        F.cross_entropy(ddp(x[at:at + a.batch]), y[at:at + a.batch]).backward()
        opt.step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        print(json.dumps({"mode": "train", "backend": a.backend if a.mode == "train" else "none", "model": a.model, "ranks": size, "batch": a.batch,
                          "steps": a.steps, "seconds": seconds,
                          "images_per_s": a.steps * a.batch * size / seconds}), flush=True)


def allreduce(a, rank, size):
    for text in a.sizes.split(","):
        nbytes = size_of(text)
        t = torch.ones(max(1, nbytes // 4), dtype=torch.float32)
        times = []
        dist.barrier()
        for i in range(a.warmup + a.iters):
            t0 = time.perf_counter()
            dist.all_reduce(t)
            if i >= a.warmup:
                times.append(time.perf_counter() - t0)
        # Every rank's median, the slowest of them: what the job waited for.
        med = torch.tensor([statistics.median(times)], dtype=torch.float64)
        dist.all_reduce(med, op=dist.ReduceOp.MAX)
        if rank == 0:
            print(json.dumps({"mode": "allreduce", "backend": a.backend, "ranks": size, "bytes": nbytes,
                              "iters": a.iters, "us": med.item() * 1e6}), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("mode", choices=["train", "compute", "allreduce"])
    ap.add_argument("--backend", required=True)
    ap.add_argument("--model", choices=torch_train.MODELS, default="resnet")
    ap.add_argument("--batch", type=int, default=64, help="per rank")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sizes", default="4K,64M")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    dist.init_process_group(a.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    (allreduce if a.mode == "allreduce" else train)(a, rank, size)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
