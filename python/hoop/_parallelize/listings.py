"""hoop-parallelize: the files a script lists come in the same order on every host. Every
converted script splits its data between the ranks by index (a DistributedSampler's indices, a
loop taking every size()-th batch), so every rank must see the same list. os.listdir, glob and
pathlib's glob/rglob/iterdir give the filesystem's order, which on another host's copy of the data
(another disk, another filesystem, files copied in another order) can differ: index i would then
name one file on rank 0 and another on rank 1, and the ranks would train on some files twice and
skip others, silently (DistributedDataParallel by hand has the same trap). So each listing is
sorted where its order can reach the data: wrapped in sorted(...), unless the script sorts it
already (sorted(...), name.sort()) or reads no order from it (len, a membership test, a truth
test, min/max, set). A generator (pathlib's, glob.iglob) is sorted only where it is iterated or
made a list. os.walk and os.scandir, whose order is harder to restore in place, get a note. A
mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import call_name, dotted

LISTS = {"os.listdir", "glob.glob"}  # return lists
GENERATORS = {"glob.iglob"}
PATH_METHODS = {"glob", "rglob", "iterdir"}  # pathlib.Path's, returning generators
WALKS = {"os.walk", "os.scandir"}
ORDERLESS = {"len", "min", "max", "set", "frozenset", "any", "all", "bool", "sorted", "print"}


class Listings:
    def imported_as(self):
        """{name in the script: what it is} for `from os import listdir`, `import glob as g`."""
        names = {}
        for n in ast.walk(self.tree):
            if isinstance(n, ast.ImportFrom) and n.module:
                names.update({a.asname or a.name: f"{n.module}.{a.name}" for a in n.names})
            elif isinstance(n, ast.Import):
                names.update({a.asname: a.name for a in n.names if a.asname})
        return names

    def listing_kind(self, call, names):
        """"list", "generator" or "walk" for a call that lists a directory; else None."""
        name = call_name(call) or ""
        head, _, rest = name.partition(".")
        full = names.get(head, head) + ("." + rest if rest else "")
        if full in LISTS:
            return "list"
        if full in GENERATORS:
            return "generator"
        if full in WALKS:
            return "walk"
        if isinstance(call.func, ast.Attribute) and call.func.attr in PATH_METHODS:
            return "generator"  # glob's own glob and iglob were named above, under any alias
        return None

    def order_read(self, call, kind):
        """Whether an order is read from the listing where it stands (see the module's text)."""
        node, up = call, self.parent.get(call)
        while isinstance(up, (ast.expr, ast.comprehension)):  # up to its statement
            if isinstance(up, ast.Call) and node in up.args and (call_name(up) or "") in ORDERLESS:
                return False
            if isinstance(up, ast.Compare) and node in up.comparators and isinstance(up.ops[0], (ast.In, ast.NotIn)):
                return False
            if isinstance(up, ast.UnaryOp) and isinstance(up.op, ast.Not):
                return False
            if isinstance(up, ast.IfExp) and up.test is node:
                return False
            node, up = up, self.parent.get(up)
        if isinstance(up, (ast.If, ast.While, ast.Assert)) and up.test is node:
            return False
        if kind == "generator":
            return self.iterated(call)
        target = self.assigned_to(call)
        return not (target and self.sorted_later(target))

    def iterated(self, call):
        """Whether a generator listing is iterated where it stands: a for's or comprehension's
        iterable, or made a list or tuple."""
        up = self.parent.get(call)
        if isinstance(up, (ast.For, ast.comprehension)) and up.iter is call:
            return True
        return isinstance(up, ast.Call) and call in up.args and (call_name(up) or "") in ("list", "tuple")

    def assigned_to(self, call):
        up = self.parent.get(call)
        if isinstance(up, ast.Assign) and len(up.targets) == 1 and up.value is call:
            return dotted(up.targets[0])
        return None

    def sorted_later(self, name):
        """Whether the script sorts the list a name holds itself: name.sort(...)."""
        return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "sort"
                   and dotted(c.func.value) == name for c in ast.walk(self.tree))

    def sort_listings(self):
        """Each directory listing whose order can reach the data sorted (see the module's text)."""
        names = self.imported_as()
        for call in sorted((n for n in ast.walk(self.tree) if isinstance(n, ast.Call)),
                           key=lambda n: (n.lineno, n.col_offset)):
            kind = self.listing_kind(call, names)
            if kind is None or not self.order_read(call, kind):
                continue
            what = call_name(call) or self.e.source(call.func)
            if kind == "walk":
                self.notes.append(f"line {call.lineno}: {what} lists in the filesystem's order, which can differ "
                                  "between hosts' copies of the data; sort what is built from it if the ranks split "
                                  "it by index")
            elif self.e.overlaps(call):
                self.notes.append(f"line {call.lineno}: {what}'s order is the filesystem's, which can differ between "
                                  "hosts' copies of the data: sort it (sorted(...)) if the ranks split it by index")
            else:
                self.e.replace(call, f"sorted({self.e.source(call)})")
                self.changes.append(f"line {call.lineno}: {what}'s files sorted (the filesystem's order can differ "
                                    "between hosts' copies of the data; every rank must index the same list)")
