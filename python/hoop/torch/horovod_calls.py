"""The Horovod-style calls that run on a process set's communicator directly rather than through
its fusion runtime (re-exported by horovod.py): allgather of first dimensions that differ (equal
ones go to the runtime), alltoall, reducescatter, barrier and the object calls, all refused while
a rank has joined; and join. Each takes process_set= (horovod_sets.py; default: the global set,
the world) and runs among its ranks; CUDA tensors are staged through host memory where a call
goes through NumPy.
"""
import pickle

import numpy as np
import torch

import hoop

from .horovod import (Average, Compression, Sum, _check, _dense, _host, _name, _numpy, _op_of, _ready, _register, _s,
                      rank, synchronize)
from .horovod_sets import _group, _refuse_while_joined, _root, global_process_set


# ---- allgather and alltoall (first dimensions may differ between ranks)

def allgather_async(tensor, name=None, process_set=global_process_set):
    dt = _check(tensor, "allgather_async")
    g = _group(process_set, "allgather_async")
    comm = g.comm
    src = _dense(tensor)
    rows = src.shape[0] if src.dim() > 0 else 1
    base = _name("allgather", name, g)
    # Every rank's first dimension, through the runtime: while a rank has joined (hvd.join) it
    # fails there on every rank that calls it, as Horovod's allgather does.
    mine, counts = np.array([rows], np.int64), np.zeros(comm.size, np.int64)
    try:
        g.fusion.wait(g.fusion.allgather(base + ".rows", mine.ctypes.data, counts.ctypes.data, 1, int(hoop.I64)))
    except hoop.MismatchError:
        if name is None:  # every rank that called it failed: they count it as the joined ranks do, not at all
            g.names["allgather"] -= 1
        raise
    rest = tuple(src.shape[1:]) if src.dim() > 0 else ()
    out = torch.empty((int(counts.sum()),) + rest, dtype=src.dtype, device=src.device)
    if (counts == rows).all():
        _ready(src, out)
        token = g.fusion.allgather(base, src.data_ptr(), out.data_ptr(), src.numel(), dt)
        return _register("fusion", (g.fusion, token), out, (src,))
    per_row = int(np.prod(rest, dtype=np.int64)) if rest else 1
    host_src, host_out = _host(src), _host(out)
    sa, override = _numpy(host_src)
    oa, _ = _numpy(host_out)
    req = comm.allgatherv(sa.reshape(-1), oa.reshape(-1), [int(c) * per_row for c in counts], override, True)
    return _register("request", req, out, (host_src,), None if host_out is out else lambda: out.copy_(host_out))


def allgather(tensor, name=None, process_set=global_process_set):
    """Every rank's tensor concatenated along the first dimension (which may differ), in the
    order of the set's ranks."""
    return synchronize(allgather_async(tensor, name, process_set))


def _splits(splits, rows, n):
    if splits is None:
        if rows % n:
            raise ValueError(f"hoop.torch: rank {rank()}: alltoall: the first dimension ({rows}) does not split "
                             f"into {n} equal parts; pass splits=")
        return np.full(n, rows // n, np.int64)
    send_rows = np.asarray(splits.tolist() if isinstance(splits, torch.Tensor) else splits, np.int64)
    if send_rows.shape != (n,) or send_rows.sum() != rows or (send_rows < 0).any():
        raise ValueError(f"hoop.torch: rank {rank()}: alltoall: splits {send_rows.tolist()} must have one "
                         f"entry per rank ({n}) adding up to the first dimension ({rows})")
    return send_rows


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    _check(tensor, "alltoall_async")
    comm = _group(process_set, "alltoall_async").comm
    n = comm.size
    src = _dense(tensor)
    rows = src.shape[0] if src.dim() > 0 else 1
    send_rows = _splits(splits, rows, n)
    _refuse_while_joined("alltoall")
    recv_rows = np.zeros(n, np.int64)
    comm.alltoall(send_rows, recv_rows, -1, False)
    rest = tuple(src.shape[1:]) if src.dim() > 0 else ()
    per_row = int(np.prod(rest, dtype=np.int64)) if rest else 1
    host_src = _host(src)
    out = torch.empty((int(recv_rows.sum()),) + rest, dtype=src.dtype)
    sa, override = _numpy(host_src)
    oa, _ = _numpy(out)
    req = comm.alltoallv(sa.reshape(-1), [int(r) * per_row for r in send_rows], oa.reshape(-1),
                         [int(r) * per_row for r in recv_rows], override, True)
    received = torch.tensor(recv_rows.tolist(), dtype=torch.int32)

    def finish():
        result = out.to(src.device)
        return result if splits is None else (result, received)
    return _register("request", req, out, (host_src,), finish)


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Block p of tensor (along the first dimension; splits= gives the sizes) to the set's rank p;
    returns the blocks received, in the set's rank order, and with splits= also how many rows
    came from each rank."""
    return synchronize(alltoall_async(tensor, splits, name, process_set))


def sparse_allreduce_async(tensor, name=None, op=Average, process_set=global_process_set):
    """Horovod's reduction of a sparse (COO) tensor over the set's ranks: every rank's indices and
    values allgathered; synchronize() gives the sparse tensor of them all, uncoalesced (Average:
    the values divided by the set's size)."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
        raise ValueError(f"hoop.torch: rank {rank()}: sparse_allreduce_async: expected a sparse tensor")
    op = _op_of(None, op, "sparse_allreduce_async")
    if op not in (Average, Sum):
        raise ValueError(f"hoop.torch: rank {rank()}: sparse_allreduce_async: op must be Average or Sum, not {op!r}")
    g = _group(process_set, "sparse_allreduce_async")
    t = tensor.coalesce()
    base = _name("sparse_allreduce", name, g)
    parts = [allgather_async(t._indices().transpose(0, 1).contiguous(), f"{base}.indices", process_set),
             allgather_async(t._values(), f"{base}.values", process_set)]

    def finish(outs):
        indices, values = outs
        if op is Average:
            values = values / g.comm.size
        return torch.sparse_coo_tensor(indices.transpose(0, 1), values, size=t.size())
    return _register("group", parts, None, (t,), finish)


# ---- reducescatter

def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0, compression=Compression.none):
    """Reduces tensor over the set's ranks and gives each its block of the first dimension
    (Horovod's split: the first size % ranks ranks get one row more). Each rank's tensor is
    multiplied by prescale_factor first, the result by postscale_factor; compression= is taken
    for Horovod's signature and not applied (the blocks travel in the tensor's dtype)."""
    _check(tensor, "reducescatter_async")
    comm = _group(process_set, "reducescatter_async").comm
    code = _op_of(None, op, "reducescatter").code
    _refuse_while_joined("reducescatter")
    src = _dense(tensor if prescale_factor == 1.0 else tensor * prescale_factor)
    n = comm.size
    rows = src.shape[0] if src.dim() > 0 else 1
    rest = tuple(src.shape[1:]) if src.dim() > 0 else ()
    per_row = int(np.prod(rest, dtype=np.int64)) if rest else 1
    mine = [rows // n + (1 if r < rows % n else 0) for r in range(n)]
    host_src = _host(src)
    out = torch.empty((mine[comm.rank],) + rest, dtype=src.dtype)
    sa, override = _numpy(host_src)
    oa, _ = _numpy(out)
    req = comm.reduce_scatterv(sa.reshape(-1), oa.reshape(-1), [m * per_row for m in mine], code, override, True)

    def finish():
        result = out.to(src.device) if src.is_cuda else out
        return result if postscale_factor == 1.0 else result.mul_(postscale_factor)
    return _register("request", req, out, (host_src,), finish)


def reducescatter(tensor, name=None, compression=Compression.none, op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor,
                                           compression))


# ---- the rest

def barrier(process_set=global_process_set):
    """Returns once every rank of the set has called it."""
    comm = _group(process_set, "barrier").comm
    _refuse_while_joined("barrier")
    comm.barrier(False)


def join(device=-1):
    """Horovod's join, for a rank whose data ran out before the others': until every rank has
    joined, this rank's runtime stands in for it in every allreduce the others make (the op's
    identity: zeros for Sum and Average, so Average divides by every rank, as Horovod's), and the
    others' broadcasts, allgathers and other calls fail. Blocks until every rank has joined;
    returns the rank that joined last, the same on every rank. Tensors this rank submitted before
    run as usual. device (where Horovod makes its stand-in zeros) is taken and changes nothing:
    hoop's stand-ins live in host memory."""
    return _s().fusion.join()


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's obj (anything pickle takes) on every rank of the set (root_rank: a world rank)."""
    g = _group(process_set, "broadcast_object")
    comm, root = g.comm, _root(g, root_rank, "broadcast_object")
    _refuse_while_joined("broadcast_object")
    payload = np.frombuffer(pickle.dumps(obj), np.uint8) if comm.rank == root else None
    length = np.array([payload.size if payload is not None else 0], np.int64)
    comm.broadcast(length, root, -1, False)
    buf = payload.copy() if payload is not None else np.empty(int(length[0]), np.uint8)
    comm.broadcast(buf, root, -1, False)
    return obj if comm.rank == root else pickle.loads(buf.tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's obj, in the order of the set's ranks."""
    comm = _group(process_set, "allgather_object").comm
    _refuse_while_joined("allgather_object")
    mine = np.frombuffer(pickle.dumps(obj), np.uint8)
    lengths = np.zeros(comm.size, np.int64)
    comm.allgather(np.array([mine.size], np.int64), lengths, -1, False)
    out = np.empty(int(lengths.sum()), np.uint8)
    comm.allgatherv(mine.copy(), out, [int(x) for x in lengths], -1, False)
    objs, at = [], 0
    for n in lengths:
        objs.append(pickle.loads(out[at:at + int(n)].tobytes()))
        at += int(n)
    return objs
