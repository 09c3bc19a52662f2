"""Horovod's grouped calls (hoop.torch's Horovod-style API, horovod.py): a list of tensors
submitted together under one handle, whose synchronize() gives the outputs' list in order.
Allreduces go to the fusion runtime as any allreduces submitted together, which fuses them;
allgathers and reduce-scatters run one by one."""
from .horovod import (Average, Compression, _name, _s, allgather_async, allreduce_async, allreduce_async_,
                      reducescatter_async, synchronize)


def _group(handles):
    """One handle for several: synchronize() gives their outputs' list, poll() says whether all
    are done."""
    s = _s()
    h = s.next_handle
    s.next_handle += 1
    s.handles[h] = ("group", handles, None, (), None)
    return h


def _group_name(kind, name):
    return name if name is not None else _name(kind, None)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                            compression=Compression.none):
    """Horovod's grouped allreduce: one handle for the list; synchronize() gives the outputs'
    list. The runtime fuses them as it fuses any allreduces submitted together."""
    base = _group_name("grouped_allreduce", name)
    return _group([allreduce_async(t, average, f"{base}.{i}", op, prescale_factor, postscale_factor, compression)
                   for i, t in enumerate(tensors)])


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                             compression=Compression.none):
    """grouped_allreduce_async in place."""
    base = _group_name("grouped_allreduce", name)
    return _group([allreduce_async_(t, average, f"{base}.{i}", op, prescale_factor, postscale_factor, compression)
                   for i, t in enumerate(tensors)])


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0):
    return synchronize(grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                               compression))


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       compression=Compression.none):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                compression))


def grouped_allgather_async(tensors, name=None):
    """allgather of each tensor, one handle for the list."""
    base = _group_name("grouped_allgather", name)
    return _group([allgather_async(t, f"{base}.{i}") for i, t in enumerate(tensors)])


def grouped_allgather(tensors, name=None):
    return synchronize(grouped_allgather_async(tensors, name))


def grouped_reducescatter_async(tensors, name=None, compression=Compression.none, op=Average, prescale_factor=1.0,
                                postscale_factor=1.0):
    """reducescatter of each tensor, one handle for the list."""
    base = _group_name("grouped_reducescatter", name)
    return _group([reducescatter_async(t, f"{base}.{i}", compression, op, prescale_factor, postscale_factor)
                   for i, t in enumerate(tensors)])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average, prescale_factor=1.0,
                          postscale_factor=1.0):
    return synchronize(grouped_reducescatter_async(tensors, name, compression, op, prescale_factor,
                                                   postscale_factor))
