"""The Horovod-style API of hoop.torch (`import hoop.torch as hvd` in a Horovod script).

init() joins the job from the environment (hooprun's, mpirun's, Slurm's or torchrun's, as
hoop.init()) and starts hoop's tensor fusion runtime on a duplicate of the world communicator:
allreduce, broadcast and (equal shapes) allgather go through it by name, from the tensor's own
memory (CPU, contiguous: no copy), negotiated, fused and run by the runtime's thread; allgather
with first dimensions that differ, alltoall, barrier, join and the object calls use the world
communicator directly. Handles are ints: poll(handle), synchronize(handle) -> the output.

DistributedOptimizer wraps an optimizer: a hook on each parameter's gradient accumulator submits
the gradient to the runtime as soon as backward has produced it (after every
backward_passes_per_step-th pass), in place; step() waits for them (skip_synchronize() after an
explicit synchronize(), for gradient clipping). Compression.fp16/bf16 is hoop's wire compression
(f32/f64 sum and average; the tensor stays in its own dtype), not a cast.

CUDA tensors go to the runtime by address (allreduce, broadcast, allgather of equal first
dimensions: fused on the device, after the work queued on the current stream before the call,
with no host wait at the call); allgather of uneven first dimensions, alltoall and reducescatter
stage them through host memory.

Differences from Horovod, all stated in errors where they apply: no process
sets or Adasum; join() waits for every rank and returns the last to join, but does not stand in
for the allreduces of ranks that joined early (give every rank the same number of steps).
"""
import pickle
import time

import numpy as np
import torch

import hoop
from hoop import _hoop

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "allreduce",
           "allreduce_", "allreduce_async", "allreduce_async_", "broadcast", "broadcast_", "broadcast_async",
           "broadcast_async_", "allgather", "allgather_async", "alltoall", "alltoall_async", "poll", "synchronize",
           "join", "barrier", "broadcast_object", "allgather_object", "broadcast_parameters",
           "broadcast_optimizer_state", "DistributedOptimizer", "Compression", "Average", "Sum", "Min", "Max",
           "Product", "cross_rank", "cross_size", "is_homogeneous", "mpi_built", "gloo_built", "nccl_built",
           "cuda_built", "rocm_built", "ccl_built", "ddl_built", "mpi_enabled", "gloo_enabled",
           "mpi_threads_supported", "reducescatter", "reducescatter_async", "grouped_allreduce",
           "grouped_allreduce_async", "grouped_allreduce_", "grouped_allreduce_async_", "grouped_allgather",
           "grouped_allgather_async", "grouped_reducescatter", "grouped_reducescatter_async", "start_timeline",
           "stop_timeline", "SyncBatchNorm"]


class _Op:
    def __init__(self, name, code):
        self.name, self.code = name, code

    def __repr__(self):
        return f"hoop.torch.{self.name}"


Average = _Op("Average", hoop.AVG)
Sum = _Op("Sum", hoop.SUM)
Min = _Op("Min", hoop.MIN)
Max = _Op("Max", hoop.MAX)
Product = _Op("Product", hoop.PROD)


class _Wire:
    def __init__(self, name, code):
        self.name, self.code = name, code

    def __repr__(self):
        return f"hoop.torch.Compression.{self.name}"


class Compression:
    """How allreduced tensors travel: hoop's wire compression (f32/f64 sum and average), with the
    error bound of hoop.compression_error_factor; the tensor itself keeps its dtype."""
    none = _Wire("none", _hoop.COMPRESSION_NONE)
    fp16 = _Wire("fp16", _hoop.COMPRESSION_FP16)
    bf16 = _Wire("bf16", _hoop.COMPRESSION_BF16)


# torch dtype -> hoop dtype, from the library's dtype table (the fp8s where this torch has them).
_DTYPES = {getattr(torch, row["torch"]): row["value"] for row in hoop.dtypes()
           if row["torch"] and hasattr(torch, row["torch"])}
# The ones NumPy has no type for (bf16, the fp8s): their bytes travel as unsigned integers of
# their size, read as the hoop dtype.
_BITS = {1: torch.uint8, 2: torch.int16}
def _numpy_has(name):
    try:
        np.dtype(name)
        return True
    except TypeError:
        return False


_NOT_NUMPY = {getattr(torch, row["torch"]): row for row in hoop.dtypes()
              if row["torch"] and hasattr(torch, row["torch"]) and not _numpy_has(row["numpy"])}


class _State:
    def __init__(self, world=None, deterministic=None):
        self.world = world if world is not None else hoop.init()
        if deterministic is not None:
            self.world.deterministic = bool(deterministic)
        self.fusion_comm = self.world.dup()  # inherits the deterministic mode
        self.fusion = _hoop.Fusion(self.fusion_comm)
        self.handles = {}  # handle -> (kind, token, output, keep, finish)
        self.next_handle = 1
        self.names = {}  # unnamed calls: a counter per kind, the same on every rank that calls in order
        # Every rank's local rank and local size, once: Horovod's cross rank is this rank's place
        # among the ranks with its local rank (one per host that has one), cross size their count.
        mine = np.array([self.world.local_rank, self.world.local_size], np.int64)
        every = np.zeros(2 * self.world.size, np.int64)
        self.world.allgather(mine, every, -1, False)
        local = every[0::2]
        self.cross_size = int((local == self.world.local_rank).sum())
        self.cross_rank = int((local[:self.world.rank] == self.world.local_rank).sum())
        self.homogeneous = bool((every[1::2] == every[1]).all())


_state = None


def init(comm=None, deterministic=None):
    """Joins the job (a second call does nothing). comm is accepted for Horovod's signature and
    must be None: the job comes from the environment. deterministic=True (every rank alike; None:
    HOOP_DETERMINISTIC decides) makes every allreduce, fused or not, give each element the bits of
    the left fold over the ranks in rank order, whatever fuses beside it (hoop_comm_set_deterministic)."""
    global _state
    if comm is not None:
        raise ValueError("hoop.torch.init: comm= is not supported; the job comes from the environment")
    if _state is None:
        _state = _State(deterministic=deterministic)


def _rebuild(world):
    """The job's ranks changed (hoop.torch.elastic): stops the fusion runtime of the old world (an
    error from a lost rank is expected, and dropped), frees the old communicators, and starts
    again on `world` as init() does, which every rank of it does alike (a newcomer in its
    init())."""
    global _state
    old, _state = _state, None
    if old is not None:
        try:
            old.fusion.stop()
        except hoop.HoopError:
            pass
        for comm in (old.fusion_comm, old.world):
            if comm is not world and not comm.freed:
                comm.free()
    hoop._replace_world(world)
    _state = _State(world)


def shutdown():
    """Stops the fusion runtime (on every rank: call it on every rank) and frees the communicators."""
    global _state
    if _state is None:
        return
    s, _state = _state, None
    s.fusion.stop()
    s.fusion_comm.free()
    hoop.shutdown()


def is_initialized():
    return _state is not None


def _s():
    if _state is None:
        raise ValueError("hoop.torch: call hoop.torch.init() first (Horovod's hvd.init())")
    return _state


def size():
    return _s().world.size


def rank():
    return _s().world.rank


def local_size():
    return _s().world.local_size


def local_rank():
    return _s().world.local_rank


def cross_rank():
    """This rank's place among the ranks with its local rank (Horovod's: its host's index)."""
    return _s().cross_rank


def cross_size():
    """How many ranks share this rank's local rank (Horovod's: the number of such hosts)."""
    return _s().cross_size


def is_homogeneous():
    """Whether every host runs the same number of ranks."""
    return _s().homogeneous


# Horovod's build queries. hoop is its own transport: no MPI, Gloo, NCCL, oneCCL, DDL or ROCm
# under it. CUDA tensors are taken where libhoop was built with CUDA (cuda_built).
def mpi_built():
    return False


def gloo_built():
    return False


def nccl_built():
    return False


def cuda_built():
    """Whether libhoop was built with CUDA (then CUDA tensors are taken; a device must be there)."""
    import json
    why = json.loads(_s().world.locality()).get("gpu_why") or ""
    return "built without CUDA" not in why


def rocm_built():
    return False


def ccl_built():
    return False


def ddl_built():
    return False


def mpi_enabled():
    return False


def gloo_enabled():
    return False


def mpi_threads_supported():
    return False


def start_timeline(file_path, mark_cycles=False):
    """Horovod starts a timeline at run time; hoop's is chosen at start-up."""
    raise NotImplementedError("hoop.torch.start_timeline: hoop's timeline is set when the job starts: "
                              "HOOP_TIMELINE=FILE (hooprun --timeline-filename FILE); it cannot be started later")


def stop_timeline():
    raise NotImplementedError("hoop.torch.stop_timeline: hoop's timeline runs from start-up to shutdown "
                              "(HOOP_TIMELINE, hooprun --timeline-filename)")


def _dtype(t, call):
    try:
        return _DTYPES[t.dtype]
    except KeyError:
        raise TypeError(f"hoop.torch: rank {rank()}: {call}: tensors of {t.dtype} are not supported "
                        f"({', '.join(str(d) for d in _DTYPES)})") from None


def _check(t, call):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"hoop.torch: rank {rank()}: {call}: expected a tensor, got {type(t).__name__}")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"hoop.torch: rank {rank()}: {call}: a tensor on {t.device}; hoop takes CPU and CUDA tensors")
    if t.is_sparse:
        raise ValueError(f"hoop.torch: rank {rank()}: {call}: sparse tensors are not supported")
    return _dtype(t, call)


def _ready(*tensors):
    """CUDA tensors go to the fusion runtime by address; the runtime queues its device work
    (packing, copies, unpacking) on CUDA's legacy default stream, from its own thread, some time
    after the call. The work queued on the current stream before the call (what computed them,
    the copies made for the call, earlier users of freshly allocated memory) must come first.
    PyTorch's default stream is that legacy stream, so there it does already; any other current
    stream is waited for by the default stream on the GPU (an event, as Horovod's ready events),
    so the caller never blocks here. The results are complete when the handle is (the runtime
    waits for its own device work before it reports)."""
    for t in tensors:
        if t.is_cuda:
            current = torch.cuda.current_stream(t.device)
            default = torch.cuda.default_stream(t.device)
            if current != default:
                default.wait_stream(current)
            return


def _host(t):
    """The calls that go through NumPy (allgather of uneven first dimensions, alltoall,
    reducescatter) take a CUDA tensor staged through host memory."""
    return t.cpu() if t.is_cuda else t


def _name(kind, name):
    s = _s()
    if name is not None:
        return f"{kind}.{name}"
    s.names[kind] = s.names.get(kind, 0) + 1
    return f"{kind}.noname.{s.names[kind]}"


def _register(kind, token, output, keep, finish=None):
    s = _s()
    h = s.next_handle
    s.next_handle += 1
    s.handles[h] = (kind, token, output, keep, finish)
    return h


def _dense(t):
    return t if t.is_contiguous() else t.contiguous()


def poll(handle):
    """Whether the operation behind handle has completed (synchronize then returns at once)."""
    kind, token, _, _, _ = _s().handles[handle]
    if kind == "group":
        return all(poll(h) for h in token)
    return _s().fusion.test(token) if kind == "fusion" else token.test()


def synchronize(handle):
    """Waits for the operation behind handle and returns its output."""
    s = _s()
    if handle not in s.handles:
        raise ValueError(f"hoop.torch: rank {rank()}: synchronize: unknown or finished handle {handle}")
    kind, token, output, keep, finish = s.handles.pop(handle)
    if kind == "group":
        return [synchronize(h) for h in token]
    if kind == "fusion":
        s.fusion.wait(token)
    elif token is not None:
        token.wait()
    return finish() if finish else output


# ---- allreduce

def _op_of(average, op, call):
    if average is not None:
        if op is not None:
            raise ValueError(f"hoop.torch: {call}: give op= or the older average=, not both")
        return Average if average else Sum
    op = Average if op is None else op
    if not isinstance(op, _Op):
        raise ValueError(f"hoop.torch: {call}: op must be hoop.torch.Average, Sum, Min, Max or Product, not {op!r}")
    return op


def _allreduce_into(tensor, output, name, op, prescale, postscale, compression, call):
    dt = _check(tensor, call)
    src = _dense(tensor)
    dst = output if output.is_contiguous() else output.contiguous()
    wire = (compression or Compression.none).code
    _ready(src, dst)
    token = _s().fusion.allreduce(_name("allreduce", name), src.data_ptr(), dst.data_ptr(), src.numel(), dt,
                                  op.code, wire, float(prescale), float(postscale))
    finish = None
    if dst is not output:
        def finish():
            output.copy_(dst)
            return output
    return _register("fusion", token, output, (src, dst), finish)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    compression=Compression.none):
    op = _op_of(average, op, "allreduce_async")
    return _allreduce_into(tensor, torch.empty_like(tensor, memory_format=torch.contiguous_format), name, op,
                           prescale_factor, postscale_factor, compression, "allreduce_async")


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     compression=Compression.none):
    op = _op_of(average, op, "allreduce_async_")
    return _allreduce_into(tensor, tensor, name, op, prescale_factor, postscale_factor, compression,
                           "allreduce_async_")


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0):
    """The reduction of tensor over the ranks (default: their average), as a new tensor."""
    return synchronize(allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor, compression))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               compression=Compression.none):
    """allreduce in place."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, compression))


# ---- broadcast

def broadcast_async_(tensor, root_rank, name=None):
    dt = _check(tensor, "broadcast_async_")
    dst = _dense(tensor)
    _ready(dst)
    token = _s().fusion.broadcast(_name("broadcast", name), dst.data_ptr(), dst.data_ptr(), dst.numel(), dt,
                                  root_rank)
    finish = None
    if dst is not tensor:
        def finish():
            tensor.copy_(dst)
            return tensor
    return _register("fusion", token, tensor, (dst,), finish)


def broadcast_async(tensor, root_rank, name=None):
    return broadcast_async_(tensor.clone(memory_format=torch.contiguous_format), root_rank, name)


def broadcast(tensor, root_rank, name=None):
    """root_rank's tensor on every rank, as a new tensor."""
    return synchronize(broadcast_async(tensor, root_rank, name))


def broadcast_(tensor, root_rank, name=None):
    """broadcast in place."""
    return synchronize(broadcast_async_(tensor, root_rank, name))


# ---- allgather and alltoall (first dimensions may differ between ranks)

def _numpy(t):
    """t's memory as a NumPy array and the hoop dtype to read it as (bf16 and the fp8s have no
    NumPy type)."""
    row = _NOT_NUMPY.get(t.dtype)
    if row is not None:
        return t.view(_BITS[row["size"]]).numpy(), row["value"]
    return t.numpy(), -1


def allgather_async(tensor, name=None):
    dt = _check(tensor, "allgather_async")
    s = _s()
    src = _dense(tensor)
    rows = src.shape[0] if src.dim() > 0 else 1
    counts = np.zeros(s.world.size, np.int64)
    s.world.allgather(np.array([rows], np.int64), counts, -1, False)  # every rank's first dimension
    rest = tuple(src.shape[1:]) if src.dim() > 0 else ()
    out = torch.empty((int(counts.sum()),) + rest, dtype=src.dtype, device=src.device)
    if (counts == rows).all():
        _ready(src, out)
        token = s.fusion.allgather(_name("allgather", name), src.data_ptr(), out.data_ptr(), src.numel(), dt)
        return _register("fusion", token, out, (src,))
    per_row = int(np.prod(rest, dtype=np.int64)) if rest else 1
    host_src, host_out = _host(src), _host(out)
    sa, override = _numpy(host_src)
    oa, _ = _numpy(host_out)
    req = s.world.allgatherv(sa.reshape(-1), oa.reshape(-1), [int(c) * per_row for c in counts], override, True)
    return _register("request", req, out, (host_src,), None if host_out is out else lambda: out.copy_(host_out))


def allgather(tensor, name=None):
    """Every rank's tensor concatenated along the first dimension (which may differ), rank order."""
    return synchronize(allgather_async(tensor, name))


def alltoall_async(tensor, splits=None, name=None):
    _check(tensor, "alltoall_async")
    s = _s()
    n = s.world.size
    src = _dense(tensor)
    rows = src.shape[0] if src.dim() > 0 else 1
    if splits is None:
        if rows % n:
            raise ValueError(f"hoop.torch: rank {rank()}: alltoall: the first dimension ({rows}) does not split "
                             f"into {n} equal parts; pass splits=")
        send_rows = np.full(n, rows // n, np.int64)
    else:
        send_rows = np.asarray(splits.tolist() if isinstance(splits, torch.Tensor) else splits, np.int64)
        if send_rows.shape != (n,) or send_rows.sum() != rows or (send_rows < 0).any():
            raise ValueError(f"hoop.torch: rank {rank()}: alltoall: splits {send_rows.tolist()} must have one "
                             f"entry per rank ({n}) adding up to the first dimension ({rows})")
    recv_rows = np.zeros(n, np.int64)
    s.world.alltoall(send_rows, recv_rows, -1, False)
    rest = tuple(src.shape[1:]) if src.dim() > 0 else ()
    per_row = int(np.prod(rest, dtype=np.int64)) if rest else 1
    host_src = _host(src)
    out = torch.empty((int(recv_rows.sum()),) + rest, dtype=src.dtype)
    sa, override = _numpy(host_src)
    oa, _ = _numpy(out)
    req = s.world.alltoallv(sa.reshape(-1), [int(r) * per_row for r in send_rows], oa.reshape(-1),
                            [int(r) * per_row for r in recv_rows], override, True)
    received = torch.tensor(recv_rows.tolist(), dtype=torch.int32)

    def finish():
        result = out.to(src.device)
        return result if splits is None else (result, received)
    return _register("request", req, out, (host_src,), finish)


def alltoall(tensor, splits=None, name=None):
    """Block p of tensor (along the first dimension; splits= gives the sizes) to rank p; returns
    the blocks received, in rank order, and with splits= also how many rows came from each rank."""
    return synchronize(alltoall_async(tensor, splits, name))


# ---- the rest

def reducescatter_async(tensor, name=None, compression=Compression.none, op=Average, prescale_factor=1.0,
                        postscale_factor=1.0):
    """Reduces tensor over the ranks and gives each rank its block of the first dimension
    (Horovod's split: the first size % ranks ranks get one row more). Each rank's tensor is
    multiplied by prescale_factor first, the result by postscale_factor; compression= is taken
    for Horovod's signature and not applied (the blocks travel in the tensor's dtype)."""
    _check(tensor, "reducescatter_async")
    s = _s()
    code = _op_of(None, op, "reducescatter").code
    src = _dense(tensor if prescale_factor == 1.0 else tensor * prescale_factor)
    n = s.world.size
    rows = src.shape[0] if src.dim() > 0 else 1
    rest = tuple(src.shape[1:]) if src.dim() > 0 else ()
    per_row = int(np.prod(rest, dtype=np.int64)) if rest else 1
    mine = [rows // n + (1 if r < rows % n else 0) for r in range(n)]
    host_src = _host(src)
    out = torch.empty((mine[s.world.rank],) + rest, dtype=src.dtype)
    sa, override = _numpy(host_src)
    oa, _ = _numpy(out)
    req = s.world.reduce_scatterv(sa.reshape(-1), oa.reshape(-1), [m * per_row for m in mine], code, override, True)

    def finish():
        result = out.to(src.device) if src.is_cuda else out
        return result if postscale_factor == 1.0 else result.mul_(postscale_factor)
    return _register("request", req, out, (host_src,), finish)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average, prescale_factor=1.0,
                  postscale_factor=1.0):
    return synchronize(reducescatter_async(tensor, name, compression, op, prescale_factor, postscale_factor))


def barrier():
    _s().world.barrier(False)


def join():
    """Waits until every rank has called join() (after its own tensors completed) and returns the
    rank that joined last. Unlike Horovod's, it does not stand in for the allreduces of ranks that
    have joined while others go on: every rank must run the same steps."""
    s = _s()
    s.fusion.synchronize()
    arrived = np.zeros(s.world.size, np.float64)
    s.world.allgather(np.array([time.time()], np.float64), arrived, -1, False)
    return int(arrived.argmax())


def broadcast_object(obj, root_rank=0, name=None):
    """root_rank's obj (anything pickle takes) on every rank."""
    s = _s()
    payload = np.frombuffer(pickle.dumps(obj), np.uint8) if s.world.rank == root_rank else None
    length = np.array([payload.size if payload is not None else 0], np.int64)
    s.world.broadcast(length, root_rank, -1, False)
    buf = payload.copy() if payload is not None else np.empty(int(length[0]), np.uint8)
    s.world.broadcast(buf, root_rank, -1, False)
    return obj if s.world.rank == root_rank else pickle.loads(buf.tobytes())


def allgather_object(obj, name=None):
    """Every rank's obj, in rank order."""
    s = _s()
    mine = np.frombuffer(pickle.dumps(obj), np.uint8)
    lengths = np.zeros(s.world.size, np.int64)
    s.world.allgather(np.array([mine.size], np.int64), lengths, -1, False)
    out = np.empty(int(lengths.sum()), np.uint8)
    s.world.allgatherv(mine.copy(), out, [int(x) for x in lengths], -1, False)
    objs, at = [], 0
    for n in lengths:
        objs.append(pickle.loads(out[at:at + int(n)].tobytes()))
        at += int(n)
    return objs


# The grouped calls (horovod_grouped.py), and broadcast_parameters, broadcast_optimizer_state,
# DistributedOptimizer and SyncBatchNorm (horovod_training.py), over the calls above.
from .horovod_grouped import (grouped_allgather, grouped_allgather_async, grouped_allreduce,  # noqa: E402
                              grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
                              grouped_reducescatter, grouped_reducescatter_async)
from .horovod_training import (DistributedOptimizer, SyncBatchNorm, broadcast_optimizer_state,  # noqa: E402
                               broadcast_parameters)
