"""Ctrl-C after `import hoop`: Python's own SIGINT handler must still be there, so the program
gets KeyboardInterrupt (its `finally:` and save-on-interrupt code run) instead of dying by the
signal. libfabric's psm provider installs a SIGINT handler when libhoop loads it; hoop gives the
signal back what it had before (transport/util/crash_signals.h). Also with hoop.init() over every
back end, which starts one (and loads UCX or a libfabric provider)."""
import signal
import subprocess
import sys
import unittest

from support import hooprun, python_env, torch_free_module

torch_free_module()

SCRIPT = """
import os, signal, sys, time
import hoop
{init}
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)
    print("no KeyboardInterrupt")
except KeyboardInterrupt:
    print("KeyboardInterrupt caught")
finally:
    print("finally ran")
{shutdown}
"""


class ImportKeepsSigint(unittest.TestCase):
    def test_keyboard_interrupt_after_import(self):
        r = subprocess.run([sys.executable, "-c", SCRIPT.format(init="", shutdown="")], env=python_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("KeyboardInterrupt caught", r.stdout)
        self.assertIn("finally ran", r.stdout)

    def test_ignored_sigint_stays_ignored(self):
        # A program started with SIGINT ignored (as `cmd &` in a script starts it) keeps it so.
        code = "import os, signal, time, hoop\nos.kill(os.getpid(), signal.SIGINT)\ntime.sleep(0.2)\nprint('survived')\n"
        r = subprocess.run([sys.executable, "-c", code], env=python_env(), capture_output=True, text=True,
                           timeout=60, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("survived", r.stdout)

    def test_keyboard_interrupt_after_init_on_every_back_end(self):
        script = SCRIPT.format(init="hoop.init()", shutdown="hoop.shutdown()")
        for transport, extra in [("tcp", {}), ("shm", {}), ("ucx", {"UCX_TLS": "tcp"}),
                                 ("ofi", {"FI_PROVIDER": "tcp;ofi_rxm"})]:
            env = {"HOOP_TRANSPORT": transport, **extra}
            r = hooprun(2, [sys.executable, "-c", script], env=env, timeout=90)
            with self.subTest(transport=transport):
                if "is not built in" in r.output:
                    continue  # this build lacks the back end (its -dev package was missing)
                self.assertEqual(r.returncode, 0, r.output)
                self.assertEqual(r.output.count("KeyboardInterrupt caught"), 2, r.output)


if __name__ == "__main__":
    unittest.main()


QUIET = """
import numpy as np, hoop
hoop.init()
try:
    hoop.allreduce(np.zeros(3 + hoop.rank(), np.float32))   # counts differ: every rank fails
except hoop.HoopError as e:
    print(f"rank {hoop.rank()} caught {type(e).__name__}")
"""


class QuietWhenAsked(unittest.TestCase):
    def test_log_level_none_leaves_errors_to_the_caller(self):
        # An error the caller catches is logged too (ERROR), unless HOOP_LOG_LEVEL=none.
        loud = hooprun(2, [sys.executable, "-c", QUIET], env={"HOOP_TIMEOUT": "10"}, timeout=90)
        quiet = hooprun(2, [sys.executable, "-c", QUIET], env={"HOOP_TIMEOUT": "10", "HOOP_LOG_LEVEL": "none"},
                        timeout=90)
        for r in (loud, quiet):
            self.assertEqual(r.output.count(" caught "), 2, r.output)
        self.assertIn("ERROR", loud.output)
        self.assertNotIn("hoop[rank", quiet.output)
