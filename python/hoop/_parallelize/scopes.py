"""hoop-parallelize: what the script's names and calls mean. Which binding a name read at a
place is (a function's locals against the module's), which of the script's functions and methods
a call runs (f(), self.m(), obj.m() for obj = C(...), C(...) for the __init__ it runs, inherited
methods too), with what arguments, and what a loop reaches through them (does it train?). A
mixin of Converter (hoop/parallelize.py): it uses the converter's tree and parents."""
import ast

from hoop._parallelize.edits import Refused, call_name, dotted


class Scopes:
    def locals_of(self, fn):
        """The names a function binds: its parameters and what it assigns."""
        if fn is None:
            return set()
        args = fn.args
        return {a.arg for a in args.args + args.kwonlyargs + args.posonlyargs} | {
            n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}

    def assignments(self, name, scope):
        """The statements of scope (a function, or the module: None) that assign `name`."""
        return [b for b in ast.walk(scope or self.tree) if isinstance(b, ast.Assign)
                and any(dotted(t) == name for t in b.targets) and self.enclosing(b, (ast.FunctionDef,)) is scope]

    def same_binding(self, name, use, made):
        """Whether `name` read at `use` is the variable it is at `made` (a local of one function is
        not another's; a module-level name holds where no function rebinds it)."""
        base = name.split(".")[0].split("[")[0]
        fu, fm = (self.enclosing(n, (ast.FunctionDef,)) for n in (use, made))
        if base == "self" or fu is fm:
            return True
        return base not in self.locals_of(fm) and base not in self.locals_of(fu)

    def block_of(self, stmt):
        """The statement list that holds stmt: its parent's body, orelse or finalbody ([] if none)."""
        parent = self.parent.get(stmt)
        return next((b for b in (getattr(parent, f, None) for f in ("body", "orelse", "finalbody"))
                     if isinstance(b, list) and any(s is stmt for s in b)), [])

    def functions(self):
        return {f.name: f for f in ast.walk(self.tree) if isinstance(f, ast.FunctionDef)}

    def classes(self):
        return {c.name: c for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef)}

    def lineage(self, cls):
        """[cls, its base, that one's base, ...] as far as the script defines them (first bases)."""
        classes, out = self.classes(), []
        while cls is not None and cls not in out:
            out.append(cls)
            cls = next((classes[dotted(b)] for b in cls.bases if dotted(b) in classes), None)
        return out

    def methods(self, node):
        """{name: method} of the class around node ({} outside a class), or of node, a class: its
        own and those it inherits from the script's classes."""
        cls = node if isinstance(node, ast.ClassDef) else self.enclosing(node, (ast.ClassDef,))
        return {f.name: f for c in reversed(self.lineage(cls)) for f in c.body if isinstance(f, ast.FunctionDef)}

    def instance_class(self, name, where):
        """The script's class whose instance the variable `name` holds (`name = C(...)` in the
        function around `where`, else anywhere), or None."""
        classes = self.classes()
        fn = self.enclosing(where, (ast.FunctionDef,))
        for scope in ([fn] if fn is not None else []) + [self.tree]:
            for a in ast.walk(scope):
                if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name) \
                        and a.targets[0].id == name and isinstance(a.value, ast.Call) and call_name(a.value) in classes:
                    return classes[call_name(a.value)]
        return None

    def init_keeps(self, call, names, same):
        """[(attr, __init__)] for each `self.attr = value` by which the __init__ that call runs (a
        script class's, its own or inherited) keeps an argument given to it as one of `names`:
        `runner = Runner(model)` keeping self.model, `DeviceDataLoader(train_dl, device)` keeping
        self.dl. same(expr, name) says whether expr is that name (for a model: or model.to(...))."""
        cls = self.classes().get(call_name(call))
        init = self.methods(cls).get("__init__") if cls is not None else None
        if init is None:
            return []
        args = next((a for c, a in self.calls_of(init) if c is call), {})
        params = {p for p, v in args.items() if any(same(v, n) for n in names)}
        return [(t.attr, init) for s in ast.walk(init) if isinstance(s, ast.Assign) and any(
            same(s.value, p) for p in params) for t in s.targets if isinstance(t, ast.Attribute)
            and dotted(t.value) == "self"]

    def calls_of(self, fn):
        """[(call, {parameter: argument})] for each call of the script's function or method fn:
        f(...); self.m(...) in its class and obj.m(...) (obj = C(), or of a class not known),
        self being the receiver; C(...) for C.__init__."""
        cls = self.enclosing(fn, (ast.ClassDef,))
        method = cls is not None and self.methods(cls).get(fn.name) is fn
        params, classes = [a.arg for a in fn.args.args], self.classes()
        out = []
        for c in ast.walk(self.tree):
            if not isinstance(c, ast.Call):
                continue
            if method and isinstance(c.func, ast.Attribute) and c.func.attr == fn.name and params:
                receiver = c.func.value
                theirs = self.enclosing(c, (ast.ClassDef,)) if dotted(receiver) == "self" else \
                    self.instance_class(receiver.id, c) if isinstance(receiver, ast.Name) else None
                if theirs is not None and theirs is not cls:
                    continue
                args = {params[0]: receiver, **dict(zip(params[1:], c.args))}
            elif method and fn.name == "__init__" and call_name(c) in classes and \
                    self.methods(classes[call_name(c)]).get("__init__") is fn:  # its own or inherited
                args = dict(zip(params[1:], c.args))
            elif not method and isinstance(c.func, ast.Name) and c.func.id == fn.name:
                args = dict(zip(params, c.args))
            else:
                continue
            out.append((c, {**args, **{k.arg: k.value for k in c.keywords if k.arg}}))
        return out

    def script_callee(self, c):
        """The function or method of the script that call c runs (f(), self.m(), obj.m() for
        obj = C()), or None."""
        if not isinstance(c, ast.Call):
            return None
        found = self.callee(c, "self", self.methods(c), self.functions(), c)
        return found[0][0] if found else None

    def reached(self, loop, depth=3):
        """[(function, receiver)] the loop's body calls, directly or through what they call (depth
        deep), each with its object as the loop names it ("self" for functions)."""
        fns, seen = self.functions(), {}
        todo = [(ast.Module(body=loop.body, type_ignores=[]), "self", self.methods(loop))]
        for _ in range(depth):
            called = [t for node, receiver, methods in todo for c in ast.walk(node) if isinstance(c, ast.Call)
                      for t in self.callee(c, receiver, methods, fns, loop)]
            todo = [t for t in called if (id(t[0]), t[1]) not in seen]
            seen.update({(id(t[0]), t[1]): t for t in todo})
        return [(f, receiver) for f, receiver, _ in seen.values()]

    def refuse_no_training_loop(self):
        loop = next((l for l in ast.walk(self.tree) if isinstance(l, (ast.For, ast.While)) and self.trains(l)), None)
        where = f"line {loop.lineno}: the loop that trains takes " if loop else ""
        raise Refused("no training loop was recognised: " + where +
                      "neither a DataLoader iterated where backward runs, "
                      "batches taken by `for i in range(0, N, B)`, by index (x[i * bs:...]) or as a tensor's "
                      "batches (zip(X.split(B), Y.split(B))), nor batches drawn at random"
                      + ("; where each step trains on the whole data (full-batch, as a GCN on its graph), "
                         "data parallelism has nothing to share out" if loop else "")
                      + "; split the data between ranks by hand")

    def trains(self, loop):
        """Whether the loop runs backward: in its body or in the script's functions and methods it
        calls (`for xb, yb in loader: engine.step(xb, yb)`), but not from under no_grad() (an
        evaluation loop calling a loss_batch() that steps only when given an optimizer)."""
        if any(self.is_backward(n) for n in ast.walk(loop)):
            return True
        node = self.parent.get(loop)
        while node is not None:
            if isinstance(node, ast.With) and any(self.grad_off(i.context_expr) for i in node.items) or isinstance(
                    node, ast.FunctionDef) and any(self.grad_off(d) for d in node.decorator_list):
                return False
            node = self.parent.get(node)
        return any(self.is_backward(n) for f, _ in self.reached(loop) for n in ast.walk(f))

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
