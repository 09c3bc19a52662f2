"""The Horovod-style API's training pieces (re-exported by horovod.py, `hvd.` in a script):

broadcast_parameters and broadcast_optimizer_state start every rank from root_rank's state;
DistributedOptimizer wraps an optimizer so that each gradient is submitted to the fusion runtime
as soon as backward has produced it and step() waits for them (a newer DistributedOptimizer over
the same parameters takes them over: the older one no longer submits them; process_set= limits it
to a process set's ranks, horovod_sets.py); SyncBatchNorm is batch norm over
the whole job's batch. All use only the calls horovod.py offers.
"""
import contextlib
import weakref

import torch

import hoop
from . import horovod as _hvd
from .horovod_adasum import _DistributedAdasumOptimizer


def broadcast_parameters(params, root_rank):
    """Sets every rank's parameters to root_rank's, in place: params is a model's state_dict() or
    named_parameters() (names must agree across ranks)."""
    items = sorted(params.items()) if isinstance(params, dict) else list(params)
    handles = []
    for name, p in items:
        if not isinstance(p, torch.Tensor):
            raise ValueError(f"hoop.torch: broadcast_parameters: '{name}' is a {type(p).__name__}, not a tensor")
        target = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(_hvd.broadcast_async_(target, root_rank, name=f"parameters.{name}"))
    for h in handles:
        _hvd.synchronize(h)


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """Sets every rank's optimizer state (and hyperparameters) to root_rank's. model (Horovod's,
    to find sparse parameters) is taken and not needed: the whole state travels as one object."""
    state = _hvd.broadcast_object(optimizer.state_dict(), root_rank, name="optimizer_state")
    if _hvd.rank() != root_rank:
        optimizer.load_state_dict(state)


def _written(grad):
    """What changes when a gradient tensor is written: its version (in-place ops, copy_) and its
    storage (`p.grad.data = g`, which leaves the version alone)."""
    return grad._version, (0 if grad.is_sparse else grad.data_ptr())


class _DistributedOptimizer:
    """Mixed into the wrapped optimizer's class (DistributedOptimizer below)."""

    def _hoop_setup(self, named_parameters, compression, backward_passes_per_step, op, gradient_predivide_factor,
                    sparse_as_dense, process_set):
        if op not in (_hvd.Average, _hvd.Sum):
            raise ValueError("hoop.torch: DistributedOptimizer: op must be Average, Sum or Adasum")
        if gradient_predivide_factor != 1.0 and op is not _hvd.Average:
            raise ValueError("hoop.torch: DistributedOptimizer: gradient_predivide_factor needs op=Average")
        params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named = list(named_parameters)
            names = [n for n, _ in named]
            if len(set(names)) != len(names):
                raise ValueError("hoop.torch: DistributedOptimizer: parameter names must be unique")
            by_id = {id(p): n for n, p in named}
            missing = [i for i, p in enumerate(params) if id(p) not in by_id]
            if missing:
                raise ValueError(f"hoop.torch: DistributedOptimizer: {len(missing)} of the optimizer's parameters are "
                                 "not in named_parameters")
            self._hoop_names = {p: by_id[id(p)] for p in params}
        else:
            self._hoop_names = {p: f"noname.{i}" for i, p in enumerate(params)}
        self._hoop_compression = compression
        self._hoop_sparse_as_dense = sparse_as_dense
        # A rank outside process_set takes no part: its step() uses its own gradients (Horovod's).
        self._hoop_set = process_set
        self._hoop_included = bool(process_set.included())
        self._hoop_passes = backward_passes_per_step
        # Average with a predivide factor f: x / f summed, times f / size (Horovod's meaning; the
        # size when the gradient is submitted, which an elastic job changes).
        self._hoop_op = _hvd.Sum
        self._hoop_average = op is _hvd.Average
        self._hoop_predivide = gradient_predivide_factor if op is _hvd.Average else 1.0
        self._hoop_handles = {}
        self._hoop_delay = {p: backward_passes_per_step for p in params}
        self._hoop_left = {}  # p -> weakref to the gradient the last synchronize() left it
        self._hoop_versions = {}  # p -> _written(p.grad) after the last step() or zero_grad()
        self._hoop_stepped = False  # step() since the last synchronize()
        self._hoop_sync = True
        self._hoop_hooks = []
        for p in params:
            # A parameter's gradient is submitted by the newest DistributedOptimizer built over it:
            # a script that builds a new optimizer for each fit() leaves the older ones' hooks
            # behind, which would otherwise submit the same gradient again, under the same name.
            p._hoop_optimizer = weakref.ref(self)
            if p.requires_grad and self._hoop_included:
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                acc.register_hook(self._hoop_hook(p))
                self._hoop_hooks.append(acc)  # keeps the accumulator, and its hook, alive

    def _hoop_submit(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # unused this step: it still takes part, as zeros
        if p.grad.is_sparse:
            if not self._hoop_sparse_as_dense:
                op = _hvd.Average if self._hoop_average else _hvd.Sum
                return _hvd.sparse_allreduce_async(p.grad, self._hoop_names[p], op, self._hoop_set)
            p.grad = p.grad.to_dense()
        pre = 1.0 / self._hoop_predivide
        post = self._hoop_predivide / self._hoop_set.size() if self._hoop_average else 1.0
        return _hvd.allreduce_async_(p.grad, name=self._hoop_names[p], op=self._hoop_op, prescale_factor=pre,
                                     postscale_factor=post, process_set=self._hoop_set,
                                     compression=self._hoop_compression)

    def _hoop_hook(self, p):
        def hook(*_):
            if p._hoop_optimizer() is not self:
                return  # a newer DistributedOptimizer over p submits it
            if self._hoop_handles.get(p) is not None and self._hoop_delay[p] <= 0:
                raise AssertionError(f"hoop.torch: DistributedOptimizer: the gradient of '{self._hoop_names[p]}' was "
                                     "computed again before step(); with several backward passes per step, set "
                                     "backward_passes_per_step")
            self._hoop_delay[p] -= 1
            if self._hoop_delay[p] == 0:
                self._hoop_handles[p] = self._hoop_submit(p)
        return hook

    def _hoop_set_by_hand(self, p):
        """Whether p's gradient was set by the script, with no backward pass through it since the
        last synchronize(): a tensor other than the one that synchronize() left (`p.grad = g` from
        torch.autograd.grad), or that one written into after a step() (`p.grad.copy_(g)`,
        `p.grad.data = g`; the tensor's version tells). A write between synchronize() and step() is
        the script's own work on the averaged gradient (clipping it), not a new gradient."""
        left = self._hoop_left.get(p)
        if p.grad is None or self._hoop_delay[p] != self._hoop_passes:
            return False
        if left is None or left() is not p.grad:
            return True
        return self._hoop_stepped and _written(p.grad) != self._hoop_versions.get(p)

    def _hoop_note_versions(self):
        self._hoop_versions = {p: _written(p.grad) for p in self._hoop_delay if p.grad is not None}

    def synchronize(self):
        """Waits for every gradient's allreduce. Where anything was added since the last one (a
        backward pass through some of the parameters, or a gradient set by hand), every parameter
        not yet submitted is submitted now, as Horovod does: one that a rank's pass did not reach
        (a branch of the model taken on some ranks only) as zeros. Where nothing was added (a GAN's
        generator after the discriminator's pass), nothing is."""
        if not self._hoop_included:
            return
        if any(self._hoop_delay[p] < self._hoop_passes or self._hoop_set_by_hand(p) for p in self._hoop_delay):
            for p in self._hoop_delay:
                if p.requires_grad and self._hoop_handles.get(p) is None:
                    self._hoop_handles[p] = self._hoop_submit(p)
        for p, h in list(self._hoop_handles.items()):
            if h is not None:
                out = _hvd.synchronize(h)
                if out is not p.grad:  # a sparse gradient's sum, a new tensor
                    p.grad = out
        self._hoop_handles.clear()
        for p in self._hoop_delay:
            self._hoop_delay[p] = self._hoop_passes
            self._hoop_left[p] = weakref.ref(p.grad) if p.grad is not None else None
        self._hoop_stepped = False

    def set_backward_passes_per_step(self, passes):
        """Horovod's: from now on, a gradient is submitted after every passes-th backward pass."""
        if passes <= 0:
            raise ValueError("hoop.torch: DistributedOptimizer: backward_passes_per_step must be > 0")
        self._hoop_passes = passes
        for p in self._hoop_delay:
            self._hoop_delay[p] = passes

    def _hoop_reset(self):
        """Forgets the gradients in flight (hoop.torch.elastic: their runtime is gone with the old
        ranks; the step they belonged to runs again)."""
        self._hoop_handles.clear()
        self._hoop_left.clear()
        self._hoop_versions.clear()
        for p in self._hoop_delay:
            self._hoop_delay[p] = self._hoop_passes

    @contextlib.contextmanager
    def skip_synchronize(self):
        """step() without synchronizing (call synchronize() first yourself, e.g. before clipping)."""
        self._hoop_sync = False
        try:
            yield
        finally:
            self._hoop_sync = True

    def step(self, closure=None):
        if self._hoop_sync:
            self.synchronize()
        out = super(self.__class__, self).step(None if closure is None else self._hoop_closure(closure))
        # The gradients' versions as the step leaves them: a later write into one is a new gradient.
        self._hoop_note_versions()
        self._hoop_stepped = True
        return out

    def _hoop_closure(self, closure):
        """A closure-taking optimizer (LBFGS) evaluates the loss and its gradients itself, as often
        as its line search needs: each evaluation's gradients are averaged (summed, op=Sum) before
        it goes on, and so is the loss it returns, so that every rank's line search and stopping
        tests see the same numbers and the ranks stay in step (one rank's own loss would have them
        take different step lengths, or stop after different numbers of evaluations)."""
        def evaluate():
            loss = closure()
            self.synchronize()
            number = isinstance(loss, (int, float)) and not isinstance(loss, bool)
            if not self._hoop_included or not (number or isinstance(loss, torch.Tensor) and loss.numel() == 1):
                return loss  # not one number: handed on as it is
            value = loss.detach() if isinstance(loss, torch.Tensor) else torch.tensor(float(loss), dtype=torch.float64)
            op = _hvd.Average if self._hoop_average else _hvd.Sum
            total = _hvd.allreduce(value, name="DistributedOptimizer.closure_loss", op=op, process_set=self._hoop_set)
            return total if isinstance(loss, torch.Tensor) else type(loss)(total.item())
        return evaluate

    def zero_grad(self, *args, **kwargs):
        if any(h is not None for h in self._hoop_handles.values()):
            raise AssertionError("hoop.torch: DistributedOptimizer: zero_grad() with gradients still being reduced; "
                                 "call step() or synchronize() first")
        out = super(self.__class__, self).zero_grad(*args, **kwargs)
        self._hoop_note_versions()  # zeros written in place are no gradient set by hand
        return out


def DistributedOptimizer(optimizer, named_parameters=None, compression=_hvd.Compression.none,
                         backward_passes_per_step=1, op=_hvd.Average, gradient_predivide_factor=1.0, num_groups=0,
                         groups=None, sparse_as_dense=False, process_set=_hvd.global_process_set):
    """optimizer, made to average (op=Sum: add) its gradients over the ranks of process_set before
    each step; op=Adasum: Horovod's delta optimizer (horovod_adasum.py). Sparse gradients are
    summed by allgather of their indices and values (or made dense first: sparse_as_dense=True).
    num_groups and groups (Horovod's way to make the allreduces of some parameters go together)
    are taken and change nothing: hoop's runtime fuses whatever gradients are ready together
    anyway."""
    _hvd._s()
    if groups is not None and not (isinstance(groups, list) and all(isinstance(g, list) for g in groups)):
        raise ValueError("hoop.torch: DistributedOptimizer: groups must be a list of lists of parameters")
    if num_groups < 0:
        raise ValueError("hoop.torch: DistributedOptimizer: num_groups must be 0 or more")
    if not isinstance(process_set, _hvd.ProcessSet):
        raise ValueError(f"hoop.torch: DistributedOptimizer: process_set must be a ProcessSet, not "
                         f"{type(process_set).__name__}")
    process_set._registered()  # raises for a set not registered
    adasum = op is _hvd.Adasum and process_set.included() and process_set.size() > 1
    if op is _hvd.Adasum and not adasum:
        op = _hvd.Average  # one rank, or a rank outside the set: its own step, as Horovod's
    mixin = _DistributedAdasumOptimizer if adasum else _DistributedOptimizer
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
               {k: v for k, v in mixin.__dict__.items() if not k.startswith("__")})
    dist_opt = cls.__new__(cls)
    dist_opt.__dict__.update(optimizer.__dict__)
    if adasum:
        dist_opt._hoop_adasum_setup(named_parameters, _hvd._group(process_set, "DistributedOptimizer").comm)
    else:
        dist_opt._hoop_setup(named_parameters, compression, backward_passes_per_step, op, gradient_predivide_factor,
                             sparse_as_dense, process_set)
    return dist_opt


# ---- SyncBatchNorm

class _SyncBatchNormFn(torch.autograd.Function):
    """Batch norm whose statistics are the whole job's batch: each rank's per-channel sums (of x,
    of x squared, and its count) are summed over the ranks; backward sums the per-channel sums
    of the gradient the same way. The weight's and bias's gradients stay this rank's own (the
    optimizer averages them over the ranks, as every other gradient)."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum):
        dims = [d for d in range(x.dim()) if d != 1]
        shape = [1, -1] + [1] * (x.dim() - 2)
        xd = x.double()
        local = torch.cat([xd.sum(dims), (xd * xd).sum(dims),
                           torch.tensor([x.numel() / x.shape[1]], dtype=torch.float64, device=x.device)])
        total = torch.from_numpy(hoop.allreduce(local.cpu().numpy(), hoop.SUM, comm=_hvd._s().world)).to(x.device)
        c = x.shape[1]
        count = total[2 * c].item()
        mean = total[:c] / count
        var = (total[c:2 * c] / count - mean * mean).clamp_min(0)
        invstd = 1.0 / torch.sqrt(var + eps)
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(momentum * mean.to(running_mean.dtype))
                unbiased = var * count / max(count - 1, 1)
                running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))
        x_hat = (xd - mean.view(shape)) * invstd.view(shape)
        y = x_hat
        if weight is not None:
            y = y * weight.double().view(shape) + bias.double().view(shape)
        ctx.save_for_backward(x_hat, invstd, weight)
        ctx.count, ctx.dims, ctx.shape = count, dims, shape
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, grad):
        x_hat, invstd, weight = ctx.saved_tensors
        dims, shape = ctx.dims, ctx.shape
        g = grad.double()
        sum_dy = g.sum(dims)
        sum_dy_xhat = (g * x_hat).sum(dims)
        both = torch.from_numpy(hoop.allreduce(torch.cat([sum_dy, sum_dy_xhat]).cpu().numpy(), hoop.SUM,
                                               comm=_hvd._s().world)).to(g.device)
        c = sum_dy.numel()
        w = weight.double() if weight is not None else torch.ones(c, dtype=torch.float64, device=g.device)
        dx = (g - (both[:c] / ctx.count).view(shape) - x_hat * (both[c:] / ctx.count).view(shape)) * \
            (w * invstd).view(shape)
        gw = sum_dy_xhat.to(weight.dtype) if weight is not None else None
        gb = sum_dy.to(weight.dtype) if weight is not None else None
        return dx.to(grad.dtype), gw, gb, None, None, None, None


class SyncBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """Horovod's hvd.SyncBatchNorm: batch norm over the whole job's batch in training (the ranks'
    statistics summed through hoop), this rank's running statistics in eval. CPU or CUDA tensors
    (the statistics cross through host memory), any number of dimensions after (N, C)."""

    def _check_input_dim(self, x):
        if x.dim() < 2:
            raise ValueError(f"hoop.torch.SyncBatchNorm: expected at least 2 dimensions (N, C, ...), got {x.dim()}")

    def forward(self, x):
        self._check_input_dim(x)
        if not self.training or not _hvd.is_initialized() or _hvd.size() == 1:
            return super().forward(x)
        momentum = self.momentum
        if self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if momentum is None:  # a cumulative moving average, as torch's BatchNorm does
                momentum = 1.0 / float(self.num_batches_tracked)
        return _SyncBatchNormFn.apply(x, self.weight, self.bias,
                                      self.running_mean if self.track_running_stats else None,
                                      self.running_var if self.track_running_stats else None, self.eps, momentum)
