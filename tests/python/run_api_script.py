"""hoop.run (horovod.run's counterpart) from a script (test_horovod.py): a function of this script
on 3 ranks returns each rank's values, one of them larger than hooprun passes on in one line; a
rank that raises fails the call, naming its error; a lambda, without cloudpickle, is refused
before anything starts. Prints "run-api ok" and what it checked."""
import argparse
import sys

import torch

# Read at the top level, as many scripts do: each rank that loads this script reads the caller's
# arguments again (hoop.run sends them, as multiprocessing's spawn does).
ARGS = argparse.ArgumentParser().parse_args()


def train(scale, big=0):
    import hoop.torch as hvd
    hvd.init()
    total = hvd.allreduce(torch.tensor([float(hvd.rank())]), op=hvd.Sum).item()
    print(f"hello from {hvd.rank()} with {ARGS}", flush=True)
    return {"rank": hvd.rank(), "size": hvd.size(), "sum": total * scale, "big": bytes([hvd.rank()]) * big}


def boom():
    import hoop
    hoop.init()
    if hoop.rank() == 1:
        raise ValueError("boom on rank 1")
    return 1


def main():
    import hoop as horovod  # a Horovod script's `import horovod`, changed
    n, big = 3, 300000
    out = horovod.run(train, args=(2,), kwargs={"big": big}, np=n, use_gloo=True)
    want = [{"rank": r, "size": n, "sum": 2.0 * n * (n - 1) / 2, "big": bytes([r]) * big} for r in range(n)]
    if out != want:
        sys.exit(f"run-api FAIL: {[(o['rank'], o['size'], o['sum'], len(o['big'])) for o in out]}")
    try:
        horovod.run(boom, num_proc=2)
        sys.exit("run-api FAIL: a rank's error did not fail the call")
    except RuntimeError as e:
        if "boom on rank 1" not in str(e) or "exit code 1" not in str(e):
            sys.exit(f"run-api FAIL: the error does not say what failed: {e}")
    try:
        import cloudpickle  # noqa: F401
    except ImportError:
        try:
            horovod.run(lambda: 1, np=2)
            sys.exit("run-api FAIL: a lambda was taken without cloudpickle")
        except ValueError as e:
            if "cloudpickle" not in str(e):
                sys.exit(f"run-api FAIL: {e}")
    try:
        horovod.run(train, args=(1,), np=2, slots=4)
        sys.exit("run-api FAIL: slots= was taken")
    except ValueError as e:
        if "slots=" not in str(e):
            sys.exit(f"run-api FAIL: {e}")
    print("run-api ok: values of 3 ranks, a failing rank, refusals", flush=True)


if __name__ == "__main__":
    main()
