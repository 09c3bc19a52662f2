"""hoop-parallelize: ratios over the whole data where the batches are taken by hand. Once a loop
over range(0, N, B), range(K) or a tensor's batches (X.split(B)) takes only every size()-th
batch, what it accumulates (`total += loss.item()`, `correct += ...`) counts this rank's share;
divided after the loop by the whole set's size (N, len(X)) or batch count (N // B, the ceiling
of N / B, K, or a name holding one of them), it would come out divided by the number of ranks.
Such a ratio is taken over this rank's share (its samples, its batches: every rank takes as many
batches) and averaged over the ranks, as ratios over a split DataLoader's dataset are
(rank0.py). Which denominators count the data is found by value, not by spelling: the
denominator is evaluated with the loop's N and B (or K) set to a few sizes and compared with
N, N // B and the ceiling. A mixin of Converter (hoop/parallelize.py)."""
import ast
import math

from hoop._parallelize.edits import call_name, dotted, last_name

_SIZES = (1000, 1001, 64, 50, 777)  # N for the probe; B (or K) runs through _STEPS
_STEPS = (32, 7, 64, 3, 10)
_SAME_ROWS = ("to", "cuda", "cpu", "float", "double", "half", "long", "contiguous", "pin_memory")  # X.to(device)


class ManualShares:
    def note_manual_split(self, loop, whole=None, step=None, count=None, tensor=None):
        """Records a loop split by hand: over `whole` samples in batches of `step` (expressions),
        over `count` batches, or over the batches X.split(step) of the tensor X (len(X) samples;
        the last batch, short, falls to the last rank where the batches divide evenly)."""
        while tensor is not None and (isinstance(tensor, ast.Subscript) and not isinstance(tensor.slice, ast.Slice) or (
                isinstance(tensor, ast.Call) and isinstance(tensor.func, ast.Attribute) and tensor.func.attr in _SAME_ROWS)):
            tensor = tensor.value if isinstance(tensor, ast.Subscript) else tensor.func.value  # X[perm]: len(X) rows
        if tensor is not None and last_name(tensor) == "randperm" and tensor.args:
            whole = tensor.args[0]  # torch.randperm(n).split(B): n indices
        elif tensor is not None:
            whole = ast.Call(func=ast.Name(id="len", ctx=ast.Load()), args=[tensor], keywords=[])
        self.manual_splits = getattr(self, "manual_splits", [])
        self.manual_splits.append((loop, whole, step, count, tensor))

    def note_tensor_split(self, loop, first):
        """Records a loop over X.split(B) (or torch.split(X, B); `first` the inputs' where zipped
        with their targets'): B one size along the first dimension, not a list of them."""
        own = dotted(first.func.value) == "torch"  # torch.split(X, B)
        if first.func.attr == "split" and len(first.args) == (2 if own else 1) and not first.keywords:
            tensor, step = (first.args[0], first.args[1]) if own else (first.func.value, first.args[0])
            if not isinstance(step, (ast.List, ast.Tuple)):
                self.note_manual_split(loop, step=step, tensor=tensor)

    def single_value(self, name):
        """What `name` holds where the script assigns it once (`n_batches = len(X) // bs`) and
        binds it nowhere else; None elsewhere."""
        stores = [n for n in ast.walk(self.tree) if isinstance(n, ast.Name) and n.id == name
                  and isinstance(n.ctx, ast.Store)]
        if len(stores) != 1:
            return None
        a = self.parent.get(stores[0])
        return a.value if isinstance(a, ast.Assign) and a.targets == [stores[0]] else None

    def canon(self, expr, depth=4):
        """expr's structure, with names assigned once replaced by what they hold."""
        if isinstance(expr, ast.Name) and depth:
            value = self.single_value(expr.id)
            if value is not None:
                return self.canon(value, depth - 1)
        return ast.dump(expr, annotate_fields=False)

    def value_of(self, expr, known, depth=4):
        """expr's number where the sub-expressions in `known` (by canon) take its values, and
        the rest are numbers, + - * / //, unary minus, ceil/floor/int and names assigned once;
        None where it reads anything else."""
        key = self.canon(expr)
        if key in known:
            return known[key]
        if isinstance(expr, ast.Constant) and type(expr.value) in (int, float):
            return expr.value
        if isinstance(expr, ast.Name) and depth:
            value = self.single_value(expr.id)
            return None if value is None else self.value_of(value, known, depth - 1)
        if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, (ast.USub, ast.UAdd)):
            v = self.value_of(expr.operand, known, depth)
            return None if v is None else (-v if isinstance(expr.op, ast.USub) else v)
        if isinstance(expr, ast.Call) and len(expr.args) == 1 and not expr.keywords and (
                call_name(expr) or "").split(".")[-1] in ("ceil", "floor", "int"):
            v = self.value_of(expr.args[0], known, depth)
            return None if v is None else {"ceil": math.ceil, "floor": math.floor, "int": int}[
                call_name(expr).split(".")[-1]](v)
        if isinstance(expr, ast.BinOp):
            a, b = self.value_of(expr.left, known, depth), self.value_of(expr.right, known, depth)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Div: lambda: a / b if b else None, ast.FloorDiv: lambda: a // b if b else None}
            return None if a is None or b is None or type(expr.op) not in ops else ops[type(expr.op)]()
        return None

    def whole_measure(self, d, whole, step, count):
        """'samples' or 'batches' where the denominator d is the whole set's size or batch count
        (N // B or its ceiling) for the loop's N and B, or K, at every size probed; else None.
        An N, B or K written as a number is probed at its own value only."""
        def probes(expr, default):
            fixed = isinstance(expr, ast.Constant) and isinstance(expr.value, int) and expr.value > 0
            return (expr.value,) if fixed else default

        kinds = {"samples", "batches"}
        if count is not None:
            points = [({self.canon(count): k}, {"batches": (k,)}) for k in probes(count, _STEPS)]
        else:
            points = [({self.canon(whole): n, self.canon(step): b}, {"samples": (n,), "batches": (n // b, -(-n // b))})
                      for n in probes(whole, _SIZES) for b in probes(step, _STEPS)]
        for known, measures in points:
            v = self.value_of(d, known)
            kinds &= {k for k, values in measures.items() if v is not None and v in values}
        return kinds.pop() if len(kinds) == 1 else None

    def share_text(self, kind, whole, step, count, tensor):
        """This rank's samples or batches, as text, for the split loop's N and B (or K)."""
        src = self.e.source
        if count is not None:
            return f"(({src(count)}) // {self.SIZE})"
        b = src(step)
        if tensor is None:  # range(0, N, B): every rank takes N // (B * size()) whole batches
            batches = f"({src(whole)}) // (({b}) * {self.SIZE})"
            return f"({batches})" if kind == "batches" else f"({batches} * ({b}))"
        n = f"len({src(tensor)})" if isinstance(whole, ast.Call) and whole.args == [tensor] else f"({src(whole)})"
        batches = f"(-(-{n} // ({b})) // {self.SIZE})"  # of the list of X.split(B)'s batches
        if kind == "batches":
            return batches
        short = f"(-{n} % ({b}))"  # what the last batch lacks, where it is short
        return f"({batches} * ({b}) - ({self.RANK} == {self.SIZE} - 1 and -(-{n} // ({b})) % {self.SIZE} == 0) * {short})"

    def manual_ratios(self):
        """[(node, share, denominator's text)] of the ratios after a split loop, of what the loop
        accumulates (and nothing has set again since), over the whole set's size or batch count;
        a ratio after several such loops is of the last of them that accumulates what it divides."""
        found = {}
        for split in sorted(getattr(self, "manual_splits", []), key=lambda s: s[0].end_lineno):
            loop = split[0]
            added = {n.target.id for n in ast.walk(loop) if isinstance(n, ast.AugAssign)
                     and isinstance(n.op, (ast.Add, ast.Sub)) and isinstance(n.target, ast.Name)}
            scope = self.enclosing(loop, (ast.FunctionDef,)) or self.tree
            for n in ast.walk(scope):
                if getattr(n, "lineno", 0) <= loop.end_lineno:
                    continue
                if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div):
                    num, d = n.left, n.right
                elif isinstance(n, ast.AugAssign) and isinstance(n.op, ast.Div) and isinstance(n.target, ast.Name):
                    num, d = n.target, n.value
                else:
                    continue
                read = {x.id for x in ast.walk(num) if isinstance(x, ast.Name)} & added
                stored = {x.id for x in ast.walk(scope) if isinstance(x, ast.Name) and isinstance(x.ctx, ast.Store)
                          and loop.end_lineno < x.lineno < n.lineno}
                if read - stored:  # what the loop counted, not counted anew since (an evaluation after it)
                    found[n] = (split, d)
        out = []
        for n, ((_, whole, step, count, tensor), d) in found.items():
            kind = self.whole_measure(d, whole, step, count)
            if kind is not None:
                out.append((n, self.share_text(kind, whole, step, count, tensor), self.e.source(d)))
        return out
