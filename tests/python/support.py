"""Shared by the Python tests: where the build is, the environment that imports the package
from it, and hooprun jobs with a hard bound that kill what they started."""
import collections
import math
import os
import random
import signal
import socket
import subprocess
import sys
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.abspath(os.environ.get("HOOPTEST_BUILD_DIR", os.path.join(HERE, "..", "..", "build")))
HOOPRUN = os.path.join(BUILD, "bin", "hooprun")
# Where the Python package is built for this interpreter: the build itself for HOOP_PYTHON, or
# one of BUILD/python-more/<N> for another (cmake/more_pythons.cmake), holding python/hoop and
# bin/hoop-parallelize; the tools (hooprun, ...) are the build's either way.
PYBUILD = os.path.abspath(os.environ.get("HOOPTEST_PYTHON_BUILD", BUILD))
PACKAGE = os.path.join(PYBUILD, "python")
PARALLELIZE = os.path.join(PYBUILD, "bin", "hoop-parallelize")

Result = collections.namedtuple("Result", "returncode output")

# HOOPTEST_SHARE=F (0 < F <= 1, default 1): the matrices that take drawn() run one window of
# ceil(1/F) per run; HOOPTEST_SHARE_SHIFT=K moves the quarter-day's window on by K, so that two
# suites with shifts 0 and 1 make complementary halves (tests/CMakeLists.txt: 0.5 for the suites
# under Debian's PyTorch and pip's, shifted 1 and 0: every cell under one of them each run, under
# both within half a day); see drawn().
SHARE = float(os.environ.get("HOOPTEST_SHARE") or 1)
if not 0 < SHARE <= 1:
    raise SystemExit(f"HOOPTEST_SHARE={SHARE}: expected a share in (0, 1]")
SHARE_SHIFT = int(os.environ.get("HOOPTEST_SHARE_SHIFT") or 0)
# The quarter-day (UTC) since 1970 that the windows turn by: HOOPTEST_QUARTER_DAY where given
# (scripts/test.sh fixes it once per run, so that suites sharing a matrix out between them take
# complementary windows even when the run crosses a quarter-day), else now.
QUARTER_DAY = int(os.environ.get("HOOPTEST_QUARTER_DAY") or time.time() // 21600)


def share_window():
    """(windows, this run's window) of HOOPTEST_SHARE: (1, 0) where every cell runs."""
    windows = math.ceil(1 / SHARE - 1e-9)
    given = os.environ.get("HOOPTEST_SHARE_WINDOW")
    return windows, (int(given) if given else QUARTER_DAY + SHARE_SHIFT) % windows


def alternating(test):
    """A test method taken as one cell of drawn(): under HOOPTEST_SHARE it runs in one window of
    ceil(1/SHARE), picked by its name (so the suites sharing the matrices split such tests between
    them, each run under one, under every one over the windows), and is skipped, saying so, in
    the others. For tests whose cost is their runs on 2 ranks, not the checks around them."""
    windows, window = share_window()
    mine = zlib.crc32(test.__qualname__.encode()) % windows
    if windows <= 1 or mine == window:
        return test
    return unittest.skip(f"this run's HOOPTEST_SHARE={SHARE} window is {window}: this test runs in window {mine} "
                         f"(HOOPTEST_SHARE_WINDOW={mine} runs it here)")(test)


def torch_free_module():
    """Skips the calling module where HOOPTEST_SAME_PYTHON_AS names another ctest entry that runs
    it under this same CPython (tests/CMakeLists.txt: the suite under pip's PyTorch, whose
    interpreter is Debian's): nothing in it uses PyTorch, so a second run tests nothing new."""
    entry = os.environ.get("HOOPTEST_SAME_PYTHON_AS")
    if entry:
        raise unittest.SkipTest(f"nothing here uses PyTorch; ctest's '{entry}' entry runs it under this CPython "
                                f"({sys.version.split()[0]})")


def drawn(cells, label, keep=()):
    """The cells of a test's matrix this run makes: every one, or under HOOPTEST_SHARE those of
    one window of ceil(1/SHARE) over a fixed shuffle, plus `keep` (cells every run needs, such as
    the one the others are compared with). The window is HOOPTEST_SHARE_WINDOW, else the quarter-day
    (QUARTER_DAY) plus HOOPTEST_SHARE_SHIFT, so that runs over ceil(1/SHARE) quarter-days make
    every cell; printed, so that a failure can be run again."""
    cells = list(cells)
    windows, window = share_window()
    if windows <= 1:
        return cells
    order = [c for c in cells if c not in keep]
    random.Random(label).shuffle(order)
    chosen = {repr(c) for i, c in enumerate(order) if i % windows == window}
    out = [c for c in cells if c in keep or repr(c) in chosen]
    print(f"\n{label}: HOOPTEST_SHARE={SHARE} HOOPTEST_SHARE_WINDOW={window} (of {windows}): {len(out)} of "
          f"{len(cells)} cells: {out}", file=sys.stderr)
    return out

try:
    import numpy  # noqa: F401
except ImportError:  # the package needs it; say so rather than fail
    raise unittest.SkipTest("NumPy is missing (apt-get install python3-numpy)")
if not os.path.isdir(os.path.join(PACKAGE, "hoop")):
    raise unittest.SkipTest(f"no Python package in {PACKAGE} (configure found no pybind11 or python3-dev)")


def python_env(extra=None):
    """This environment with the build's package first on PYTHONPATH and no HOOP_* of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HOOP_")}
    env["PYTHONPATH"] = PACKAGE + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra or {})
    return env


def free_ports(count=1):
    """A port P with P .. P + count - 1 all free on 127.0.0.1 (hoop.init serves its store at
    MASTER_PORT + 1), drawn below the kernel's ephemeral range so that no other test's outgoing
    connection takes one of them between this check and the job's bind."""
    top = 30000
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            top = min(top, int(f.read().split()[0]) - count)
    except (OSError, ValueError, IndexError):
        pass
    rng = random.Random()
    for _ in range(200):
        port = rng.randrange(10000, top)
        socks = []
        try:
            for i in range(count):
                socks.append(socket.socket())
                socks[-1].bind(("127.0.0.1", port + i))
            return port
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {count} free ports in a row below the ephemeral range")


def hooprun(n, command, env=None, timeout=120, args=()):
    """Runs `hooprun -np n ARGS COMMAND` in its own process group; past `timeout` seconds kills
    the group and returns code -9 with the output so far and a line saying so."""
    return in_group([HOOPRUN, "-np", str(n), "--oversubscribe", *args, *command], env, timeout)


def parallelize(args, cwd, timeout=300):
    """hoop-parallelize ARGS in cwd (its --check runs 2 ranks: the bound leaves room for them)."""
    return subprocess.run([PARALLELIZE, *args], cwd=cwd, env=python_env(), capture_output=True, text=True,
                          timeout=timeout)


def convert_script(tmp, name, script, styles=("horovod", "ddp")):
    """[(style, hoop-parallelize's result, the output's path)] for script, written as NAME.py in
    tmp and converted in each style to NAME_STYLE.py."""
    src = os.path.join(tmp, f"{name}.py")
    with open(src, "w") as f:
        f.write(script)
    done = []
    for style in styles:
        out = os.path.join(tmp, f"{name}_{style}.py")
        done.append((style, parallelize([src, "-o", out, "--style", style, "-q"], tmp), out))
    return done


def in_group(command, env=None, timeout=120):
    """Runs command (with python_env(env)) as hooprun() does: its own process group, killed past
    `timeout` seconds."""
    p = subprocess.Popen(command, env=python_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    try:
        out, _ = p.communicate(timeout=timeout)
        return Result(p.returncode, out)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, _ = p.communicate()
        return Result(-9, out + f"\n(test: killed after {timeout} s: {' '.join(command)})")
