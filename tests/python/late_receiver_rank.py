"""One rank of test_finalize: rank 0 posts K nonblocking sends to rank 1 (16-22 bytes, every 97th
100 KB: a rendezvous), waits for them, then ends ("shutdown": hoop.shutdown() first; "exit":
the interpreter's exit alone). Rank 1 starts receiving 100 ms later and checks every message."""
import sys
import time

import numpy as np

import hoop


def size_of(i):
    return 100000 if i % 97 == 96 else 16 + i % 7


def main(k, mode):
    hoop.init()
    if hoop.rank() == 0:
        msgs = [np.full(size_of(i), i % 251, np.uint8) for i in range(k)]
        for r in [hoop.isend(m, 1, tag=5) for m in msgs]:
            r.wait()
        if mode == "shutdown":
            hoop.shutdown()
        print("late-receiver rank 0 sent", k)
        return
    time.sleep(0.1)
    buf = np.zeros(100000, np.uint8)
    for i in range(k):
        info = hoop.recv(buf, 0, tag=5)
        n = info[2]
        if n != size_of(i) or not (buf[:n] == i % 251).all():
            raise AssertionError(f"message {i}: {n} bytes, want {size_of(i)} of {i % 251}")
    print("late-receiver rank 1 got", k)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
