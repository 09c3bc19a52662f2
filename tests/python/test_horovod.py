"""hoop.torch's Horovod-style API: every call (horovod_rank.py) on 1 to 4 ranks over tcp and shm;
DistributedOptimizer (ddp_rank.py "horovod") ending with the parameters of one process on the
global batch, with backward_passes_per_step 1 and 2, and with fp16 wire compression close to them
but not equal; a Horovod script run after `import horovod.torch as hvd` became
`import hoop.torch as hvd`; a Horovod elastic script (elastic_horovod_rank.py) under elastic
hooprun through a lost rank and its replacement; process sets (horovod_sets_rank.py), and one made
from an mpi4py communicator under OpenMPI's mpirun; Adasum (horovod_adasum_rank.py) on 2, 3 and 4
ranks; join with uneven data (horovod_join_rank.py) on 1 to 4 ranks; hoop.run (run_api_script.py). Skipped, saying so, without
PyTorch."""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

from support import HERE, drawn, hooprun, in_group, python_env

try:
    import torch
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")

HOROVOD_SCRIPT = '''
import torch
import hoop.torch as hvd   # was: import horovod.torch as hvd

hvd.init()
torch.manual_seed(hvd.rank())   # different on every rank: broadcast_parameters must fix it
model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.01 * hvd.size())
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(),
                                     compression=hvd.Compression.none, op=hvd.Average)
hvd.broadcast_parameters(model.state_dict(), root_rank=0)
hvd.broadcast_optimizer_state(optimizer, root_rank=0)
g = torch.Generator().manual_seed(100 + hvd.rank())
x = torch.randn(256, 10, generator=g)
y = x.sum(1, keepdim=True)
first = None
for epoch in range(60):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    first = first if first is not None else loss.item()
avg = hvd.allreduce(torch.tensor([loss.item()]), name="loss").item()
weights = hvd.allgather(torch.cat([p.detach().flatten() for p in model.parameters()]).unsqueeze(0))
print(f"rank {hvd.rank()}: loss {first:.4f} -> {avg:.4f}, same weights: {bool((weights == weights[0]).all())}")
hvd.shutdown()
'''

# Each rank gives the set of its own mpi4py communicator (evens, odds); init registers both, by
# the order of their lowest ranks, on every rank.
MPI_SETS_SCRIPT = '''
from mpi4py import MPI
import torch, hoop.torch as hvd
world = MPI.COMM_WORLD
mine = hvd.ProcessSet(world.Split(color=world.rank % 2, key=-world.rank))
hvd.init(process_sets=[mine])
total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum, process_set=mine).item()
print(f"rank {hvd.rank()}: set {mine.process_set_id} {mine.ranks} rank {mine.rank()} sum {total}", flush=True)
hvd.shutdown()
'''


class Horovod(unittest.TestCase):
    def test_newer_calls_build_queries_and_sync_batch_norm(self):
        script = os.path.join(HERE, "horovod_extras_rank.py")
        for transport, ranks in (("tcp", (1, 3)), ("shm", (2,))):
            for n in ranks:
                r = hooprun(n, [sys.executable, script], env={"HOOP_TRANSPORT": transport}, timeout=120)
                with self.subTest(transport=transport, ranks=n):
                    self.assertEqual(r.returncode, 0, r.output)
                    for k in range(n):
                        self.assertIn(f"extras ok rank {k} of {n}", r.output)

    def run_cells(self, script, cells, word):
        """script on n ranks over each (transport, n) of cells, given n; every rank says "WORD ok"."""
        for transport, n in cells:
            r = hooprun(n, [sys.executable, os.path.join(HERE, script), str(n)], env={"HOOP_TRANSPORT": transport},
                        timeout=120)
            with self.subTest(transport=transport, ranks=n):
                self.assertEqual(r.returncode, 0, r.output)
                for k in range(n):
                    self.assertIn(f"{word} ok rank {k} of {n}", r.output)

    def test_process_sets_run_side_by_side_and_refuse_the_ranks_outside(self):
        self.run_cells("horovod_sets_rank.py", drawn((("tcp", 3), ("shm", 4)), "process sets"), "sets")

    def test_adasum_matches_its_tree_on_any_number_of_ranks(self):
        self.run_cells("horovod_adasum_rank.py",
                       drawn((("tcp", 2), ("shm", 3), ("tcp", 4)), "Adasum", keep=(("shm", 3),)), "adasum")

    def test_join_stands_in_for_ranks_whose_data_ran_out(self):
        self.run_cells("horovod_join_rank.py",
                       drawn((("tcp", 1), ("tcp", 2), ("shm", 3), ("tcp", 4)), "join", keep=(("shm", 3),)), "join")

    def test_a_process_set_from_an_mpi4py_communicator(self):
        if not shutil.which("mpirun"):
            self.skipTest("mpirun is missing (scripts/setup.sh installs openmpi-bin)")
        if subprocess.run([sys.executable, "-c", "import mpi4py"], capture_output=True).returncode:
            self.skipTest(f"mpi4py is not importable by {sys.executable} (scripts/setup.sh installs Debian's "
                          "python3-mpi4py, for Debian's Python)")
        with tempfile.TemporaryDirectory(prefix="hoop-mpi-sets-") as tmp:
            env = python_env({"HOOP_STORE": f"file://{tmp}"})
            p = subprocess.Popen(["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "3", "-x", "PYTHONPATH",
                                  "-x", "HOOP_STORE", sys.executable, "-c", MPI_SETS_SCRIPT], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
            try:
                out, _ = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                out = p.communicate()[0] + "\n(test: killed after 120 s)"
        self.assertEqual(p.returncode, 0, out)
        for r, (ps_id, ranks) in enumerate(((1, [0, 2]), (2, [1]), (1, [0, 2]))):
            self.assertIn(f"rank {r}: set {ps_id} {ranks} rank {ranks.index(r)} sum {float(sum(ranks))}", out)

    def test_a_horovod_elastic_script_goes_on_through_a_lost_rank_and_takes_its_replacement(self):
        r = hooprun(3, [sys.executable, os.path.join(HERE, "elastic_horovod_rank.py")],
                    env={"HOOP_TIMEOUT": "60"}, timeout=180, args=("--min-np", "2", "--max-np", "3"))
        self.assertEqual(r.returncode, 0, r.output)
        self.assertIn("hooprun: rank 1 (pid ", r.output)
        self.assertIn("hooprun: started rank 3 (pid ", r.output)
        found = re.findall(r"rank (\d) of 3 \(job rank (\d), newcomer (\d)\): (epochs 8, steps \d+, lr 0\.15), "
                           r"loss \S+ -> (\S+), weights (\S+)", r.output)
        self.assertEqual(sorted((f[1], f[2]) for f in found), [("0", "0"), ("2", "0"), ("3", "1")], r.output)
        # One state everywhere: the steps, the learning rate the reset callback set for 3 ranks,
        # the final loss and the weights (the newcomer's came from rank 0 at its admission).
        self.assertEqual(len({f[3:] for f in found}), 1, r.output)
        self.assertLess(float(found[0][4]), 1e-3, r.output)

    def test_every_call_matches_the_reference(self):
        script = os.path.join(HERE, "horovod_rank.py")
        cells = [("tcp", 1), ("tcp", 2), ("tcp", 3), ("shm", 2), ("shm", 4)]
        for transport, n in drawn(cells, "Horovod-style, every call"):
            with self.subTest(transport=transport, ranks=n):
                r = hooprun(n, [sys.executable, script], env={"HOOP_TRANSPORT": transport}, timeout=240)
                self.assertEqual(r.returncode, 0, r.output)
                for rank in range(n):
                    self.assertRegex(r.output, rf"\[{rank}\] rank {rank}: ok \d+ checks")

    def test_distributed_optimizer_matches_one_process(self):
        script = os.path.join(HERE, "ddp_rank.py")
        steps = 6
        with tempfile.TemporaryDirectory(prefix="hoop-hvd-") as tmp:
            def train(backend, n, passes, compression="none"):
                out = os.path.join(tmp, f"{backend}-{n}-{passes}-{compression}.pt")
                r = hooprun(n, [sys.executable, script, backend, str(steps), out, str(passes), compression],
                            timeout=240)
                self.assertEqual(r.returncode, 0, r.output)
                return torch.load(out)

            ones = {}
            for passes, n in drawn([(1, 2), (1, 3), (2, 2), (2, 3)], "DistributedOptimizer"):
                if passes not in ones:
                    ones[passes] = train("single", 1, passes)
                got = train("horovod", n, passes)
                for name, want in ones[passes].items():
                    self.assertTrue(torch.allclose(got[name], want, rtol=1e-5, atol=1e-6),
                                    f"{n} ranks, {passes} passes: {name} differs from one process by "
                                    f"{(got[name] - want).abs().max().item()}")
            # fp16 on the wire: near the exact run, and not equal to it (it did compress).
            one = ones.get(1) or train("single", 1, 1)
            got = train("horovod", 2, 1, "fp16")
            diff = max((got[k] - v).abs().max().item() for k, v in one.items())
            self.assertLess(diff, 1e-2)
            self.assertGreater(diff, 0.0)

    def test_hoop_run_returns_every_ranks_value_as_horovod_run(self):
        r = in_group([sys.executable, os.path.join(HERE, "run_api_script.py")], timeout=120)
        self.assertEqual(r.returncode, 0, r.output)
        self.assertIn("run-api ok", r.output)
        for rank in range(3):
            self.assertIn(f"[{rank}] hello from {rank} with Namespace()", r.output)  # the ranks' own output passes through

    def test_a_horovod_script_runs_unchanged_but_its_import(self):
        r = hooprun(2, [sys.executable, "-c", HOROVOD_SCRIPT], timeout=120)
        self.assertEqual(r.returncode, 0, r.output)
        for rank in (0, 1):
            line = [l for l in r.output.splitlines() if l.startswith(f"[{rank}] rank {rank}: loss")]
            self.assertTrue(line, r.output)
            first, last = (float(v) for v in line[0].split("loss ")[1].split(",")[0].split(" -> "))
            self.assertLess(last, first / 4, line[0])
            self.assertIn("same weights: True", line[0])


if __name__ == "__main__":
    unittest.main()
