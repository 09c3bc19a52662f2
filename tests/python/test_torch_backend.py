"""The torch.distributed backend "hoop" (hoop.torch): every call through PyTorch's functions
(torch_calls_rank.py) on 1 to 4 ranks over tcp and shm, joined through each kind of PyTorch
store (env://, file://, tcp://); DistributedDataParallel ending with the parameters of one
process on the global batch and of backend "gloo" (ddp_rank.py), with DDP's communication hooks,
join(), static_graph, no_sync(), ZeroRedundancyOptimizer and distributed checkpoints equal to
gloo's (ddp_features_rank.py); DTensor's redistributions,
tensor parallelism and pipelining against the model run whole, and FSDP2 training and state dicts
equal to gloo's on 2 and 4 ranks (fsdp2_rank.py, PyTorch 2.6 and later); a lost rank, and shrink_group going on without it (PyTorch 2.10 and later); timeout= bounding a
group's calls; DDP and the
Horovod-style optimizer in hoop's deterministic mode, bit-identical over transports, algorithms,
buckets and fusion; a group destroyed, or a script ended, with a future's call still pending
(late_future_rank.py); monitored_barrier naming the ranks that did not arrive, where PyTorch
runs it on backends other than gloo (monitored_barrier_rank.py). Skipped, saying so, without
PyTorch or without the backend (hoop built without libtorch)."""
import inspect
import json
import os
import sys
import tempfile
import unittest

from support import BUILD, HERE, PACKAGE, alternating, drawn, free_ports, hooprun

try:
    import torch
    import torch.distributed as dist
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh --torch installs Debian's)")
TORCH_VERSION = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2])
if not any(f.startswith("_c10d") for f in os.listdir(os.path.join(PACKAGE, "hoop"))):
    raise unittest.SkipTest("hoop was built without the torch.distributed backend (needs libtorch-dev)")


def rank_lines_ok(test, r, n, what=""):
    test.assertEqual(r.returncode, 0, f"{what}{': ' if what else ''}{r.output}")
    for rank in range(n):
        test.assertRegex(r.output, rf"\[{rank}\] rank {rank}: ok \d+ checks")


class Backend(unittest.TestCase):
    def test_every_call_matches_the_reference(self):
        script = os.path.join(HERE, "torch_calls_rank.py")
        cells = [("tcp", 1), ("tcp", 2), ("tcp", 3), ("shm", 2), ("shm", 4)]
        for transport, n in drawn(cells, "torch backend, every call"):
            with self.subTest(transport=transport, ranks=n):
                r = hooprun(n, [sys.executable, script], env={"HOOP_TRANSPORT": transport}, timeout=240)
                rank_lines_ok(self, r, n)

    def test_any_store_pytorch_has(self):
        script = os.path.join(HERE, "torch_calls_rank.py")
        with tempfile.TemporaryDirectory(prefix="hoop-torch-") as tmp:
            for method in (f"file://{tmp}/store", "tcp://127.0.0.1:{port}"):
                with self.subTest(init_method=method.split(":")[0]):
                    if "{port}" in method:
                        method = method.format(port=free_ports())
                    r = hooprun(2, [sys.executable, script, method], timeout=240)
                    rank_lines_ok(self, r, 2)

    @unittest.skipIf(TORCH_VERSION < (2, 0) or not torch.cuda.is_available(),
                     "SKIPPED: CUDA tensors need PyTorch 2 built with CUDA and a GPU (scripts/gpu-check.sh runs this)")
    def test_cuda_tensors_match_the_reference_and_ddp_gloo(self):
        # Every call on CUDA tensors, queued on PyTorch's current stream (2 and 3 ranks sharing
        # the GPUs there are), the Horovod-style API's every call, then DDP on the GPU against one
        # process and gloo on the GPU, and the Horovod-style DistributedOptimizer on the GPU (the
        # fusion runtime on device memory).
        script = os.path.join(HERE, "torch_calls_rank.py")
        for n in (2, 3):
            with self.subTest(ranks=n):
                r = hooprun(n, [sys.executable, script, "env://", "cuda"], timeout=300)
                rank_lines_ok(self, r, n, "cuda")
        # The Horovod-style API's every call on CUDA tensors, and its calls queued after the
        # current stream's work (default or side stream) with no host wait at the call.
        r = hooprun(2, [sys.executable, os.path.join(HERE, "horovod_rank.py"), "cuda"], timeout=300)
        rank_lines_ok(self, r, 2, "horovod on cuda")
        script = os.path.join(HERE, "ddp_rank.py")
        with tempfile.TemporaryDirectory(prefix="hoop-ddp-cuda-") as tmp:
            params = {}
            for backend, n in (("single", 1), ("gloo", 2), ("hoop", 2), ("horovod", 2)):
                out = os.path.join(tmp, f"{backend}-{n}.pt")
                r = hooprun(n, [sys.executable, script, backend, "8", out], env={"HOOPTEST_DDP_DEVICE": "cuda"},
                            timeout=240)
                self.assertEqual(r.returncode, 0, r.output)
                params[backend] = torch.load(out)
            for backend in ("hoop", "gloo", "horovod"):
                for name, want in params["single"].items():
                    got = params[backend][name]
                    self.assertTrue(torch.allclose(got, want, rtol=1e-4, atol=1e-5),
                                    f"{backend} on cuda: {name} differs from one process by "
                                    f"{(got - want).abs().max().item()}")

    @alternating
    def test_ddp_communication_hooks_match_gloo(self):
        # DDP's fp16 compression hook, and PowerSGD, whose callbacks issue further allreduces and
        # wait for them (on the thread that completed the first: hoop's Completer, which hung
        # with one thread), against the same hooks over gloo.
        script = os.path.join(HERE, "ddp_rank.py")
        with tempfile.TemporaryDirectory(prefix="hoop-ddp-hooks-") as tmp:
            for hook in ("fp16", "powersgd"):
                params = {}
                for backend in ("gloo", "hoop"):
                    out = os.path.join(tmp, f"{backend}-{hook}.pt")
                    r = hooprun(2, [sys.executable, script, backend, "8", out], env={"HOOPTEST_DDP_HOOK": hook},
                                timeout=120)
                    self.assertEqual(r.returncode, 0, f"{hook} over {backend}:\n{r.output}")
                    params[backend] = torch.load(out)
                for name, want in params["gloo"].items():
                    got = params["hoop"][name]
                    self.assertTrue(torch.allclose(got, want, rtol=1e-3, atol=1e-4),
                                    f"{hook}: {name} differs from gloo's by {(got - want).abs().max().item()}")

    def test_ddp_features_match_gloo(self):
        # DDP's join() with uneven inputs, static_graph, no_sync(), ZeroRedundancyOptimizer and
        # torch.distributed.checkpoint (ddp_features_rank.py), over hoop and over gloo, 3 ranks.
        script = os.path.join(HERE, "ddp_features_rank.py")
        with tempfile.TemporaryDirectory(prefix="hoop-ddp-features-") as tmp:
            got = {}
            for backend in ("gloo", "hoop"):
                out = os.path.join(tmp, f"{backend}.pt")
                r = hooprun(3, [sys.executable, script, backend, out, os.path.join(tmp, f"ckpt-{backend}")],
                            timeout=180)
                rank_lines_ok(self, r, 3, f"backend {backend}")
                got[backend] = torch.load(out)
            for part, want in got["gloo"].items():
                for name, w in want.items():
                    v = got["hoop"][part][name]
                    self.assertTrue(torch.allclose(v, w, rtol=1e-5, atol=1e-6),
                                    f"{part}: {name} differs from gloo's by {(v - w).abs().max().item()}")

    def test_ddp_matches_one_process_and_gloo(self):
        script = os.path.join(HERE, "ddp_rank.py")
        steps = 8
        with tempfile.TemporaryDirectory(prefix="hoop-ddp-") as tmp:
            params = {}
            for backend, n in (("single", 1), ("gloo", 2), ("hoop", 2), ("hoop", 3)):
                out = os.path.join(tmp, f"{backend}-{n}.pt")
                r = hooprun(n, [sys.executable, script, backend, str(steps), out], timeout=240)
                self.assertEqual(r.returncode, 0, r.output)
                params[(backend, n)] = torch.load(out)
            one = params[("single", 1)]
            for key in (("hoop", 2), ("hoop", 3), ("gloo", 2)):
                for name, want in one.items():
                    got = params[key][name]
                    self.assertTrue(torch.allclose(got, want, rtol=1e-5, atol=1e-6),
                                    f"{key}: {name} differs from one process by {(got - want).abs().max().item()}")
            # The steps moved the parameters well beyond the tolerance (so the comparison means something).
            start = os.path.join(tmp, "start.pt")
            r = hooprun(1, [sys.executable, script, "single", "0", start], timeout=120)
            self.assertEqual(r.returncode, 0, r.output)
            moved = max((v - torch.load(start)[k]).abs().max().item() for k, v in params[("hoop", 2)].items())
            self.assertGreater(moved, 1e-2)
            for name, v in params[("hoop", 2)].items():
                self.assertTrue(torch.allclose(v, params[("gloo", 2)][name], rtol=1e-5, atol=1e-6), name)

    def test_ddp_deterministic_same_bits_over_transports_algorithms_buckets(self):
        # hoop's deterministic mode (issue 53): DDP on 3 ranks (where the order of a sum matters)
        # gives bit-identical parameters whatever the transport, the algorithm named and how
        # DDP packs its buckets; so does the Horovod-style optimizer, fused or not. Without the
        # mode, the ring and the tree give other bits (so the comparison can fail).
        script = os.path.join(HERE, "ddp_rank.py")
        steps = 6
        runs = {
            "tcp ring": ("hoop", {"HOOP_TRANSPORT": "tcp", "HOOP_ALGO": "ring"}),
            "shm tree, 1 KB buckets": ("hoop", {"HOOP_TRANSPORT": "shm", "HOOP_ALGO": "tree",
                                                "HOOPTEST_DDP_BUCKET_MB": "0.001"}),
            "shm doubling, 4K chunks": ("hoop", {"HOOP_TRANSPORT": "shm", "HOOP_ALGO": "doubling",
                                                 "HOOP_CHUNK_BYTES": "4K"}),
            "horovod fused": ("horovod", {"HOOP_TRANSPORT": "tcp"}),
            "horovod unfused": ("horovod", {"HOOP_TRANSPORT": "shm", "HOOP_FUSION_THRESHOLD": "0"}),
        }
        with tempfile.TemporaryDirectory(prefix="hoop-ddp-det-") as tmp:
            params = {}
            for name in drawn(runs, "DDP deterministic", keep=("tcp ring", "horovod fused", "horovod unfused")):
                backend, env = runs[name]
                out = os.path.join(tmp, name.replace(" ", "_").replace(",", "") + ".pt")
                r = hooprun(3, [sys.executable, script, backend, str(steps), out],
                            env={**env, "HOOPTEST_DDP_DETERMINISTIC": "1"}, timeout=240)
                self.assertEqual(r.returncode, 0, r.output)
                params[name] = torch.load(out)
            # DDP divides each gradient by the ranks before its sum, the optimizer averages after:
            # each API's runs are compared among themselves.
            first = params["tcp ring"]
            for name, got in params.items():
                base = "horovod fused" if name.startswith("horovod") else "tcp ring"
                for key, want in params[base].items():
                    self.assertTrue(torch.equal(got[key], want), f"{name}: {key} differs from {base}'s bits")
            plain = {}
            for algo in ("ring", "tree"):
                out = os.path.join(tmp, f"plain-{algo}.pt")
                r = hooprun(3, [sys.executable, script, "hoop", str(steps), out],
                            env={"HOOP_TRANSPORT": "shm", "HOOP_ALGO": algo, "HOOPTEST_DDP_BUCKET_MB": "0.001"},
                            timeout=240)
                self.assertEqual(r.returncode, 0, r.output)
                plain[algo] = torch.load(out)
            self.assertFalse(all(torch.equal(plain["ring"][k], v) and torch.equal(plain["tree"][k], v)
                                 for k, v in first.items()),
                             "without the mode the ring and the tree gave the deterministic bits: the test shows nothing")

    @unittest.skipIf(TORCH_VERSION < (2, 6),
                     f"DTensor and FSDP2's fully_shard need PyTorch 2.6 (this is {torch.__version__})")
    def test_dtensor_and_fsdp2_match_gloo(self):
        script = os.path.join(HERE, "fsdp2_rank.py")
        steps = 6
        with tempfile.TemporaryDirectory(prefix="hoop-fsdp2-") as tmp:
            for n in (2, 4):
                got = {}
                for backend in ("gloo", "hoop"):
                    out = os.path.join(tmp, f"{backend}-{n}.pt")
                    r = hooprun(n, [sys.executable, script, backend, str(steps), out], timeout=300)
                    rank_lines_ok(self, r, n, f"backend {backend} on {n} ranks")
                    got[backend] = torch.load(out)
                for mode, want in got["gloo"].items():
                    have = got["hoop"][mode]
                    self.assertEqual(len(have["losses"]), steps)
                    self.assertGreater(max(have["losses"]) - min(have["losses"]), 1e-3,
                                       f"{mode}: training moved nothing")
                    for a, b in zip(have["losses"], want["losses"]):
                        self.assertAlmostEqual(a, b, places=5,
                                               msg=f"{n} ranks, {mode}: losses {have['losses']} vs gloo {want['losses']}")
                    for part in ("params", "momentum"):
                        self.assertEqual(sorted(have[part]), sorted(want[part]))
                        for name, v in have[part].items():
                            w = want[part][name]
                            self.assertTrue(torch.allclose(v.float(), w.float(), rtol=1e-5, atol=1e-6),
                                            f"{n} ranks, {mode}: {part} {name} differs from gloo's by "
                                            f"{(v.float() - w.float()).abs().max().item()}")

    @alternating
    def test_perf_torch_ddp_runs_both_backends(self):
        import subprocess
        with tempfile.TemporaryDirectory(prefix="hoop-tddp-") as tmp:
            r = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "perf", "torch-ddp"), "--build", BUILD,
                                "--package", PACKAGE,
                                "--repeats", "1", "--steps", "2", "--model", "lenet", "--batch", "16", "--sizes", "4K",
                                "--iters", "5", "--out", tmp], capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(os.path.join(tmp, "torch-ddp.md")) as f:
                table = f.read()
            self.assertIn("| DDP images/s |", table)
            self.assertIn("| all_reduce 4096 B", table)
            self.assertIn("| the same steps, no gradient exchanged (the ceiling) |", table)
            with open(os.path.join(tmp, "runs.jsonl")) as f:
                runs = [json.loads(line) for line in f.read().splitlines()]
            # A run that failed once (gloo's rare abort at exit) is recorded and run again: the
            # benchmark went on (exit 0 above), so its measured runs are the rest.
            failed = [r for r in runs if "failed" in r]
            for r in failed:
                print(f"\ntorch-ddp: a run failed once and ran again: {r['failed']}: {r['why'][-600:]}",
                      file=sys.stderr)
            runs = [r for r in runs if "failed" not in r]
            # train and one size for each backend, and the steps without DDP once
            self.assertEqual(sorted((r["backend"], r["mode"]) for r in runs),
                             [("gloo", "allreduce"), ("gloo", "train"), ("hoop", "allreduce"), ("hoop", "train"),
                              ("none", "train")])

    def test_flight_recorder_dump_on_sigusr1_names_the_process_group(self):
        code = ("import os, signal, time, torch, torch.distributed as dist, hoop.torch\n"
                "dist.init_process_group('hoop')\n"
                "t = torch.ones(1000)\n"
                "dist.all_reduce(t)\n"
                "dist.broadcast(t, 0)\n"
                "os.kill(os.getpid(), signal.SIGUSR1)\n"  # hoop's handler: the process lives, its recorder is written
                "time.sleep(1)\n"
                "dist.barrier()\n"
                "print(f'rank {dist.get_rank()}: signalled', flush=True)\n")
        with tempfile.TemporaryDirectory(prefix="hoop-torch-trace-") as tmp:
            r = hooprun(2, [sys.executable, "-c", code], env={"HOOP_TRACE_DIR": tmp}, timeout=120)
            self.assertEqual(r.returncode, 0, r.output)
            for rank in (0, 1):
                dumps = [json.load(open(os.path.join(tmp, f))) for f in os.listdir(tmp) if f.endswith(f".{rank}.json")]
                ours = [d for d in dumps if any(o["op"] == "allreduce" and o["count"] == 1000 for o in d["ops"])]
                self.assertEqual(len(ours), 1, f"rank {rank}: {[d['comm'] for d in dumps]}\n{r.output}")
                d = ours[0]
                self.assertEqual((d["reason"], d["rank"], d["size"]), ("signal", rank, 2))
                done = [o for o in d["ops"] if o["state"] == "done"]
                self.assertEqual([o["op"] for o in done[-2:]], ["allreduce", "broadcast"], d)
                # Each call named by PyTorch's op, as its own recorder's profiling_name.
                self.assertEqual([o.get("name") for o in done[-2:]], ["hoop:allreduce", "hoop:broadcast"], d)
                if TORCH_VERSION >= (2, 0):  # the process group's name, as PyTorch's own flight recorder gives it
                    self.assertRegex(d["label"], r"^\d+", d)

    def test_a_lost_rank_raises_naming_it(self):
        code = ("import os, signal, threading, torch, torch.distributed as dist, hoop.torch\n"
                "dist.init_process_group('hoop')\n"
                "if dist.get_rank() == 2: threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()\n"
                "t = torch.ones(4 << 20)\n"
                "try:\n"
                "    for _ in range(10000): dist.all_reduce(t)\n"
                "except RuntimeError as e: print(f'rank {dist.get_rank()}: raised: {e}', flush=True)\n")
        r = hooprun(3, [sys.executable, "-c", code], env={"HOOP_TIMEOUT": "30"}, timeout=90)
        self.assertNotEqual(r.returncode, 0, r.output)
        for rank in (0, 1):
            line = [l for l in r.output.splitlines() if l.startswith(f"[{rank}] rank {rank}: raised")]
            self.assertTrue(line, f"rank {rank} raised nothing:\n{r.output}")
            self.assertRegex(line[0], r"hoop: .*(lost peer 2|rank 2)")

    def test_timeout_argument_bounds_the_groups_calls(self):
        # init_process_group's and new_group's timeout= bound the group's calls in HOOP_TIMEOUT's
        # place; none given, PyTorch passes its default (30 min) and HOOP_TIMEOUT holds. Rank 1 is
        # late to the second allreduce by 6 s (past every bound below and its slack): rank 0's
        # fails after the timeout, naming rank 1.
        code = ("import datetime, sys, time, torch, torch.distributed as dist, hoop.torch\n"
                "kind = sys.argv[1]\n"
                "two = datetime.timedelta(seconds=2)\n"
                "dist.init_process_group('hoop', **({'timeout': two} if kind == 'given' else {}))\n"
                "group = dist.new_group([0, 1], timeout=two) if kind == 'group' else None\n"
                "t = torch.ones(4)\n"
                "dist.all_reduce(t, group=group)\n"
                "if dist.get_rank() == 1: time.sleep(6)\n"
                "else:\n"
                "    start = time.monotonic()\n"
                "    try:\n"
                "        dist.all_reduce(t, group=group)\n"
                "        print('rank 0: no error', flush=True)\n"
                "    except RuntimeError as e:\n"
                "        print(f'rank 0: raised after {time.monotonic() - start:.1f} s: {e}', flush=True)\n")
        for kind, hoop_timeout, limit, name in (("given", "60", 2, "timeout"), ("group", "60", 2, "timeout"),
                                                ("default", "3", 3, "HOOP_TIMEOUT")):
            with self.subTest(kind=kind):
                r = hooprun(2, [sys.executable, "-c", code, kind], env={"HOOP_TIMEOUT": hoop_timeout}, timeout=60)
                line = [l for l in r.output.splitlines() if l.startswith("[0] rank 0: ")]
                self.assertTrue(line, r.output)
                self.assertRegex(line[0], rf"raised after [\d.]+ s: .*\({name} {limit} s, .*waiting for rank 1")
                self.assertLess(float(line[0].split("after ")[1].split(" s")[0]), limit + 2.5, line[0])
        code = ("import datetime, torch.distributed as dist, hoop.torch\n"
                "dist.init_process_group('hoop')\n"
                "try: dist.new_group([0], timeout=datetime.timedelta(0))\n"
                "except ValueError as e: print(f'raised: {e}', flush=True)\n")
        r = hooprun(1, [sys.executable, "-c", code], timeout=60)
        self.assertIn("raised: hoop: rank 0: creating a process group: timeout=datetime.timedelta(0) is under a "
                      "millisecond", r.output)

    def test_group_ends_cleanly_with_a_future_pending(self):
        # Rank 0 takes a Work's future, drops it, and destroys the group (or ends) while rank 1 is
        # still a second away from the call: the group's thread then holds the last reference to
        # the call's tensors besides Python's. Destroying the group used to wait for that thread
        # with the GIL held while the thread waited for the GIL (a hang until killed).
        script = os.path.join(HERE, "late_future_rank.py")
        for mode in ("destroy", "exit"):
            with self.subTest(mode=mode):
                r = hooprun(2, [sys.executable, script, mode], env={"HOOP_TIMEOUT": "20"}, timeout=60)
                self.assertEqual(r.returncode, 0, r.output)
                self.assertIn("[1] rank 1: the sum arrived", r.output)
                self.assertRegex(r.output, r"\[0\] rank 0: (destroyed the group|ending) with the call pending")

    @unittest.skipIf("only implemented for GLOO" in inspect.getsource(dist.monitored_barrier),
                     f"this PyTorch ({torch.__version__}) runs monitored_barrier on gloo only")
    def test_monitored_barrier_names_the_ranks_that_did_not_arrive(self):
        script = os.path.join(HERE, "monitored_barrier_rank.py")
        for n in (1, 2, 4):
            with self.subTest(ranks=n):
                r = hooprun(n, [sys.executable, script, "pass"], timeout=60)
                self.assertEqual(r.returncode, 0, r.output)
                for rank in range(n):
                    self.assertIn(f"[{rank}] rank {rank}: passed", r.output)
        # Late ranks: rank 0 names the first (or, wait_all_ranks, every one) in gloo's words, and
        # revokes the group with that message: everyone's next call says it.
        for wait_all, named in (("0", "Rank 1 failed"), ("1", "Ranks 1, 3 failed")):
            with self.subTest(wait_all_ranks=wait_all):
                r = hooprun(4, [sys.executable, script, "late", "1,3", wait_all], env={"HOOP_TIMEOUT": "30"},
                            timeout=60)
                verdict = f"[Rank 0]: {named} to pass monitoredBarrier in 1000 ms"
                self.assertIn(f"[0] rank 0: barrier raised: {verdict}", r.output)
                for rank in range(4):
                    line = [l for l in r.output.splitlines() if l.startswith(f"[{rank}] rank {rank}: allreduce")]
                    self.assertTrue(line, f"rank {rank} printed nothing:\n{r.output}")
                    self.assertIn("raised", line[0])
                    self.assertIn(verdict, line[0])
                self.assertIn("[2] rank 2: barrier raised: ", r.output)
                self.assertIn(verdict, [l for l in r.output.splitlines() if l.startswith("[2] rank 2: barrier")][0])

    @unittest.skipIf(TORCH_VERSION < (2, 10),
                     f"torch.distributed.shrink_group came with PyTorch 2.10 (this is {torch.__version__})")
    def test_shrink_group_goes_on_without_a_killed_rank(self):
        # Rank 2 dies during large allreduces; ranks 0 and 1 get the error and call
        # dist.shrink_group([2]), which makes the default group theirs, and allreduce on it.
        code = ("import os, signal, threading, torch, torch.distributed as dist, hoop.torch\n"
                "dist.init_process_group('hoop')\n"
                "me = dist.get_rank()\n"
                "if me == 2: threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGKILL)).start()\n"
                "t = torch.ones(4 << 20)\n"
                "try:\n"
                "    for _ in range(10000): dist.all_reduce(t)\n"
                "except RuntimeError: pass\n"
                "g = dist.shrink_group([2])\n"
                "x = torch.full((1001,), float(me + 1))\n"
                "dist.all_reduce(x)\n"
                "print(f'rank {me}: now {dist.get_rank()} of {dist.get_world_size()}, sum {int(x[0])}', flush=True)\n"
                "dist.destroy_process_group()\n")
        r = hooprun(3, [sys.executable, "-c", code], env={"HOOP_TIMEOUT": "30"}, timeout=90,
                    args=("--enable-recovery",))
        self.assertEqual(r.returncode, 137, r.output)  # rank 2's SIGKILL
        for rank in (0, 1):
            self.assertIn(f"[{rank}] rank {rank}: now {rank} of 2, sum 3", r.output)


if __name__ == "__main__":
    unittest.main()
