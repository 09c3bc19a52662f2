"""The installed package: `cmake --install` into a temporary prefix, then two ranks under the
installed hooprun import hoop from the prefix's site-packages, load the prefix's libhoop (not
the build tree's) and allreduce."""
import os
import subprocess
import sys
import tempfile
import unittest

from support import BUILD, PACKAGE, PYBUILD, python_env

SCRIPT = """
import numpy as np, hoop
hoop.init()
libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libhoop.so' in l})
print(f"rank {hoop.rank()}: {hoop.__file__} {libs} {hoop.allreduce(np.ones(3, np.int32)).tolist()}")
"""


class Installed(unittest.TestCase):
    def test_installed_package_runs_from_the_prefix(self):
        with tempfile.TemporaryDirectory(prefix="hoop-pyinstall-") as prefix:
            # The build's libhoop and tools, then (for another interpreter) its own package build.
            for build in dict.fromkeys([BUILD, PYBUILD]):
                inst = subprocess.run(["cmake", "--install", build, "--prefix", prefix], capture_output=True,
                                      text=True, timeout=120)
                self.assertEqual(inst.returncode, 0, inst.stdout + inst.stderr)
            with open(os.path.join(PYBUILD, "install_manifest.txt")) as f:
                site = sorted({os.path.dirname(p) for p in f.read().split() if p.endswith("/hoop/__init__.py")})
            self.assertEqual(len(site), 1, f"hoop/__init__.py installed under {prefix}: {site}")
            built = sorted(f.split(".")[0] for f in os.listdir(os.path.join(PACKAGE, "hoop")) if f.endswith(".so"))
            installed = sorted(f.split(".")[0] for f in os.listdir(site[0]) if f.endswith(".so"))
            self.assertEqual(installed, built)  # _hoop, and _c10d where the backend was built
            if "_c10d" in built:
                self.assertTrue(os.path.exists(os.path.join(site[0], "torch", "__init__.py")))
            env = python_env()
            env["PYTHONPATH"] = os.path.dirname(site[0])
            env.pop("LD_LIBRARY_PATH", None)
            tool = subprocess.run([os.path.join(prefix, "bin", "hoop-parallelize"), "--help"], env=env,
                                  capture_output=True, text=True, timeout=60)
            self.assertEqual(tool.returncode, 0, tool.stderr)
            self.assertIn("usage: hoop-parallelize", tool.stdout)
            r = subprocess.run([os.path.join(prefix, "bin", "hooprun"), "-np", "2", sys.executable, "-c", SCRIPT],
                               env=env, capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            for rank in (0, 1):
                want = rf"rank {rank}: {site[0]}/__init__.py \['{os.path.realpath(prefix)}/lib/libhoop\.so\.0[.0-9]*'\] \[2, 2, 2\]"
                self.assertRegex(r.stdout, want)


if __name__ == "__main__":
    unittest.main()
