"""Horovod's grouped calls (hoop.torch's Horovod-style API, horovod.py): a list of tensors
submitted together under one handle, whose synchronize() gives the outputs' list in order.
Allreduces go to the fusion runtime as any allreduces submitted together, which fuses them;
allgathers and reduce-scatters run one by one. Each takes process_set= as the single calls do."""
from .horovod import Average, Compression, _name, _s, allreduce_async, allreduce_async_, synchronize
from .horovod_calls import allgather_async, reducescatter_async
from .horovod_sets import _group as _set_group, global_process_set


def _group(handles):
    """One handle for several: synchronize() gives their outputs' list, poll() says whether all
    are done."""
    s = _s()
    h = s.next_handle
    s.next_handle += 1
    s.handles[h] = ("group", handles, None, (), None)
    return h


def _group_name(kind, name, process_set):
    return name if name is not None else _name(kind, None, _set_group(process_set, kind))


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=global_process_set, compression=Compression.none):
    """Horovod's grouped allreduce: one handle for the list; synchronize() gives the outputs'
    list. The runtime fuses them as it fuses any allreduces submitted together."""
    base = _group_name("grouped_allreduce", name, process_set)
    return _group([allreduce_async(t, average, f"{base}.{i}", op, prescale_factor, postscale_factor, process_set,
                                   compression) for i, t in enumerate(tensors)])


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                             process_set=global_process_set, compression=Compression.none):
    """grouped_allreduce_async in place."""
    base = _group_name("grouped_allreduce", name, process_set)
    return _group([allreduce_async_(t, average, f"{base}.{i}", op, prescale_factor, postscale_factor, process_set,
                                    compression) for i, t in enumerate(tensors)])


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    return synchronize(grouped_allreduce_async(tensors, average, name, op, prescale_factor, postscale_factor,
                                               process_set, compression))


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set, compression=Compression.none):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set, compression))


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """allgather of each tensor, one handle for the list."""
    base = _group_name("grouped_allgather", name, process_set)
    return _group([allgather_async(t, f"{base}.{i}", process_set) for i, t in enumerate(tensors)])


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    return synchronize(grouped_allgather_async(tensors, name, process_set))


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0, compression=Compression.none):
    """reducescatter of each tensor, one handle for the list."""
    base = _group_name("grouped_reducescatter", name, process_set)
    return _group([reducescatter_async(t, f"{base}.{i}", op, process_set, prescale_factor, postscale_factor,
                                       compression) for i, t in enumerate(tensors)])


def grouped_reducescatter(tensors, name=None, compression=Compression.none, op=Average, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    return synchronize(grouped_reducescatter_async(tensors, name, op, process_set, prescale_factor,
                                                   postscale_factor, compression))
