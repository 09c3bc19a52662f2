"""hoop-parallelize: the order a loop split by hand follows is rank 0's on every rank. A loop that
takes every size()-th batch itself (range(0, N, B), a tensor's pieces, batch i of K) splits one
order between the ranks only where every rank draws the same order. Seeded alike at start-up
(seeds.py) they do at first, but what is drawn after that takes the generators apart (dropout on
the short last batch, which only one rank takes; anything drawn as often as the rank's own data
says), and from the next epoch on each rank would follow an order of its own: the ranks would
train on samples another also takes and skip others. So each permutation the loop's batches come
from is made rank 0's (`_hoop_rank0s`, one broadcast of the indices each time it is drawn):
torch.randperm and NumPy's permutation in the loop's iterable or in the statements before it
that what the loop reads comes from (`perm = torch.randperm(n)`; `X, Y = X[perm], Y[perm]`); an
in-place shuffle there (random.shuffle, np.random.shuffle, a generator's shuffle) first sets its
generator to rank 0's state (`_hoop_align`). A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.data import refs_loaded
from hoop._parallelize.edits import MARK, Refused, dotted, last_name

PERMUTATIONS = ("randperm", "permutation")


def stored(stmt):
    """The names and attribute chains a statement assigns anywhere in it."""
    return {dotted(n) for n in ast.walk(stmt) if isinstance(n, (ast.Name, ast.Attribute))
            and isinstance(n.ctx, ast.Store) and dotted(n)}


class Orders:
    def is_permutation(self, node):
        return isinstance(node, ast.Call) and last_name(node) in PERMUTATIONS

    def order_sources(self, loop):
        """(the permutation calls, the in-place shuffle calls) the loop's order comes from: in its
        iterable, and in the statements before it (in its block and the blocks around it, up to
        its function) that assign what it reads, or what those read, or shuffle it."""
        needed = refs_loaded(loop)
        draws = [n for n in ast.walk(loop.iter) if self.is_permutation(n)]
        shuffles, node, fn = [], loop, self.enclosing(loop, (ast.FunctionDef, ast.AsyncFunctionDef))
        while node is not None and node is not fn and not isinstance(node, ast.Module):
            block = self.block_of(node)
            before = block[:next(i for i, s in enumerate(block) if s is node)] if block else []
            for stmt in reversed(before):
                if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    continue
                mixed = [c for c in ast.walk(stmt) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                         and c.func.attr == "shuffle" and len(c.args) == 1 and dotted(c.args[0]) in needed]
                if stored(stmt) & needed or mixed:
                    draws += [n for n in ast.walk(stmt) if self.is_permutation(n)]
                    shuffles += mixed
                    needed |= refs_loaded(stmt)
            node = self.parent.get(node)
        return draws, shuffles

    def rank0_text(self, it, loop):
        """The split loop's iterable as text, each permutation in it made rank 0's (the split
        replaces the iterable whole: torch.randperm(n).split(B))."""
        text = self.e.source(it)
        for d in sorted((n for n in ast.walk(it) if self.is_permutation(n)), key=lambda n: -len(self.e.source(n))):
            if self.first_rank0(d, loop):
                text = text.replace(self.e.source(d), f"_hoop_rank0s({self.e.source(d)})", 1)
        return text

    def first_rank0(self, draw, loop):
        """Whether a call the split loop's order comes from is yet to be made rank 0's; if so, it is
        now counted done and its change said."""
        self.rank0_orders = getattr(self, "rank0_orders", set())
        if id(draw) in self.rank0_orders:
            return False
        self.rank0_orders.add(id(draw))
        if self.is_permutation(draw):
            self.changes.append(f"line {draw.lineno}: the order drawn here (for the batches split at line "
                                f"{loop.lineno}) is rank 0's on every rank")
        else:
            self.changes.append(f"line {draw.lineno}: {self.e.source(draw.func.value)}'s shuffle (for the batches "
                                f"split at line {loop.lineno}) made from rank 0's state on every rank")
        return True

    def same_orders(self, loops):
        """Each permutation the split loops' batches follow made rank 0's (see the module's text)."""
        for loop in loops:
            draws, shuffles = self.order_sources(loop)
            for d in draws:
                if self.first_rank0(d, loop):
                    self.e.replace(d, f"_hoop_rank0s({self.e.source(d)})")
            for c in shuffles:
                stmt = self.stmt_of(c)
                if id(c) in getattr(self, "rank0_orders", ()):
                    continue
                if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                    raise Refused(f"line {c.lineno}: what the split loop at line {loop.lineno} reads is shuffled "
                                  "on a line shared with other code: give the shuffle a line of its own")
                self.first_rank0(c, loop)
                self.e.insert_before(stmt.lineno, [f"_hoop_align({self.e.source(c.func.value)})  {MARK} rank 0's "
                                                   "state: the same shuffle on every rank"], self.e.indent_of(stmt))

    def order_helper(self):
        """The converted script's _hoop_rank0s and _hoop_align, where a split loop's order (or a fold's
        split, folds.py) needs them."""
        if not getattr(self, "rank0_orders", None) and not getattr(self, "fold_draws", None):
            return []
        if self.style == "horovod":
            send = ["    if isinstance(value, torch.Tensor):",
                    "        return hvd.broadcast_object(value.cpu(), root_rank=0).to(value.device)",
                    "    return hvd.broadcast_object(value, root_rank=0)"]
        else:
            send = ["    box = [value.cpu() if isinstance(value, torch.Tensor) else value]",
                    f"    {self.DIST}.broadcast_object_list(box, src=0)",
                    "    return box[0].to(value.device) if isinstance(value, torch.Tensor) else box[0]"]
        return ["", "", f"def _hoop_rank0s(value):  {MARK} rank 0's draw on every rank: the order the ranks split"] + \
            send + ["", "", f"def _hoop_align(gen):  {MARK} a generator's state made rank 0's (Python's, NumPy's, "
                    "a torch.Generator)",
                    "    if hasattr(gen, 'get_state'):",
                    "        gen.set_state(_hoop_rank0s(gen.get_state()))",
                    "    elif hasattr(gen, 'getstate'):",
                    "        gen.setstate(_hoop_rank0s(gen.getstate()))",
                    "    else:  # numpy.random.Generator",
                    "        gen.bit_generator.state = _hoop_rank0s(gen.bit_generator.state)"]
