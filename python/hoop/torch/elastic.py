"""Horovod's elastic API over hoop: `hvd.elastic` after `import hoop.torch as hvd`, so that a
Horovod elastic script runs with only its import changed, under elastic hooprun (--min-np,
--max-np, --host-discovery-script).

    @hvd.elastic.run
    def train(state):
        for state.epoch in range(state.epoch, epochs):
            for state.batch in range(state.batch, batches):
                ...                       # forward, backward, optimizer.step()
                if state.batch % 10 == 0:
                    state.commit()        # a point to come back to, and to take newcomers in
            state.batch = 0

    state = hvd.elastic.TorchState(model, optimizer, batch=0, epoch=0)
    state.register_reset_callbacks([on_reset])   # e.g. scale the learning rate by hvd.size()
    train(state)

How it maps onto hoop. A collective that fails because a rank was lost (hoop's UnavailableError,
AbortedError, RevokedError, or HorovodInternalError) ends up in run's wrapper: the state goes
back to its last commit (restore), the survivors shrink the world communicator (hoop_comm_shrink,
through the job's store: no restart, nothing read from disk), the Horovod-style API starts again
on it (a new tensor fusion runtime), the reset callbacks run, the state is synced from rank 0,
and the function is called again. At commit(), after the in-memory copy, the ranks ask how many
newcomers wait (hoop_comm_newcomers, a collective); if any, HostsUpdatedInterrupt takes them to
the wrapper, which grows the world by that many (hoop_comm_grow): elastic hooprun's replacements
(HOOP_JOIN=1) are admitted there, their own hvd.init() returning the grown world, and their
train(state) begins with the same sync, from rank 0's state. No rank's death or arrival is waited
for beyond what hoop's shrink and grow take.

Differences from Horovod: a newcomer joins only at a commit (Horovod's driver also interrupts
mid-batch when hosts change); hosts removed by the discovery script are lost ranks to the
others (hooprun stops them), not a planned reset; and hoop.torch's tensors are CPU tensors.
"""
import copy
import functools
import math

import torch

import hoop
from . import horovod as _hvd

__all__ = ["run", "State", "ObjectState", "TorchState", "ElasticSampler", "HorovodInternalError",
           "HostsUpdatedInterrupt"]


class HorovodInternalError(RuntimeError):
    """A collective failed because the job lost a rank (Horovod's name; hoop's own errors for the
    same, UnavailableError, AbortedError and RevokedError, are caught by run as well)."""


class HostsUpdatedInterrupt(RuntimeError):
    """Newcomers wait to be admitted (raised by State.commit / check_host_updates)."""

    def __init__(self, skip_sync=False, newcomers=0):
        super().__init__(f"{newcomers} newcomer(s) wait to be admitted")
        self.skip_sync = skip_sync
        self.newcomers = newcomers


_LOST = (HorovodInternalError, hoop.UnavailableError, hoop.AbortedError, hoop.RevokedError)


def _reset(newcomers):
    """A new world for the Horovod-style API: this one grown by `newcomers`, or the survivors'."""
    world = _hvd._s().world
    if newcomers:
        try:
            grown = world.grow(newcomers)
        except _LOST:  # a rank was lost meanwhile: the survivors first
            grown = None
        if grown is not None:
            try:
                _hvd._rebuild(grown)
                return
            except _LOST:
                world = grown
    for attempt in range(4):  # a rank that dies inside the shrink, or just after, costs one more
        shrunk = world.shrink()
        if attempt:
            world.free()  # the last try's, which _rebuild did not take
        try:
            _hvd._rebuild(shrunk)
            return
        except _LOST:
            world = shrunk
    raise HorovodInternalError("hoop.torch.elastic: four shrinks and still no working world communicator")


def run(func):
    """Horovod's hvd.elastic.run: calls func(state, ...) until it returns, going on through lost
    ranks and newcomers as the module's docstring says."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        reset, skip_sync, newcomers = False, False, 0
        while True:
            if reset:
                _reset(newcomers)
                state.on_reset()
            try:
                if not skip_sync:
                    state.sync()
                return func(state, *args, **kwargs)
            except _LOST:
                state.restore()
                skip_sync, newcomers = False, 0
            except HostsUpdatedInterrupt as e:
                skip_sync, newcomers = e.skip_sync, e.newcomers
            reset = True

    return wrapper


class State:
    """What run brings back after a loss and hands to newcomers: save, restore and sync are the
    subclass's; commit saves and then looks for newcomers."""

    def __init__(self):
        self._reset_callbacks = []

    def register_reset_callbacks(self, callbacks):
        """Functions called with no arguments after every change of the ranks (hvd.size() new)."""
        self._reset_callbacks.extend(callbacks)

    def on_reset(self):
        self._reset_handlers()
        for callback in self._reset_callbacks:
            callback()

    def _reset_handlers(self):
        pass

    def commit(self):
        """Keeps this state in memory to come back to, then admits newcomers if any wait."""
        self.save()
        self.check_host_updates()

    def check_host_updates(self):
        """Raises HostsUpdatedInterrupt when newcomers wait (a collective: every rank calls it at the
        same point, as commit does)."""
        waiting = _hvd._s().world.newcomers()
        if waiting:
            raise HostsUpdatedInterrupt(skip_sync=False, newcomers=waiting)

    def save(self):
        raise NotImplementedError

    def restore(self):
        raise NotImplementedError

    def sync(self):
        raise NotImplementedError


class ObjectState(State):
    """Plain values (anything pickle takes) as attributes: ObjectState(epoch=0, batch=0)."""

    def __init__(self, bcast_object=None, get_rank=None, **kwargs):
        super().__init__()
        self._bcast_object = bcast_object or _hvd.broadcast_object
        self._get_rank = get_rank or _hvd.rank
        self._keys = list(kwargs)
        for k, v in kwargs.items():
            setattr(self, k, v)
        self._saved = None
        self.save()

    def _values(self):
        return {k: getattr(self, k) for k in self._keys}

    def save(self):
        self._saved = copy.deepcopy(self._values())

    def restore(self):
        for k, v in copy.deepcopy(self._saved).items():
            setattr(self, k, v)

    def sync(self):
        """Rank 0's values on every rank (its last commit, or what it has now after a grow)."""
        values = self._bcast_object(self._values(), 0)
        for k, v in values.items():
            setattr(self, k, v)
        self.save()


class TorchState(ObjectState):
    """A model, an optimizer and plain values; ElasticSampler values are handled as samplers (their
    processed indices gathered from every rank at sync)."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        self.model, self.optimizer = model, optimizer
        self._samplers = {k: v for k, v in kwargs.items() if isinstance(v, ElasticSampler)}
        plain = {k: v for k, v in kwargs.items() if k not in self._samplers}
        for k, v in self._samplers.items():
            setattr(self, k, v)
        self._saved_model = self._saved_optimizer = None
        self._saved_samplers = {}
        super().__init__(**plain)

    def save(self):
        if self.model is not None:
            self._saved_model = copy.deepcopy(self.model.state_dict())
        if self.optimizer is not None:
            self._saved_optimizer = copy.deepcopy(self.optimizer.state_dict())
        self._saved_samplers = {k: s.state_dict() for k, s in self._samplers.items()}
        super().save()

    def restore(self):
        if self.model is not None and self._saved_model is not None:
            self.model.load_state_dict(self._saved_model)
        if self.optimizer is not None:
            if self._saved_optimizer is not None:
                self.optimizer.load_state_dict(self._saved_optimizer)
            if hasattr(self.optimizer, "_hoop_reset"):
                self.optimizer._hoop_reset()
        for k, saved in self._saved_samplers.items():
            self._samplers[k].load_state_dict(copy.deepcopy(saved))
        super().restore()

    def sync(self):
        if self.model is not None:
            _hvd.broadcast_parameters(self.model.state_dict(), root_rank=0)
        if self.optimizer is not None:
            _hvd.broadcast_optimizer_state(self.optimizer, root_rank=0)
        for k in sorted(self._samplers):
            self._samplers[k].sync()
        super().sync()

    def _reset_handlers(self):
        if self.optimizer is not None and hasattr(self.optimizer, "_hoop_reset"):
            self.optimizer._hoop_reset()
        for s in self._samplers.values():
            s.reset()


class ElasticSampler(torch.utils.data.Sampler):
    """Horovod's ElasticSampler: this rank's share of a dataset's indices for the epoch, less those
    already processed (record_batch), so that after the ranks change the rest of the epoch is
    shared out afresh: nothing twice, nothing left out. Shuffled by seed + epoch; each share padded
    to the same length (a few indices repeat at the end of an epoch, as in PyTorch's
    DistributedSampler)."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset, self.shuffle, self.seed = dataset, shuffle, seed
        self.epoch = 0
        self.processed_indices = set()
        self.indices = []
        self.reset()

    def set_epoch(self, epoch):
        """A new epoch: nothing processed yet."""
        self.epoch = epoch
        self.processed_indices = set()
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        """Marks this rank's batch `batch_idx` (of batch_size) of the epoch as processed."""
        self.record_indices(self.get_indices(batch_idx, batch_size))

    def record_indices(self, indices):
        self.processed_indices.update(indices)

    def get_indices(self, batch_idx, batch_size):
        start = batch_idx * batch_size
        return self.indices[start:min(start + batch_size, len(self.indices))]

    def state_dict(self):
        return {"epoch": self.epoch, "processed_indices": set(self.processed_indices)}

    def load_state_dict(self, state):
        self.epoch = state["epoch"]
        self.processed_indices = set(state["processed_indices"])
        self.reset()

    def sync(self):
        """Every rank's processed indices, and rank 0's epoch (TorchState.sync calls it)."""
        everyone = _hvd.allgather_object(self.processed_indices)
        epoch = _hvd.broadcast_object(self.epoch, 0)
        self.load_state_dict({"epoch": epoch, "processed_indices": set().union(*everyone)})

    def reset(self):
        """Shares out what the epoch has left over the ranks there are now."""
        self.num_replicas = _hvd.size() if _hvd.is_initialized() else 1
        self.rank = _hvd.rank() if _hvd.is_initialized() else 0
        self.remaining_indices = [i for i in range(len(self.dataset)) if i not in self.processed_indices]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def __iter__(self):
        order = list(self.remaining_indices)
        if self.shuffle:
            g = torch.Generator()
            g.manual_seed(self.seed + self.epoch)
            order = [order[i] for i in torch.randperm(len(order), generator=g).tolist()]
        if order:
            order += (order * (1 + self.total_size // len(order)))[:self.total_size - len(order)]
        self.indices = order[self.rank:self.total_size:self.num_replicas]
        return iter(self.indices)

    def __len__(self):
        return self.num_samples
