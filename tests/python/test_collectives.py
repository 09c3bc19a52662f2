"""The hoop Python package against NumPy: collectives_rank.py under hooprun on 1 to 4 ranks over
tcp and shm, failure_rank.py (a rank killed mid-allreduce), revoke_rank.py (a rank revokes the
communicator from a second thread mid-allreduce) and shrink_rank.py (the survivors of a killed
rank shrink the communicator and go on), grow_rank.py (a newcomer takes its place) and
elastic_rank.py (elastic hooprun starts a killed rank's replacement, which hoop.init() joins),
det_rank.py (the deterministic mode against NumPy's left fold). Run by ctest (test "python")
as `python3 -m unittest discover -s tests/python` with HOOPTEST_BUILD_DIR set to the build folder.
Every job has a hard bound (hooprun --timeout and the subprocess's own); a hang fails the test,
naming the job.
"""
import os
import re
import subprocess
import sys
import unittest

from support import HERE, hooprun, python_env, torch_free_module

torch_free_module()


class Collectives(unittest.TestCase):
    def test_every_collective_matches_numpy(self):
        for transport in ("tcp", "shm"):
            for n in (1, 2, 3, 4):
                with self.subTest(transport=transport, ranks=n):
                    r = hooprun(n, [sys.executable, os.path.join(HERE, "collectives_rank.py")],
                                env={"HOOP_TRANSPORT": transport}, timeout=120)
                    self.assertEqual(r.returncode, 0, r.output)
                    for rank in range(n):
                        self.assertRegex(r.output, rf"\[{rank}\] rank {rank}: ok \d+ checks")

    def test_deterministic_mode_gives_numpys_left_fold(self):
        for n, env in ((3, {"HOOP_TRANSPORT": "tcp", "HOOP_ALGO": "ring"}),
                       (4, {"HOOP_TRANSPORT": "shm", "HOOP_ALGO": "tree", "HOOP_CHUNK_BYTES": "4K"})):
            with self.subTest(ranks=n, **env):
                r = hooprun(n, [sys.executable, os.path.join(HERE, "det_rank.py")], env=env, timeout=120)
                self.assertEqual(r.returncode, 0, r.output)
                for rank in range(n):
                    self.assertRegex(r.output, rf"\[{rank}\] rank {rank}: deterministic ok 16 checks")

    def test_a_killed_rank_raises_naming_it(self):
        for transport in ("tcp", "shm"):
            with self.subTest(transport=transport):
                r = hooprun(3, [sys.executable, os.path.join(HERE, "failure_rank.py")],
                            env={"HOOP_TRANSPORT": transport, "HOOP_TIMEOUT": "30"}, timeout=60)
                self.assertNotEqual(r.returncode, 0, r.output)
                self.assertIn("hooprun: rank 2 (pid", r.output)
                for rank in (0, 1):
                    line = [l for l in r.output.splitlines() if l.startswith(f"[{rank}] rank {rank}: caught")]
                    self.assertTrue(line, f"rank {rank} raised nothing:\n{r.output}")
                    self.assertRegex(line[0], r"caught (UnavailableError|AbortedError): .*(lost peer 2|rank 2)")

    def test_a_revoke_by_one_rank_raises_on_every_rank_at_once(self):
        for transport in ("tcp", "shm"):
            with self.subTest(transport=transport):
                r = hooprun(3, [sys.executable, os.path.join(HERE, "revoke_rank.py")],
                            env={"HOOP_TRANSPORT": transport, "HOOP_TIMEOUT": "60"}, timeout=90)
                self.assertEqual(r.returncode, 0, r.output)
                for rank in range(3):
                    line = [l for l in r.output.splitlines() if l.startswith(f"[{rank}] rank {rank}: caught")]
                    self.assertTrue(line, f"rank {rank} raised nothing:\n{r.output}")
                    self.assertRegex(line[0], r"caught RevokedError after [\d.]+ s: .*rank 0 revoked communicator "
                                              r".*rank 0 was told to stop")
                    # Well inside HOOP_TIMEOUT (60 s): the revoke came at 0.3 s.
                    self.assertLess(float(line[0].split(" after ")[1].split(" s:")[0]), 10.0, line[0])
                    self.assertIn(f"[{rank}] rank {rank}: a later call was revoked too", r.output)

    def test_the_survivors_of_a_killed_rank_shrink_and_go_on(self):
        for transport in ("tcp", "shm"):
            with self.subTest(transport=transport):
                r = hooprun(3, [sys.executable, os.path.join(HERE, "shrink_rank.py")],
                            env={"HOOP_TRANSPORT": transport, "HOOP_TIMEOUT": "60"}, timeout=90,
                            args=("--enable-recovery",))
                self.assertEqual(r.returncode, 137, r.output)  # rank 1's SIGKILL
                # Ranks 0 and 2 become 0 and 1 of 2; the sum is theirs (1 + 3).
                for rank, new in ((0, 0), (2, 1)):
                    self.assertIn(f"[{rank}] rank {rank}: shrunk to rank {new} of 2, failed ranks [1], sum 4",
                                  r.output)

    def test_a_newcomer_takes_a_killed_ranks_place(self):
        for transport in ("tcp", "shm"):
            with self.subTest(transport=transport):
                r = hooprun(3, [sys.executable, os.path.join(HERE, "grow_rank.py")],
                            env={"HOOP_TRANSPORT": transport, "HOOP_TIMEOUT": "60"}, timeout=90,
                            args=("--enable-recovery",))
                self.assertEqual(r.returncode, 137, r.output)  # rank 1's SIGKILL
                # Ranks 0 and 2 become 0 and 1, the newcomer 2; the sum is 1 + 2 + 3.
                for line in ("rank 0 of 3: step 17, sum 6", "rank 1 of 3: step 17, sum 6",
                             "newcomer rank 2 of 3: step 17, sum 6"):
                    self.assertIn(line, r.output)

    def test_elastic_hooprun_replaces_a_killed_rank(self):
        for transport in ("tcp", "shm"):
            with self.subTest(transport=transport):
                r = hooprun(3, [sys.executable, os.path.join(HERE, "elastic_rank.py")],
                            env={"HOOP_TRANSPORT": transport, "HOOP_TIMEOUT": "60"}, timeout=90,
                            args=("--min-np", "2", "--max-np", "3"))
                self.assertEqual(r.returncode, 0, r.output)  # the job survived its loss
                self.assertIn("hooprun: started rank 3 (pid ", r.output)
                lines = {}
                for rank in (0, 2, 3):
                    found = re.search(rf"job rank {rank}: step (\d+), size 3, total (\d+), newcomer (\d)", r.output)
                    self.assertIsNotNone(found, r.output)
                    lines[rank] = found.groups()
                self.assertEqual(lines[0], lines[2], r.output)
                self.assertEqual(lines[3][:2], lines[0][:2], r.output)
                self.assertEqual((lines[0][2], lines[3][2]), ("0", "1"), r.output)

    def test_alone_it_is_a_job_of_one(self):
        code = "import hoop, numpy as np; hoop.init(); print(hoop.size(), hoop.allreduce(np.arange(3.0)))"
        r = subprocess.run([sys.executable, "-c", code], env=python_env(), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), "1 [0. 1. 2.]")

    def test_the_flight_recorder_as_json_and_dumped(self):
        import json
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            code = ("import hoop, json, numpy as np; w = hoop.init(); hoop.allreduce(np.ones(7, np.float32)); "
                    "hoop.broadcast(np.arange(4), root=0); t = json.loads(w.trace()); "
                    "print(json.dumps(t['ops'][-2:])); w.dump_trace(" + repr(d) + ")")
            r = subprocess.run([sys.executable, "-c", code], env=python_env({"HOOP_TRACE_OPS": "100"}),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            last = json.loads(r.stdout.strip().splitlines()[-1])
            self.assertEqual([op["op"] for op in last], ["allreduce", "broadcast"], r.stdout)
            self.assertEqual((last[0]["dtype"], last[0]["count"], last[0]["state"]), ("f32", 7, "done"))
            self.assertEqual((last[1]["root"], last[1]["count"]), (0, 4))
            with open(os.path.join(d, "hoop-trace.world.0.json")) as f:
                dumped = json.load(f)
            self.assertEqual((dumped["rank"], dumped["size"], dumped["reason"]), (0, 1, "request"))
            # Without a directory and without HOOP_TRACE_DIR: a clear error.
            r = subprocess.run([sys.executable, "-c", "import hoop; hoop.init().dump_trace()"], env=python_env(),
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("no directory (give one, or set HOOP_TRACE_DIR)", r.stderr)


if __name__ == "__main__":
    unittest.main()
