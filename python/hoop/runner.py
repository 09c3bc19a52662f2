"""hoop.run: Horovod's programmatic launcher (horovod.run) over hooprun.

run(func, args, kwargs, num_proc, ...) starts a hooprun job whose every rank calls
func(*args, **kwargs) and returns the list of their return values, in rank order. The function
travels pickled: by reference where it is defined at the top level of a module (a function of the
calling script is found by running that script in each rank as multiprocessing's "spawn" does,
under the name __mp_main__, so its `if __name__ == "__main__":` part does not run again); by value
where cloudpickle is importable (lambdas, closures, a notebook's functions). Each rank's return
value comes back pickled on its output, in lines the launcher takes out of what it prints; the
rest of every rank's output is printed as hooprun prints it ("[rank] line"). A rank that raises,
or a job that fails, raises RuntimeError with hooprun's last lines.
"""
import base64
import os
import pickle
import re
import secrets
import shutil
import subprocess
import sys
import tempfile

__all__ = ["run"]

# The call travels in the ranks' command lines, base64 in arguments of at most _PIECE characters
# (Linux takes 128 KiB a string), up to _INLINE characters in all (the whole command line and
# environment must stay within ARG_MAX, 2 MiB with the usual 8 MiB stack): so it reaches ranks on
# every host (hooprun's plan goes to a remote host's agent on ssh's stdin). A larger one goes in
# a file on this host, which only ranks on this host can read.
_PIECE = 96 * 1024
_INLINE = 1024 * 1024


def _hooprun():
    here = os.path.dirname(os.path.abspath(__file__))
    # A pip install (hoop/bin), the build tree (build/python/hoop -> build/bin), an install
    # (lib/python3.X/dist-packages/hoop -> bin), then PATH.
    for candidate in (os.path.join(here, "bin", "hooprun"), os.path.join(here, "..", "..", "bin", "hooprun"),
                      os.path.join(here, "..", "..", "..", "..", "bin", "hooprun")):
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("hooprun")
    if not found:
        raise RuntimeError("hoop.run: hooprun is not next to the hoop package nor on PATH")
    return found


def _pickled(func, args, kwargs):
    """The payload, and the path of the script to load first in each rank (or None)."""
    main = sys.modules.get("__main__")
    main_path = None
    if getattr(func, "__module__", None) == "__main__":
        main_path = getattr(main, "__file__", None)
    try:
        import cloudpickle
        return cloudpickle.dumps((func, tuple(args), dict(kwargs or {}))), None
    except ImportError:
        pass
    try:
        payload = pickle.dumps((func, tuple(args), dict(kwargs or {})))
    except (pickle.PicklingError, AttributeError, TypeError) as e:
        raise ValueError(f"hoop.run: func and its arguments must pickle ({e}); define func at the top level of a "
                         "module or script, or install cloudpickle for lambdas and closures") from None
    if getattr(func, "__module__", None) == "__main__" and not main_path:
        raise ValueError("hoop.run: func was defined interactively (no script file to load in the ranks); "
                         "define it in a file, or install cloudpickle")
    return payload, (os.path.abspath(main_path) if main_path else None)


def _flags(num_proc, hosts, hostfile, ssh_port, ssh_identity_file, ssh_args, start_timeout, output_filename, verbose,
           network_interface, min_num_proc, max_num_proc, host_discovery_script, reset_limit):
    flags = ["-np", str(int(num_proc))]
    for flag, value in (("-H", hosts), ("--hostfile", hostfile), ("--ssh-port", ssh_port),
                        ("--ssh-identity-file", ssh_identity_file), ("--ssh-args", ssh_args),
                        ("--start-timeout", start_timeout),
                        ("--output-filename", output_filename), ("--network-interface", network_interface),
                        ("--min-np", min_num_proc), ("--max-np", max_num_proc),
                        ("--host-discovery-script", host_discovery_script), ("--reset-limit", reset_limit)):
        if value is not None:
            flags += [flag, str(value)]
    if verbose:
        flags.append("--verbose")
    if hosts is None and hostfile is None and host_discovery_script is None:
        flags.append("--oversubscribe")  # one host, as many ranks as asked (horovod.run's localhost:num_proc)
    return flags


def run(func, args=(), kwargs=None, num_proc=None, min_num_proc=None, max_num_proc=None, slots=None,
        reset_limit=None, cooldown_range=None, hosts=None, hostfile=None, host_discovery_script=None,
        start_timeout=None, ssh_port=None, ssh_identity_file=None, ssh_args=None, disable_cache=None, output_filename=None,
        verbose=None, use_gloo=None, use_mpi=None, mpi_args=None, network_interface=None, network_interfaces=None,
        executable=None, np=None, min_np=None, max_np=None):
    """Runs func(*args, **kwargs) on every rank of a new hooprun job and returns their return
    values in rank order (horovod.run's signature and meaning). num_proc (or np): the rank count;
    hosts ("host1:2,host2:4"), hostfile, ssh_port, ssh_identity_file, ssh_args (hoop's own: more
    arguments for ssh, one string), start_timeout, output_filename, verbose, network_interface(s)
    and the elastic min_num_proc, max_num_proc, host_discovery_script and reset_limit become
    hooprun's flags; executable is the Python to run (default: this one, at the same path on every
    host). Every rank gets this environment (as horovod.run gives it; _NOT_FORWARDED is left out). use_gloo, use_mpi and disable_cache are taken and change nothing (hoop has
    its own transports and no start-up checks to cache); slots, cooldown_range and mpi_args are
    refused."""
    for name, value in (("slots", slots), ("cooldown_range", cooldown_range), ("mpi_args", mpi_args)):
        if value is not None:
            raise ValueError(f"hoop.run: {name}= has no hooprun counterpart (hosts and their slots come from "
                             "hosts=, hostfile= or the discovery script's 'host:slots' lines)")
    num_proc = num_proc if num_proc is not None else np
    if num_proc is None:
        num_proc = 1 if hosts is None and hostfile is None and host_discovery_script is None else None
    if network_interfaces and not network_interface:
        network_interface = network_interfaces if isinstance(network_interfaces, str) else network_interfaces[0]
    payload, main_path = _pickled(func, args, kwargs)
    token = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="hoop-run-") as tmp:
        # The caller's argv and folder go along, as multiprocessing's spawn sends them: a script
        # that reads its arguments at the top level reads the caller's again when a rank loads it.
        blob = pickle.dumps((main_path, payload, list(sys.argv), os.getcwd()))
        text = base64.b64encode(blob).decode()
        if len(text) <= _INLINE:
            where = ["b64"] + [text[i:i + _PIECE] for i in range(0, len(text), _PIECE)]
        else:
            if hosts is not None or hostfile is not None or host_discovery_script is not None:
                raise ValueError(f"hoop.run: the function and its arguments take {len(blob)} bytes pickled; "
                                 f"over {_INLINE * 3 // 4} they cannot go in the ranks' command lines, "
                                 "and ranks on other hosts cannot read a file on this one: pass large data "
                                 "by path (a file every host has) or build it inside the function")
            where = [os.path.join(tmp, "payload")]
            with open(where[0], "wb") as f:
                f.write(blob)
        flags = _flags(num_proc if num_proc is not None else 0, hosts, hostfile, ssh_port, ssh_identity_file,
                       ssh_args, start_timeout, output_filename, verbose, network_interface,
                       min_num_proc if min_num_proc is not None else min_np,
                       max_num_proc if max_num_proc is not None else max_np, host_discovery_script, reset_limit)
        if num_proc is None:
            flags = flags[2:]
        command = [_hooprun()] + flags + [executable or sys.executable, "-m", "hoop._run_worker", token, *where]
        results = _collect(command, token)
    elastic = min_num_proc is not None or min_np is not None or host_discovery_script is not None
    missing = [r for r in range(num_proc or 0) if r not in results]
    if missing and not elastic:  # an elastic job's ranks may be fewer at its end
        raise RuntimeError(f"hoop.run: the job ended without the return values of ranks {missing} "
                           f"(got {sorted(results)})")
    return [results[r] for r in sorted(results)]


# Not sent to the ranks on other hosts: what horovod.run leaves out (shell functions, OLDPWD,
# *_SECRET_KEY), what describes this host or shell only, and what hooprun sets for each rank.
_NOT_FORWARDED = re.compile(r"BASH_FUNC_.*|OLDPWD|PWD|SHLVL|_|HOSTNAME|SSH_.*|.*_SECRET_KEY|HOOP_JOIN|HOOP_RANK|"
                            r"HOOP_SIZE|HOOP_(LOCAL|CROSS)_(RANK|SIZE)|HOOP_STORE|HOOP_JOB_TOKEN|RANK|WORLD_SIZE|"
                            r"LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT")


def _forwarded(env):
    """hooprun's -x flags that give every rank, on every host, this environment (as horovod.run
    does): by name only, so values stay off command lines."""
    flags = []
    for name in sorted(env):
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) and not _NOT_FORWARDED.fullmatch(name):
            flags += ["-x", name]
    return flags


def _collect(command, token):
    env = dict(os.environ)
    package_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = package_root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    command = command[:1] + _forwarded(env) + command[1:]
    # hooprun's prefix is "[rank] " on one host and "[host:rank] " across hosts.
    marker = re.compile(r"^(?:\[(?:[^\]\s]*:)?\d+\] )?HOOP-RUN-RESULT " + token + r" (\d+) (\d+) (\d+) (\S*)$")
    parts, results, tail = {}, {}, []
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True,
                            bufsize=1)
    try:
        for line in proc.stdout:
            m = marker.match(line.rstrip("\n"))
            if m:
                rank, i, n = int(m.group(1)), int(m.group(2)), int(m.group(3))
                got = parts.setdefault(rank, {})
                got[i] = m.group(4)
                if len(got) == n:
                    results[rank] = pickle.loads(base64.b64decode("".join(got[k] for k in range(n))))
                    del parts[rank]
                continue
            sys.stdout.write(line)
            sys.stdout.flush()
            tail = (tail + [line.rstrip("\n")])[-20:]
        code = proc.wait()
    except BaseException:
        proc.terminate()
        proc.wait()
        raise
    if code != 0:
        raise RuntimeError(f"hoop.run: the job failed (hooprun exit code {code}):\n" + "\n".join(tail))
    return results
