"""Runs a training script (argv[2:]) as __main__, then writes what this rank did beside argv[1]:
  - argv[1].RANK.pt: the parameters of every torch.optim optimizer the script built (found by
    wrapping Optimizer.__init__, so a model local to main() counts; where it built none, those of
    every torch.nn.Module it built: parameters updated by hand), and of every torch.nn.Module left
    in the script's globals (a DistributedDataParallel's inner module's), by name;
  - argv[1].RANK.writes: the files this rank opened for writing, made, moved or copied (Python's
    audit hooks), one absolute path per line.
A test compares the ranks through these, not through what the script prints or saves. The
script's own exit code (sys.exit) is kept."""
import os
import runpy
import sys

import torch

writes, optimizers, modules = [], [], []


def audit(event, args):
    if event == "open" and args[0] is not None and not isinstance(args[0], int):
        mode, flags = args[1], args[2]
        if (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                (mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT)):
            writes.append(os.path.abspath(os.fsdecode(args[0])))
    elif event in ("os.mkdir", "os.rename", "shutil.copyfile", "shutil.copytree", "shutil.move"):
        target = args[1] if event != "os.mkdir" else args[0]
        if isinstance(target, (str, bytes, os.PathLike)):
            writes.append(os.path.abspath(os.fsdecode(target)))


def recording(init, into):
    def wrapper(self, *args, **kwargs):
        into.append(self)
        return init(self, *args, **kwargs)
    return wrapper


def parameters(scope):
    params, seen = {}, set()
    for i, opt in enumerate(optimizers):
        for g, group in enumerate(opt.param_groups):
            for k, p in enumerate(group["params"]):
                if id(p) not in seen:
                    seen.add(id(p))
                    params[f"optimizer{i}.group{g}.{k}"] = p.detach().cpu().clone()
    for i, m in enumerate(modules if not optimizers else []):
        for k, p in m.named_parameters():
            if id(p) not in seen:
                seen.add(id(p))
                params[f"module{i}.{k}"] = p.detach().cpu().clone()
    for name, obj in sorted(scope.items()):
        if isinstance(obj, torch.nn.parallel.DistributedDataParallel):
            obj = obj.module
        if isinstance(obj, torch.nn.Module):
            for k, v in obj.state_dict().items():
                params[f"{name}.{k}"] = v.detach().cpu().clone()
    return params


def main():
    out = sys.argv[1]
    sys.argv = sys.argv[2:]
    torch.optim.Optimizer.__init__ = recording(torch.optim.Optimizer.__init__, optimizers)
    torch.nn.Module.__init__ = recording(torch.nn.Module.__init__, modules)
    sys.addaudithook(audit)
    code, scope = 0, {}
    try:
        scope = runpy.run_path(sys.argv[0], run_name="__main__")
    except SystemExit as e:
        code = e.code
    done = list(writes)
    rank = os.environ.get("HOOP_RANK", "0")
    torch.save(parameters(scope), f"{out}.{rank}.pt")
    with open(f"{out}.{rank}.writes", "w") as f:
        f.writelines(p + "\n" for p in done)
    sys.exit(code)


if __name__ == "__main__":
    main()
