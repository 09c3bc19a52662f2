"""One rank of Horovod's join through hoop.torch (test_horovod.py), for ranks whose data runs out
first: Horovod's own check (the first rank, then the last, joins first while the others average
two fused tensors, int32 and float64, before and after the names are cached: the joined rank
counts as zeros, so the average is (n - 1) / n of the tensor, and join returns the same rank, not
the first, on every rank); Sum, Min, Max and Product with ranks joined (Min, Max and Product over the ranks
still running); allgather and broadcast refused while a rank has joined, named and unnamed, and
an unnamed allgather working after it; the calls that run on the communicator directly refused
once this rank knows some rank has joined; DistributedOptimizer trained on uneven data (rank r
has r + 2 batches, then joins), each rank's parameters at its join equal to one process's run of
the same steps. Prints "join ok rank R of N"."""
import sys
import time

import torch

import hoop
import hoop.torch as hvd
from hoop.torch import horovod


def fail(what):
    print(f"join FAIL rank {hvd.rank()}: {what}", flush=True)
    sys.exit(1)


def check_join(first, r, n):
    ret = hvd.join()
    if n > 1 and ret == first:
        fail(f"join returned the first rank to join ({first})")
    every = hvd.allgather_object(ret)
    if every != [ret] * n:
        fail(f"join returned {every} over the ranks")


def horovods_check(r, n):
    for first in sorted({0, n - 1}):  # the first rank and the last (every one, on up to 2 ranks)
        for dtype in (torch.int32, torch.float64):
            for caching in (False, True):
                torch.manual_seed(1234)
                a = torch.randint(-100, 100, (5, 5)).to(dtype)
                b = torch.randint(-100, 100, (17, 3)).to(dtype)
                if caching:
                    hvd.synchronize(hvd.allreduce_async(a, name="tensor_a", op=hvd.Average))
                    hvd.synchronize(hvd.allreduce_async(b, name="tensor_b", op=hvd.Average))
                if r != first:
                    ha = hvd.allreduce_async(a, name="tensor_a", op=hvd.Average)
                    hb = hvd.allreduce_async(b, name="tensor_b", op=hvd.Average)
                    for got, t in ((hvd.synchronize(ha), a), (hvd.synchronize(hb), b)):
                        want = (t * (n - 1)).div(n, rounding_mode="trunc") if not dtype.is_floating_point \
                            else t * (n - 1) / n
                        if not torch.allclose(got, want):
                            fail(f"{dtype} average with rank {first} joined: {got} != {want}")
                check_join(first, r, n)


def ops_with_joined(r, n):
    # Ranks 0..k-1 join first; the others reduce [r + 1, r + 2].
    for k in range(1, n):
        if r >= k:
            running = range(k, n)
            product = 1
            for q in running:
                product *= q + 2
            x = torch.tensor([r + 1, r + 2], dtype=torch.int64)
            for op, at, want in ((hvd.Sum, 0, sum(q + 1 for q in running)), (hvd.Min, 0, k + 1), (hvd.Max, 0, n),
                                 (hvd.Product, 1, product)):
                got = int(hvd.allreduce(x, op=op, name=f"ops.{op}")[at])
                if got != want:
                    fail(f"{op} with ranks 0..{k - 1} joined: {got} != {want}")
        check_join(0, r, n)


def refusals(r, n):
    if n == 1:
        return
    if r == 0:
        check_join(0, r, n)
        return
    for call in (lambda: hvd.allgather(torch.ones(3, 2)), lambda: hvd.allgather(torch.ones(2), name="g"),
                 lambda: hvd.broadcast(torch.ones(3), 1, name="bc"), lambda: hvd.broadcast(torch.ones(3), 1)):
        try:
            call()
            fail("a call that a joined rank cannot stand in for ran")
        except RuntimeError as e:
            if "joined" not in str(e):
                fail(f"refused without naming the join: {e}")
    deadline = time.monotonic() + 10
    while not horovod._s().fusion.joined:  # this rank learns of the join within a cycle or two
        if time.monotonic() > deadline:
            fail("this rank never learned that rank 0 has joined")
        time.sleep(0.001)
    for name, call in (("alltoall", lambda: hvd.alltoall(torch.ones(n))), ("barrier", hvd.barrier),
                       ("reducescatter", lambda: hvd.reducescatter(torch.ones(n))),
                       ("broadcast_object", lambda: hvd.broadcast_object(1, root_rank=1)),
                       ("allgather_object", lambda: hvd.allgather_object(1))):
        try:
            call()
            fail(f"{name} ran while rank 0 has joined")
        except hoop.MismatchError as e:
            if name not in str(e) or "hvd.join" not in str(e):
                fail(f"{name}: {e}")
    check_join(0, r, n)


def data(q, step):
    g = torch.Generator().manual_seed(1000 * q + step)
    return torch.randn(8, 4, generator=g), torch.randn(8, 1, generator=g)


def train_uneven(r, n):
    torch.manual_seed(7)
    model = torch.nn.Linear(4, 1)
    start = [p.detach().clone() for p in model.parameters()]
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    for step in range(r + 2):
        x, y = data(r, step)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    hvd.join()
    # One process: at step s the ranks still running are those with more than s batches; the
    # joined ones add zeros, and the average divides by n.
    ref = torch.nn.Linear(4, 1)
    with torch.no_grad():
        for p, s in zip(ref.parameters(), start):
            p.copy_(s)
    for step in range(r + 2):
        total = [torch.zeros_like(p) for p in ref.parameters()]
        for q in range(n):
            if q + 2 > step:
                x, y = data(q, step)
                ref.zero_grad()
                torch.nn.functional.mse_loss(ref(x), y).backward()
                for t, p in zip(total, ref.parameters()):
                    t += p.grad
        with torch.no_grad():
            for t, p in zip(total, ref.parameters()):
                p -= 0.1 * t / n
    for got, want in zip(model.parameters(), ref.parameters()):
        if not torch.allclose(got, want, atol=1e-6, rtol=1e-5):
            fail(f"parameters after {r + 2} uneven steps: {got} != {want}")


def main():
    hvd.init()
    r, n = hvd.rank(), hvd.size()
    horovods_check(r, n)
    ops_with_joined(r, n)
    refusals(r, n)
    if n > 1:  # an unnamed allgather lines up again after the refused ones
        got = hvd.allgather(torch.full((1, 2), float(r)))
        if got[:, 0].tolist() != [float(q) for q in range(n)]:
            fail(f"allgather after the join: {got}")
    train_uneven(r, n)
    print(f"join ok rank {r} of {n}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
