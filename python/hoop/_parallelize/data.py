"""hoop-parallelize: splitting the data between the ranks. The DataLoaders a training loop
iterates get a DistributedSampler (and set_epoch at the top of the epoch loop); manual batching
over range(0, N, B) takes every size()-th batch. A mixin of Converter (hoop/parallelize.py): it
uses the converter's tree, parents, edits and notes."""
import ast

from hoop._parallelize.edits import MARK, Refused, call_name


class DataSplitting:
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
