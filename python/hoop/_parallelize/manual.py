"""hoop-parallelize: parameters updated by hand. word_language_model, and the tutorials before
they reach torch.optim, update each parameter themselves after backward():
`for p in model.parameters(): p.data.add_(p.grad, alpha=-lr)` (or `p -= lr * p.grad` under
no_grad()). There is no optimizer to wrap, but the loop names the model. DDP style: the model is
wrapped in DistributedDataParallel, which averages the gradients during backward(), just before
the first statement after the model is made that trains (so a `.to(device)` between the two
runs first). Horovod style: rank 0's parameters are broadcast there, and the gradients are
averaged over the ranks right after the backward pass before the update (before any clipping,
as one process clips the whole batch's gradient): `_hoop_average_gradients(model)`, one grouped
allreduce, a parameter no pass reached taking part as zeros. The rate beside p.grad in the
update is scaled by the number of ranks, as an optimizer's is; where there is none to find
(momentum kept by hand), that is listed. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import CLIPPERS, MARK, Refused, last_name


class ManualUpdates:
    def find_manual_updates(self):
        """[(loop, model's source)] of `for p in MODEL.parameters():` loops that write p from
        p.grad: an in-place method of p or p.data (add_, sub_, copy_, ...), `p -= ...`,
        `p.data -= ...` or `p.data = ...`."""
        out = []
        for loop in ast.walk(self.tree):
            if not (isinstance(loop, ast.For) and isinstance(loop.target, ast.Name) and isinstance(loop.iter, ast.Call)
                    and isinstance(loop.iter.func, ast.Attribute) and loop.iter.func.attr == "parameters"):
                continue
            p = loop.target.id
            nodes = [n for s in loop.body for n in ast.walk(s)]
            reads = any(isinstance(n, ast.Attribute) and n.attr == "grad" and _is(n.value, p) for n in nodes)
            if reads and any(_writes(n, p) for n in nodes):
                out.append((loop, self.e.source(loop.iter.func.value)))
        return out

    def manual_helper(self):
        """The converted script's _hoop_average_gradients(model) (Horovod style)."""
        if self.style != "horovod" or not self.manual_updates:
            return []
        return ["", "", f"def _hoop_average_gradients(model):  {MARK} before the update by hand: the gradients "
                "averaged over the ranks",
                "    grads = []",
                "    for p in model.parameters():",
                "        if p.requires_grad:",
                "            if p.grad is None:  # not reached on this rank: it takes part as zeros",
                "                p.grad = torch.zeros_like(p)",
                "            grads.append(p.grad)",
                "    hvd.grouped_allreduce_(grads, op=hvd.Average, name='gradients_updated_by_hand')"]

    def convert_manual_updates(self):
        done = set()
        for loop, model in self.manual_updates:
            made, scope = self.manual_model(loop, model)
            if (made, id(scope)) not in done:
                done.add((made, id(scope)))
                anchor = self.manual_anchor(loop, model, made, scope)
                if self.style == "ddp":
                    self.wrap_model(anchor, made)
                else:
                    self.e.insert_before(anchor.lineno, [f"hvd.broadcast_parameters({made}.state_dict(), "
                                                         f"root_rank=0)  {MARK} rank 0's start"],
                                         self.e.indent_of(anchor))
                    self.changes.append(f"line {anchor.lineno}: the parameters of '{made}' broadcast from rank 0")
            self.scale_manual_rate(loop, model)
            if self.style == "horovod":
                self.average_before_update(loop, model)

    def scale_manual_rate(self, loop, model):
        """The rate of each write of p from p.grad scaled by the number of ranks, as an optimizer's
        is: `alpha=` of add_/sub_, the other operand of `rate * p.grad`, or the other argument of
        the old `add_(-lr, p.grad)`. Where none is found (momentum kept by hand, the update made
        from another tensor), listed for the person."""
        p, rates = loop.target.id, []
        for n in [n for s in loop.body for n in ast.walk(s) if _writes(n, p)]:
            rates += _rates(n, p)
        for rate in rates:
            self.e.replace(rate, f"({self.e.source(rate)}) * {self.SIZE}")
        if rates:
            self.changes.append(f"line {loop.lineno}: the rate of the update by hand of '{model}' scaled by the number "
                                "of ranks")
        else:
            self.notes.append(f"line {loop.lineno}: the parameters of '{model}' are updated by hand, with no rate "
                              "found beside p.grad: it is not scaled by the number of ranks (each step now averages "
                              "the gradients of every rank's batch; scale it yourself to keep Horovod's rule)")

    def manual_model(self, loop, model):
        """(the name the model is made under, the function that makes it or None for the module):
        the loop's own, or where the loop's function takes it as a parameter, the name its caller
        passes (`train(net)`)."""
        fn = self.enclosing(loop, (ast.FunctionDef,))
        params = [a.arg for a in fn.args.args] if fn is not None else []
        if model not in params:
            return model, fn if fn is not None and self.assignments(model, fn) else None
        at = params.index(model)
        for c in ast.walk(self.tree):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == fn.name:
                arg = c.args[at] if at < len(c.args) else next((k.value for k in c.keywords if k.arg == model), None)
                if isinstance(arg, ast.Name):
                    caller = self.enclosing(c, (ast.FunctionDef,))
                    return arg.id, caller if caller is not None and self.assignments(arg.id, caller) else None
        return model, fn

    def manual_anchor(self, loop, model, made, scope):
        """The first statement after the model is first made, in the same block, that trains."""
        assigned = sorted(self.assignments(made, scope), key=lambda a: a.lineno)
        if assigned:
            block = self.block_of(assigned[0])
            for stmt in block[block.index(assigned[0]) + 1:]:
                if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                        self.trains(ast.If(test=ast.Constant(True), body=[stmt], orelse=[])):
                    return stmt
        raise Refused(f"line {loop.lineno}: the parameters of '{model}' are updated by hand, and no statement after "
                      "the one that makes the model, beside it, was found to train: average the gradients yourself "
                      "before the update (hvd.allreduce_ on each p.grad, or DistributedDataParallel on the model)")

    def average_before_update(self, loop, model):
        """_hoop_average_gradients(model) after the last backward pass before the update loop in
        the loop or function around it; without one there, before the update and the clipping
        just before it."""
        around = self.enclosing(loop, (ast.For, ast.While, ast.FunctionDef)) or self.tree
        passes = [n for n in ast.walk(around) if self.is_backward(n) and n.lineno < loop.lineno]
        line = f"_hoop_average_gradients({model})  {MARK} the gradients averaged over the ranks"
        if passes:
            stmt = self.stmt_of(max(passes, key=lambda n: n.lineno))
            if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                raise Refused(f"line {stmt.lineno}: the backward before the update by hand shares its line with "
                              "other code: give it a line of its own")
            self.e.insert_after(stmt, [line])
            where = stmt.end_lineno
        else:
            block = self.block_of(loop)
            first = block.index(loop)
            while first > 0 and isinstance(block[first - 1], ast.Expr) and isinstance(block[first - 1].value, ast.Call) \
                    and last_name(block[first - 1].value) in CLIPPERS:
                first -= 1
            self.e.insert_before(block[first].lineno, [line], self.e.indent_of(block[first]))
            where = block[first].lineno - 1
        self.changes.append(f"line {where}: the gradients of '{model}' averaged over the ranks before its update by "
                            "hand")


def _is(node, name):
    """node is `name` or `name.data`."""
    return isinstance(node, ast.Name) and node.id == name or (
        isinstance(node, ast.Attribute) and node.attr == "data" and isinstance(node.value, ast.Name)
        and node.value.id == name)


def _writes(n, p):
    """n writes the parameter p: p.add_(...), p.data.sub_(...), p -= ..., p.data -= ..., p.data = ..."""
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
        return n.func.attr.endswith("_") and not n.func.attr.startswith("_") and _is(n.func.value, p)
    if isinstance(n, ast.AugAssign):
        return _is(n.target, p)
    if isinstance(n, ast.Assign):
        return any(isinstance(t, ast.Attribute) and _is(t, p) for t in n.targets)
    return False


def _rates(n, p):
    """The rate expressions of a write n of p: `alpha=` of a call given p.grad, the other operand
    of `rate * p.grad` (either side) anywhere in it, or the other argument of `add_(-lr, p.grad)`."""
    grad = [a for a in ast.walk(n) if isinstance(a, ast.Attribute) and a.attr == "grad" and _is(a.value, p)]
    out = [b.left if b.right in grad else b.right for b in ast.walk(n) if isinstance(b, ast.BinOp)
           and isinstance(b.op, ast.Mult) and (b.left in grad or b.right in grad)]
    if out or not isinstance(n, ast.Call) or not any(a in grad for a in n.args):
        return out
    alpha = [k.value for k in n.keywords if k.arg == "alpha"]
    if alpha:
        return alpha
    others = [a for a in n.args if a not in grad]
    return others if len(n.args) == 2 and len(others) == 1 else []
