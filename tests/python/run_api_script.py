"""hoop.run (horovod.run's counterpart) from a script (test_horovod.py): a function of this script
on 3 ranks returns each rank's values, one of them larger than hooprun passes on in one line;
arguments of 500 KB (in the ranks' command lines, in pieces) and of 1.5 MB (in a file) reach
every rank whole, and one of 1.5 MB for ranks on other hosts is refused before anything starts;
a rank that raises fails the call, naming its error, and so does one that ends without a return
value; a lambda, without cloudpickle, is refused
before anything starts. Prints "run-api ok" and what it checked."""
import argparse
import hashlib
import os
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


def digest(data):
    import hoop
    hoop.init()
    return hoop.rank(), len(data), hashlib.sha256(data).hexdigest()


def boom():
    import hoop
    hoop.init()
    if hoop.rank() == 1:
        raise ValueError("boom on rank 1")
    return 1


def vanish():
    import hoop
    hoop.init()
    if hoop.rank() == 1:
        sys.stdout.flush()
        os._exit(0)  # ends well without a return value
    return 0


def main():
    import hoop as horovod  # a Horovod script's `import horovod`, changed
    n, big = 3, 300000
    out = horovod.run(train, args=(2,), kwargs={"big": big}, np=n, use_gloo=True)
    want = [{"rank": r, "size": n, "sum": 2.0 * n * (n - 1) / 2, "big": bytes([r]) * big} for r in range(n)]
    if out != want:
        sys.exit(f"run-api FAIL: {[(o['rank'], o['size'], o['sum'], len(o['big'])) for o in out]}")
    for size in (500000, 1500000):  # in the command lines; in a file on this host
        data = os.urandom(size)
        got = horovod.run(digest, args=(data,), np=2)
        if got != [(r, size, hashlib.sha256(data).hexdigest()) for r in range(2)]:
            sys.exit(f"run-api FAIL: {size} bytes of arguments arrived as {got}")
    try:
        horovod.run(digest, args=(os.urandom(1500000),), hosts="hoop-no-such-host-a:1,hoop-no-such-host-b:1")
        sys.exit("run-api FAIL: 1.5 MB of arguments for other hosts was taken")
    except ValueError as e:
        if "bytes pickled" not in str(e) or "other hosts" not in str(e):
            sys.exit(f"run-api FAIL: the refusal does not say why: {e}")
    try:
        horovod.run(boom, num_proc=2)
        sys.exit("run-api FAIL: a rank's error did not fail the call")
    except RuntimeError as e:
        if "boom on rank 1" not in str(e) or "exit code 1" not in str(e):
            sys.exit(f"run-api FAIL: the error does not say what failed: {e}")
    try:
        got = horovod.run(vanish, np=2)
        sys.exit(f"run-api FAIL: a rank without a return value went unnoticed: {got}")
    except RuntimeError as e:
        if "without the return values of ranks [1]" not in str(e):
            sys.exit(f"run-api FAIL: the error does not name the rank: {e}")
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
    print("run-api ok: values of 3 ranks, arguments of 500 KB and 1.5 MB, a failing rank, a missing value, refusals", flush=True)


if __name__ == "__main__":
    main()
