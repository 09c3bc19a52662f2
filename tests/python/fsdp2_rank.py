"""One rank of the DTensor and FSDP2 check (test_torch_backend.py, PyTorch 2.6 and later), run
over backend "hoop" and over "gloo" with the same seeds:
  - DTensor: distribute_tensor and full_tensor(), and the redistributions Shard -> Replicate,
    Shard(0) -> Shard(1), Partial (sum and avg) -> Replicate and -> Shard, on a 1-D mesh, and on
    4 ranks a 2-D mesh, each against the tensor it must equal;
  - tensor parallelism (parallelize_module, colwise then rowwise) and pipelining (one stage per
    rank, GPipe over send/recv), outputs and gradients against the same model run whole here;
  - FSDP2: fully_shard on a small MLP (per layer, then the root), in float32 and with a bfloat16
    mixed-precision policy reducing in float32, STEPS steps of SGD with momentum on each rank's
    seeded batches; then the full state dict (get_model_state_dict) and the optimizer's.
Rank 0 saves the losses and both state dicts to OUT, for the test to hold hoop's against gloo's.
Prints "rank R: ok N checks".

Usage: fsdp2_rank.py BACKEND STEPS OUT
"""
import os
import sys

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import (StateDictOptions, get_model_state_dict,
                                                     get_optimizer_state_dict)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

import hoop.torch  # noqa: F401  (registers "hoop")

checks = 0


def equal(what, got, want, tol=0.0):
    global checks
    checks += 1
    if got.shape != want.shape or not torch.allclose(got, want, rtol=tol, atol=tol):
        raise AssertionError(f"rank {dist.get_rank()}: {what}: got {got.flatten()[:6].tolist()} {tuple(got.shape)}, "
                             f"want {want.flatten()[:6].tolist()} {tuple(want.shape)}")


def check_dtensor(me, n):
    mesh = init_device_mesh("cpu", (n,))
    full = torch.randn(4 * n + 3, 2 * n + 1, generator=torch.Generator().manual_seed(1))  # uneven shards
    d = distribute_tensor(full, mesh, [Shard(0)])
    equal("Shard(0).full_tensor()", d.full_tensor(), full)
    equal("Shard(0) -> Replicate", d.redistribute(mesh, [Replicate()]).to_local(), full)
    equal("Shard(0) -> Shard(1)", d.redistribute(mesh, [Shard(1)]).full_tensor(), full)
    parts = [torch.randn(6, 5, generator=torch.Generator().manual_seed(10 + r)) for r in range(n)]
    for op, want in (("sum", sum(parts)), ("avg", sum(parts) / n)):
        p = DTensor.from_local(parts[me], mesh, [Partial(op)])
        equal(f"Partial({op}) -> Replicate", p.redistribute(mesh, [Replicate()]).to_local(), want, 1e-6)
        equal(f"Partial({op}) -> Shard(0)", p.redistribute(mesh, [Shard(0)]).full_tensor(), want, 1e-6)
    if n == 4:
        mesh2 = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
        d2 = distribute_tensor(full, mesh2, [Shard(0), Shard(1)])
        equal("2-D [Shard(0), Shard(1)].full_tensor()", d2.full_tensor(), full)
        equal("2-D -> [Replicate(), Shard(0)]", d2.redistribute(mesh2, [Replicate(), Shard(0)]).full_tensor(), full)


def check_tensor_parallel(me, n):
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    torch.manual_seed(3)
    whole = torch.nn.Sequential(torch.nn.Linear(12, 8 * n), torch.nn.ReLU(), torch.nn.Linear(8 * n, 5))
    split = torch.nn.Sequential(torch.nn.Linear(12, 8 * n), torch.nn.ReLU(), torch.nn.Linear(8 * n, 5))
    split.load_state_dict(whole.state_dict())
    parallelize_module(split, init_device_mesh("cpu", (n,)), {"0": ColwiseParallel(), "2": RowwiseParallel()})
    x = torch.randn(7, 12, generator=torch.Generator().manual_seed(4))  # the same input on every rank
    got, want = split(x), whole(x)
    got.square().sum().backward()
    want.square().sum().backward()
    equal("tensor parallel output", got, want, 1e-5)
    for i in (0, 2):
        equal(f"tensor parallel layer {i} weight grad", split[i].weight.grad.full_tensor(), whole[i].weight.grad, 1e-5)


def check_pipeline(me, n):
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
    torch.manual_seed(5)
    layers = [torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.Tanh()) for _ in range(n)]
    x, target = torch.randn(8, 6, generator=torch.Generator().manual_seed(6)), torch.randn(8, 6)
    loss_fn = torch.nn.functional.mse_loss
    stage = PipelineStage(layers[me], me, n, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=4, loss_fn=loss_fn)
    grads = [p.grad for p in layers[me].parameters()]
    layers[me].zero_grad()
    losses = []
    if me == 0:
        schedule.step(x) if n > 1 else schedule.step(x, target=target, losses=losses)
    elif me == n - 1:
        schedule.step(target=target, losses=losses)
    else:
        schedule.step()
    grads = [p.grad.clone() for p in layers[me].parameters()]
    whole = torch.nn.Sequential(*layers)  # run whole here: every rank made every layer alike
    whole.zero_grad()
    want = []
    for xb, tb in zip(x.chunk(4), target.chunk(4)):
        loss = loss_fn(whole(xb), tb)
        loss.backward()
        want.append(loss.detach())
    scale = 4 if getattr(schedule, "scale_grads", False) else 1
    for i, (g, p) in enumerate(zip(grads, layers[me].parameters())):
        equal(f"pipeline stage {me} grad {i}", g, p.grad / scale, 1e-5)
    if me == n - 1:
        equal("pipeline losses", torch.stack([torch.as_tensor(v) for v in losses]), torch.stack(want), 1e-5)


def train(me, steps, mixed):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(20, 33), torch.nn.ReLU(), torch.nn.Linear(33, 17), torch.nn.ReLU(),
                                torch.nn.Linear(17, 4))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if mixed else \
        MixedPrecisionPolicy()
    for layer in model:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(100 + me)
    losses = []
    for _ in range(steps):
        x, y = torch.randn(8, 20, generator=g), torch.randint(0, 4, (8,), generator=g)
        loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        losses.append(t.item())
    full = StateDictOptions(full_state_dict=True)
    params = get_model_state_dict(model, options=full)
    momentum = get_optimizer_state_dict(model, opt, options=full)["state"]
    for name, v in params.items():  # every rank holds the whole model, rank 0's
        ref = v.clone()
        dist.broadcast(ref, 0)
        equal(f"full state dict {name} on rank {me} as on rank 0", v, ref)
    return {"losses": losses, "params": {k: v.clone() for k, v in params.items()},
            "momentum": {str(k): v["momentum_buffer"].clone() for k, v in momentum.items()}}


def main():
    backend, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    dist.init_process_group(backend)
    me, n = dist.get_rank(), dist.get_world_size()
    check_dtensor(me, n)
    check_tensor_parallel(me, n)
    check_pipeline(me, n)
    result = {"fp32": train(me, steps, False), "bf16": train(me, steps, True)}
    if me == 0:
        torch.save(result, out)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {me}: ok {checks} checks", flush=True)
    if backend == "gloo":
        # The reference run's part is done. Gloo's worker threads can still be dropping a finished
        # call's tensors, which takes the GIL; one that asks while the interpreter finalizes aborts
        # the process ("terminate called without an active exception", as pytorch/pytorch#179291
        # describes; the likely cause of one such abort in CI, after both ranks' ok lines, where
        # hoop's run has no thread that touches Python). That exit is PyTorch's: skip finalization.
        os._exit(0)


if __name__ == "__main__":
    main()
