"""hoop-parallelize: the ranks leave a training loop together. A `break` (or `return`) out of a
loop that trains, taken on what this rank alone computed (`if avg_train_loss < target: break`, a
NaN check on the rank's own loss, a `while` on it), would end one rank's training while the others
wait in their next collective: a hang, or a failed job. The condition that decides it becomes
rank 0's decision, broadcast (_hoop_agree), so every rank takes the same way; a condition that
reads only loop counters and what no training loop changes (settings, constants) is the same on
every rank already and is left as it is. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK

PURE = {"len", "int", "float", "bool", "abs", "min", "max", "round", "str", "isinstance"}  # same on every rank


class Agreement:
    def find_exits(self):
        """The tests (of ifs and whiles) that decide a way out of a loop that trains."""
        tests = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.While) and not isinstance(n.test, ast.Constant) and self.trains(n):
                tests[id(n.test)] = (n.test, n)
            if not isinstance(n, (ast.Break, ast.Return)):
                continue
            loop = self.enclosing(n, (ast.For, ast.While, ast.FunctionDef, ast.Lambda, ast.ClassDef))
            if not isinstance(loop, (ast.For, ast.While)) or not self.trains(loop):
                continue
            node = self.parent.get(n)
            while node is not None and node is not loop:
                if isinstance(node, ast.If):
                    tests[id(node.test)] = (node.test, loop)
                node = self.parent.get(node)
        self.exit_tests = [(t, loop) for t, loop in tests.values() if self.rank_local(t, loop)]

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
        if not self.exit_tests:
            return []
        if self.style == "horovod":
            body = ["    return bool(hvd.broadcast_object(bool(decision), root_rank=0))"]
        else:
            body = ["    box = [bool(decision)]", "    dist.broadcast_object_list(box, src=0)", "    return box[0]"]
        return ["", "", f"def _hoop_agree(decision):  {MARK} rank 0's decision on every rank (a way out of "
                "training: all ranks take it together)"] + body

    def agree_on_exits(self):
        for test, loop in self.exit_tests:
            self.e.replace(test, f"_hoop_agree({self.e.source(test)})")
            self.changes.append(f"line {test.lineno}: the way out of the training loop at line {loop.lineno} is "
                                "rank 0's decision on every rank (it reads what each rank computed alone)")
