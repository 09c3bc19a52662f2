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

Process sets (horovod_sets.py): hvd.init(process_sets=[...]) or hvd.add_process_set(...), then
process_set= on every call, the optimizer and the object calls; each set has its own
communicator and fusion runtime, so the sets' calls run side by side.

op=Adasum (horovod_adasum.py) on allreduce and DistributedOptimizer: Horovod's adaptive summation,
run at the call over the set's communicator, on any number of ranks.

join() is Horovod's: a rank whose data ran out stands in for the others' allreduces (the runtime
contributes the op's identity: zeros for Sum and Average, so Average divides by every rank) until
every rank has joined; runtime broadcasts and allgathers fail meanwhile, and so do the calls that
use the communicator directly (refused at the call once this rank knows some rank has joined).
"""
import os

import numpy as np
import torch

import hoop
from hoop import _hoop

from .horovod_adasum import allreduce_adasum
from .horovod_sets import (ProcessSet, _Group, _group, _init_sets, _refuse_while_joined, _root,  # noqa: F401
                           add_process_set, global_process_set, remove_process_set)

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "allreduce",
           "allreduce_", "allreduce_async", "allreduce_async_", "broadcast", "broadcast_", "broadcast_async",
           "broadcast_async_", "allgather", "allgather_async", "alltoall", "alltoall_async", "poll", "synchronize",
           "join", "barrier", "broadcast_object", "allgather_object", "broadcast_parameters",
           "broadcast_optimizer_state", "DistributedOptimizer", "Compression", "Average", "Sum", "Min", "Max",
           "Product", "Adasum", "cross_rank", "cross_size", "is_homogeneous", "mpi_built", "gloo_built", "nccl_built",
           "cuda_built", "rocm_built", "ccl_built", "ddl_built", "mpi_enabled", "gloo_enabled",
           "mpi_threads_supported", "reducescatter", "reducescatter_async", "grouped_allreduce",
           "grouped_allreduce_async", "grouped_allreduce_", "grouped_allreduce_async_", "grouped_allgather",
           "grouped_allgather_async", "grouped_reducescatter", "grouped_reducescatter_async", "start_timeline",
           "stop_timeline", "SyncBatchNorm", "ProcessSet", "global_process_set", "add_process_set",
           "remove_process_set", "sparse_allreduce_async"]


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
Adasum = _Op("Adasum", None)  # horovod_adasum.py: allreduce and DistributedOptimizer only


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
        # The process sets' runtimes by id (horovod_sets.py); 0, the global set: the world, with
        # its fusion runtime on a duplicate of it.
        self.groups = {0: _Group(list(range(self.world.size)), self.world, own_comm=False)}
        self.next_set_id = 1
        self.handles = {}  # handle -> (kind, token, output, keep, finish)
        self.next_handle = 1
        # Every rank's local rank and local size, once: Horovod's cross rank is this rank's place
        # among the ranks with its local rank (one per host that has one), cross size their count.
        mine = np.array([self.world.local_rank, self.world.local_size], np.int64)
        every = np.zeros(2 * self.world.size, np.int64)
        self.world.allgather(mine, every, -1, False)
        local = every[0::2]
        self.cross_size = int((local == self.world.local_rank).sum())
        self.cross_rank = int((local[:self.world.rank] == self.world.local_rank).sum())
        self.homogeneous = bool((every[1::2] == every[1]).all())

    @property
    def fusion(self):
        return self.groups[0].fusion

    def stop(self, errors=()):
        """Stops every set's runtime (the global set's last) and frees their communicators."""
        for ps_id in sorted(self.groups, reverse=True):
            self.groups.pop(ps_id).stop(errors)


_state = None


def init(comm=None, process_sets=None, deterministic=None):
    """Joins the job (a second call does nothing). comm is accepted for Horovod's signature and
    must be None: the job comes from the environment. process_sets: ProcessSets to register, in
    order, as every rank does alike (or "dynamic", which changes nothing: hoop registers sets
    later too, horovod_sets.py). deterministic=True (every rank alike; None: HOOP_DETERMINISTIC
    decides) makes every allreduce, fused or not, give each element the bits of the left fold over
    the ranks in rank order, whatever fuses beside it (hoop_comm_set_deterministic)."""
    global _state
    if comm is not None:
        raise ValueError("hoop.torch.init: comm= is not supported; the job comes from the environment")
    if _state is None:
        state = _State(deterministic=deterministic)
        try:
            _init_sets(state, process_sets)
        except BaseException:
            state.stop()
            raise
        _state = state
    elif process_sets is not None:
        raise ValueError("hoop.torch.init: already initialized; register more process sets with add_process_set")


def _rebuild(world):
    """The job's ranks changed (hoop.torch.elastic): stops the fusion runtimes of the old world
    (an error from a lost rank is expected, and dropped), frees the old communicators, and starts
    again on `world` as init() does, which every rank of it does alike (a newcomer in its
    init()). Only the global process set is left."""
    global _state
    old, _state = _state, None
    if old is not None:
        old.stop(hoop.HoopError)
        if old.world is not world and not old.world.freed:
            old.world.free()
    hoop._replace_world(world)
    _state = _State(world)
    _init_sets(_state, None)


def shutdown():
    """Stops the fusion runtimes (on every rank: call it on every rank) and frees the communicators."""
    global _state
    if _state is None:
        return
    s, _state = _state, None
    s.stop()
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
    """Horovod's: rank 0 writes a Chrome trace of the global set's tensors to file_path from now on
    (a new file; one it was writing is closed first), each negotiation cycle marked with
    mark_cycles. Any rank may call it; the others do nothing. HOOP_TIMELINE (hooprun
    --timeline-filename) starts one at init instead."""
    _s().fusion.start_timeline(os.fspath(file_path), bool(mark_cycles))


def stop_timeline():
    """Horovod's: ends the timeline; its file is complete when this returns."""
    _s().fusion.stop_timeline()


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


def _numpy(t):
    """t's memory as a NumPy array and the hoop dtype to read it as (bf16 and the fp8s have no
    NumPy type)."""
    row = _NOT_NUMPY.get(t.dtype)
    if row is not None:
        return t.view(_BITS[row["size"]]).numpy(), row["value"]
    return t.numpy(), -1


def _name(kind, name, group=None):
    """A call's name in its set's runtime: the caller's, or the next of a counter per kind that
    every rank of the set counts alike."""
    if name is not None:
        return f"{kind}.{name}"
    names = (group or _s().groups[0]).names
    names[kind] = names.get(kind, 0) + 1
    return f"{kind}.noname.{names[kind]}"


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
    if token is None:
        return True
    return token[0].test(token[1]) if kind == "fusion" else token.test()


def synchronize(handle):
    """Waits for the operation behind handle and returns its output."""
    s = _s()
    if handle not in s.handles:
        raise ValueError(f"hoop.torch: rank {rank()}: synchronize: unknown or finished handle {handle}")
    kind, token, output, keep, finish = s.handles.pop(handle)
    if kind == "group":
        outs = [synchronize(h) for h in token]
        return finish(outs) if finish else outs
    if kind == "fusion":
        token[0].wait(token[1])
    elif token is not None:
        token.wait()
    return finish() if finish else output


# ---- allreduce

def _op_of(average, op, call, adasum=False):
    if average is not None:
        if op is not None:
            raise ValueError(f"hoop.torch: {call}: give op= or the older average=, not both")
        return Average if average else Sum
    op = Average if op is None else op
    if not isinstance(op, _Op):
        raise ValueError(f"hoop.torch: {call}: op must be hoop.torch.Average, Sum, Min, Max, Product or Adasum, not "
                         f"{op!r}")
    if op is Adasum and not adasum:
        raise ValueError(f"hoop.torch: {call}: Adasum applies to allreduce and DistributedOptimizer only")
    return op


def _codec(compression, call):
    """A compressor of the caller's (Horovod's Compressor interface: compress and decompress), or
    None for hoop's wire compression (Compression.none, .fp16, .bf16)."""
    if compression is None or isinstance(compression, _Wire):
        return None
    if callable(getattr(compression, "compress", None)) and callable(getattr(compression, "decompress", None)):
        return compression
    raise TypeError(f"hoop.torch: {call}: compression must be hoop.torch.Compression.none, .fp16 or .bf16, or a "
                    f"compressor with compress() and decompress() (Horovod's Compressor), not {compression!r}")


def _allreduce_into(tensor, output, name, op, prescale, postscale, compression, process_set, call):
    codec = _codec(compression, call)
    if codec is not None and op is not Adasum:  # reduce the compressed tensor, decompress into output
        packed, ctx = codec.compress(tensor)
        inner = _allreduce_into(packed, torch.empty_like(packed, memory_format=torch.contiguous_format), name, op,
                                prescale, postscale, None, process_set, call)

        def finish(outs):
            with torch.no_grad():
                output.copy_(codec.decompress(outs[0], ctx))
            return output
        return _register("group", [inner], output, (tensor, packed), finish)
    dt = _check(tensor, call)
    g = _group(process_set, call)
    if op is Adasum:  # at the call, on this thread (horovod_adasum.py)
        _refuse_while_joined(call)
        _name("allreduce", name, g)  # counts as an unnamed call, as the others do
        allreduce_adasum(tensor, output, g.comm, float(prescale), float(postscale), call)
        return _register("done", None, output, (), None)
    src = _dense(tensor)
    dst = output if output.is_contiguous() else output.contiguous()
    wire = (compression or Compression.none).code
    _ready(src, dst)
    token = g.fusion.allreduce(_name("allreduce", name, g), src.data_ptr(), dst.data_ptr(), src.numel(), dt,
                               op.code, wire, float(prescale), float(postscale))
    finish = None
    if dst is not output:
        def finish():
            output.copy_(dst)
            return output
    return _register("fusion", (g.fusion, token), output, (src, dst), finish)


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set, compression=Compression.none):
    op = _op_of(average, op, "allreduce_async", adasum=True)
    return _allreduce_into(tensor, torch.empty_like(tensor, memory_format=torch.contiguous_format), name, op,
                           prescale_factor, postscale_factor, compression, process_set, "allreduce_async")


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set, compression=Compression.none):
    op = _op_of(average, op, "allreduce_async_", adasum=True)
    return _allreduce_into(tensor, tensor, name, op, prescale_factor, postscale_factor, compression, process_set,
                           "allreduce_async_")


def allreduce(tensor, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """The reduction of tensor over the ranks of process_set (default: their average), as a new tensor."""
    return synchronize(allreduce_async(tensor, average, name, op, prescale_factor, postscale_factor, process_set,
                                       compression))


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set, compression=Compression.none):
    """allreduce in place."""
    return synchronize(allreduce_async_(tensor, average, name, op, prescale_factor, postscale_factor, process_set,
                                        compression))


# ---- broadcast

def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    dt = _check(tensor, "broadcast_async_")
    g = _group(process_set, "broadcast_async_")
    root = _root(g, root_rank, "broadcast_async_")
    dst = _dense(tensor)
    _ready(dst)
    token = g.fusion.broadcast(_name("broadcast", name, g), dst.data_ptr(), dst.data_ptr(), dst.numel(), dt, root)
    finish = None
    if dst is not tensor:
        def finish():
            tensor.copy_(dst)
            return tensor
    return _register("fusion", (g.fusion, token), tensor, (dst,), finish)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    return broadcast_async_(tensor.clone(memory_format=torch.contiguous_format), root_rank, name, process_set)


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """root_rank's tensor (root_rank: a rank of the world, in process_set) on every rank of the
    set, as a new tensor."""
    return synchronize(broadcast_async(tensor, root_rank, name, process_set))


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """broadcast in place."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))


# allgather, alltoall, reducescatter, barrier, join and the object calls (horovod_calls.py), the
# grouped calls (horovod_grouped.py), and broadcast_parameters, broadcast_optimizer_state,
# DistributedOptimizer and SyncBatchNorm (horovod_training.py), over the calls above.
from .horovod_calls import (allgather, allgather_async, allgather_object, alltoall, alltoall_async,  # noqa: E402
                            barrier, broadcast_object, join, reducescatter, reducescatter_async,
                            sparse_allreduce_async)
from .horovod_grouped import (grouped_allgather, grouped_allgather_async, grouped_allreduce,  # noqa: E402
                              grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
                              grouped_reducescatter, grouped_reducescatter_async)
from .horovod_training import (DistributedOptimizer, SyncBatchNorm, broadcast_optimizer_state,  # noqa: E402
                               broadcast_parameters)
