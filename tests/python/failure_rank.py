"""One rank of the failure check (test_collectives.py): the last rank kills itself in the middle
of a run of large allreduces; every other rank must get a hoop.HoopError naming the lost rank,
printed as "rank R: caught CLASS: MESSAGE"."""
import os
import signal
import threading

import numpy as np

import hoop

hoop.init()
me, n = hoop.rank(), hoop.size()
victim = n - 1
x = np.ones(4 << 20, np.float32)
if me == victim:
    threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()
try:
    for _ in range(10000):
        hoop.allreduce(x)
    print(f"rank {me}: no error seen", flush=True)
except hoop.HoopError as e:
    print(f"rank {me}: caught {type(e).__name__}: {e}", flush=True)
