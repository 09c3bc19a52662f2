"""hoop-parallelize: what each rank draws at random. Every rank must split the data alike (a
random_split, an index list shuffled into training and validation parts, a train_test_split),
so where the script does not seed a generator itself before anything else, the converted script
seeds it on every rank with rank 0's seed at start-up; runs still differ from one another as the
original's do. Batches drawn at random (torch.randint in a get_batch()) must differ between the
ranks instead: the generators they come from are seeded apart by rank just before the training
loop. A mixin of Converter (hoop/parallelize.py): it uses the converter's tree, edits and changes,
and Scopes' look-ups."""
import ast

from hoop._parallelize.edits import MARK, Refused, call_name

# Draws of a batch's indices made afresh for each batch, by the generator whose seed they follow:
# torch's, NumPy's, Python's. (A permutation is not among them: one per epoch, iterated through,
# is an epoch's order, which seeding the ranks apart would not split.)
RANDOM_DRAWS = {"torch.randint": "torch",
                **{f"{m}.random.{f}": m for m in ("np", "numpy") for f in ("randint", "choice", "random_integers")},
                **dict.fromkeys(("random.randint", "random.randrange", "random.sample", "random.choice",
                                 "random.choices"), "random")}
SEEDERS = {"torch": ("torch.manual_seed", "torch.random.manual_seed"), "numpy": ("np.random.seed", "numpy.random.seed"),
           "random": ("random.seed",)}


class Seeds:
    def leading_imports(self):
        """({module: the name it is bound to}, {every top-level package imported}) for what the
        script imports before its first other statement (where hoop's set-up goes)."""
        bound, packages = {}, set()
        for stmt in self.tree.body:
            if isinstance(stmt, ast.Import):
                bound.update({a.name: a.asname or a.name for a in stmt.names if "." not in a.name})
                packages |= {a.name.split(".")[0] for a in stmt.names}
            elif isinstance(stmt, ast.ImportFrom):
                packages.add((stmt.module or "").split(".")[0])
            elif not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                break
        return bound, packages

    def same_draws(self):
        """(lines, what they do) seeding, on every rank, torch's (and NumPy's, Python's, where the
        script imports them) global generator with rank 0's seed, but for one the script seeds
        itself by a statement of its own at the top level (the usual `torch.manual_seed(0)`)."""
        bound, packages = self.leading_imports()
        calls = [call_name(s.value) or "" for s in self.tree.body if isinstance(s, ast.Expr)
                 and isinstance(s.value, ast.Call)]
        if any(c.endswith(("seed_everything", "set_seed")) for c in calls):
            return [], None  # a helper that seeds them all
        names = {"torch": "torch", "numpy": bound.get("numpy"), "random": bound.get("random")}
        if names["numpy"] is None and "sklearn" in packages:
            names["numpy"] = "__import__('numpy')"  # train_test_split draws from NumPy's generator
        todo = [m for m, name in names.items() if name and not set(calls) & set(SEEDERS[m])]
        if not todo:
            return [], None
        if self.style == "horovod":
            lines = ["_hoop_seed = int(hvd.broadcast_object(torch.initial_seed() % 2**63, root_rank=0))  "
                     f"{MARK} rank 0's seed"]
        else:
            lines = ["_hoop_seed = [torch.initial_seed() % 2**63]  " + f"{MARK} rank 0's seed",
                     f"{self.DIST}.broadcast_object_list(_hoop_seed, src=0)", "_hoop_seed = _hoop_seed[0]"]
        seed = {"torch": "torch.manual_seed(_hoop_seed)", "numpy": f"{names['numpy']}.random.seed(_hoop_seed % 2**32)",
                "random": f"{names['random']}.seed(_hoop_seed)"}
        lines += [seed[m] + f"  {MARK} every rank draws as rank 0 does (a random_split, shuffled indices)"
                  for m in todo]
        return lines, f"the {', '.join(todo)} random generator(s) seeded alike on every rank (rank 0's seed), so " \
            "that the ranks split the data alike"

    def reseed_random_batches(self):
        """A training loop fed by no DataLoader that draws its batches at random (`get_batch()`
        taking torch.randint offsets into the data, as nanoGPT and its lectures do): from the
        same seed every rank would draw the same batches. Just before the (outermost) loop, each
        generator it draws from is seeded apart on each rank (a number drawn from the shared
        stream, plus the rank): what was made before (the data, the model) stays the same on
        every rank, and the batches (and dropout) differ, as nanoGPT's own seed offset makes
        them. Whether any loop was found."""
        loops = [l for l in ast.walk(self.tree) if isinstance(l, (ast.For, ast.While))
                 and self.trains(l) and self.random_draws(l)]
        loops = [l for l in loops if not any(o is not l and l in list(ast.walk(o)) for o in loops)]
        for loop in loops:
            draws = self.random_draws(loop)
            own = next((c for c in draws if any(k.arg in ("generator", "random_state") for k in c.keywords)), None)
            if own is not None:
                raise Refused(f"line {own.lineno}: batches drawn at random with a generator of their own: seed it "
                              f"differently on each rank (with {self.RANK}) by hand")
            if not self.e.alone_on_lines(loop) or self.on_header_line(loop):
                raise Refused(f"line {loop.lineno}: the training loop shares its line with other code")
            lines = []
            for module in dict.fromkeys(RANDOM_DRAWS[call_name(c)] for c in draws):
                lines.append({"torch": f"torch.manual_seed(torch.initial_seed() + {self.RANK})",
                              "random": f"random.seed(random.getrandbits(32) + {self.RANK})"}.get(
                    module, f"{module}.random.seed(({module}.random.randint(2**31) + {self.RANK}) % 2**32)")
                    + f"  {MARK} each rank draws batches of its own")
            self.e.insert_before(loop.lineno, lines, self.e.indent_of(loop))
            self.changes.append(f"line {loop.lineno}: batches drawn at random (line {draws[0].lineno}): the "
                                f"random generators seeded apart on each rank before the training loop, so each "
                                f"draws its own")
        self.reseeded = bool(loops)  # folds.py aligns no generator then: the ranks draw apart on purpose
        return self.reseeded

    def random_draws(self, loop):
        """The random index draws (RANDOM_DRAWS) made in the loop or in the script's functions and
        methods it calls (three calls deep)."""
        nodes = [loop] + [f for f, _ in self.reached(loop)]
        return list(dict.fromkeys(c for n in nodes for c in ast.walk(n) if isinstance(c, ast.Call)
                                  and call_name(c) in RANDOM_DRAWS))
