"""hoop for PyTorch, two ways (a third, hoop-parallelize, writes scripts using either).

1. The Horovod-style API (horovod.py): `import hoop.torch as hvd` in a Horovod script, then
   hvd.init(), hvd.DistributedOptimizer(...), hvd.broadcast_parameters(...) as with Horovod.

2. Importing it registers the torch.distributed backend "hoop":

    import torch.distributed as dist
    import hoop.torch  # noqa: F401  (registers "hoop")
    dist.init_process_group("hoop")          # env:// (hooprun and torchrun set the variables)
    model = torch.nn.parallel.DistributedDataParallel(model)

The backend (hoop._c10d, C++ against the installed libtorch) joins each process group's ranks
through the group's own store (init_process_group's, any of PyTorch's; new_group's prefixed
one): no port or store of hoop's. It runs allreduce (SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR,
BXOR, and PREMUL_SUM, the pre-scaled sum FSDP uses: every reducing call takes all nine),
broadcast, allgather (and all_gather_into_tensor), reduce_scatter (and reduce_scatter_tensor),
on PyTorch 2.x the coalesced all_gather_into_tensor and reduce_scatter_tensor that DTensor and
FSDP2 call (each group of calls one hoop collective), reduce, gather, scatter, all_to_all (and
all_to_all_single), barrier, monitored_barrier (naming the ranks that did not arrive, then
revoking the group), send, recv (any source too) and new_group, every call asynchronous
(async_op=True gives a Work; its Future completes by itself, which DDP's hooks use). all_gather
and reduce_scatter take lists uneven by rank; on bool, SUM is an or and PRODUCT an and. CPU
tensors, and on PyTorch 2 built with CUDA also CUDA tensors (queued on PyTorch's current stream,
as NCCL's backend does), of uint8, int8, int16, int32, int64, bool, float16, bfloat16, float32
and float64, uint16, uint32 and uint64 where torch has them (2.3 and later), and float8_e4m3fn and
float8_e5m2 where torch has them (sum, avg, min, max, prod; results past the largest finite
saturate, as NCCL's do), and complex ones as their real and imaginary parts (SUM, AVG, PREMUL_SUM);
anything else raises, naming the rank, the
call and the cause. HOOP_* variables tune it as any hoop job (HOOP_TRANSPORT, HOOP_TIMEOUT...);
init_process_group's and new_group's timeout= bounds that group's calls in HOOP_TIMEOUT's place
(PyTorch's default, which it passes where none is given, leaves HOOP_TIMEOUT's).
Across hosts each rank advertises its address on the route to MASTER_ADDR (HOOP_HOST overrides).
"""
import atexit
import inspect

import torch as _torch
import torch.distributed as _dist

from .. import _route_address

try:
    from .. import _c10d
except ImportError as e:  # built without libtorch, or against another PyTorch
    raise ImportError(f"hoop.torch: the torch.distributed backend is not available ({e}); hoop builds it for the "
                      "PyTorch its build imports (Debian's python3-torch with libtorch-dev, or pip's torch: "
                      "`pip install --no-build-isolation .` in the environment that has it), and it runs "
                      "with that PyTorch only") from e

BACKEND = "hoop"


_WEEK_S = 7 * 24 * 3600  # HOOP_TIMEOUT's largest


def _timeout_seconds(timeout, rank):
    """The group's timeout in seconds as hoop takes it: PyTorch's timeout= where the script gave one,
    0 (HOOP_TIMEOUT's, 300 s unless set) where it is PyTorch's default, which PyTorch passes when none
    is given; a longer one than a week is a week."""
    default = getattr(getattr(_dist, "constants", None), "default_pg_timeout", None)
    if timeout is None or timeout == default:
        return 0.0
    seconds = timeout.total_seconds()
    if seconds < 0.001:
        raise ValueError(f"hoop: rank {rank}: creating a process group: timeout={timeout!r} is under a millisecond "
                         "(hoop's calls wait 0.001 s to a week)")
    return min(seconds, _WEEK_S)


def _create_process_group(store, rank, size, timeout):
    return _c10d.ProcessGroupHoop(store, rank, size, _route_address(), _timeout_seconds(timeout, rank))


def set_deterministic(on=True, group=None):
    """Turns hoop's deterministic mode on (or off) for a process group of the "hoop" backend (None:
    the default group): every all_reduce, reduce and reduce_scatter on it then gives each element
    the bits of the left fold over the ranks in rank order, whatever transport, algorithm or bucket
    layout carries it. Call it on every rank alike, before the reductions it is for (DDP's first
    bucket included). HOOP_DETERMINISTIC=1 turns it on for every group from the start."""
    group = group if group is not None else _dist.distributed_c10d._get_default_group()
    backend = group._get_backend(_torch.device("cpu")) if hasattr(group, "_get_backend") else group
    if not isinstance(backend, _c10d.ProcessGroupHoop):
        raise ValueError(f"hoop.torch.set_deterministic: the group's backend is {type(backend).__name__}, not hoop's")
    backend.deterministic = bool(on)


def _register():
    if hasattr(_dist.Backend, BACKEND.upper()):
        return  # already (a reload)
    params = inspect.signature(_dist.Backend.register_backend).parameters
    if "devices" in params:  # PyTorch 2: a backend names the devices it serves
        # CUDA tensors go on PyTorch's current stream (hoop's *_stream calls), where this torch
        # has CUDA; a group serves both, each call on its tensors' device.
        cuda = getattr(_c10d, "CUDA_STREAMS", False) and _torch.backends.cuda.is_built()
        _dist.Backend.register_backend(BACKEND, _create_process_group, devices=["cpu", "cuda"] if cuda else ["cpu"])
    else:
        _dist.Backend.register_backend(BACKEND, _create_process_group)


_register()
# The threads that complete Works whose futures were taken (DDP's) drop tensors, which takes the
# GIL: they end while the interpreter is whole (one asking for the GIL during finalization aborts).
atexit.register(_c10d._stop_completers)

from .horovod import *  # noqa: E402,F401,F403  (the Horovod-style API)
from .horovod import __all__ as _horovod_all  # noqa: E402

__all__ = ["BACKEND", "set_deterministic"] + _horovod_all

from . import compression, elastic  # noqa: E402,F401  (hvd.compression, hvd.elastic: Horovod's modules)
from .elastic import HorovodInternalError  # noqa: E402  (hvd.HorovodInternalError, as Horovod's)

__all__.append("HorovodInternalError")
