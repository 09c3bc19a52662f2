"""Runs a converted training script (argv[2:]) as __main__, then writes this rank's parameters to
argv[1].RANK.pt: every torch.nn.Module the script left in its globals, by name (a
DistributedDataParallel's inner module's), so a test can compare the ranks bitwise without
relying on what the script prints or saves."""
import os
import runpy
import sys

import torch


def main():
    out = sys.argv[1]
    sys.argv = sys.argv[2:]
    scope = runpy.run_path(sys.argv[0], run_name="__main__")
    params = {}
    for name, obj in sorted(scope.items()):
        if isinstance(obj, torch.nn.parallel.DistributedDataParallel):
            obj = obj.module
        if isinstance(obj, torch.nn.Module):
            for k, v in obj.state_dict().items():
                params[f"{name}.{k}"] = v.detach().clone()
    rank = os.environ.get("HOOP_RANK", "0")
    torch.save(params, f"{out}.{rank}.pt")


if __name__ == "__main__":
    main()
