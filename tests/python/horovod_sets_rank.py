"""One rank of the Horovod-style API's process sets (test_horovod.py), on any number of ranks:
static sets at init (evens, odds, the last rank alone, a copy of one that stays unregistered, the
global set given again), every call with process_set= against a reference (allreduce sync, async
and in place, broadcast from a world rank, allgather uneven, alltoall, reducescatter, the grouped
calls, barrier, the object calls), calls on two overlapping sets in flight at once, the refusals
(a rank outside the set, a root outside it, a set not registered, ranks that disagree),
add_process_set and remove_process_set, DistributedOptimizer over a set (the others step on their
own gradients), and sparse gradients (sparse_allreduce_async, an optimizer over a sparse
embedding, sparse_as_dense). Prints "sets ok rank R of N"."""
import sys

import torch

import hoop.torch as hvd


def close(what, got, want, tol=1e-6):
    if got.shape != want.shape or not torch.allclose(got.double(), want.double(), atol=tol, rtol=tol):
        print(f"sets FAIL rank {hvd.rank()}: {what}: {got} != {want}")
        sys.exit(1)


def refused(what, fn, words):
    try:
        fn()
    except ValueError as e:
        if words not in str(e):
            print(f"sets FAIL rank {hvd.rank()}: {what}: the error does not say '{words}': {e}")
            sys.exit(1)
        return
    print(f"sets FAIL rank {hvd.rank()}: {what} was not refused")
    sys.exit(1)


def check_calls(ps, r):
    """Every call on ps, on one of its ranks, against what its ranks' inputs give."""
    ranks, k, m = ps.ranks, ps.rank(), ps.size()
    assert ranks.index(r) == k and m == len(ranks), (ranks, k, m)
    x = torch.arange(5, dtype=torch.float64) + r
    total = sum(torch.arange(5, dtype=torch.float64) + q for q in ranks)
    close(f"{ranks} allreduce", hvd.allreduce(x, process_set=ps), total / m)
    close(f"{ranks} allreduce sum", hvd.allreduce(x, op=hvd.Sum, name="s", process_set=ps), total)
    own = x.clone()
    hvd.synchronize(hvd.allreduce_async_(own, op=hvd.Max, process_set=ps))
    close(f"{ranks} allreduce_async_ max", own, torch.arange(5, dtype=torch.float64) + max(ranks))
    root = ranks[-1]
    close(f"{ranks} broadcast from world rank {root}", hvd.broadcast(x, root_rank=root, process_set=ps),
          torch.arange(5, dtype=torch.float64) + root)
    close(f"{ranks} allgather uneven", hvd.allgather(torch.full((r + 1, 2), float(r)), process_set=ps),
          torch.cat([torch.full((q + 1, 2), float(q)) for q in ranks]))
    close(f"{ranks} allgather even", hvd.allgather(torch.full((2,), float(r)), name="e", process_set=ps),
          torch.cat([torch.full((2,), float(q)) for q in ranks]))
    close(f"{ranks} alltoall", hvd.alltoall(torch.arange(float(m)) + 100 * r, process_set=ps),
          torch.tensor([100.0 * q + k for q in ranks]))
    big = torch.arange(3.0 * m).reshape(m, 3)
    close(f"{ranks} reducescatter", hvd.reducescatter(big + r, op=hvd.Sum, process_set=ps),
          sum(big + q for q in ranks)[k:k + 1])
    got = hvd.grouped_allreduce([x, 2 * x], op=hvd.Sum, process_set=ps)
    close(f"{ranks} grouped_allreduce", torch.cat(got), torch.cat([total, 2 * total]))
    got = hvd.grouped_allgather([torch.full((1,), float(r))], process_set=ps)
    close(f"{ranks} grouped_allgather", got[0], torch.tensor([float(q) for q in ranks]))
    hvd.barrier(process_set=ps)
    assert hvd.allgather_object((r, "x"), process_set=ps) == [(q, "x") for q in ranks]
    assert hvd.broadcast_object({"from": r}, root_rank=root, process_set=ps) == {"from": root}
    if m < hvd.size():
        outside = next(q for q in range(hvd.size()) if q not in ranks)
        refused(f"{ranks} broadcast from rank {outside}", lambda: hvd.broadcast(x, outside, process_set=ps),
                f"root_rank {outside} is not in the process set of ranks {ranks}")


def check_optimizer(ps, r, n):
    """DistributedOptimizer over ps: its ranks step on the set's average gradient, the others on
    their own."""
    model = torch.nn.Linear(2, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5),
                                   named_parameters=model.named_parameters(), process_set=ps)
    model(torch.full((1, 2), float(r + 1))).sum().backward()
    opt.step()
    grad = sum(q + 1 for q in ps.ranks) / len(ps.ranks) if ps.included() else r + 1
    close(f"optimizer over {ps.ranks}", model.weight, torch.full((1, 2), 1.0 - 0.5 * grad))


def check_sparse(r, n):
    sp = torch.sparse_coo_tensor([[r, n]], [1.0 + r, 2.0], (n + 1,))
    want = torch.cat([torch.arange(1.0, n + 1), torch.tensor([2.0 * n])])
    close("sparse_allreduce_async sum", hvd.synchronize(hvd.sparse_allreduce_async(sp, "sp", hvd.Sum)).to_dense(),
          want)
    close("sparse_allreduce_async average", hvd.synchronize(hvd.sparse_allreduce_async(sp, op=hvd.Average))
          .to_dense(), want / n)
    for as_dense in (False, True):
        emb = torch.nn.Embedding(n + 1, 2, sparse=True)
        with torch.no_grad():
            emb.weight.fill_(0.0)
        opt = hvd.DistributedOptimizer(torch.optim.SGD(emb.parameters(), lr=1.0),
                                       named_parameters=[(f"emb{int(as_dense)}", emb.weight)],
                                       sparse_as_dense=as_dense)
        emb(torch.tensor([r, n])).sum().backward()
        opt.step()
        want = -torch.cat([torch.full((n, 2), 1.0 / n), torch.ones(1, 2)])
        close(f"embedding step (sparse_as_dense={as_dense})", emb.weight.detach(), want)


def main():
    n = int(sys.argv[1])  # 3 or more: the sets below are then all different
    evens = hvd.ProcessSet(range(0, n, 2))
    odds = hvd.ProcessSet(range(1, n, 2))
    last = hvd.ProcessSet([n - 1])
    copy = hvd.ProcessSet(list(range(0, n, 2)))
    hvd.init(process_sets=[evens, hvd.global_process_set, odds, last, copy])
    r = hvd.rank()
    assert hvd.size() == n and hvd.global_process_set.ranks == list(range(n)), hvd.global_process_set
    assert hvd.global_process_set.process_set_id == 0, hvd.global_process_set
    assert (evens.process_set_id, copy.process_set_id) == (1, None), (evens, copy)
    assert last.process_set_id == 3 and hvd.global_process_set.size() == n
    mine = evens if r % 2 == 0 else odds
    check_calls(mine, r)
    if r == n - 1:
        check_calls(last, r)
    check_calls(hvd.global_process_set, r)
    other = odds if mine is evens else evens
    refused("a call on a set without this rank", lambda: hvd.allreduce(torch.ones(1), process_set=other),
            f"rank {r}: allreduce_async: this rank is not part of")
    refused("rank() on a set without this rank", other.rank, "is not part of")
    refused("a set not registered", lambda: hvd.allreduce(torch.ones(1), process_set=copy), "is not registered")
    # Two overlapping sets in flight at once on the rank they share: each set's runtime runs alone.
    left, right = hvd.add_process_set([0, 1]), hvd.add_process_set(hvd.ProcessSet([1, 2]))
    handles = [hvd.allreduce_async(torch.full((3,), float(r)), op=hvd.Sum, process_set=ps)
               for ps in (left, right) if ps.included()]
    for h, ps in zip(handles, [ps for ps in (left, right) if ps.included()]):
        close(f"overlapping {ps.ranks}", hvd.synchronize(h), torch.full((3,), float(sum(ps.ranks))))
    refused("a second set of the same ranks", lambda: hvd.add_process_set([1, 0]), "exists already")
    assert hvd.remove_process_set(left) and left.process_set_id is None
    assert not hvd.remove_process_set(left) and not hvd.remove_process_set(hvd.global_process_set)
    refused("a removed set", lambda: hvd.barrier(process_set=left), "is not registered")
    check_optimizer(right, r, n)
    check_optimizer(mine, r, n)
    refused("ranks that disagree", lambda: hvd.add_process_set([0] if r == 0 else [0, 1]),
            "passed other ranks than rank 0 did")
    refused("a rank outside the world", lambda: hvd.add_process_set([n]), f"ranks [{n}] are not in the world")
    check_sparse(r, n)
    print(f"sets ok rank {r} of {n}")
    hvd.shutdown()


if __name__ == "__main__":
    main()
