"""Horovod's Adasum for hoop.torch's Horovod-style API (horovod.py): op=hvd.Adasum on allreduce
and on DistributedOptimizer.

Adasum (Maleki et al., "Scaling Distributed Training with Adaptive Summation", MLSys 2021)
combines two ranks' vectors a and b as

    (1 - a.b / (2 |a|^2)) a + (1 - a.b / (2 |b|^2)) b

(a coefficient is 1 where its vector's squared norm is below sqrt(DBL_MIN), as Horovod's): their
sum where they are orthogonal, their average where they are equal. Over n ranks it is a binary
tree over the ranks in order: pairs (0, 1), (2, 3), ... first, then pairs of pairs, and so on,
each pair's lower ranks giving a. That is the tree Horovod's vector-halving distance-doubling
reduction computes; here each level's partners exchange whole vectors (recursive doubling), in
float64, the lower of the two computes the three dot products and sends them to the upper, and
both combine alike, so every rank ends with the same bits, rounded once to the tensor's dtype.
n need not be a power of two (Horovod refuses that on the CPU): with p the largest power of two
up to n, ranks p..n-1 first fold into ranks 0..n-p-1 (rank r's vector as a, rank r + p's as b),
ranks 0..p-1 run the tree, and ranks r + p get the result from rank r.

An Adasum allreduce runs at the call, on the caller's thread, over the process set's
communicator (any set, not only the global one as with Horovod), one tensor at a time (each
tensor's dot products over the whole tensor, as Horovod's per-tensor coefficients): every rank
makes its Adasum calls in the same order. float16, bfloat16, float32 and float64 tensors; CUDA
ones through host memory; prescale_factor and postscale_factor apply; compression= does not.

DistributedOptimizer(op=hvd.Adasum) is Horovod's delta optimizer: step() runs the wrapped
optimizer on this rank's own gradients (its state, momentum say, stays this rank's), takes each
parameter's change from where the step started, and sets the parameter to the start plus the
Adasum of the ranks' changes, one parameter after another in the optimizer's order.
"""
import math
import sys

import numpy as np
import torch

_TINY = math.sqrt(sys.float_info.min)  # below it a squared norm counts as zero (Horovod's bound)
_FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
_TAG = 0x6164  # the point-to-point tag of Adasum's messages ("ad")


def _coefficients(a, b):
    dot, aa, bb = float(np.dot(a, b)), float(np.dot(a, a)), float(np.dot(b, b))
    return (1.0 - dot / aa * 0.5 if aa >= _TINY else 1.0,
            1.0 - dot / bb * 0.5 if bb >= _TINY else 1.0)


def _pair(comm, mine, partner, lower):
    """One level: mine combined with partner's vector, the lower rank's as a; both partners end
    with the same bits (the lower one computes the coefficients and sends them)."""
    theirs = np.empty_like(mine)
    req = comm.send(mine, partner, _TAG, -1, True)
    comm.recv(theirs, partner, _TAG, -1, False)
    req.wait()
    coef = np.empty(2, np.float64)
    if lower:
        coef[:] = _coefficients(mine, theirs)
        comm.send(coef, partner, _TAG, -1, False)
        a, b = mine, theirs
    else:
        comm.recv(coef, partner, _TAG, -1, False)
        a, b = theirs, mine
    return coef[0] * a + coef[1] * b


def adasum(comm, vector):
    """The Adasum of every rank's float64 vector over comm (a collective of its ranks, the same
    length on each): a new array, the same bits on every rank."""
    n, r = comm.size, comm.rank
    p = 1 << (n.bit_length() - 1)
    if r >= p:  # an extra rank: folds into rank r - p, then takes the result from it
        comm.send(vector, r - p, _TAG, -1, False)
        out = np.empty_like(vector)
        comm.recv(out, r - p, _TAG, -1, False)
        return out
    acc = vector
    if r + p < n:
        acc = _pair_fold(comm, acc, r + p)
    level = 1
    while level < p:
        acc = _pair(comm, acc, r ^ level, lower=not r & level)
        level <<= 1
    if r + p < n:
        comm.send(acc, r + p, _TAG, -1, False)
    return acc


def _pair_fold(comm, mine, extra):
    """A rank below p takes its extra rank's vector (b) into its own (a)."""
    theirs = np.empty_like(mine)
    comm.recv(theirs, extra, _TAG, -1, False)
    ac, bc = _coefficients(mine, theirs)
    return ac * mine + bc * theirs


def allreduce_adasum(tensor, output, comm, prescale, postscale, call):
    """tensor's Adasum over comm into output (output may be tensor)."""
    if tensor.dtype not in _FLOATS:
        raise TypeError(f"hoop.torch: rank {comm.rank}: {call}: Adasum takes float16, bfloat16, float32 and "
                        f"float64 tensors, not {tensor.dtype}")
    host = tensor.detach().to("cpu", torch.float64).contiguous()
    if prescale != 1.0:
        host.mul_(prescale)
    result = torch.from_numpy(adasum(comm, host.numpy().reshape(-1))).view(tensor.shape)
    if postscale != 1.0:
        result.mul_(postscale)
    with torch.no_grad():
        output.copy_(result)
    return output


class _DistributedAdasumOptimizer:
    """Mixed into the wrapped optimizer's class (horovod_training.DistributedOptimizer)."""

    def _hoop_adasum_setup(self, named_parameters, comm):
        params = [p for group in self.param_groups for p in group["params"]]
        names = dict((id(p), n) for n, p in (named_parameters or []))
        self._hoop_params = [p for p in params if p.requires_grad]
        self._hoop_names = {p: names.get(id(p), f"noname.{i}") for i, p in enumerate(params)}
        self._hoop_comm = comm

    def synchronize(self):
        """Nothing to wait for: the Adasum of the changes runs in step()."""

    def set_backward_passes_per_step(self, passes):
        """Taken for Horovod's signature: gradients add up in .grad until step() anyway."""
        if passes <= 0:
            raise ValueError("hoop.torch: DistributedOptimizer: backward_passes_per_step must be > 0")

    def skip_synchronize(self):
        raise AssertionError("hoop.torch: DistributedOptimizer: skip_synchronize() does not apply with op=Adasum "
                             "(as with Horovod)")

    def step(self, closure=None):
        starts = [p.detach().clone() for p in self._hoop_params]
        loss = super(self.__class__, self).step(closure)
        for p, start in zip(self._hoop_params, starts):
            with torch.no_grad():
                delta = p.detach() - start
                allreduce_adasum(delta, delta, self._hoop_comm, 1.0, 1.0, "DistributedOptimizer")
                p.copy_(start + delta)
        return loss

