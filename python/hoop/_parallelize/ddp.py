"""hoop-parallelize, --style ddp: the model wrapped in DistributedDataParallel just before the
optimizer is built from it. DDP averages gradients only for a forward pass through the wrapper,
so every place the script kept the model before the wrap gets the wrapped model too: another
name in the same function (`self.model = model`) and an object of the script's own classes that
stored it (`runner = Runner(model)` whose __init__ does `self.model = model`). What the script
reads from the model other than calling it (its state_dict(), a method of its own) goes to the
wrapped model's .module. A gradient the script sets by hand (DDP never averages it) is listed.
A mixin of Converter: it uses the converter's tree, parents, edits and changes, and
DataSplitting's scope helpers."""
import ast

from hoop._parallelize.edits import MARK, MODULE_ATTRS, Refused, call_name, dotted, last_name

MOVERS = ("to", "cuda", "cpu", "train")  # model.to(device) and the like give the model back
# Calls that copy or export the model they are given: given the plain model, so that what they
# make (an averaged model's checkpoint, a traced module) is what the script made alone.
COPIERS = {"AveragedModel", "deepcopy", "ModelEma", "ModelEmaV2", "ModelEmaV3"}
EXPORTERS = {"torch.jit.trace", "torch.jit.script", "torch.onnx.export", "torch.export.export"}
PICKLERS = {"torch.save", "pickle.dump", "joblib.dump", "dill.dump"}
# nn.Module's methods whose answers name the parts ("module." before every name, from the wrapper):
# from the plain model, so a checkpoint's keys and a TensorBoard histogram's tags are one process's.
NAMED = {"state_dict", "load_state_dict", "named_parameters", "named_buffers", "named_modules", "named_children"}


class DdpWrap:
    def is_model(self, value, model):
        """Whether value is the model itself or model.to(...)/.cuda()/.train() of it."""
        return dotted(value) == model or (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
                                          and value.func.attr in MOVERS and dotted(value.func.value) == model)

    def kept_names(self, stmt, model, scope):
        """Other names the model was given in scope before stmt (self.model = model)."""
        return sorted({dotted(b.targets[0]) for b in ast.walk(scope or self.tree) if isinstance(b, ast.Assign)
                       and b.lineno < stmt.lineno and self.enclosing(b, (ast.FunctionDef,)) is scope
                       and len(b.targets) == 1 and dotted(b.targets[0]) not in (None, model)
                       and self.is_model(b.value, model)})

    def kept_in_objects(self, stmt, model, scope):
        """[(`obj.attr`, __init__)] for each object of the script's classes made in scope before
        stmt from the model (`runner = Runner(model)`) whose __init__ keeps it (`self.attr = model`)."""
        out = []
        for b in ast.walk(scope or self.tree):
            if isinstance(b, ast.Assign) and b.lineno < stmt.lineno and len(b.targets) == 1 and dotted(
                    b.targets[0]) and isinstance(b.value, ast.Call) and self.enclosing(b, (ast.FunctionDef,)) is scope:
                out += [(f"{dotted(b.targets[0])}.{attr}", init)
                        for attr, init in self.init_keeps(b.value, [model], self.is_model)]
        return out

    def wrap_model(self, stmt, model, after=False):
        """model = DDP(model) before stmt (the optimizer's), or after it where stmt makes the model
        too (`model, opt = get_model()`), and the wrapped model wherever the script kept the plain
        one before."""
        if model == "self":
            raise Refused(f"line {stmt.lineno}: the model builds its own optimizer from self.parameters() and trains "
                          "itself through its own methods (self(x)), which DistributedDataParallel's wrapper never "
                          "sees: try --style horovod")
        scope = self.enclosing(stmt, (ast.FunctionDef,))
        kept, objects = self.kept_names(stmt, model, scope), self.kept_in_objects(stmt, model, scope)
        held = kept + [o for o, _ in objects]
        unused = self.unused_layers(self.model_class(model, stmt))
        find = ", find_unused_parameters=True" if unused else ""
        lines = ([f"{MARK} {', '.join(unused)} {'is' if len(unused) == 1 else 'are'} not used by forward(): DDP "
                  "finds the parameters without a gradient each step"] if unused else []) + [
            f"{model} = torch.nn.parallel.DistributedDataParallel({model}{find})  {MARK} gradients averaged over the "
            "ranks"] + [f"{k} = {model}  {MARK} the wrapped model where the script keeps it" for k in held]
        if after:
            self.e.insert_after(stmt, lines)
        else:
            self.e.insert_before(stmt.lineno, lines, self.e.indent_of(stmt))
        self.declare_outer(scope, model)
        for name in [model] + held:
            self.ddp_models.setdefault(name, (stmt.end_lineno if after else stmt.lineno - 1, scope))
        for attr, init in objects:  # the object's own methods see it as self.attr, after its __init__
            self.ddp_models.setdefault("self." + attr.rsplit(".", 1)[1], (init.end_lineno, init))
        self.changes.append(f"line {stmt.lineno}: model '{model}' wrapped in DistributedDataParallel"
                            + (f" (and kept as {', '.join(held)})" if held else "")
                            + (f", finding unused parameters ({', '.join(unused)} not used by forward)" if unused
                               else ""))

    def declare_outer(self, fn, model):
        """Where the model is a name of the top level (or of a function around fn) that fn only
        reads, the wrap's assignment would make it fn's own and its first read fail
        (UnboundLocalError): fn declares it global (nonlocal), so the wrapped model is the
        script's model everywhere, as the plain one was."""
        if fn is None or not model.isidentifier():
            return
        args = fn.args
        if model in {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg] if a}:
            return
        inner = [n for n in ast.walk(fn) if self.enclosing(n, (ast.FunctionDef, ast.Lambda)) is fn]
        if any(isinstance(n, ast.Name) and n.id == model and isinstance(n.ctx, (ast.Store, ast.Del)) for n in inner) \
                or any(isinstance(n, (ast.Global, ast.Nonlocal)) and model in n.names for n in inner):
            return
        outer = self.enclosing(fn, (ast.FunctionDef,))
        assigns = lambda scope: any(  # noqa: E731
            isinstance(n, ast.Name) and n.id == model and isinstance(n.ctx, ast.Store)
            and self.enclosing(n, (ast.FunctionDef,)) is scope for n in ast.walk(scope or self.tree))
        while outer is not None and not assigns(outer):
            outer = self.enclosing(outer, (ast.FunctionDef,))
        if outer is None and not assigns(None):
            return
        body = fn.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(
            body[0].value, ast.Constant) and isinstance(body[0].value.value, str) else body[0]
        if first.lineno == fn.lineno:
            return  # `def f(): ...` on one line
        word = "global" if outer is None else "nonlocal"
        self.e.insert_before(first.lineno, [f"{word} {model}  {MARK} the wrapped model is the script's model "
                                            "everywhere"], self.e.indent_of(first))
        self.changes.append(f"line {fn.lineno}: {fn.name}() declares {word} {model} (the wrap assigns the "
                            f"{'top level' if outer is None else outer.name + '()'}'s model)")

    def methods_running_forward(self):
        """The names of the script's methods (but forward) that call self(...) or self.forward()."""
        return {f.name for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef) for f in c.body
                if isinstance(f, ast.FunctionDef) and f.name != "forward" and any(
                    isinstance(n, ast.Call) and dotted(n.func) in ("self", "self.forward") for n in ast.walk(f))}

    def refuse_forward_outside(self, a, owner, runs_forward):
        """A method of the model's own that runs its forward (`self(images)` in a training_step())
        whose result backward is called on (`loss = model.training_step(batch)`, then
        `loss.backward()`): through .module DDP's wrapper never sees the forward, so no gradient
        would be averaged. (A generate() after training, or in a no-gradient block, is fine.)"""
        if a.attr not in runs_forward:
            return
        stmt = self.stmt_of(a)
        names = {n.id for t in (getattr(stmt, "targets", None) or [getattr(stmt, "target", None)]) if t is not None
                 for n in ast.walk(t) if isinstance(n, ast.Name)}
        scope = self.enclosing(a, (ast.For, ast.While, ast.FunctionDef)) or self.tree
        if any(self.is_backward(n) and (a in set(ast.walk(n.func.value)) or names & {
                x.id for x in ast.walk(n.func.value) if isinstance(x, ast.Name)}) for n in ast.walk(scope)):
            raise Refused(f"line {a.lineno}: {owner}.{a.attr}() runs the model's forward inside a method of its own "
                          "(self(...)), where DistributedDataParallel's wrapper does not see it, and backward follows: "
                          "no gradient would be averaged; call the model itself in the training loop, or try "
                          "--style horovod")

    def module_read(self, a):
        """The model expression node a reads other than by calling it or through nn.Module's own
        methods, with how it reads it ("{}" for the model), or (None, None): an attribute (`model.fc`, its state_dict()),
        an item (`model[0]` of a Sequential), its length, its iteration (`for layer in model`), or
        a copy or export of it (`AveragedModel(model)`, `copy.deepcopy(model)`, torch.jit.trace)."""
        if isinstance(a, ast.Attribute) and isinstance(a.ctx, ast.Load):
            if a.attr not in MODULE_ATTRS or a.attr in NAMED:
                return a.value, "{}." + a.attr
        elif isinstance(a, ast.Subscript) and isinstance(a.ctx, ast.Load):
            return a.value, "{}[...]"
        elif isinstance(a, ast.Call) and isinstance(a.func, ast.Name) and a.func.id in ("len", "iter", "enumerate",
                                                                                           "list", "reversed"):
            if len(a.args) == 1:
                return a.args[0], a.func.id + "({})"
        elif isinstance(a, (ast.For, ast.comprehension)):
            return a.iter, "iteration over {}"
        elif isinstance(a, ast.Call) and a.args and (
                last_name(a) in COPIERS or call_name(a) in EXPORTERS):
            return a.args[0], call_name(a) + "({})"
        return None, None

    def module_reads(self, a):
        """module_read's, and the model saved whole (`torch.save(model, path)`, or as a value of the
        dict, list or tuple saved: a checkpoint's {"model": model}): pickled, the wrapper would need
        a process group to load again."""
        out = [self.module_read(a)]
        if isinstance(a, ast.Call) and call_name(a) in PICKLERS and a.args:
            saved = a.args[0]
            items = saved.values if isinstance(saved, ast.Dict) else saved.elts if isinstance(
                saved, (ast.List, ast.Tuple)) else [saved]
            out += [(v, f"{call_name(a)}(... {{}} ...)" if v is not saved else f"{call_name(a)}({{}})")
                    for v in items if dotted(v)]
        return [r for r in out if r[0] is not None]

    def run_before_wrap(self, line, scope):
        """The names of the script's functions that run before the wrap: called in its scope before
        line, or from such a function (by name)."""
        functions = {f.name: f for f in ast.walk(self.tree) if isinstance(f, ast.FunctionDef)}
        calls = lambda node: {c.func.id for c in ast.walk(node) if isinstance(c, ast.Call)  # noqa: E731
                              and isinstance(c.func, ast.Name) and c.func.id in functions}
        early = {c.func.id for c in ast.walk(scope or self.tree) if isinstance(c, ast.Call) and c.lineno <= line
                 and isinstance(c.func, ast.Name) and c.func.id in functions
                 and self.enclosing(c, (ast.FunctionDef,)) is scope}
        todo = list(early)
        while todo:
            for name in calls(functions[todo.pop()]) - early:
                early.add(name)
                todo.append(name)
        return early

    def ddp_module_access(self):
        """DDP: what the script reads from the model other than calling it or nn.Module's own
        methods (module_read) goes to the wrapped model's .module. Where the model was wrapped:
        after the wrap; in other functions: everywhere, as getattr(model, 'module', model) in
        those that also run before the wrap (run_before_wrap)."""
        runs_forward = self.methods_running_forward()
        before = {}
        for a, value, what in ((a, *r) for a in ast.walk(self.tree) for r in self.module_reads(a)):
            owner = self.e.source(value) if value is not None else None
            if owner not in self.ddp_models:
                continue
            line, scope = self.ddp_models[owner]
            within = self.enclosing(value, (ast.FunctionDef,))
            if within is scope and (value.lineno <= line or any(  # made again since
                    line < b.lineno < value.lineno for b in self.assignments(owner, scope))):
                continue
            if owner.startswith("self.") and self.enclosing(scope, (ast.ClassDef,)) not in self.lineage(
                    self.enclosing(value, (ast.ClassDef,))):
                continue  # another class's self (not the one that keeps it, nor a subclass)
            if isinstance(a, ast.Attribute):
                self.refuse_forward_outside(a, owner, runs_forward)
            if (line, id(scope)) not in before:
                before[line, id(scope)] = self.run_before_wrap(line, scope)
            both = within is not scope and within is not None and within.name in before[line, id(scope)]
            self.e.replace(value, f"getattr({owner}, 'module', {owner})" if both else f"{owner}.module")
            said = (f"line {value.lineno}: {what.format(owner)} read from the wrapped model's .module"
                    + (f" (in {within.name}(), which also runs before the wrap: from the model itself there)"
                       if both else ""))
            if said not in self.changes:
                self.changes.append(said)

    def grads_set_by_hand(self):
        """A gradient the script sets itself (`p.grad = g` from torch.autograd.grad, or written into
        the old tensor: `p.grad.copy_(g)`, `p.grad.data = g`) is this rank's alone under DDP, which
        averages what backward() computes, in its own hooks: listed and marked. Horovod style's
        optimizer averages it at step(), assigned anew or written in place. `p.grad = None` and
        values made from the gradient itself (`p.grad = p.grad / n`) are left alone."""
        if self.style != "ddp":
            return
        for n in self.gradient_writes():
            why = (f"DistributedDataParallel averages only what backward() computes, so this rank's own stays "
                   f"(average it with {self.DIST}.all_reduce, or use --style horovod)")
            mark = "a gradient set by hand is not averaged by DDP: average it, or use --style horovod"
            self.notes.append(f"line {n.lineno}: a gradient set by hand: {why}")
            self.e.insert_before(n.lineno, [f"{MARK} {mark}"], self.e.indent_of(self.stmt_of(n)))

    def gradient_writes(self):
        """The nodes where the script writes a parameter's gradient other than from the gradient
        itself: `p.grad = g`, `p.grad.data = g` and `p.grad.copy_(g)`."""
        out = []
        for n in ast.walk(self.tree):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in n.targets):
                value = n.value
            elif isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "data" and isinstance(
                    t.value, ast.Attribute) and t.value.attr == "grad" for t in n.targets):
                value = n.value
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "copy_" and n.args \
                    and any(isinstance(a, ast.Attribute) and a.attr == "grad" for a in ast.walk(n.func.value)):
                value = n.args[0]
            else:
                continue
            if isinstance(value, ast.Constant) or any(isinstance(a, ast.Attribute) and a.attr == "grad"
                                                      for a in ast.walk(value)):
                continue
            out.append(n)
        return out
