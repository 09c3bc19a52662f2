"""Horovod's process sets for hoop.torch's Horovod-style API (horovod.py).

A ProcessSet names some of the world's ranks (sorted). Registered, by hvd.init(process_sets=[...])
or hvd.add_process_set(...) (collectives of every rank of the world, called alike and in the same
order on each), it gets an id: 0 is the global set (every rank, hvd.global_process_set), the others
1, 2, ... in the order they were registered, the same on every rank. On the ranks it includes it
then has a communicator of its own (split from the world) and a fusion runtime on a duplicate of
that, so the calls of different sets run side by side, each negotiated and fused among its own
ranks only. Every call takes process_set= (default: the global set); only the set's ranks call
it, and a rank outside it that calls gets a ValueError naming the set. As with Horovod, root ranks
(broadcast's root_rank) are ranks of the world, hvd.rank(); results come in the set's rank order
(allgather: ascending world ranks); Average divides by the set's size.

hvd.remove_process_set(ps) (every rank, alike) stops the set's runtime and frees its
communicators; the object's id becomes None. Unlike Horovod, hoop does not need
process_sets="dynamic" (or HOROVOD_DYNAMIC_PROCESS_SETS) before add_process_set: it is accepted
and changes nothing. A set may be given by an mpi4py communicator (under mpirun, where hoop's world
is MPI's): its world ranks are read from its group, and each rank may give the one it is in (a
Split's), as with Horovod; hvd.init then registers every rank's set, in the order of their lowest
ranks. After an elastic reset (hoop.torch.elastic) only the global set is left, as with Horovod,
whose reset is a shutdown and an init().
"""
import numpy as np

from hoop import _hoop


class ProcessSet:
    """Some ranks of the world, registered by hvd.init(process_sets=...) or hvd.add_process_set."""
    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        if hasattr(ranks_or_comm, "Get_group") and hasattr(ranks_or_comm, "Get_size"):
            self.mpi_comm = ranks_or_comm  # an mpi4py communicator: its ranks are read at registration
            return
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise ValueError("hoop.torch.ProcessSet: give a list of ranks or an mpi4py communicator, not "
                             f"{type(ranks_or_comm).__name__}") from None
        if any(isinstance(r, bool) or not isinstance(r, (int, np.integer)) for r in ranks):
            raise ValueError(f"hoop.torch.ProcessSet: ranks must be integers, not {ranks!r}")
        ranks = [int(r) for r in ranks]
        if len(set(ranks)) != len(ranks):
            raise ValueError(f"hoop.torch.ProcessSet: a rank appears twice in {ranks}")
        self.ranks = ranks

    def _invalidate(self):
        self.process_set_id = None

    def _registered(self):
        from . import horovod as _hvd
        s = _hvd._s()
        group = s.groups.get(self.process_set_id) if self.process_set_id is not None else None
        if group is None:
            raise ValueError(f"hoop.torch: {self} does not exist or has not been registered "
                             "(hvd.init(process_sets=...) or hvd.add_process_set)")
        return s, group

    def size(self):
        """How many ranks the set has (None before it is registered)."""
        if self.process_set_id is None:
            return None
        return len(self._registered()[1].ranks)

    def rank(self):
        """This rank's place in the set (None before it is registered; a ValueError where this
        rank is not in it). Calls take world ranks (hvd.rank()) as roots, not this one."""
        if self.process_set_id is None:
            return None
        s, group = self._registered()
        if group.comm is None:
            raise ValueError(f"hoop.torch: rank {s.world.rank} is not part of {self}")
        return group.comm.rank

    def included(self):
        """Whether this rank is in the set (None while its ranks are not known)."""
        if self.ranks is None:
            return None
        from . import horovod as _hvd
        return _hvd.rank() in self.ranks

    def __str__(self):
        return f"ProcessSet(process_set_id={self.process_set_id}, ranks={self.ranks}, mpi_comm={self.mpi_comm})"

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0


class _Group:
    """A registered set's runtime on this rank: its communicator (None where this rank is not in
    it), a fusion runtime on a duplicate of that, and the counters that name unnamed calls."""

    def __init__(self, ranks, comm, own_comm=True):
        self.ranks, self.comm, self.own_comm = ranks, comm, own_comm
        self.names = {}
        self.fusion_comm = self.fusion = None
        if comm is not None:
            self.fusion_comm = comm.dup()  # inherits the deterministic mode
            self.fusion = _hoop.Fusion(self.fusion_comm)

    def stop(self, errors=()):
        """Stops the runtime (errors: exception types to drop, a lost rank's) and frees the
        communicators."""
        if self.comm is None:
            return
        try:
            self.fusion.stop()
        except errors:
            pass
        for comm in (self.fusion_comm, self.comm if self.own_comm else None):
            if comm is not None and not comm.freed:
                comm.free()


def _world_ranks(ps, world):
    """ps's ranks, as world ranks; an mpi4py communicator's from its group."""
    if ps.ranks is not None:
        return ps.ranks
    from mpi4py import MPI
    if MPI.COMM_WORLD.Get_size() != world.size or MPI.COMM_WORLD.Get_rank() != world.rank:
        raise ValueError("hoop.torch: a ProcessSet from an mpi4py communicator needs hoop's world to be MPI's "
                         f"(MPI: rank {MPI.COMM_WORLD.Get_rank()} of {MPI.COMM_WORLD.Get_size()}, hoop: rank "
                         f"{world.rank} of {world.size}); give the set's ranks instead")
    mine = ps.mpi_comm.Get_group()
    ranks = MPI.Group.Translate_ranks(mine, list(range(mine.Get_size())), MPI.COMM_WORLD.Get_group())
    return sorted(int(r) for r in ranks)


def _every(world, ranks):
    """Every rank's list of ranks, by rank (a collective of the world)."""
    lengths = np.zeros(world.size, np.int64)
    world.allgather(np.array([len(ranks)], np.int64), lengths, -1, False)
    flat = np.zeros(int(lengths.sum()), np.int64)
    world.allgatherv(np.asarray(ranks, np.int64), flat, [int(n) for n in lengths], -1, False)
    cuts = np.cumsum(lengths)[:-1]
    return [part.tolist() for part in np.split(flat, cuts)]


def _agree(world, ranks, call, own_sets=False):
    """The sets that every rank's `ranks` name, in the order of the first rank naming each (a
    collective). Every rank must pass the same ranks; with own_sets (sets from mpi4py
    communicators, each rank its own), every rank must pass the set it is in, as every other rank
    of that set does. Otherwise a ValueError on every rank, naming the ranks that differ, instead
    of communicators that disagree."""
    every = _every(world, ranks)
    if own_sets:
        odd = [r for r in range(world.size)
               if r not in every[r] or any(not 0 <= q < world.size or every[q] != every[r] for q in every[r])]
        why = "passed a set that its ranks do not all pass, or one without themselves"
    else:
        odd = [r for r in range(world.size) if every[r] != every[0]]
        why = "passed other ranks than rank 0 did (every rank must register the same process sets in the same order)"
    if odd:
        raise ValueError(f"hoop.torch: rank {world.rank}: {call}: ranks {odd} {why}")
    distinct = []
    for ranks in every:
        if ranks not in distinct:
            distinct.append(ranks)
    return distinct


def _register(s, ps, call):
    """Registers ps on every rank of the world (a collective), and with a set from an mpi4py
    communicator the other ranks' sets too: ids, communicators and runtimes. Returns ps's id
    (an earlier set's where one has its ranks) and ranks."""
    world = s.world
    ranks = _world_ranks(ps, world)
    bad = [r for r in ranks if not 0 <= r < world.size]
    if bad:
        raise ValueError(f"hoop.torch: rank {world.rank}: {call}: ranks {bad} are not in the world of {world.size}")
    if not ranks:
        raise ValueError(f"hoop.torch: rank {world.rank}: {call}: a process set needs at least one rank")
    for each in _agree(world, ranks, call, own_sets=ps.mpi_comm is not None):
        if any(g.ranks == each for g in s.groups.values()):
            continue
        comm = world.split(0 if world.rank in each else -1, world.rank)
        s.groups[s.next_set_id] = _Group(each, comm)
        s.next_set_id += 1
    return next(i for i, g in s.groups.items() if g.ranks == ranks), ranks


def _init_sets(s, process_sets):
    """hvd.init(process_sets=...): "dynamic", or a list of ProcessSets registered in its order; a
    second object with the ranks of one before it (or of the world) is left unregistered, as
    Horovod does."""
    global_process_set.ranks = list(range(s.world.size))
    global_process_set.process_set_id = 0
    if process_sets is None or isinstance(process_sets, str):
        if isinstance(process_sets, str) and process_sets != "dynamic":
            raise ValueError(f"hoop.torch.init: process_sets must be a list of ProcessSets or 'dynamic', not "
                             f"{process_sets!r}")
        return
    for ps in process_sets:
        if not isinstance(ps, ProcessSet):
            raise ValueError(f"hoop.torch.init: process_sets holds a {type(ps).__name__}, not a ProcessSet")
        if ps is global_process_set:
            continue  # registered already, as id 0
        before = set(s.groups)
        ps_id, ps.ranks = _register(s, ps, "init")
        if ps_id in before:
            ps._invalidate()
        else:
            ps.process_set_id = ps_id


def add_process_set(process_set):
    """Registers a process set (a ProcessSet or a list of ranks) and returns it: every rank of the
    world calls it, alike. A ValueError if a set of those ranks exists already."""
    from . import horovod as _hvd
    s = _hvd._s()
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    before = set(s.groups)
    ps_id, ranks = _register(s, ps, "add_process_set")
    if ps_id in before:
        raise ValueError(f"hoop.torch: rank {s.world.rank}: add_process_set: a process set of ranks {ranks} exists "
                         f"already (id {ps_id})")
    ps.ranks, ps.process_set_id = ranks, ps_id
    return ps


def remove_process_set(process_set):
    """Stops a registered set's runtime and frees its communicators (every rank of the world calls
    it, alike) and returns True; False for the global set or one not registered."""
    from . import horovod as _hvd
    s = _hvd._s()
    ps_id = process_set.process_set_id
    if not ps_id or ps_id not in s.groups:
        return False
    _agree(s.world, [ps_id], "remove_process_set")  # every rank removes the same set
    s.groups.pop(ps_id).stop()
    process_set._invalidate()
    return True


def _refuse_while_joined(call):
    """Before a call on a communicator itself, which a rank that has joined (hvd.join) never
    enters, once its arguments are checked: refused while a rank has joined, as Horovod refuses
    all but allreduce then."""
    from . import horovod as _hvd
    s = _hvd._s()
    if s.groups[0].fusion.joined:
        raise _hoop.MismatchError(f"hoop.torch: rank {s.world.rank}: {call} cannot run while a rank has joined "
                                  "(hvd.join): until every rank has joined, only allreduce runs")


def _group(process_set, call):
    """The runtime of the set a call names, on a rank it includes."""
    from . import horovod as _hvd
    s = _hvd._s()
    if process_set is None or process_set is global_process_set:
        return s.groups[0]
    if not isinstance(process_set, ProcessSet):
        raise ValueError(f"hoop.torch: rank {s.world.rank}: {call}: process_set must be a ProcessSet, not "
                         f"{type(process_set).__name__}")
    group = s.groups.get(process_set.process_set_id) if process_set.process_set_id is not None else None
    if group is None or group.ranks != process_set.ranks:
        raise ValueError(f"hoop.torch: rank {s.world.rank}: {call}: {process_set} is not registered "
                         "(hvd.init(process_sets=...) or hvd.add_process_set)")
    if group.comm is None:
        raise ValueError(f"hoop.torch: rank {s.world.rank}: {call}: this rank is not part of {process_set}")
    return group


def _root(group, root_rank, call):
    """A call's root, a world rank, as a rank of the set's communicator."""
    try:
        return group.ranks.index(int(root_rank))
    except ValueError:
        raise ValueError(f"hoop.torch: rank {group.ranks[group.comm.rank]}: {call}: root_rank {root_rank} is not in "
                         f"the process set of ranks {group.ranks}") from None
