"""One rank of the Horovod-style API check (test_horovod.py): every call of hoop.torch's
Horovod API against references each rank computes from every rank's seeded input, the fp16 wire
compression inside its stated bound, and the refusals. Prints "rank R: ok N checks".

Usage: horovod_rank.py [cuda]: with "cuda", every tensor lives on the GPU (local rank r on device r
modulo the devices), and the calls are checked to queue after the work on the current stream,
PyTorch's default one or a side stream, without the caller waiting for it (check_streams)."""
import os
import sys

import torch

import hoop
import hoop.torch as hvd

checks = 0
DEV = "cpu"


def same(what, got, want, tol=0.0):
    global checks
    checks += 1
    got, want = got.cpu(), want.cpu()
    ok = got.shape == want.shape and (torch.equal(got, want) if tol == 0 else
                                      torch.allclose(got.double(), want.double(), rtol=tol, atol=tol))
    if not ok:
        raise AssertionError(f"rank {hvd.rank()}: {what}: got {got.flatten()[:6].tolist()}, "
                             f"want {want.flatten()[:6].tolist()}")


def data(rank, case, shape, dtype=torch.float32):
    g = torch.Generator().manual_seed(rank * 7919 + case)
    return torch.randint(-3, 4, shape, generator=g).to(dtype).to(DEV)


def check_streams(me, n):
    """CUDA: a call on a tensor whose producer is still running on the current stream (a kernel
    that spins ~0.1 s first) returns before that work is done, and its result has the value the
    producer wrote: on PyTorch's default stream, and on a side stream."""
    want = torch.full((1 << 20,), float(n * (n + 1) // 2))
    side = torch.cuda.Stream()
    for where, stream in (("default", torch.cuda.default_stream()), ("side", side)):
        with torch.cuda.stream(stream):
            t = torch.zeros(1 << 20, device=DEV)
            torch.cuda._sleep(200_000_000)
            t.fill_(me + 1)
            h = hvd.allreduce_async_(t, op=hvd.Sum, name=f"stream.{where}")
            if stream.query():
                raise AssertionError(f"rank {me}: allreduce_async_ on the {where} stream waited for the stream's work")
            same(f"allreduce_async_ after a kernel on the {where} stream", hvd.synchronize(h), want)
            u = torch.zeros(1 << 20, device=DEV)
            torch.cuda._sleep(200_000_000)
            u.fill_(me + 1)
            same(f"allreduce after a kernel on the {where} stream", hvd.allreduce(u, op=hvd.Sum), want)
            g = torch.zeros(3, 4, device=DEV)
            torch.cuda._sleep(200_000_000)
            g.fill_(me)
            same(f"allgather after a kernel on the {where} stream", hvd.allgather(g),
                 torch.cat([torch.full((3, 4), float(r)) for r in range(n)]))
        torch.cuda.current_stream().wait_stream(stream)


def main():
    global DEV
    if sys.argv[1:] == ["cuda"]:
        DEV = f"cuda:{int(os.environ.get('LOCAL_RANK', '0')) % torch.cuda.device_count()}"
        torch.cuda.set_device(DEV)
    hvd.init()
    me, n = hvd.rank(), hvd.size()
    if DEV != "cpu":
        check_streams(me, n)
    assert hvd.is_initialized() and hvd.local_size() >= 1 and 0 <= hvd.local_rank() < hvd.local_size()
    case = 0
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int16):
        for shape in ((0,), (1,), (7, 3), (1001,)):
            case += 1
            ins = [data(r, case, shape, dtype) for r in range(n)]
            total = sum(x.double() for x in ins)
            same(f"allreduce Sum {dtype} {shape}", hvd.allreduce(ins[me], op=hvd.Sum), total.to(dtype))
            if dtype.is_floating_point:
                same(f"allreduce Average {dtype}", hvd.allreduce(ins[me], name=f"avg{case}"), (total / n).to(dtype),
                     tol=1e-2)
                same(f"allreduce average=True {dtype}", hvd.allreduce(ins[me], average=True), (total / n).to(dtype),
                     tol=1e-2)
                scaled = hvd.allreduce(ins[me], op=hvd.Sum, prescale_factor=0.5, postscale_factor=4.0)
                same(f"allreduce pre/postscale {dtype}", scaled, (total * 2).to(dtype), tol=1e-2)
            stack = torch.stack([x.double() for x in ins])
            same(f"allreduce Max {dtype}", hvd.allreduce(ins[me], op=hvd.Max), stack.max(0).values.to(dtype))
            same(f"allreduce Min {dtype}", hvd.allreduce(ins[me], op=hvd.Min), stack.min(0).values.to(dtype))
            t = ins[me].clone()
            h = hvd.allreduce_async_(t, op=hvd.Sum)
            same(f"allreduce_async_ {dtype}", hvd.synchronize(h), total.to(dtype))
            same(f"allreduce_async_ in place {dtype}", t, total.to(dtype))
            h = hvd.allreduce_async(ins[me], op=hvd.Sum, name=f"poll{case}")
            while not hvd.poll(h):
                pass
            same(f"allreduce_async poll {dtype}", hvd.synchronize(h), total.to(dtype))
            root = case % n
            same(f"broadcast {dtype}", hvd.broadcast(ins[me], root), ins[root])
            t = ins[me].clone()
            hvd.broadcast_(t, root)
            same(f"broadcast_ {dtype}", t, ins[root])
            same(f"allgather {dtype}", hvd.allgather(ins[me]), torch.cat(ins) if shape != (0,) else ins[me])
    # allgather with first dimensions that differ; alltoall equal and with splits.
    rows = [data(r, 900, (r + 1, 3)) for r in range(n)]
    same("allgather uneven", hvd.allgather(rows[me]), torch.cat(rows))
    blocks = [data(r, 901, (2 * n, 2)) for r in range(n)]
    same("alltoall", hvd.alltoall(blocks[me]), torch.cat([blocks[p][2 * me:2 * me + 2] for p in range(n)]))
    splits = [me + q for q in range(n)]
    mine = data(me, 902, (sum(splits), 2))
    out, received = hvd.alltoall(mine, splits=torch.tensor(splits))
    want = []
    for p in range(n):
        theirs = data(p, 902, (sum(p + q for q in range(n)), 2))
        start = sum(p + q for q in range(me))
        want.append(theirs[start:start + p + me])
    same("alltoall splits", out, torch.cat(want))
    same("alltoall received_splits", received, torch.tensor([p + me for p in range(n)], dtype=torch.int32))
    # Objects, parameters, optimizer state.
    obj = hvd.broadcast_object({"rank": me, "list": [1, 2]} if me == n - 1 else None, root_rank=n - 1)
    if obj != {"rank": n - 1, "list": [1, 2]}:
        raise AssertionError(f"rank {me}: broadcast_object gave {obj}")
    if hvd.allgather_object(me * 10) != [r * 10 for r in range(n)]:
        raise AssertionError(f"rank {me}: allgather_object")
    torch.manual_seed(me)
    net = torch.nn.Linear(3, 2)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    torch.manual_seed(0)
    same("broadcast_parameters", net.weight.detach(), torch.nn.Linear(3, 2).weight.detach())
    opt = torch.optim.SGD(net.parameters(), lr=0.1 * (me + 1), momentum=0.9)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    if opt.param_groups[0]["lr"] != 0.1:
        raise AssertionError(f"rank {me}: broadcast_optimizer_state left lr {opt.param_groups[0]['lr']}")
    # fp16 wire compression: inside hoop's bound, |r - exact| <= g (sum |x| + 2^-24 M).
    x = torch.randn(10007, generator=torch.Generator().manual_seed(me), dtype=torch.float32).to(DEV)
    allx = [torch.randn(10007, generator=torch.Generator().manual_seed(r), dtype=torch.float32) for r in range(n)]
    exact = sum(a.double() for a in allx)
    got = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16).double().cpu()
    g = hoop.compression_error_factor(hoop.FP16, n)
    a = sum(v.double().abs() for v in allx)  # A_j; M is the largest of them
    bound = g * (a + 2.0 ** -24 * a.max())
    if n > 1 and not bool(((got - exact).abs() <= bound).all()):
        raise AssertionError(f"rank {me}: fp16 allreduce outside its bound by {((got - exact).abs() - bound).max()}")
    if n > 1 and torch.equal(got, exact):
        raise AssertionError(f"rank {me}: fp16 allreduce was exact: no compression happened")
    same("fp16 allreduce within the bound", torch.ones(1), torch.ones(1))
    # Refusals name the rank and the call.
    for call, words in ((lambda: hvd.allreduce(torch.zeros(2, dtype=torch.complex64, device=DEV)), "not supported"),
                        (lambda: hvd.allreduce(torch.zeros(2, device=DEV), op="mean"), "op must be"),
                        (lambda: hvd.alltoall(torch.zeros(n + 1, device=DEV)) if n > 1 else hvd.alltoall(None), "")):
        try:
            call()
        except (TypeError, ValueError) as e:
            if words not in str(e):
                raise AssertionError(f"rank {me}: refusal says '{e}', wanted '{words}'")
            same("refusal", torch.ones(1), torch.ones(1))
        else:
            raise AssertionError(f"rank {me}: a call that should be refused ({words}) was taken")
    last = hvd.join()
    if not 0 <= last < n:
        raise AssertionError(f"rank {me}: join returned {last}")
    hvd.barrier()
    hvd.shutdown()
    print(f"rank {me}: ok {checks} checks", flush=True)


if __name__ == "__main__":
    main()
