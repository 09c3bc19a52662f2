"""hoop-parallelize --check: the converted script run on 2 ranks under hooprun for a few
optimizer steps (every torch.optim optimizer's step counted; without an optimizer, the updates by
hand, as the backward passes between them), then the ranks' parameters compared bit for bit."""
import os
import subprocess
import sys
import tempfile

CHECK_RUNNER = r'''
import os, runpy, sys, torch
limit, prefix, count, depth, stepped = int(sys.argv[1]), sys.argv[2], [0], [0], {}
def finish():
    import multiprocessing
    children = multiprocessing.active_children()  # a DataLoader's workers, which os._exit leaves behind
    for child in children:
        child.terminate()
    for child in children:
        child.join(5)
    os._exit(0)
def counted(step):
    def wrapper(self, *args, **kwargs):
        depth[0] += 1  # a subclass's step calling its base's counts once
        try:
            result = step(self, *args, **kwargs)
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            stepped[id(self)] = self
            count[0] += 1
            if count[0] >= limit:
                params = [p.detach().cpu().clone() for o in stepped.values() for g in o.param_groups for p in g["params"]]
                torch.save(params, f"{prefix}.{os.environ.get('HOOP_RANK', '0')}.pt")
                print(f"hoop-parallelize --check: {limit} optimizer steps ran", flush=True)
                finish()
        return result
    return wrapper
for name in dir(torch.optim):
    cls = getattr(torch.optim, name)
    if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) and "step" in cls.__dict__:
        cls.step = counted(cls.step)
# A script that updates its parameters by hand has no optimizer: its updates are counted as the
# backward passes that start after them, and its parameters are every module's.
modules, built, backward, passes = [], [], torch.Tensor.backward, [0]
def recorded(init, into):
    def wrapper(self, *args, **kwargs):
        into.append(self)
        return init(self, *args, **kwargs)
    return wrapper
torch.nn.Module.__init__ = recorded(torch.nn.Module.__init__, modules)
torch.optim.Optimizer.__init__ = recorded(torch.optim.Optimizer.__init__, built)
def counted_backward(self, *args, **kwargs):
    if not built:
        if passes[0] >= limit:
            seen, params = set(), []
            for m in modules:
                for p in m.parameters():
                    if id(p) not in seen:
                        seen.add(id(p))
                        params.append(p.detach().cpu().clone())
            torch.save(params, f"{prefix}.{os.environ.get('HOOP_RANK', '0')}.pt")
            print(f"hoop-parallelize --check: {limit} updates by hand ran", flush=True)
            finish()
        passes[0] += 1
    return backward(self, *args, **kwargs)
torch.Tensor.backward = counted_backward
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def compare_ranks(prefix, steps):
    """None if both ranks' parameters are bitwise the same, else what differs."""
    try:
        import torch
    except ImportError:
        return None  # the script ran, so this cannot happen where it matters
    try:
        a, b = (torch.load(f"{prefix}.{r}.pt") for r in (0, 1))
    except OSError:
        return "a rank ran fewer optimizer steps than the other (no parameters saved)"
    if len(a) != len(b):
        return f"the ranks' optimizers hold {len(a)} and {len(b)} parameters"
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or not torch.equal(x, y):
            d = (x.double() - y.double()).abs().max().item() if x.shape == y.shape else "shape"
            return (f"after {steps} optimizer steps the ranks' parameters differ (parameter {i} of {len(a)}, by {d}): "
                    "the converted script does not keep the ranks in step")
    return None


def check(out, hooprun, steps, args, timeout):
    """Runs the converted script on 2 ranks for `steps` optimizer steps and compares the ranks'
    parameters then; returns (exit code, why it failed or None)."""
    with tempfile.TemporaryDirectory(prefix="hoop-parallelize-") as tmp:
        runner = os.path.join(tmp, "runner.py")
        with open(runner, "w") as f:
            f.write(CHECK_RUNNER)
        prefix = os.path.join(tmp, "params")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root(), env.get("PYTHONPATH")) if p)
        cmd = [hooprun, "-np", "2", "--oversubscribe", "--timeout", str(timeout), sys.executable, runner, str(steps),
               prefix, out, *args]
        print(f"hoop-parallelize --check: {' '.join(cmd)}", file=sys.stderr, flush=True)
        code = subprocess.run(cmd, env=env).returncode
        if code != 0:
            return code, f"exit code {code}"
        why = compare_ranks(prefix, steps)
        return (1, why) if why else (0, None)


def package_root():
    """The folder the hoop package lies in (this file is hoop/_parallelize/check.py)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def find_hooprun():
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    # Beside this tool (a build tree's or an install's bin), in the package (a pip install's
    # hoop/bin), next to the build tree's python folder.
    for candidate in (os.path.join(here, "hooprun"), os.path.join(package_root(), "hoop", "bin", "hooprun"),
                      os.path.join(package_root(), "..", "bin", "hooprun")):
        if os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    from shutil import which
    return which("hooprun")
