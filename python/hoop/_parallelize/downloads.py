"""hoop-parallelize: a dataset that downloads itself (torchvision's, torchaudio's, torchtext's:
download=True) is made by one rank at a time. Every rank of a host runs the script in the same
directory: all at once, each would download into the same files while the others read and
extract them (a truncated archive, "File not found or corrupted"). As Horovod's examples do with
a file lock, the converted script makes rank 0's first (it downloads), then the first rank of
each other host (a disk of its own, or the files are there already), then the rest, who find the
files in place: the call is made `_hoop_made_in_turn(lambda: CALL)`, which waits for the turns
before this rank's, makes it, and then waits for those after (two barriers on every rank in all).
Where another change rewrites text around the call or in it (a training loader's dataset, which
the sampler shares), the statement gets `_hoop_in_turn(start=True)` before it and
`_hoop_in_turn(start=False)` after it instead, or a note where it is not a plain statement alone
on its lines. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK

PLAIN = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr)


def downloads(call):
    """Whether a call may download: download= given anything but a constant false."""
    return isinstance(call, ast.Call) and any(
        k.arg == "download" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords)


class Downloads:
    def find_downloads(self):
        self.downloads = sorted((c for c in ast.walk(self.tree) if downloads(c)), key=lambda c: c.lineno)

    def download_helper(self):
        """The converted script's _hoop_in_turn, where a dataset downloads itself."""
        if not self.downloads:
            return []
        h = self.style == "horovod"
        local = "hvd.local_rank()" if h else "int(__import__('os').environ.get('LOCAL_RANK', 0))"
        barrier = "hvd.barrier()" if h else f"{self.DIST}.barrier()"
        return ["", "", f"def _hoop_in_turn(start):  {MARK} downloads made by one rank at a time: rank 0, each "
                "host's first rank, then the rest",
                f"    turn = 0 if {self.RANK} == 0 else 1 if {local} == 0 else 2",
                "    for _ in range(turn if start else 2 - turn):",
                f"        {barrier}",
                "", "", f"def _hoop_made_in_turn(make):  {MARK} make() in this rank's turn",
                "    _hoop_in_turn(start=True)",
                "    try:",
                "        return make()",
                "    finally:",
                "        _hoop_in_turn(start=False)"]

    def downloads_in_turn(self):
        """Each statement making a dataset that downloads itself run by one rank at a time (see
        the module's text). Last of the converter's changes: its lines go next to the statement,
        inside what the others put around it."""
        done = set()
        for call in self.downloads:
            said = (f"line {call.lineno}: the dataset that downloads itself made by one rank at a time (rank 0 "
                    "first), so that no two write its files at once")
            if not self.e.overlaps(call):
                self.e.replace(call, f"_hoop_made_in_turn(lambda: {self.e.source(call)})")
                self.changes.append(said)
                continue
            stmt = self.stmt_of(call)
            if id(stmt) in done:
                continue
            done.add(id(stmt))
            if not isinstance(stmt, PLAIN) or not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                self.notes.append(f"line {call.lineno}: every rank downloads here at once (download=True): make the "
                                  "dataset in a statement of its own, rank 0 first (a barrier), so one downloads")
                continue
            indent = self.e.indent_of(stmt)
            self.e.insert_before(stmt.lineno, [f"_hoop_in_turn(start=True)  {MARK} one rank at a time: rank 0 "
                                               "downloads first"], indent, first=True)
            self.e.insert_after(stmt, ["_hoop_in_turn(start=False)"], indent, closing=True)
            self.changes.append(said)
