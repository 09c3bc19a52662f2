"""One rank of the elastic check (test_collectives.py) under elastic hooprun (-np 3 --min-np 2):
job rank 1 kills itself (SIGKILL) after step 5; hooprun starts a newcomer with HOOP_JOIN=1, whose
hoop.init() joins the running job; the survivors shrink, and take it in at their next
Comm.grow after Comm.newcomers() counts it. Every step is an allreduce of ones, checked against
the size and added to a total; a failed step is run again after the shrink, so every step counts
once. The loop ends after 40 steps with 3 ranks. Prints "job rank J: step S, size N, total T,
newcomer B" (B: 1 for the newcomer)."""
import os
import signal
import time

import numpy as np

import hoop

comm = hoop.init()  # the newcomer: admitted here by the others' grow
job_rank = int(os.environ["HOOP_RANK"])
newcomer = os.environ.get("HOOP_JOIN") == "1"
state = np.zeros(2, np.int64)  # the step, the total
if newcomer:
    state = hoop.broadcast(state, root=0, comm=comm)
deadline = time.monotonic() + 60
while state[0] < 40 or comm.size != 3:
    assert time.monotonic() < deadline, f"step {state[0]} with {comm.size} ranks after 60 s"
    try:
        n = comm.newcomers()
        if n:
            comm = comm.grow(n)
            state = hoop.broadcast(state, root=0, comm=comm)
            continue
        s = hoop.allreduce(np.ones(1, np.int64), comm=comm)
    except (hoop.UnavailableError, hoop.AbortedError):
        comm = comm.shrink()  # a lost rank: on without it, and the step again
        continue
    assert int(s[0]) == comm.size, (int(s[0]), comm.size)
    state[0] += 1
    state[1] += int(s[0])
    if job_rank == 1 and state[0] == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.02)
totals = hoop.allreduce(np.array([state[1]], np.int64), comm=comm)
assert int(totals[0]) == comm.size * int(state[1]), "the ranks' totals differ"
print(f"job rank {job_rank}: step {state[0]}, size {comm.size}, total {state[1]}, newcomer {int(newcomer)}",
      flush=True)
