"""hoop-parallelize: the ranks take together the decisions a script makes on what each computed
alone. A `break` (or sys.exit()) out of training: rank 0's decision, on every rank, but taken where
any rank takes it ahead of the pass's backward (a NaN check); a pass skipped (`continue`): skipped on
every rank where any rank skips it; a branch whose ways differ in what
every rank must do alike (a backward or step in one way only: run only where every rank's test lets
it; an averaged evaluation in one way only: rank 0's decision); one taken on an exception: listed;
a gradient set by hand: listed under DDP (written in place: under Horovod style too); an object the loop calls (an EarlyStopping) counts as
what a rank computed alone; a split drawn again while training (a k-fold loop's) is drawn from rank
0's generator state. Skipped, saying so, without PyTorch."""
import importlib.util
import os
import sys
import tempfile
import unittest

from support import alternating, convert_script, drawn, hooprun

if importlib.util.find_spec("torch") is None:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")

PHASES = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

sets = {x: TensorDataset(torch.randn(64, 4), torch.randn(64, 1)) for x in ["train", "val"]}
loaders = {x: DataLoader(sets[x], batch_size=8, shuffle=(x == "train")) for x in ["train", "val"]}
phases = ["train", "val"]
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for phase in phases:
        for xb, yb in loaders[phase]:
            loss = F.mse_loss(model(xb), yb)
            if phase == "train":
                opt.zero_grad()
                loss.backward()
                opt.step()
"""


class TakenTogether(unittest.TestCase):
    def run_drawn(self, tmp, name, label, check):
        """Each drawn style's conversion of NAME (convert_script's) run on 2 ranks: exit 0, and
        check(its output)."""
        for style in drawn(("horovod", "ddp"), label):
            with self.subTest(style=style):
                run = hooprun(2, [sys.executable, os.path.join(tmp, f"{name}_{style}.py")], env={"HOOP_TIMEOUT": "30"},
                              timeout=120)
                self.assertEqual(run.returncode, 0, run.output)
                check(run.output)

    def test_ranks_leave_training_together(self):
        # A break taken on what each rank computed alone: here the running sum of its own labels
        # (rank 1's share is larger, so alone it would stop an epoch before rank 0 and leave
        # rank 0 waiting in its next allreduce). Converted, rank 0's decision holds on every rank.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(64, 4), torch.arange(64, dtype=torch.float32).unsqueeze(1))
loader = DataLoader(data, batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-4)
seen = 0.0
for epoch in range(1, 20):
    for xb, yb in loader:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
        seen += yb.sum().item()
    if seen > 3000:
        break
print(f"stopped after epoch {epoch}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, _ in convert_script(tmp, "stop", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 17: the way out of the training loop at line 11 is rank 0's decision", r.stderr)
            self.run_drawn(tmp, "stop", "leaving together", lambda out: self.assertIn("[0] stopped after epoch 4", out))
            # The same way out by sys.exit() (or exit(), quit(), os._exit()): agreed alike.
            ended = script.replace("        break", "        sys.exit(0)").replace("import torch\n",
                                                                          "import sys\nimport torch\n", 1)
            for style, r, _ in convert_script(tmp, "exits", ended):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 18: the way out of the training loop at line 12 is rank 0's decision", r.stderr)

    @alternating
    def test_ranks_skip_a_pass_together(self):
        # A pass skipped on what this rank alone computed (a non-finite loss: sample 9, in rank 1's
        # first batch of each epoch) would leave the ranks a pass apart: rank 0 waiting in an
        # allreduce rank 1 never makes. Converted, every rank skips the pass where any rank skips
        # it, as one process that saw the whole batch would; the else-branch form and a skip that
        # leaves nothing of training undone (after the step) are converted as they should be; one
        # taken on an exception is listed for the user (the ranks cannot agree on what one raises).
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

x = torch.randn(64, 4)
x[9] = float("nan")
loader = DataLoader(TensorDataset(x, torch.randn(64, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
skipped = 0
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        try:
            loss = F.mse_loss(model(xb), yb)
        except RuntimeError:
            continue
        if not torch.isfinite(loss):
            skipped += 1
            continue
        if loss.item() < 1e9:
            loss.backward()
        else:
            continue
        opt.step()
        if loss.item() > 1e6:
            continue
        print(f"pass")
    print(f"epoch {epoch} skipped {skipped} finite {all(torch.isfinite(p).all().item() for p in model.parameters())}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "skip", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                for line in (19, 22):
                    self.assertIn(f"line {line}: a pass of the training loop at line 13 is skipped on every rank where "
                                  "any rank skips it", r.stderr)
                self.assertNotIn("line 27:", r.stderr)  # after the step: nothing of training skipped
                self.assertIn("line 18: a way out of (or past) a pass of the training loop at line 13 taken on an "
                              "exception: left as written", r.stderr)
                with open(out) as f:
                    text = f.read()
                self.assertIn("if _hoop_any(not torch.isfinite(loss)):", text)
                self.assertIn("if not _hoop_any(not (loss.item() < 1e9)):", text)
                self.assertIn("if loss.item() > 1e6:", text)
            self.run_drawn(tmp, "skip", "skipping together", self.skipped_together)
            # A loader run out (StopIteration) is met at the same pass on every rank: not listed.
            steps = script.replace("    for xb, yb in loader:\n", "    it = iter(loader)\n    while True:\n").replace(
                "        try:\n            loss = F.mse_loss(model(xb), yb)\n        except RuntimeError:\n",
                "        try:\n            xb, yb = next(it)\n        except StopIteration:\n            break\n"
                "        try:\n            loss = F.mse_loss(model(xb), yb)\n        except RuntimeError:\n")
            self.assertIn("except StopIteration", steps)
            for style, r, _ in convert_script(tmp, "steps", steps):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(r.stderr.count("taken on an exception"), 1, r.stderr)  # the RuntimeError's only

    @alternating
    def test_ranks_leave_before_a_nan_reaches_the_gradients(self):
        # A break ahead of the backward on this rank's own loss (sample 41, NaN, is in rank 1's
        # third batch): taken as rank 0's decision, rank 1 would go on to the backward and the
        # averaged gradients would make every rank's parameters NaN. Every rank leaves where any
        # rank's loss is NaN, as one process whose whole-batch loss would be NaN does.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

x = torch.randn(64, 4)
x[41] = float("nan")
loader = DataLoader(TensorDataset(x, torch.randn(64, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
steps = 0
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        if torch.isnan(loss):
            break
        with torch.enable_grad():
            loss.backward()
            opt.step()
            steps += 1
            if loss.item() < 1e-9:
                break
    else:
        continue
    break
print(f"steps {steps} finite {all(torch.isfinite(p).all().item() for p in model.parameters())}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "nan_break", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 16: the way out of the training loop at line 13, before its pass trains, is taken "
                              "on every rank where any rank takes it", r.stderr)
                # After the step (in the same block) nothing of training is left undone: rank 0
                # decides, as for any way out.
                self.assertIn("line 22: the way out of the training loop at line 13 is rank 0's decision", r.stderr)
                with open(out) as f:
                    self.assertIn("if _hoop_any(torch.isnan(loss)):", f.read())
            self.run_drawn(tmp, "nan_break", "leaving before a NaN",
                           lambda out: self.assertIn("[0] steps 2 finite True", out))

    def skipped_together(self, out):
        for epoch in range(3):  # rank 1's first batch of each epoch: skipped on both ranks
            self.assertIn(f"[0] epoch {epoch} skipped {epoch + 1} finite True", out)
        self.assertEqual(out.count("[0] pass"), 9, out)


    def test_gradients_set_by_hand_are_listed_under_ddp(self):
        # DDP averages only what backward() makes; a gradient the script sets from
        # torch.autograd.grad, anew or into the old tensor (p.grad.copy_(g)), stays this rank's
        # own, so --style ddp marks and lists it (Horovod style's optimizer averages either at
        # step(): horovod_extras_rank.py). Clearing a gradient or scaling the one backward made is
        # no such thing.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for xb, yb in loader:
        for p in model.parameters():
            p.grad = None
        loss = F.mse_loss(model(xb), yb)
        if epoch == 0:
            loss.backward()
            model.weight.grad = model.weight.grad / 2
        elif epoch == 1:
            grads = torch.autograd.grad(loss, list(model.parameters()))
            for p, g in zip(model.parameters(), grads):
                p.grad = g
        else:
            for p, g in zip(model.parameters(), torch.autograd.grad(loss, list(model.parameters()))):
                p.grad.copy_(g)
        opt.step()
"""
        ddp = ("a gradient set by hand: DistributedDataParallel averages only what backward() computes, so this "
               "rank's own stays (average it with dist.all_reduce, or use --style horovod)")
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, _ in convert_script(tmp, "by_hand", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                listed = [line for line in r.stderr.splitlines() if "a gradient set by hand" in line]
                self.assertEqual(listed, [f"  left for you: line 20: {ddp}", f"  left for you: line 23: {ddp}"]
                                 if style == "ddp" else [], r.stderr)


    @alternating
    def test_branches_that_communicate_are_taken_together(self):
        # Two branches on what each rank computed alone (its own labels), each with something
        # every rank must do alike in one way only: a backward and step (without agreement one
        # rank's allreduce meets the other's next), an evaluation whose metric is averaged (one
        # rank's average meets the other's gradients: "ranks disagree: count 1 here, 5 on rank 1").
        # Converted, training runs only where every rank's test lets it; rank 0 decides the other.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
loader = DataLoader(TensorDataset(torch.randn(256, 4), torch.randn(256, 1)), batch_size=8, shuffle=True)
val = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=16)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)


def evaluate():
    total = 0.0
    with torch.no_grad():
        for xb, yb in val:
            total += F.mse_loss(model(xb), yb).item()
    return total / len(val)


seen, next_eval, evals, steps = 0.0, 40.0, 0, 0
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        if yb.mean().item() > -0.3:
            loss.backward()
            opt.step()
            steps += 1
        seen += yb.abs().sum().item()
        if seen > next_eval:
            evals += 1
            print(f"val {evaluate():.4f}")
            next_eval += 40.0
        if epoch > 5:
            print("never")
print(f"evals {evals} steps {steps}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "branches", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 26: the branch on what each rank computed alone, whose ways differ in what every "
                              "rank must do alike, is taken together", r.stderr)
                self.assertIn("line 31: the branch on what each rank computed alone, whose ways differ in what every "
                              "rank must do alike, is rank 0's decision", r.stderr)
                self.assertNotIn("line 35:", r.stderr)  # a counter, and nothing to do alike
                with open(out) as f:
                    text = f.read()
                self.assertIn("if not _hoop_any(not (yb.mean().item() > -0.3)):", text)
                self.assertIn("if _hoop_agree(seen > next_eval):", text)
            # A phase from a list of constants (in place, or through a name so made) is the same on
            # every rank: its branch needs no agreement (else one small collective per batch).
            for style, r, _ in convert_script(tmp, "phases", PHASES):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertNotIn("the branch", r.stderr)
            self.run_drawn(tmp, "branches", "branches together", lambda out: self.assertRegex(
                out, r"\[0\] val [\d.]+\n(.|\n)*\[0\] evals [1-9]\d* steps [1-9]\d*\n"))

    def test_an_early_stopping_object_decides_together(self):
        # The tutorials' EarlyStopping class, called with each epoch's training loss (this rank's
        # own), sets its own early_stop, which the loop then reads: the object's state differs
        # between ranks though no name in the test is assigned in the loop.
        script = """
import numpy as np
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class EarlyStopping:
    def __init__(self, patience=2):
        self.patience, self.counter, self.best, self.early_stop = patience, 0, None, False

    def __call__(self, loss):
        if self.best is None or loss < self.best:
            self.best, self.counter = loss, 0
        else:
            self.counter += 1
            self.early_stop = self.counter >= self.patience


loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.5)
early_stopping = EarlyStopping()
for epoch in range(50):
    losses = []
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    early_stopping(np.average(losses))
    if early_stopping.early_stop:
        print("early stop at", epoch)
        break
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, _ in convert_script(tmp, "stopper", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 33: the way out of the training loop at line 24 is rank 0's decision", r.stderr)

    @alternating
    def test_a_split_drawn_again_while_training_is_rank_0s(self):
        # A k-fold loop draws a new split for each fold (random_split, a generator's permutation,
        # torch.randperm for a subset). Seeded alike at start-up, the ranks' generators part during
        # training (here on purpose: draws as many as each rank's own data says; an unseeded
        # default_rng even at the first fold), and each rank would split the next fold its own
        # way: one rank's validation set holding samples another trains on. Each such draw takes
        # rank 0's generator state first, also in a function the fold calls, and the device's for a
        # randperm on a device; the step loop's own permutation (mixup's, also through a function)
        # is left alone.
        script = """
import numpy as np
import torch
from torch.utils.data import DataLoader, Subset, TensorDataset, random_split

X = torch.randn(120, 4)
Y = X @ torch.randn(4, 1)
ds = TensorDataset(X, Y)
rng = np.random.default_rng()
dev = "cuda" if torch.cuda.is_available() else "cpu"


def subset_of(data):
    return Subset(data, torch.randperm(120)[:40].tolist())


def shuffled(n):
    return torch.randperm(n)


for fold in range(3):
    train_set, val_set = random_split(ds, [90, 30])
    picked = rng.permutation(120)[:60]
    extra = subset_of(ds)
    held = torch.randperm(120, device=dev)[:30].tolist()
    loader = DataLoader(train_set, batch_size=8, shuffle=True)
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(2):
        for x, y in loader:
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
            mix = torch.randperm(len(x))
            mix = shuffled(len(x))
            torch.rand(1 + int(x[0, 0] > 0))
    pass  # probe
"""
        probe = "print('split', list(val_set.indices), picked.tolist(), extra.indices, held, flush=True)"
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "folds", script, drawn(("horovod", "ddp"), "fold splits")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(out) as f:
                        text = f.read()
                    for gen, line in (("torch.default_generator", "train_set, val_set"), ("rng", "picked ="),
                                      ("torch.default_generator", "return Subset(data"),  # in what the fold calls
                                      ("torch.cuda.default_generators[torch.cuda.current_device()] if "
                                       "torch.cuda.is_available() else torch.default_generator", "held =")):
                        self.assertIn(f"    _hoop_align({gen})  # hoop-parallelize: rank 0's state: the same split on "
                                      f"every rank\n    {line}", text)
                    self.assertIn("            opt.step()\n            mix = torch.randperm(len(x))", text)
                    self.assertIn("def shuffled(n):\n    return torch.randperm(n)", text)  # called by the step loop
                    with open(out, "w") as f:
                        f.write(text.replace("pass  # probe", probe))
                    run = hooprun(2, [sys.executable, out], env={"HOOP_TIMEOUT": "30"}, timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    splits = [[line[4:] for line in run.output.splitlines() if line.startswith(f"[{r}] split")]
                              for r in range(2)]
                    self.assertEqual(len(splits[0]), 3, run.output)
                    self.assertEqual(splits[0], splits[1], run.output)
            # Batches drawn at random (nanoGPT's get_batch) are each rank's own on purpose: an
            # epoch's pool drawn there is not made rank 0's, which would have every rank draw alike.
            pool = script.replace("    picked = rng.permutation(120)[:60]\n", "").replace(
                "        for x, y in loader:\n", "        for it in range(8):\n"
                "            ix = torch.randint(len(extra), (8,))\n"
                "            x, y = X[ix], Y[ix]\n")
            for style, r, out in convert_script(tmp, "pool", pool, ("horovod",)):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("seeded apart on each rank", r.stderr)
                with open(out) as f:
                    self.assertNotIn("_hoop_align(", f.read())

if __name__ == "__main__":
    unittest.main()
