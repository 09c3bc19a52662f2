"""One rank takes a Work's future (as DDP's hooks do) and drops it while its peer is still a
second away from the call, then destroys the group ("destroy") or simply ends ("exit") before the
call completes.

hoop completes such a Work on its group's thread, and completing it drops the tensors, which takes
the GIL where Python holds them too. The process must still end cleanly: destroying the group
waits for that thread without holding the GIL (else each waits for the other), and at exit the
thread is done before the interpreter finalizes (a thread that asks for the GIL then is ended
inside a noexcept destructor: "terminate called without an active exception"). The late rank
checks the sum."""
import sys
import time

import torch
import torch.distributed as dist

import hoop.torch  # noqa: F401

mode = sys.argv[1]
dist.init_process_group("hoop")
me, n = dist.get_rank(), dist.get_world_size()
t = torch.full((1000,), float(me + 1))
if me == n - 1:
    time.sleep(1.0)
work = dist.all_reduce(t, async_op=True)
fut = work.get_future()
if me == n - 1:
    fut.wait()
    assert torch.equal(t, torch.full((1000,), float(n * (n + 1) // 2))), t[:4]
    print(f"rank {me}: the sum arrived", flush=True)
    dist.destroy_process_group()
elif mode == "destroy":
    del work, fut  # t alone stays: the thread that completes the call holds its last other reference
    dist.destroy_process_group()  # the call is still waiting for the late rank
    print(f"rank {me}: destroyed the group with the call pending", flush=True)
else:
    del work, fut
    print(f"rank {me}: ending with the call pending", flush=True)
