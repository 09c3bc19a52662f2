"""One rank of the revoke check (test_collectives.py): 0.3 s into a run of large allreduces on
every rank, rank 0 revokes the job's communicator from a second thread. Every rank, rank 0's own
main thread included, must then get hoop.RevokedError naming rank 0 and its reason, printed as
"rank R: caught CLASS after S s: MESSAGE", and a later call must raise it again."""
import threading
import time

import numpy as np

import hoop

hoop.init()
me = hoop.rank()
x = np.ones(4 << 20, np.float32)
if me == 0:
    threading.Timer(0.3, lambda: hoop.world().revoke("rank 0 was told to stop")).start()
start = time.monotonic()
try:
    for _ in range(100000):
        hoop.allreduce(x)
    print(f"rank {me}: no error seen", flush=True)
except hoop.HoopError as e:
    print(f"rank {me}: caught {type(e).__name__} after {time.monotonic() - start:.1f} s: {e}", flush=True)
try:
    hoop.barrier()
    print(f"rank {me}: a later barrier passed", flush=True)
except hoop.RevokedError:
    print(f"rank {me}: a later call was revoked too", flush=True)
