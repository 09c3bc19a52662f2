"""hoop-parallelize: turns a single-process PyTorch training script into a data-parallel one.

    hoop-parallelize train.py -o train_dist.py [--style horovod|ddp] [--check]

It reads the script with the standard library's `ast` to find what to change, and edits the
original text only at those places, so the comments and layout of everything else stay as they
were (libcst would keep them too, but it is not in Debian and Debian's Python takes no pip
packages outside a virtual environment). It prints what it changed as a unified diff, then a
list of the changes and of anything it left for a person, marked in the output with
"# hoop-parallelize:" comments. Where it cannot make a change safely it refuses (exit code 2,
nothing written) rather than write a script that runs but is silently wrong.

The changes (--style horovod, the default, uses hoop.torch's Horovod-style API; --style ddp,
DistributedDataParallel over the torch.distributed backend "hoop"):
  - hoop.torch imported and initialised after the script's imports;
  - where the script uses CUDA, the device pinned to the local rank ("cuda:0" made "cuda", a GPU
    the script picks by number, set_device(args.gpu), .cuda(args.gpu), made that rank's), and
    nn.DataParallel kept to that GPU (horovod) or dropped for the DDP wrap (ddp);
  - each torch.optim optimizer's learning rate scaled by the number of ranks (a parameter
    group's own "lr" too, and schedulers' own rates: OneCycleLR/CyclicLR's bounds, SWALR's
    swa_lr, eta_min, min_lr), but LBFGS's, whose closure's loss is averaged at each evaluation so
    that its line search takes the same steps on every rank;
  - horovod: the optimizer wrapped in hvd.DistributedOptimizer, the model's parameters and the
    optimizer's state broadcast from rank 0 (the model found through model.parameters() or
    parameter groups made from its named_parameters(), its parts' parameters() or its tensors,
    the whole model where only a part of it is optimized; with several
    optimizers, each one's tensor names prefixed by its model's; an optimizer a function returns,
    as configure_optimizers() does, alone or in a tuple (`model, opt = get_model()`), wrapped
    where its result is assigned; one built through a parameter defaulting to a torch.optim class,
    `fit(..., opt_func=torch.optim.SGD)`, too); ddp: the model wrapped
    in DistributedDataParallel (which broadcasts rank 0's parameters), its state_dict() and its
    own methods and attributes (a VAE's decode()) read from .module, and the wrapped model given
    wherever the script kept the plain one before (another name, an object of its classes),
    asking DDP to find unused parameters where the model's class keeps a layer its forward()
    never reaches (an auxiliary head, a decoder only generate() runs);
  - each training DataLoader (of a loop that runs backward, itself or through the functions and
    methods it calls) given a DistributedSampler (its shuffle= moved to the sampler; over
    Subset(dataset, idx) in place of a SubsetRandomSampler(idx); a WeightedRandomSampler, or a
    RandomSampler with replacement, kept: each epoch one draw, the same on every rank, dealt out;
    the sampler a batch_sampler=BatchSampler(sampler, ...) batches, alike),
    followed through names, returns, arguments and attributes (a trainer class's
    self.data_loader, an object's dm.train_loader) and containers (dataloaders[phase] of a dict
    of loaders: every loader in it split), iterated by `for` or by next() on iter() of it; the
    sampler's set_epoch(epoch) called at the top of the epoch loop (a loop that iterates
    it, or calls a function or method that does), else where a step loop makes a new iterator
    over it (the epoch goes up by one), on the loader under a wrapper of the script's own
    (`DeviceDataLoader(train_dl, device)` keeping self.dl); manual batching over range(0, N, B) (or enumerate of it)
    or over a tensor's batches (zip(X.split(B), Y.split(B)))
    split so that each rank takes every size()-th batch, the same count on each, in rank 0's order
    (a permutation drawn for it broadcast, a shuffle in place from rank 0's state); batches drawn at
    random (torch.randint in a get_batch()) drawn apart: the generators seeded by rank before the
    training loop; torch's (NumPy's, random's) global generator seeded alike on every rank at
    start-up where the script does not seed it at the top level, so that every rank makes the same
    random_split or shuffled index list, and drawing a split again in the loop that trains (a
    k-fold loop's) from rank 0's generator state; files listed (os.listdir, glob, pathlib's glob, rglob,
    iterdir) sorted where their order is read, so that every host's copy lists alike; data fetched
    (download=True, urlretrieve, extractall, ...), and a file made where an `if` finds it missing
    (`if not os.path.exists(p): torch.save(x, p)`), by one rank at a time, rank 0 first;
  - evaluation metrics (names accumulated with += inside `with torch.no_grad():` or
    inference_mode()) averaged over the ranks after the block (numbers and one-element tensors,
    their type kept), or summed where the block iterates a split loader and the name is not
    divided by this rank's share afterwards (a count, or one over the set's size); a ratio over a
    split loader's len(loader.dataset), its dataset's len(dataset), a name or dict holding those
    (n_val, dataset_sizes[phase]), as `/` or `/=` (a count of this rank's share over the whole
    set), taken over this rank's share and averaged; so is one after a loop batched by hand of
    what it accumulated over the whole data's size or batch count (`total / n_batches`,
    `correct / len(X)`); SWA's update_bn over the split loader: the batch-norm statistics averaged
    over the ranks after it;
  - parameters updated by hand, without an optimizer (`for p in model.parameters():
    p.data.add_(p.grad, alpha=-lr)`, word_language_model's): the model wrapped in DDP (ddp) or
    broadcast from rank 0 (horovod, which also averages its gradients right after the backward
    before the update); the rate beside p.grad scaled by the number of ranks;
  - gradient clipping (clip_grad_norm_, clip_grad_value_): horovod: optimizer.synchronize() first,
    so the averaged gradients are clipped (step() then has nothing left to wait for); ddp: as is
    (the gradients are averaged by the end of backward);
  - gradient accumulation (step() under an `if` in the loop that runs backward) and several
    backward passes per step (a GAN's discriminator on real and fake data, its generator through
    the discriminator): ddp: as is; horovod: synchronize() of each optimizer stepped in the loop
    after each backward, so every pass is averaged as it comes (what DDP does) whatever the
    pattern of steps;
  - AMP's GradScaler: horovod: optimizer.synchronize() before scaler.unscale_(opt) or
    scaler.step(opt), which read the gradients;
  - OneCycleLR/CyclicLR: its max_lr (and base_lr) scaled like the optimizer's rate, which it
    overrides;
  - print, logging (basicConfig too), torch.save and other file writes (to_csv, savefig,
    write_text too), shutil.rmtree and os.remove done on rank 0 only;
    tqdm's bars drawn by rank 0 only; a SummaryWriter or a file opened for writing outside a
    `with` block (a CSV log) made on rank 0 only (the others get a stand-in that does nothing), a
    logging FileHandler a NullHandler elsewhere; where rank 0 writes files, torch.load waits for
    it first (a barrier), so every rank loads the checkpoint it saved; writes into a temporary
    directory of the process's own (TemporaryDirectory, mkdtemp) stay on every rank;
  - experiment trackers (wandb, mlflow, comet_ml, neptune, aim, clearml, dvclive, swanlab) are
    rank 0's: what their imports bind is the same stand-in on the other ranks;
It refuses, naming the line, a script that is already distributed (or trains through Accelerate,
Lightning, DeepSpeed or transformers' Trainer, which distribute it themselves), trains nothing (no
.backward()), updates its parameters without a torch.optim optimizer other than in a loop over a
model's parameters() (through a custom factory, or on tensors of its own), or gives a training
DataLoader a sampler of its own other than those above (one of the script's own classes, say) or
a batch sampler other than a BatchSampler over one of them, or reads an IterableDataset (a stream, which takes no sampler).
--check runs the result on 2 ranks under hooprun for a few optimizer steps (updates by hand, where
there is no optimizer) and compares the ranks' parameters then (bitwise); a failed check leaves the
script at OUTPUT.failed instead.
"""
import argparse
import ast
import difflib
import os
import sys

from hoop._parallelize.agree import Agreement
from hoop._parallelize.data import DataSplitting
from hoop._parallelize.ddp import DdpWrap
from hoop._parallelize.devices import Devices
from hoop._parallelize.downloads import Downloads
from hoop._parallelize.folds import Folds
from hoop._parallelize.listings import Listings
from hoop._parallelize.edits import CLIPPERS, CYCLIC, FRAMEWORKS, MARK, Edits, Refused, call_name, last_name
from hoop._parallelize.check import check, find_hooprun
from hoop._parallelize.manual import ManualUpdates
from hoop._parallelize.optimizers import Optimizers
from hoop._parallelize.orders import Orders
from hoop._parallelize.rank0 import RankZero
from hoop._parallelize.samplers import Samplers
from hoop._parallelize.scopes import Scopes
from hoop._parallelize.seeds import Seeds
from hoop._parallelize.shares import ManualShares
from hoop._parallelize.stats import BatchStats
from hoop._parallelize.trackers import Trackers
from hoop._parallelize.unused import UnusedParams


class Converter(Scopes, Optimizers, DataSplitting, Samplers, Orders, Seeds, RankZero, ManualShares, BatchStats,
                ManualUpdates, Trackers, Agreement, Devices, DdpWrap, UnusedParams, Listings, Downloads,
                Folds):
    """One script's conversion (convert()): the distributed setup, the optimizers and the
    gradients' synchronisation here; beside, in _parallelize/: what names and calls mean
    (Scopes, scopes.py), which calls build optimizers and from what model (Optimizers,
    optimizers.py), the data's split (DataSplitting, data.py), what each rank draws at
    random (Seeds, seeds.py), what rank 0 alone does or every rank averages (RankZero, rank0.py),
    experiment trackers (Trackers, trackers.py), leaving training together (Agreement, agree.py),
    one GPU per rank (Devices, devices.py), the DDP wrap (DdpWrap, ddp.py), listed files (Listings)."""

    def __init__(self, text, style):
        self.text, self.style = text, style
        try:
            self.tree = ast.parse(text)
        except SyntaxError as e:
            raise Refused(f"the script does not parse: {e}") from None
        self.e = Edits(text)
        self.changes, self.notes = [], []
        self.parent = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parent[child] = node
        h = style == "horovod"
        # torch.distributed's name in a DDP script: `dist` unless the script binds it itself (a
        # Categorical in RL code, a distance), then _hoop_dist
        self.DIST = "_hoop_dist" if not h and "dist" in self.bound_names() else "dist"
        self.RANK = "hvd.rank()" if h else f"{self.DIST}.get_rank()"
        self.LOCAL_RANK = "hvd.local_rank()" if h else "int(__import__('os').environ.get('LOCAL_RANK', 0))"
        self.BARRIER = "hvd.barrier()" if h else f"{self.DIST}.barrier()"
        self.SIZE = "hvd.size()" if h else f"{self.DIST}.get_world_size()"
        self.RANK0 = f"if {self.RANK} == 0:  {MARK} rank 0 only"

    # ---- helpers

    def stmt_of(self, node):
        while not isinstance(node, ast.stmt):
            node = self.parent[node]
        return node

    def enclosing(self, node, types):
        node = self.parent.get(node)
        while node is not None and not isinstance(node, types):
            node = self.parent.get(node)
        return node

    # ---- checks that refuse

    def refuse_if_not_convertible(self):
        calls = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call)]
        names = {call_name(c) or "" for c in calls}
        imported = {a.name for n in ast.walk(self.tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names} | {n.module or "" for n in ast.walk(self.tree) if isinstance(n, ast.ImportFrom)}
        if any(x.endswith("init_process_group") or x in ("hvd.init", "hoop.init") for x in names) or \
                any(m.startswith(("horovod", "hoop")) for m in imported):
            raise Refused("the script is distributed already (it initialises torch.distributed, Horovod or hoop)")
        called = {x.split(".")[-1] for x in names}
        own = sorted({m.split(".")[0] for m in imported if m.split(".")[0] in FRAMEWORKS} | {
            "DistributedDataParallel" for x in names if x.endswith("DistributedDataParallel")} | {
            ("transformers'" if n.module.startswith("transformers") else "trl's") + " " + a.name
            for n in ast.walk(self.tree) if isinstance(n, ast.ImportFrom)
            and (n.module or "").split(".")[0] in ("transformers", "trl")
            for a in n.names if a.name.endswith("Trainer") and a.name in called} | {
            f"transformers' {x.split('.')[-1]}" for x in names if x.startswith("transformers.") and x.endswith("Trainer")})
        if own:
            raise Refused(f"the script trains through {', '.join(own)}, which runs data-parallel by itself: launch it "
                          "the way that documents (accelerate launch or torchrun, a Trainer's strategy, the deepspeed "
                          "launcher), or on hoop's torch.distributed backend")
        if not any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in calls):
            grads = sorted(c.lineno for c in calls if (call_name(c) or "").endswith("autograd.grad"))
            if grads and self.gradient_writes():
                raise Refused(f"line {grads[0]}: no .backward() call: the gradients come from torch.autograd.grad "
                              "and are set by hand; it converts scripts whose backward() passes make them (average "
                              "such gradients yourself: hvd.DistributedOptimizer does at step())")
            raise Refused("no .backward() call: this does not look like a training script")
        starter = self.own_processes(calls)
        if starter is not None:
            raise Refused(f"line {starter.lineno}: the script trains in processes it starts itself "
                          f"({call_name(starter) or starter.func.attr}: Hogwild, or a process per GPU); it converts "
                          "scripts that train in one process: train in the process itself, and start the ranks with "
                          "hooprun")
        self.optimizers = [c for c in calls if self.is_optimizer(c)]
        self.manual_updates = [] if self.optimizers else self.find_manual_updates()
        if not self.optimizers and not self.manual_updates:
            first = min((c for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "backward"),
                        key=lambda c: c.lineno)
            raise Refused(f"line {first.lineno}: backward() runs but no torch.optim optimizer is constructed (the "
                          "parameters updated by a custom optimizer factory, or by hand other than in a loop over "
                          "model.parameters()): use a torch.optim optimizer, "
                          "or average the gradients yourself before the update (hvd.allreduce_ on each p.grad, or "
                          "DistributedDataParallel on the model)")
        needed = ("hvd", "DistributedSampler") if self.style == "horovod" else (self.DIST, "DistributedSampler")
        clash = sorted(self.bound_names() & set(needed))
        if clash:
            raise Refused(f"the script binds the name '{clash[0]}', which the converted script needs")

    def own_processes(self, calls):
        """The call that starts processes running a function of the script that trains
        (multiprocessing's Process(target=f), torch.multiprocessing.spawn(f), a pool's or an
        executor's map/submit of f), else None. A DataLoader's workers are not the script's."""
        fns = self.functions()
        for c in calls:
            last = (call_name(c) or (c.func.attr if isinstance(c.func, ast.Attribute) else "")).split(".")[-1]
            if last == "Process":
                target = next((k.value for k in c.keywords if k.arg == "target"), None)
            elif last in ("spawn", "start_processes") or (isinstance(c.func, ast.Attribute) and last in (
                    "map", "starmap", "imap", "imap_unordered", "map_async", "starmap_async", "apply", "apply_async",
                    "submit")):
                target = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg in ("fn", "func")), None)
            else:
                continue
            if isinstance(target, ast.Name) and target.id in fns and self.trains(fns[target.id]):
                return c
        return None

    def bound_names(self):
        """Every name the script binds: assigned, a parameter, imported (but to what the converted
        script imports under it: torch.distributed as dist, DistributedSampler), a def or class."""
        tree = self.tree
        same = {("torch.distributed", "dist"), ("torch.utils.data.distributed.DistributedSampler", "DistributedSampler")}
        return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))} | {
            a.arg for a in ast.walk(tree) if isinstance(a, ast.arg)} | {
            (a.asname or a.name).split(".")[0] for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))
            for a in n.names if (f"{n.module}.{a.name}" if isinstance(n, ast.ImportFrom) else a.name,
                                 a.asname or a.name) not in same} | {
            d.name for d in ast.walk(tree) if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}

    # ---- the changes

    def imports_and_init(self):
        body = self.tree.body
        last = None
        for stmt in body:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                last = stmt
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and last is None:
                continue  # the docstring
            else:
                break
        if last is None:
            raise Refused("no imports at the top of the script (it cannot use torch without them)")
        uses_cuda = "cuda" in self.text
        heading = body[:body.index(last) + 1]
        # What hoop adds says torch.…; a script of `from torch import nn, optim` lines alone has no `torch`.
        lines = [] if any(isinstance(s, ast.Import) and any(a.asname is None and a.name.split(".")[0] == "torch"
                                                             for a in s.names) for s in heading) else [
            f"import torch  {MARK} for what hoop-parallelize adds"]
        if self.style == "horovod":
            lines += [f"import hoop.torch as hvd  {MARK} the Horovod-style API"]
            if self.loaders:
                lines += ["from torch.utils.data.distributed import DistributedSampler"]
            lines += ["", "hvd.init()  " + MARK + " join the job (hooprun, mpirun, Slurm or torchrun)"]
        else:
            lines += [f"import torch.distributed as {self.DIST}", "import hoop.torch  " + MARK + " registers the backend 'hoop'"]
            if self.loaders:
                lines += ["from torch.utils.data.distributed import DistributedSampler"]
            lines += ["", f"{self.DIST}.init_process_group('hoop')  " + MARK + " env:// (hooprun and torchrun set it)"]
        if uses_cuda:
            lines += ["if torch.cuda.is_available():  " + MARK + " one GPU per local rank",
                      f"    torch.cuda.set_device({self.LOCAL_RANK})"]
        self.one_gpu_per_rank(self.LOCAL_RANK)
        seeds, seeded = self.same_draws()
        lines += seeds
        lines += self.rank0_helpers()
        top = {s for s in body[:body.index(last) + 1] if isinstance(s, (ast.Import, ast.ImportFrom))}
        lines += self.trackers_rank0(top)
        lines += self.agree_helper()
        if self.metric_blocks or self.dataset_ratios or self.closure_helper():
            lines += self.metric_helper()
        lines += self.closure_helper()
        lines += self.stats_helper() + self.manual_helper() + self.drawn_helper() + self.order_helper()
        lines += self.download_helper()
        self.e.insert_after(last, lines, "", first=True)  # before a loader on the next line is given its sampler
        self.changes.append(f"hoop.torch imported and initialised after line {last.end_lineno}"
                            + (" (the device pinned to the local rank)" if uses_cuda else ""))
        self.changes += [seeded] if seeded else []

    def scale_lr(self, call):
        if last_name(call) == "LBFGS":
            self.changes.append(f"line {call.lineno}: LBFGS's learning rate left as it is (the length of a "
                                "quasi-Newton step along the averaged gradients, not a rate per sample)")
            return
        for group in self.group_rates(call):  # parameter groups' own rates: {"params": ..., "lr": 1e-3}
            self.e.replace(group, f"({self.e.source(group)}) * {self.SIZE}")
            self.changes.append(f"line {group.lineno}: a parameter group's learning rate scaled by the number of ranks")
        lr = next((k for k in call.keywords if k.arg == "lr"), None)
        target = lr.value if lr is not None else (call.args[1] if len(call.args) > 1 else None)
        stars = [k for k in call.keywords if k.arg is None]
        if target is None and stars:  # SGD(params, **config["optimizer"]): the rate is the mapping's
            for k in stars:
                m = self.e.source(k.value)
                self.e.replace(k.value, f"({{**({m}), 'lr': ({m})['lr'] * {self.SIZE}}} if 'lr' in ({m}) else ({m}))")
            self.changes.append(f"line {call.lineno}: learning rate scaled by the number of ranks (the 'lr' of "
                                f"{', '.join('**' + self.e.source(k.value) for k in stars)})")
            return
        if target is None:
            stmt = self.stmt_of(call)
            self.e.insert_before(stmt.lineno, [f"{MARK} the learning rate is {call_name(call)}'s default: not "
                                               f"scaled by the number of ranks; give lr= times {self.SIZE}"],
                                 self.e.indent_of(stmt))
            self.notes.append(f"line {call.lineno}: {call_name(call)} without lr=: the default rate was not scaled")
            return
        self.e.replace(target, f"({self.e.source(target)}) * {self.SIZE}")
        self.changes.append(f"line {call.lineno}: learning rate scaled by the number of ranks")

    def wrap_optimizer(self, call):
        sites = self.optimizer_sites(call)
        if not sites or any(not isinstance(target, (ast.Name, ast.Attribute)) or not self.e.alone_on_lines(stmt)
                            for stmt, _, target in sites):
            raise Refused(f"line {call.lineno}: the optimizer is not built by a plain `name = {call_name(call)}(...)` "
                          "statement, nor returned by a function whose result is so assigned (alone, or unpacked "
                          "from a tuple): wrap it by hand")
        for stmt, model, target in sites:
            self.wrap_optimizer_at(call, stmt, model, target)

    def wrap_optimizer_at(self, call, stmt, model, target):
        opt = self.e.source(target)
        self.opt_names.append(opt)
        if self.style == "horovod":
            named = f", named_parameters={model}.named_parameters()" if model else ""
            if model and len(self.optimizers) > 1:  # the names must differ between the optimizers' tensors
                named = f", named_parameters=[({model + '.'!r} + n, p) for n, p in {model}.named_parameters()]"
            lines = [f"{opt} = hvd.DistributedOptimizer({opt}{named})  {MARK} gradients averaged over the ranks"]
            if model:
                lines.append(f"hvd.broadcast_parameters({model}.state_dict(), root_rank=0)  {MARK} rank 0's start")
            else:
                lines.append(f"{MARK} parameters not broadcast: the optimizer is not built from model.parameters()")
                self.notes.append(f"line {call.lineno}: the optimizer's parameters do not come from model.parameters(): "
                                  "broadcast the initial parameters yourself (hvd.broadcast_parameters)")
            lines.append(f"hvd.broadcast_optimizer_state({opt}, root_rank=0)")
            self.e.insert_after(stmt, lines)
            self.changes.append(f"line {stmt.lineno}: optimizer wrapped in hvd.DistributedOptimizer; parameters and "
                                "optimizer state broadcast from rank 0")
        else:
            if not model:
                raise Refused(f"line {call.lineno}: the optimizer is not built from model.parameters(), so the model "
                              "to wrap in DistributedDataParallel is unknown (try --style horovod)")
            self.wrap_model(stmt, model, after=target is not stmt.targets[0])  # after `model, opt = f()`

    def steps_of(self, opt):
        """The `opt.step()` calls, and AMP's `scaler.step(opt)`."""
        return [c for c in ast.walk(self.tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                and c.func.attr == "step" and (self.e.source(c.func.value) == opt
                                               or (len(c.args) == 1 and self.e.source(c.args[0]) == opt))]

    def is_backward(self, n):
        return isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"

    def sync_each_pass(self):
        """Horovod: a loop whose steps do not follow one backward pass each: a step taken only on
        some passes (`if (i + 1) % accum == 0: opt.step()`), or several backward passes per
        iteration (a GAN: the discriminator on real and on fake data, then the generator through
        the discriminator, whose parameters get gradients too). backward_passes_per_step would have
        to match the passes between steps exactly, across epoch ends too; instead, after every
        backward pass in the loop, each optimizer stepped there averages what that pass added, as
        DistributedDataParallel does, and the next pass adds to the average: the same sum for any
        pattern of steps, and no reduction still running when a module's zero_grad() clears."""
        done = set()
        for loop in ast.walk(self.tree):
            if not isinstance(loop, (ast.For, ast.While)) or id(loop) in done:
                continue
            inner = [o for o in ast.walk(loop) if o is not loop and isinstance(o, (ast.For, ast.While))]
            steps = [(o, c) for o in self.opt_names for c in self.steps_of(o) if c in set(ast.walk(loop))
                     and not any(c in set(ast.walk(i)) for i in inner)]
            backwards = [n for n in ast.walk(loop) if self.is_backward(n) and not any(n in set(ast.walk(i)) for i in inner)]
            conditional = [c for _, c in steps if self.enclosing(c, (ast.If,)) in set(ast.walk(loop))]
            if not steps or not backwards or (len(backwards) < 2 and not conditional):
                continue
            done.add(id(loop))
            opts = list(dict.fromkeys(o for o, _ in steps))
            why = "several backward passes per step" if len(backwards) > 1 else \
                "a step on some passes only (gradient accumulation)"
            for n in backwards:
                stmt = self.stmt_of(n)
                if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                    raise Refused(f"line {n.lineno}: {why}, and the backward shares its line with other code: call "
                                  f"{'.synchronize(), '.join(opts)}.synchronize() after each backward by hand")
                self.e.insert_after(stmt, [f"{o}.synchronize()  {MARK} {why}: each pass averaged over the ranks as it "
                                           "comes" for o in opts])
                self.changes.append(f"line {n.lineno}: {', '.join(o + '.synchronize()' for o in opts)} after each "
                                    f"backward pass ({why})")

    def gradient_readers(self):
        """[(call, statement, optimizer, what)] for the calls that read the gradients before
        step(): clipping (the optimizer whose step follows), and AMP's scaler.unscale_(opt) and
        scaler.step(opt) (it unscales, then steps)."""
        found = []
        for c in ast.walk(self.tree):
            if not isinstance(c, ast.Call):
                continue
            name = call_name(c) or ""
            last = name.split(".")[-1]
            if last in CLIPPERS and self.opt_names:  # none: updates by hand, averaged before the clipping
                opts = self.opt_names if len(self.opt_names) == 1 else [
                    o for o in self.opt_names if any(s.lineno > c.lineno for s in self.steps_of(o))][:1]
                if not opts:
                    raise Refused(f"line {c.lineno}: gradient clipping with several optimizers and no step after it: "
                                  "call the right optimizer's synchronize() before it by hand")
                found.append((c, self.stmt_of(c), opts[0], "clipped"))
            elif last in ("unscale_", "step") and isinstance(c.func, ast.Attribute) and len(c.args) == 1 \
                    and self.e.source(c.args[0]) in self.opt_names:
                found.append((c, self.stmt_of(c), self.e.source(c.args[0]), "unscaled (AMP)"))
        return found

    def sync_before_clipping(self):
        """Horovod: the gradients are averaged in place while backward's hooks run; clipping or
        unscaling them before step() waits for that would work on this rank's own, then have them
        overwritten: the ranks drift apart. synchronize() first; step() then has nothing to wait
        for. One per run of such statements (unscale_, clip, scaler.step)."""
        readers = self.gradient_readers()
        stmts = {id(st) for _, st, _, _ in readers}
        for c, stmt, opt, what in readers:
            if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                raise Refused(f"line {c.lineno}: the gradients are {what.split()[0]} on a line shared with other "
                              f"code: give it a line of its own, or call {opt}.synchronize() before it by hand")
            body = self.block_of(stmt)
            i = body.index(stmt) if stmt in body else 0
            if i > 0 and id(body[i - 1]) in stmts:
                continue  # the statement before it synchronized already
            if any(s is not stmt and s.lineno == stmt.lineno for _, s, _, _ in readers):
                continue
            self.e.insert_before(stmt.lineno, [f"{opt}.synchronize()  {MARK} the averaged gradients are {what}"],
                                 self.e.indent_of(stmt))
            self.changes.append(f"line {c.lineno}: {opt}.synchronize() before the gradients are {what}")

    def scale_cyclic_lr(self):
        """Schedulers that set rates of their own (OneCycleLR/CyclicLR's bounds, SWALR's target, a
        cosine schedule's floor, a plateau's least rate): scaled like the optimizer's (a rate of
        0 left as it is)."""
        for c in ast.walk(self.tree):
            name = call_name(c) if isinstance(c, ast.Call) else None
            if not name or name.split(".")[-1] not in CYCLIC:
                continue
            kind = name.split(".")[-1]
            for arg, at in CYCLIC[kind]:
                kw = next((k for k in c.keywords if k.arg == arg), None)
                target = kw.value if kw is not None else (c.args[at] if len(c.args) > at else None)
                if target is None or (isinstance(target, ast.Constant) and target.value == 0):
                    continue
                src = self.e.source(target)
                if isinstance(target, (ast.List, ast.Tuple)):  # one per parameter group
                    self.e.replace(target, f"[_v * {self.SIZE} for _v in {src}]")
                else:
                    self.e.replace(target, f"({src}) * {self.SIZE}")
                self.changes.append(f"line {c.lineno}: {kind}'s {arg} scaled by the number of ranks")

    def convert(self):
        self.refuse_if_not_convertible()
        self.ddp_models = {}
        self.find_loaders()
        self.find_downloads()
        self.find_metric_blocks()
        self.find_side_effects()
        self.find_trackers()
        self.find_exits()
        train = self.train_loaders = self.training_loaders()
        manual = False
        if not train:
            manual = self.shard_manual_batches() or self.reseed_random_batches()
            if not manual:
                self.refuse_no_training_loop()
        self.find_dataset_ratios(train)
        self.find_stats_passes()
        self.find_fold_draws()
        self.imports_and_init()
        for c, stmt, var in train:
            self.shard_loader(c, stmt, var)
        self.average_dataset_ratios()
        self.opt_names = []
        for opt in self.optimizers:
            self.scale_lr(opt)
            self.wrap_optimizer(opt)
        self.convert_manual_updates()
        self.scale_cyclic_lr()
        self.average_closure_losses()
        if self.style == "horovod":
            self.sync_each_pass()
            self.sync_before_clipping()
        if self.style == "ddp":
            self.ddp_module_access()
        self.grads_set_by_hand()
        self.average_metrics()
        self.average_stats()
        self.agree_on_exits()
        self.rank0_side_effects()
        self.sort_listings()  # last: it leaves alone what another change rewrites
        self.align_fold_draws()
        self.downloads_in_turn()  # last: its lines go next to the statement
        return self.e.apply()


def parallelize(text, style="horovod"):
    """(converted text, changes, notes) for a script's text; raises Refused."""
    c = Converter(text, style)
    out = c.convert()
    try:
        compile(out, "<converted>", "exec")  # never write what does not parse
    except SyntaxError as e:
        raise Refused(f"the converted script would not parse (its line {e.lineno}: {e.msg}; a limit of "
                      "hoop-parallelize: please report it with the script)") from None
    return out, c.changes, c.notes


def main(argv=None):
    from hoop import __version__  # the loaded library's, as every hoop tool prints it
    ap = argparse.ArgumentParser(prog="hoop-parallelize", description=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("script", help="the single-process training script")
    ap.add_argument("-o", "--output", required=True, help="where to write the distributed script")
    ap.add_argument("--style", choices=["horovod", "ddp"], default="horovod",
                    help="hoop.torch's Horovod-style API (default) or DistributedDataParallel over backend 'hoop'")
    ap.add_argument("--check", action="store_true", help="run the result on 2 ranks for a few optimizer steps and compare the ranks' parameters "
                         "(a failure moves the output to OUTPUT.failed)")
    ap.add_argument("--check-steps", type=int, default=3, help="optimizer steps (or updates by hand) --check runs (default 3)")
    ap.add_argument("--check-timeout", type=float, default=300, help="seconds --check may take (default 300)")
    ap.add_argument("--check-args", default="", help="arguments for the script under --check (one string)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no diff, only the summary")
    ap.add_argument("--version", action="version", version=f"hoop-parallelize (hoop) {__version__}")
    a = ap.parse_args(argv)
    if os.path.abspath(a.script) == os.path.abspath(a.output):
        print("hoop-parallelize: the output would overwrite the script; choose another -o", file=sys.stderr)
        return 2
    try:
        with open(a.script, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"hoop-parallelize: cannot read {a.script}: {e.strerror}", file=sys.stderr)
        return 2
    try:
        out, changes, notes = parallelize(text, a.style)
    except Refused as e:
        print(f"hoop-parallelize: {a.script}: refused: {e}; nothing written", file=sys.stderr)
        return 2
    try:
        with open(a.output, "w", encoding="utf-8") as f:
            f.write(out)
    except OSError as e:
        print(f"hoop-parallelize: cannot write {a.output}: {e.strerror}", file=sys.stderr)
        return 2
    if not a.quiet:
        sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True), out.splitlines(keepends=True),
                                                   a.script, a.output))
    print(f"hoop-parallelize: wrote {a.output} ({a.style} style):", file=sys.stderr)
    for c in changes:
        print(f"  changed: {c}", file=sys.stderr)
    for n in notes:
        print(f"  left for you: {n}", file=sys.stderr)
    if a.check:
        hooprun = find_hooprun()
        if not hooprun:
            print("hoop-parallelize: --check: no hooprun found next to this tool or on PATH", file=sys.stderr)
            return 2
        code, why = check(a.output, hooprun, a.check_steps, a.check_args.split(), a.check_timeout)
        if code == 0:
            print(f"hoop-parallelize --check: passed ({a.check_steps} steps on 2 ranks, their parameters "
                  "bitwise the same)", file=sys.stderr)
            return 0
        failed = a.output + ".failed"
        os.replace(a.output, failed)  # nothing left at -o that looks converted and checked
        print(f"hoop-parallelize --check: failed ({why}); the script is at {failed}, not {a.output}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
