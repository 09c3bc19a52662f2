"""The tools of a pip-installed hoop (pyproject.toml's entry points: hooprun, hoop-info, hoop-perf,
hoop-doctor, hoop-train): each runs the program of that name from the package's bin folder
(hoop/bin, where `pip install .` puts them), replacing this Python process, so signals, exit codes
and hooprun's own path (/proc/self/exe, which it gives the hosts of a multi-host job) are the
program's. In a build tree the programs lie in build/bin, next to build/python."""
import os
import sys


def _find(name):
    here = os.path.dirname(os.path.abspath(__file__))
    for folder in (os.path.join(here, "bin"), os.path.join(here, "..", "..", "bin")):
        path = os.path.normpath(os.path.join(folder, name))
        if os.access(path, os.X_OK):
            return path
    return None


def _exec(name, how_to_build=""):
    path = _find(name)
    if path is None:
        sys.stderr.write(f"{name}: this hoop package has no {name} program (looked in "
                         f"{os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bin')}){how_to_build}\n")
        return 127
    os.execv(path, [path] + sys.argv[1:])
    return 127  # not reached: execv replaces the process or raises


def hooprun():
    return _exec("hooprun")


def hoop_info():
    return _exec("hoop-info")


def hoop_perf():
    return _exec("hoop-perf")


def hoop_doctor():
    return _exec("hoop-doctor")


def hoop_train():
    return _exec("hoop-train", "; pip builds it when asked: pip install -C cmake.define.HOOP_BUILD_TRAINER=ON . "
                               "(it needs OpenBLAS, oneDNN and zlib's headers)")
