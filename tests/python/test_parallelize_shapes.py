"""hoop-parallelize on scripts outside the plain shape of batches, a loss and step(): an optimizer
that evaluates the loss itself through a closure (LBFGS: its line search takes the same steps on
every rank), parameters updated by hand without an optimizer, a sampler that draws (weighted), a
loader given batch_sampler=BatchSampler(sampler, ...),
names the script binds that the converted script would use (`dist` as a distance or
a torch.distributions object), a loader on the line right after the imports. Skipped, saying so,
without PyTorch."""
import ast
import itertools
import os
import re
import subprocess
import sys
import tempfile
import unittest

from support import HERE, alternating, convert_script, drawn, hooprun, parallelize, python_env

try:
    import torch
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")

PROBE = os.path.join(HERE, "parallelize_probe.py")  # what each rank's optimizers ended with


class _Rank:
    """hvd's (and torch.distributed's) rank and size, for the helper's logic run outside a job."""

    def __init__(self, rank, size):
        self._rank, self._size = rank, size

    def rank(self):
        return self._rank

    def size(self):
        return self._size

    def get_rank(self):
        return self._rank

    def get_world_size(self):
        return self._size


class Shapes(unittest.TestCase):
    def run_alone(self, tmp, script):
        """What the script prints run as one process, in tmp."""
        src = os.path.join(tmp, "alone.py")
        with open(src, "w") as f:
            f.write(script)
        r = subprocess.run([sys.executable, src], cwd=tmp, capture_output=True, text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout

    def checked(self, tmp, name, script, style):
        """The path of script (written as NAME.py in tmp) converted in style, its --check passed."""
        src, out = os.path.join(tmp, f"{name}.py"), os.path.join(tmp, f"{name}_{style}.py")
        with open(src, "w") as f:
            f.write(script)
        r = parallelize([src, "-o", out, "--style", style, "-q", "--check"], tmp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--check: passed", r.stderr)
        return out

    @alternating
    def test_a_closure_taking_optimizer_stays_in_step(self):
        # LBFGS evaluates the loss itself through a closure, as often as its line search needs.
        # Each rank's own loss would have the ranks take different step lengths and stop after
        # different numbers of evaluations (DDP: the parameters drift apart, then a rank waits for
        # an allreduce the others never make; Horovod style: zero_grad() in the closure with
        # gradients in flight). The closure's loss is averaged (DDP: _hoop_closure; Horovod style:
        # step() does it), its rate left as it is, and the ranks end bitwise alike, stopping together.
        script = """
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

X = torch.randn(256, 8)
Y = X @ torch.randn(8, 1) + 0.1 * torch.randn(256, 1)
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
optimizer = torch.optim.LBFGS(model.parameters(), lr=1, line_search_fn="strong_wolfe")
for epoch in range(3):
    for xb, yb in loader:
        def closure():
            optimizer.zero_grad()
            loss = nn.functional.mse_loss(model(xb), yb)
            loss.backward()
            return loss
        loss = optimizer.step(closure)
    print(f"epoch {epoch} loss {loss.item():.5f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "lbfgs", script, drawn(("horovod", "ddp"), "LBFGS")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("line 10: LBFGS's learning rate left as it is", r.stderr)
                    self.assertIn("line 18: the closure's loss (and gradients) averaged over the ranks at each "
                                  "evaluation", r.stderr)
                    with open(out) as f:
                        text = f.read()
                    self.assertIn("lr=1,", text)
                    self.assertEqual("optimizer.step(_hoop_closure(closure))" in text, style == "ddp")
                    run = hooprun(2, [sys.executable, PROBE, os.path.join(tmp, f"probe-{style}"), out],
                                  env={"HOOP_TIMEOUT": "30"}, timeout=180)
                    self.assertEqual(run.returncode, 0, run.output)
                    self.assertEqual(run.output.count("[0] epoch "), 3, run.output)
                    a, b = (torch.load(os.path.join(tmp, f"probe-{style}.{k}.pt")) for k in (0, 1))
                    for k in a:
                        self.assertTrue(torch.equal(a[k], b[k]), f"{k} differs between the ranks")

    @alternating
    def test_names_the_script_binds_are_not_taken(self):
        # `dist` is a distance or a torch.distributions object in many scripts (a parameter, a
        # loop's variable). Horovod style never needs the name; DDP style imports torch.distributed
        # as _hoop_dist there. A script binding `hvd` is refused in Horovod style only.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

A, B = torch.randn(64, 8), torch.randn(64, 8)
loader = DataLoader(TensorDataset(A, B, (torch.rand(64) > 0.5).float()), batch_size=8, shuffle=True)
net = torch.nn.Linear(8, 4)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)


def contrastive(dist, label, margin=1.0):
    return (label * dist.pow(2) + (1 - label) * F.relu(margin - dist).pow(2)).mean()


for epoch in range(2):
    for a, b, label in loader:
        dist = F.pairwise_distance(net(a), net(b))
        loss = contrastive(dist, label)
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style in drawn(("horovod", "ddp"), "names bound by the script"):
                with self.subTest(style=style):
                    with open(self.checked(tmp, "contrastive", script, style)) as f:
                        text = f.read()
                    self.assertEqual("import torch.distributed as _hoop_dist" in text, style == "ddp")
            with_hvd = script.replace("dist = F.pairwise", "hvd = F.pairwise").replace("contrastive(dist,", "contrastive(hvd,")
            for style, r, out in convert_script(tmp, "with_hvd", with_hvd):
                with self.subTest(binds="hvd", style=style):
                    if style == "horovod":
                        self.assertNotEqual(r.returncode, 0)
                        self.assertIn("the script binds the name 'hvd', which the converted script needs", r.stderr)
                    else:
                        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_loader_right_after_the_imports_is_split_after_the_set_up(self):
        # No blank line between the imports and the DataLoader: its sampler, made on that line,
        # needs the process group the set-up starts after the imports, so the set-up goes first.
        # A script importing what the converted script imports (torch.distributed as dist, to ask
        # is_initialized(); DistributedSampler) keeps those names.
        script = """import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler
loader = DataLoader(TensorDataset(torch.randn(32, 4), torch.randn(32, 1)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
print("distributed" if dist.is_initialized() else "alone")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style in drawn(("horovod", "ddp"), "a loader right after the imports"):
                with self.subTest(style=style):
                    with open(self.checked(tmp, "first", script, style)) as f:
                        self.assertNotIn("_hoop_dist", f.read())


    @alternating
    def test_parameters_updated_by_hand(self):
        # No optimizer: each parameter updated in a loop over the model's parameters() (the
        # tutorials before torch.optim; word_language_model, in the corpus), here in a function
        # given the model (train(net)). DDP style wraps the model where it is made (net, not the
        # function's parameter); Horovod style broadcasts it there and averages the gradients after
        # backward. The rate beside p.grad is scaled by the number of ranks, as an optimizer's is.
        # --check counts the updates; the ranks end bitwise alike, the losses near one process's.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
X = torch.randn(512, 6)
Y = (X @ torch.randn(6, 1)).tanh()
loader = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
learning_rate = 0.05


def train(model):
    total = 0.0
    for xb, yb in loader:
        loss = F.mse_loss(model(xb), yb)
        loss.backward()
        with torch.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
                param.grad.zero_()
        total += loss.item()
    return total / len(loader)


def main():
    net = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1))
    for epoch in range(3):
        print(f"epoch {epoch} loss {train(net):.5f}")


if __name__ == "__main__":
    main()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            alone = [float(v) for v in re.findall(r"loss ([\d.]+)", self.run_alone(tmp, script))]
            for style in drawn(("horovod", "ddp"), "updates by hand"):
                with self.subTest(style=style):
                    out = self.checked(tmp, "by_hand", script, style)
                    with open(out) as f:
                        text = f.read()
                    size = "hvd.size()" if style == "horovod" else "dist.get_world_size()"
                    self.assertIn(f"param -= (learning_rate) * {size} * param.grad", text)
                    self.assertEqual("net = torch.nn.parallel.DistributedDataParallel(net)" in text, style == "ddp")
                    self.assertEqual("_hoop_average_gradients(model)" in text, style == "horovod")
                    run = hooprun(2, [sys.executable, PROBE, os.path.join(tmp, f"probe-{style}"), out],
                                  env={"HOOP_TIMEOUT": "30"}, timeout=180)
                    self.assertEqual(run.returncode, 0, run.output)
                    a, b = (torch.load(os.path.join(tmp, f"probe-{style}.{k}.pt")) for k in (0, 1))
                    self.assertTrue(a and all(torch.equal(a[k], b[k]) for k in a), "the ranks differ")
                    both = [float(v) for v in re.findall(r"\[0\] epoch \d loss ([\d.]+)", run.output)]
                    self.assertEqual(len(both), 3, run.output)
                    for x, y in zip(both, alone):
                        self.assertLess(abs(x - y), 0.1 * y, (both, alone))
            old = script.replace("param -= learning_rate * param.grad", "param.data.add_(-learning_rate, param.grad)")
            momentum = script.replace("param -= learning_rate * param.grad", "param.sub_(velocity(param))")
            for name, variant, said in (("old_add", old, "the rate of the update by hand of 'model' scaled"),
                                        ("momentum", momentum, "with no rate found beside p.grad: it is not scaled")):
                for style, r, out in convert_script(tmp, name, variant):
                    with self.subTest(variant=name, style=style):
                        self.assertEqual(r.returncode, 0, r.stderr)
                        self.assertIn(said, r.stderr)
                        if name == "old_add":
                            with open(out) as f:
                                self.assertIn("param.data.add_((-learning_rate) * ", f.read())

    @alternating
    def test_a_sampler_that_draws_is_shared_between_the_ranks(self):
        # WeightedRandomSampler (class imbalance) has no DistributedSampler to stand in for it: the
        # script's sampler is kept, and each epoch every rank makes the same draw and takes every
        # size()-th index of it, so the ranks together train on what one process draws: the same
        # generator's draw (seeded from the script's own generator's seed, plus the epoch), split
        # without overlap, as many on each rank, a new draw each epoch.
        script = """
import torch
from torch.utils.data import DataLoader, TensorDataset, WeightedRandomSampler

x = torch.randn(101, 4)
y = (x[:, 0] > 1.0).long()
weights = torch.where(y == 1, 5.0, 1.0)
loader = DataLoader(TensorDataset(x, y), batch_size=10,
                    sampler=WeightedRandomSampler(weights, 101, generator=torch.Generator().manual_seed(5)))
model = torch.nn.Linear(4, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
"""
        weights = torch.where(torch.arange(101) % 7 == 0, 5.0, 1.0)
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style in drawn(("horovod", "ddp"), "a sampler that draws"):
                with self.subTest(style=style):
                    with open(self.checked(tmp, "weighted", script, style)) as f:
                        text = f.read()
                    self.assertIn("sampler=_HoopDrawnShare(WeightedRandomSampler(weights, 101", text)
                    self.assertIn("loader.sampler.set_epoch(epoch)", text)
                    lines = text[text.index("class _HoopDrawnShare"):].splitlines()
                    helper = "\n".join([lines[0]] + list(itertools.takewhile(
                        lambda line: not line or line.startswith(" "), lines[1:])))
                    for epoch in range(2):
                        shares = []
                        for rank in range(2):  # the class's own logic, for each rank of 2
                            scope = {"torch": torch, "hvd": _Rank(rank, 2), "dist": _Rank(rank, 2)}
                            exec(helper, scope)
                            sampler = torch.utils.data.WeightedRandomSampler(
                                weights, 101, generator=torch.Generator().manual_seed(5))
                            share = scope["_HoopDrawnShare"](sampler)
                            share.set_epoch(epoch)
                            shares.append(list(share))
                            self.assertEqual(len(share), 50)
                        one = list(torch.utils.data.WeightedRandomSampler(
                            weights, 101, generator=torch.Generator().manual_seed(5 + epoch)))[:100]
                        self.assertEqual(shares[0], one[0::2])
                        self.assertEqual(shares[1], one[1::2])
                        if epoch == 0:
                            first = shares[0]
                    self.assertNotEqual(first, shares[0], "the same draw in every epoch")

    @alternating
    def test_a_batch_sampler_batches_this_ranks_share(self):
        # DataLoader(ds, batch_sampler=BatchSampler(sampler, B, drop_last)), or sampler= it with
        # batch_size=None: the BatchSampler is kept and the sampler it batches (here by name)
        # becomes a DistributedSampler over the same dataset, its epoch set through
        # loader.batch_sampler.sampler (the loader's own .sampler is a SequentialSampler over the
        # whole set then, and would be the wrong share for a ratio), or loader.sampler.sampler.
        # A batch sampler of the script's own stays refused.
        script = """
import torch
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

torch.manual_seed(1)
x = torch.randn(101, 4)
y = x @ torch.randn(4, 1)
ds = TensorDataset(x, y)
order = RandomSampler(ds)
loader = DataLoader(ds, batch_sampler=BatchSampler(order, batch_size=10, drop_last=False))
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    total = 0.0
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
        total += loss.item() * len(xb)
    print(f"epoch {epoch} loss {total / len(loader.dataset):.4f}")
"""
        forms = {"batch_sampler": script, "sampler": script.replace(  # a dataset that reads a batch at once
            "batch_sampler=BatchSampler(order, batch_size=10, drop_last=False)",
            "sampler=BatchSampler(order, batch_size=10, drop_last=False), batch_size=None")}
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, form in drawn(itertools.product(("horovod", "ddp"), forms), "a batch sampler"):
                with self.subTest(style=style, form=form):
                    with open(self.checked(tmp, "batches", forms[form], style)) as f:
                        text = f.read()
                    self.assertIn(f"loader.{form}.sampler.set_epoch(epoch)", text)
                    self.assertIn(f"total / len(loader.{form}.sampler)", text)
                    made = [line for line in text.splitlines() if line.startswith(("order = ", "loader = "))]
                    self.assertIn("order = DistributedSampler(ds, num_replicas=", made[0])
                    seen = {}
                    for rank in range(2):  # the converted lines, for each rank of 2
                        scope = {"hvd": _Rank(rank, 2), "dist": _Rank(rank, 2), "ds": torch.utils.data.TensorDataset(
                            torch.arange(101)), "DistributedSampler": torch.utils.data.DistributedSampler}
                        exec("from torch.utils.data import BatchSampler, DataLoader\n" + "\n".join(made), scope)
                        for epoch in range(3):
                            getattr(scope["loader"], form).sampler.set_epoch(epoch)
                            seen[rank, epoch] = [int(i) for (b,) in scope["loader"] for i in b]
                    for epoch in range(3):
                        self.assertEqual([len(seen[r, epoch]) for r in range(2)], [51, 51])
                        self.assertEqual(set(seen[0, epoch]) | set(seen[1, epoch]), set(range(101)))
                    self.assertNotEqual(seen[0, 0], seen[0, 1], "the same order in every epoch")
            own = script.replace("BatchSampler(order, batch_size=10, drop_last=False)",
                                 "[list(range(i, min(i + 10, 101))) for i in range(0, 101, 10)]")
            for style, r, _ in convert_script(tmp, "own", own):
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertIn("line 10: the training DataLoader 'loader' has a batch sampler of its own", r.stderr)

    @alternating
    def test_an_order_split_by_hand_is_rank_0s(self):
        # Batches taken by hand follow an order drawn each epoch: a permutation reordering the
        # data, a list or index array shuffled in place, torch.randperm(n).split(B). Seeded alike,
        # the ranks draw the same order at first, but what each draws as often as its own batches
        # say (here on purpose; dropout on the short last batch does it too) takes the generators
        # apart, and from the next epoch each rank would split an order of its own. Each order is
        # rank 0's on every rank instead.
        script = """
import random
import numpy as np
import torch

X = torch.randn(90, 4)
Y = X @ torch.randn(4, 1)
pairs = list(range(90))
idx = np.arange(90)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(3):
    perm = torch.randperm(len(X))
    Xs, Ys = X[perm], Y[perm]
    for i in range(0, len(Xs), 10):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(Xs[i:i + 10]), Ys[i:i + 10]).backward()
        opt.step()
    random.shuffle(pairs)
    for i in range(0, len(pairs), 10):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(X[pairs[i:i + 10]]), Y[pairs[i:i + 10]]).backward()
        opt.step()
    np.random.shuffle(idx)
    for i in range(0, len(idx), 10):
        b = torch.as_tensor(idx[i:i + 10])
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(X[b]), Y[b]).backward()
        opt.step()
    for b in torch.randperm(len(X)).split(10):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(X[b]), Y[b]).backward()
        opt.step()
        last = int(b[0])
    torch.rand(1 + last % 5)
    np.random.rand(1 + last % 3)
    random.random() if last % 2 else None
    pass  # probe
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style in drawn(("horovod", "ddp"), "an order split by hand"):
                with self.subTest(style=style):
                    with open(self.checked(tmp, "orders", script, style)) as f:
                        text = f.read()
                    self.assertIn("perm = _hoop_rank0s(torch.randperm(len(X)))", text)
                    self.assertIn("_hoop_align(random)", text)
                    self.assertIn("_hoop_align(np.random)", text)
                    self.assertIn("(list(_hoop_rank0s(torch.randperm(len(X))).split(10)))", text)
                    probe = os.path.join(tmp, f"probe_{style}.py")
                    with open(probe, "w") as f:
                        f.write(text.replace("pass  # probe", "print('order', perm[:4].tolist(), pairs[:4], "
                                                               "idx[:4].tolist(), flush=True)"))
                    run = hooprun(2, [sys.executable, probe], env={"HOOP_TIMEOUT": "30"}, timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    orders = [[line[4:] for line in run.output.splitlines() if line.startswith(f"[{r}] order")]
                              for r in range(2)]
                    self.assertEqual(len(orders[0]), 3, run.output)
                    self.assertEqual(orders[0], orders[1], run.output)

    @alternating
    def test_listed_files_come_in_one_order_on_every_host(self):
        # A dataset built from os.listdir (glob, pathlib's iterdir) indexes the files in the
        # filesystem's order, which another host's copy of the data need not share: the ranks'
        # DistributedSampler indices would then name different files, some trained on twice and
        # others skipped. Each rank here reads a copy of its own, made in another order on tmpfs
        # (which lists in the order files were made), as two hosts' copies may be; converted, the
        # listing is sorted and every file is taken once per epoch. Listings whose order nothing
        # reads (len, a membership test, a list sorted in place) are left as they are.
        script = """
import os
from pathlib import Path
import torch
from torch.utils.data import DataLoader, Dataset


class Files(Dataset):
    def __init__(self, root):
        self.paths = [os.path.join(root, f) for f in os.listdir(root) if f.endswith(".txt")]
        self.kinds = [p.name for p in Path(root).iterdir() if p.is_dir()]
        assert len(os.listdir(root)) >= len(self.paths) and "x.txt" not in os.listdir(root)
        names = os.listdir(root)
        names.sort()

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i]) as f:
            v = float(f.read())
        return torch.tensor([v]), torch.tensor([2 * v])


loader = DataLoader(Files(os.environ["FILES"]), batch_size=4, shuffle=True)
model = torch.nn.Linear(1, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.0001)
for epoch in range(2):
    seen = []
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
        seen += x.flatten().tolist()
    pass  # probe
"""
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp, \
                tempfile.TemporaryDirectory(prefix="hoop-par-", dir=shm) as copies:
            for rank, order in enumerate((range(24), reversed(range(24)))):
                os.makedirs(os.path.join(copies, f"copy{rank}"))
                for i in order:
                    with open(os.path.join(copies, f"copy{rank}", f"{i:02d}.txt"), "w") as f:
                        f.write(str(i))
            apart = os.listdir(os.path.join(copies, "copy0")) != os.listdir(os.path.join(copies, "copy1"))
            for style, r, out in convert_script(tmp, "listed", script, drawn(("horovod", "ddp"), "listed files")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(out) as f:
                        text = f.read()
                    self.assertIn("for f in sorted(os.listdir(root)) if", text)
                    self.assertIn("for p in sorted(Path(root).iterdir()) if", text)
                    self.assertIn("assert len(os.listdir(root)) >= len(self.paths) and \"x.txt\" not in "
                                  "os.listdir(root)", text)
                    self.assertIn("names = os.listdir(root)", text)
                    self.assertIn("os.listdir's files sorted", r.stderr)
                    if not apart:
                        self.skipTest(f"{copies} lists the two copies alike (not tmpfs): nothing to tell apart")
                    probe = os.path.join(tmp, f"probe_{style}.py")
                    with open(probe, "w") as f:
                        f.write(text.replace("pass  # probe", "print('seen', sorted(int(v) for v in seen), "
                                                               "flush=True)"))
                    run = hooprun(2, ["/bin/sh", "-c", f'FILES={copies}/copy$HOOP_RANK exec "$0" "$1"',
                                      sys.executable, probe], env={"HOOP_TIMEOUT": "30"}, timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    seen = [[ast.literal_eval(line.split("seen", 1)[1].strip()) for line in run.output.splitlines()
                             if line.startswith(f"[{r}] seen")] for r in range(2)]
                    self.assertEqual([len(s) for s in seen], [2, 2], run.output)
                    for epoch in range(2):
                        self.assertEqual(sorted(seen[0][epoch] + seen[1][epoch]), list(range(24)), run.output)

    def test_overlapping_changes_are_refused_not_written(self):
        # Two of the converter's replacements where one holds the other would write broken text:
        # the edits refuse them (the converter then writes nothing and says so). The same change
        # made twice is made once.
        code = """
import ast
from hoop._parallelize.edits import Edits, Refused
text = "y = f(g(1))\\n"
call = ast.parse(text).body[0].value
e = Edits(text)
e.replace(call.args[0], "h(2)")
e.replace(call.args[0], "h(2)")
print(e.apply(), end="")
e.replace(call, "F")
try:
    e.apply()
except Refused as r:
    print("refused:", r)
"""
        r = subprocess.run([sys.executable, "-c", code], env=python_env(), capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "y = f(h(2))", r.stdout)
        self.assertTrue(lines[1].startswith("refused: lines 1 and 1: two of hoop-parallelize's changes overlap"),
                        r.stdout)

if __name__ == "__main__":
    unittest.main()
