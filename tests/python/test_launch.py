"""Python jobs and their launchers: hooprun runs `python3 SCRIPT` by name and sets torchrun's
variables (a script written for torchrun runs under hooprun unchanged), hoop.init() joins a
job from torchrun's variables alone (no hooprun: its store one port above MASTER_PORT), and
torchrun itself (PyTorch 2.x's; Debian's 1.13 torchrun does not start) runs scripts using the
backend "hoop" and the Horovod-style API, whose ranks meet through torchrun's own store."""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

from support import HERE, free_ports, hooprun, python_env

ALLREDUCE = """
import numpy as np, hoop
hoop.init()
print(f"rank {hoop.rank()} of {hoop.size()} (local {hoop.local_rank()} of {hoop.local_size()}): "
      f"{hoop.allreduce(np.array([hoop.rank() + 1.0])).tolist()}")
"""

TORCHRUN_SCRIPT = """
import os, torch, torch.distributed as dist
dist.init_process_group("gloo")  # env://: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print(f"rank {dist.get_rank()} of {dist.get_world_size()} local {os.environ['LOCAL_RANK']}: {t.item()}")
dist.destroy_process_group()
"""


# Under torchrun: the backend "hoop" (as "cpu:hoop" too), DDP, and the Horovod-style API in one job.
UNDER_TORCHRUN = """
import os, sys, torch, torch.distributed as dist
import hoop.torch as hvd
dist.init_process_group(sys.argv[1])
me, n = dist.get_rank(), dist.get_world_size()
t = torch.tensor([float(me + 1)])
dist.all_reduce(t)
torch.manual_seed(0)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(6, 3))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.randn(4, 6, generator=torch.Generator().manual_seed(me * 10 + step))).sum().backward()
    opt.step()
w = model.module.weight.detach().clone()
ref = w.clone()
dist.broadcast(ref, 0)
hvd.init()
h = hvd.allreduce(torch.tensor([float(me)]), op=hvd.Sum)
print(f"rank {me} of {n} local {os.environ['LOCAL_RANK']} backend {dist.get_backend()}: {t.item()} "
      f"ddp same {torch.equal(w, ref)} hvd rank {hvd.rank()} size {hvd.size()} sum {h.item()}", flush=True)
dist.destroy_process_group()
"""


# Under torchrun, with MASTER_PORT + 1 taken: hoop.init() (NumPy, and again after shutdown, with a
# dup and a split) and the Horovod API meet through torchrun's store, not a port of hoop's.
NUMPY_UNDER_TORCHRUN = """
import os, numpy as np, hoop
w = hoop.init()
d, s = w.dup(), hoop.split(hoop.rank() % 2)
a = hoop.allreduce(np.array([hoop.rank() + 1.0]))[0]
b = hoop.allreduce(np.array([1.0]), comm=d)[0]
d.free()
hoop.shutdown()
hoop.init()
c = hoop.allreduce(np.array([2.0]))[0]
hoop.shutdown()
import hoop.torch as hvd, torch
hvd.init()
h = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum).item()
print(f"rank {hvd.rank()} of {hvd.size()} port {os.environ['MASTER_PORT']}: {a} {b} {c} split {s.size} hvd {h}",
      flush=True)
hvd.shutdown()
"""


def torch_major():
    try:
        import torch
    except ImportError:
        return None
    return int(torch.__version__.split(".")[0])


class Launch(unittest.TestCase):
    def test_hooprun_runs_python_by_name(self):
        # `python3` from PATH, as a user types it: Debian's, first on PATH here.
        script = os.path.join(HERE, "launch_print.py")
        env = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
        r = hooprun(2, ["python3", script], env=env, timeout=60)
        self.assertEqual(r.returncode, 0, r.output)
        for rank in (0, 1):
            self.assertIn(f"[{rank}] rank {rank} of 2 (local {rank} of 2): [3.0] unbuffered=1", r.output)

    def run_torchrun_style(self, port):
        procs = []
        for rank in (0, 1):
            env = python_env({"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": "2",
                              "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "HOOP_TIMEOUT": "60"})
            procs.append(subprocess.Popen([sys.executable, "-c", ALLREDUCE], env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=90)[0])
            except subprocess.TimeoutExpired:
                for q in procs:
                    q.kill()
                self.fail("a torchrun-style job did not finish in 90 s")
        return procs, outs

    def test_torchrun_environment_without_hooprun(self):
        # Another process on this machine may still take the port between the check and the bind
        # (tests run side by side); that, and only that, is tried again on a fresh pair.
        for attempt in range(3):
            procs, outs = self.run_torchrun_style(free_ports(2))
            if not any(p.returncode != 0 and "Address already in use" in out for p, out in zip(procs, outs)):
                break
        for rank, (p, out) in enumerate(zip(procs, outs)):
            self.assertEqual(p.returncode, 0, out)
            self.assertIn(f"rank {rank} of 2 (local {rank} of 2): [3.0]", out)

    def test_a_torchrun_script_runs_under_hooprun(self):
        try:
            import torch.distributed  # noqa: F401
        except ImportError:
            self.skipTest("PyTorch is missing (scripts/setup.sh --torch installs Debian's)")
        r = hooprun(2, [sys.executable, "-c", TORCHRUN_SCRIPT], timeout=120)
        self.assertEqual(r.returncode, 0, r.output)
        for rank in (0, 1):
            self.assertIn(f"[{rank}] rank {rank} of 2 local {rank}: 3.0", r.output)

    def torchrun(self, launch, script, args=()):
        """torchrun (`launch`: its flags) starting 2 ranks of `script` as a module; its output."""
        cmd = [sys.executable, "-m", "torch.distributed.run", *launch, "--nproc_per_node", "2",
               "-m", "hoop_torchrun_probe", *args]
        with tempfile.TemporaryDirectory(prefix="hoop-torchrun-") as tmp:
            with open(os.path.join(tmp, "hoop_torchrun_probe.py"), "w") as f:
                f.write(script)
            env = python_env({"OMP_NUM_THREADS": "1", "HOOP_TIMEOUT": "60"})
            env["PYTHONPATH"] = tmp + os.pathsep + env["PYTHONPATH"]
            env["TMPDIR"] = tmp  # torchrun's log folder (torchelastic_*), which it leaves behind
            p = subprocess.Popen(cmd, env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                 start_new_session=True)
            try:
                out = p.communicate(timeout=180)[0]
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out = p.communicate()[0]
                self.fail(f"torchrun did not finish in 180 s:\n{out}")
        self.assertEqual(p.returncode, 0, out)
        return out

    @unittest.skipIf((torch_major() or 0) < 2, "torchrun needs PyTorch 2.x here: Debian's 1.13 torchrun fails in its "
                     "argument handling before any worker starts (README, Python)")
    def test_torchrun_itself_runs_hoop_jobs(self):
        for backend in ("hoop", "cpu:hoop"):
            with self.subTest(backend=backend):
                out = self.torchrun(["--standalone"], UNDER_TORCHRUN, [backend])
                for rank in (0, 1):
                    self.assertIn(f"rank {rank} of 2 local {rank} backend {backend}: 3.0 ddp same True "
                                  f"hvd rank {rank} size 2 sum 1.0", out)

    @unittest.skipIf((torch_major() or 0) < 2, "torchrun needs PyTorch 2.x here (above)")
    def test_under_torchrun_hoop_init_meets_through_its_store(self):
        port = free_ports(2)
        with socket.socket() as taken:  # hoop's own store's port under torchrun's variables alone
            taken.bind(("127.0.0.1", port + 1))
            taken.listen()
            out = self.torchrun(["--nnodes", "1", "--master_addr", "127.0.0.1", "--master_port", str(port)],
                                NUMPY_UNDER_TORCHRUN)
        for rank in (0, 1):
            self.assertIn(f"rank {rank} of 2 port {port}: 3.0 2.0 4.0 split 1 hvd 1.0", out)


if __name__ == "__main__":
    unittest.main()
