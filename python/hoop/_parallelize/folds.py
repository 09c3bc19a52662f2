"""hoop-parallelize: a split drawn again inside the loop that trains (a new random_split, shuffled
index list or train_test_split for each fold of a k-fold loop, each round of a curriculum) is
the same on every rank. The ranks split the data alike only where they draw alike: seeded alike
at start-up (seeds.py) they do at first, but what each draws by its own data (dropout on a short
last batch, augmentations that draw as often as the sample says) takes the generators apart
during training, and the next fold's split would differ between the ranks: one rank's
validation set would hold samples another trains on. So before each statement at the level of such
a loop (not inside the step loop, where a permutation is a batch's own, as mixup's), or in a
function such a loop calls there (`make_split()`), that draws a split from a shared generator, that
generator is set to rank 0's state (`_hoop_align`, one small broadcast per fold): torch's default
generator for random_split and torch.randperm given no generator= (the GPU's for a randperm on
device="cuda", both for a device known only when it runs), NumPy's global one for
scikit-learn's train_test_split given no random_state=, and the module or generator object a
permutation or shuffle is called on. The loops split by hand have their orders made rank 0's
already (orders.py); where batches are drawn at random (seeds.py), the ranks draw apart on purpose and
nothing is aligned. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK, call_name, dotted, last_name

LOOPS = (ast.For, ast.While, ast.AsyncFor)
MODULES = {"random", "np.random", "numpy.random"}
MAKERS = {"default_rng", "RandomState", "Random"}  # what a generator of the script's own is made by


class Folds:
    def drawn_from(self, call):
        """The texts of the shared generators a call draws a split from (none: [])."""
        kind, kw = last_name(call), {k.arg: k.value for k in call.keywords}
        default = "generator" not in kw or isinstance(kw["generator"], ast.Constant) and kw["generator"].value is None
        if kind == "random_split" and default:
            return ["torch.default_generator"]
        if kind == "randperm" and default and (call_name(call) or "").startswith("torch"):
            return self.device_generators(kw.get("device"))
        if kind == "train_test_split" and "random_state" not in kw and not (
                isinstance(kw.get("shuffle"), ast.Constant) and not kw["shuffle"].value):
            return ["__import__('numpy').random"]
        gen = dotted(call.func.value) if kind in ("permutation", "shuffle") and isinstance(call.func, ast.Attribute) \
            else None
        return [gen] if gen in MODULES or gen in self.generators() else []

    @staticmethod
    def device_generators(device):
        """torch.randperm(n, device=...) draws from that device's default generator: the CPU's,
        the current GPU's for "cuda", both where the device is known only when it runs."""
        cpu = "torch.default_generator"
        gpu = "torch.cuda.default_generators[torch.cuda.current_device()] if torch.cuda.is_available() else " + cpu
        text = device.value if isinstance(device, ast.Constant) and isinstance(device.value, str) else None
        if device is None or text == "cpu":
            return [cpu]
        return [gpu] if text is not None and text.startswith("cuda") else [cpu, gpu]

    def generators(self):
        """The names the script binds to a generator of its own (rng = np.random.default_rng(0))."""
        if not hasattr(self, "own_generators"):
            self.own_generators = {dotted(t) for n in ast.walk(self.tree) if isinstance(n, ast.Assign)
                                   and isinstance(n.value, ast.Call) and last_name(n.value) in MAKERS
                                   for t in n.targets if dotted(t)}
        return self.own_generators

    def trains_within(self, loop):
        """Whether a loop inside this one (or in what its body calls) trains: this one is an epoch's
        or a fold's, not a step's."""
        inner = [n for n in ast.walk(loop) if isinstance(n, LOOPS) and n is not loop]
        inner += [n for f, _ in self.reached(loop) for n in ast.walk(f) if isinstance(n, LOOPS)]
        return any(self.trains(n) for n in inner)

    def find_fold_draws(self):
        """[(statement, generator text)] of the splits drawn at a training loop's fold level."""
        self.fold_draws, done, cache = [], getattr(self, "rank0_orders", set()), {}
        if getattr(self, "reseeded", False):
            return  # batches drawn at random: the ranks' generators are seeded apart on purpose (seeds.py)
        for call in (n for n in ast.walk(self.tree) if isinstance(n, ast.Call)):
            gens = self.drawn_from(call)
            if not gens or id(call) in done:
                continue
            stmt = self.stmt_of(call)
            loop = self.enclosing(stmt, LOOPS)
            if loop is None and not self.helper_called_by_folds(stmt, cache):
                continue
            if loop is not None and id(loop) not in cache:
                cache[id(loop)] = self.trains(loop) and self.trains_within(loop)
            if loop is None or cache[id(loop)]:
                self.fold_draws += [(stmt, gen) for gen in gens if (stmt, gen) not in self.fold_draws]

    def helper_called_by_folds(self, stmt, cache):
        """Whether stmt is in a function (not in a loop of it) that a training loop's fold level
        calls by name (`train_set, val_set = make_split(data)` in a k-fold loop), not its step loop."""
        fn = self.enclosing(stmt, (ast.FunctionDef, ast.AsyncFunctionDef))
        if fn is None:
            return False
        if "folds_calls" not in cache:
            calls = []
            for loop in (n for n in ast.walk(self.tree) if isinstance(n, LOOPS)):
                if self.trains(loop) and self.trains_within(loop):
                    todo = list(loop.body)
                    while todo:
                        n = todo.pop()
                        if isinstance(n, LOOPS) and self.trains(n):
                            continue  # the step loop: a draw there is a batch's own
                        calls += [last_name(n)] if isinstance(n, ast.Call) else []
                        todo.extend(ast.iter_child_nodes(n))
            cache["folds_calls"] = set(calls)
        return fn.name in cache["folds_calls"]

    def align_fold_draws(self):
        """_hoop_align(generator) before each statement find_fold_draws found."""
        for stmt in dict.fromkeys(stmt for stmt, _ in self.fold_draws):
            gens = [gen for s, gen in self.fold_draws if s is stmt]
            if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                self.notes.append(f"line {stmt.lineno}: a split drawn again in the loop that trains, on a line shared "
                                  f"with other code: give it a line of its own, after "
                                  + "; ".join(f"_hoop_align({gen})" for gen in gens))
                continue
            self.e.insert_before(stmt.lineno, [f"_hoop_align({gen})  {MARK} rank 0's state: the same split on every "
                                               "rank" for gen in gens], self.e.indent_of(stmt), first=True)
            where = "in the loop that trains" if self.enclosing(stmt, LOOPS) else \
                "in a function the loop that trains calls for each fold"
            self.changes.append(f"line {stmt.lineno}: the split drawn here {where} is drawn from rank "
                                f"0's state of {' and '.join(gens)} on every rank")
