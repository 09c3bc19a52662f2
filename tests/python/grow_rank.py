"""One rank of the replace check (test_collectives.py), under hooprun --enable-recovery: rank 1
kills itself (SIGKILL) while the others are in an allreduce; the survivors shrink, their new rank
0 starts a newcomer (this script with "join", without HOOP_RANK and HOOP_SIZE), and they grow the
shrunk communicator by one. The newcomer calls hoop.join(), gets the step count by a broadcast,
and every rank checks an allreduce. Prints "rank R of N: step S, sum T" (the newcomer: "newcomer
rank R of N: ...")."""
import os
import signal
import subprocess
import sys
import time

import numpy as np

import hoop

if sys.argv[1:] == ["join"]:
    comm = hoop.join()
    step = hoop.broadcast(np.zeros(1, np.int64), root=0)
    x = hoop.allreduce(np.full(7, comm.rank + 1, np.float64))
    print(f"newcomer rank {comm.rank} of {comm.size}: step {int(step[0])}, sum {int(x[0])}", flush=True)
    hoop.shutdown()
    sys.exit(0)

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
except hoop.HoopError:
    pass
small = world.shrink()
newcomer = None
if small.rank == 0:
    env = {k: v for k, v in os.environ.items() if k not in ("HOOP_RANK", "HOOP_SIZE", "HOOP_LOCAL_RANK",
                                                             "HOOP_LOCAL_SIZE", "HOOP_CROSS_RANK", "HOOP_CROSS_SIZE")}
    newcomer = subprocess.Popen([sys.executable, __file__, "join"], env=env)
grown = small.grow(1)
step = hoop.broadcast(np.full(1, 17, np.int64), root=0, comm=grown)
x = hoop.allreduce(np.full(7, grown.rank + 1, np.float64), comm=grown)
print(f"rank {grown.rank} of {grown.size}: step {int(step[0])}, sum {int(x[0])}", flush=True)
grown.free()
small.free()
if newcomer is not None:
    assert newcomer.wait(timeout=60) == 0
