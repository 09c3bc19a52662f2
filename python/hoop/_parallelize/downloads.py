"""hoop-parallelize: data fetched or unpacked by the script (a dataset made with download=True,
as torchvision's and torchaudio's are; urlretrieve, download_url, extract_archive, a zip's or
tar's extractall, gdown/wget/nltk downloads) is fetched by one rank at a time. Every rank of a
host runs the script in the same directory: all at once, each would write the same files while
the others read them (a truncated archive, "File not found or corrupted"). As Horovod's examples
do with a file lock, the converted script runs it on rank 0 first, then on the first rank of each
other host (a disk of its own, or the files are there already), then on the rest, and no rank
goes on before all are done (three barriers on every rank; under DDP in a group of their own
whose timeout is a day, since a fetch may take longer than the calls' HOOP_TIMEOUT). A fetch
that skips what is there (torchvision's datasets check their files) then fetches once per disk;
so does a fetch under an `if not os.path.exists(...)` (isfile, isdir, a Path's exists), for
which the whole `if` takes its turn (the test is made in turn too), and what it writes (the
folder it fetches into) is written by each rank that takes it, not by rank 0 alone (rank0.py).
The call is made `_hoop_made_in_turn(lambda: CALL)`; an `if` (or a statement another change
rewrites, as a training loader's dataset that the sampler shares) gets
`_hoop_in_turn(start=True)` before it and `_hoop_in_turn(start=False)` after it; what can be
neither (an `elif` that skips a fetch, a statement on a loop's header line) is noted.

A file the script makes itself when it is not there (`if not os.path.exists(CACHE): ...
torch.save(x, CACHE)`, or `if exists: load, else: make and save`: an `if` that tests a path
and writes to it) is made in turn the same way: before, rank 0 alone wrote it while the
others read it half written, or (on another host's disk) not at all. A mixin of Converter
(hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK, METHOD_WRITERS, WRITERS, call_name, dotted, last_name

PLAIN = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.If)
FETCHERS = {"urlretrieve", "download_url", "download_and_extract_archive", "extract_archive", "extractall",
            "download_file_from_google_drive", "dataset_download_files"}
FETCHERS_BY_NAME = {"gdown.download", "wget.download", "nltk.download"}
GUARDS = {"exists", "isfile", "isdir", "is_file", "is_dir", "listdir"}  # what a test that skips a fetch asks
REMOVERS = {"os.remove", "os.unlink", "shutil.rmtree"}  # writes that make nothing


def path_parts(node):
    """What names a path in an expression: its chains of names that are not called, and its
    strings ('args.cache', 'root', 'feats.pt' for os.path.join(args.cache, root, "feats.pt"))."""
    skip = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    skip |= {id(n.value) for n in ast.walk(node) if isinstance(n, ast.Attribute)}
    return {dotted(n) if isinstance(n, (ast.Name, ast.Attribute)) else n.value for n in ast.walk(node)
            if id(n) not in skip and (isinstance(n, (ast.Name, ast.Attribute)) and dotted(n) or isinstance(
                n, ast.Constant) and isinstance(n.value, str) and len(n.value) > 1)}


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
        if not self.downloads and not self.made_in_turn:
            return []
        waits = ["    for _ in range(turn if start else 3 - turn):", f"        {self.BARRIER}"]
        group = []
        if self.style != "horovod":  # a group of its own: its barriers wait as long as a fetch takes (a day)
            group = ["", "", f"_hoop_turns = []  {MARK} the turns' group, whose barriers wait up to a day, not the "
                     "calls' timeout"]
            day = "__import__('datetime').timedelta(days=1)"
            waits = ["    if not _hoop_turns:", f"        _hoop_turns.append({self.DIST}.new_group(timeout={day}))",
                     waits[0], f"        {self.DIST}.barrier(group=_hoop_turns[0])"]
        return group + ["", "", f"def _hoop_in_turn(start):  {MARK} data fetched (or made) by one rank at a time: "
                        "rank 0, each host's first rank, then the rest; none goes on before all are done",
                        f"    turn = 0 if {self.RANK} == 0 else 1 if {self.LOCAL_RANK} == 0 else 2"] + waits + [
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
        guards = [g for g in (self.guarding_if(c) for c in self.downloads) if g is not None]
        units = [g for g in guards if self.can_turn(g)]  # the others' writes stay rank 0's (noted)
        self.find_made_in_turn(guards)
        units += [u for u, _ in self.made_in_turn]

        def fetching(node):
            return any(u.lineno <= node.lineno and node.end_lineno <= u.end_lineno for u in units)

        def writes(c):
            return call_name(c) in WRITERS or isinstance(c.func, ast.Attribute) and c.func.attr in METHOD_WRITERS

        self.rank0_calls = [c for c in self.rank0_calls if not (fetching(c) and writes(c))]
        self.folders_for_every_rank(fetching)
        self.rank0_blocks = [b for b in self.rank0_blocks if not fetching(b)]
        self.rank0_makers = [c for c in self.rank0_makers if not (fetching(c) and call_name(c) == "open")]
        # A load in such an `if` comes after the writes in turn; one in a branch rank 0 never takes
        # must not wait in a barrier of its own. With no write left to rank 0, none waits.
        saves = self.rank0_blocks or self.rank0_makers or any(call_name(c) in WRITERS for c in self.rank0_calls)
        self.loads_after_saves = [c for c in self.loads_after_saves if saves and not fetching(c)]

    def folders_for_every_rank(self, fetching):
        """os.makedirs(folder, exist_ok=True) made on every rank where what is written in turn or
        for each sample goes into that folder (another host's ranks write there); nothing races."""
        needed = set()
        for c in ast.walk(self.tree):
            if isinstance(c, ast.Call) and (fetching(c) or self.per_sample(c)) and self.is_write(c):
                needed |= self.written_parts(c)
        assigned = {}  # best = f"ckpt/best_{epoch}.pt": what a name's path is made of
        for a in ast.walk(self.tree):
            if isinstance(a, ast.Assign) and len(a.targets) == 1 and isinstance(a.targets[0], ast.Name):
                assigned.setdefault(a.targets[0].id, set()).update(path_parts(a.value))
        for _ in range(2):
            needed |= set().union(*(assigned.get(p, set()) for p in needed))

        def holds(folder):
            return folder & needed or any(isinstance(f, str) and isinstance(w, str) and w.startswith(
                f.rstrip("/") + "/") for f in folder for w in needed)

        made = [c for c in self.rank0_calls if call_name(c) == "os.makedirs" and c.args and any(
            k.arg == "exist_ok" and isinstance(k.value, ast.Constant) and k.value.value for k in c.keywords)
            and holds(path_parts(c.args[0]))]
        self.rank0_calls = [c for c in self.rank0_calls if c not in made]
        if made:
            self.changes.append(f"left on every rank: the folder(s) made with exist_ok=True at line(s) "
                                f"{', '.join(str(c.lineno) for c in made)}, which what is written in turn or for each "
                                "sample goes into (another host's ranks write there too)")

    def find_made_in_turn(self, fetch_units):
        """(if, write) for each outermost `if` that tests whether a path is there (exists, isfile,
        ...) and writes to it in a branch, not a fetch's, a rank-0 block's or a private one, nor
        one run for each sample (a dataset's __getitem__, a collate_fn: a cache per sample, made
        in a loader's workers, where no barrier can be)."""
        self.made_in_turn = []
        for node in ast.walk(self.tree):
            if not isinstance(node, ast.If) or self.in_rank0_block(node) or self.per_sample(node) or any(
                    u.lineno <= node.lineno and node.end_lineno <= u.end_lineno for u in fetch_units):
                continue
            tested = set()
            for c in ast.walk(node.test):
                if isinstance(c, ast.Call) and isinstance(c.func, (ast.Attribute, ast.Name)) and last_name(c) in GUARDS:
                    subject = c.args[0] if c.args else getattr(c.func, "value", None)
                    tested |= path_parts(subject) if subject is not None else set()
            write = next((w for w in self.writes_in(node) if tested & self.written_parts(w)), None)
            if write is not None and not self.private(write):
                self.made_in_turn.append((node, write))
        self.made_in_turn = [(u, w) for u, w in self.made_in_turn if not any(
            o is not u and o.lineno <= u.lineno and u.end_lineno <= o.end_lineno for o, _ in self.made_in_turn)]
        for unit, write in [(u, w) for u, w in self.made_in_turn if not self.can_turn(u)]:
            self.notes.append(f"line {unit.lineno}: the `elif` (or `if` sharing its line) that writes what it finds "
                              f"missing ({self.called(write)}, line {write.lineno}): every rank "
                              "tests it at once, and rank 0 alone writes it (another host's disk never gets it): make "
                              "it an `if` of its own, on lines of its own")
        self.made_in_turn = [(u, w) for u, w in self.made_in_turn if self.can_turn(u)]

    def called(self, call):
        """'torch.save(...)', 'df.to_csv(...)': a call, short."""
        return f"{call_name(call) or self.e.source(call.func)}(...)"

    def is_write(self, n):
        """Whether n is a call that makes or writes a file (not one that removes one)."""
        return isinstance(n, ast.Call) and (call_name(n) in WRITERS - REMOVERS or self.opens_for_writing(n) or (
            isinstance(n.func, ast.Attribute) and n.func.attr in METHOD_WRITERS))

    def writes_in(self, node):
        """The calls in node's branches (not in a function defined there) that write a file."""
        todo, found = list(node.body) + list(node.orelse), []
        while todo:
            n = todo.pop(0)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if self.is_write(n):
                found.append(n)
            todo.extend(ast.iter_child_nodes(n))
        return found

    def written_parts(self, call):
        """path_parts of what a write names: open's file, a writer's arguments, a method's object."""
        if call_name(call) == "open":
            return path_parts(call.args[0]) if call.args else set()
        parts = set().union(*(path_parts(a) for a in call.args + [k.value for k in call.keywords]))
        return parts | (path_parts(call.func.value) if isinstance(call.func, ast.Attribute) and
                        call_name(call) not in WRITERS else set())

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

    def can_turn(self, stmt):
        """Whether a statement can have a pair of lines around it: not an `elif`, on lines of its own."""
        elif_ = isinstance(self.parent.get(stmt), ast.If) and self.e.source(stmt).startswith("elif")
        return isinstance(stmt, PLAIN) and not elif_ and self.e.alone_on_lines(stmt) and not self.on_header_line(stmt)

    def turn_around(self, stmt, first="fetches"):
        """The pair of lines around a statement; False where it cannot have them."""
        if not self.can_turn(stmt):
            return False
        indent = self.e.indent_of(stmt)
        self.e.insert_before(stmt.lineno, [f"_hoop_in_turn(start=True)  {MARK} one rank at a time: rank 0 {first} "
                                           "first"], indent, first=True)
        self.e.insert_after(stmt, ["_hoop_in_turn(start=False)"], indent, closing=True)
        return True

    def turned(self, stmt, done, first="fetches"):
        """Whether a statement has its turn (given now, or before: `done`)."""
        if id(stmt) not in done and not self.turn_around(stmt, first):
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
        for unit, write in self.made_in_turn:
            what = f"line {unit.lineno}: the `if` that writes what it finds missing ({self.called(write)}, line " \
                   f"{write.lineno})"
            if self.turned(unit, done, "makes it"):
                self.changes.append(f"{what}: run by one rank at a time (rank 0 first), so that each disk gets it once "
                                    "and none reads it half written")
