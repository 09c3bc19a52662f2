"""Run by test_launch.py under `hooprun -np 2 python3 launch_print.py`: rank, size, an allreduce
and whether hooprun asked for unbuffered output."""
import os

import numpy as np

import hoop

hoop.init()
total = hoop.allreduce(np.array([hoop.rank() + 1.0])).tolist()
print(f"rank {hoop.rank()} of {hoop.size()} (local {hoop.local_rank()} of {hoop.local_size()}): {total} "
      f"unbuffered={os.environ.get('PYTHONUNBUFFERED')}")
