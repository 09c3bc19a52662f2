"""hoop-parallelize: splitting the data between the ranks. The DataLoaders a training loop
iterates (a `for` over it, or `next()` of an iterator made from it, in a `for` or a `while`) get a
DistributedSampler (and set_epoch at the top of the epoch loop, or where the iterator is made
again); manual batching over range(0, N, B) takes every size()-th batch. A loader is followed by
name: a variable, or an attribute (`self.train_loader`, made in one method of a class and iterated
in another). A mixin of Converter (hoop/parallelize.py): it uses the converter's tree, parents,
edits and notes."""
import ast

from hoop._parallelize.edits import MARK, Refused, call_name, dotted

ITERATORS = ("iter", "cycle", "itertools.cycle")  # it = iter(loader): batches taken by next(it)


class Trail(set):
    """The (name, node) pairs a resolution has visited, and the kinds of call it looks for (the
    last part of their names: DataLoader, or a sampler's class)."""

    def __init__(self, kinds=("DataLoader",)):
        super().__init__()
        self.kinds = kinds


def assigned_name(stmt, value):
    """'loader' or 'self.loader' where stmt is `that = value`, else None."""
    if isinstance(stmt, ast.Assign) and stmt.value is value and len(stmt.targets) == 1:
        return dotted(stmt.targets[0])
    return None


def refs_loaded(node):
    """The names and attribute chains (`self.train_loader`) read under node."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        d for n in ast.walk(node) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)
        for d in [dotted(n)] if d}


class DataSplitting:
    def find_loaders(self):
        """(call, statement, variable) of each DataLoader built by `name = DataLoader(...)`."""
        self.loaders = []
        for c in ast.walk(self.tree):
            name = call_name(c)
            if name and name.split(".")[-1] == "DataLoader":
                stmt = self.stmt_of(c)
                self.loaders.append((c, stmt, assigned_name(stmt, c)))

    def training_loaders(self):
        """The DataLoaders a loop that runs backward iterates, found from the name it iterates:
        assigned a DataLoader, or what a function of the script returns (alone or at its place in
        a returned tuple), or passed as an argument to the function whose loop it is. Also fills
        self.aliases: each loader's names at the places it is used."""
        self.aliases, self.iterators, self.factory_calls, self.factories = {}, set(), set(), set()
        found = []
        for loop in ast.walk(self.tree):
            if not (isinstance(loop, (ast.For, ast.While)) and any(self.is_backward(n) for n in ast.walk(loop))):
                continue
            iterated = self.iterated_names(loop.iter) if isinstance(loop, ast.For) else []
            # Batches taken by next(it), where it = iter(loader): a loop over steps, not over the data.
            iterated += [d for n in ast.walk(loop) if isinstance(n, ast.Call) and call_name(n) == "next" and n.args
                         for d in [dotted(n.args[0])] if d]
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
        """The names a loop's iterable reads, but for wrappers: enumerate(tqdm(loader)) -> loader."""
        while isinstance(expr, ast.Call) and expr.args and (call_name(expr) or "").split(".")[-1] in (
                "enumerate", "tqdm", "iter", "zip", "islice", "trange"):
            expr = expr.args[0]
        name = dotted(expr)
        return [name] if name else []

    def functions(self):
        return {f.name: f for f in ast.walk(self.tree) if isinstance(f, ast.FunctionDef)}

    def methods(self, node):
        """{name: method} of the class around node ({} outside a class), or of node, a class."""
        cls = node if isinstance(node, ast.ClassDef) else self.enclosing(node, (ast.ClassDef,))
        return {} if cls is None else {f.name: f for f in cls.body if isinstance(f, ast.FunctionDef)}

    def instance_class(self, name, where):
        """The script's class whose instance the variable `name` holds (`name = C(...)` in the
        function around `where`, else anywhere), or None."""
        classes = {c.name: c for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef)}
        fn = self.enclosing(where, (ast.FunctionDef,))
        for scope in ([fn] if fn is not None else []) + [self.tree]:
            for a in ast.walk(scope):
                if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name) \
                        and a.targets[0].id == name and isinstance(a.value, ast.Call) and call_name(a.value) in classes:
                    return classes[call_name(a.value)]
        return None

    def resolve_loader(self, name, where, seen):
        """[(DataLoader call, {names it goes by on the way})] for `name` read at `where`: a
        variable, `self.attr` (assigned in any method of the class) or `obj.attr` (obj = C(...),
        C's self.attr); a function's or method's parameter is followed to its callers' arguments."""
        if (name, id(where)) in seen or len(seen) > 50:
            return []
        seen.add((name, id(where)))
        fn = self.enclosing(where, (ast.FunctionDef,))
        scopes = [fn] if fn is not None and "." not in name else []
        if name.startswith("self."):
            scopes += list(self.methods(where).values())
        out = self.assigned_loaders(name, scopes + [self.tree], seen)
        obj, _, attr = name.partition(".")
        if not out and attr and "." not in attr and obj != "self":
            cls = self.instance_class(obj, where)
            if cls is not None and cls.body:
                out = self.resolve_loader(f"self.{attr}", cls.body[0], seen)
        if not out and fn is not None and name in [a.arg for a in fn.args.args]:
            out = self.loaders_from_callers(fn, name, seen)
        return [(call, names | {name}) for call, names in out]

    def assigned_loaders(self, name, scopes, seen):
        """The loaders assigned to `name` in the first of the scopes that assigns one."""
        out = []
        for scope in scopes:
            for stmt in ast.walk(scope):
                if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                    continue
                t = stmt.targets[0]
                if dotted(t) == name:
                    if isinstance(stmt.value, ast.Call) and call_name(stmt.value) in ITERATORS:
                        self.iterators.add(name)  # an iterator over a loader: no .sampler of its own
                    out += self.loaders_from(stmt.value, None, seen)
                elif isinstance(t, ast.Tuple) and any(dotted(e) == name for e in t.elts):
                    i = next(k for k, e in enumerate(t.elts) if dotted(e) == name)
                    out += self.loaders_from(stmt.value, i, seen)
            if out:
                break
        return out

    def loaders_from_callers(self, fn, name, seen):
        """The loaders passed as fn's parameter `name`: f(...), self.method(...), C(...) for
        C.__init__ (self is not among a method's arguments)."""
        pos = [a.arg for a in fn.args.args].index(name)
        cls = self.enclosing(fn, (ast.ClassDef,))
        method = cls is not None and self.methods(cls).get(fn.name) is fn
        out = []
        for c in ast.walk(self.tree):
            if not isinstance(c, ast.Call):
                continue
            if method and ((dotted(c.func) == f"self.{fn.name}" and self.methods(c).get(fn.name) is fn)
                           or (fn.name == "__init__" and call_name(c) == cls.name)):
                at = pos - 1
            elif not method and isinstance(c.func, ast.Name) and c.func.id == fn.name:
                at = pos
            else:
                continue
            arg = c.args[at] if 0 <= at < len(c.args) else next((k.value for k in c.keywords if k.arg == name), None)
            if arg is not None and dotted(arg):
                out += self.resolve_loader(dotted(arg), c, seen)
        return out

    def loaders_from(self, value, index, seen):
        """The DataLoader calls an assigned value is (index: its place in a returned tuple)."""
        if index is None and isinstance(value, ast.Call) and (call_name(value) or "").split(".")[-1] in seen.kinds:
            return [(value, set())]
        if index is not None and isinstance(value, ast.Tuple) and index < len(value.elts):
            return self.loaders_from(value.elts[index], None, seen)
        if isinstance(value, (ast.Name, ast.Attribute)) and index is None and dotted(value):
            return self.resolve_loader(dotted(value), value, seen)
        if index is None and isinstance(value, ast.Call) and call_name(value) in ITERATORS and len(value.args) == 1:
            return self.loaders_from(value.args[0], None, seen)  # an iterator over the loader
        f = self.functions().get(call_name(value) or "") if isinstance(value, ast.Call) else None
        if f is None:
            return []
        if "DataLoader" in seen.kinds:
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
        base = var or f"_hoop_loader{call.lineno}"  # a loader made in place (returned, say)
        what = f"'{var}'" if var else f"built at line {call.lineno}"
        dataset = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "dataset"), None)
        if dataset is None:
            raise Refused(f"line {call.lineno}: the DataLoader {what} has no dataset argument")
        shuffle = next((k for k in call.keywords if k.arg == "shuffle"), None)
        shuffle_src = self.e.source(shuffle.value) if shuffle else "False"
        own = next((k for k in call.keywords if k.arg == "sampler"), None)
        if any(k.arg == "batch_sampler" for k in call.keywords):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} has a batch sampler of its own; give "
                          "it a DistributedSampler by hand")
        if own is not None:
            shuffle_src, own_kind = self.plain_sampler_order(call, own.value, what)
        others = self.other_uses(call)
        if others and (own is not None or shuffle is None or isinstance(shuffle.value, ast.Constant)):
            raise Refused(f"line {call.lineno}: the DataLoader {what} makes the training loader and also "
                          f"{', '.join(others)}, which no training loop iterates (an evaluation loader, say): a "
                          "DistributedSampler here would split those too; give the training loader a DataLoader "
                          "call of its own, or shuffle= saying whether it trains")
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
        if others:  # the shuffled loaders this line makes train: only those are split
            before.append(f"{sampler} = DistributedSampler({data}, num_replicas={self.SIZE}, rank={self.RANK}, "
                          f"shuffle=True) if ({shuffle_src}) else None  {MARK} this rank's share of a shuffled "
                          "(training) loader; the others whole")
            self.changes.append(f"line {call.lineno}: the DataLoader made here serves training and "
                                f"{', '.join(others)}: only the shuffled ones it makes are split between the ranks")
        else:
            before.append(f"{sampler} = DistributedSampler({data}, num_replicas={self.SIZE}, rank={self.RANK}, "
                          f"shuffle={shuffle_src})  {MARK} this rank's share")
        self.e.insert_before(stmt.lineno, before, self.e.indent_of(stmt))
        last = call.keywords[-1] if call.keywords else call.args[-1]
        if own is not None:
            self.e.replace(own.value, sampler)
        elif shuffle:
            self.e.replace(shuffle, f"sampler={sampler}")
        elif last is not dataset:
            self.e.replace(last, f"{self.e.source(last)}, sampler={sampler}")
        if last is dataset and not shuffle and own is None:
            self.e.replace(dataset, f"{data}, sampler={sampler}")
        elif data != self.e.source(dataset):
            self.e.replace(dataset, data)
        if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} shares its line with other code: "
                          "give it a line of its own")
        self.changes.append(f"line {stmt.lineno}: DataLoader {what} given a DistributedSampler"
                            + (" (its shuffle= moved to the sampler)" if shuffle else "")
                            + (f" in place of its {own_kind}" if own is not None else ""))
        self.set_epochs(call, sampler, shuffle_src, stmt)

    def other_uses(self, call):
        """Where the function that returns this training loader is called for something else: the
        names (or lines) its other calls' results go to, none of them found feeding a training loop."""
        f = self.enclosing(call, (ast.FunctionDef,))
        if f is None or id(f) not in self.factories:
            return []
        return [assigned_name(self.stmt_of(c), c) or f"the call at line {c.lineno}" for c in ast.walk(self.tree)
                if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == f.name
                and id(c) not in self.factory_calls]

    def plain_sampler_order(self, call, expr, what):
        """('True', 'RandomSampler') or ('False', 'SequentialSampler') where the loader's own
        sampler is one of those over its whole dataset, in place or made elsewhere (torchvision's
        reference scripts make one in their data loading function); a DistributedSampler takes
        its place with that order. Any other sampler (weighted, a subset, with replacement) is
        refused: the ranks' shares of it are the script's to define."""
        found = [expr] if isinstance(expr, ast.Call) else []
        if not found and dotted(expr):
            trail = Trail(("RandomSampler", "SequentialSampler"))
            found = [c for c, _ in self.resolve_loader(dotted(expr), call, trail)]
        kind = (call_name(found[0]) or "").split(".")[-1] if len(found) == 1 else ""
        plain = kind in ("RandomSampler", "SequentialSampler") and len(found[0].args) <= 1 and all(
            k.arg in ("data_source", "generator") for k in found[0].keywords)
        if not plain:
            raise Refused(f"line {call.lineno}: the training DataLoader {what} has a sampler of its own; give it a "
                          "DistributedSampler by hand")
        return ("True" if kind == "RandomSampler" else "False"), kind

    def set_epochs(self, call, sampler, shuffle_src, stmt):
        """set_epoch at the top of each epoch loop: a `for` whose body reads a name the loader goes
        by (or calls a function or method that does) and whose target is a plain name; reached
        through that name (`name.sampler`), so it works wherever the loader was made (a helper
        function's local sampler is out of reach). Without one, where a loop makes a new iterator
        over the loader (`it = iter(loader)` when the last ran out), the epoch goes up there."""
        names = self.aliases.get(call, set()) - self.iterators
        loops = []
        for l in ast.walk(self.tree):
            if not (isinstance(l, ast.For) and isinstance(l.target, ast.Name)):
                continue
            used = refs_loaded(ast.Module(body=l.body, type_ignores=[])) | self.refs_read_by_calls(l)
            used -= refs_loaded(l.iter)
            hit = sorted(n for n in names if n in used) or sorted(  # obj.attr through obj = C(...)
                r for r in used - names if r.count(".") == 1 and r not in self.iterators
                and self.instance_class(r.split(".")[0], l) is not None
                and call in [c for c, _ in self.resolve_loader(r, l, Trail())])
            if hit:
                loops.append((l, hit[0]))
        loops = [(l, n) for l, n in loops if not any(o is not l and l in list(ast.walk(o)) for o, _ in loops)]
        if not loops and shuffle_src != "False" and not self.set_epoch_on_new_iterators(names):
            self.e.insert_before(stmt.lineno, [f"{MARK} call {sampler}.set_epoch(epoch) at the start of every epoch "
                                               "(no epoch loop was recognised)"], self.e.indent_of(stmt))
            self.notes.append(f"line {stmt.lineno}: no epoch loop found around the training loader: "
                              "set_epoch(epoch) is not called on its sampler, so every epoch sees the same order")
        for loop, name in loops:
            first = loop.body[0]
            self.e.insert_before(first.lineno, [f"{name}.sampler.set_epoch({loop.target.id})  {MARK} a new order "
                                                "each epoch"], self.e.indent_of(first))
            self.changes.append(f"line {loop.lineno}: {name}.sampler.set_epoch({loop.target.id}) each epoch")

    def set_epoch_on_new_iterators(self, names):
        """`it = iter(loader)` inside a loop (a step loop starting the data over when it ran out):
        the sampler's epoch goes up by one just before, on every rank alike. Whether any was found."""
        done = False
        for c in ast.walk(self.tree):
            if not (isinstance(c, ast.Call) and call_name(c) == "iter" and len(c.args) == 1
                    and dotted(c.args[0]) in names and self.enclosing(c, (ast.For, ast.While)) is not None):
                continue
            stmt, name = self.stmt_of(c), dotted(c.args[0])
            if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                continue
            self.e.insert_before(stmt.lineno, [f"{name}.sampler.set_epoch({name}.sampler.epoch + 1)  {MARK} a new "
                                               "order each pass over the data"], self.e.indent_of(stmt))
            self.changes.append(f"line {stmt.lineno}: {name}.sampler's epoch advanced each time the loop starts "
                                "the data over")
            done = True
        return done

    def refs_read_by_calls(self, loop, depth=3):
        """What the functions and methods called in the loop's body read: of the module's names
        (`for epoch in ...: train(epoch)` where train() iterates the global train_loader), and of
        their object, as the loop names it (`self.train_epoch()` iterating self.train_loader;
        `learner.one_epoch()` iterating self.loader gives learner.loader)."""
        fns, top = self.functions(), {t.id for a in self.tree.body if isinstance(a, ast.Assign)
                                      for t in a.targets if isinstance(t, ast.Name)}
        seen, out = set(), set()
        todo = [(ast.Module(body=loop.body, type_ignores=[]), "self", self.methods(loop))]
        for _ in range(depth):
            called = []
            for node, receiver, methods in todo:
                for c in ast.walk(node):
                    if isinstance(c, ast.Call):
                        called += self.callee(c, receiver, methods, fns, loop)
            todo = [t for t in called if (id(t[0]), t[1]) not in seen]
            seen |= {(id(t[0]), t[1]) for t in todo}
            for f, receiver, _ in todo:
                local = {a.arg for a in f.args.args} | {n.id for n in ast.walk(f) if isinstance(n, ast.Name)
                                                        and isinstance(n.ctx, ast.Store)}
                read = refs_loaded(f)
                out |= (read - local) & top
                out |= {receiver + r[4:] for r in read if r.startswith("self.")}
        return out

    def callee(self, c, receiver, methods, fns, loop):
        """[(function, receiver, its class's methods)] that call c runs, where the script has it."""
        if isinstance(c.func, ast.Name) and c.func.id in fns:
            return [(fns[c.func.id], "self", {})]
        if not (isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name)):
            return []
        obj, name = c.func.value.id, c.func.attr
        if obj == "self":
            return [(methods[name], receiver, methods)] if name in methods else []
        cls = self.instance_class(obj, loop) if receiver == "self" else None
        theirs = self.methods(cls) if cls is not None else {}
        return [(theirs[name], obj, theirs)] if name in theirs else []

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
