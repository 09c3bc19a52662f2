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
  - where the script uses CUDA, the device pinned to the local rank;
  - each torch.optim optimizer's learning rate scaled by the number of ranks;
  - horovod: the optimizer wrapped in hvd.DistributedOptimizer, the model's parameters and the
    optimizer's state broadcast from rank 0 (the model found through model.parameters() or
    parameter groups made from its named_parameters(); with several optimizers, each one's tensor
    names prefixed by its model's); ddp: the model wrapped in DistributedDataParallel (which
    broadcasts rank 0's parameters), its state_dict() and its own methods and attributes (a VAE's
    decode()) read from .module;
  - each training DataLoader given a DistributedSampler (its shuffle= moved to the sampler) and
    the sampler's set_epoch(epoch) called at the top of the epoch loop (a loop that iterates it,
    or calls a function that does); manual batching over range(0, N, B) (or enumerate of it) split
    so that each rank takes every size()-th batch, the same count on each;
  - evaluation metrics (names accumulated with += inside `with torch.no_grad():`) averaged over
    the ranks after the block (numbers and one-element tensors, their type kept); a ratio over a
    training loader's len(loader.dataset) or its dataset's len(dataset), as `/` or `/=` (a count
    of this rank's share over the whole set), taken over this rank's share and averaged;
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
  - print, logging (basicConfig too), torch.save and other file writes done on rank 0 only;
    tqdm's bars drawn by rank 0 only; a SummaryWriter or a file opened for writing outside a
    `with` block (a CSV log) made on rank 0 only (the others get a stand-in that does nothing), a
    logging FileHandler a NullHandler elsewhere; where rank 0 writes files, torch.load waits for
    it first (a barrier), so every rank loads the checkpoint it saved.
It refuses, naming the line, a script that is already distributed, trains nothing (no
.backward()), updates its parameters without a torch.optim optimizer (by hand, as
word_language_model does, or through a custom factory), or gives a training DataLoader a sampler
of its own (WeightedRandomSampler). --check runs the result on 2 ranks under hooprun for a few optimizer steps and compares
the ranks' parameters then (bitwise); a failed check leaves the script at OUTPUT.failed instead.
"""
import argparse
import ast
import difflib
import os
import subprocess
import sys
import tempfile

OPTIMIZERS = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
              "Rprop", "LBFGS", "SparseAdam"}
WRITERS = {"torch.save", "np.save", "numpy.save", "np.savetxt", "numpy.savetxt", "np.savez", "numpy.savez", "json.dump",
           "pickle.dump", "plt.savefig", "shutil.copy", "shutil.copyfile", "shutil.copy2", "shutil.move", "os.makedirs",
           "os.mkdir", "os.replace", "os.rename"}
# Objects that write files as soon as they are made: made on rank 0 only (elsewhere a stand-in that
# does nothing, whatever is called on it).
MAKERS = {"SummaryWriter"}
# What DistributedDataParallel answers itself, as nn.Module does: everything else is read from its .module.
MODULE_ATTRS = {"train", "eval", "training", "parameters", "named_parameters", "buffers", "named_buffers", "children",
                "named_children", "modules", "named_modules", "state_dict", "load_state_dict", "to", "cuda", "cpu",
                "half", "float", "double", "bfloat16", "type", "zero_grad", "apply", "requires_grad_", "forward",
                "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                "register_backward_hook", "register_buffer", "register_parameter", "add_module", "no_sync", "module",
                "join", "share_memory", "get_submodule", "get_parameter", "get_buffer", "to_empty",
                "register_comm_hook", "__class__", "__dict__"}
FILE_HANDLERS = {"FileHandler", "RotatingFileHandler", "TimedRotatingFileHandler", "WatchedFileHandler"}
CLIPPERS = {"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"}
CYCLIC = {"OneCycleLR": ("max_lr",), "CyclicLR": ("base_lr", "max_lr")}
LOGGING = {"debug", "info", "warning", "error", "critical", "exception", "log", "basicConfig"}
MARK = "# hoop-parallelize:"


class Refused(Exception):
    """The script cannot be converted safely; the message says why."""


def dotted(node):
    """'torch.optim.SGD' for an attribute chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def call_name(node):
    return dotted(node.func) if isinstance(node, ast.Call) else None


class Edits:
    """Edits to the original text: replacements inside lines (no newlines), then whole-line
    insertions and statement wraps, applied from the bottom up so positions stay valid."""

    def __init__(self, text):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        self.spans = []  # (line, col, end_line, end_col, text)
        self.ops = []  # (line, order, kind, payload): kind "insert" (before line) or "wrap"
        self.unit = self._indent_unit()

    def _indent_unit(self):
        for line in self.lines:
            stripped = line.lstrip(" \t")
            if stripped.strip() and line != stripped:
                return line[:len(line) - len(stripped)]
        return "    "

    def indent_of(self, node):
        line = self.lines[node.lineno - 1]
        return line[:len(line) - len(line.lstrip(" \t"))]

    def alone_on_lines(self, node):
        """Whether the statement has its lines to itself (it can be wrapped or have lines put around it)."""
        first = self.lines[node.lineno - 1]
        last = self.lines[node.end_lineno - 1]
        before = first.encode()[:node.col_offset].decode(errors="replace")
        after = last.encode()[node.end_col_offset:].decode(errors="replace").strip()
        return not before.strip() and (not after or after.startswith("#"))

    def source(self, node):
        if node.lineno == node.end_lineno:
            return self.lines[node.lineno - 1].encode()[node.col_offset:node.end_col_offset].decode()
        first = self.lines[node.lineno - 1].encode()[node.col_offset:].decode()
        middle = self.lines[node.lineno:node.end_lineno - 1]
        last = self.lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode()
        return first + "".join(middle) + last

    def replace(self, node, text):
        self.spans.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))

    def insert_before(self, line, text_lines, indent):
        self.ops.append((line, 1, "insert", [indent + t + "\n" if t else "\n" for t in text_lines]))

    def insert_after(self, node, text_lines, indent=None):
        self.insert_before(node.end_lineno + 1, text_lines, self.indent_of(node) if indent is None else indent)

    def wrap(self, node, condition):
        self.ops.append((node.lineno, 0, "wrap", (node.end_lineno, self.indent_of(node), condition)))

    def apply(self):
        lines = list(self.lines)
        for (l0, c0, l1, c1, text) in sorted(self.spans, reverse=True):
            a, b = lines[l0 - 1].encode(), lines[l1 - 1].encode()
            merged = (a[:c0] + text.encode() + b[c1:]).decode()
            lines[l0 - 1:l1] = [merged]
            # A replacement across lines leaves fewer lines: keep later positions valid by padding.
            lines[l0:l0] = [""] * (l1 - l0)
        for line, _, kind, payload in sorted(self.ops, key=lambda o: (o[0], o[1]), reverse=True):
            if kind == "insert":
                lines[line - 1:line - 1] = payload
            else:
                end, indent, condition = payload
                for i in range(line - 1, end):
                    if lines[i].strip():
                        lines[i] = self.unit + lines[i]
                lines[line - 1:line - 1] = [indent + condition + "\n"]
        return "".join(lines)


class Converter:
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
        self.RANK = "hvd.rank()" if h else "dist.get_rank()"
        self.SIZE = "hvd.size()" if h else "dist.get_world_size()"
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

    def names_loaded(self, node):
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}

    # ---- checks that refuse

    def refuse_if_not_convertible(self):
        calls = [n for n in ast.walk(self.tree) if isinstance(n, ast.Call)]
        names = {call_name(c) or "" for c in calls}
        imported = {a.name for n in ast.walk(self.tree) if isinstance(n, (ast.Import, ast.ImportFrom))
                    for a in n.names} | {n.module or "" for n in ast.walk(self.tree) if isinstance(n, ast.ImportFrom)}
        if any(x.endswith("init_process_group") or x in ("hvd.init", "hoop.init") for x in names) or \
                any(m.startswith(("horovod", "hoop")) for m in imported):
            raise Refused("the script is distributed already (it initialises torch.distributed, Horovod or hoop)")
        if not any(isinstance(c.func, ast.Attribute) and c.func.attr == "backward" for c in calls):
            raise Refused("no .backward() call: this does not look like a training script")
        self.optimizers = [c for c in calls if self.is_optimizer(c)]
        if not self.optimizers:
            first = min((c for c in calls if isinstance(c.func, ast.Attribute) and c.func.attr == "backward"),
                        key=lambda c: c.lineno)
            raise Refused(f"line {first.lineno}: backward() runs but no torch.optim optimizer is constructed (the "
                          "parameters updated by hand, or by a custom optimizer factory): use a torch.optim optimizer, "
                          "or average the gradients yourself before the update (hvd.allreduce_ on each p.grad, or "
                          "DistributedDataParallel on the model)")
        for name in ("hvd", "dist", "DistributedSampler"):
            if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in ast.walk(self.tree)):
                raise Refused(f"the script assigns the name '{name}', which the converted script needs")

    def is_optimizer(self, call):
        name = call_name(call)
        if not name:
            return False
        parts = name.split(".")
        if parts[-1] not in OPTIMIZERS:
            return False
        if len(parts) == 1:  # from torch.optim import SGD
            return any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.optim")
                       and any(a.asname or a.name == parts[0] for a in n.names) for n in ast.walk(self.tree))
        return parts[-2] == "optim"

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
        lines = []
        if self.style == "horovod":
            lines += [f"import hoop.torch as hvd  {MARK} the Horovod-style API"]
            if self.loaders:
                lines += ["from torch.utils.data.distributed import DistributedSampler"]
            lines += ["", "hvd.init()  " + MARK + " join the job (hooprun, mpirun, Slurm or torchrun)"]
            local = "hvd.local_rank()"
        else:
            lines += ["import torch.distributed as dist", "import hoop.torch  " + MARK + " registers the backend 'hoop'"]
            if self.loaders:
                lines += ["from torch.utils.data.distributed import DistributedSampler"]
            lines += ["", "dist.init_process_group('hoop')  " + MARK + " env:// (hooprun and torchrun set it)"]
            local = "int(__import__('os').environ.get('LOCAL_RANK', 0))"
        if uses_cuda:
            lines += ["if torch.cuda.is_available():  " + MARK + " one GPU per local rank",
                      f"    torch.cuda.set_device({local})"]
            self.notes.append("the script uses CUDA: its device is pinned to the local rank, but hoop.torch takes CPU "
                              "tensors in this version, so tensors must stay on the CPU")
        if self.rank0_calls or self.rank0_makers:
            lines += ["", "", "class _HoopNothing:  " + MARK + " what rank-0-only calls give the other ranks: every use "
                      "of it does nothing",
                      "    def __getattr__(self, name):",
                      "        return self",
                      "",
                      "    def __call__(self, *args, **kwargs):",
                      "        return self",
                      "",
                      "    def __enter__(self):",
                      "        return self",
                      "",
                      "    def __exit__(self, *exc):",
                      "        return False",
                      "",
                      "    def __iter__(self):",
                      "        return iter(())",
                      "", "",
                      "def _hoop_on_rank0(fn):  " + MARK + " fn on rank 0; elsewhere nothing (arguments are still "
                      "evaluated)",
                      f"    return fn if {self.RANK} == 0 else (lambda *args, **kwargs: _HoopNothing())"]
        if self.loads_after_saves:
            barrier = "hvd.barrier()" if self.style == "horovod" else "dist.barrier()"
            lines += ["", "", "def _hoop_saved(load):  " + MARK + " rank 0 writes the files: every rank waits for it "
                      "before it reads one",
                      "    def after_saves(*args, **kwargs):",
                      f"        {barrier}",
                      "        return load(*args, **kwargs)",
                      "    return after_saves"]
        if self.metric_blocks or self.dataset_ratios:
            if self.style == "horovod":
                mean = ["    t = hvd.allreduce(t, op=hvd.Average, name='metric')"]
            else:
                mean = ["    dist.all_reduce(t, op=dist.ReduceOp.AVG)"]
            lines += ["", "", "def _hoop_mean(value):  " + MARK + " a metric averaged over the ranks (its type kept: an "
                      "int stays one where the mean is whole)",
                      "    if isinstance(value, torch.Tensor) and value.numel() == 1:",
                      "        t = value.detach().to('cpu', torch.float64).reshape(())",
                      "    elif isinstance(value, (int, float)) and not isinstance(value, bool):",
                      "        t = torch.tensor(float(value), dtype=torch.float64)",
                      "    else:",
                      "        return value  # not a number: left as it is",
                      *mean,
                      "    if isinstance(value, torch.Tensor):",
                      "        return t.to(value.dtype).reshape(value.shape).to(value.device)",
                      "    mean = t.item()",
                      "    return int(mean) if isinstance(value, int) and mean.is_integer() else mean"]
        self.e.insert_after(last, lines, "")
        self.changes.append(f"hoop.torch imported and initialised after line {last.end_lineno}"
                            + (" (the device pinned to the local rank)" if uses_cuda else ""))

    def scale_lr(self, call):
        lr = next((k for k in call.keywords if k.arg == "lr"), None)
        target = lr.value if lr is not None else (call.args[1] if len(call.args) > 1 else None)
        if target is None:
            stmt = self.stmt_of(call)
            self.e.insert_before(stmt.lineno, [f"{MARK} the learning rate is {call_name(call)}'s default: not "
                                               f"scaled by the number of ranks; give lr= times {self.SIZE}"],
                                 self.e.indent_of(stmt))
            self.notes.append(f"line {call.lineno}: {call_name(call)} without lr=: the default rate was not scaled")
            return
        self.e.replace(target, f"({self.e.source(target)}) * {self.SIZE}")
        self.changes.append(f"line {call.lineno}: learning rate scaled by the number of ranks")

    def model_of(self, call):
        """'model' for torch.optim.X(model.parameters(), ...), or for parameter groups made from
        one model's parameters()/named_parameters() (in place, or in a list assigned to a name
        first), else None."""
        first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "params"), None)
        if first is None:
            return None
        exprs = [first]
        if isinstance(first, ast.Name):
            scope = self.enclosing(call, (ast.FunctionDef,)) or self.tree
            exprs = [a.value for a in ast.walk(scope) if isinstance(a, ast.Assign) and a.lineno < call.lineno
                     and any(isinstance(t, ast.Name) and t.id == first.id for t in a.targets)][-1:]
        owners = {self.e.source(c.func.value) for e in exprs for c in ast.walk(e) if isinstance(c, ast.Call)
                  and isinstance(c.func, ast.Attribute) and c.func.attr in ("parameters", "named_parameters")
                  and not c.args}
        return owners.pop() if len(owners) == 1 else None

    def wrap_optimizer(self, call):
        stmt = self.stmt_of(call)
        if not (isinstance(stmt, ast.Assign) and stmt.value is call and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], (ast.Name, ast.Attribute))) or not self.e.alone_on_lines(stmt):
            raise Refused(f"line {call.lineno}: the optimizer is not built by a plain `name = {call_name(call)}(...)` "
                          "statement: wrap it by hand")
        opt = self.e.source(stmt.targets[0])
        self.opt_names.append(opt)
        model = self.model_of(call)
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
            self.e.insert_before(stmt.lineno, [f"{model} = torch.nn.parallel.DistributedDataParallel({model})  {MARK} "
                                               "gradients averaged over the ranks"], self.e.indent_of(stmt))
            self.ddp_models[model] = (stmt.lineno, self.enclosing(stmt, (ast.FunctionDef,)))
            self.changes.append(f"line {stmt.lineno}: model '{model}' wrapped in DistributedDataParallel")

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
            if last in CLIPPERS:
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
            body = next((getattr(self.parent.get(stmt), f) for f in ("body", "orelse", "finalbody")
                         if stmt in getattr(self.parent.get(stmt), f, [])), [])
            i = body.index(stmt) if stmt in body else 0
            if i > 0 and id(body[i - 1]) in stmts:
                continue  # the statement before it synchronized already
            if any(s is not stmt and s.lineno == stmt.lineno for _, s, _, _ in readers):
                continue
            self.e.insert_before(stmt.lineno, [f"{opt}.synchronize()  {MARK} the averaged gradients are {what}"],
                                 self.e.indent_of(stmt))
            self.changes.append(f"line {c.lineno}: {opt}.synchronize() before the gradients are {what}")

    def scale_cyclic_lr(self):
        """OneCycleLR/CyclicLR set the rate themselves: their bounds are scaled like the optimizer's."""
        for c in ast.walk(self.tree):
            name = call_name(c) if isinstance(c, ast.Call) else None
            if not name or name.split(".")[-1] not in CYCLIC:
                continue
            kind = name.split(".")[-1]
            for i, arg in enumerate(CYCLIC[kind]):
                kw = next((k for k in c.keywords if k.arg == arg), None)
                target = kw.value if kw is not None else (c.args[1 + i] if len(c.args) > 1 + i else None)
                if target is None:
                    continue
                src = self.e.source(target)
                if isinstance(target, (ast.List, ast.Tuple)):  # one per parameter group
                    self.e.replace(target, f"[_v * {self.SIZE} for _v in {src}]")
                else:
                    self.e.replace(target, f"({src}) * {self.SIZE}")
                self.changes.append(f"line {c.lineno}: {kind}'s {arg} scaled by the number of ranks")

    def find_loaders(self):
        """(call, statement, variable) of each DataLoader built by `name = DataLoader(...)`."""
        self.loaders = []
        for c in ast.walk(self.tree):
            name = call_name(c)
            if name and name.split(".")[-1] == "DataLoader":
                stmt = self.stmt_of(c)
                var = stmt.targets[0].id if isinstance(stmt, ast.Assign) and stmt.value is c and \
                    isinstance(stmt.targets[0], ast.Name) else None
                self.loaders.append((c, stmt, var))

    def training_loaders(self):
        """The DataLoaders a loop that runs backward iterates, found from the name it iterates:
        assigned a DataLoader, or what a function of the script returns (alone or at its place in
        a returned tuple), or passed as an argument to the function whose loop it is. Also fills
        self.aliases: each loader's names at the places it is used."""
        self.aliases = {}
        found = []
        for loop in ast.walk(self.tree):
            if not (isinstance(loop, ast.For) and any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                                                      and n.func.attr == "backward" for n in ast.walk(loop))):
                continue
            for name in self.iterated_names(loop.iter):
                for call, names in self.resolve_loader(name, loop, set()):
                    if call not in [c for c, _, _ in found]:
                        stmt = self.stmt_of(call)
                        var = stmt.targets[0].id if isinstance(stmt, ast.Assign) and stmt.value is call and \
                            isinstance(stmt.targets[0], ast.Name) else None
                        found.append((call, stmt, var))
                    self.aliases.setdefault(call, set()).update(names)
        # A loader passed to a function whose loop trains (train(model, train_loader, ...)) and
        # not found above: by its name, as before.
        for c, stmt, var in self.loaders:
            if var and "train" in var.lower() and c not in self.aliases:
                found.append((c, stmt, var))
                self.aliases[c] = {var}
        return found

    def iterated_names(self, expr):
        """The names a loop's iterable reads, but for wrappers: enumerate(tqdm(loader)) -> loader."""
        while isinstance(expr, ast.Call) and expr.args and (call_name(expr) or "").split(".")[-1] in (
                "enumerate", "tqdm", "iter", "zip", "islice", "trange"):
            expr = expr.args[0]
        return [expr.id] if isinstance(expr, ast.Name) else []

    def functions(self):
        return {f.name: f for f in ast.walk(self.tree) if isinstance(f, ast.FunctionDef)}

    def resolve_loader(self, name, where, seen):
        """[(DataLoader call, {names it goes by on the way})] for `name` read at node `where`."""
        if (name, id(where)) in seen or len(seen) > 50:
            return []
        seen.add((name, id(where)))
        out = []
        fn = self.enclosing(where, (ast.FunctionDef,))
        scopes = [fn] if fn is not None else []
        scopes.append(self.tree)
        for scope in scopes:
            for stmt in ast.walk(scope):
                if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                    continue
                t = stmt.targets[0]
                if isinstance(t, ast.Name) and t.id == name:
                    out += self.loaders_from(stmt.value, None, seen)
                elif isinstance(t, ast.Tuple) and any(isinstance(e, ast.Name) and e.id == name for e in t.elts):
                    i = next(k for k, e in enumerate(t.elts) if isinstance(e, ast.Name) and e.id == name)
                    out += self.loaders_from(stmt.value, i, seen)
            if out:
                break
        if not out and fn is not None and name in [a.arg for a in fn.args.args]:
            pos = [a.arg for a in fn.args.args].index(name)
            for c in ast.walk(self.tree):
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == fn.name:
                    arg = c.args[pos] if pos < len(c.args) else next(
                        (k.value for k in c.keywords if k.arg == name), None)
                    if isinstance(arg, ast.Name):
                        out += self.resolve_loader(arg.id, c, seen)
        return [(call, names | {name}) for call, names in out]

    def loaders_from(self, value, index, seen):
        """The DataLoader calls an assigned value is (index: its place in a returned tuple)."""
        if index is None and isinstance(value, ast.Call) and (call_name(value) or "").split(".")[-1] == "DataLoader":
            return [(value, set())]
        if index is not None and isinstance(value, ast.Tuple) and index < len(value.elts):
            return self.loaders_from(value.elts[index], None, seen)
        if isinstance(value, ast.Name) and index is None:
            return self.resolve_loader(value.id, value, seen)
        f = self.functions().get(call_name(value) or "") if isinstance(value, ast.Call) else None
        if f is None:
            return []
        out = []
        for r in ast.walk(f):
            if isinstance(r, ast.Return) and r.value is not None and self.enclosing(r, (ast.FunctionDef,)) is f:
                v = r.value
                if index is not None and isinstance(v, ast.Tuple) and index < len(v.elts):
                    v = v.elts[index]
                elif index is not None:
                    continue
                if isinstance(v, ast.Name):
                    out += self.resolve_loader(v.id, r, seen)
                else:
                    out += self.loaders_from(v, None, seen)
        return out

    def shard_loader(self, call, stmt, var):
        base = var or f"_hoop_loader{call.lineno}"  # a loader made in place (returned, say)
        what = f"'{var}'" if var else f"built at line {call.lineno}"
        if any(k.arg in ("sampler", "batch_sampler") for k in call.keywords):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} has a sampler of its own; give it a "
                          "DistributedSampler by hand")
        dataset = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dataset"), None)
        if dataset is None:
            raise Refused(f"line {call.lineno}: the DataLoader {what} has no dataset argument")
        shuffle = next((k for k in call.keywords if k.arg == "shuffle"), None)
        shuffle_src = self.e.source(shuffle.value) if shuffle else "False"
        sampler = f"{base}_sampler"
        data = self.e.source(dataset)
        before = []
        if not isinstance(dataset, (ast.Name, ast.Attribute)):
            # Built in place: made once, beside the sampler, so both see the same dataset.
            if "\n" in data:
                raise Refused(f"line {call.lineno}: the DataLoader {what} builds its dataset over several lines: "
                              "assign it to a name first")
            before.append(f"{base}_dataset = {data}  {MARK} shared with the sampler")
            data = f"{base}_dataset"
        before.append(f"{sampler} = DistributedSampler({data}, num_replicas={self.SIZE}, rank={self.RANK}, "
                      f"shuffle={shuffle_src})  {MARK} this rank's share")
        self.e.insert_before(stmt.lineno, before, self.e.indent_of(stmt))
        last = call.keywords[-1] if call.keywords else call.args[-1]
        if shuffle:
            self.e.replace(shuffle, f"sampler={sampler}")
        elif last is not dataset:
            self.e.replace(last, f"{self.e.source(last)}, sampler={sampler}")
        if last is dataset and not shuffle:
            self.e.replace(dataset, f"{data}, sampler={sampler}")
        elif data != self.e.source(dataset):
            self.e.replace(dataset, data)
        if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} shares its line with other code: "
                          "give it a line of its own")
        self.changes.append(f"line {stmt.lineno}: DataLoader {what} given a DistributedSampler"
                            + (" (its shuffle= moved to the sampler)" if shuffle else ""))
        self.set_epochs(call, sampler, shuffle_src, stmt)

    def set_epochs(self, call, sampler, shuffle_src, stmt):
        """set_epoch at the top of each epoch loop: a `for` whose body reads a name the loader goes
        by and whose target is a plain name; reached through that name (`name.sampler`), so it
        works wherever the loader was made (a helper function's local sampler is out of reach)."""
        names = self.aliases.get(call, set())
        loops = []
        for l in ast.walk(self.tree):
            if not (isinstance(l, ast.For) and isinstance(l.target, ast.Name)):
                continue
            used = self.names_loaded(ast.Module(body=l.body, type_ignores=[])) | self.globals_read_by_calls(l)
            hit = sorted(n for n in names if n in used and n not in self.names_loaded(l.iter))
            if hit:
                loops.append((l, hit[0]))
        loops = [(l, n) for l, n in loops if not any(o is not l and l in list(ast.walk(o)) for o, _ in loops)]
        if not loops:
            if shuffle_src != "False":
                self.e.insert_before(stmt.lineno, [f"{MARK} call {sampler}.set_epoch(epoch) at the start of every epoch "
                                                   "(no epoch loop was recognised)"], self.e.indent_of(stmt))
                self.notes.append(f"line {stmt.lineno}: no epoch loop found around the training loader: "
                                  "set_epoch(epoch) is not called on its sampler, so every epoch sees the same order")
            return
        for loop, name in loops:
            first = loop.body[0]
            self.e.insert_before(first.lineno, [f"{name}.sampler.set_epoch({loop.target.id})  {MARK} a new order "
                                                "each epoch"], self.e.indent_of(first))
            self.changes.append(f"line {loop.lineno}: {name}.sampler.set_epoch({loop.target.id}) each epoch")

    def globals_read_by_calls(self, loop, depth=3):
        """The module-level names that the script's functions called in the loop's body read
        (`for epoch in ...: train(epoch)` where train() iterates the global train_loader)."""
        fns, top = self.functions(), {t.id for a in self.tree.body if isinstance(a, ast.Assign)
                                      for t in a.targets if isinstance(t, ast.Name)}
        seen, todo, out = set(), [ast.Module(body=loop.body, type_ignores=[])], set()
        for _ in range(depth):
            called = {c.func.id for node in todo for c in ast.walk(node) if isinstance(c, ast.Call)
                      and isinstance(c.func, ast.Name) and c.func.id in fns} - seen
            seen |= called
            todo = [fns[f] for f in called]
            for f in todo:
                local = {a.arg for a in f.args.args} | {n.id for n in ast.walk(f) if isinstance(n, ast.Name)
                                                        and isinstance(n.ctx, ast.Store)}
                out |= (self.names_loaded(f) - local) & top
        return out

    def shard_manual_batches(self):
        """for i in range(0, N, B) loops that train (or enumerate(range(0, N, B)), as
        word_language_model's get_batch loop): each rank takes every size()-th batch."""
        done = False
        for loop in ast.walk(self.tree):
            if not isinstance(loop, ast.For):
                continue
            rng = loop.iter
            if isinstance(rng, ast.Call) and call_name(rng) == "enumerate" and len(rng.args) == 1:
                rng = rng.args[0]
            if not (isinstance(rng, ast.Call) and call_name(rng) == "range" and len(rng.args) == 3
                    and not rng.keywords):
                continue
            if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
                       for n in ast.walk(loop)):
                continue
            start, stop, step = (self.e.source(a) for a in rng.args)
            if start != "0":
                raise Refused(f"line {loop.lineno}: a batch loop over range({start}, ...): only range(0, N, B) is "
                              "split between ranks")
            self.e.replace(rng, f"range({self.RANK} * ({step}), ({stop}) // (({step}) * {self.SIZE}) * ({step}) * "
                                      f"{self.SIZE}, ({step}) * {self.SIZE})")
            self.changes.append(f"line {loop.lineno}: batches split between the ranks (every {self.SIZE}-th batch; the "
                                "last incomplete round is dropped so every rank takes as many steps)")
            done = True
        return done

    def find_metric_blocks(self):
        """`with torch.no_grad():` blocks and the names they accumulate with +=."""
        self.metric_blocks = []
        for w in ast.walk(self.tree):
            if isinstance(w, ast.With) and any(dotted(i.context_expr.func) in ("torch.no_grad", "no_grad")
                                               for i in w.items if isinstance(i.context_expr, ast.Call)):
                names = []
                for n in ast.walk(w):
                    if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and isinstance(n.target, ast.Name) \
                            and n.target.id not in names:
                        names.append(n.target.id)
                if names and self.e.alone_on_lines(w):
                    self.metric_blocks.append((w, names))

    def find_dataset_ratios(self, train):
        """`x / len(loader.dataset)`, `x / len(dataset)` and `x /= len(...)` for a training loader
        about to be sharded (by its names, or its dataset's): x counts this rank's share only, so
        the ratio would come out divided by the number of ranks."""
        names, datasets = set(), set()
        for c, _, _ in train:
            names |= self.aliases.get(c, set())
            first = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "dataset"), None)
            if isinstance(first, ast.Name):
                datasets.add(first.id)
        self.dataset_ratios = []
        for n in ast.walk(self.tree):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
                denominator = n.right
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Div) and isinstance(n.target, ast.Name):
                denominator = n.value
            else:
                continue
            if not (isinstance(denominator, ast.Call) and call_name(denominator) == "len"
                    and len(denominator.args) == 1):
                continue
            of = denominator.args[0]
            if isinstance(of, ast.Attribute) and of.attr == "dataset" and isinstance(of.value, ast.Name) \
                    and of.value.id in names:
                share = f"len({of.value.id}.sampler)"
            elif isinstance(of, ast.Name) and of.id in datasets:
                share = f"((len({of.id}) + {self.SIZE} - 1) // {self.SIZE})"  # a DistributedSampler's share
            else:
                continue
            if self.in_rank0_block(n):
                raise Refused(f"line {n.lineno}: a metric over the training set's length in a block only rank 0 "
                              "will run: compute it before the block (it must be averaged over the ranks)")
            if isinstance(n, ast.AugAssign) and (not self.e.alone_on_lines(n) or self.on_header_line(n)):
                raise Refused(f"line {n.lineno}: a metric divided by the training set's length shares its line with "
                              "other code: give it a line of its own")
            self.dataset_ratios.append((n, share, self.e.source(of)))

    def average_dataset_ratios(self):
        """Each becomes this rank's share (len(loader.sampler)) averaged over the ranks: the
        DistributedSampler gives every rank as many samples."""
        for n, share, of in self.dataset_ratios:
            if isinstance(n, ast.AugAssign):
                name = n.target.id
                self.e.replace(n, f"{name} = _hoop_mean({name} / {share})  {MARK} this rank's share, averaged")
            else:
                self.e.replace(n, f"_hoop_mean({self.e.source(n.left)} / {share})")
            self.changes.append(f"line {n.lineno}: a ratio over len({of}) taken over this rank's share and averaged "
                                "over the ranks")

    def average_metrics(self):
        for w, names in self.metric_blocks:
            self.e.insert_after(w, [f"{n} = _hoop_mean({n})" for n in names])
            self.changes.append(f"line {w.lineno}: {', '.join(names)} averaged over the ranks after the no_grad block")

    def find_side_effects(self):
        """Calls to print, logging, torch.save and other writers (as statements), and `with open(...,
        'w')` blocks: what rank 0 alone should do."""
        self.rank0_calls, self.rank0_blocks = [], []
        defined = {n.name for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        for stmt in ast.walk(self.tree):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                name = call_name(stmt.value) or ""
                last = name.split(".")[-1]
                if name == "print" or name in WRITERS or (name.split(".")[0] in ("logging", "logger", "log", "LOG")
                                                          and last in LOGGING) or last == "add_scalar":
                    self.rank0_calls.append(stmt.value)
            elif isinstance(stmt, ast.With) and any(self.opens_for_writing(i.context_expr) for i in stmt.items):
                calls = {call_name(c) for c in ast.walk(stmt) if isinstance(c, ast.Call)}
                if calls & defined or any(c and c.startswith(("hvd.", "dist.")) for c in calls):
                    self.notes.append(f"line {stmt.lineno}: a file written in a block that calls the script's own "
                                      "functions: left on every rank (make it rank 0's by hand if it must be)")
                elif not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                    self.notes.append(f"line {stmt.lineno}: shares its line with other code: not made rank 0 only")
                else:
                    self.rank0_blocks.append(stmt)
        # Calls inside a block that is wrapped whole need nothing more.
        self.rank0_blocks = [b for b in self.rank0_blocks if not any(
            o is not b and o.lineno <= b.lineno and b.end_lineno <= o.end_lineno for o in self.rank0_blocks)]
        self.rank0_calls = [c for c in self.rank0_calls if not any(
            b.lineno <= c.lineno and c.end_lineno <= b.end_lineno for b in self.rank0_blocks)]
        self.find_makers()

    def in_rank0_block(self, node):
        return any(b.lineno <= node.lineno and node.end_lineno <= b.end_lineno for b in self.rank0_blocks)

    def find_makers(self):
        """Objects that write files from the moment they are made, wherever they are made: a
        SummaryWriter, a file opened for writing outside a `with` block (a CSV log), a logging
        FileHandler; and the torch.load calls that may read what rank 0 wrote."""
        in_with = {id(i.context_expr) for w in ast.walk(self.tree) if isinstance(w, ast.With) for i in w.items}
        self.rank0_makers, self.file_handlers = [], []
        for c in ast.walk(self.tree):
            if not isinstance(c, ast.Call) or self.in_rank0_block(c) or c in self.rank0_calls:
                continue
            last = (call_name(c) or "").split(".")[-1]
            if last in MAKERS or (self.opens_for_writing(c) and id(c) not in in_with):
                self.rank0_makers.append(c)
            elif last in FILE_HANDLERS:
                self.file_handlers.append(c)
        saves = self.rank0_blocks or self.rank0_makers or any(call_name(c) in WRITERS for c in self.rank0_calls)
        self.loads_after_saves = [c for c in ast.walk(self.tree) if saves and isinstance(c, ast.Call)
                                  and call_name(c) == "torch.load" and not self.in_rank0_block(c)
                                  and self.enclosing(c, (ast.ClassDef,)) is None]

    def quiet_progress_bars(self):
        """tqdm/trange bars drawn by rank 0 only (disable= on the others), unless the script
        decides disable= itself."""
        for c in ast.walk(self.tree):
            if not (isinstance(c, ast.Call) and (call_name(c) or "").split(".")[-1] in ("tqdm", "trange")):
                continue
            if any(k.arg == "disable" or k.arg is None for k in c.keywords) or not (c.args or c.keywords):
                continue
            last = c.keywords[-1].value if c.keywords else c.args[-1]
            if isinstance(last, ast.Starred):
                continue
            self.e.replace(last, f"{self.e.source(last)}, disable={self.RANK} != 0")
            self.changes.append(f"line {c.lineno}: the progress bar drawn by rank 0 only")

    def rank0_side_effects(self):
        # A call keeps its arguments evaluated on every rank (they may communicate: a metric
        # computed by a function that averages over ranks); only the call itself is rank 0's.
        self.quiet_progress_bars()
        for c in self.rank0_calls:
            self.e.replace(c.func, f"_hoop_on_rank0({self.e.source(c.func)})")
        for b in self.rank0_blocks:
            self.e.wrap(b, self.RANK0)
        for c in self.rank0_makers:
            what = call_name(c)
            self.e.replace(c.func, f"_hoop_on_rank0({self.e.source(c.func)})")
            self.changes.append(f"line {c.lineno}: {'a file opened for writing' if what == 'open' else what} made on "
                                "rank 0 only (elsewhere a stand-in that does nothing)")
        for c in self.file_handlers:
            self.e.replace(c.func, f"({self.e.source(c.func)} if {self.RANK} == 0 else (lambda *args, **kwargs: "
                                   "__import__('logging').NullHandler()))")
            self.changes.append(f"line {c.lineno}: the log file's handler made on rank 0 only (a NullHandler "
                                "elsewhere)")
        for c in self.loads_after_saves:
            self.e.replace(c.func, f"_hoop_saved({self.e.source(c.func)})")
            self.changes.append(f"line {c.lineno}: torch.load waits for rank 0's writes first (a barrier)")
        if self.rank0_calls or self.rank0_blocks:
            lines = sorted([c.lineno for c in self.rank0_calls] + [b.lineno for b in self.rank0_blocks])
            self.changes.append(f"{len(lines)} print/log/save/write statement(s) made rank 0 only (lines "
                                f"{', '.join(map(str, lines))})")

    def on_header_line(self, stmt):
        """`if x: print(...)` on one line: the statement shares its line with its parent's header."""
        p = self.parent.get(stmt)
        return p is not None and hasattr(p, "lineno") and p.lineno == stmt.lineno and not isinstance(p, ast.Module)

    def opens_for_writing(self, expr):
        if not (isinstance(expr, ast.Call) and call_name(expr) == "open"):
            return False
        mode = expr.args[1] if len(expr.args) > 1 else next((k.value for k in expr.keywords if k.arg == "mode"), None)
        return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax")

    def ddp_module_access(self):
        """DDP: what the script reads from the model other than calling it or nn.Module's own
        methods (its state_dict(), so the keys stay as they were; a method of its own, as a VAE's
        decode(); an attribute) goes to the wrapped model's .module. Where the model was wrapped:
        after the wrap; in other functions: everywhere (they run after it)."""
        for a in ast.walk(self.tree):
            if not (isinstance(a, ast.Attribute) and isinstance(a.ctx, ast.Load)):
                continue
            owner = self.e.source(a.value)
            if owner not in self.ddp_models or (a.attr in MODULE_ATTRS and a.attr not in ("state_dict",
                                                                                           "load_state_dict")):
                continue
            line, scope = self.ddp_models[owner]
            if self.enclosing(a, (ast.FunctionDef,)) is scope and a.lineno <= line:
                continue
            self.e.replace(a.value, f"{owner}.module")
            self.changes.append(f"line {a.lineno}: {owner}.{a.attr} read from the wrapped model's .module")

    def convert(self):
        self.refuse_if_not_convertible()
        self.ddp_models = {}
        self.find_loaders()
        self.find_metric_blocks()
        self.find_side_effects()
        train = self.training_loaders()
        manual = False
        if not train:
            manual = self.shard_manual_batches()
            if not manual:
                raise Refused("no training loop was recognised: neither a DataLoader iterated where backward runs nor "
                              "batches taken by `for i in range(0, N, B)`; split the data between ranks by hand")
        self.find_dataset_ratios(train)
        self.imports_and_init()
        for c, stmt, var in train:
            self.shard_loader(c, stmt, var)
        self.average_dataset_ratios()
        self.opt_names = []
        for opt in self.optimizers:
            self.scale_lr(opt)
            self.wrap_optimizer(opt)
        self.scale_cyclic_lr()
        if self.style == "horovod":
            self.sync_each_pass()
            self.sync_before_clipping()
        if self.style == "ddp":
            self.ddp_module_access()
        self.average_metrics()
        self.rank0_side_effects()
        return self.e.apply()


def parallelize(text, style="horovod"):
    """(converted text, changes, notes) for a script's text; raises Refused."""
    c = Converter(text, style)
    out = c.convert()
    compile(out, "<converted>", "exec")  # never write what does not parse
    return out, c.changes, c.notes


CHECK_RUNNER = r'''
import os, runpy, sys, torch
limit, prefix, count, depth, stepped = int(sys.argv[1]), sys.argv[2], [0], [0], {}
def counted(step):
    def wrapper(self, *args, **kwargs):
        depth[0] += 1  # a subclass's step calling its base's counts once
        try:
            result = step(self, *args, **kwargs)
        finally:
            depth[0] -= 1
        if depth[0] == 0:
            stepped[id(self)] = self
            count[0] += 1
            if count[0] >= limit:
                params = [p.detach().cpu().clone() for o in stepped.values() for g in o.param_groups for p in g["params"]]
                torch.save(params, f"{prefix}.{os.environ.get('HOOP_RANK', '0')}.pt")
                print(f"hoop-parallelize --check: {limit} optimizer steps ran", flush=True)
                os._exit(0)
        return result
    return wrapper
for name in dir(torch.optim):
    cls = getattr(torch.optim, name)
    if isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer) and "step" in cls.__dict__:
        cls.step = counted(cls.step)
sys.argv = sys.argv[3:]
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def compare_ranks(prefix, steps):
    """None if both ranks' parameters are bitwise the same, else what differs."""
    try:
        import torch
    except ImportError:
        return None  # the script ran, so this cannot happen where it matters
    try:
        a, b = (torch.load(f"{prefix}.{r}.pt") for r in (0, 1))
    except OSError:
        return "a rank ran fewer optimizer steps than the other (no parameters saved)"
    if len(a) != len(b):
        return f"the ranks' optimizers hold {len(a)} and {len(b)} parameters"
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape or not torch.equal(x, y):
            d = (x.double() - y.double()).abs().max().item() if x.shape == y.shape else "shape"
            return (f"after {steps} optimizer steps the ranks' parameters differ (parameter {i} of {len(a)}, by {d}): "
                    "the converted script does not keep the ranks in step")
    return None


def check(out, hooprun, steps, args, timeout):
    """Runs the converted script on 2 ranks for `steps` optimizer steps and compares the ranks'
    parameters then; returns (exit code, why it failed or None)."""
    with tempfile.TemporaryDirectory(prefix="hoop-parallelize-") as tmp:
        runner = os.path.join(tmp, "runner.py")
        with open(runner, "w") as f:
            f.write(CHECK_RUNNER)
        prefix = os.path.join(tmp, "params")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root(), env.get("PYTHONPATH")) if p)
        cmd = [hooprun, "-np", "2", "--oversubscribe", "--timeout", str(timeout), sys.executable, runner, str(steps),
               prefix, out, *args]
        print(f"hoop-parallelize --check: {' '.join(cmd)}", file=sys.stderr, flush=True)
        code = subprocess.run(cmd, env=env).returncode
        if code != 0:
            return code, f"exit code {code}"
        why = compare_ranks(prefix, steps)
        return (1, why) if why else (0, None)


def package_root():
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_hooprun():
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    for candidate in (os.path.join(here, "hooprun"), os.path.join(package_root(), "..", "bin", "hooprun")):
        if os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    from shutil import which
    return which("hooprun")


def _package_version():
    """The hoop package's version (the loaded library's), as every hoop tool prints it."""
    from hoop import __version__
    return __version__


def main(argv=None):
    ap = argparse.ArgumentParser(prog="hoop-parallelize", description=__doc__.split("\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("script", help="the single-process training script")
    ap.add_argument("-o", "--output", required=True, help="where to write the distributed script")
    ap.add_argument("--style", choices=["horovod", "ddp"], default="horovod",
                    help="hoop.torch's Horovod-style API (default) or DistributedDataParallel over backend 'hoop'")
    ap.add_argument("--check", action="store_true", help="run the result on 2 ranks for a few optimizer steps and compare the ranks' parameters "
                         "(a failure moves the output to OUTPUT.failed)")
    ap.add_argument("--check-steps", type=int, default=3, help="optimizer steps --check runs (default 3)")
    ap.add_argument("--check-timeout", type=float, default=300, help="seconds --check may take (default 300)")
    ap.add_argument("--check-args", default="", help="arguments for the script under --check (one string)")
    ap.add_argument("-q", "--quiet", action="store_true", help="no diff, only the summary")
    ap.add_argument("--version", action="version", version=f"hoop-parallelize (hoop) {_package_version()}")
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
            print(f"hoop-parallelize --check: passed ({a.check_steps} optimizer steps on 2 ranks, their parameters "
                  "bitwise the same)", file=sys.stderr)
            return 0
        failed = a.output + ".failed"
        os.replace(a.output, failed)  # nothing left at -o that looks converted and checked
        print(f"hoop-parallelize --check: failed ({why}); the script is at {failed}, not {a.output}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
