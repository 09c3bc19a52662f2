"""hoop for Python: collectives and point-to-point on NumPy arrays and other buffers.

    import numpy as np, hoop
    hoop.init()                          # hooprun's, mpirun's, Slurm's or torchrun's environment
    x = np.arange(4, dtype=np.float32)
    y = hoop.allreduce(x)                # a new array: the sum over ranks
    hoop.allreduce(x, out=x)             # in place
    r = hoop.iallreduce(x)               # nonblocking: r.wait() gives the result
    hoop.shutdown()

Every function takes the communicator as `comm=` (default: the one hoop.init() made; split()
and dup() make others). Inputs are anything with the buffer protocol (NumPy arrays, bytearray,
memoryview, array.array), read as NumPy arrays; outputs are new NumPy arrays unless `out=` names
one (C-contiguous, writable, the input's dtype). Element types: uint8, int8, int16, uint16,
int32, uint32, int64, uint64, bool, float16, float32, float64; bfloat16 given as uint16 with dtype=hoop.BF16, and the 8-bit
floats given as uint8 with dtype=hoop.F8E4M3 or hoop.F8E5M2 (hoop.dtypes() lists every one, with
the ops it takes). Failures
raise hoop.HoopError subclasses whose message names the rank, the call and the cause; a bad
call (hoop.InvalidArgumentError, also a ValueError) sends nothing.
"""

import numpy as _np

from . import _hoop
from ._hoop import (  # noqa: F401  (the package's names)
    ANY_SOURCE, AVG, BAND, BF16, BOOL, BOR, BXOR, F8E4M3, F8E5M2, F16, F32, F64, I8, I16, I32, I64, MAX, MIN, PROD,
    SUM, U8, U16, U32, U64, UNDEFINED,
    AbortedError, Comm, HoopError, InternalError, InvalidArgumentError, MismatchError, PermissionError, Request,
    RevokedError, TimeoutError, UnavailableError, UnimplementedError, compression_error_factor)

__all__ = [
    "init", "shutdown", "is_initialized", "world", "rank", "size", "local_rank", "local_size", "local_device",
    "locality", "allreduce", "iallreduce", "broadcast", "ibroadcast", "allgather", "iallgather", "allgatherv",
    "reduce_scatter", "ireduce_scatter", "reduce", "ireduce", "gather", "igather", "scatter", "iscatter",
    "alltoall", "ialltoall", "barrier", "ibarrier", "send", "isend", "recv", "irecv", "split", "dup", "join", "version",
    "dtypes", "run",
    "Comm", "Request", "HoopError", "SUM", "AVG", "MIN", "MAX", "PROD", "BAND", "BOR", "BXOR", "NONE", "FP16",
    "BF16_WIRE", "AUTO",
]

# Wire compression for allreduce (compression=): how f32/f64 sum/avg data travels.
NONE = _hoop.COMPRESSION_NONE
FP16 = _hoop.COMPRESSION_FP16
BF16_WIRE = _hoop.COMPRESSION_BF16
AUTO = _hoop.COMPRESSION_AUTO

_OPS = {"sum": SUM, "avg": AVG, "average": AVG, "mean": AVG, "min": MIN, "max": MAX, "prod": PROD,
        "product": PROD, "band": BAND, "bor": BOR, "bxor": BXOR}
_COMPRESSIONS = {None: _hoop.COMPRESSION_DEFAULT, "none": NONE, "fp16": FP16, "bf16": BF16_WIRE, "auto": AUTO}

_world = None  # the communicator hoop.init() made (the process's default, as in Horovod)

__version__ = ".".join(str(v) for v in _hoop.version())  # the loaded library's, "X.Y.Z"


def version():
    """The loaded library's version, (major, minor, patch)."""
    return _hoop.version()


def dtypes():
    """hoop's element types, one dict each from the library's dtype table: value (the dtype=
    argument, hoop.F32 and so on), name ("f32"), c_name ("F32"), size in bytes, float, the
    numpy and torch names ("" where there is none) and the ops that reduce it ("sum", ...)."""
    return [dict(row) for row in _hoop.DTYPES]


def init():
    """Joins the job the environment describes; returns the world communicator.

    hooprun sets HOOP_RANK, HOOP_SIZE and HOOP_STORE; under mpirun (OMPI_COMM_WORLD_*) or Slurm
    (SLURM_PROCID, SLURM_NTASKS) set HOOP_STORE=tcp://HOST:PORT (rank 0 serves it). Under
    torchrun itself (RANK, WORLD_SIZE, and TORCHELASTIC_USE_AGENT_STORE=True) the ranks meet
    through torchrun's own store at MASTER_ADDR:MASTER_PORT, where hoop was built with its
    PyTorch backend; otherwise with torchrun's variables rank 0 serves a store at
    MASTER_PORT + 1. HOOP_STORE, where set, is used instead of either. Alone (none of these), a job
    of one. A second call returns the same communicator.
    """
    global _world
    if _world is None or _world.freed:
        _world = _join_torchrun_store() or _hoop.init_from_env()
    return _world


def join():
    """A new process joins a running job (a replacement for a lost rank, say): admitted through
    the job's store (HOOP_STORE, HOOP_JOB_TOKEN) by the next Comm.grow its ranks call; returns the
    grown communicator, which becomes this process's world (hoop.rank(), hoop.allreduce(...)).
    Waits up to HOOP_TIMEOUT to be admitted."""
    global _world
    if _world is not None and not _world.freed:
        raise InvalidArgumentError("hoop.join: this process is in a job already (hoop.init() or hoop.join())")
    _world = _hoop.init_join()
    return _world


_torchrun_joins = 0  # hoop.init() calls that met through torchrun's store: each its own keys


def _join_torchrun_store():
    """The world, met through the store of the torchrun agent that started this process; None
    where that is not the case (or hoop has no PyTorch backend here), for init_from_env. Serving
    a store of hoop's at MASTER_PORT + 1 instead may find that port taken (it is any port, and
    the job's own connections use ports near it), which this avoids."""
    global _torchrun_joins
    import os
    env = os.environ
    if (env.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or "HOOP_RANK" in env or "HOOP_STORE" in env
            or not all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"))):
        return None
    try:
        from . import _c10d
        import torch.distributed as dist
    except ImportError:
        return None
    try:
        rank, size, port = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["MASTER_PORT"])
    except ValueError:
        return None  # init_from_env names the variable
    store = dist.PrefixStore(f"hoop/init/{_torchrun_joins}/",
                             dist.TCPStore(env["MASTER_ADDR"], port, is_master=False))
    _torchrun_joins += 1
    return _hoop._adopt(*_c10d.init_world(store, rank, size, _route_address()))


def _route_address():
    """The address peers reach this rank at: "" where HOOP_HOST is set (hoop reads it itself),
    else this host's address on the route to MASTER_ADDR, else "" (hoop's default)."""
    import os
    import socket
    if os.environ.get("HOOP_HOST"):
        return ""
    addr = os.environ.get("MASTER_ADDR")
    if not addr:
        return ""
    try:
        family, _, _, _, sockaddr = socket.getaddrinfo(addr, None, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((sockaddr[0], int(os.environ.get("MASTER_PORT", "29500"))))
            return s.getsockname()[0]
    except (OSError, ValueError):
        return ""


def _replace_world(comm):
    """Makes comm the process's world (hoop.torch.elastic, after a shrink or a grow); the old one
    is the caller's to free."""
    global _world
    _world = comm


def shutdown():
    """Frees the world communicator (others made by split/dup stay until freed)."""
    global _world
    if _world is not None:
        w, _world = _world, None
        w.free()


def is_initialized():
    return _world is not None and not _world.freed


def world():
    """The communicator hoop.init() made (raises if it was not called)."""
    if _world is None or _world.freed:
        raise InvalidArgumentError("hoop: call hoop.init() first")
    return _world


def _comm(comm):
    return world() if comm is None else comm


def rank(comm=None):
    return _comm(comm).rank


def size(comm=None):
    return _comm(comm).size


def local_rank(comm=None):
    return _comm(comm).local_rank


def local_size(comm=None):
    return _comm(comm).local_size


def local_device(comm=None):
    """The GPU this rank should use: local rank mod the devices it sees (hoop_local_device)."""
    return _comm(comm).local_device


def locality(comm=None):
    """This rank's place on its host (CPUs it is bound to, its GPU and NICs), as a dict."""
    import json
    return json.loads(_comm(comm).locality())


def split(color, key=0, comm=None):
    """MPI_Comm_split on comm (a collective): a new Comm, or None for a negative color."""
    return _comm(comm).split(color, key)


def dup(comm=None):
    return _comm(comm).dup()


def _op(op):
    if isinstance(op, str):
        try:
            return _OPS[op.lower()]
        except KeyError:
            raise InvalidArgumentError(f"hoop: unknown reduction '{op}' (known: {', '.join(sorted(_OPS))})") from None
    return op


def _array(x, what):
    """x as a NumPy array sharing its memory (a buffer-protocol object through memoryview)."""
    if isinstance(x, _np.ndarray):
        return x
    try:
        return _np.asarray(memoryview(x))
    except TypeError:
        raise InvalidArgumentError(f"hoop: {what}: a {type(x).__name__} has no buffer "
                                   "(pass a NumPy array, bytearray, memoryview or array.array)") from None


def _input(x, what):
    a = _array(x, what)
    return a if a.flags.c_contiguous else _np.ascontiguousarray(a)


def _output(out, like_dtype, shape, what):
    if out is None:
        return _np.empty(shape, dtype=like_dtype)
    a = _array(out, what)
    if not a.flags.c_contiguous or not a.flags.writeable:
        raise InvalidArgumentError(f"hoop: {what}: out must be C-contiguous and writable")
    return a


def _rows(a):
    """Shape pieces for collectives that stack along the first dimension (as Horovod does)."""
    return (a.shape[0], a.shape[1:]) if a.ndim > 0 else (1, ())


def _blocks(a, ranks, call):
    n, rest = _rows(a)
    if n % ranks:
        raise InvalidArgumentError(f"hoop: {call}: the first dimension ({n}) does not split into {ranks} equal blocks")
    return n // ranks, rest


def _finish(out_obj, result):
    """What the caller gets: the out= object it passed, else the new array."""
    return result if out_obj is None else out_obj


# ---- the collectives. Each has a nonblocking form (i-prefixed) that returns a Request whose
# wait() gives the same result. `dtype=hoop.BF16` reads uint16 buffers as bfloat16.

def _allreduce(x, op, out, compression, comm, dtype, nonblocking):
    c = _comm(comm)
    a = _input(x, "allreduce")
    o = _output(out, a.dtype, a.shape, "allreduce")
    if isinstance(compression, str) or compression is None:
        if compression not in _COMPRESSIONS:
            raise InvalidArgumentError(f"hoop: unknown compression '{compression}' (known: none, fp16, bf16, auto)")
        compression = _COMPRESSIONS[compression]
    return c.allreduce(a, o, _op(op), compression, dtype, nonblocking)


def allreduce(x, op=SUM, *, out=None, compression=None, comm=None, dtype=-1):
    """The reduction of x over the ranks (op: hoop.SUM, AVG, MIN, MAX, PROD, BAND, BOR, BXOR or a
    name). compression: None (HOOP_COMPRESSION's setting), "none", "fp16", "bf16", "auto"."""
    res = _allreduce(x, op, out, compression, comm, dtype, False)
    return _finish(out, res)


def iallreduce(x, op=SUM, *, out=None, compression=None, comm=None, dtype=-1):
    return _allreduce(x, op, out, compression, comm, dtype, True)


def broadcast(x, root=0, *, out=None, comm=None, dtype=-1):
    """root's x on every rank: into out (default: a new array shaped like x; x itself is left
    alone). For in place, pass out=x."""
    return _broadcast(x, root, out, comm, dtype, False)


def ibroadcast(x, root=0, *, out=None, comm=None, dtype=-1):
    return _broadcast(x, root, out, comm, dtype, True)


def _broadcast(x, root, out, comm, dtype, nonblocking):
    c = _comm(comm)
    if out is None:
        o = _np.array(_array(x, "broadcast"), order="C", copy=True)
    else:
        o = _output(out, None, None, "broadcast")
        if o is not _array(x, "broadcast") and c.rank == root:
            src = _array(x, "broadcast")
            if src.size != o.size:
                raise InvalidArgumentError(f"hoop: rank {c.rank}: broadcast: out holds {o.size} elements, x {src.size}")
            o.reshape(-1)[...] = src.reshape(-1)
    res = c.broadcast(o, root, dtype, nonblocking)
    return res if nonblocking or out is None else out


def allgather(x, *, out=None, comm=None, dtype=-1):
    """Every rank's x stacked along the first dimension, rank order. Ranks whose first
    dimensions differ: allgatherv."""
    return _allgather(x, out, comm, dtype, False)


def iallgather(x, *, out=None, comm=None, dtype=-1):
    return _allgather(x, out, comm, dtype, True)


def _allgather(x, out, comm, dtype, nonblocking):
    c = _comm(comm)
    a = _input(x, "allgather")
    n, rest = _rows(a)
    o = _output(out, a.dtype, (c.size * n,) + rest, "allgather")
    res = c.allgather(a, o, dtype, nonblocking)
    return res if nonblocking else _finish(out, res)


def allgatherv(x, *, comm=None, dtype=-1):
    """allgather for first dimensions that differ between ranks (they are exchanged first; the
    other dimensions must agree)."""
    c = _comm(comm)
    a = _input(x, "allgatherv")
    n, rest = _rows(a)
    rows = _np.zeros(c.size, dtype=_np.int64)
    c.allgather(_np.array([n], dtype=_np.int64), rows, -1, False)
    per_row = int(_np.prod(rest, dtype=_np.int64)) if rest else 1
    o = _np.empty((int(rows.sum()),) + rest, dtype=a.dtype)
    c.allgatherv(a, o, [int(r) * per_row for r in rows], dtype, False)
    return o


def reduce_scatter(x, op=SUM, *, out=None, comm=None, dtype=-1):
    """The reduction of x over the ranks, split along the first dimension: rank r gets block r."""
    return _reduce_scatter(x, op, out, comm, dtype, False)


def ireduce_scatter(x, op=SUM, *, out=None, comm=None, dtype=-1):
    return _reduce_scatter(x, op, out, comm, dtype, True)


def _reduce_scatter(x, op, out, comm, dtype, nonblocking):
    c = _comm(comm)
    a = _input(x, "reduce_scatter")
    n, rest = _blocks(a, c.size, "reduce_scatter")
    o = _output(out, a.dtype, (n,) + rest, "reduce_scatter")
    res = c.reduce_scatter(a, o, _op(op), dtype, nonblocking)
    return res if nonblocking else _finish(out, res)


def reduce(x, op=SUM, root=0, *, out=None, comm=None, dtype=-1):
    """The reduction of x over the ranks, on root only (others get None)."""
    return _reduce(x, op, root, out, comm, dtype, False)


def ireduce(x, op=SUM, root=0, *, out=None, comm=None, dtype=-1):
    return _reduce(x, op, root, out, comm, dtype, True)


def _reduce(x, op, root, out, comm, dtype, nonblocking):
    c = _comm(comm)
    a = _input(x, "reduce")
    o = _output(out, a.dtype, a.shape, "reduce") if c.rank == root else None
    res = c.reduce(a, o, _op(op), root, dtype, nonblocking)
    return res if nonblocking else (None if o is None else _finish(out, res))


def gather(x, root=0, *, out=None, comm=None, dtype=-1):
    """Every rank's x stacked along the first dimension, on root only (others get None)."""
    return _gather(x, root, out, comm, dtype, False)


def igather(x, root=0, *, out=None, comm=None, dtype=-1):
    return _gather(x, root, out, comm, dtype, True)


def _gather(x, root, out, comm, dtype, nonblocking):
    c = _comm(comm)
    a = _input(x, "gather")
    n, rest = _rows(a)
    o = _output(out, a.dtype, (c.size * n,) + rest, "gather") if c.rank == root else None
    res = c.gather(a, o, root, dtype, nonblocking)
    return res if nonblocking else (None if o is None else _finish(out, res))


def scatter(x, root=0, *, out=None, comm=None, dtype=-1):
    """Block r of root's x (split along the first dimension) to rank r. Ranks other than root
    pass x=None and out= (the block's shape is theirs to know); root may omit out."""
    return _scatter(x, root, out, comm, dtype, False)


def iscatter(x, root=0, *, out=None, comm=None, dtype=-1):
    return _scatter(x, root, out, comm, dtype, True)


def _scatter(x, root, out, comm, dtype, nonblocking):
    c = _comm(comm)
    a = None
    if c.rank == root:
        a = _input(x, "scatter")
        n, rest = _blocks(a, c.size, "scatter")
        o = _output(out, a.dtype, (n,) + rest, "scatter")
    else:
        if out is None:
            raise InvalidArgumentError(f"hoop: rank {c.rank}: scatter: ranks other than the root need out=")
        o = _output(out, None, None, "scatter")
    res = c.scatter(a, o, root, dtype, nonblocking)
    return res if nonblocking else _finish(out, res)


def alltoall(x, *, out=None, comm=None, dtype=-1):
    """x split along the first dimension into one block per rank: block p goes to rank p; the
    result stacks the blocks received, rank order."""
    return _alltoall(x, out, comm, dtype, False)


def ialltoall(x, *, out=None, comm=None, dtype=-1):
    return _alltoall(x, out, comm, dtype, True)


def _alltoall(x, out, comm, dtype, nonblocking):
    c = _comm(comm)
    a = _input(x, "alltoall")
    _blocks(a, c.size, "alltoall")
    o = _output(out, a.dtype, a.shape, "alltoall")
    res = c.alltoall(a, o, dtype, nonblocking)
    return res if nonblocking else _finish(out, res)


def barrier(comm=None):
    _comm(comm).barrier(False)


def ibarrier(comm=None):
    return _comm(comm).barrier(True)


# ---- point-to-point: tags >= 0; recv's peer may be hoop.ANY_SOURCE.

def send(x, peer, tag=0, *, comm=None, dtype=-1):
    _comm(comm).send(_input(x, "send"), peer, tag, dtype, False)


def isend(x, peer, tag=0, *, comm=None, dtype=-1):
    return _comm(comm).send(_input(x, "send"), peer, tag, dtype, True)


def recv(out, peer=ANY_SOURCE, tag=0, *, comm=None, dtype=-1):
    """Receives into out (which may be longer than the message); returns (source, tag, count)."""
    _, info = _comm(comm).recv(_output(out, None, None, "recv"), peer, tag, dtype, False)
    return info


def irecv(out, peer=ANY_SOURCE, tag=0, *, comm=None, dtype=-1):
    """Request whose wait() returns (out, (source, tag, count))."""
    return _comm(comm).recv(_output(out, None, None, "recv"), peer, tag, dtype, True)


from .runner import run  # noqa: E402  (horovod.run's counterpart: a function on every rank of a new job)
