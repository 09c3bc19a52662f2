"""One rank of the shrink check (test_collectives.py), under hooprun --enable-recovery: rank 1
kills itself (SIGKILL) while the others are in an allreduce. The survivors' call raises, each
calls comm.shrink(), and an allreduce on the shrunk communicator must give the survivors' sum.
Prints "rank R: shrunk to rank R2 of N2, failed ranks [..], sum S"."""
import os
import signal
import time

import numpy as np

import hoop

hoop.init()
world = hoop.world()
me = hoop.rank()
hoop.allreduce(np.ones(4, np.float32))
if me == 1:
    time.sleep(0.2)
    os.kill(os.getpid(), signal.SIGKILL)
try:
    for _ in range(1000):
        hoop.allreduce(np.ones(1 << 16, np.float32))
    print(f"rank {me}: no error seen", flush=True)
except hoop.HoopError as e:
    print(f"rank {me}: caught {type(e).__name__}", flush=True)
small = world.shrink()
x = hoop.allreduce(np.full(1001, me + 1, np.float64), comm=small)
assert np.all(x == x[0]), x
print(f"rank {me}: shrunk to rank {small.rank} of {small.size}, failed ranks {world.failed_ranks()}, "
      f"sum {int(x[0])}", flush=True)
small.free()
