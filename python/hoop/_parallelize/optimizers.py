"""hoop-parallelize: the script's optimizers. Which calls build a torch.optim optimizer (by its
name, through a parameter whose default and arguments are torch.optim classes, as a
`fit(..., opt_func=torch.optim.SGD)` does, or through a class chosen from torch.optim by name,
condition or table), what parameters it is given (a list filled first,
parameter groups), the model they come from (its parts', the whole model the script calls), and
the places its result is assigned (`opt = SGD(...)`, or where a function that returns it, alone
or in a tuple, is called). A mixin of Converter (hoop/parallelize.py): it uses the converter's
tree, parents and edits, and Scopes' look-ups."""
import ast
import itertools

from hoop._parallelize.edits import MARK, OPTIMIZERS, call_name, dotted, dotted_source


class Optimizers:
    def is_optimizer(self, call):
        """Whether call builds a torch.optim optimizer: by its name (optim.SGD, torch.optim.Adam,
        SGD imported from torch.optim), or through a parameter of the function around it whose
        default and every argument given for it are such classes (`def fit(..., opt_func=
        torch.optim.SGD): optimizer = opt_func(model.parameters(), lr)`)."""
        if self.is_optimizer_class(call_name(call)) or self.optimizer_class_expr(call.func, call):
            return True
        fn = self.enclosing(call, (ast.FunctionDef,))
        if fn is None or not isinstance(call.func, ast.Name):
            return False
        args = fn.args
        params = args.posonlyargs + args.args
        defaults = dict(zip([a.arg for a in params][len(params) - len(args.defaults):], args.defaults))
        defaults.update({a.arg: d for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
        name = call.func.id
        if name not in defaults or name in {t.id for t in ast.walk(fn) if isinstance(t, ast.Name)
                                            and isinstance(t.ctx, ast.Store)}:
            return False
        given = [a[name] for _, a in self.calls_of(fn) if name in a]
        return all(self.is_optimizer_class(dotted(v)) for v in [defaults[name]] + given)

    def optimizer_class_expr(self, node, at, depth=0):
        """Whether node is an expression whose every value is a torch.optim class, as
        configurable scripts choose one: `getattr(torch.optim, args.optimizer)`, `torch.optim.Adam
        if args.adam else torch.optim.SGD`, `{"sgd": optim.SGD, "adam": optim.Adam}[name]` (or a
        name given such a dict), or a name every assignment of which (in the function around
        `at`, else at the top level) is one of these."""
        if depth > 4 or node is None:
            return False
        if self.is_optimizer_class(dotted(node)):
            return True
        if isinstance(node, ast.IfExp):
            return all(self.optimizer_class_expr(b, at, depth + 1) for b in (node.body, node.orelse))
        if isinstance(node, ast.Call) and call_name(node) == "getattr" and len(node.args) >= 2:
            return self.is_optim_module(dotted(node.args[0]))
        if isinstance(node, ast.Subscript):
            tables = [node.value] if isinstance(node.value, ast.Dict) else self.values_of(node.value, at)
            return bool(tables) and all(isinstance(t, ast.Dict) and t.values and all(
                self.optimizer_class_expr(v, at, depth + 1) for v in t.values) for t in tables)
        if isinstance(node, ast.Name):
            values = self.values_of(node, at)
            return bool(values) and all(self.optimizer_class_expr(v, at, depth + 1) for v in values)
        return False

    def values_of(self, name, at):
        """The values assigned to the plain name `name` in the function around `at` or, where it
        assigns none, at the top level ([] for anything else)."""
        if not isinstance(name, ast.Name):
            return []
        for scope in (self.enclosing(at, (ast.FunctionDef,)), self.tree):
            if scope is None:
                continue
            found = [a.value for a in ast.walk(scope) if isinstance(a, ast.Assign)
                     and any(isinstance(t, ast.Name) and t.id == name.id for t in a.targets)]
            if found:
                return found
        return []

    def is_optim_module(self, name):
        """torch.optim, or a name bound to it (`import torch.optim as optim`, `from torch import optim`)."""
        if name == "torch.optim":
            return True
        return bool(name) and "." not in name and any(
            (isinstance(n, ast.Import) and any(a.name == "torch.optim" and a.asname == name for a in n.names))
            or (isinstance(n, ast.ImportFrom) and n.module == "torch"
                and any(a.name == "optim" and (a.asname or a.name) == name for a in n.names))
            for n in ast.walk(self.tree))

    def is_optimizer_class(self, name):
        if not name:
            return False
        parts = name.split(".")
        if parts[-1] not in OPTIMIZERS:
            return False
        if len(parts) == 1:  # from torch.optim import SGD
            return any(isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.optim")
                       and any((a.asname or a.name) == parts[0] for a in n.names) for n in ast.walk(self.tree))
        return parts[-2] == "optim" or self.is_optim_module(".".join(parts[:-1]))  # import torch.optim as topt

    def params_exprs(self, call):
        """The expressions an optimizer's parameters come from: its first argument, or, for a name,
        the values assigned to it before and what was appended to it (a list of parameter groups
        made first; the finetuning tutorial's params_to_update, filled from named_parameters())."""
        first = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "params"), None)
        if first is None:
            return []
        if isinstance(first, ast.Name):  # every value it was given before, and what was appended to it
            scope, out = self.enclosing(call, (ast.FunctionDef,)) or self.tree, []
            for a in (n for n in ast.walk(scope) if getattr(n, "lineno", call.lineno) < call.lineno):
                if isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == first.id for t in a.targets):
                    out.append(a.value)
                elif isinstance(a, ast.Call) and isinstance(a.func, ast.Attribute) and a.func.attr in (
                        "append", "extend") and dotted(a.func.value) == first.id and a.args:
                    loop = self.enclosing(a, (ast.For,))  # for name, p in model.named_parameters(): x.append(p)
                    out += [a.args[0]] + ([loop.iter] if loop is not None and isinstance(a.args[0], ast.Name) and any(
                        isinstance(t, ast.Name) and t.id == a.args[0].id for t in ast.walk(loop.target)) else [])
            return out
        return [first]

    def group_rates(self, call):
        """The "lr" values of the parameter groups written out as dicts in the optimizer's
        parameters (in place or in the list assigned to the name it is given)."""
        return [v for e in self.params_exprs(call) for d in ast.walk(e) if isinstance(d, ast.Dict)
                for k, v in zip(d.keys, d.values) if isinstance(k, ast.Constant) and k.value == "lr"]

    def model_of(self, call):
        """'model' for torch.optim.X(model.parameters(), ...), or for parameter groups made from
        one model's parameters()/named_parameters() (in place, or in a list assigned to a name
        first), or from its parts' (model.base, model.classifier: the model they share), else None."""
        exprs = self.params_exprs(call)
        owners = {self.e.source(c.func.value) for e in exprs for c in ast.walk(e)
                  if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                  and c.func.attr in ("parameters", "named_parameters") and not c.args}
        # Parameters named one by one (net.fc.weight, alone or in groups): their modules.
        tensors = [t for e in exprs for t in ([e] if isinstance(e, ast.List) else []) + [
            v for d in ast.walk(e) if isinstance(d, ast.Dict) for k, v in zip(d.keys, d.values)
            if isinstance(k, ast.Constant) and k.value == "params"]]
        owners |= {d.rsplit(".", 1)[0] for t in tensors for x in (t.elts if isinstance(t, (ast.List, ast.Tuple))
                                                                  else [t]) for d in [dotted(x)] if d and "." in d}
        if len(owners) > 1 and all(dotted_source(o) for o in owners):
            common = [p[0] for p in itertools.takewhile(lambda p: len(set(p)) == 1,
                                                        zip(*(o.split(".") for o in owners)))]
            owners = {".".join(common)} if common and common != ["self"] else owners
        return self.called_root(owners.pop()) if len(owners) == 1 else None

    def called_root(self, owner):
        """The part's model where only a part is optimized (`model.fc.parameters()`, a frozen
        feature extractor): the shortest prefix of owner the script calls (`model(x)`), else
        owner. The whole model is then broadcast (its frozen parts too) or wrapped."""
        called = {dotted(c.func) for c in ast.walk(self.tree) if isinstance(c, ast.Call)}
        parts = owner.split(".")
        return next((p for p in (".".join(parts[:i]) for i in range(1, len(parts))) if p != "self" and p in called),
                    owner)

    def optimizer_sites(self, call):
        """[(statement, model, target)] where the optimizer `call` builds is assigned, target being
        the name it gets there: `opt = SGD(...)` itself, or, for a factory that returns it alone
        (`def configure_optimizers(self): return SGD(self.model.parameters())`) or in a tuple
        (`return model, SGD(model.parameters())`, as the "What is torch.nn really?" tutorial's
        get_model() does), each `x = factory(...)` (`self.factory()`, `obj.factory()`) or
        `model, opt = factory(...)` calling it, with the model named as that caller sees it (None
        where unknown). A target of None: a site that assigns it otherwise."""
        stmt, model = self.stmt_of(call), self.model_of(call)
        if isinstance(stmt, ast.Assign) and stmt.value is call:
            return [(stmt, model, stmt.targets[0] if len(stmt.targets) == 1 else None)]
        fn, returned = self.enclosing(call, (ast.FunctionDef,)), getattr(stmt, "value", None)
        index = None if returned is call else next((i for i, e in enumerate(returned.elts) if e is call), -1) \
            if isinstance(returned, ast.Tuple) else -1
        if not isinstance(stmt, ast.Return) or fn is None or index == -1:
            return []
        params, sites = [a.arg for a in fn.args.args], []
        for c, args in self.calls_of(fn):
            site = self.stmt_of(c)
            if not (isinstance(site, ast.Assign) and site.value is c):
                continue
            target = site.targets[0] if len(site.targets) == 1 else None
            if index is not None:  # the caller unpacks the tuple (else it keeps it whole: not followed)
                fits = isinstance(target, ast.Tuple) and len(target.elts) == len(returned.elts)
                target = target.elts[index] if fits else None
            names = {k: self.e.source(v) for k, v in args.items()}
            head, dot, rest = (model or "").partition(".")
            there = names.get(head) if head in params else None if head in self.locals_of(fn) else head
            if index is not None and target is not None:  # the model returned beside it: the caller's name for it
                at = next((i for i, e in enumerate(returned.elts) if dotted(e) == head), None)
                there = self.e.source(site.targets[0].elts[at]) if at is not None else there
            sites.append((site, there + dot + rest if model and there and dotted_source(there) else None, target))
        return sites

    def closure_steps(self):
        """[(call, closure)] for `opt.step(closure)` (or closure=): LBFGS's way, the optimizer
        evaluating the loss and its gradients itself, as often as its line search needs. The
        closure a function of the script's (a nested def, a method) or a lambda; `scaler.step(opt)`
        is no such call."""
        fns = {f.name for f in ast.walk(self.tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))}
        out = []
        for c in ast.walk(self.tree):
            if not (isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "step"):
                continue
            arg = next((k.value for k in c.keywords if k.arg == "closure"),
                       c.args[0] if len(c.args) == 1 and not c.keywords else None)
            if isinstance(arg, ast.Lambda) or (isinstance(arg, (ast.Name, ast.Attribute)) and (
                    arg.id if isinstance(arg, ast.Name) else arg.attr) in fns):
                out.append((c, arg))
        return out

    def closure_helper(self):
        """DDP: the converted script's _hoop_closure(closure): the loss it returns averaged (the
        gradients DDP averages already), so that every rank's line search sees the same numbers."""
        if self.style != "ddp" or not self.closure_steps():
            return []
        return ["", "", f"def _hoop_closure(closure):  {MARK} the loss a closure-taking optimizer (LBFGS) sees, averaged "
                "over the ranks: its line search and stopping tests agree on every rank",
                "    return lambda: _hoop_mean(closure())"]

    def average_closure_losses(self):
        """The closures given to step(): DDP averages each evaluation's gradients, and the loss is
        averaged by _hoop_closure; Horovod style's DistributedOptimizer.step() does both itself."""
        for c, arg in self.closure_steps():
            if self.style == "ddp":
                self.e.replace(arg, f"_hoop_closure({self.e.source(arg)})")
            self.changes.append(f"line {c.lineno}: the closure's loss (and gradients) averaged over the ranks at each "
                                f"evaluation {'by _hoop_closure' if self.style == 'ddp' else 'by step()'}, so that a "
                                "line search takes the same steps on every rank")
