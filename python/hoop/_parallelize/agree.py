"""hoop-parallelize: the ranks leave a training loop, and skip a pass of it, together. A `break`
(or `return`, or `sys.exit()`) out of a loop that trains, taken on what this rank alone computed
(`if avg_train_loss < target: break`, a NaN check on the rank's own loss, a `while` on it), would
end one rank's training while the others wait in their next collective: a hang, or a failed job.
The condition that decides it becomes rank 0's decision, broadcast (_hoop_agree), so every rank
takes the same way. A `continue` that skips the rest of a training pass (its backward or its step)
on such a condition (`if not torch.isfinite(loss): continue`, a loss spike, a batch the collate
function gave up on) would leave one rank a pass behind the others; there every rank skips the
pass where any rank skips it (_hoop_any), as one process seeing the whole batch would. So too a
way out taken before the pass trains (`if torch.isnan(loss): break` ahead of the backward): every
rank leaves where any rank's loss is NaN, before a NaN reaches the averaged gradients. A condition
that reads only loop counters and what no training loop changes (settings, constants) is the same
on every rank already and is left as it is. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK, dotted

EXITS = {"sys.exit", "exit", "quit", "os._exit"}  # a way out of training, as a break is
PURE = {"len", "int", "float", "bool", "abs", "min", "max", "round", "str", "isinstance"}  # same on every rank


class Agreement:
    def find_exits(self):
        """The tests (of ifs and whiles) that decide a way out of a loop that trains, each with how
        the ranks agree on it: "rank0" (leaving once the pass has trained), "any" (a skip, or a
        way out before the pass trains, in its body), "all" (the same in its else)."""
        tests = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.While) and not isinstance(n.test, ast.Constant) and self.trains(n):
                tests[id(n.test)] = (n.test, n, "rank0", "exit")
            if not isinstance(n, (ast.Break, ast.Return, ast.Continue)) and not self.ends_process(n):
                continue
            loop = self.enclosing(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.ClassDef))
            if not isinstance(loop, (ast.For, ast.While)) or not self.trains(loop):
                continue
            skips = self.skips_training(n, loop)  # the rest of this pass would still train
            if isinstance(n, ast.Continue) and not skips:
                continue
            child, node = n, self.parent.get(n)
            while node is not None and node is not loop:
                if isinstance(node, ast.ExceptHandler) and dotted(node.type) == "StopIteration":
                    break  # a loader run out: at the same pass on every rank (their shares are equal)
                if isinstance(node, ast.ExceptHandler):
                    self.notes.append(f"line {n.lineno}: a way out of (or past) a pass of the training loop at line "
                                      f"{loop.lineno} taken on an exception: left as written; where one rank alone "
                                      "meets it, the ranks fall out of step (make every rank take it, or none)")
                    self.e.insert_before(n.lineno, [f"{MARK} taken on one rank's exception, the ranks fall out of "
                                                    "step: make every rank take it, or none"], self.e.indent_of(n))
                    break
                if isinstance(node, ast.If):
                    how = "rank0" if not skips else "all" if any(child is s for s in node.orelse) else "any"
                    kind = "skip" if isinstance(n, ast.Continue) else "exit"
                    if tests.get(id(node.test), (0, 0, ""))[2] != "rank0":
                        tests[id(node.test)] = (node.test, loop, how, kind)
                child, node = node, self.parent.get(node)
        self.find_branches(tests)
        self.exit_tests = [t for t in tests.values() if self.rank_local(t[0], t[1])]

    def ends_process(self, n):
        """Whether n is a statement that ends the process: sys.exit(...), exit(), quit(), os._exit()."""
        return isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and dotted(n.value.func) in EXITS

    def skips_training(self, stop, loop):
        """Whether the pass that `stop` (a continue, break, return or exit) ends would still run
        backward or a step after it: the statements that follow it at each level up to the loop's
        body (the rest of an if's way, a with's body, a try's body, else and finally)."""
        after, child, node = [], stop, self.parent.get(stop)
        while node is not None and node is not loop:
            after += self.following(node, child)
            child, node = node, self.parent.get(node)
        if node is None or not any(child is s for s in loop.body):
            return False  # in the loop's else
        after += loop.body[[id(s) for s in loop.body].index(id(child)) + 1:]
        return self.communicates(after, loop) == "train"

    @staticmethod
    def following(node, child):
        """The statements of node that run after its child statement (or except handler)."""
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list) or not any(child is s for s in block):
                continue
            rest = [] if field == "handlers" else block[[id(s) for s in block].index(id(child)) + 1:]
            if isinstance(node, ast.Try) and field == "body":
                rest += node.orelse
            if isinstance(node, ast.Try) and field != "finalbody":
                rest += node.finalbody
            return rest
        return []

    def communicates(self, stmts, where):
        """What the statements (at `where`), or the script's functions they call, do that every
        rank must do alike in the converted script: "train" (a backward pass, an optimizer's
        step), "other" (a metric averaged after a no_grad block, a torch.load that waits for rank
        0's writes), or None."""
        if not stmts:
            return None
        rest = ast.For(target=ast.Name(id="_", ctx=ast.Store()), iter=ast.Constant(value=()), body=stmts, orelse=[])
        self.parent[rest] = self.parent.get(where)
        try:
            if self.trains(rest) or any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr
                                        == "step" and "sched" not in self.e.source(c.func.value).lower()
                                        for s in stmts for c in ast.walk(s)):
                return "train"
            reached = [n for s in stmts + [f for f, _ in self.reached(rest)] for n in ast.walk(s)]
        finally:
            del self.parent[rest]
        blocks = {id(w) for w, _ in self.metric_blocks} | {id(c) for c in self.loads_after_saves}
        return "other" if any(id(n) in blocks for n in reached) else None

    def find_branches(self, tests):
        """The ifs in a loop that trains whose ways differ in what every rank must do alike (a
        backward pass or a step in one, an averaged metric or a load after rank 0's save):
        taken on what a rank computed alone, they would leave the ranks out of step. Training
        runs only where every rank takes its way ("all" where it is in the body, "any" in the
        else), as a skipped pass is; for the rest, rank 0 decides ("rank0")."""
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.If) or id(node.test) in tests:
                continue
            loop = self.enclosing(node, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.ClassDef))
            if not isinstance(loop, (ast.For, ast.While)) or not self.trains(loop):
                continue
            body, other = self.communicates(node.body, node), self.communicates(node.orelse, node)
            if body != other:
                how = "all" if body == "train" else "any" if other == "train" else "rank0"
                tests[id(node.test)] = (node.test, loop, how, "branch")

    def rank_local(self, test, loop):
        """Whether test may read what differs between ranks: a name the training loops around it
        change (a loss, a meter, a batch, an object they call) other than their counters (`for
        epoch in range(...)`, the index of `enumerate(...)`, a `step += 1`, `for phase in
        ["train", "val"]`, and names made of them alone), or a call but plain arithmetic ones
        (time.time(): each rank's own clock)."""
        outer = loop
        while isinstance(up := self.enclosing(outer, (ast.For, ast.While, ast.FunctionDef, ast.Lambda,
                                                      ast.ClassDef)), (ast.For, ast.While)):
            outer = up
        counters = set()
        for f in (x for x in ast.walk(outer) if isinstance(x, ast.For) and isinstance(x.target, ast.Name)
                  and self.constant_items(x.iter)):
            counters.add(f.target.id)  # for phase in ["train", "val"] (or in phases, so made): the same on every rank
        for f in (x for x in ast.walk(outer) if isinstance(x, ast.For) and isinstance(x.iter, ast.Call)):
            kind = getattr(f.iter.func, "id", "")
            if kind in ("range", "trange") and isinstance(f.target, ast.Name):
                counters.add(f.target.id)
            elif kind == "enumerate" and isinstance(f.target, ast.Tuple) and isinstance(f.target.elts[0], ast.Name):
                counters.add(f.target.elts[0].id)
        stores = [n for n in ast.walk(outer) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        objects = self.objects_called(outer)
        plain = {n.id for n in stores} - objects
        changed = plain | objects
        # `step += 1` and nothing else: a count of passes, the same on every rank.
        counters |= {name for name in plain if all(
            isinstance(p := self.parent.get(n), ast.AugAssign) and p.target is n and isinstance(p.value, ast.Constant)
            for n in stores if n.id == name)}
        # `step = epoch * len(loader) + i`: made of counters and what no loop changes.
        while more := {name for name in plain - counters if all(
                isinstance(p := self.parent.get(n), ast.Assign) and p.targets == [n] and
                not self.differs(p.value, changed - counters) for n in stores if n.id == name)}:
            counters |= more
        return self.differs(test, changed - counters)

    def constant_items(self, expr):
        """Whether expr is a list or tuple of constants, or a name the script binds only to one."""
        literal = lambda e: isinstance(e, (ast.List, ast.Tuple)) and all(  # noqa: E731
            isinstance(x, ast.Constant) for x in e.elts)
        if literal(expr):
            return True
        if not isinstance(expr, ast.Name):
            return False
        binds = [n for n in ast.walk(self.tree) if isinstance(n, ast.Name) and n.id == expr.id
                 and not isinstance(n.ctx, ast.Load)]
        return bool(binds) and all(isinstance(a := self.parent.get(n), ast.Assign) and a.targets == [n]
                                   and literal(a.value) for n in binds)

    def objects_called(self, outer):
        """The names of objects whose state the loop may change by calling them: through a method
        (`stopper.update(loss)`) or, an object of the script's own classes, itself (the common
        `early_stopping(val_loss, model)` whose `early_stop` the loop then reads)."""
        found = set()
        for c in (c for c in ast.walk(outer) if isinstance(c, ast.Call)):
            if isinstance(c.func, ast.Attribute) and isinstance(c.func.value, ast.Name):
                found.add(c.func.value.id)
            elif isinstance(c.func, ast.Name) and self.instance_class(c.func.id, outer) is not None:
                found.add(c.func.id)
        return found

    def differs(self, expr, changed):
        """Whether expr may differ between ranks: it reads a name in `changed`, or calls anything
        but PURE's functions."""
        read = {n.id for n in ast.walk(expr) if isinstance(n, ast.Name)}
        calls = {getattr(c.func, "id", None) for c in ast.walk(expr) if isinstance(c, ast.Call)}
        return bool(read & changed) or bool(calls - PURE)

    def agree_helper(self):
        hows = {t[2] for t in self.exit_tests}
        lines = []
        if "rank0" in hows:
            if self.style == "horovod":
                body = ["    return bool(hvd.broadcast_object(bool(decision), root_rank=0))"]
            else:
                body = ["    box = [bool(decision)]", f"    {self.DIST}.broadcast_object_list(box, src=0)", "    return box[0]"]
            lines += ["", "", f"def _hoop_agree(decision):  {MARK} rank 0's decision on every rank (a way out of "
                      "training: all ranks take it together)"] + body
        if hows & {"any", "all"}:
            # One small allreduce (a pass may ask it every step), not an object collective.
            if self.style == "horovod":
                body = ["    flag = torch.tensor([1 if decision else 0])",
                        "    return bool(hvd.allreduce(flag, op=hvd.Max, name='hoop_any').item())"]
            else:
                body = ["    flag = torch.tensor([1 if decision else 0])",
                        f"    {self.DIST}.all_reduce(flag, op={self.DIST}.ReduceOp.MAX)", "    return bool(flag.item())"]
            lines += ["", "", f"def _hoop_any(decision):  {MARK} whether any rank decided so (a training pass "
                      "skipped or left: all ranks take that way together)"] + body
        return lines

    def agree_on_exits(self):
        for test, loop, how, kind in self.exit_tests:
            src = self.e.source(test)
            self.e.replace(test, f"_hoop_agree({src})" if how == "rank0" else f"_hoop_any({src})" if how == "any"
                           else f"not _hoop_any(not ({src}))")
            if kind == "branch":
                self.changes.append(f"line {test.lineno}: the branch on what each rank computed alone, whose ways "
                                    "differ in what every rank must do alike, is " + (
                                        "rank 0's decision on every rank" if how == "rank0" else
                                        "taken together: its training runs only where every rank's test lets it"))
            elif how == "rank0":
                self.changes.append(f"line {test.lineno}: the way out of the training loop at line {loop.lineno} is "
                                    "rank 0's decision on every rank (it reads what each rank computed alone)")
            elif kind == "exit":
                self.changes.append(f"line {test.lineno}: the way out of the training loop at line {loop.lineno}, "
                                    "before its pass trains, is taken on every rank where any rank takes it (it "
                                    "reads what each rank computed alone)")
            else:
                self.changes.append(f"line {test.lineno}: a pass of the training loop at line {loop.lineno} is "
                                    "skipped on every rank where any rank skips it (it reads what each rank computed "
                                    "alone)")
