"""hoop-parallelize on the six single-process scripts of examples/pytorch (DataLoader or manual
batching, argparse or constants, a main guard or not, LR schedulers, torch.save of a state dict,
logging, CSV and JSON files, test-loop printing): each converted (Horovod style, and DDP style
for three), run under hooprun on 2 ranks, learning, with its prints from rank 0 only and every
comment of the original kept; --check; and the refusals (nothing written). Skipped, saying so,
without PyTorch."""
import os
import re
import sys
import tempfile
import unittest

from support import HERE, alternating, convert_script, drawn, hooprun, parallelize

try:
    import torch  # noqa: F401
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")

EXAMPLES = os.path.join(HERE, "..", "..", "examples", "pytorch")
# example: (the metric its last line reports, what "learned" means for it)
LEARNS = {
    "dataloader_argparse.py": ("accuracy", 85.0),
    "manual_batches.py": ("loss", None),
    "fashion_mnist_cnn.py": ("accuracy", 75.0),
    "adam_csv.py": ("loss", None),
    "train_functions.py": ("loss", None),
    "json_metrics.py": ("accuracy", 95.0),
}
DDP_TOO = {"dataloader_argparse.py", "manual_batches.py", "train_functions.py"}

REFUSED = {
    "a custom optimizer factory": ("""
import torch
def make_optimizer(params):
    return MyOptimizer(params)
model = torch.nn.Linear(2, 1)
opt = make_optimizer(model.parameters())
for i in range(0, 100, 10):
    model(torch.ones(10, 2)).sum().backward()
    opt.step()
""", "no torch.optim optimizer"),
    "a sampler already set": ("""
import torch
from torch.utils.data import DataLoader, TensorDataset
data = TensorDataset(torch.ones(10, 2))
train_loader = DataLoader(data, sampler=list(range(9, -1, -1)))  # a plain or drawing one is replaced or shared
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in train_loader:
    model(x).sum().backward()
    opt.step()
""", "has a sampler of its own"),
    "one DataLoader call for training and evaluation": ("""
import torch
from torch.utils.data import DataLoader, TensorDataset


def loader(n):
    return DataLoader(TensorDataset(torch.ones(n, 2)), batch_size=2, shuffle=True)


train_loader, val_loader = loader(10), loader(4)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in train_loader:
    model(x).sum().backward()
    opt.step()
with torch.no_grad():
    print(sum(model(x).sum().item() for (x,) in val_loader))
""", "would split those too"),
    "no backward": ("""
import torch
model = torch.nn.Linear(2, 1)
print(model(torch.ones(1, 2)))
""", "no .backward()"),
    "transformers' Trainer": ("""
import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
Trainer(model=model, args=TrainingArguments("out"), train_dataset=None).train()
""", "the script trains through transformers' Trainer, which runs data-parallel by itself"),
    "gradients from autograd.grad only": ("""
import torch
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(10):
    loss = model(torch.ones(1, 2)).sum()
    for p, g in zip(model.parameters(), torch.autograd.grad(loss, list(model.parameters()))):
        p.grad = g
    opt.step()
""", "line 7: no .backward() call: the gradients come from torch.autograd.grad and are set by hand"),
    "already distributed": ("""
import torch
import torch.distributed as dist
dist.init_process_group("gloo")
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model(torch.ones(1, 2)).sum().backward()
""", "distributed already"),
    "an unrecognised training loop": ("""
import torch
data = torch.ones(10, 2)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)


def batches():  # a generator of its own, not a DataLoader
    for i in range(5):
        yield data[2 * i:2 * i + 2]


for x in batches():
    model(x).sum().backward()
    opt.step()
""", "no training loop was recognised"),
    "full-batch training (a GCN on its whole graph)": ("""
import torch
features, labels = torch.randn(30, 4), torch.randint(0, 2, (30,))
model = torch.nn.Linear(4, 2)
opt = torch.optim.Adam(model.parameters(), lr=0.01)
for epoch in range(20):
    opt.zero_grad()
    torch.nn.functional.cross_entropy(model(features)[:20], labels[:20]).backward()
    opt.step()
""", "line 6: the loop that trains takes neither a DataLoader"),
    "random batches from a generator of their own": ("""
import torch
data = torch.ones(100, 2)
g = torch.Generator().manual_seed(0)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(5):
    ix = torch.randint(100, (8,), generator=g)
    model(data[ix]).sum().backward()
    opt.step()
""", "a generator of their own"),
    "a loader method that makes the evaluation loader too": ("""
import torch
from torch.utils.data import DataLoader, TensorDataset


class Trainer:
    def __init__(self):
        self.model = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.1)
        self.train_loader = self.loader(torch.ones(8, 2))
        self.val_loader = self.loader(torch.zeros(8, 2))

    def loader(self, x):
        return DataLoader(TensorDataset(x), batch_size=2, shuffle=True)

    def fit(self):
        for (x,) in self.train_loader:
            self.model(x).sum().backward()
            self.opt.step()


Trainer().fit()
""", "also self.val_loader"),
    "a training loader over a stream": ("""
import torch
from torch.utils.data import DataLoader, IterableDataset


class Stream(IterableDataset):
    def __iter__(self):
        return iter(torch.ones(8, 2))


stream = Stream()
loader = DataLoader(stream, batch_size=2)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    model(x).sum().backward()
    opt.step()
""", "reads an IterableDataset"),
    "a script on Accelerate": ("""
import torch
from accelerate import Accelerator
accelerator = Accelerator()
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
model, opt = accelerator.prepare(model, opt)
for i in range(0, 100, 10):
    accelerator.backward(model(torch.ones(10, 2)).sum())
    opt.step()
""", "trains through accelerate"),
    "an optimizer that is not a plain assignment": ("""
import torch
model = torch.nn.Linear(2, 1)
opts = [torch.optim.SGD(model.parameters(), lr=0.1)]
for i in range(0, 100, 10):
    model(torch.ones(10, 2)).sum().backward()
    opts[0].step()
""", "plain `name ="),
    "DDP: a model that builds its optimizer and trains itself": ("""
import torch
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(2, 1)
        self.opt = torch.optim.SGD(self.parameters(), lr=0.1)
    def forward(self, x):
        return self.fc(x)
    def learn(self, x):
        self.opt.zero_grad()
        self(x).sum().backward()
        self.opt.step()
net = Net()
for i in range(0, 100, 10):
    net.learn(torch.ones(10, 2))
""", "trains itself through its own methods", "ddp"),  # horovod style converts it
    "Hogwild: training in processes the script starts": ("""
import torch
import torch.multiprocessing as mp
from multiprocessing import Pool


def prepare(i):
    return i * 2


def train(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for i in range(0, 100, 10):
        model(torch.ones(10, 2)).sum().backward()
        opt.step()


if __name__ == "__main__":
    with Pool(2) as pool:
        sizes = pool.map(prepare, range(4))  # preparing data in a pool is no reason to refuse
    model = torch.nn.Linear(2, 1)
    model.share_memory()
    workers = [mp.Process(target=train, args=(model,)) for _ in range(2)]
""", "line 23: the script trains in processes it starts itself (mp.Process"),
}



class Parallelize(unittest.TestCase):
    def convert_and_run(self, name, style):
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src = os.path.abspath(os.path.join(EXAMPLES, name))
            out = os.path.join(tmp, f"dist_{name}")
            r = parallelize([src, "-o", out, "--style", style], tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("+import hoop.torch", r.stdout)  # the diff
            self.assertIn("changed:", r.stderr)
            with open(src) as f:
                original = f.read()
            with open(out) as f:
                converted = f.read()
            for line in original.splitlines():  # every comment of the original is still there
                if line.strip().startswith("#"):
                    self.assertIn(line.strip(), converted)
            run = hooprun(2, [sys.executable, out], timeout=300, args=("--wdir", tmp))
            self.assertEqual(run.returncode, 0, run.output)
            finals = [l for l in run.output.splitlines() if " final " in f" {l}"]
            self.assertEqual(len(finals), 1, f"the final line once, from rank 0:\n{run.output}")
            self.assertTrue(finals[0].startswith("[0] final"), finals[0])
            metric, floor = LEARNS[name]
            got, first = (float(v) for v in re.findall(r"([0-9.]+)%?", finals[0].split("final ", 1)[1])[:2])
            if metric == "loss":
                self.assertLess(got, first / 2, finals[0])
            else:
                self.assertGreater(got, floor, finals[0])
                self.assertGreaterEqual(got, first - 1.0, finals[0])

    def test_examples_convert_run_and_learn(self):
        self.assertEqual(sorted(f for f in os.listdir(EXAMPLES) if f.endswith(".py")), sorted(LEARNS))
        cells = [(name, style) for name in sorted(LEARNS)
                 for style in (("horovod", "ddp") if name in DDP_TOO else ("horovod",))]
        for name, style in drawn(cells, "hoop-parallelize examples"):
            with self.subTest(example=name, style=style):
                self.convert_and_run(name, style)

    @alternating
    def test_check_runs_a_few_steps_on_two_ranks(self):
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src = os.path.abspath(os.path.join(EXAMPLES, "manual_batches.py"))
            r = parallelize([src, "-o", os.path.join(tmp, "out.py"), "--check", "--check-steps", "4", "-q"], tmp)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("[0] hoop-parallelize --check: 4 optimizer steps ran", r.stdout)
            self.assertIn("[1] hoop-parallelize --check: 4 optimizer steps ran", r.stdout)
            self.assertIn("hoop-parallelize --check: passed", r.stderr)
            self.assertIn("bitwise the same", r.stderr)

    @alternating
    def test_check_compares_the_ranks_parameters(self):
        # Noise from a per-process seed after each step: it runs, and the ranks drift apart.
        drifting = """
import os
import torch

model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
noise = torch.Generator().manual_seed(os.getpid())
for i in range(0, 64, 8):
    loss = model(torch.ones(8, 4)).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        model.weight.add_(torch.randn(model.weight.shape, generator=noise) * 1e-3)
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src, out = os.path.join(tmp, "drift.py"), os.path.join(tmp, "out.py")
            with open(src, "w") as f:
                f.write(drifting)
            r = parallelize([src, "-o", out, "--check", "--check-steps", "3", "-q"], tmp)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("the ranks' parameters differ", r.stderr)
            self.assertFalse(os.path.exists(out), "a failed check left its output where -o said")
            self.assertTrue(os.path.exists(out + ".failed"))

    def test_ranks_split_the_data_alike(self):
        # No seed of the script's own: each process would draw its own random_split, its own
        # shuffled index list, so the ranks' shares would overlap and take in the held-out part.
        unseeded = """
import random
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset, random_split

data = TensorDataset(torch.arange(400.0).reshape(200, 2), torch.zeros(200))
train_set, val_set = random_split(data, [160, 40])
order = list(range(200))
np.random.shuffle(order)
picked = random.sample(range(1000), 5)
loader = DataLoader(train_set, batch_size=10, shuffle=True)
model = torch.nn.Linear(2, 1)
opt = torch.optim.SGD(model.parameters(), lr=1e-6)
for x, y in loader:
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "split", unseeded, drawn(["horovod", "ddp"],
                                                                              "hoop-parallelize split alike")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(out, "a") as f:  # each rank writes what it drew
                        f.write("\nwith open(f'drawn.{os.environ[\"RANK\"]}', 'w') as f:\n"
                                "    f.write(repr((train_set.indices, order, picked)))\n")
                    with open(out) as f:
                        text = f.read()
                    with open(out, "w") as f:
                        f.write("import os\n" + text)
                    run = hooprun(2, [sys.executable, out], timeout=120, args=("--wdir", tmp))
                    self.assertEqual(run.returncode, 0, run.output)
                    with open(os.path.join(tmp, "drawn.0")) as a, open(os.path.join(tmp, "drawn.1")) as b:
                        self.assertEqual(a.read(), b.read(), "the ranks drew different splits")
                    self.assertIn("seeded alike on every rank", r.stderr)

    @alternating
    def test_a_script_that_never_binds_torch_gets_it(self):
        # `from torch import nn, optim` lines alone bind no `torch`, which the converted script's
        # own lines (seeding, the DDP wrap, the skip agreement) use: a NameError on every rank.
        script = """
from torch import isfinite, nn, optim, randn
from torch.nn import functional as F
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(randn(64, 4), randn(64, 1)), batch_size=8, shuffle=True)
model = nn.Linear(4, 1)
opt = optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        loss = F.mse_loss(model(xb), yb)
        if not isfinite(loss):
            continue
        loss.backward()
        opt.step()
print("trained")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "from_torch", script, drawn(["horovod", "ddp"],
                                                                                 "hoop-parallelize binds torch")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    run = hooprun(2, [sys.executable, out], timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    self.assertIn("[0] trained", run.output)

    @alternating
    def test_only_loops_that_train_are_split(self):
        # The training loop's backward runs in a helper it calls; the evaluation loop calls the
        # same helper without an optimizer, under no_grad(): that loader stays whole.
        script = """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

data = TensorDataset(torch.randn(64, 4), torch.randn(64, 1))
fit_dl = DataLoader(data, batch_size=8, shuffle=True)
check_dl = DataLoader(data, batch_size=8)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)


def loss_batch(xb, yb, opt=None):
    loss = F.mse_loss(model(xb), yb)
    if opt is not None:
        loss.backward()
        opt.step()
        opt.zero_grad()
    return loss.item()


for epoch in range(2):
    for xb, yb in fit_dl:
        loss_batch(xb, yb, opt)
    with torch.no_grad():
        for xb, yb in check_dl:
            loss_batch(xb, yb)
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src = os.path.join(tmp, "helper.py")
            with open(src, "w") as f:
                f.write(script)
            for style in ("horovod", "ddp"):
                r = parallelize([src, "-o", os.path.join(tmp, f"out_{style}.py"), "--style", style, "-q"], tmp)
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("DataLoader 'fit_dl' given a DistributedSampler", r.stderr)
                self.assertNotIn("'check_dl'", r.stderr)

    @alternating
    def test_ddp_finds_unused_parameters_only_where_forward_leaves_layers_out(self):
        # Each model is trained by the same loop; DDP is asked to find unused parameters exactly
        # where forward() (with the methods of self it calls) never reaches a layer that may hold
        # parameters. A loss or an activation kept unused costs nothing; forward reaching layers
        # through self.children() counts as using them all.
        head = "import torch\nimport torch.nn as nn\n\n\n"
        loop = """

data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(16, 8)), batch_size=4)
model = {make}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for (x,) in data:
    opt.zero_grad()
    model(x).sum().backward()
    opt.step()
"""
        models = {
            "all_used": ("""class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 2)
        self.drop, self.loss_fn, self.width = nn.Dropout(0.1), nn.CrossEntropyLoss(), int("8")

    def body(self, x):
        return self.drop(self.a(x))

    def forward(self, x):
        return self.b(self.body(x))
""", "Net()", None),
            "decoder_for_generate": ("""class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(8, 2)
        self.dec = nn.Linear(2, 8)

    def forward(self, x):
        return self.enc(x)

    def generate(self, z):
        return self.dec(z)


def build():
    return Net().to("cpu")
""", "build()", "Net.dec"),
            "inner_block": ("""class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.spare = nn.Linear(8, 8), nn.Parameter(torch.zeros(8))

    def forward(self, x):
        return self.fc(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x
""", "Net()", "Block.spare"),
            "children": ("""class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x):
        for layer in self.children():
            x = layer(x)
        return x
""", "Net()", None),
        }
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for name, (classes, make, unused) in models.items():
                with self.subTest(model=name):
                    src, out = os.path.join(tmp, f"{name}.py"), os.path.join(tmp, f"{name}_ddp.py")
                    with open(src, "w") as f:
                        f.write(head + classes + loop.format(make=make))
                    r = parallelize([src, "-o", out, "--style", "ddp", "-q"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(out) as f:
                        text = f.read()
                    self.assertEqual("find_unused_parameters=True" in text, unused is not None, text)
                    if unused:
                        self.assertIn(f"finding unused parameters ({unused} not used by forward)", r.stderr)

    def test_optimizer_classes_chosen_by_name_condition_or_table(self):
        # Configurable scripts pick the optimizer's class at run time: by name from torch.optim,
        # by a condition, from a table of classes (at the top level, used in a function), or give
        # its settings in a mapping (**settings['optimizer'], its 'lr' scaled). Each is
        # a torch.optim optimizer: its rate scaled, wrapped or its model wrapped, and --check finds
        # the same parameters on 2 ranks. The DDP wrap inside main() of the top level's model
        # declares it global (else `model = DDP(model)` makes it main()'s, unbound at first).
        head = """
import argparse
import torch
import torch.optim as optim
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

TABLE = {"sgd": optim.SGD, "adam": optim.Adam}
parser = argparse.ArgumentParser()
parser.add_argument("--optimizer", default="Adam")
args = parser.parse_args()
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)


def main():
    {make}
    for epoch in range(2):
        for xb, yb in loader:
            opt.zero_grad()
            F.mse_loss(model(xb), yb).backward()
            opt.step()


main()
"""
        makes = {"getattr": "opt = getattr(torch.optim, args.optimizer)(model.parameters(), lr=0.01)",
                 "condition": "cls = optim.Adam if args.optimizer == 'Adam' else optim.SGD\n"
                              "    opt = cls(model.parameters(), lr=0.01)",
                 "table": "opt = TABLE[args.optimizer.lower()](model.parameters(), lr=0.01)",
                 "rate in a mapping": "settings = {'optimizer': {'lr': 0.01, 'momentum': 0.9}}\n"
                                      "    opt = optim.SGD(model.parameters(), **settings['optimizer'])",
                 "torch.optim under another name": "import torch.optim as topt\n"
                                                   "    opt = topt.Adam(model.parameters(), lr=0.01)"}
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for (what, make), style in drawn(zip(makes.items(), ("horovod", "ddp", "horovod", "ddp", "horovod")),
                                             "optimizer classes"):
                with self.subTest(chosen_by=what, style=style):
                    src, out = os.path.join(tmp, f"{what}.py"), os.path.join(tmp, f"{what}_{style}.py")
                    with open(src, "w") as f:
                        f.write(head.replace("{make}", make))
                    r = parallelize([src, "-o", out, "--style", style, "-q", "--check"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("learning rate scaled by the number of ranks", r.stderr)
                    self.assertIn("--check: passed", r.stderr)

    @alternating
    def test_refusals_write_nothing(self):
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for what, (text, why, *style) in REFUSED.items():
                with self.subTest(refused=what):
                    src, out = os.path.join(tmp, "script.py"), os.path.join(tmp, "out.py")
                    with open(src, "w") as f:
                        f.write(text)
                    r = parallelize([src, "-o", out] + (["--style", style[0]] if style else []), tmp)
                    self.assertEqual(r.returncode, 2, r.stderr)
                    self.assertIn("refused:", r.stderr)
                    self.assertIn(why, r.stderr)
                    self.assertFalse(os.path.exists(out))
            r = parallelize([src, "-o", src], tmp)
            self.assertEqual(r.returncode, 2)
            self.assertIn("overwrite", r.stderr)
            r = parallelize([os.path.join(tmp, "missing.py"), "-o", out], tmp)
            self.assertEqual(r.returncode, 2)
            self.assertIn("cannot read", r.stderr)


if __name__ == "__main__":
    unittest.main()
