"""One rank of the Horovod-style API's newer calls (test_horovod.py): the build queries, cross rank
and size, is_homogeneous, reducescatter (even and uneven first dimensions, Average and Sum),
the grouped calls (allreduce sync, async and in place, allgather, reducescatter), start_timeline and stop_timeline, hoop.__version__, and
SyncBatchNorm against torch's BatchNorm over the whole batch (output, input gradient, the
ranks' summed weight gradients, running statistics), a second DistributedOptimizer over the same
parameters, set_backward_passes_per_step, join(device), HorovodInternalError, compressors of one's
own and hvd.compression's (Horovod's Compressor interface), step(closure) (LBFGS). Prints
"extras ok rank R of N"."""
import json
import os
import shutil
import sys
import tempfile

import torch

import hoop
import hoop.torch as hvd


def close(what, got, want, tol=1e-5):
    if not torch.allclose(got.double(), want.double(), atol=tol, rtol=tol):
        print(f"extras FAIL rank {hvd.rank()}: {what}: {got} != {want}")
        sys.exit(1)


class Halves(hvd.compression.Compressor):
    """A compressor of one's own: what travels is half the tensor, in float64; counted."""
    calls = 0

    @staticmethod
    def compress(tensor):
        Halves.calls += 1
        return tensor.double() / 2, tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        return (tensor * 2).to(ctx)


def compressors(r, n):
    """Horovod's Compressor interface: one's own and hvd.compression's, on allreduce in every form
    and DistributedOptimizer; anything else refused."""
    assert hvd.compression.Compression is hvd.Compression
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3) + r
    want = torch.arange(6, dtype=torch.float32).reshape(2, 3) + (n - 1) / 2
    close("allreduce through a compressor of one's own", hvd.allreduce(x, compression=Halves), want)
    y = x.clone()
    hvd.synchronize(hvd.allreduce_async_(y, name="halves.inplace", compression=Halves, op=hvd.Sum))
    close("allreduce_async_ through it, Sum", y, want * n)
    assert y.dtype == torch.float32 and Halves.calls == 2, (y.dtype, Halves.calls)
    got = hvd.allreduce(x, compression=hvd.compression.FP16Compressor)
    assert got.dtype == torch.float32
    close("FP16Compressor", got, want, tol=1e-3)
    close("NoneCompressor", hvd.allreduce(x, compression=hvd.compression.NoneCompressor), want)
    model = torch.nn.Linear(3, 1, bias=False)
    torch.nn.init.constant_(model.weight, 1.0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters(), compression=Halves)
    model(torch.full((1, 3), float(r + 1))).sum().backward()
    opt.step()
    close("DistributedOptimizer through a compressor", model.weight,
          torch.ones(1, 3) - 0.1 * sum(k + 1 for k in range(n)) / n)
    assert Halves.calls == 3, Halves.calls
    try:
        hvd.allreduce(x, compression="fp16")
        raise AssertionError("a string was taken as a compression")
    except TypeError as e:
        assert "Compressor" in str(e), e


def gradients_beyond_backward(r, n):
    """DistributedOptimizer as Horovod's, on gradients no single backward pass made: set by hand
    from torch.autograd.grad or written into the old tensor (averaged at step()), but not again where
    changed between synchronize() and step(); a layer only some ranks' pass reaches (every
    rank submits it at step(), zeros where unused: no rank waits for a tensor the others never
    send); and an optimizer none of whose parameters got anything (its synchronize() submits
    nothing, leaving the gradients None, as the converter's GAN loops need)."""
    x = torch.full((1, 3), float(r + 1))
    net = torch.nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        net.weight.fill_(1.0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                   named_parameters=[("byhand." + k, v) for k, v in net.named_parameters()])
    for step in range(2):
        before = net.weight.detach().clone()
        (g,) = torch.autograd.grad((net(x) ** 2).sum(), [net.weight])
        net.weight.grad = g
        opt.step()
        want = sum(2 * float(before[0].sum()) * (k + 1) * (k + 1) for k in range(n)) / n
        close(f"a gradient set by hand, step {step}", net.weight, before - 0.1 * want)
    for step, how in enumerate(("copy_", "data", "copy_")):  # written into the tensor the last step used
        before = net.weight.detach().clone()
        (g,) = torch.autograd.grad((net(x) ** 2).sum(), [net.weight])
        if how == "copy_":
            net.weight.grad.copy_(g)
        else:
            net.weight.grad.data = g.clone()
        opt.step()
        want = sum(2 * float(before[0].sum()) * (k + 1) * (k + 1) for k in range(n)) / n
        close(f"a gradient written in place ({how}), step {step}", net.weight, before - 0.1 * want)
    # Changed in place between synchronize() and step() (clipped, zeroed): the script's own work on
    # the sum, not a new gradient to sum again.
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1), op=hvd.Sum,
                                   named_parameters=[("clipped." + k, v) for k, v in net.named_parameters()])
    for step in range(2):
        before = net.weight.detach().clone()
        opt.zero_grad(set_to_none=False)
        (net(x) ** 2).sum().backward()
        opt.synchronize()
        net.weight.grad.mul_(0.5)
        opt.step()
        want = 0.5 * sum(2 * float(before[0].sum()) * (k + 1) * (k + 1) for k in range(n))
        close(f"a summed gradient halved before step(), step {step}", net.weight, before - 0.1 * want)
    heads = torch.nn.ModuleDict({"a": torch.nn.Linear(3, 1), "b": torch.nn.Linear(3, 1)})
    opt = hvd.DistributedOptimizer(torch.optim.SGD(heads.parameters(), lr=1.0),
                                   named_parameters=[("heads." + k, v) for k, v in heads.named_parameters()])
    hvd.broadcast_parameters(heads.state_dict(), root_rank=0)
    before = heads["b"].bias.detach().clone()
    opt.zero_grad(set_to_none=True)
    loss = heads["a"](x).sum() + (heads["b"](x).sum() if r % 2 == 1 else 0)
    loss.backward()
    opt.step()
    users = sum(1 for k in range(n) if k % 2 == 1)
    close("a head some ranks' pass did not reach", heads["b"].bias, before - users / n)
    assert heads["b"].bias.grad is not None
    idle = torch.nn.Linear(3, 1)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(idle.parameters(), lr=1.0),
                                   named_parameters=[("idle." + k, v) for k, v in idle.named_parameters()])
    opt.synchronize()
    assert idle.weight.grad is None and idle.bias.grad is None, "nothing added, yet something was submitted"


def closure_steps(r, n):
    """A closure-taking optimizer (LBFGS with its strong-Wolfe line search) through
    DistributedOptimizer, each rank on data of its own (rank k: k + 3 samples): every evaluation's
    gradients and loss averaged, so the ranks take the same steps, bitwise, and land where one
    process lands minimising the ranks' average loss; SGD.step(closure) gives the averaged loss,
    a closure returning a float gets a float."""
    g = torch.Generator().manual_seed(11)
    data = [(torch.randn(k + 3, 4, generator=g, dtype=torch.float64),
             torch.randn(k + 3, 1, generator=g, dtype=torch.float64)) for k in range(n)]

    def objective(net, parts):
        return lambda: sum(torch.nn.functional.mse_loss(net(x), y) for x, y in parts) / len(parts)

    nets = [torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 1)).double() for _ in (0, 1)]
    hvd.broadcast_parameters(nets[0].state_dict(), root_rank=0)
    nets[1].load_state_dict(nets[0].state_dict())
    ref = torch.optim.LBFGS(nets[1].parameters(), max_iter=10, line_search_fn="strong_wolfe")
    opt = hvd.DistributedOptimizer(torch.optim.LBFGS(nets[0].parameters(), max_iter=10, line_search_fn="strong_wolfe"),
                                   named_parameters=[("lbfgs." + k, v) for k, v in nets[0].named_parameters()])
    evals = [0, 0]

    def closure_of(k, o, f):
        def closure():
            evals[k] += 1
            o.zero_grad()
            loss = f()
            loss.backward()
            return loss
        return closure

    mine, whole = objective(nets[0], [data[r]]), objective(nets[1], data)
    for _ in range(3):
        got = opt.step(closure_of(0, opt, mine))
        want = ref.step(closure_of(1, ref, whole))
        close("LBFGS's loss (the ranks' average)", got, want, tol=1e-9)
    assert evals[0] == evals[1], f"LBFGS evaluated {evals[0]} times on rank {r}, {evals[1]} in one process"
    flat = torch.cat([p.detach().flatten() for p in nets[0].parameters()])
    close("LBFGS's parameters against one process", flat, torch.cat([p.detach().flatten() for p in nets[1].parameters()]),
          tol=1e-8)
    every = hvd.allgather(flat.unsqueeze(0), name="lbfgs.params")
    assert bool((every == every[0]).all()), "LBFGS's parameters differ between the ranks"
    w = torch.nn.Parameter(torch.tensor([1.0]))
    sgd = hvd.DistributedOptimizer(torch.optim.SGD([w], lr=0.1), named_parameters=[("closure.w", w)])

    def sgd_closure():
        sgd.zero_grad()
        loss = (w * (r + 1)).sum()
        loss.backward()
        return loss
    close("SGD.step(closure)'s loss", sgd.step(sgd_closure), torch.tensor([sum(k + 1 for k in range(n)) / n]))
    close("SGD.step(closure)'s step", w.detach(), torch.tensor([1.0 - 0.1 * sum(k + 1 for k in range(n)) / n]))
    got = sgd.step(lambda: float(r))
    assert isinstance(got, float) and abs(got - (n - 1) / 2) < 1e-12, got


def main():
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    assert hvd.cross_size() == 1 and hvd.cross_rank() == 0, (hvd.cross_rank(), hvd.cross_size())  # one host
    assert hvd.is_homogeneous()
    for q in (hvd.mpi_built, hvd.gloo_built, hvd.nccl_built, hvd.rocm_built, hvd.ccl_built,
              hvd.ddl_built, hvd.mpi_enabled, hvd.gloo_enabled, hvd.mpi_threads_supported):
        assert q() is False, q.__name__
    assert isinstance(hvd.cuda_built(), bool)  # whether libhoop has CUDA (this build's choice)
    assert hoop.__version__ == ".".join(map(str, hoop.version()))
    # The timeline started and stopped at run time, twice: rank 0 writes complete Chrome traces.
    where = hvd.broadcast_object(tempfile.mkdtemp(prefix="hoop-timeline-") if r == 0 else None)
    for k, marks in enumerate((True, False)):
        path = os.path.join(where, f"t{k}.json")
        hvd.start_timeline(path, mark_cycles=marks)
        hvd.allreduce(torch.ones(5), name=f"timed.{k}")
        hvd.stop_timeline()
        if r == 0:
            with open(path) as f:
                events = json.load(f)
            names = {e["name"] for e in events}
            assert {"NEGOTIATE", "ALLREDUCE"} <= names, names
            assert ("CYCLE_START" in names) == marks, names
            assert any(e.get("args", {}).get("name") == f"allreduce.timed.{k}" for e in events), events[:3]
    if r == 0:
        shutil.rmtree(where)
    try:
        hvd.start_timeline("/nonexistent-dir/t.json")
        assert r != 0, "an unwritable timeline was not refused on rank 0"
    except ValueError as e:
        assert r == 0 and "/nonexistent-dir/t.json" in str(e), e
    # reducescatter: rank k's tensor is k + 1 + row index; rows split as Horovod splits them.
    for rows in (2 * n, 2 * n + 1, 1):
        t = torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + r + 1
        total = sum(torch.arange(rows * 3, dtype=torch.float32).reshape(rows, 3) + k + 1 for k in range(n))
        splits = [rows // n + (1 if k < rows % n else 0) for k in range(n)]
        start = sum(splits[:r])
        close(f"reducescatter sum {rows} rows", hvd.reducescatter(t, op=hvd.Sum), total[start:start + splits[r]])
        close(f"reducescatter average {rows} rows", hvd.reducescatter(t), total[start:start + splits[r]] / n)
    # grouped_allreduce
    ts = [torch.full((k + 1,), float(r + k)) for k in range(3)]
    want = [torch.full((k + 1,), float(sum(q + k for q in range(n)))) for k in range(3)]
    for got, w in zip(hvd.grouped_allreduce(ts, op=hvd.Sum), want):
        close("grouped_allreduce", got, w)
    h = hvd.grouped_allreduce_async(ts, op=hvd.Average, name="g")
    for got, w in zip(hvd.synchronize(h), want):
        close("grouped_allreduce_async", got, w / n)
    own = [t.clone() for t in ts]
    outs = hvd.grouped_allreduce_(own, op=hvd.Sum)
    for got, o, w in zip(outs, own, want):
        assert got is o, "grouped_allreduce_ gave a new tensor"
        close("grouped_allreduce_", o, w)
    own = [t.clone() for t in ts]
    hvd.synchronize(hvd.grouped_allreduce_async_(own, op=hvd.Max, name="gm"))
    for o, k in zip(own, range(3)):
        close("grouped_allreduce_async_ max", o, torch.full((k + 1,), float(n - 1 + k)))
    # grouped_allgather (first dimensions differing by rank) and grouped_reducescatter (with
    # Horovod's prescale and postscale factors)
    parts = [torch.full((r + 1, 2), float(r)), torch.arange(3.0) + 10 * r]
    got = hvd.grouped_allgather(parts, name="ga")
    close("grouped_allgather #0", got[0], torch.cat([torch.full((k + 1, 2), float(k)) for k in range(n)]))
    close("grouped_allgather #1", got[1], torch.cat([torch.arange(3.0) + 10 * k for k in range(n)]))
    big = [torch.arange(2.0 * n).reshape(n, 2) + r, torch.ones(n + 1) * (r + 1)]
    h = hvd.grouped_reducescatter_async(big, op=hvd.Sum, prescale_factor=2.0, postscale_factor=0.5)
    got = hvd.synchronize(h)
    close("grouped_reducescatter #0", got[0], sum(torch.arange(2.0 * n).reshape(n, 2) + k for k in range(n))[r:r + 1])
    rows1 = (n + 1) // n + (1 if r < (n + 1) % n else 0)
    close("grouped_reducescatter #1", got[1], torch.full((rows1,), float(n * (n + 1) / 2)))
    # SyncBatchNorm: rank r holds rows [r*4, r*4+4) of a global batch of 4n.
    g = torch.Generator().manual_seed(7)
    x_all = torch.randn(4 * n, 3, 5, 5, generator=g) * 3 + 1
    w_out = torch.randn(4 * n, 3, 5, 5, generator=g)
    ref = torch.nn.BatchNorm2d(3)
    sync = hvd.SyncBatchNorm(3)
    with torch.no_grad():
        for m in (ref, sync):
            m.weight.copy_(torch.tensor([1.5, 0.5, -1.0]))
            m.bias.copy_(torch.tensor([0.1, -0.2, 0.3]))
    xa = x_all.clone().requires_grad_(True)
    ya = ref(xa)
    (ya * w_out).sum().backward()
    mine = slice(4 * r, 4 * r + 4)
    x = x_all[mine].clone().requires_grad_(True)
    y = sync(x)
    (y * w_out[mine]).sum().backward()
    close("SyncBatchNorm output", y, ya[mine].detach())
    close("SyncBatchNorm input gradient", x.grad, xa.grad[mine])
    close("SyncBatchNorm weight gradient (summed over ranks)", hvd.allreduce(sync.weight.grad, op=hvd.Sum), ref.weight.grad)
    close("SyncBatchNorm bias gradient (summed over ranks)", hvd.allreduce(sync.bias.grad, op=hvd.Sum), ref.bias.grad)
    close("SyncBatchNorm running mean", sync.running_mean, ref.running_mean)
    close("SyncBatchNorm running var", sync.running_var, ref.running_var)
    sync.eval()
    ref.eval()
    close("SyncBatchNorm in eval", sync(x_all[mine]), ref(x_all[mine]))
    # A new DistributedOptimizer over the same parameters (a fit() called again with another rate)
    # takes them over: the first one's hooks do not submit them again, and the step averages.
    model = torch.nn.Linear(3, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    for lr in (0.1, 0.01):
        opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=lr),
                                       named_parameters=model.named_parameters())
        before = model.weight.detach().clone()
        opt.zero_grad()
        (model(torch.full((1, 3), float(r + 1))).sum()).backward()
        opt.step()
        close(f"a second DistributedOptimizer's step (lr {lr})", model.weight,
              before - lr * sum(k + 1 for k in range(n)) / n)
    # Horovod's other names: hvd.HorovodInternalError, join(device), broadcast_optimizer_state's
    # model=, and set_backward_passes_per_step (2 passes: the gradients of both add up).
    assert hvd.HorovodInternalError is hvd.elastic.HorovodInternalError
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    assert 0 <= hvd.join(device=-1) < n
    hvd.broadcast_optimizer_state(opt, root_rank=0, model=model)
    opt.set_backward_passes_per_step(2)
    before = model.weight.detach().clone()
    opt.zero_grad()
    for _ in range(2):
        model(torch.full((1, 3), float(r + 1))).sum().backward()
    opt.step()
    close("two backward passes per step", model.weight, before - 0.01 * 2 * sum(k + 1 for k in range(n)) / n)
    compressors(r, n)
    gradients_beyond_backward(r, n)
    closure_steps(r, n)
    print(f"extras ok rank {r} of {n}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
