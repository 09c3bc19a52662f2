"""One rank of the torch.distributed backend check (test_torch_backend.py): every call PyTorch
offers, through PyTorch's own functions, against references each rank computes itself from
every rank's seeded input; dtypes and ops the backend takes (PREMUL_SUM too), counts 0, 1 and
1001, async forms, non-contiguous tensors, new_group, point-to-point, the coalesced calls of
PyTorch 2.x, and the refusals. Prints "rank R: ok N checks".

Usage: torch_calls_rank.py INIT_METHOD [cuda]   (env://, file:///PATH or tcp://HOST:PORT)
  cuda: every tensor on the GPU (local rank r on device r modulo the devices; PyTorch 2), so that
  each call goes on PyTorch's current CUDA stream; the references are computed alike.
"""
import os
import sys

import torch
import torch.distributed as dist

import hoop.torch  # noqa: F401  (registers "hoop")

checks = 0
TORCH2 = int(torch.__version__.split(".")[0]) >= 2
CUDA = len(sys.argv) > 2 and sys.argv[2] == "cuda"
DEVICE = "cpu"  # main() sets the GPU's where CUDA
DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16,
          torch.float32, torch.float64, torch.bool]
# The unsigned types PyTorch 2.3 added (no torch.uint16 before it).
UNSIGNED = [torch.uint8] + [getattr(torch, u) for u in ("uint16", "uint32", "uint64") if hasattr(torch, u)]
DTYPES += UNSIGNED[1:]
# The 8-bit floats where torch has them (2.1 and later): drawn from -1..1 so that sums stay exact.
FP8 = [getattr(torch, f) for f in ("float8_e4m3fn", "float8_e5m2") if hasattr(torch, f)]
DTYPES += FP8
FLOATS = {torch.float16, torch.bfloat16, torch.float32, torch.float64, *FP8}
OPS = {"sum": dist.ReduceOp.SUM, "avg": dist.ReduceOp.AVG, "product": dist.ReduceOp.PRODUCT,
       "min": dist.ReduceOp.MIN, "max": dist.ReduceOp.MAX, "band": dist.ReduceOp.BAND, "bor": dist.ReduceOp.BOR,
       "bxor": dist.ReduceOp.BXOR}


def ops_for(dt):
    if dt == torch.bool:  # sum and product as gloo and NCCL give them: logical or, logical and
        return ["sum", "product", "min", "max", "band", "bor", "bxor"]
    base = ["sum", "avg", "product", "min", "max"]
    return base if dt in FLOATS else base + ["band", "bor", "bxor"]


def data(rank, case, dt, count, small=False):
    g = torch.Generator(device="cpu").manual_seed(rank * 100003 + case)
    if dt == torch.bool:
        return torch.randint(0, 2, (count,), generator=g, device="cpu").bool().to(DEVICE)
    lo, hi = (0, 5) if dt in UNSIGNED else (-1, 2) if dt in FP8 else (-3, 4)
    if small:
        lo, hi = (1, 3) if dt in UNSIGNED else (-2, 3)
    return torch.randint(lo, hi, (count,), generator=g, device="cpu").to(dt).to(DEVICE)


def reference(dt, op, inputs):
    n = len(inputs)
    if dt == torch.bool:
        s = torch.stack(inputs)
        if op in ("min", "band", "product"):
            return s.all(0)
        if op in ("max", "bor", "sum"):
            return s.any(0)
        return (s.sum(0) % 2).bool()
    wide = torch.stack([x.to(torch.float64 if dt in FLOATS else torch.int64) for x in inputs])
    if op in ("sum", "avg"):
        r = wide.sum(0)
        if op == "avg":
            r = r / n if dt in FLOATS else torch.trunc(r / n).to(torch.int64)
    elif op == "product":
        r = wide.prod(0)
    elif op == "min":
        r = wide.min(0).values
    elif op == "max":
        r = wide.max(0).values
    else:
        r = wide[0].clone()
        for x in wide[1:]:
            r = {"band": torch.bitwise_and, "bor": torch.bitwise_or, "bxor": torch.bitwise_xor}[op](r, x)
    return r.to(dt)


def same(what, got, want):
    global checks
    checks += 1
    if got.dtype in FLOATS:
        tol = 0.13 if got.dtype in FP8 else 1e-2  # an average rounded to 3 or 2 mantissa bits
        ok = got.shape == want.shape and torch.allclose(got.double(), want.double(), rtol=tol, atol=tol)
    else:
        ok = torch.equal(got, want)
    if not ok:
        raise AssertionError(f"rank {dist.get_rank()}: {what} ({got.dtype}): got {got[:8].tolist()}, "
                             f"want {want[:8].tolist()}")


def check_reductions(me, n):
    case = 0
    for dt in DTYPES:
        for count in (0, 1, 1001):
            for op in ops_for(dt):
                case += 1
                ins = [data(r, case, dt, count, op == "product") for r in range(n)]
                want = reference(dt, op, ins)
                t = ins[me].clone()
                dist.all_reduce(t, OPS[op])
                same(f"all_reduce {op} count {count}", t, want)
                t = ins[me].clone()
                dist.all_reduce(t, OPS[op], async_op=True).wait()
                same(f"all_reduce async {op}", t, want)
                root = case % n
                t = ins[me].clone()
                dist.reduce(t, root, OPS[op])
                if me == root:
                    same(f"reduce {op} to {root}", t, want)
                # reduce_scatter: rank r's list of n blocks of `count`
                blocks = [[data(r, case * 10 + p, dt, count, op == "product") for p in range(n)] for r in range(n)]
                out = torch.empty(count, dtype=dt)
                dist.reduce_scatter(out, blocks[me], OPS[op])
                same(f"reduce_scatter {op}", out, reference(dt, op, [blocks[r][me] for r in range(n)]))
                out = torch.empty(count, dtype=dt)
                dist.reduce_scatter_tensor(out, torch.cat(blocks[me]), OPS[op])
                same(f"reduce_scatter_tensor {op}", out, reference(dt, op, [blocks[r][me] for r in range(n)]))


def check_movement(me, n):
    case = 50000
    for dt in DTYPES:
        for count in (0, 1, 1001):
            case += 1
            ins = [data(r, case, dt, count) for r in range(n)]
            root = case % n
            t = ins[me].clone()
            dist.broadcast(t, root)
            same(f"broadcast from {root}", t, ins[root])
            outs = [torch.empty(count, dtype=dt) for _ in range(n)]
            dist.all_gather(outs, ins[me])
            same("all_gather", torch.cat(outs), torch.cat(ins))
            flat = torch.empty(n * count, dtype=dt)
            dist.all_gather_into_tensor(flat, ins[me])
            same("all_gather_into_tensor", flat, torch.cat(ins))
            outs = [torch.empty(count, dtype=dt) for _ in range(n)] if me == root else None
            dist.gather(ins[me], outs, dst=root)
            if me == root:
                same(f"gather to {root}", torch.cat(outs), torch.cat(ins))
            pieces = [data(root, case * 7 + p, dt, count) for p in range(n)]
            out = torch.empty(count, dtype=dt)
            dist.scatter(out, pieces if me == root else None, src=root)
            same(f"scatter from {root}", out, pieces[me])
            # all_to_all: rank p sends block q (p + q + count rows) to q
            send = [data(me, case * 11 + q, dt, me + q + count) for q in range(n)]
            recv = [torch.empty(p + me + count, dtype=dt) for p in range(n)]
            dist.all_to_all(recv, send)
            same("all_to_all", torch.cat(recv), torch.cat([data(p, case * 11 + me, dt, p + me + count) for p in range(n)]))
            # all_to_all_single with uneven splits, rows of 2 columns
            in_splits = [me + q + 1 for q in range(n)]
            whole = data(me, case * 13, dt, 2 * sum(in_splits)).view(-1, 2)
            out_splits = [p + me + 1 for p in range(n)]
            got = torch.empty(sum(out_splits), 2, dtype=dt)
            dist.all_to_all_single(got, whole, out_splits, in_splits)
            want = []
            for p in range(n):
                theirs = data(p, case * 13, dt, 2 * sum(p + q + 1 for q in range(n))).view(-1, 2)
                start = sum(p + q + 1 for q in range(me))
                want.append(theirs[start:start + p + me + 1])
            same("all_to_all_single uneven", got, torch.cat(want))
            check_uneven_lists(me, n, case, dt, count)


def check_uneven_lists(me, n, case, dt, count):
    """all_gather and reduce_scatter with a list whose tensors differ in size by rank (NCCL's
    backend takes them; gloo's does not): rank r's tensor has count + r rows of 2."""
    mine = data(me, case * 17, dt, 2 * (count + me)).view(-1, 2)
    outs = [torch.empty(count + r, 2, dtype=dt) for r in range(n)]
    dist.all_gather(outs, mine)
    same("all_gather uneven", torch.cat(outs),
         torch.cat([data(r, case * 17, dt, 2 * (count + r)).view(-1, 2) for r in range(n)]))
    op = ops_for(dt)[case % len(ops_for(dt))]
    blocks = [[data(r, case * 19 + q, dt, count + q, op == "product") for q in range(n)] for r in range(n)]
    out = torch.empty(count + me, dtype=dt)
    dist.reduce_scatter(out, blocks[me], OPS[op])
    same(f"reduce_scatter uneven {op}", out, reference(dt, op, [blocks[r][me] for r in range(n)]))


def premul_ops():
    """PREMUL_SUM (FSDP's scaled sum) with a float factor, and on PyTorch 2 a tensor factor."""
    ops = [(0.25, dist._make_nccl_premul_sum(0.25))]
    if TORCH2:
        ops.append((1.5, dist._make_nccl_premul_sum(torch.tensor([1.5], dtype=torch.float64))))
    return ops


def check_premul(me, n):
    case = 5000
    for dt in (torch.float32, torch.float64, torch.bfloat16):
        for count in (0, 1, 1001):
            for factor, op in premul_ops():
                case += 1
                ins = [data(r, case, dt, count) for r in range(n)]
                want = reference(dt, "sum", [x.double() * factor for x in ins])
                mine = ins[me].clone()
                t = mine.clone()
                dist.all_reduce(t, op)
                same(f"all_reduce premul_sum x{factor} count {count}", t, want)
                root = case % n
                t = mine.clone()
                dist.reduce(t, root, op)
                if me == root:
                    same(f"reduce premul_sum x{factor}", t, want)
                blocks = [torch.cat([data(r, case * 10 + p, dt, count) for p in range(n)]) for r in range(n)]
                src = blocks[me].clone()
                out = torch.empty(count, dtype=dt)
                dist.reduce_scatter_tensor(out, src, op)
                piece = [b[me * count:(me + 1) * count].double() * factor for b in blocks]
                same(f"reduce_scatter_tensor premul_sum x{factor}", out, reference(dt, "sum", piece))
                same("reduce_scatter_tensor premul_sum leaves the input", src, blocks[me])


def check_coalesced(me, n):
    """The coalesced all_gather_into_tensor and reduce_scatter_tensor (PyTorch 2.x): through the
    functional collectives DTensor uses (mixed dtypes and counts 0, 1, 1001 in one call) and
    through _coalescing_manager with the caller's outputs, non-contiguous among them."""
    import torch.distributed._functional_collectives as funcol
    group = dist.group.WORLD
    # Newer PyTorch renamed them (the old names warn).
    gather = getattr(funcol, "all_gather_single_coalesced", None) or funcol.all_gather_into_tensor_coalesced
    scatter = getattr(funcol, "reduce_scatter_single_coalesced", None) or funcol.reduce_scatter_tensor_coalesced
    specs = [(torch.float32, 1001), (torch.int64, 0), (torch.bfloat16, 1), (torch.uint8, 7), (torch.float64, 33)]
    ins = [[data(r, 7000 + i, dt, c) for i, (dt, c) in enumerate(specs)] for r in range(n)]
    got = gather([x.clone() for x in ins[me]], group)
    for i, g in enumerate(got):
        same(f"all_gather_into_tensor_coalesced #{i}", torch.as_tensor(g), torch.cat([ins[r][i] for r in range(n)]))
    for op_name, op in (("sum", dist.ReduceOp.SUM), ("avg", dist.ReduceOp.AVG), ("max", dist.ReduceOp.MAX)):
        for dt in (torch.float32, torch.int32):
            if op_name == "avg" and dt == torch.int32:
                continue
            sizes = (1001, 0, 5)
            big = [[data(r, 7100 + i, dt, c * n) for i, c in enumerate(sizes)] for r in range(n)]
            got = scatter([x.clone() for x in big[me]], op_name, [0] * len(sizes), group)
            for i, c in enumerate(sizes):
                want = reference(dt, op_name, [big[r][i][me * c:(me + 1) * c] for r in range(n)])
                same(f"reduce_scatter_tensor_coalesced {op_name} #{i}", torch.as_tensor(got[i]), want)
    outs = [torch.empty(n * 3, 4)[:, 1], torch.empty(n * 6, dtype=torch.int64)]
    srcs = [data(me, 7200, torch.float32, 3), data(me, 7201, torch.int64, 6)]
    with dist._coalescing_manager(group=group):
        for o, s in zip(outs, srcs):
            dist.all_gather_into_tensor(o, s)
    for i, o in enumerate(outs):
        want = torch.cat([data(r, 7200 + i, srcs[i].dtype, srcs[i].numel()) for r in range(n)])
        same(f"coalescing_manager all_gather_into_tensor #{i}", o, want)
    outs = [torch.empty(4), torch.empty(2)]
    full = [[data(r, 7300 + i, torch.float32, c * n) for i, c in enumerate((4, 2))] for r in range(n)]
    factor, op = premul_ops()[-1]
    with dist._coalescing_manager(group=group):
        for o, s in zip(outs, full[me]):
            dist.reduce_scatter_tensor(o, s.clone(), op)
    for i, c in enumerate((4, 2)):
        want = reference(torch.float32, "sum", [full[r][i][me * c:(me + 1) * c].double() * factor for r in range(n)])
        same(f"coalescing_manager reduce_scatter_tensor premul_sum #{i}", outs[i], want)


def check_complex(me, n):
    """Complex tensors, reduced as their real and imaginary parts: through the calls whose
    PyTorch frontend passes them as they are (reduce, gather, reduce_scatter) as well as those it
    passes as real views; one of them non-contiguous."""
    for dt, real in ((torch.complex64, torch.float32), (torch.complex128, torch.float64)):
        def cdata(rank, case, count):
            return torch.complex(data(rank, case, real, count), data(rank, case + 1, real, count)).to(DEVICE)
        ins = [cdata(r, 9100, 1001) for r in range(n)]
        for op, want in ((dist.ReduceOp.SUM, sum(ins)), (dist.ReduceOp.AVG, sum(ins) / n)):
            t = ins[me].clone()
            dist.all_reduce(t, op)
            same(f"all_reduce {dt} {op}", torch.view_as_real(t), torch.view_as_real(want))
            root = n - 1
            t = ins[me].clone()
            dist.reduce(t, root, op)
            if me == root:
                same(f"reduce {dt} {op}", torch.view_as_real(t), torch.view_as_real(want))
        outs = [torch.empty(1001, dtype=dt) for _ in range(n)] if me == 0 else None
        dist.gather(ins[me], outs, dst=0)
        if me == 0:
            same(f"gather {dt}", torch.view_as_real(torch.cat(outs)), torch.view_as_real(torch.cat(ins)))
        blocks = [[cdata(r, 9200 + 10 * p, 7) for p in range(n)] for r in range(n)]
        out = torch.empty(7, dtype=dt)
        dist.reduce_scatter(out, blocks[me])
        same(f"reduce_scatter {dt}", torch.view_as_real(out), torch.view_as_real(sum(b[me] for b in blocks)))
        out = torch.empty(14, dtype=dt)[::2]  # non-contiguous
        dist.reduce_scatter_tensor(out, torch.cat(blocks[me]))
        same(f"reduce_scatter_tensor {dt}", torch.view_as_real(out), torch.view_as_real(sum(b[me] for b in blocks)))
        flat = torch.empty(n * 1001, dtype=dt)
        dist.all_gather_into_tensor(flat, ins[me])
        same(f"all_gather_into_tensor {dt}", torch.view_as_real(flat), torch.view_as_real(torch.cat(ins)))


def check_layouts_and_groups(me, n):
    # A non-contiguous tensor (a transposed view) is reduced in place.
    base = torch.arange(12, dtype=torch.float32).view(3, 4) + me
    view = base.t()
    dist.all_reduce(view)
    same("all_reduce of a transposed view", base, (torch.arange(12, dtype=torch.float32).view(3, 4) * n
                                                   + sum(range(n))))
    # new_group: the even ranks, and (every rank must call new_group) a group of one.
    evens = dist.new_group([r for r in range(n) if r % 2 == 0])
    alone = dist.new_group([n - 1])
    if me % 2 == 0:
        t = torch.tensor([float(me)])
        dist.all_reduce(t, group=evens)
        same("all_reduce on new_group(evens)", t, torch.tensor([float(sum(r for r in range(n) if r % 2 == 0))]))
    if me == n - 1:
        t = torch.tensor([5.0])
        dist.all_reduce(t, group=alone)
        same("all_reduce on a group of one", t, torch.tensor([5.0]))
    dist.barrier()
    check_split_group(me, n)
    if n > 1:
        nxt, prv = (me + 1) % n, (me - 1) % n
        got = torch.zeros(3)
        r = dist.irecv(got, prv, tag=3)
        dist.send(torch.full((3,), float(me)), nxt, tag=3)
        r.wait()
        same("send/irecv", got, torch.full((3,), float(prv)))
        # batch_isend_irecv (pipelining's exchange): both ways round the ring at once, every send
        # posted before any receive, sizes past one chunk, and two messages to one peer in order.
        ops, want = [], []
        for peer, k in ((nxt, 1), (prv, 2)):
            ops.append(dist.P2POp(dist.isend, data(me, 9000 + k, torch.float32, 300001), peer))
        for peer, k in ((prv, 1), (nxt, 2)):
            got = torch.empty(300001)
            ops.append(dist.P2POp(dist.irecv, got, peer))
            want.append((got, data(peer, 9000 + k, torch.float32, 300001)))
        for w in dist.batch_isend_irecv(ops):
            w.wait()
        for i, (got, w) in enumerate(want):
            same(f"batch_isend_irecv #{i}", got, w)
        if CUDA:  # on a stream the source must be named
            return
        if me == 0:
            for p in range(1, n):
                x = torch.zeros(1)
                src = dist.recv(x, tag=9)  # any source
                same("recv any source", x, torch.tensor([float(src)]))
        else:
            dist.send(torch.tensor([float(me)]), 0, tag=9)


def check_split_group(me, n):
    """split_group (PyTorch 2.10 on here): the evens in reverse order (position is the new rank)
    and the odds; then a part of rank 0 alone, the others in none; the world goes on after."""
    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
    if not hasattr(dist, "split_group") or version < (2, 10):
        return
    parts = [p for p in ([r for r in range(n) if r % 2 == 0][::-1], [r for r in range(n) if r % 2 == 1]) if p]
    group = dist.split_group(split_ranks=parts)
    mine = [p for p in parts if me in p][0]
    same("split_group rank", torch.tensor([dist.get_rank(group)]), torch.tensor([mine.index(me)]))
    t = torch.tensor([float(me)])
    dist.all_reduce(t, group=group)
    same("all_reduce on a split_group part", t, torch.tensor([float(sum(mine))]))
    alone = dist.split_group(split_ranks=[[0]])
    if me == 0:
        t = torch.tensor([3.0])
        dist.all_reduce(t, group=alone)
        same("all_reduce on a part of one", t, torch.tensor([3.0]))
    elif alone != dist.GroupMember.NON_GROUP_MEMBER:
        raise AssertionError(f"rank {me}: split_group gave a group to a rank in no part")


def check_streams(me, n):
    """CUDA: a call's result is ordered on the caller's current stream by wait() (a kernel after
    it sees the result, with no host wait), on a side stream too; a Future's callback sees the
    result; wait with a timeout waits on the host. While a call waits for a late peer, the current
    stream is not held up (the call runs on a stream of its own, as NCCL's backend runs them)."""
    import datetime
    import time
    late = torch.ones(3)
    if me == n - 1:
        time.sleep(1.0)
    w = dist.all_reduce(late, async_op=True)
    if me == 0 and n > 1:
        start = time.monotonic()
        (torch.ones(1000) * 2).sum().item()  # a kernel on the current stream, and a host wait for it
        took = time.monotonic() - start
        if took > 0.5:
            raise AssertionError(f"rank {me}: a kernel behind a pending all_reduce took {took:.2f} s: the current "
                                 "stream waited for the call")
    w.wait()
    same("all_reduce with a late peer", late, torch.full((3,), float(n)))
    x = torch.full((1 << 20,), float(me + 1))
    w = dist.all_reduce(x, async_op=True)
    w.wait()
    same("all_reduce, then a kernel on the stream", (x * 2)[:4], torch.full((4,), float(n * (n + 1))))
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        z = torch.full((1001,), float(me))
        dist.all_reduce(z)
    torch.cuda.current_stream().wait_stream(side)
    same("all_reduce on a side stream", z, torch.full((1001,), float(sum(range(n)))))
    fut = dist.all_reduce(torch.ones(7), async_op=True).get_future()
    same("a future's callback", fut.then(lambda f: f.value()[0] * 3).wait(), torch.full((7,), 3.0 * n))
    y = torch.ones(5)
    dist.all_reduce(y, async_op=True).wait(timeout=datetime.timedelta(seconds=60))
    same("wait with a timeout", y, torch.full((5,), float(n)))


def check_nested_callbacks(me, n):
    """A future's callback that issues a call and waits for its future, nested deeper than the
    backend's completion threads (16, the most a group starts): each level runs on a thread the
    level above waits on. Deeper than that, a level completes on the thread that takes its
    future, never a hang (gloo hangs at the second level)."""
    depth = 24

    def level(d):
        fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
        if d == 0:
            return fut.wait()[0]
        return fut.then(lambda f: f.value()[0] + level(d - 1)).wait()

    same(f"callbacks nested {depth} deep, each waiting for the next call", level(depth),
         torch.full((3,), float(n * (depth + 1))))


def odd_dtype():
    """A tensor of a dtype hoop has no row for (torch 2.x's fnuz fp8; 1.13's quantized uint8)."""
    if hasattr(torch, "float8_e4m3fnuz"):
        return torch.zeros(2, dtype=torch.float8_e4m3fnuz)
    return torch.quantize_per_tensor(torch.zeros(2), 0.1, 0, torch.quint8)


def check_refusals(me, n):
    global checks
    cases = [
        (lambda: dist.broadcast(odd_dtype(), 0), "not supported"),
        (lambda: dist.reduce(torch.zeros(2, dtype=torch.complex64), 0, dist.ReduceOp.MAX),
         "take SUM, AVG and PREMUL_SUM"),
        (lambda: dist.all_reduce(torch.zeros(2), op=dist.ReduceOp.BXOR), "bxor"),
        (lambda: dist.all_gather([torch.zeros(2)] * n, torch.zeros(3)), "output tensor has 2 elements"),
        (lambda: dist.all_reduce(torch.zeros(2, dtype=torch.bool), dist._make_nccl_premul_sum(0.5)),
         "PREMUL_SUM on a bool tensor"),
    ]
    if n > 1:
        cases.append((lambda: dist.all_to_all_single(torch.zeros(n + 1), torch.zeros(n + 1)), "equal parts"))
    if CUDA:
        cases.append((lambda: dist.recv(torch.zeros(1)), "any source takes a CPU tensor"))
    for call, words in cases:
        try:
            call()
        except RuntimeError as e:
            if words not in str(e) or f"rank {me}" not in str(e):
                raise AssertionError(f"rank {me}: refusal says '{e}', wanted '{words}' and the rank")
            checks += 1
        else:
            raise AssertionError(f"rank {me}: a call that should be refused ({words}) was taken")


def main():
    method = sys.argv[1] if len(sys.argv) > 1 else "env://"
    if CUDA:
        global DEVICE
        DEVICE = f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % torch.cuda.device_count()}"
        torch.cuda.set_device(DEVICE)
        torch.set_default_device(DEVICE)
    if method == "env://":
        dist.init_process_group("hoop")
    else:  # file:// and tcp:// take the rank and size as arguments
        dist.init_process_group("hoop", init_method=method, rank=int(os.environ["RANK"]),
                                world_size=int(os.environ["WORLD_SIZE"]))
    me, n = dist.get_rank(), dist.get_world_size()
    check_reductions(me, n)
    check_movement(me, n)
    check_premul(me, n)
    check_complex(me, n)
    if TORCH2:
        check_coalesced(me, n)
    check_layouts_and_groups(me, n)
    check_refusals(me, n)
    check_nested_callbacks(me, n)
    if CUDA:
        check_streams(me, n)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {me}: ok {checks} checks", flush=True)


if __name__ == "__main__":
    main()
