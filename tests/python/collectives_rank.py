"""One rank of the Python package's check against NumPy (run under hooprun by test_collectives.py).

Every rank makes every rank's input from a seed of (rank, case), so each can compute the
reference itself: random small integers as every dtype (exact in f16/bf16/fp8 sums, no integer
overflow; bf16 and the fp8s as their bits with dtype=), counts 0, 1, 7 and 1001, every op that
applies to the dtype; the collectives blocking and nonblocking, point-to-point around a ring, a
split, and refused calls. Prints "rank R: ok N checks" at the end; any mismatch raises, naming
the call.
"""
import sys

import numpy as np

import hoop

COUNTS = [0, 1, 7, 1001]
DTYPES = ["u8", "i8", "i16", "u16", "bool", "i32", "u32", "i64", "u64", "f16", "bf16", "f32", "f64", "f8e4m3",
          "f8e5m2"]
UNSIGNED = {"u8", "u16", "u32", "u64"}
NUMPY = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
         "bool": np.bool_, "i32": np.int32, "i64": np.int64, "f16": np.float16,
         "bf16": np.uint16, "f32": np.float32, "f64": np.float64, "f8e4m3": np.uint8, "f8e5m2": np.uint8}
FLOATS = {"f16", "bf16", "f32", "f64", "f8e4m3", "f8e5m2"}
AS_BITS = {"bf16": hoop.BF16, "f8e4m3": hoop.F8E4M3, "f8e5m2": hoop.F8E5M2}  # no NumPy type: bits, and dtype=


def fp8_table(e_bits, m_bits):
    """The value of each of the 256 codes (the OCP formula; NaNs and infinities as NaN)."""
    bias = (1 << (e_bits - 1)) - 1
    out = np.empty(256)
    for c in range(256):
        e, m = (c >> m_bits) & ((1 << e_bits) - 1), c & ((1 << m_bits) - 1)
        sign = -1.0 if c & 0x80 else 1.0
        special = (c & 0x7F) == 0x7F if e_bits == 4 else e == (1 << e_bits) - 1
        out[c] = np.nan if special else sign * (2.0 ** (1 - bias - m_bits) * m if e == 0 else
                                                2.0 ** (e - bias) * (1 + m / (1 << m_bits)))
    return out


FP8 = {"f8e4m3": fp8_table(4, 3), "f8e5m2": fp8_table(5, 2)}


def fp8_bits(dt, values):  # the nearest code (the tests' values are exact or averages of them)
    table = np.nan_to_num(FP8[dt], nan=np.inf)
    v = np.asarray(values, dtype=np.float64)
    return np.abs(table[None, :] - v.reshape(-1, 1)).argmin(1).astype(np.uint8).reshape(v.shape)
checks = 0


def ops_for(dt):
    if dt == "bool":
        return ["min", "max", "band", "bor", "bxor"]
    ops = ["sum", "avg", "min", "max", "prod"]
    return ops if dt in FLOATS else ops + ["band", "bor", "bxor"]


def bf16_bits(values):  # small integers and their averages: rounded to nearest by the top half
    f = np.asarray(values, dtype=np.float32)
    u = f.view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def data(rank, case, dt, count, small=False):
    """Rank `rank`'s input for test case `case`: the same on every rank that asks."""
    rng = np.random.default_rng([rank, case])
    if dt == "bool":
        return rng.integers(0, 2, count).astype(np.bool_)
    lo, hi = (0, 5) if dt in UNSIGNED else (-1, 2) if dt in FP8 else (-3, 4)  # fp8: sums exact
    if small:  # for prod: at most 2^ranks in magnitude
        lo, hi = (1, 3) if dt in UNSIGNED else (-2, 3)
    v = rng.integers(lo, hi, count)
    if dt == "bf16":
        return bf16_bits(v)
    if dt in FP8:
        return fp8_bits(dt, v)
    return v.astype(NUMPY[dt])


def as_values(dt, a):
    if dt in FP8:
        return FP8[dt][np.asarray(a, dtype=np.uint8)]
    return bf16_values(a) if dt == "bf16" else a


def reference(dt, op, inputs):
    vals = [as_values(dt, x) for x in inputs]
    n = len(vals)
    if dt == "bool":
        stack = np.stack(vals)
        r = {"min": stack.all(0), "band": stack.all(0), "max": stack.any(0), "bor": stack.any(0),
             "bxor": np.bitwise_xor.reduce(stack, 0)}[op]
        return r
    wide = np.stack(vals).astype(np.float64 if dt in FLOATS else np.int64)
    if op in ("sum", "avg"):
        r = wide.sum(0)
        if op == "avg":
            r = r / n if dt in FLOATS else np.trunc(r / n)
    elif op == "prod":
        r = wide.prod(0)
    elif op == "min":
        r = wide.min(0)
    elif op == "max":
        r = wide.max(0)
    else:
        fn = {"band": np.bitwise_and, "bor": np.bitwise_or, "bxor": np.bitwise_xor}[op]
        r = fn.reduce(np.stack(vals), 0)
    if dt == "bf16":
        return bf16_bits(r)
    if dt in FP8:
        return fp8_bits(dt, r)
    return r.astype(NUMPY[dt])


def same(what, dt, got, want):
    global checks
    checks += 1
    if dt in FLOATS:
        g, w = as_values(dt, np.asarray(got)).astype(np.float64), as_values(dt, np.asarray(want)).astype(np.float64)
        tol = 0.13 if dt in FP8 else 1e-2 if dt in ("f16", "bf16") else 1e-6
        ok = g.shape == w.shape and np.allclose(g, w, rtol=tol, atol=tol)
    else:
        ok = np.array_equal(np.asarray(got), np.asarray(want))
    if not ok:
        raise AssertionError(f"rank {hoop.rank()}: {what} ({dt}): got {np.asarray(got)[:8]}, want {np.asarray(want)[:8]}")


def kw(dt):
    return {"dtype": AS_BITS[dt]} if dt in AS_BITS else {}


def check_reductions(me, n):
    case = 0
    for dt in DTYPES:
        for count in COUNTS:
            for op in ops_for(dt):
                case += 1
                small = op == "prod"
                inputs = [data(r, case, dt, count, small) for r in range(n)]
                want = reference(dt, op, inputs)
                x = inputs[me]
                same(f"allreduce {op} count {count}", dt, hoop.allreduce(x, op, **kw(dt)), want)
                req = hoop.iallreduce(x, op, **kw(dt))
                same(f"iallreduce {op} count {count}", dt, req.wait(), want)
                inplace = x.copy()
                hoop.allreduce(inplace, op, out=inplace, **kw(dt))
                same(f"allreduce in place {op}", dt, inplace, want)
                got = hoop.reduce(x, op, root=n - 1, **kw(dt))
                if me == n - 1:
                    same(f"reduce {op} count {count}", dt, got, want)
                elif got is not None:
                    raise AssertionError(f"rank {me}: reduce returned {got} off the root")
                # reduce_scatter: every rank's input is n blocks of `count`.
                blocks = [data(r, case + 100000, dt, count * n, small) for r in range(n)]
                full = reference(dt, op, blocks)
                got = hoop.reduce_scatter(blocks[me], op, **kw(dt))
                same(f"reduce_scatter {op} count {count}", dt, got, full[me * count:(me + 1) * count])


def check_movement(me, n):
    case = 500000
    for dt in DTYPES:
        for count in COUNTS:
            case += 1
            inputs = [data(r, case, dt, count) for r in range(n)]
            x = inputs[me]
            stacked = np.concatenate(inputs) if count else np.zeros(0, NUMPY[dt])
            same(f"allgather count {count}", dt, hoop.allgather(x, **kw(dt)), stacked)
            same(f"iallgather count {count}", dt, hoop.iallgather(x, **kw(dt)).wait(), stacked)
            root = case % n
            same(f"broadcast from {root}", dt, hoop.broadcast(x, root, **kw(dt)), inputs[root])
            buf = x.copy()
            same(f"broadcast in place from {root}", dt, hoop.broadcast(buf, root, out=buf, **kw(dt)), inputs[root])
            got = hoop.gather(x, root, **kw(dt))
            if me == root:
                same(f"gather to {root}", dt, got, stacked)
            whole = [data(r, case + 1000, dt, count * n) for r in range(n)]
            out = np.empty(count, NUMPY[dt])
            got = hoop.scatter(whole[root] if me == root else None, root, out=out, **kw(dt))
            same(f"scatter from {root}", dt, got, whole[root][me * count:(me + 1) * count])
            want = np.concatenate([whole[p][me * count:(me + 1) * count] for p in range(n)]) if count else out[:0]
            same(f"alltoall count {count}", dt, hoop.alltoall(whole[me], **kw(dt)), want)
            # allgatherv: rank r brings r + count rows (of 2 columns).
            rows = [data(r, case + 2000, dt, 2 * (r + count)).reshape(-1, 2) for r in range(n)]
            same(f"allgatherv count {count}", dt, hoop.allgatherv(rows[me], **kw(dt)), np.concatenate(rows))


def check_point_to_point(me, n):
    global checks
    for count in COUNTS:
        nxt, prv = (me + 1) % n, (me - 1) % n
        msg = data(me, 900000 + count, "f32", count)
        want = data(prv, 900000 + count, "f32", count)
        if n == 1:
            continue
        out = np.empty(count + 3, np.float32)  # longer than the message: allowed
        r = hoop.irecv(out, prv, tag=count)
        hoop.send(msg, nxt, tag=count)
        _, (source, tag, got) = r.wait()
        if (source, tag, got) != (prv, count, count):
            raise AssertionError(f"rank {me}: irecv info {(source, tag, got)}, want {(prv, count, count)}")
        same(f"send/irecv count {count}", "f32", out[:count], want)
        s = hoop.isend(msg, nxt, tag=7)
        info = hoop.recv(out, hoop.ANY_SOURCE, tag=7)
        s.wait()
        if info != (prv, 7, count):
            raise AssertionError(f"rank {me}: recv info {info}, want {(prv, 7, count)}")
        same(f"isend/recv count {count}", "f32", out[:count], want)


def check_split(me, n):
    sub = hoop.split(me % 2, key=-me)  # evens and odds, each ranked in reverse
    members = [r for r in range(n) if r % 2 == me % 2]
    if sub.size != len(members) or sub.rank != sorted(members, reverse=True).index(me):
        raise AssertionError(f"rank {me}: split gave rank {sub.rank} of {sub.size}")
    got = hoop.allreduce(np.array([me], np.int64), comm=sub)
    same("allreduce on a split", "i64", got, np.array([sum(members)], np.int64))
    none = hoop.split(-1 if me == 0 else 0)
    if (none is None) != (me == 0):
        raise AssertionError(f"rank {me}: split with color -1 gave {none}")
    if none is not None:
        none.free()
    sub.free()
    try:
        sub.barrier()
    except hoop.InvalidArgumentError:
        pass
    else:
        raise AssertionError("a freed communicator took a call")


def check_refusals(me, n):
    global checks
    cases = [
        (lambda: hoop.allreduce(np.zeros(3, np.complex64)), "no hoop dtype"),
        (lambda: hoop.allreduce(np.zeros(3, np.float32), out=np.zeros(2, np.float32)), "it needs 3"),
        (lambda: hoop.allreduce(np.zeros(3, np.float32), op="median"), "unknown reduction"),
        (lambda: hoop.allreduce(np.zeros(3, np.float32), op=hoop.BXOR), "bxor"),
        (lambda: hoop.allreduce(np.zeros(3, np.float32), out=np.zeros(3, np.float32)[::-1].copy()[::-1]), "contiguous"),
        (lambda: hoop.broadcast(np.zeros(2), root=n), "root"),
        (lambda: hoop.send(np.zeros(1), peer=n), "peer"),
        (lambda: hoop.allreduce(object()), "has no buffer"),
    ]
    for call, words in cases:
        try:
            call()
        except hoop.InvalidArgumentError as e:
            if words not in str(e) or f"rank {me}" not in str(e) and "hoop:" not in str(e):
                raise AssertionError(f"rank {me}: refusal says '{e}', wanted '{words}' and the rank")
            checks += 1
        else:
            raise AssertionError(f"rank {me}: a call that should be refused ({words}) was taken")


def check_threads(me, n):
    """A blocking call lets other Python threads run (the GIL is released while hoop waits), and
    a nonblocking request dropped in flight is waited for, not freed under the operation."""
    global checks
    import threading
    import time
    ticks = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)

    t = threading.Thread(target=spin)
    t.start()
    if me == 0:
        time.sleep(0.3)  # the others wait in the barrier meanwhile
    before = ticks[0]
    hoop.barrier()
    waited = ticks[0] - before
    stop.set()
    t.join()
    if me != 0 and n > 1 and waited < 10:
        raise AssertionError(f"rank {me}: another thread ran {waited} times during a 0.3 s barrier")
    checks += 1
    big = np.ones(1 << 20, np.float32)
    hoop.iallreduce(big)  # dropped at once
    same("allreduce after a dropped request", "f32", hoop.allreduce(np.ones(5, np.float32)),
         np.full(5, n, np.float32))


def main():
    world = hoop.init()
    me, n = world.rank, world.size
    if hoop.rank() != me or hoop.size() != n or hoop.local_size() < 1:
        raise AssertionError("rank/size disagree")
    check_reductions(me, n)
    check_movement(me, n)
    check_point_to_point(me, n)
    check_split(me, n)
    check_refusals(me, n)
    check_threads(me, n)
    hoop.barrier()
    hoop.shutdown()
    print(f"rank {me}: ok {checks} checks", flush=True)


if __name__ == "__main__":
    sys.exit(main())
