"""hoop.run across hosts (tests/launch/hooprun_ssh_test.cc runs it on test host 0 of network-
namespace hosts with sshd): python3 run_api_hosts_script.py HOSTS IDENTITY SSH_ARGS NP.

A function of this script on NP ranks spread over HOSTS returns each rank's host name, the sum of
the ranks (an allreduce across the hosts), what it saw of a variable set in the launcher's
environment, and 200 KB of its own (a return value that comes back in several lines); its
argument is 500 KB (in the ranks' command lines, in pieces). Every rank's value must come back,
in rank order, from the host hooprun placed it on. Prints "run-api-hosts ok" and the hosts.
"""
import hashlib
import os
import socket
import sys


def where(data):
    import numpy
    import hoop
    hoop.init()
    total = hoop.allreduce(numpy.array([float(hoop.rank())]), op="sum").tolist()
    return {"rank": hoop.rank(), "size": hoop.size(), "host": socket.gethostname(), "sum": total,
            "var": os.environ.get("RUN_API_HOSTS_TEST_VAR"), "arg": hashlib.sha256(data).hexdigest(),
            "mine": bytes([hoop.rank()]) * 200000}


def main():
    hosts, identity, ssh_args, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    import hoop as horovod
    os.environ["RUN_API_HOSTS_TEST_VAR"] = "from-the-launcher"
    data = os.urandom(500000)
    out = horovod.run(where, args=(data,), np=n, hosts=hosts, ssh_identity_file=identity, ssh_args=ssh_args,
                      start_timeout=20)
    if len(out) != n:
        sys.exit(f"run-api-hosts FAIL: {len(out)} values for {n} ranks: {[o.get('rank') for o in out]}")
    for r, o in enumerate(out):
        got = {k: v for k, v in o.items() if k != "mine"}
        want = {"rank": r, "size": n, "sum": [float(n * (n - 1) // 2)], "var": "from-the-launcher",
                "arg": hashlib.sha256(data).hexdigest()}
        if any(got.get(k) != v for k, v in want.items()) or o["mine"] != bytes([r]) * 200000:
            sys.exit(f"run-api-hosts FAIL: rank {r} returned {got} (wanted {want})")
    print("run-api-hosts ok: " + " ".join(f"{o['rank']}@{o['host']}" for o in out), flush=True)


if __name__ == "__main__":
    main()
