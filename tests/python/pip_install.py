"""`pip install` of the source tree (pyproject.toml), as a PyTorch user runs it in the environment
that has torch: `pip install --no-build-isolation --prefix P <source>`, then, with nothing of the
build tree in reach (no PYTHONPATH to it, no LD_LIBRARY_PATH), from P alone:
  - the tools are on P/bin as pip's entry points (hooprun, hoop-info, hoop-perf, hoop-doctor,
    hoop-parallelize; hoop-train says how to get it), and `hooprun --check-build` finds the
    torch.distributed backend in the package it lies in;
  - two ranks under that hooprun run DDP-style all_reduce over the backend "hoop", loading the
    package's own libhoop;
  - hoop.run finds that hooprun too;
  - a C program builds against the package's headers and libhoop through its hoop.pc.
The build leaves out CUDA, UCX and libfabric (their code is the same whichever way it is
installed) and optimisation (build type None) to keep the run short: about 4 minutes on one core. Run by ctest's `pip-install` under
the interpreter with pip's PyTorch (HOOP_MORE_PYTHONS); skipped, saying so, where that interpreter
lacks scikit-build-core or torch."""
import glob
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

RANKS = textwrap.dedent("""
    import os, torch, torch.distributed as dist, hoop, hoop.torch
    dist.init_process_group("hoop")
    t = torch.full((5,), float(dist.get_rank() + 1))
    dist.all_reduce(t)
    libs = sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libhoop.so' in l})
    print(f"rank {dist.get_rank()} {t.tolist()} {hoop.__file__} {libs}", flush=True)
    dist.destroy_process_group()
""")

RUN_API = textwrap.dedent("""
    import hoop

    def where():
        hoop.init()
        return hoop.rank(), hoop.size()

    if __name__ == "__main__":
        print("run:", hoop.run(where, np=2))
""")

C_PROGRAM = textwrap.dedent("""
    #include <hoop/hoop.h>
    #include <stdio.h>
    int main(void) {
      hoop_comm_t comm;
      int rank = -1, x, sum = 0;
      if (hoop_init_from_env(&comm) != HOOP_SUCCESS || hoop_rank(comm, &rank) != HOOP_SUCCESS) {
        fprintf(stderr, "%s\\n", hoop_last_error());
        return 1;
      }
      x = rank + 1;
      if (hoop_allreduce(comm, &x, &sum, 1, HOOP_I32, HOOP_SUM) != HOOP_SUCCESS) return 1;
      printf("c rank %d sum %d\\n", rank, sum);
      return hoop_finalize(comm) == HOOP_SUCCESS ? 0 : 1;
    }
""")


def missing():
    for module in ("scikit_build_core", "pybind11", "torch"):
        try:
            __import__(module)
        except ImportError:
            return module
    return None


@unittest.skipIf(missing(), f"pip install: {sys.executable} lacks {missing()}")
class PipInstall(unittest.TestCase):
    def run_ok(self, cmd, env, timeout=120, **kw):
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, **kw)
        self.assertEqual(r.returncode, 0, f"{cmd}:\n{r.stdout}\n{r.stderr}")
        return r.stdout

    def test_pip_install_gives_the_package_its_tools_and_backend(self):
        with tempfile.TemporaryDirectory(prefix="hoop-pip-") as prefix:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "LD_LIBRARY", "HOOP"))}
            # One compiler, not ninja's default of cores + 2: ctest runs another entry beside this
            # one, and a build on both cores starves its processes (tests/CMakeLists.txt).
            env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", "1")
            defines = ["HOOP_WITH_CUDA=OFF", "HOOP_WITH_UCX=OFF", "HOOP_WITH_OFI=OFF", "HOOP_WITH_TORCH=ON"]
            # Build type None: no optimisation, no debug information, no LTO (pybind11's, in Release):
            # half the compile time of the Release build users get, and the same files installed.
            cmd = [sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index",
                   "--disable-pip-version-check", "--prefix", prefix, f"--config-settings=build-dir={prefix}/build",
                   "--config-settings=cmake.build-type=None"]
            cmd += [f"--config-settings=cmake.define.{d}" for d in defines] + [SOURCE]
            self.run_ok(cmd, env, timeout=1200)
            shutil.rmtree(os.path.join(prefix, "build"))
            site = glob.glob(os.path.join(prefix, "lib", "python3*", "site-packages"))
            self.assertEqual(len(site), 1, f"site-packages under {prefix}: {site}")
            package = os.path.join(site[0], "hoop")
            self.assertEqual(glob.glob(os.path.join(package, "lib", "libhoop.so*")), [os.path.join(package, "lib", "libhoop.so")])
            for part in ("bin/hooprun", "include/hoop/hoop.h", "lib/cmake/hoop/hoopConfig.cmake", "lib/pkgconfig/hoop.pc"):
                self.assertTrue(os.path.exists(os.path.join(package, part)), part)
            self.assertTrue(glob.glob(os.path.join(package, "_c10d*.so")), os.listdir(package))
            env.update(PYTHONPATH=site[0], PATH=os.path.join(prefix, "bin") + os.pathsep + env.get("PATH", ""))
            self.check_tools(env, package)
            self.check_jobs(env, prefix, package)

    def check_tools(self, env, package):
        for tool in ("hooprun", "hoop-info", "hoop-perf", "hoop-doctor", "hoop-parallelize"):
            self.assertIn("usage", self.run_ok([tool, "--help"], env).lower(), tool)
        self.assertIn("0.", self.run_ok(["hooprun", "--version"], env))
        self.assertIn(f"[X] PyTorch (torch.distributed backend \"hoop\" and hoop.torch, Horovod's API: {package})",
                      self.run_ok(["hooprun", "--check-build"], env))
        train = subprocess.run(["hoop-train", "--help"], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(train.returncode, 127)
        self.assertIn("HOOP_BUILD_TRAINER=ON", train.stderr)

    def check_jobs(self, env, prefix, package):
        lib = os.path.join(package, "lib", "libhoop.so")  # one file: a wheel holds no links
        out = self.run_ok(["hooprun", "-np", "2", sys.executable, "-c", RANKS], env)
        for rank in range(2):
            self.assertIn(f"rank {rank} [3.0, 3.0, 3.0, 3.0, 3.0] {package}/__init__.py ['{lib}']", out)
        with open(os.path.join(prefix, "run_api.py"), "w") as f:
            f.write(RUN_API)
        self.assertIn("run: [(0, 2), (1, 2)]", self.run_ok([sys.executable, "run_api.py"], env, cwd=prefix))
        with open(os.path.join(prefix, "sum.c"), "w") as f:
            f.write(C_PROGRAM)
        flags = self.run_ok(["pkg-config", "--cflags", "--libs", "hoop"],
                            dict(env, PKG_CONFIG_PATH=os.path.join(package, "lib", "pkgconfig"))).split()
        rpath = "-Wl,-rpath," + os.path.join(package, "lib")
        self.run_ok(["cc", "-o", os.path.join(prefix, "sum"), os.path.join(prefix, "sum.c"), rpath] + flags, env)
        out = self.run_ok(["hooprun", "-np", "2", os.path.join(prefix, "sum")], env)
        self.assertIn("c rank 0 sum 3", out)
        self.assertIn("c rank 1 sum 3", out)


if __name__ == "__main__":
    unittest.main()
