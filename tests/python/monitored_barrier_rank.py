"""One rank of the monitored_barrier check (test_torch_backend.py).

Usage: monitored_barrier_rank.py pass            (barriers with and without wait_all_ranks, then an
                                                  allreduce: every rank prints "rank R: passed")
       monitored_barrier_rank.py late RANKS ALL  (RANKS, comma-separated, arrive 3 s late at a barrier
                                                  of 1 s; ALL: wait_all_ranks 0 or 1; each rank prints
                                                  what its barrier, then its next allreduce, raised)
"""
import datetime
import sys
import time

import torch
import torch.distributed as dist

import hoop.torch  # noqa: F401  (registers "hoop")

dist.init_process_group("hoop")
me, n = dist.get_rank(), dist.get_world_size()
if sys.argv[1] == "pass":
    for i in range(4):
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=30), wait_all_ranks=bool(i % 2))
    t = torch.ones(5)
    dist.all_reduce(t)
    assert (t == n).all(), t
    print(f"rank {me}: passed", flush=True)
else:
    late = [int(r) for r in sys.argv[2].split(",")]
    if me in late:
        time.sleep(3)
    try:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=1), wait_all_ranks=sys.argv[3] == "1")
        print(f"rank {me}: barrier passed", flush=True)
    except RuntimeError as e:
        print(f"rank {me}: barrier raised: {str(e).splitlines()[0]}", flush=True)
    try:
        dist.all_reduce(torch.ones(3))
        print(f"rank {me}: allreduce passed", flush=True)
    except RuntimeError as e:
        print(f"rank {me}: allreduce raised: {e}", flush=True)
dist.destroy_process_group()
