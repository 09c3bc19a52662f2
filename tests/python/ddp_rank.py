"""Data-parallel training for test_torch_backend.py and test_horovod.py: a small CNN trained
STEPS steps with momentum SGD on a fixed global batch stream, each rank on its slice of every
global batch. BACKEND: a torch.distributed backend under DistributedDataParallel ("hoop",
"gloo"); "horovod", hoop.torch's DistributedOptimizer; "single", one process on the whole batch
and no communication at all. Each step takes PASSES micro-batches (gradients accumulated over
their backward passes: backward_passes_per_step for "horovod"). Rank 0 saves the final
parameters to OUT.

HOOPTEST_DDP_DETERMINISTIC=1 turns hoop's deterministic mode on (hoop.torch.set_deterministic for
"hoop" under DDP, hvd.init(deterministic=True) for "horovod"); HOOPTEST_DDP_BUCKET_MB sets DDP's
bucket_cap_mb (how gradients are packed into allreduces); HOOPTEST_DDP_DEVICE=cuda trains on the GPU
(local rank r on device r modulo the devices; the parameters are saved on the CPU);
HOOPTEST_DDP_HOOK registers a DDP communication hook: "fp16" (fp16_compress_hook) or "powersgd"
(PowerSGD at rank 2 from the third step, whose callbacks wait for further allreduces).

Usage: ddp_rank.py BACKEND STEPS OUT [PASSES [COMPRESSION]]
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn

import hoop.torch as hvd  # registers "hoop"; the Horovod-style API

GLOBAL_BATCH = 24


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(4 * 4 * 4, 10))


def batches(steps, passes):
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        yield [(torch.randn(GLOBAL_BATCH, 1, 8, 8, generator=g), torch.randint(0, 10, (GLOBAL_BATCH,), generator=g))
               for _ in range(passes)]


def register_hook(net, hook):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook
    if hook == "fp16":
        net.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook == "powersgd":
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=2, start_powerSGD_iter=2,
                                            min_compression_rate=0.1)
        net.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    elif hook:
        raise SystemExit(f"ddp_rank.py: HOOPTEST_DDP_HOOK={hook}: expected fp16 or powersgd")


def main():
    backend, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    passes = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    compression = sys.argv[5] if len(sys.argv) > 5 else "none"
    device = os.environ.get("HOOPTEST_DDP_DEVICE", "cpu")
    if device == "cuda":
        device = f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % torch.cuda.device_count()}"
        torch.cuda.set_device(device)
    net = model().to(device)
    rank, size = 0, 1
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    deterministic = os.environ.get("HOOPTEST_DDP_DETERMINISTIC") == "1"
    if backend == "horovod":
        hvd.init(deterministic=True if deterministic else None)
        rank, size = hvd.rank(), hvd.size()
        hvd.broadcast_parameters(net.state_dict(), 0)
        opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters(), backward_passes_per_step=passes,
                                       compression=getattr(hvd.Compression, compression))
    elif backend != "single":
        dist.init_process_group(backend)
        rank, size = dist.get_rank(), dist.get_world_size()
        if deterministic:
            hvd.set_deterministic(True)
        bucket = float(os.environ.get("HOOPTEST_DDP_BUCKET_MB", "25"))
        net = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=bucket)
        register_hook(net, os.environ.get("HOOPTEST_DDP_HOOK"))
        opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    share = GLOBAL_BATCH // size
    for micro in batches(steps, passes):
        opt.zero_grad()
        for x, y in micro:
            xs, ys = x[rank * share:(rank + 1) * share].to(device), y[rank * share:(rank + 1) * share].to(device)
            nn.functional.cross_entropy(net(xs), ys).backward()
        opt.step()
    if rank == 0:
        plain = net.module if isinstance(net, nn.parallel.DistributedDataParallel) else net
        torch.save({k: v.detach().cpu().clone() for k, v in plain.state_dict().items()}, out)
    if backend == "horovod":
        hvd.shutdown()
    elif backend != "single":
        dist.destroy_process_group()
    print(f"rank {rank}: trained {steps} steps over {backend}", flush=True)
    if backend == "gloo":
        os._exit(0)  # the reference's exit is PyTorch's: gloo's threads and finalization (fsdp2_rank.py)


if __name__ == "__main__":
    main()
