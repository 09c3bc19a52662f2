"""hoop's deterministic mode from Python, for test_collectives.py: comm.deterministic set on every
rank; order-sensitive float32 and float64 data (mixed magnitudes); every allreduce (sum, avg) must
have the bits of NumPy's left fold over the ranks in rank order, at sizes from 1 to 100003, under
whatever HOOP_ALGO and HOOP_CHUNK_BYTES the job has. Prints "rank R: deterministic ok N checks".
"""
import numpy as np

import hoop


def inputs(rank, dtype, count, seed):
    g = np.random.default_rng(seed * 131 + rank)
    return (g.choice([-1.0, 1.0], count) * (1 + g.random(count)) * 2.0 ** g.integers(-24, 25, count)).astype(dtype)


def main():
    comm = hoop.init()
    assert comm.deterministic in (False, True)
    comm.deterministic = True
    assert comm.deterministic
    me, n = comm.rank, comm.size
    checks = 0
    for dtype in (np.float32, np.float64):
        for count in (1, 7, 1001, 100003):
            xs = [inputs(r, dtype, count, count) for r in range(n)]
            want = xs[0].copy()
            for k in range(1, n):  # the canonical fold, in the dtype, rank after rank
                want = (want + xs[k]).astype(dtype)
            for op, expect in (("sum", want), ("avg", (want / dtype(n)).astype(dtype))):
                got = hoop.allreduce(xs[me], op)
                assert got.tobytes() == expect.tobytes(), f"rank {me}: {dtype.__name__} {op} {count}: bits differ"
                checks += 1
    comm.deterministic = False
    assert not comm.deterministic
    print(f"rank {me}: deterministic ok {checks} checks", flush=True)
    hoop.shutdown()


if __name__ == "__main__":
    main()
