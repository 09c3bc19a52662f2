"""hoop-parallelize: data fetched or unpacked by the script (a dataset made with download=True,
as torchvision's and torchaudio's are; urlretrieve, download_url, extract_archive, a zip's or
tar's extractall, gdown/wget/nltk downloads) is fetched by one rank at a time. Every rank of a
host runs the script in the same directory: all at once, each would write the same files while
the others read them (a truncated archive, "File not found or corrupted"). As Horovod's examples
do with a file lock, the converted script runs it on rank 0 first, then on the first rank of each
other host (a disk of its own, or the files are there already), then on the rest, and no rank
goes on before all are done (three barriers on every rank). A fetch that skips what is there
(torchvision's datasets check their files) then fetches once per disk; so does a fetch under an
`if not os.path.exists(...)` (isfile, isdir, a Path's exists), for which the whole `if` takes
its turn (the test is made in turn too), and what it writes (the folder it fetches into) is
written by each rank that takes it, not by rank 0 alone (rank0.py). The call is made
`_hoop_made_in_turn(lambda: CALL)`; an `if` (or a statement another change rewrites, as a
training loader's dataset that the sampler shares) gets `_hoop_in_turn(start=True)` before it
and `_hoop_in_turn(start=False)` after it; what can be neither (an `elif` that skips a fetch, a
statement on a loop's header line) is noted. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK, METHOD_WRITERS, WRITERS, call_name, last_name

PLAIN = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.If)
FETCHERS = {"urlretrieve", "download_url", "download_and_extract_archive", "extract_archive", "extractall",
            "download_file_from_google_drive", "dataset_download_files"}
FETCHERS_BY_NAME = {"gdown.download", "wget.download", "nltk.download"}
GUARDS = {"exists", "isfile", "isdir", "is_file", "is_dir", "listdir"}  # what a test that skips a fetch asks


def fetches(call):
    """Whether a call may fetch or unpack data into files: download= given anything but a
    constant false, or a fetcher named above."""
    if not isinstance(call, ast.Call):
        return False
    method = call.func.attr if isinstance(call.func, ast.Attribute) else last_name(call)  # tarfile.open(p).extractall
    return method in FETCHERS or call_name(call) in FETCHERS_BY_NAME or any(
        k.arg == "download" and not (isinstance(k.value, ast.Constant) and not k.value.value) for k in call.keywords)


class Downloads:
    def find_downloads(self):
        self.downloads = sorted((c for c in ast.walk(self.tree) if fetches(c)), key=lambda c: c.lineno)

    def download_helper(self):
        """The converted script's _hoop_in_turn and _hoop_made_in_turn, where the script fetches."""
        if not self.downloads:
            return []
        return ["", "", f"def _hoop_in_turn(start):  {MARK} data fetched by one rank at a time: rank 0, each "
                "host's first rank, then the rest; none goes on before all are done",
                f"    turn = 0 if {self.RANK} == 0 else 1 if {self.LOCAL_RANK} == 0 else 2",
                "    for _ in range(turn if start else 3 - turn):",
                f"        {self.BARRIER}",
                "", "", f"def _hoop_made_in_turn(make):  {MARK} make() in this rank's turn",
                "    _hoop_in_turn(start=True)",
                "    try:",
                "        return make()",
                "    finally:",
                "        _hoop_in_turn(start=False)"]

    def writes_left_to_fetchers(self):
        """Files written inside an `if` that skips a fetch (the folder it fetches into, say) are
        written by each rank that takes that `if` in its turn, not by rank 0 alone: another host's
        first rank fetches into a disk of its own. Called once rank0.py has found its writes."""
        units = [g for g in (self.guarding_if(c) for c in self.downloads) if g is not None]

        def fetching(node):
            return any(u.lineno <= node.lineno and node.end_lineno <= u.end_lineno for u in units)

        def writes(c):
            return call_name(c) in WRITERS or isinstance(c.func, ast.Attribute) and c.func.attr in METHOD_WRITERS

        self.rank0_calls = [c for c in self.rank0_calls if not (fetching(c) and writes(c))]
        self.rank0_blocks = [b for b in self.rank0_blocks if not fetching(b)]
        self.rank0_makers = [c for c in self.rank0_makers if not (fetching(c) and call_name(c) == "open")]

    def guarding_if(self, call):
        """The `if not os.path.exists(...)` (or isfile, isdir, a Path's exists) whose body the
        fetch is in, if its nearest enclosing `if` is one."""
        node = self.stmt_of(call)
        while not isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            up = self.parent.get(node)
            if isinstance(up, ast.If):
                guarded = any(isinstance(c, ast.Call) and isinstance(c.func, (ast.Attribute, ast.Name))
                              and last_name(c) in GUARDS for c in ast.walk(up.test))
                return up if guarded and any(s is node for s in up.body) else None
            node = up
        return None

    def turn_around(self, stmt):
        """The pair of lines around a statement; False where it cannot have them."""
        elif_ = isinstance(self.parent.get(stmt), ast.If) and self.e.source(stmt).startswith("elif")
        if not isinstance(stmt, PLAIN) or elif_ or not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
            return False
        indent = self.e.indent_of(stmt)
        self.e.insert_before(stmt.lineno, [f"_hoop_in_turn(start=True)  {MARK} one rank at a time: rank 0 fetches "
                                           "first"], indent, first=True)
        self.e.insert_after(stmt, ["_hoop_in_turn(start=False)"], indent, closing=True)
        return True

    def turned(self, stmt, done):
        """Whether a statement has its turn (given now, or before: `done`)."""
        if id(stmt) not in done and not self.turn_around(stmt):
            return False
        done.add(id(stmt))
        return True

    def downloads_in_turn(self):
        """Each fetch run by one rank at a time (see the module's text). Last of the converter's
        changes: its lines go next to the statement, inside what the others put around it."""
        done = set()
        for call in self.downloads:
            what = f"line {call.lineno}: {call_name(call) or self.e.source(call.func)} fetches data"
            said = "run by one rank at a time (rank 0 first), so that no two write its files at once"
            guard, stmt = self.guarding_if(call), self.stmt_of(call)
            if guard is not None:  # the test takes its turn too: a rank must not skip the barriers of a fetch
                if self.turned(guard, done):
                    self.changes.append(f"{what}: with the `if` at line {guard.lineno} that skips it, {said}")
                else:
                    self.notes.append(f"{what} under the `elif` (or one-line `if`) at line {guard.lineno}, on every "
                                      "rank at once: make it an `if` of its own, on lines of its own")
            elif not self.e.overlaps(call):
                self.e.replace(call, f"_hoop_made_in_turn(lambda: {self.e.source(call)})")
                self.changes.append(f"{what}: {said}")
            elif self.turned(stmt, done):
                self.changes.append(f"{what}: {said}")
            else:
                self.notes.append(f"{what}, on every rank at once: give its statement a line of its own (then rank 0 "
                                  "fetches first, and the others after)")
