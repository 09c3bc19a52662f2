"""One rank of a hoop.run job (runner.py): python -m hoop._run_worker TOKEN PAYLOAD...

PAYLOAD is "b64" followed by the pickled (script path, pickled call, argv, folder) in base64,
in pieces (one argument each), or a file on the launching host holding them.
The calling script, where func came from it, is run first under the name __mp_main__ and stands
in for __main__ (as multiprocessing's "spawn" does), so pickle finds func there; sys.argv and the
working folder are the caller's while it runs, so a script that reads its arguments at the top
level reads them again. The call's return
value is printed pickled in marker lines, which the launcher takes out of the output.
"""
import base64
import os
import pickle
import runpy
import sys
import types

_PART = 60000  # characters of the result per output line


def _load_main(path):
    module = types.ModuleType("__mp_main__")
    module.__dict__.update(runpy.run_path(path, run_name="__mp_main__"))
    sys.modules["__main__"] = sys.modules["__mp_main__"] = module


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: python -m hoop._run_worker TOKEN PAYLOAD... (hoop.run starts it)")
    token, where = sys.argv[1], sys.argv[2:]
    if where[0] == "b64":
        blob = base64.b64decode("".join(where[1:]))
    else:
        try:
            with open(where[0], "rb") as f:
                blob = f.read()
        except FileNotFoundError:
            import socket
            sys.exit(f"hoop.run: rank {os.environ.get('HOOP_RANK', '?')} on {socket.gethostname()}: the call's "
                     f"file {where[0]} is not on this host (hoop.run writes calls over 768 KiB pickled on the "
                     "launching host only)")
    main_path, payload, argv, cwd = pickle.loads(blob)
    sys.argv = argv
    if os.path.isdir(cwd):
        os.chdir(cwd)
    if main_path:
        sys.path.insert(0, os.path.dirname(main_path))
        _load_main(main_path)
    func, args, kwargs = pickle.loads(payload)
    result = func(*args, **kwargs)
    import hoop  # the rank now, if func left hoop initialized (an elastic job may have renumbered it)
    rank = hoop.rank() if hoop.is_initialized() else int(os.environ.get("HOOP_RANK", "0"))
    text = base64.b64encode(pickle.dumps(result)).decode()
    parts = [text[i:i + _PART] for i in range(0, len(text), _PART)] or [""]
    sys.stdout.flush()
    for i, part in enumerate(parts):  # hooprun passes long lines on in pieces: keep each well short
        print(f"HOOP-RUN-RESULT {token} {rank} {i} {len(parts)} {part}", flush=True)


if __name__ == "__main__":
    main()
