"""One rank of the check of DistributedDataParallel's and torch.distributed's other features over
a backend (test_torch_backend.py runs it over "hoop" and "gloo" and compares what rank 0 saves):
DDP's join() with uneven inputs (rank r takes 3r more steps; the others shadow its allreduces),
static_graph with gradient_as_bucket_view, no_sync() accumulation, ZeroRedundancyOptimizer with
its state consolidated on rank 0, and torch.distributed.checkpoint's save and load of a model
(PyTorch 2.2 and later). Prints "rank R: ok N checks".

Usage: ddp_features_rank.py BACKEND OUT CHECKPOINT_DIR
"""
import contextlib
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import hoop.torch  # noqa: F401  (registers "hoop")


def net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))


def train(me, wrap, steps, make_opt=None, ctx=None):
    model = net()
    ddp = wrap(model)
    opt = make_opt(ddp) if make_opt else torch.optim.SGD(ddp.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(me)
    with ctx(ddp) if ctx else contextlib.nullcontext():
        for _ in range(steps):
            x, y = torch.randn(8, 16, generator=g), torch.randn(8, 4, generator=g)
            opt.zero_grad()
            ((ddp(x) - y) ** 2).mean().backward()
            opt.step()
    return model, opt


def main():
    backend, out, ckpt = sys.argv[1:4]
    dist.init_process_group(backend)
    me = dist.get_rank()
    result, checks = {}, 0
    model, _ = train(me, DDP, 4 + 3 * me, ctx=lambda d: d.join())
    result["join"] = model.state_dict()
    model, _ = train(me, lambda m: DDP(m, static_graph=True, gradient_as_bucket_view=True), 5)
    result["static_graph"] = model.state_dict()
    model = net()
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.no_sync():  # accumulated here, averaged with the next backward's
        ddp(torch.ones(2, 16) * (me + 1)).sum().backward()
    ddp(torch.ones(2, 16) * (me + 2)).sum().backward()
    opt.step()
    result["no_sync"] = model.state_dict()
    from torch.distributed.optim import ZeroRedundancyOptimizer
    model, opt = train(me, DDP, 5, lambda d: ZeroRedundancyOptimizer(d.parameters(), optimizer_class=torch.optim.Adam,
                                                                      lr=0.01))
    opt.consolidate_state_dict(to=0)
    result["zero"] = model.state_dict()
    zero_state = {k: v["exp_avg"] for k, v in opt.state_dict()["state"].items()} if me == 0 else None
    try:
        import torch.distributed.checkpoint as dcp
        save, load = dcp.save, dcp.load
    except (ImportError, AttributeError):  # PyTorch before 2.2
        save = None
    if save:
        model = net()
        save({"model": model.state_dict()}, checkpoint_id=ckpt)
        torch.manual_seed(5)
        other = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
        state = {"model": other.state_dict()}
        load(state, checkpoint_id=ckpt)
        other.load_state_dict(state["model"])
        for k, v in model.state_dict().items():
            checks += 1
            if not torch.equal(v, other.state_dict()[k]):
                raise AssertionError(f"rank {me}: checkpoint load gave another {k}")
    for name, sd in result.items():  # every rank ends with rank 0's parameters
        for k, v in sd.items():
            checks += 1
            mine = v.clone()
            dist.broadcast(v, 0)
            if not torch.equal(mine, v):
                raise AssertionError(f"rank {me}: {name}: {k} differs from rank 0's")
    if me == 0:
        result["zero_state"] = zero_state  # the optimizer's whole state, consolidated here
        torch.save(result, out)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {me}: ok {checks} checks", flush=True)
    if backend == "gloo":
        os._exit(0)  # the reference's exit is PyTorch's (fsdp2_rank.py)


if __name__ == "__main__":
    main()
