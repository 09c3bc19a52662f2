"""hoop-parallelize on training idioms the examples lack (issue 49): gradient clipping (norm and
value), gradient accumulation (step() on every k-th pass, k not dividing an epoch's batches),
AMP's GradScaler (unscale_, clip, step), OneCycleLR, ReduceLROnPlateau with early stopping, tqdm bars (rank 0's only), a DataLoader made in a helper function, and loaders returned as a tuple by one (the
shape of PyTorch's ImageNet example) and trained on by another function; and a training accuracy
over len(loader.dataset), printed as one process prints it, not divided by the ranks. Each script is converted in both styles and run on 2 ranks under a probe
(parallelize_probe.py) that saves every model's parameters per rank: they must be bitwise the
same on both ranks. Skipped, saying so, without PyTorch."""
import os
import subprocess
import sys
import tempfile
import unittest

from support import BUILD, HERE, hooprun, python_env

try:
    import torch
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")

TOOL = os.path.join(BUILD, "bin", "hoop-parallelize")
PROBE = os.path.join(HERE, "parallelize_probe.py")

HEAD = '''
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
'''
SCRIPTS = {
    # Clipped while the gradients were still being averaged in place: the ranks drifted apart.
    "clip_norm_onecycle": HEAD + '''
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=30)
for epoch in range(3):
    for xb, yb in train_loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        opt.step()
        sched.step()
    print("epoch", epoch, "loss", loss.item())
''',
    # 10 batches per rank and epoch, a step every 3rd: a short round at every epoch's end.
    "accumulation_clip_value": HEAD + '''
opt = torch.optim.AdamW(model.parameters(), lr=0.01)
accum = 3
for epoch in range(3):
    for step, (xb, yb) in enumerate(train_loader):
        loss = torch.nn.functional.mse_loss(model(xb), yb) / accum
        loss.backward()
        if (step + 1) % accum == 0:
            torch.nn.utils.clip_grad_value_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad()
    print("epoch", epoch, "loss", loss.item())
''',
    # AMP (on the GPU where there is one; the scaler is off on the CPU): unscale_, clip, step.
    "amp_unscale_clip": HEAD + '''
opt = torch.optim.SGD(model.parameters(), lr=0.05)
use_cuda = torch.cuda.is_available()
scaler = torch.cuda.amp.GradScaler(enabled=use_cuda)
for epoch in range(3):
    for xb, yb in train_loader:
        opt.zero_grad()
        with torch.autocast("cuda" if use_cuda else "cpu", enabled=use_cuda):
            loss = torch.nn.functional.mse_loss(model(xb), yb)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
    print("epoch", epoch, "loss", loss.item())
''',
    # A progress bar per epoch: drawn by rank 0 only. Where tqdm is not installed, a stand-in
    # that writes a line per bar (to stderr: print would be made rank 0's on its own).
    "tqdm_bars": '''
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset
try:
    from tqdm import tqdm
except ImportError:
    def tqdm(iterable, desc="", disable=False, **kwargs):
        if not disable:
            sys.stderr.write(f"progress bar {desc}\\n")
        return iterable

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for xb, yb in tqdm(train_loader, desc=f"epoch {epoch}"):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
''',
    # ReduceLROnPlateau and early stopping on a validation loss (the whole set on every rank):
    # every rank must take the same decisions, or they leave the loop at different epochs.
    "plateau_early_stop": '''
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x, xv = torch.randn(80, 8), torch.randn(40, 8)
y, yv = x.sum(1, keepdim=True), xv.sum(1, keepdim=True)
train_loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
val_loader = DataLoader(TensorDataset(xv, yv), batch_size=10)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
plateau = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
best, bad = float("inf"), 0
for epoch in range(30):
    model.train()
    for xb, yb in train_loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        opt.step()
    model.eval()
    val_loss = 0.0
    with torch.no_grad():
        for xb, yb in val_loader:
            val_loss += torch.nn.functional.mse_loss(model(xb), yb, reduction="sum").item()
    val_loss /= len(val_loader.dataset)
    plateau.step(val_loss)
    if val_loss < best - 1e-3:
        best, bad = val_loss, 0
    else:
        bad += 1
        if bad >= 3:
            print("early stop at epoch", epoch)
            break
print("final val loss", val_loss)
''',
    # The sampler is local to the helper: set_epoch goes through the loader's name in the loop.
    "loader_made_in_a_helper": """
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(80, 8)
y = x.sum(1, keepdim=True)


def make_loader(batch):
    ds = TensorDataset(x, y)
    loader = DataLoader(ds, batch_size=batch, shuffle=True)
    return loader


train_dl = make_loader(4)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for xb, yb in train_dl:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
    print("epoch", epoch, "loss", loss.item())
""",
    "loaders_returned_as_a_tuple": """
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x, xv = torch.randn(80, 8), torch.randn(40, 8)
y, yv = x.sum(1, keepdim=True), xv.sum(1, keepdim=True)


def get_loaders(bs):
    train_ds = TensorDataset(x, y)
    val_ds = TensorDataset(xv, yv)
    return DataLoader(train_ds, batch_size=bs, shuffle=True), DataLoader(val_ds, batch_size=20)


def train_one_epoch(model, loader, opt):
    for xb, yb in loader:
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(xb), yb)
        loss.backward()
        opt.step()
    return loss.item()


def main():
    train_loader, val_loader = get_loaders(4)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(3):
        loss = train_one_epoch(model, train_loader, opt)
        print("epoch", epoch, "loss", loss)
    return model


if __name__ == "__main__":
    model = main()
""",
}
# What each conversion must say it did (horovod style).
CHANGES = {
    "clip_norm_onecycle": ["OneCycleLR's max_lr scaled", "opt.synchronize() before the gradients are clipped"],
    "accumulation_clip_value": ["opt.synchronize() after each backward pass"],
    "amp_unscale_clip": ["opt.synchronize() before the gradients are unscaled (AMP)"],
    "plateau_early_stop": ["val_loss averaged over the ranks after the no_grad block"],
    "tqdm_bars": ["the progress bar drawn by rank 0 only", "train_loader.sampler.set_epoch(epoch)"],
    "loader_made_in_a_helper": ["DataLoader 'loader' given a DistributedSampler",
                                "train_dl.sampler.set_epoch(epoch) each epoch"],
    "loaders_returned_as_a_tuple": ["DataLoader built at line 13 given a DistributedSampler",
                                    "train_loader.sampler.set_epoch(epoch) each epoch"],
}


class Idioms(unittest.TestCase):
    def test_converted_ranks_end_bitwise_equal(self):
        with tempfile.TemporaryDirectory(prefix="hoop-par-idioms-") as tmp:
            for name, text in SCRIPTS.items():
                src = os.path.join(tmp, f"{name}.py")
                with open(src, "w") as f:
                    f.write(text)
                for style in ("horovod", "ddp"):
                    with self.subTest(script=name, style=style):
                        out = os.path.join(tmp, f"{name}_{style}.py")
                        r = subprocess.run([TOOL, src, "-o", out, "--style", style, "-q"], env=python_env(),
                                           capture_output=True, text=True, timeout=60)
                        self.assertEqual(r.returncode, 0, r.stderr)
                        if style == "horovod":
                            for said in CHANGES[name]:
                                self.assertIn(said, r.stderr)
                        if "onecycle" in name:
                            with open(out) as f:
                                self.assertIn("max_lr=(0.1) * ", f.read())
                        params = os.path.join(tmp, f"{name}_{style}")
                        run = hooprun(2, [sys.executable, PROBE, params, out], timeout=240, args=("--wdir", tmp))
                        self.assertEqual(run.returncode, 0, run.output)
                        if name == "tqdm_bars":
                            bars = [l for l in run.output.splitlines() if "epoch 1" in l]
                            self.assertTrue(bars and all(l.startswith("[0]") for l in bars), run.output)
                        a, b = (torch.load(f"{params}.{k}.pt") for k in (0, 1))
                        self.assertEqual(sorted(a), sorted(b))
                        self.assertTrue(a, "the probe found no model")
                        for k in a:
                            self.assertTrue(torch.equal(a[k], b[k]), f"{k} differs between the ranks by "
                                            f"{(a[k] - b[k]).abs().max().item()}")

    def test_accuracy_over_the_dataset_length_is_not_divided_by_the_ranks(self):
        script = """
import torch
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
x = torch.randn(96, 8)
y = (x.sum(1) > 0).long()
train_dl = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(4):
    correct = 0
    for xb, yb in train_dl:
        opt.zero_grad()
        out = model(xb)
        loss = torch.nn.functional.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        correct += (out.argmax(1) == yb).sum().item()
    print(f"epoch {epoch} train accuracy {100.0 * correct / len(train_dl.dataset):.2f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-idioms-") as tmp:
            src = os.path.join(tmp, "accuracy.py")
            with open(src, "w") as f:
                f.write(script)
            one = subprocess.run([sys.executable, src], env=python_env(), capture_output=True, text=True, timeout=120)
            self.assertEqual(one.returncode, 0, one.stderr)
            alone = float(one.stdout.split()[-1])
            self.assertGreater(alone, 80.0, one.stdout)
            for style in ("horovod", "ddp"):
                with self.subTest(style=style):
                    out = os.path.join(tmp, f"accuracy_{style}.py")
                    r = subprocess.run([TOOL, src, "-o", out, "--style", style, "-q"], env=python_env(),
                                       capture_output=True, text=True, timeout=60)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("averaged over the ranks", r.stderr)
                    run = hooprun(2, [sys.executable, out], timeout=240, args=("--wdir", tmp))
                    self.assertEqual(run.returncode, 0, run.output)
                    lines = [l for l in run.output.splitlines() if "train accuracy" in l]
                    self.assertEqual(len(lines), 4, run.output)  # rank 0's only
                    got = float(lines[-1].split()[-1])
                    # Each rank sees half the data per epoch; halved would be about 46.
                    self.assertLess(abs(got - alone), 10.0, f"2 ranks: {got}, one process: {alone}")


if __name__ == "__main__":
    unittest.main()
