"""hoop-parallelize on how training loaders are written: several drawn from at once (zip, chain,
itertools.cycle: each split), and shuffle given by position or in a ** mapping (pytorch/examples'
mnist): the sampler takes it, the loader no longer does; a loader made anew each epoch sets its
sampler's epoch as it is made, and a `while` epoch loop sets it too; batches taken by index
(x[i * bs:...]) split by index, and a tensor's batches (X.split(B)) split by piece. Each conversion run
passes --check on 2 ranks (the cells under HOOPTEST_SHARE: support.drawn). Metrics counted in an
evaluation function over the loader it is given (the training loader: a share per rank; the
validation loader: whole) print as one process prints them; a progress print counts against the
rank's share. Skipped, saying so, without PyTorch."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

from support import alternating, convert_script, drawn, hooprun, parallelize, python_env

try:
    import torch  # noqa: F401
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")



class Loaders(unittest.TestCase):
    def printed_alone(self, tmp, name, script):
        """The lines script prints run as one process, written as NAME.py in tmp."""
        src = os.path.join(tmp, f"{name}.py")
        with open(src, "w") as f:
            f.write(script)
        alone = subprocess.run([sys.executable, src], env=python_env(), capture_output=True, text=True, timeout=120)
        self.assertEqual(alone.returncode, 0, alone.stderr)
        return alone.stdout.splitlines()

    @alternating
    def test_loaders_zipped_in_a_training_loop_are_all_split(self):
        # Semi-supervised and multi-task loops draw from several loaders at once: zip(labeled,
        # cycle(unlabeled)), chain(a, b). Each is split, else every rank takes the same unlabeled
        # batches; the evaluation loader beside stays whole.
        script = """
import itertools
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

labeled = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
unlabeled = DataLoader(TensorDataset(torch.randn(128, 4)), batch_size=16, shuffle=True)
extra = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
held_out = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for i, ((xb, yb), (ub,)) in enumerate(zip(labeled, itertools.cycle(unlabeled))):
        opt.zero_grad()
        (F.mse_loss(model(xb), yb) + 0.1 * model(ub).pow(2).mean()).backward()
        opt.step()
    for xb, yb in itertools.chain(extra, labeled):
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
    with torch.no_grad():
        for (xb, yb), (ub,) in zip(held_out, unlabeled):
            model(xb)
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src = os.path.join(tmp, "zipped.py")
            with open(src, "w") as f:
                f.write(script)
            r = parallelize([src, "-o", os.path.join(tmp, "out.py"), "-q", "--check"], tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            for name in ("labeled", "unlabeled", "extra"):
                self.assertIn(f"DataLoader '{name}' given a DistributedSampler", r.stderr)
                self.assertIn(f"{name}.sampler.set_epoch(epoch) each epoch", r.stderr)
            self.assertNotIn("'held_out'", r.stderr)
            self.assertIn("--check: passed", r.stderr)

    def test_loader_arguments_by_position_or_in_a_mapping(self):
        # DataLoader(ds, 8, True) shuffles by position; pytorch/examples' mnist passes
        # **train_kwargs, where 'shuffle': True arrives with the CUDA options. The sampler takes
        # the shuffle either way, and the loader no longer gets one (DataLoader refuses both).
        loaders = {
            "position": "loader = DataLoader(data, 8, True)",
            "mapping": "train_kwargs = {'batch_size': 8}\n"
                       "cuda_kwargs = {'num_workers': 0, 'pin_memory': False, 'shuffle': True}\n"
                       "train_kwargs.update(cuda_kwargs)\n"
                       "loader = DataLoader(data, **train_kwargs)",
            "mapping, then more": "loader = DataLoader(data, **{'batch_size': 8, 'shuffle': True}, drop_last=True)",
        }
        loop = """
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
"""
        head = ("import torch\nimport torch.nn.functional as F\nfrom torch.utils.data import DataLoader, "
                "TensorDataset\n\ndata = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))\n")
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for (what, make), style in drawn(zip(loaders.items(), ("horovod", "ddp", "horovod")), "loader shuffle"):
                with self.subTest(shuffle_by=what, style=style):
                    src, out = os.path.join(tmp, "loader.py"), os.path.join(tmp, "out.py")
                    with open(src, "w") as f:
                        f.write(head + make + "\n" + loop)
                    r = parallelize([src, "-o", out, "--style", style, "-q", "--check"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("DataLoader 'loader' given a DistributedSampler", r.stderr)
                    self.assertIn("loader.sampler.set_epoch(epoch) each epoch", r.stderr)
                    self.assertIn("--check: passed", r.stderr)
                    with open(out) as f:
                        text = f.read()
                    self.assertIn("shuffle=True" if what == "position" else ".get('shuffle', False))", text)


    @alternating
    def test_a_loader_made_in_each_epoch_takes_the_epoch(self):
        # A loader made anew in every pass of the epoch loop (its batch size grows): its sampler,
        # new too, would start each epoch at epoch 0, the same order every time.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    loader = DataLoader(data, batch_size=8 * (epoch + 1), shuffle=True)
    for xb, yb in loader:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src, out = os.path.join(tmp, "each_epoch.py"), os.path.join(tmp, "out.py")
            with open(src, "w") as f:
                f.write(script)
            r = parallelize([src, "-o", out, "-q"], tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("line 10: loader_sampler.set_epoch(epoch) as the loader is made, each epoch", r.stderr)
            self.assertNotIn("no epoch loop", r.stderr)
            with open(out) as f:
                text = f.read()
            made = text.index("loader = DataLoader(data, batch_size=8 * (epoch + 1), sampler=loader_sampler)")
            self.assertLess(made, text.index("    loader_sampler.set_epoch(epoch)"))

    def test_a_loader_iterated_once_has_no_epoch_to_set(self):
        # One pass over the loader (one epoch, at the top level or in a function called once from
        # there) has one order and no epoch to set: no note says it lacks one. Called twice, or
        # from a loop not recognised as the epoch loop (its target a tuple), the note stays.
        head = ("import torch\nfrom torch.utils.data import DataLoader, TensorDataset\n\n"
                "loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)\n"
                "model = torch.nn.Linear(4, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.05)\n\n\n"
                "def train():\n    for xb, yb in loader:\n        opt.zero_grad()\n"
                "        torch.nn.functional.mse_loss(model(xb), yb).backward()\n        opt.step()\n\n\n")
        callers = {"main()": (False, "def main():\n    train()\n\n\nif __name__ == '__main__':\n    main()\n"),
                   "top": (False, "train()\n"),
                   "tuple loop": (True, "for i, lr in enumerate([0.1, 0.05]):\n    train()\n"),
                   "twice": (True, "train()\ntrain()\n")}
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for what, (noted, tail) in callers.items():
                with self.subTest(called_by=what):
                    (_, r, _), = convert_script(tmp, "once", head + tail, styles=("horovod",))
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual("no epoch loop" in r.stderr, noted, r.stderr)


    @alternating
    def test_batches_taken_by_index_are_split(self):
        # "What is torch.nn really?" batches by hand: for i in range((n - 1) // bs + 1), slicing
        # x_train[start_i:end_i] with start_i = i * bs. Each rank takes every size()-th batch.
        # A step loop that only scales by its index (a warm-up) and draws its batches at random
        # is not a batch-index loop: its draws are seeded apart instead.
        by_index = """
import torch
import torch.nn.functional as F

x_train, y_train = torch.randn(200, 4), torch.randn(200, 1)
n, bs = x_train.shape[0], 16
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for i in range((n - 1) // bs + 1):
        start_i = i * bs
        end_i = start_i + bs
        xb, yb = x_train[start_i:end_i], y_train[start_i:end_i]
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad()
"""
        at_random = """
import torch
import torch.nn.functional as F

x_train, y_train = torch.randn(200, 4), torch.randn(200, 1)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for step in range(20):
    for group in opt.param_groups:
        group["lr"] = 0.05 * min(1.0, step * 0.1)
    ix = torch.randint(0, 200, (16,))
    loss = F.mse_loss(model(x_train[ix]), y_train[ix][:, :1])
    loss.backward()
    opt.step()
    opt.zero_grad()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for name, script in (("by_index", by_index), ("at_random", at_random)):
                src, out = os.path.join(tmp, f"{name}.py"), os.path.join(tmp, f"{name}_out.py")
                with open(src, "w") as f:
                    f.write(script)
                r = parallelize([src, "-o", out, "-q"] + (["--check"] if name == "by_index" else []), tmp)
                self.assertEqual(r.returncode, 0, r.stderr)
                with open(out) as f:
                    text = f.read()
                if name == "by_index":
                    self.assertIn("line 10: batches split between the ranks (every hvd.size()-th batch index", r.stderr)
                    self.assertIn("for i in range(hvd.rank(), ((n - 1) // bs + 1) // hvd.size() * hvd.size(), "
                                  "hvd.size()):", text)
                    self.assertIn("--check: passed", r.stderr)
                else:
                    self.assertNotIn("batches split", r.stderr)
                    self.assertIn("for step in range(20):", text)
                    self.assertIn("batches drawn at random", r.stderr)


    @alternating
    def test_while_epoch_loops_set_the_epoch(self):
        # An epoch loop written as `while epoch < N: ... epoch += 1`, or `while True:` with a
        # break: set_epoch at the top of each pass, with the counter, else one past the sampler's.
        # (The break case imports DataLoader under another name: it is a DataLoader still.)
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
epoch = 0
{head}
    for xb, yb in loader:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
    {tail}
"""
        cases = {"counter": ("while epoch < 3:", "epoch += 1", "loader.sampler.set_epoch(epoch)"),
                 "break": ("while True:", "if epoch == 0: break", "loader.sampler.set_epoch(loader.sampler.epoch + 1)")}
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for what, (head, tail, want) in cases.items():
                with self.subTest(loop=what):
                    src, out = os.path.join(tmp, f"{what}.py"), os.path.join(tmp, f"{what}_out.py")
                    text = script.replace("{head}", head).replace("{tail}", tail)
                    if what == "break":
                        text = text.replace("import DataLoader,", "import DataLoader as DL,").replace(
                            "loader = DataLoader(", "loader = DL(")
                    with open(src, "w") as f:
                        f.write(text)
                    r = parallelize([src, "-o", out, "-q"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn(f"line 10: {want} each epoch", r.stderr)
                    self.assertNotIn("no epoch loop", r.stderr)
                    with open(out) as f:
                        self.assertIn(f"{head}\n    {want}  # hoop-parallelize: a new order each epoch", f.read())


    @alternating
    def test_metrics_over_a_loader_given_to_an_evaluation_function(self):
        # accuracy(loader) under @torch.no_grad() and mean_loss(loader) with a no_grad block, each
        # called with the training loader (split: each rank counts its share) and the validation
        # loader (whole on every rank). Not halved, not doubled: with lr 0 the model stays as
        # made, and the 2 ranks print exactly what one process prints.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x, xv = torch.randn(256, 4), torch.randn(100, 4)
train_loader = DataLoader(TensorDataset(x, (x.sum(1) > 0).long()), batch_size=16, shuffle=True)
val_loader = DataLoader(TensorDataset(xv, (xv.sum(1) > 0).long()), batch_size=16)
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.0)


@torch.no_grad()
def accuracy(loader):
    correct = 0
    for xb, yb in loader:
        correct += (model(xb).argmax(1) == yb).sum().item()
    return correct / len(loader.dataset)


def mean_loss(loader):
    total = 0.0
    with torch.no_grad():
        for xb, yb in loader:
            total += F.cross_entropy(model(xb), yb).item()
    return total / len(loader)


for epoch in range(2):
    for xb, yb in train_loader:
        opt.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
    print(f"train {accuracy(train_loader):.4f} {mean_loss(train_loader):.4f} "
          f"val {accuracy(val_loader):.4f} {mean_loss(val_loader):.4f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            alone = self.printed_alone(tmp, "metrics", script)
            want = [[float(v) for v in re.findall(r"\d+\.\d+", line)] for line in alone]
            for style, r, out in convert_script(tmp, "metrics", script, drawn(["horovod", "ddp"], "evaluation functions")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("line 17: correct averaged over the ranks after the metric block (counted over a "
                                  "split loader)", r.stderr)
                    run = hooprun(2, [sys.executable, out], timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    got = [[float(v) for v in re.findall(r"\d+\.\d+", line)] for line in run.output.splitlines()
                           if line.startswith("[0] train")]
                    self.assertEqual(len(got), 2, run.output)
                    for g, w in zip(got, want):
                        for a, b in zip(g, w):
                            self.assertAlmostEqual(a, b, delta=2e-4, msg=run.output)

    @alternating
    def test_a_tensors_batches_are_split(self):
        # Batches as a tensor's pieces, no DataLoader: zip(X[perm].split(B), Y[perm].split(B)),
        # torch.chunk, tensor_split. Each rank takes every size()-th piece, as many on every rank
        # (9 pieces on 2 ranks: 4 each). A loop over str.split() pieces is no such loop.
        script = """
import torch
import torch.nn.functional as F

X, Y = torch.randn(72, 4), torch.randn(72, 1)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    perm = torch.randperm(len(X))
    count = 0
    for xb, yb in BATCHES:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
        count += 1
    print(f"epoch {epoch} batches {count}")
"""
        shapes = {"split": "zip(X[perm].split(8), Y[perm].split(8))",
                  "torch.chunk": "enumerate(zip(torch.chunk(X, 9), torch.chunk(Y, 9)))",
                  "tensor_split": "zip(torch.tensor_split(X, 9), Y.tensor_split(9))"}
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for (what, batches), style in zip(shapes.items(), ("horovod", "ddp", "horovod")):
                text = script.replace("BATCHES", batches)
                if what == "torch.chunk":
                    text = text.replace("for xb, yb in", "for i, (xb, yb) in")
                for style, r, out in convert_script(tmp, what.replace(".", "_"), text, (style,)):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("line 11: batches split between the ranks (every", r.stderr)
                    inner = batches[len("enumerate("):-1] if batches.startswith("enumerate(") else batches
                    with open(out) as f:
                        self.assertIn(f"(list({inner}))", f.read())
            # An epoch's order as index pieces: split alike on every rank, torch seeded alike.
            perm = script.replace("for xb, yb in BATCHES:", "for ix in torch.randperm(len(X)).split(8):\n"
                                  "        xb, yb = X[ix], Y[ix]")
            for style, r, out in convert_script(tmp, "perm", perm, ("ddp",)):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 11: batches split between the ranks (every", r.stderr)
                self.assertIn("seeded alike on every rank (rank 0's seed)", r.stderr)
            words = script.replace("BATCHES", "zip('a b c'.split(), [(X, Y)] * 3)").replace("xb, yb in",
                                                                                           "w, (xb, yb) in")
            for style, r, out in convert_script(tmp, "words", words, ("ddp",)):
                self.assertNotEqual(r.returncode, 0, r.stderr)
                self.assertIn("no training loop was recognised", r.stderr)
            for what, style in drawn(zip(shapes, ("horovod", "ddp", "horovod")), "a tensor's batches"):
                run = hooprun(2, [sys.executable, os.path.join(tmp, f"{what.replace('.', '_')}_{style}.py")],
                              env={"HOOP_TIMEOUT": "30"}, timeout=120)
                self.assertEqual(run.returncode, 0, run.output)
                self.assertIn("[0] epoch 1 batches 4", run.output)

    @alternating
    def test_progress_prints_count_against_the_share(self):
        # pytorch/examples' mnist prints [batch_idx * len(data)/len(train_loader.dataset)]: this
        # rank's count against the whole set, which would end at 1/N of it. Inside a loop over the
        # split loader its len(loader.dataset) is the share (len(loader.sampler)); outside such a
        # loop, over a loader not split, and in a ratio (averaged instead) it is left alone.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8)
val_loader = DataLoader(TensorDataset(torch.randn(16, 4), torch.randn(16, 1)), batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
print(f"training on {len(loader.dataset)} samples")
for epoch in range(2):
    for i, (xb, yb) in enumerate(loader):
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        print(f"epoch {epoch} [{(i + 1) * len(xb)}/{len(loader.dataset)}]")
    for xb, yb in val_loader:
        print(f"val {len(xb)}/{len(val_loader.dataset)}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "progress", script):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("line 17: the progress print's len(loader.dataset) is this rank's share", r.stderr)
                with open(out) as f:
                    text = f.read()
                self.assertIn('[{(i + 1) * len(xb)}/{len(loader.sampler)}]', text)
                self.assertIn('training on {len(loader.dataset)} samples', text)
                self.assertIn('val {len(xb)}/{len(val_loader.dataset)}', text)
            for style in drawn(("horovod", "ddp"), "progress against the share"):
                run = hooprun(2, [sys.executable, os.path.join(tmp, f"progress_{style}.py")],
                              env={"HOOP_TIMEOUT": "30"}, timeout=120)
                self.assertEqual(run.returncode, 0, run.output)
                self.assertIn("[0] epoch 1 [32/32]", run.output)

    @alternating
    def test_ratios_over_the_whole_data_batched_by_hand(self):
        # Batches by hand (range(0, N, B), range(K) by index, X.split(B), a permutation's pieces):
        # a loss summed over the rank's batches and divided by the whole data's batch count, an
        # accuracy divided by its size, print as one process prints them (lr 0: the same model on
        # every rank and in one process), not halved. The denominators are recognised by value:
        # N // B, a name holding it, the ceiling written two ways. A count made again
        # after the loop (an evaluation over the whole data) and a ratio over what the rank
        # counted itself are left as they are.
        script = """
import math
import torch
import torch.nn.functional as F

torch.manual_seed(0)
X = torch.randn(256, 4)
Y = (X.sum(1) > 0).long()
R = torch.randn(250, 4)
S = (R.sum(1) > 0).long()
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.0)
B = 32
n_batches = len(X) // B


def step(xb, yb):
    out = model(xb)
    loss = F.cross_entropy(out, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item(), (out.argmax(1) == yb).sum().item()


for epoch in range(2):
    total, correct = 0.0, 0
    for i in range(0, len(X), B):
        loss, right = step(X[i:i + B], Y[i:i + B])
        total += loss
        correct += right
    print(f"range {total / n_batches:.5f} {total / (len(X) // B):.5f} {correct / len(X):.5f}")
    total, seen = 0.0, 0
    for i in range(n_batches):
        start = i * B
        loss, right = step(X[start:start + B], Y[start:start + B])
        total += loss
        seen += B
    print(f"index {total / n_batches:.5f} {total * B / seen:.5f}")
    total, correct = 0.0, 0
    for xb, yb in zip(R.split(16), S.split(16)):
        loss, right = step(xb, yb)
        total += loss
        correct += right
    total /= math.ceil(len(R) / 16)
    print(f"split {total:.5f} {correct / len(R):.5f}")
    total, correct = 0.0, 0
    for ix in torch.randperm(len(R)).split(16):
        loss, right = step(R[ix], S[ix])
        total += loss
        correct += right
    print(f"perm {total / ((len(R) + 15) // 16):.5f} {correct / len(R):.5f}")
    correct = 0
    with torch.no_grad():
        for i in range(0, len(X), B):
            correct += (model(X[i:i + B]).argmax(1) == Y[i:i + B]).sum().item()
    print(f"whole {correct / len(X):.5f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            want = self.printed_alone(tmp, "by_hand", script)
            for style, r, out in convert_script(tmp, "by_hand", script, drawn(["horovod", "ddp"], "ratios by hand")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    for line, over in ((32, "n_batches"), (32, "len(X) // B"), (32, "len(X)"), (39, "n_batches"),
                                       (45, "math.ceil(len(R) / 16)"), (46, "len(R)"), (52, "(len(R) + 15) // 16"),
                                       (52, "len(R)")):
                        self.assertIn(f"line {line}: a ratio over {over} taken over this rank's share and averaged "
                                      "over the ranks", r.stderr)
                    self.assertNotIn("ratio over seen", r.stderr)
                    self.assertNotIn("line 57: a ratio", r.stderr)
                    run = hooprun(2, [sys.executable, out], env={"HOOP_TIMEOUT": "30"}, timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    got = [line[len("[0] "):] for line in run.output.splitlines() if line.startswith("[0] ")]
                    self.assertEqual([g.split()[0] for g in got], [w.split()[0] for w in want], run.output)
                    # the split's last, short, batch falls to one rank: its ratio's mean differs
                    # from one process's by a little; `total * B / seen` is rank 0's own mean
                    delta = {"split": 2e-3, "perm": 2e-3, "index": (2e-5, 0.02)}
                    for g, w in zip(got, want):
                        for k, (a, b) in enumerate(zip(g.split()[1:], w.split()[1:])):
                            d = delta.get(g.split()[0], 2e-5)
                            self.assertAlmostEqual(float(a), float(b), delta=d[k] if isinstance(d, tuple) else d,
                                                   msg=f"{g} on 2 ranks, {w} in one process")

    @alternating
    def test_swa_statistics_cover_every_rank_share(self):
        # SWA (torch.optim.swa_utils): update_bn over the split training loader averages each
        # rank's own batches; the converted script averages those over the ranks, so rank 0 holds
        # the statistics of every batch (lr 0: one process's model, whose mean over 16 batches of
        # 32 is the data's mean whatever the batches). SWALR's target rate and the cosine floor
        # are rates of their own: scaled like the optimizer's.
        script = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel, SWALR, update_bn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(512, 8) * 3 + 1
Y = (X[:, 0] + X[:, 1] > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
model = nn.Sequential(nn.Linear(8, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 2))
optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
swa_model = AveragedModel(model)
scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=10, eta_min=1e-4)
swa_scheduler = SWALR(optimizer, swa_lr=0.01)
for epoch in range(3):
    for xb, yb in loader:
        optimizer.zero_grad()
        F.cross_entropy(model(xb), yb).backward()
        optimizer.step()
    if epoch > 0:
        swa_model.update_parameters(model)
        swa_scheduler.step()
    else:
        scheduler.step()
update_bn(loader, swa_model)
bn = swa_model.module[1]
print(f"stats {bn.running_mean.sum().item():.6f} {bn.running_var.sum().item():.6f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            want = [float(v) for v in self.printed_alone(tmp, "swa", script)[0].split()[1:]]
            for style, r, out in convert_script(tmp, "swa", script, drawn(["horovod", "ddp"], "SWA statistics")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("line 27: the batch-norm statistics update_bn took over this rank's share averaged "
                                  "over the ranks", r.stderr)
                    self.assertIn("line 15: CosineAnnealingLR's eta_min scaled by the number of ranks", r.stderr)
                    self.assertIn("line 16: SWALR's swa_lr scaled by the number of ranks", r.stderr)
                    run = hooprun(2, [sys.executable, out], env={"HOOP_TIMEOUT": "30"}, timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    got = [float(v) for line in run.output.splitlines() if line.startswith("[0] stats")
                           for v in line.split()[2:]]
                    self.assertEqual(len(got), 2, run.output)
                    self.assertAlmostEqual(got[0], want[0], delta=1e-4, msg=run.output)
                    self.assertAlmostEqual(got[1], want[1], delta=0.02 * abs(want[1]), msg=run.output)


    def test_check_leaves_no_loader_workers_behind(self):
        # --check ends each rank after its steps (os._exit): a loader's worker processes were left
        # for hooprun to stop ("left 2 processes running"). They are ended first.
        script = """
import torch
from torch.utils.data import DataLoader, TensorDataset
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True,
                    num_workers=2, persistent_workers=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        opt.step()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            with open(os.path.join(tmp, "workers.py"), "w") as f:
                f.write(script)
            r = parallelize(["workers.py", "-o", "out.py", "-q", "--check"], tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("--check: passed", r.stderr)
            self.assertNotIn("processes running", r.stdout + r.stderr)

if __name__ == "__main__":
    unittest.main()
