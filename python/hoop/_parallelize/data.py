"""hoop-parallelize: splitting the data between the ranks. The DataLoaders a training loop
iterates (a `for` over it, or `next()` of an iterator made from it, in a `for` or a `while`) get a
DistributedSampler (and set_epoch at the top of the epoch loop, or where the iterator is made
again); manual batching over range(0, N, B), or over a tensor's batches (zip(X.split(B),
Y.split(B)), torch.chunk), takes every size()-th batch; batches drawn at random
(torch.randint in a get_batch()) are drawn apart, the generators seeded by rank before the loop.
A loader is followed by name: a variable, an attribute (`self.train_loader`, made in one method of
a class and iterated in another), an item of a container (`dataloaders[phase]`), through the
functions and methods that return it or are given it. A mixin of Converter (hoop/parallelize.py):
it uses the converter's tree, parents, edits and notes."""
import ast

from hoop._parallelize.edits import MARK, Refused, call_name, dotted, dotted_source, last_name

ITERATORS = ("iter", "cycle", "itertools.cycle")  # it = iter(loader): batches taken by next(it)
ITEM = "[]"  # a name's suffix for an item of it: `loaders[]` is any of the loaders in the dict `loaders`


class Trail(set):
    """The (name, node) pairs a resolution has visited, and the kinds of call it looks for (the
    last part of their names: DataLoader, or a sampler's class)."""

    def __init__(self, kinds=("DataLoader",), record=True):
        super().__init__()
        self.kinds = kinds
        self.record = record  # whether what it passes is noted (factories, iterators): not for a look-up


_DATA = "\0dataset\0"  # where the sampler's dataset goes in its text


def assigned_name(stmt, value):
    """'loader' or 'self.loader' where stmt is `that = value`, else None."""
    if isinstance(stmt, ast.Assign) and stmt.value is value and len(stmt.targets) == 1:
        return dotted(stmt.targets[0])
    return None


def ref(node):
    """dotted(node), or 'loaders[]' for an item of a container (`loaders[phase]`, `loaders["train"]`):
    every item alike."""
    if isinstance(node, ast.Subscript):
        base = dotted(node.value)
        return base + ITEM if base else None
    return dotted(node)


def refs_loaded(node):
    """The names and attribute chains (`self.train_loader`) read under node."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        d for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
        for d in [dotted(n)] if d}


class DataSplitting:
    def kind_of(self, call):
        """The last part of the name a call makes (DataLoader, RandomSampler), through the names the
        script imported it under (`from torch.utils.data import DataLoader as DL`)."""
        last = last_name(call)
        if not hasattr(self, "import_aliases"):
            self.import_aliases = {a.asname: a.name for n in ast.walk(self.tree) if isinstance(n, ast.ImportFrom)
                                   for a in n.names if a.asname}
        return self.import_aliases.get(last, last) if last == (call_name(call) or "") else last

    def find_loaders(self):
        """(call, statement, variable) of each DataLoader built by `name = DataLoader(...)`."""
        self.loaders = []
        for c in ast.walk(self.tree):
            if self.kind_of(c) == "DataLoader":
                stmt = self.stmt_of(c)
                self.loaders.append((c, stmt, assigned_name(stmt, c)))

    def training_loaders(self):
        """The DataLoaders a loop that runs backward iterates, found from the name it iterates:
        assigned a DataLoader, or what a function of the script returns (alone or at its place in
        a returned tuple), or passed as an argument to the function whose loop it is. Also fills
        self.aliases: each loader's names at the places it is used."""
        self.aliases, self.iterators, self.factory_calls, self.factories = {}, set(), set(), set()
        self.item_kinds, self.epochs_set = {}, set()  # a container's loaders: dict or list; set_epoch's places
        found = []
        for loop in ast.walk(self.tree):
            if not (isinstance(loop, (ast.For, ast.While)) and self.trains(loop)):
                continue
            iterated = self.iterated_names(loop.iter) if isinstance(loop, ast.For) else []
            # Batches taken by next(it), where it = iter(loader): a loop over steps, not over the data.
            iterated += [d for n in ast.walk(loop) if isinstance(n, ast.Call) and call_name(n) == "next" and n.args
                         for d in [ref(n.args[0])] if d]
            for name in dict.fromkeys(iterated):
                for call, names in self.resolve_loader(name, loop, Trail()):
                    if call not in [c for c, _, _ in found]:
                        stmt = self.stmt_of(call)
                        found.append((call, stmt, assigned_name(stmt, call)))
                    self.aliases.setdefault(call, set()).update(names)
        # A loader passed to a function whose loop trains (train(model, train_loader, ...)) and
        # not found above: by its name, as before.
        for c, stmt, var in self.loaders:
            if var and "train" in var.lower() and c not in self.aliases:
                found.append((c, stmt, var))
                self.aliases[c] = {var}
        return found

    def iterated_names(self, expr):
        """The names a loop's iterable reads, but for wrappers: enumerate(tqdm(loader)) -> loader;
        every loader a zip() or chain() takes, wrapped or not (zip(labeled, cycle(unlabeled)),
        semi-supervised training's pair of loaders) -> each of them."""
        while isinstance(expr, ast.Call) and expr.args and last_name(expr) in (
                "enumerate", "tqdm", "iter", "islice", "trange", "cycle"):
            expr = expr.args[0]
        if isinstance(expr, ast.Call) and last_name(expr) in ("zip", "chain"):
            return [n for a in expr.args for n in self.iterated_names(a)]
        name = ref(expr)
        return [name] if name else []

    def is_split_ref(self, name, where):
        """Whether `name`, read at `where`, is one of the loaders being split: by its names, or a
        parameter of the function around it (an `evaluate(loader)` given the training loader),
        then resolved from there (a function's parameter to what its callers pass: train(loader)
        and test(loader) name different loaders alike)."""
        fn = self.enclosing(where, (ast.FunctionDef,))
        params = {a.arg for a in fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs} if fn is not None else set()
        if name not in self.split_refs[0] and name not in params:
            return False
        return any(c in self.split_calls for c, _ in self.resolve_loader(name, where, Trail(record=False)))

    def resolve_loader(self, name, where, seen):
        """[(DataLoader call, {names it goes by on the way})] for `name` read at `where`: a
        variable, `self.attr` (assigned in any method of the class) or `obj.attr` (obj = C(...),
        C's self.attr); a function's or method's parameter is followed to its callers' arguments."""
        if (name, id(where)) in seen or len(seen) > 50:
            return []
        seen.add((name, id(where)))
        fn = self.enclosing(where, (ast.FunctionDef,))
        base = name[:-len(ITEM)] if name.endswith(ITEM) else name
        scopes = [fn] if fn is not None and "." not in name else []
        if name.startswith("self."):
            scopes += list(self.methods(where).values())
        out = self.assigned_loaders(name, scopes + [self.tree], seen)
        obj, _, attr = name.partition(".")
        if not out and attr and "." not in attr and obj != "self":
            cls = self.instance_class(obj, where)
            if cls is not None and cls.body:
                out = self.resolve_loader(f"self.{attr}", cls.body[0], seen)
        if not out and fn is not None and base in [a.arg for a in fn.args.args]:
            out = self.loaders_from_callers(fn, base, seen, name[len(base):])
        return [(call, names | {name}) for call, names in out]

    def assigned_loaders(self, name, scopes, seen):
        """The loaders assigned to `name` in the first of the scopes that assigns one; for
        `loaders[]`, those the dict (or list) `loaders` is made with or given item by item."""
        out = []
        for scope in scopes:
            for stmt in ast.walk(scope):
                if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                    continue
                t = stmt.targets[0]
                if name.endswith(ITEM):
                    if dotted(t) == name[:-len(ITEM)]:
                        out += self.items_of(stmt.value, seen)
                    elif isinstance(t, ast.Subscript) and ref(t) == name:
                        found = self.loaders_from(stmt.value, None, seen)
                        kind = "list" if isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, int) else "dict"
                        self.item_kinds.update((id(c), kind) for c, _ in found)
                        out += found
                elif dotted(t) == name:
                    if isinstance(stmt.value, ast.Call) and call_name(stmt.value) in ITERATORS:
                        if seen.record:
                            self.iterators.add(name)  # an iterator over a loader: no .sampler of its own
                    out += self.loaders_from(stmt.value, None, seen)
                elif isinstance(t, ast.Tuple) and any(dotted(e) == name for e in t.elts):
                    i = next(k for k, e in enumerate(t.elts) if dotted(e) == name)
                    out += self.loaders_from(stmt.value, i, seen)
            if out:
                break
        return out

    def items_of(self, value, seen):
        """The DataLoader calls a container is made of: a dict or list display, a comprehension
        (its one call makes every item), dict(k=...), another container's name, or what a
        function of the script returns."""
        out = None
        if isinstance(value, ast.Dict):
            out = [x for k, v in zip(value.keys, value.values)
                   for x in (self.items_of(v, seen) if k is None else self.loaders_from(v, None, seen))]
        elif isinstance(value, (ast.List, ast.Tuple)):
            out = [x for v in value.elts for x in self.loaders_from(v, None, seen)]
        elif isinstance(value, (ast.DictComp, ast.ListComp, ast.GeneratorExp)):
            out = self.loaders_from(value.value if isinstance(value, ast.DictComp) else value.elt, None, seen)
        elif isinstance(value, ast.Call) and call_name(value) == "dict" and not value.args:
            out = [x for k in value.keywords for x in self.loaders_from(k.value, None, seen)]
        if out is not None:
            kind = "dict" if isinstance(value, (ast.Dict, ast.DictComp, ast.Call)) else "list"
            self.item_kinds.update((id(c), kind) for c, _ in out)
            return out
        if isinstance(value, (ast.Name, ast.Attribute)) and dotted(value):
            return self.resolve_loader(dotted(value) + ITEM, value, seen)
        f = self.script_callee(value)
        return [x for r in (ast.walk(f) if f is not None else ()) if isinstance(r, ast.Return) and r.value is not None
                and self.enclosing(r, (ast.FunctionDef,)) is f for x in self.items_of(r.value, seen)]

    def loaders_from_callers(self, fn, name, seen, item=""):
        """The loaders passed as fn's parameter `name` (calls_of); item: the items of what is passed."""
        return [x for c, args in self.calls_of(fn) if name in args and dotted(args[name])
                for x in self.resolve_loader(dotted(args[name]) + item, c, seen)]

    def loaders_from(self, value, index, seen):
        """The DataLoader calls an assigned value is (index: its place in a returned tuple)."""
        if index is None and isinstance(value, ast.Call) and self.kind_of(value) in seen.kinds:
            return [(value, set())]
        if index is not None and isinstance(value, ast.Tuple) and index < len(value.elts):
            return self.loaders_from(value.elts[index], None, seen)
        if isinstance(value, (ast.Name, ast.Attribute)) and index is None and dotted(value):
            return self.resolve_loader(dotted(value), value, seen)
        if index is None and isinstance(value, ast.Call) and call_name(value) in ITERATORS and len(value.args) == 1:
            return self.loaders_from(value.args[0], None, seen)  # an iterator over the loader
        f = self.script_callee(value)
        if f is None:
            return []
        if "DataLoader" in seen.kinds and seen.record:
            self.factory_calls.add(id(value))  # a call of a function that makes a training loader
            self.factories.add(id(f))
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
        in_display = isinstance(self.parent.get(call), (ast.Dict, ast.List, ast.Tuple))
        base = var or f"_hoop_loader{call.lineno}" + (f"_{call.col_offset}" if in_display else "")
        what = f"'{var}'" if var else f"built at line {call.lineno}"
        dataset = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dataset"), None)
        if dataset is None:
            raise Refused(f"line {call.lineno}: the DataLoader {what} has no dataset argument")
        if self.iterable_dataset(dataset, call):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} reads an IterableDataset, which takes "
                          "no sampler: give each rank its own part of the stream in its __iter__ (by "
                          f"{self.RANK} and {self.SIZE}), with as many batches on every rank")
        if any(k.arg == "batch_sampler" for k in call.keywords) or self.batch_sampler_of(call):
            return self.share_batch_sampler(call, stmt, what)  # samplers.py
        self.star_texts = {}
        shuffle, shuffle_src = self.shuffle_of(call, what)
        own = next((k for k in call.keywords if k.arg == "sampler"), None)
        subset, made = None, own is not None and self.drawn_sampler(call, own.value)
        if made:  # weighted, or with replacement: its draws dealt out (samplers.py)
            return self.share_drawn_sampler(call, stmt, own, made, what)
        if own is not None:
            shuffle_src, own_kind, subset = self.plain_sampler_order(call, own.value, what)
        others = self.other_uses(call)
        if others and (own is not None or shuffle is None or isinstance(getattr(shuffle, "value", shuffle), ast.Constant)):
            raise Refused(f"line {call.lineno}: the DataLoader {what} makes the training loader and also "
                          f"{', '.join(others)}, which no training loop iterates (an evaluation loader, say): a "
                          "DistributedSampler here would split those too; give the training loader a DataLoader "
                          "call of its own, or shuffle= saying whether it trains")
        sampler, data = self.place_sampler(call, stmt, base, what, dataset, shuffle_src, others, subset)
        last = call.keywords[-1] if call.keywords else call.args[-1]
        if own is not None:
            self.e.replace(own.value, sampler)
        elif shuffle:
            self.e.replace(shuffle, f"sampler={sampler}")
        elif last is not dataset:
            self.e.replace(last, f"{self.star_texts.pop(id(last), self.e.source(last))}, sampler={sampler}")
        for k in call.keywords:
            if id(k) in self.star_texts:
                self.e.replace(k, self.star_texts[id(k)])
        if last is dataset and not shuffle and own is None:
            self.e.replace(dataset, f"{data}, sampler={sampler}")
        elif data != self.e.source(dataset):
            self.e.replace(dataset, data)
        if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} shares its line with other code: "
                          "give it a line of its own")
        self.changes.append(f"line {call.lineno}: DataLoader {what} given a DistributedSampler"
                            + (" (its shuffle= moved to the sampler)" if shuffle else "")
                            + (f" in place of its {own_kind}" if own is not None else "")
                            + (f", over Subset(dataset, {subset})" if subset else ""))
        self.set_epochs(call, sampler if dotted_source(sampler) else "its sampler", shuffle_src, stmt)

    def shuffle_of(self, call, what):
        """(the node that says shuffle - its keyword, or the third positional argument,
        DataLoader(ds, 64, True) - or None, and the expression the sampler's shuffle= takes). A
        shuffle= that may come in a ** mapping (pytorch/examples' mnist: **train_kwargs, with
        'shuffle': True added on CUDA) is read from there, and left out of what the call gets:
        DataLoader takes no shuffle beside a sampler."""
        shuffle = next((k for k in call.keywords if k.arg == "shuffle"), None)
        if shuffle is None and len(call.args) > 2:
            if len(call.args) > 3:
                raise Refused(f"line {call.lineno}: the training DataLoader {what} gives a sampler by position: "
                              "name its arguments (sampler=...)")
            shuffle = call.args[2]
            return shuffle, self.e.source(shuffle)
        if shuffle is not None:
            return shuffle, self.e.source(shuffle.value)
        stars = [k for k in call.keywords if k.arg is None]
        for k in stars:  # the sampler may be put after the last of them (shard_loader): one edit each
            self.star_texts[id(k)] = f"**{{k: v for k, v in ({self.e.source(k.value)}).items() if k != 'shuffle'}}"
        if not stars:
            return None, "False"
        merged = ", ".join(f"**{self.e.source(k.value)}" for k in stars)
        return None, f"{{{merged}}}.get('shuffle', False)"

    def place_sampler(self, call, stmt, base, what, dataset, shuffle_src, others, subset=None):
        """(the sampler as the loader's call will name it, the dataset as it will): a variable made
        on the lines before the statement, or, for a loader made in a comprehension (one call for
        every item of a dict of loaders), the DistributedSampler itself, in the call. subset: the
        indices a SubsetRandomSampler drew from, now the dataset's (Subset(dataset, indices))."""
        data = self.e.source(dataset)
        if subset is not None:
            data, dataset = f"torch.utils.data.Subset({data}, {subset})", None
        made = "DistributedSampler(" + _DATA + f", num_replicas={self.SIZE}, rank={self.RANK}, shuffle={shuffle_src})"
        if others:  # the shuffled loaders this line makes train: only those are split
            made = made.replace(f"shuffle={shuffle_src})", f"shuffle=True) if ({shuffle_src}) else None")
            self.changes.append(f"line {call.lineno}: the DataLoader made here serves training and "
                                f"{', '.join(others)}: only the shuffled ones it makes are split between the ranks")
        if self.enclosing(call, (ast.DictComp, ast.ListComp, ast.GeneratorExp, ast.Lambda)) is not None:
            if not (isinstance(dataset, (ast.Name, ast.Attribute)) or (isinstance(dataset, ast.Subscript) and ref(
                    dataset) and isinstance(dataset.slice, (ast.Name, ast.Constant)))) or "\n" in data:
                raise Refused(f"line {call.lineno}: the DataLoader {what} is made in a comprehension and builds its "
                              "dataset in place: make the datasets first (a dict of them, say) and index it there")
            return f"({made.replace(_DATA, data)})" if others else made.replace(_DATA, data), data
        before = []
        if not isinstance(dataset, (ast.Name, ast.Attribute)):
            # Built in place: made once, beside the sampler, so both see the same dataset.
            if "\n" in data:
                raise Refused(f"line {call.lineno}: the DataLoader {what} builds its dataset over several lines: "
                              "assign it to a name first")
            before.append(f"{base}_dataset = {data}  {MARK} shared with the sampler")
            data = f"{base}_dataset"
        note = "this rank's share of a shuffled (training) loader; the others whole" if others else "this rank's share"
        before.append(f"{base}_sampler = {made.replace(_DATA, data)}  {MARK} {note}")
        self.e.insert_before(stmt.lineno, before, self.e.indent_of(stmt))
        return f"{base}_sampler", data

    def other_uses(self, call):
        """Where the function that returns this training loader is called for something else: the
        names (or lines) its other calls' results go to, none of them found feeding a training loop."""
        f = self.enclosing(call, (ast.FunctionDef,))
        if f is None or id(f) not in self.factories:
            return []
        return [assigned_name(self.stmt_of(c), c) or f"the call at line {c.lineno}" for c in ast.walk(self.tree)
                if isinstance(c, ast.Call) and self.script_callee(c) is f and id(c) not in self.factory_calls]

    def plain_sampler_order(self, call, expr, what):
        """(shuffle, its kind, the indices of a subset or None) for the loader's own sampler, in
        place or made elsewhere (torchvision's reference scripts make one in their data loading
        function): ('True', 'RandomSampler', None) or ('False', 'SequentialSampler', None) over
        its whole dataset, ('True', 'SubsetRandomSampler', 'train_idx') for SubsetRandomSampler
        (train_idx) made in the same function (a DistributedSampler over Subset(dataset,
        train_idx) takes its place). Any other sampler is refused: the ranks' shares of it are the
        script's to define (one that draws, weighted or with replacement, is shared before this:
        samplers.py)."""
        found = [expr] if isinstance(expr, ast.Call) else []
        if not found and dotted(expr):
            trail = Trail(("RandomSampler", "SequentialSampler", "SubsetRandomSampler"))
            found = [c for c, _ in self.resolve_loader(dotted(expr), call, trail)]
        kind = last_name(found[0]) if len(found) == 1 else ""
        keys = {"SubsetRandomSampler": ("indices", "generator")}.get(kind, ("data_source", "generator"))
        plain = kind in ("RandomSampler", "SequentialSampler", "SubsetRandomSampler") and len(
            found[0].args) <= 1 and all(k.arg in keys for k in found[0].keywords)
        subset = None
        if plain and kind == "SubsetRandomSampler":
            indices = found[0].args[0] if found[0].args else next((k.value for k in found[0].keywords
                                                                    if k.arg == "indices"), None)
            subset = self.e.source(indices) if indices is not None else None
            plain = subset is not None and "\n" not in subset and self.enclosing(
                found[0], (ast.FunctionDef,)) is self.enclosing(call, (ast.FunctionDef,)) and all(
                self.same_binding(n, call, found[0]) for n in refs_loaded(indices))
        if not plain:
            raise Refused(f"line {call.lineno}: the training DataLoader {what} has a sampler of its own; give it a "
                          "DistributedSampler by hand")
        return ("False" if kind == "SequentialSampler" else "True"), kind, subset

    def set_epochs(self, call, sampler, shuffle_src, stmt):
        """set_epoch at the top of each epoch loop: a `for` whose body reads a name the loader goes
        by (or calls a function or method that does) and whose target is a plain name; reached
        through that name (`name.sampler`), so it works wherever the loader was made (a helper
        function's local sampler is out of reach). Without one, where a loop makes a new iterator
        over the loader (`it = iter(loader)` when the last ran out), the epoch goes up there."""
        names = self.aliases.get(call, set()) - self.iterators
        loops = []
        for l in ast.walk(self.tree):
            if not ((isinstance(l, ast.For) and isinstance(l.target, ast.Name)) or isinstance(l, ast.While)) \
                    or call in ast.walk(l):
                continue  # not a plain loop variable, or the loop that makes the loader(s)
            used = refs_loaded(ast.Module(body=l.body, type_ignores=[])) | self.refs_read_by_calls(l)
            used -= refs_loaded(l.iter) if isinstance(l, ast.For) else set()
            hit = sorted(n for n in names if n.removesuffix(ITEM) in used) or sorted(  # obj.attr: obj = C(...)
                r for r in used - names if r.count(".") == 1 and r not in self.iterators
                and self.instance_class(r.split(".")[0], l) is not None
                and call in [c for c, _ in self.resolve_loader(r, l, Trail())])
            if hit and isinstance(l, ast.While) and not any(  # an epoch loop: a `for` over the loader inside
                    isinstance(f, ast.For) and hit[0].removesuffix(ITEM) in refs_loaded(f.iter) for f in ast.walk(l)):
                continue
            if hit:
                loops.append((l, hit[0]))
        loops = [(l, n) for l, n in loops if not any(o is not l and l in list(ast.walk(o)) for o, _ in loops)]
        if not loops and shuffle_src != "False" and self.set_epoch_where_made(call, sampler, stmt):
            return
        if not loops and shuffle_src != "False" and not self.set_epoch_on_new_iterators(names, call) \
                and not self.one_pass(names):
            self.e.insert_before(stmt.lineno, [f"{MARK} call {sampler}.set_epoch(epoch) at the start of every epoch "
                                               "(no epoch loop was recognised)"], self.e.indent_of(stmt))
            self.notes.append(f"line {stmt.lineno}: no epoch loop found around the training loader: "
                              "set_epoch(epoch) is not called on its sampler, so every epoch sees the same order")
        for loop, name in loops:
            if (id(loop), name) in self.epochs_set:
                continue  # another loader of the same container
            self.epochs_set.add((id(loop), name))
            held = self.wrapper_attr(names)  # train_dl = DeviceDataLoader(train_dl, device): its .dl
            reach = f"getattr({name}, {held!r}, {name})" if held and not name.endswith(ITEM) else name
            path = self.sampler_path([call])
            first, epoch = loop.body[0], self.epoch_of(loop, f"{reach}.{path}")
            lines = [f"{reach}.{path}.set_epoch({epoch})  {MARK} a new order each epoch"]
            if name.endswith(ITEM):
                items = name[:-len(ITEM)] + (".values()" if self.item_kinds.get(id(call)) == "dict" else "")
                lines = [f"for _hoop_loader in {items}:  {MARK} a new order each epoch, for each loader split",
                         f"{self.e.unit}if isinstance(_hoop_loader.sampler, DistributedSampler):",
                         f"{self.e.unit * 2}_hoop_loader.sampler.set_epoch({epoch})"]
            self.e.insert_before(first.lineno, lines, self.e.indent_of(first))
            said = f"sampler.set_epoch({epoch}) on each loader of {name[:-len(ITEM)]}" if name.endswith(ITEM) else \
                f"{name}.{path}.set_epoch({epoch})" + (f" (the loader under its wrapper's .{held})" if held else "")
            self.changes.append(f"line {loop.lineno}: {said} each epoch")

    def slices_by_index(self, loop):
        """Whether the loop's body slices with its index times a batch size: `x[i * bs:(i + 1) *
        bs]`, or through names made from it (`start_i = i * bs`, `end_i = start_i + bs`, as
        "What is torch.nn really?" writes it): the loop takes batch i of the data."""
        if not isinstance(loop.target, ast.Name):
            return False
        i = loop.target.id
        scaled = lambda e: any(isinstance(b, ast.BinOp) and isinstance(b.op, ast.Mult) and any(  # noqa: E731
            isinstance(x, ast.Name) and x.id == i for x in (b.left, b.right)) for b in ast.walk(e))
        names = set()
        for _ in range(3):  # names made from names made from it
            for a in ast.walk(loop):
                if isinstance(a, ast.Assign) and (scaled(a.value) or names & refs_loaded(a.value)):
                    names |= {t.id for t in a.targets if isinstance(t, ast.Name)}
        return any(isinstance(sub, ast.Subscript) and isinstance(sub.slice, ast.Slice)
                   and (scaled(sub.slice) or names & refs_loaded(sub.slice)) for sub in ast.walk(loop))

    def shard_batch_indices(self, loop, rng):
        """for i in range(K) (or range(0, K)) taking batch i: each rank takes every size()-th,
        as many on every rank (the last incomplete round dropped)."""
        if len(rng.args) == 2 and self.e.source(rng.args[0]) != "0":
            raise Refused(f"line {loop.lineno}: a batch loop over range({self.e.source(rng.args[0])}, ...): only "
                          "range(K) and range(0, K) are split between ranks")
        k = self.e.source(rng.args[-1])
        self.note_manual_split(loop, count=rng.args[-1])
        self.e.replace(rng, f"range({self.RANK}, ({k}) // {self.SIZE} * {self.SIZE}, {self.SIZE})")
        self.changes.append(f"line {loop.lineno}: batches split between the ranks (every {self.SIZE}-th batch index; "
                            "the last incomplete round is dropped so every rank takes as many steps)")

    @staticmethod
    def epoch_of(loop, sampler):
        """The epoch a loop's pass is: a `for`'s variable; a `while`'s counter (`epoch += 1` in its
        body), else one more than the sampler's own (`while True:` with a break)."""
        if isinstance(loop, ast.For):
            return loop.target.id
        counters = [s.target.id for s in loop.body if isinstance(s, ast.AugAssign) and isinstance(s.op, ast.Add)
                    and isinstance(s.target, ast.Name)]
        return counters[0] if len(counters) == 1 else f"{sampler}.epoch + 1"

    def set_epoch_where_made(self, call, sampler, stmt):
        """A loader made anew in each pass of an epoch loop (`for epoch in ...: loader =
        DataLoader(...)`, a batch size that grows): its sampler, new too, takes the epoch as it is
        made. True where done."""
        loop = self.enclosing(call, (ast.For, ast.While, ast.FunctionDef, ast.ClassDef))
        if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and dotted_source(sampler)
                and self.e.alone_on_lines(stmt)):
            return False
        self.e.insert_after(stmt, [f"{sampler}.set_epoch({loop.target.id})  {MARK} a new order each epoch"])
        self.changes.append(f"line {stmt.lineno}: {sampler}.set_epoch({loop.target.id}) as the loader is made, "
                            "each epoch")
        return True

    def wrapper_attr(self, names):
        """'dl' where the script wraps the loader in an object of a class of its own under one of
        its names (`train_dl = DeviceDataLoader(train_dl, device)`, "What is torch.nn really?"'s
        WrappedDataLoader) whose __init__ keeps it (`self.dl = dl`), else None."""
        for a in ast.walk(self.tree):
            if isinstance(a, ast.Assign) and len(a.targets) == 1 and dotted(a.targets[0]) in names and isinstance(
                    a.value, ast.Call):
                kept = self.init_keeps(a.value, names, lambda expr, name: dotted(expr) == name)
                if kept:
                    return kept[0][0]
        return None

    def set_epoch_on_new_iterators(self, names, call):
        """`it = iter(loader)` inside a loop (a step loop starting the data over when it ran out):
        the sampler's epoch goes up by one just before, on every rank alike. Whether any was found."""
        done = False
        for c in ast.walk(self.tree):
            if not (isinstance(c, ast.Call) and call_name(c) == "iter" and len(c.args) == 1
                    and dotted(c.args[0]) in names and self.enclosing(c, (ast.For, ast.While)) is not None):
                continue
            stmt, name = self.stmt_of(c), f"{dotted(c.args[0])}.{self.sampler_path([call])}"
            if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                continue
            self.e.insert_before(stmt.lineno, [f"{name}.set_epoch({name}.epoch + 1)  {MARK} a new "
                                               "order each pass over the data"], self.e.indent_of(stmt))
            self.changes.append(f"line {stmt.lineno}: {name}'s epoch advanced each time the loop starts "
                                "the data over")
            done = True
        return done

    def refs_read_by_calls(self, loop, depth=3):
        """What the functions and methods called in the loop's body read: of the module's names
        (`for epoch in ...: train(epoch)` where train() iterates the global train_loader), and of
        their object, as the loop names it (`self.train_epoch()` iterating self.train_loader;
        `learner.one_epoch()` iterating self.loader gives learner.loader)."""
        top = {t.id for a in self.tree.body if isinstance(a, ast.Assign) for t in a.targets if isinstance(t, ast.Name)}
        out = set()
        for f, receiver in self.reached(loop, depth):
            local = {a.arg for a in f.args.args} | {n.id for n in ast.walk(f) if isinstance(n, ast.Name)
                                                    and isinstance(n.ctx, ast.Store)}
            read = refs_loaded(f)
            out |= (read - local) & top
            out |= {receiver + r[4:] for r in read if r.startswith("self.")}
        return out

    @staticmethod
    def tensor_batches(e):
        """Whether e makes a tensor's batches: X.split(B), torch.split(X, B), .chunk(K),
        torch.chunk(X, K), tensor_split, or a zip() of them (inputs beside their targets)."""
        if isinstance(e, ast.Call) and call_name(e) == "zip":
            return bool(e.args) and all(DataSplitting.tensor_batches(a) for a in e.args)
        if not (isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.args
                and e.func.attr in ("split", "chunk", "tensor_split")):
            return False  # str.split() takes no size, or a separator
        own = dotted(e.func.value) == "torch"  # torch.split(X, B): the tensor comes first
        return len(e.args) >= (2 if own else 1) and not any(isinstance(a, ast.Constant) and isinstance(a.value, str)
                                                            for a in e.args + [e.func.value])

    def shard_tensor_batches(self, loop):
        """for xb, yb in zip(X.split(B), Y.split(B)) (or torch.chunk, enumerate() of them) that
        trains: each rank takes every size()-th batch, as many on every rank (the last incomplete
        round dropped)."""
        it = loop.iter
        while isinstance(it, ast.Call) and last_name(it) in ("enumerate", "tqdm") and it.args:
            it = it.args[0]
        if not (self.tensor_batches(it) and self.trains(loop)):
            return False
        self.note_tensor_split(loop, it.args[0] if call_name(it) == "zip" else it)
        self.e.replace(it, f"(lambda _b: _b[{self.RANK}:len(_b) // {self.SIZE} * {self.SIZE}:{self.SIZE}])"
                           f"(list({self.rank0_text(it, loop)}))")
        self.changes.append(f"line {loop.lineno}: batches split between the ranks (every {self.SIZE}-th of the "
                            "tensor's batches; the last incomplete round is dropped so every rank takes as many steps)")
        return True

    def shard_manual_batches(self):
        """for i in range(0, N, B) loops that train (or enumerate(range(0, N, B)), as
        word_language_model's get_batch loop), and loops over a tensor's batches (X.split(B)):
        each rank takes every size()-th batch."""
        done = []
        for loop in ast.walk(self.tree):
            if not isinstance(loop, ast.For):
                continue
            if self.shard_tensor_batches(loop):
                done.append(loop)
                continue
            rng = loop.iter
            if isinstance(rng, ast.Call) and call_name(rng) == "enumerate" and len(rng.args) == 1:
                rng = rng.args[0]
            if not (isinstance(rng, ast.Call) and call_name(rng) == "range" and not rng.keywords):
                continue
            if len(rng.args) in (1, 2) and self.trains(loop) and self.slices_by_index(loop):
                self.shard_batch_indices(loop, rng)
                done.append(loop)
                continue
            if len(rng.args) != 3 or not self.trains(loop):
                continue
            start, stop, step = (self.e.source(a) for a in rng.args)
            self.note_manual_split(loop, whole=rng.args[1], step=rng.args[2])
            if start != "0":
                raise Refused(f"line {loop.lineno}: a batch loop over range({start}, ...): only range(0, N, B) is "
                              "split between ranks")
            self.e.replace(rng, f"range({self.RANK} * ({step}), ({stop}) // (({step}) * {self.SIZE}) * ({step}) * "
                                      f"{self.SIZE}, ({step}) * {self.SIZE})")
            self.changes.append(f"line {loop.lineno}: batches split between the ranks (every {self.SIZE}-th batch; the "
                                "last incomplete round is dropped so every rank takes as many steps)")
            done.append(loop)
        self.same_orders(done)  # orders.py: rank 0's order on every rank
        return bool(done)
