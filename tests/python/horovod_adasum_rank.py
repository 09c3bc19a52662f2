"""One rank of the Horovod-style API's Adasum (test_horovod.py), on any number of ranks: allreduce
with op=hvd.Adasum against a reference tree written here (pairs of ranks, then pairs of pairs;
past the largest power of two the extra ranks folded in first), for float16, bfloat16, float32 and
float64, counts 0, 1 and 1000, the same bits on every rank; its textbook cases (equal vectors give
the vector, orthogonal ones their sum, a zero vector the other); the async, in-place and grouped
forms, prescale and postscale; a process set of ranks 1..n-1; reducescatter refusing it; and
DistributedOptimizer(op=Adasum) over SGD with momentum: the parameters move by the Adasum of the
ranks' own steps. Prints "adasum ok rank R of N"."""
import math
import sys

import torch

import hoop.torch as hvd

TINY = math.sqrt(sys.float_info.min)


def fail(what):
    print(f"adasum FAIL rank {hvd.rank()}: {what}")
    sys.exit(1)


def pair(a, b):
    dot, aa, bb = float(a @ b), float(a @ a), float(b @ b)
    ac = 1 - dot / aa / 2 if aa >= TINY else 1.0
    bc = 1 - dot / bb / 2 if bb >= TINY else 1.0
    return ac * a + bc * b


def reference(vectors):
    n = len(vectors)
    p = 1 << (n.bit_length() - 1)
    level = [pair(vectors[r], vectors[r + p]) if r + p < n else vectors[r] for r in range(p)]
    while len(level) > 1:
        level = [pair(level[i], level[i + 1]) for i in range(0, len(level), 2)]
    return level[0]


def vector_of(rank, count, dtype, seed):
    g = torch.Generator().manual_seed(seed * 1000 + rank)
    # Magnitudes that differ by rank, and a shared part, so the coefficients are not trivial.
    return ((torch.randn(count, generator=g, dtype=torch.float64) * (rank + 1)) +
            torch.randn(count, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)).to(dtype)


def same_everywhere(what, t, process_set=hvd.global_process_set):
    bits = t.view(torch.int16) if t.element_size() == 2 else t
    every = hvd.allgather(bits.reshape(1, -1).clone(), process_set=process_set)
    if not bool((every == every[0]).all()):
        fail(f"{what}: ranks hold different bits")


def check_reference(ranks, process_set, r):
    tols = {torch.float16: 2e-3, torch.bfloat16: 1e-2, torch.float32: 1e-5, torch.float64: 1e-12}
    for dtype, tol in tols.items():
        for count in (0, 1, 1000):
            seed = count + 7 * len(ranks)
            mine = vector_of(r, count, dtype, seed)
            got = hvd.allreduce(mine, op=hvd.Adasum, process_set=process_set)
            want = reference([vector_of(q, count, dtype, seed).double() for q in ranks]).to(dtype)
            if got.dtype != dtype or got.shape != mine.shape:
                fail(f"{dtype} {count}: got {got.dtype} {tuple(got.shape)}")
            if not torch.allclose(got.double(), want.double(), rtol=tol, atol=tol):
                fail(f"{dtype} {count} over {ranks}: {got[:4]} != {want[:4]}")
            same_everywhere(f"{dtype} {count}", got, process_set)


def check_cases(r, n):
    v = torch.tensor([3.0, -1.0, 2.0], dtype=torch.float64)
    def close(what, got, want):
        if not torch.allclose(got, want, rtol=1e-12, atol=1e-12):
            fail(f"{what}: {got} != {want}")
    close("equal vectors", hvd.allreduce(v, op=hvd.Adasum), v)
    if n == 2:
        e = torch.eye(2, dtype=torch.float64)[r] * (r + 1)
        close("orthogonal vectors", hvd.allreduce(e, op=hvd.Adasum), torch.tensor([1.0, 2.0], dtype=torch.float64))
    z = v if r == 0 else torch.zeros(3, dtype=torch.float64)
    close("one vector and zeros", hvd.allreduce(z, op=hvd.Adasum), v)
    own = v.clone()
    out = hvd.synchronize(hvd.allreduce_async_(own, op=hvd.Adasum, prescale_factor=2.0, postscale_factor=0.25))
    if out is not own:
        fail("allreduce_async_ gave a new tensor")
    close("in place, prescale 2 and postscale 0.25", own, v * 0.5)
    got = hvd.grouped_allreduce([v, 2 * v], op=hvd.Adasum)
    close("grouped", torch.cat(got), torch.cat([v, 2 * v]))
    try:
        hvd.reducescatter(torch.ones(n), op=hvd.Adasum)
        fail("reducescatter took Adasum")
    except ValueError as e:
        if "Adasum applies to allreduce and DistributedOptimizer only" not in str(e):
            fail(f"reducescatter's refusal: {e}")


def check_optimizer(r, n):
    """The first step moves the parameters by the Adasum of every rank's own SGD step (its
    momentum buffer is then its gradient, 2 (w.x) x); the second, with each rank's momentum,
    keeps every rank's parameters the same bits."""
    model = torch.nn.Linear(4, 1, bias=False).double()
    with torch.no_grad():
        model.weight.copy_(torch.arange(4.0, dtype=torch.float64).unsqueeze(0))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9), op=hvd.Adasum,
                                   named_parameters=model.named_parameters())
    inputs = [vector_of(q, 4, torch.float64, 99) for q in range(n)]
    start = model.weight.detach().reshape(-1).clone()
    for step in range(2):
        before = model.weight.detach().clone()
        opt.zero_grad()
        (model(inputs[r].unsqueeze(0)) ** 2).sum().backward()
        opt.step()
        if step == 0:
            want = start + reference([-0.1 * 2 * float(start @ x) * x for x in inputs])
            if not torch.allclose(model.weight.detach().reshape(-1), want, rtol=1e-12, atol=1e-12):
                fail(f"optimizer step: {model.weight.detach()} != {want}")
        elif torch.equal(model.weight.detach(), before):
            fail("the second step did not move the parameters")
        same_everywhere(f"optimizer step {step}", model.weight.detach())


def main():
    n = int(sys.argv[1])
    hvd.init()
    r = hvd.rank()
    check_reference(list(range(n)), hvd.global_process_set, r)
    check_cases(r, n)
    if n >= 3:
        tail = hvd.add_process_set(list(range(1, n)))
        if tail.included():
            check_reference(tail.ranks, tail, r)
    check_optimizer(r, n)
    print(f"adasum ok rank {r} of {n}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
