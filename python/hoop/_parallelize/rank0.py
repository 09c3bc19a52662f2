"""hoop-parallelize: what only rank 0 should do, and what every rank must agree on. Evaluation
metrics accumulated under torch.no_grad() (or inference_mode()) are averaged over the ranks, or
summed where they were counted over a split loader and are not divided by the rank's share;
ratios over a split set's length are taken over the share and averaged; prints, logging, file
writes (but those into a process's own temporary directory, and those in a function run for
each sample, a dataset's __getitem__ or a collate_fn, where each rank makes its own share's),
progress bars and objects that write files as they are made run on rank 0 only. A mixin of
Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.data import ITEM, ref
from hoop._parallelize.edits import (FILE_HANDLERS, LOGGING, MAKERS, MARK, METHOD_WRITERS, WRITERS, Refused, call_name,
                                    dotted, last_name)


class RankZero:
    def find_metric_blocks(self):
        """`with torch.no_grad():` (or inference_mode(), set_grad_enabled(False)) blocks and the
        names they accumulate with +=; in a function under such a decorator (`@torch.no_grad()
        def evaluate(loader)`), each loop of its body is such a block."""
        self.metric_blocks = []
        blocks = [w for w in ast.walk(self.tree) if isinstance(w, ast.With) and any(
            self.grad_off(i.context_expr) for i in w.items)]
        blocks += [s for f in ast.walk(self.tree) if isinstance(f, ast.FunctionDef) and any(
            self.grad_off(d) for d in f.decorator_list) for s in f.body if isinstance(s, (ast.For, ast.While))]
        for w in blocks:
            names = []
            for n in ast.walk(w):
                if isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Add) and isinstance(n.target, ast.Name) \
                        and n.target.id not in names:
                    names.append(n.target.id)
            if names and self.e.alone_on_lines(w):
                self.metric_blocks.append((w, names))

    def rank0_helpers(self):
        """The converted script's _hoop_on_rank0 (and its stand-in), and _hoop_saved where loads
        wait for rank 0's writes."""
        lines = []
        if self.rank0_calls or self.rank0_makers or self.trackers:
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
                      "",
                      "    def __getitem__(self, key):",
                      "        return self",
                      "",
                      "    def __setitem__(self, key, value):",
                      "        pass",
                      "", "",
                      "def _hoop_on_rank0(fn):  " + MARK + " fn on rank 0; elsewhere nothing (arguments are still "
                      "evaluated)",
                      f"    return fn if {self.RANK} == 0 else (lambda *args, **kwargs: _HoopNothing())"]
        if self.loads_after_saves:
            lines += ["", "", "def _hoop_saved(load):  " + MARK + " rank 0 writes the files: every rank waits for it "
                      "before it reads one",
                      "    def after_saves(*args, **kwargs):",
                      f"        {self.BARRIER}",
                      "        return load(*args, **kwargs)",
                      "    return after_saves"]
        return lines

    def metric_helper(self):
        """The converted script's _hoop_mean(value, total=False): a number or one-element tensor
        averaged (or summed) over the ranks, its type kept."""
        op = ("hvd.Sum if total else hvd.Average", "hvd.allreduce(t, op={}, name='metric')") if self.style == "horovod" \
            else (f"{self.DIST}.ReduceOp.SUM if total else {self.DIST}.ReduceOp.AVG",
                  f"{self.DIST}.all_reduce(t, op={{}})")
        return ["", "", "def _hoop_mean(value, total=False):  " + MARK + " a metric averaged (or summed) over the ranks "
                "(its type kept: an int stays one where the result is whole)",
                "    if isinstance(value, torch.Tensor) and value.numel() == 1:",
                "        t = value.detach().to('cpu', torch.float64).reshape(())",
                "    elif isinstance(value, (int, float)) and not isinstance(value, bool):",
                "        t = torch.tensor(float(value), dtype=torch.float64)",
                "    else:",
                "        return value  # not a number: left as it is",
                ("    t = " if self.style == "horovod" else "    ") + op[1].format(op[0]),
                "    if isinstance(value, torch.Tensor):",
                "        return t.to(value.dtype).reshape(value.shape).to(value.device)",
                "    mean = t.item()",
                "    return int(mean) if isinstance(value, int) and mean.is_integer() else mean"]

    def find_dataset_ratios(self, train):
        """`x / len(loader.dataset)`, `x / len(dataset)`, `x / n` where n = len(dataset) (or a
        dict of those, `sizes[phase]`), and `x /= ...` for a training loader about to be sharded
        (by its names, or its dataset's): x counts this rank's share only, so the ratio would come
        out divided by the number of ranks. Where batches are taken by hand, the ratios over the
        whole data's size or batch count after the split loop (shares.py)."""
        names, datasets = set(), {}
        for c, _, _ in train:
            names |= self.aliases.get(c, set()) - self.iterators
            first = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "dataset"), None)
            if first is not None and ref(first):
                datasets.setdefault(ref(first), []).append(first)
        self.split_calls, self.split_refs = [c for c, _, _ in train], (names, datasets, {})
        sizes = self.dataset_sizes(names, datasets)
        self.split_refs = (names, datasets, sizes)
        ratios = []
        for n in ast.walk(self.tree):
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
                denominator = n.right
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Div) and isinstance(n.target, ast.Name):
                denominator = n.value
            else:
                continue
            share = self.share_of(denominator, names, datasets, sizes)
            if share is not None:
                ratios.append((n, share, self.e.source(denominator)))
        self.dataset_ratios = []
        for n, share, of in ratios + self.manual_ratios():
            if self.in_rank0_block(n):
                raise Refused(f"line {n.lineno}: a metric over the training set's length in a block only rank 0 "
                              "will run: compute it before the block (it must be averaged over the ranks)")
            if isinstance(n, ast.AugAssign) and (not self.e.alone_on_lines(n) or self.on_header_line(n)):
                raise Refused(f"line {n.lineno}: a metric divided by the training set's length shares its line with "
                              "other code: give it a line of its own")
            self.dataset_ratios.append((n, share, of))

    def is_dataset_len(self, expr, names, datasets):
        """Whether expr is len(D) of a split loader's dataset (`len(loader.dataset)` too), D the
        same variable there as where the loader was given it."""
        if not (isinstance(expr, ast.Call) and call_name(expr) == "len" and len(expr.args) == 1):
            return False
        of = expr.args[0]
        return any(self.same_binding(ref(of), of, d) for d in datasets.get(ref(of), [])) or (
            isinstance(of, ast.Attribute) and of.attr == "dataset" and self.is_split_ref(ref(of.value), of))

    def dataset_sizes(self, names, datasets):
        """The names holding a training dataset's length (`n_train = len(train_set)`), and
        `sizes[]` for a dict of them (`{x: len(image_datasets[x]) for x in ...}`)."""
        out = {}
        for a in ast.walk(self.tree):
            if not (isinstance(a, ast.Assign) and len(a.targets) == 1 and dotted(a.targets[0])):
                continue
            v = a.value
            if self.is_dataset_len(v, names, datasets):
                out.setdefault(dotted(a.targets[0]), []).append(a)
            elif (isinstance(v, ast.DictComp) and self.is_dataset_len(v.value, names, datasets)) or (
                    isinstance(v, ast.Dict) and v.values and all(
                        k is not None and self.is_dataset_len(x, names, datasets) for k, x in zip(v.keys, v.values))):
                out.setdefault(dotted(a.targets[0]) + ITEM, []).append(a)
        return out

    def share_of(self, d, names, datasets, sizes):
        """What the denominator d becomes over this rank's share, or None where it is not a
        training dataset's length."""
        if isinstance(d, ast.Call) and self.is_dataset_len(d, names, datasets):
            of = d.args[0]
            if isinstance(of, ast.Attribute) and of.attr == "dataset" and self.is_split_ref(ref(of.value), of):
                return f"len({self.loader_sampler(of.value)})"
        elif not any(self.same_binding(ref(d), d, a) for a in sizes.get(ref(d), [])):
            return None
        return f"(({self.e.source(d)} + {self.SIZE} - 1) // {self.SIZE})"  # a DistributedSampler's share

    def average_dataset_ratios(self):
        """Each becomes this rank's share (len(loader.sampler)) averaged over the ranks: the
        DistributedSampler gives every rank as many samples."""
        for n, share, of in self.dataset_ratios:
            if isinstance(n, ast.AugAssign):
                name = n.target.id
                self.e.replace(n, f"{name} = _hoop_mean({name} / {share})  {MARK} this rank's share, averaged")
            else:
                self.e.replace(n, f"_hoop_mean({self.e.source(n.left)} / {share})")
            self.changes.append(f"line {n.lineno}: a ratio over {of} taken over this rank's share and averaged "
                                "over the ranks")

    @staticmethod
    def grad_off(expr):
        """Whether expr turns gradients off: no_grad(), inference_mode(), set_grad_enabled(False),
        or a decorator's bare @torch.no_grad."""
        name = call_name(expr) or ("" if isinstance(expr, ast.Call) else dotted(expr) or "")
        return name.split(".")[-1] in ("no_grad", "inference_mode") or (
            name.endswith("set_grad_enabled") and len(expr.args) == 1 and isinstance(expr.args[0], ast.Constant)
            and expr.args[0].value is False)

    def average_metrics(self):
        """After each metric block, its accumulators averaged over the ranks: alike on every rank
        where it evaluates whole data; where it iterates a split loader, each rank counted its
        share, and a count divided by the share (len(loader), or a dataset length made the
        share's) is averaged, one divided by anything else (the whole set's size as a number) or
        not divided is summed."""
        for w, names in self.metric_blocks:
            split = any(self.is_split_ref(n, f) for f in ast.walk(w) if isinstance(f, ast.For)
                        for n in self.iterated_names(f.iter))
            how = {n: self.metric_reduction(w, n) if split else "mean" for n in names}
            self.e.insert_after(w, [f"{n} = _hoop_mean({n}{', total=True' if how[n] == 'total' else ''})"
                                    for n in names])
            for kind in ("mean", "total"):
                these = [n for n in names if how[n] == kind]
                if these:
                    self.changes.append(f"line {w.lineno}: {', '.join(these)} {'averaged' if kind == 'mean' else 'summed'}"
                                        f" over the ranks after the {'no_grad' if kind == 'mean' and not split else 'metric'}"
                                        f" block{' (counted over a split loader)' if split else ''}")

    def metric_reduction(self, block, name):
        """'mean' or 'total' for `name`, accumulated in a block over a split loader, by what the
        code after the block divides it by."""
        names, datasets, sizes = self.split_refs
        scope = self.enclosing(block, (ast.FunctionDef,)) or self.tree
        kinds = set()
        for n in ast.walk(scope):
            if getattr(n, "lineno", 0) <= block.end_lineno:
                continue
            if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div) and any(
                    isinstance(x, ast.Name) and x.id == name for x in ast.walk(n.left)):
                d = n.right
            elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Div) and dotted(n.target) == name:
                d = n.value
            else:
                continue
            per_rank = self.share_of(d, names, datasets, sizes) is not None or (
                call_name(d) == "len" and len(d.args) == 1 and (self.is_split_ref(ref(d.args[0]), d) or (
                    isinstance(d.args[0], ast.Attribute) and d.args[0].attr == "sampler"
                    and self.is_split_ref(ref(d.args[0].value), d))))
            kinds.add("mean" if per_rank else "total")
        if len(kinds) > 1:
            raise Refused(f"line {block.lineno}: '{name}', counted over a split loader, is divided both by this "
                          "rank's share and by another number: divide it by len(loader.dataset) (or len(loader)) "
                          "everywhere")
        return kinds.pop() if kinds else "total"

    def per_sample(self, node):
        """Whether node is in a function run for each sample (a dataset's __getitem__ or __iter__,
        a loader's collate_fn, a transform given as transform= or in a Compose, its class's
        __call__): each rank runs it on its own share, often in a loader's worker processes, so
        what it writes (a cache of samples) is every rank's."""
        if not hasattr(self, "per_sample_names"):
            given = [k.value for c in ast.walk(self.tree) if isinstance(c, ast.Call) for k in c.keywords
                     if k.arg in ("collate_fn", "worker_init_fn", "transform", "target_transform", "transforms")]
            given += [e for c in ast.walk(self.tree) if isinstance(c, ast.Call) and last_name(c) == "Compose"
                      for a in c.args[:1] if isinstance(a, (ast.List, ast.Tuple)) for e in a.elts]
            self.per_sample_names = {"__getitem__", "__getitems__", "__iter__", "__next__"} | {
                g.id for g in given if isinstance(g, ast.Name)}
            self.transform_classes = {last_name(g) for g in given if isinstance(g, ast.Call)}
        outer = self.enclosing(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        while outer is not None and outer.name not in self.per_sample_names and not (
                outer.name == "__call__" and getattr(self.parent.get(outer), "name", None) in self.transform_classes):
            outer = self.enclosing(outer, (ast.FunctionDef, ast.AsyncFunctionDef))
        return outer is not None

    def find_side_effects(self):
        """Calls to print, logging, torch.save and other writers (as statements), and `with open(...,
        'w')` blocks: what rank 0 alone should do (not in a function run for each sample)."""
        self.rank0_calls, self.rank0_blocks, self.kept_per_sample = [], [], []
        defined = {n.name for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        loggers = self.logger_names()
        self.find_private_paths()
        for stmt in ast.walk(self.tree):
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
                name = call_name(stmt.value) or ""
                func = stmt.value.func
                last = name.split(".")[-1] or (func.attr if isinstance(func, ast.Attribute) else "")
                writes = name in WRITERS or (isinstance(stmt.value.func, ast.Attribute)
                                             and stmt.value.func.attr in METHOD_WRITERS)
                if writes and self.private(stmt.value):
                    self.kept_private.append(stmt.lineno)
                elif writes and self.per_sample(stmt):
                    self.kept_per_sample.append(stmt.lineno)
                elif name == "print" or writes or (last in LOGGING and (
                        name.split(".")[0] in ("logging", "logger", "log", "LOG") or name.rsplit(".", 1)[0] in loggers
                        or self.called_logger(stmt.value.func))) or last == "add_scalar":
                    self.rank0_calls.append(stmt.value)
            elif isinstance(stmt, ast.With) and any(self.opens_for_writing(i.context_expr) for i in stmt.items) \
                    and any(self.private(i.context_expr) for i in stmt.items):
                self.kept_private.append(stmt.lineno)
            elif isinstance(stmt, ast.With) and any(self.opens_for_writing(i.context_expr) for i in stmt.items) \
                    and self.per_sample(stmt):
                self.kept_per_sample.append(stmt.lineno)
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
        self.writes_left_to_fetchers()  # downloads.py

    def logger_names(self):
        """What the script keeps a logger in, whatever its name (`_LOG = logging.getLogger(...)`,
        `self.logger = logging.getLogger(cls)`, a get_logger() helper's result)."""
        return {self.e.source(t) for a in ast.walk(self.tree) if isinstance(a, ast.Assign)
                and isinstance(a.value, ast.Call) and self.called_logger(a.value, call=True)
                for t in a.targets if dotted(t)}

    @staticmethod
    def called_logger(node, call=False):
        """Whether node is (call: calls) getLogger/get_logger: `logging.getLogger(__name__).info`."""
        target = node if call else getattr(node, "value", None)
        return isinstance(target, ast.Call) and last_name(target) in ("getLogger", "get_logger")

    def find_private_paths(self):
        """The names that hold a temporary directory or file of the process's own
        (`with TemporaryDirectory() as d`, `d = tempfile.mkdtemp()`) or a path made from one
        (`path = os.path.join(d, "best.pt")`): what is written there is read back by the same
        process (the PyTorch tutorials keep the best weights so), so every rank writes its own."""
        self.private_names, self.kept_private = set(), []
        makers = ("TemporaryDirectory", "mkdtemp", "NamedTemporaryFile", "mkstemp")
        for w in ast.walk(self.tree):
            for i in (w.items if isinstance(w, ast.With) else []):
                if last_name(i.context_expr) in makers and isinstance(i.optional_vars, ast.Name):
                    self.private_names.add(i.optional_vars.id)
        for _ in range(3):  # paths made from paths made from one
            for a in ast.walk(self.tree):
                if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name) and (
                        any(last_name(c) in makers for c in ast.walk(a.value)
                            if isinstance(c, ast.Call)) or self.private(a.value)):
                    self.private_names.add(a.targets[0].id)

    def private(self, node):
        """Whether node reads a name of find_private_paths'."""
        return any(isinstance(n, ast.Name) and n.id in self.private_names for n in ast.walk(node))

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
            last = last_name(c)
            if last in MAKERS or (self.opens_for_writing(c) and id(c) not in in_with and not self.per_sample(c)):
                self.rank0_makers.append(c)
            elif self.opens_for_writing(c) and id(c) not in in_with:
                self.kept_per_sample.append(c.lineno)
            elif last in FILE_HANDLERS:
                self.file_handlers.append(c)
        saves = self.rank0_blocks or self.rank0_makers or any(call_name(c) in WRITERS for c in self.rank0_calls)
        self.loads_after_saves = [c for c in ast.walk(self.tree) if saves and isinstance(c, ast.Call)
                                  and call_name(c) == "torch.load" and not self.in_rank0_block(c) and not self.private(c)
                                  and not self.per_sample(c)
                                  and self.enclosing(c, (ast.ClassDef,)) is None]

    def quiet_progress_bars(self):
        """tqdm/trange bars drawn by rank 0 only (disable= on the others), unless the script
        decides disable= itself."""
        for c in ast.walk(self.tree):
            if not (isinstance(c, ast.Call) and last_name(c) in ("tqdm", "trange")):
                continue
            if any(k.arg == "disable" or k.arg is None for k in c.keywords) or not (c.args or c.keywords):
                continue
            last = c.keywords[-1].value if c.keywords else c.args[-1]
            if isinstance(last, ast.Starred):
                continue
            self.e.replace(last, f"{self.e.source(last)}, disable={self.RANK} != 0")
            self.changes.append(f"line {c.lineno}: the progress bar drawn by rank 0 only")

    def progress_over_shares(self):
        """A progress print in a loop over a split loader (`[{batch_idx * len(data)}/{len(loader.
        dataset)}]`) counts this rank's samples against the whole set, so it would end at 1/N of
        it: there len(loader.dataset) becomes this rank's share, len(loader.sampler) (as
        Horovod's examples print it). Ratios an evaluation averages are left to
        average_dataset_ratios."""
        ratios = {id(x) for n, _, _ in self.dataset_ratios for x in ast.walk(n)}
        for c in self.rank0_calls:
            loops, node = set(), self.parent.get(c)
            while node is not None:
                if isinstance(node, ast.For):
                    loops.update(self.iterated_names(node.iter))
                node = self.parent.get(node)
            for n in ast.walk(c):
                if not (call_name(n) == "len" and len(n.args) == 1 and isinstance(n.args[0], ast.Attribute)
                        and n.args[0].attr == "dataset" and id(n) not in ratios):
                    continue
                of = n.args[0].value
                if ref(of) in loops and self.is_split_ref(ref(of), of):
                    self.e.replace(n, f"len({self.loader_sampler(of)})")
                    self.changes.append(f"line {n.lineno}: the progress print's {self.e.source(n)} is this rank's "
                                        f"share (len({self.loader_sampler(of)})), as the count beside it is")

    def rank0_side_effects(self):
        # A call keeps its arguments evaluated on every rank (they may communicate: a metric
        # computed by a function that averages over ranks); only the call itself is rank 0's.
        self.quiet_progress_bars()
        self.progress_over_shares()
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
        if self.kept_private:
            self.changes.append(f"left on every rank: the write(s) to a temporary directory or file of the process's "
                                f"own (lines {', '.join(map(str, sorted(self.kept_private)))}): each rank reads back "
                                "its own")
        if self.kept_per_sample:
            self.changes.append(f"left on every rank: the write(s) in a function run for each sample (a dataset's "
                                f"__getitem__, a collate_fn; lines {', '.join(map(str, sorted(self.kept_per_sample)))})"
                                ": each rank makes its own share's")
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
