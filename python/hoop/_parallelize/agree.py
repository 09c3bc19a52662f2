"""hoop-parallelize: the ranks leave a training loop, and skip a pass of it, together. A `break`
(or `return`, or `sys.exit()`) out of a loop that trains, taken on what this rank alone computed
(`if avg_train_loss < target: break`, a NaN check on the rank's own loss, a `while` on it), would
end one rank's training while the others wait in their next collective: a hang, or a failed job.
The condition that decides it becomes rank 0's decision, broadcast (_hoop_agree), so every rank
takes the same way. A `continue` that skips the rest of a training pass (its backward or its step)
on such a condition (`if not torch.isfinite(loss): continue`, a loss spike, a batch the collate
function gave up on) would leave one rank a pass behind the others; there every rank skips the
pass where any rank skips it (_hoop_any), as one process seeing the whole batch would. A condition
that reads only loop counters and what no training loop changes (settings, constants) is the same
on every rank already and is left as it is. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK, dotted

EXITS = {"sys.exit", "exit", "quit", "os._exit"}  # a way out of training, as a break is
PURE = {"len", "int", "float", "bool", "abs", "min", "max", "round", "str", "isinstance"}  # same on every rank


class Agreement:
    def find_exits(self):
        """The tests (of ifs and whiles) that decide a way out of a loop that trains, each with how
        the ranks agree on it: "rank0" (leaving), "any" (a skip in its body), "all" (in its else)."""
        tests = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.While) and not isinstance(n.test, ast.Constant) and self.trains(n):
                tests[id(n.test)] = (n.test, n, "rank0")
            if not isinstance(n, (ast.Break, ast.Return, ast.Continue)) and not self.ends_process(n):
                continue
            loop = self.enclosing(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.ClassDef))
            if not isinstance(loop, (ast.For, ast.While)) or not self.trains(loop):
                continue
            if isinstance(n, ast.Continue) and not self.skips_training(n, loop):
                continue
            child, node = n, self.parent.get(n)
            while node is not None and node is not loop:
                if isinstance(node, ast.ExceptHandler):
                    self.notes.append(f"line {n.lineno}: a way out of (or past) a pass of the training loop at line "
                                      f"{loop.lineno} taken on an exception: left as written; where one rank alone "
                                      "meets it, the ranks fall out of step (make every rank take it, or none)")
                    self.e.insert_before(n.lineno, [f"{MARK} taken on one rank's exception, the ranks fall out of "
                                                    "step: make every rank take it, or none"], self.e.indent_of(n))
                    break
                if isinstance(node, ast.If):
                    how = "rank0" if not isinstance(n, ast.Continue) else \
                        "all" if any(child is s for s in node.orelse) else "any"
                    if tests.get(id(node.test), (0, 0, ""))[2] != "rank0":
                        tests[id(node.test)] = (node.test, loop, how)
                child, node = node, self.parent.get(node)
        self.exit_tests = [(t, loop, how) for t, loop, how in tests.values() if self.rank_local(t, loop)]

    def ends_process(self, n):
        """Whether n is a statement that ends the process: sys.exit(...), exit(), quit(), os._exit()."""
        return isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and dotted(n.value.func) in EXITS

    def skips_training(self, cont, loop):
        """Whether the pass a `continue` ends would still run backward or a step after it: the
        statements of the loop's body after the one holding it (that one too, unless it is the
        `if` around the continue itself)."""
        top = cont
        while self.parent.get(top) is not loop:
            top = self.parent.get(top)
        if not any(top is s for s in loop.body):
            return False  # in the loop's else
        after = loop.body[[id(s) for s in loop.body].index(id(top)) + 1:]
        if not (isinstance(top, ast.If) and any(cont is s for s in top.body + top.orelse)):
            after = [top] + after
        rest = ast.For(target=ast.Name(id="_", ctx=ast.Store()), iter=ast.Constant(value=()), body=after, orelse=[])
        self.parent[rest] = self.parent.get(loop)
        try:
            return bool(after) and (self.trains(rest) or any(
                isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "step"
                for s in after for c in ast.walk(s)))
        finally:
            del self.parent[rest]

    def rank_local(self, test, loop):
        """Whether test may read what differs between ranks: a name the training loops around it
        change (a loss, a meter, a batch) other than their counters (`for epoch in range(...)`,
        the index of `enumerate(...)`, a `step += 1`), or a call but plain arithmetic ones (time.time(): each
        rank's own clock)."""
        outer = loop
        while isinstance(up := self.enclosing(outer, (ast.For, ast.While, ast.FunctionDef, ast.Lambda,
                                                      ast.ClassDef)), (ast.For, ast.While)):
            outer = up
        counters = set()
        for f in (x for x in ast.walk(outer) if isinstance(x, ast.For) and isinstance(x.iter, ast.Call)):
            kind = getattr(f.iter.func, "id", "")
            if kind in ("range", "trange") and isinstance(f.target, ast.Name):
                counters.add(f.target.id)
            elif kind == "enumerate" and isinstance(f.target, ast.Tuple) and isinstance(f.target.elts[0], ast.Name):
                counters.add(f.target.elts[0].id)
        stores = [n for n in ast.walk(outer) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        changed = {n.id for n in stores}
        # `step += 1` and nothing else: a count of passes, the same on every rank.
        counters |= {name for name in changed if all(
            isinstance(p := self.parent.get(n), ast.AugAssign) and p.target is n and isinstance(p.value, ast.Constant)
            for n in stores if n.id == name)}
        read = {n.id for n in ast.walk(test) if isinstance(n, ast.Name)}
        calls = {getattr(c.func, "id", None) for c in ast.walk(test) if isinstance(c, ast.Call)}
        return bool(read & (changed - counters)) or bool(calls - PURE)

    def agree_helper(self):
        hows = {how for _, _, how in self.exit_tests}
        lines = []
        if "rank0" in hows:
            if self.style == "horovod":
                body = ["    return bool(hvd.broadcast_object(bool(decision), root_rank=0))"]
            else:
                body = ["    box = [bool(decision)]", "    dist.broadcast_object_list(box, src=0)", "    return box[0]"]
            lines += ["", "", f"def _hoop_agree(decision):  {MARK} rank 0's decision on every rank (a way out of "
                      "training: all ranks take it together)"] + body
        if hows & {"any", "all"}:
            if self.style == "horovod":
                body = ["    return any(hvd.allgather_object(bool(decision)))"]
            else:
                body = ["    box = [False] * dist.get_world_size()", "    dist.all_gather_object(box, bool(decision))",
                        "    return any(box)"]
            lines += ["", "", f"def _hoop_any(decision):  {MARK} whether any rank decided so (a training pass "
                      "skipped: all ranks skip it together)"] + body
        return lines

    def agree_on_exits(self):
        for test, loop, how in self.exit_tests:
            src = self.e.source(test)
            if how == "rank0":
                self.e.replace(test, f"_hoop_agree({src})")
                self.changes.append(f"line {test.lineno}: the way out of the training loop at line {loop.lineno} is "
                                    "rank 0's decision on every rank (it reads what each rank computed alone)")
                continue
            self.e.replace(test, f"_hoop_any({src})" if how == "any" else f"not _hoop_any(not ({src}))")
            self.changes.append(f"line {test.lineno}: a pass of the training loop at line {loop.lineno} is skipped on "
                                "every rank where any rank skips it (it reads what each rank computed alone)")
