"""hoop-parallelize on what places, reports and keeps a script's work: GPUs the script names by
number (each made the rank's own; several left as written); experiment trackers (W&B, MLflow:
rank 0's only, run on 2 ranks with recording stand-ins); loggers under any name; files written
through methods (to_csv, write_text) or removed (shutil.rmtree) by rank 0 alone; copies of the
model (an SWA average, a deepcopy, torch.save of it) made of the plain model under DDP, so what
they save is what one process saves. How the ranks take decisions together:
test_parallelize_agree.py. Skipped, saying so, without PyTorch."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

from support import alternating, convert_script, drawn, hooprun, parallelize, python_env

try:
    import torch
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")


class PlacesAndReports(unittest.TestCase):
    @alternating
    def test_gpus_named_by_number_become_each_ranks_own(self):
        # PyTorch's ImageNet example picks its GPU by --gpu: set_device(args.gpu),
        # model.cuda(args.gpu), images.cuda(args.gpu, non_blocking=True), and the rest of the
        # ways to say "GPU i". Converted, each means this rank's GPU (else every rank of a host
        # crowds onto GPU args.gpu); a script that names several GPUs is left as written.
        script = """
import argparse
import os
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--gpu", type=int, default=0)
args = parser.parse_args()
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "0,1")
torch.cuda.set_device(args.gpu)
dev = torch.device("cuda", args.gpu)
named = torch.device(type="cuda", index=args.gpu)
strings = [f"cuda:{args.gpu}", "cuda:{}".format(args.gpu), "cuda:%d" % args.gpu, "cuda:" + str(args.gpu)]
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 2)), batch_size=8, shuffle=True)
model = nn.DataParallel(nn.Linear(4, 2)).cuda(args.gpu)
state = torch.load("m.pt", map_location=lambda storage, loc: storage.cuda(args.gpu)) if False else None
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for xb, yb in loader:
        xb, yb = xb.cuda(args.gpu, non_blocking=True), yb.to(args.gpu)
        with torch.cuda.device(args.gpu):
            loss = ((model(xb) - yb.cuda(device=args.gpu)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    print(f"epoch {epoch} on cuda:{args.gpu} loss {loss.item()}")
"""
        several = """
import torch
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(64, 4)), batch_size=8, shuffle=True)
first, second = torch.nn.Linear(4, 4).to("cuda:0"), torch.nn.Linear(4, 1).cuda(1)
opt = torch.optim.SGD(first.parameters(), lr=0.1)
for epoch in range(2):
    for (xb,) in loader:
        opt.zero_grad()
        second(first(xb.cuda(0)).to("cuda:1")).sum().backward()
        opt.step()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            ddp_local = "int(__import__('os').environ.get('LOCAL_RANK', 0))"
            for style, local in (("horovod", "hvd.local_rank()"), ("ddp", ddp_local)):
                with self.subTest(style=style):
                    src, out = os.path.join(tmp, "gpu.py"), os.path.join(tmp, f"gpu_{style}.py")
                    with open(src, "w") as f:
                        f.write(script)
                    r = parallelize([src, "-o", out, "--style", style, "-q"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    with open(out) as f:
                        text = f.read()
                    compile(text, out, "exec")
                    code = [line.split("#")[0] for line in text.splitlines()]
                    # Only the argument's definition and the message still name args.gpu.
                    self.assertEqual([c.strip()[:21] for c in code if "args.gpu" in c], ["_hoop_on_rank0(print)"], text)
                    for want in ('dev = torch.device("cuda")', 'named = torch.device(type="cuda")',
                                 'strings = ["cuda", "cuda", "cuda", "cuda"]', ".cuda()\n",
                                 "storage.cuda())", "xb.cuda(non_blocking=True), yb.to(\"cuda\")",
                                 "yb.cuda()", f"torch.cuda.set_device({local})", f"torch.cuda.device({local})"):
                        self.assertIn(want, text)
                    self.assertEqual(r.stderr.count("made this rank's GPU"), 12, r.stderr)
                    self.assertIn('.to(args.gpu) made .to("cuda")', r.stderr)
                    self.assertIn("sets CUDA_VISIBLE_DEVICES", r.stderr)
                    src, out = os.path.join(tmp, "several.py"), os.path.join(tmp, f"several_{style}.py")
                    with open(src, "w") as f:
                        f.write(several)
                    r = parallelize([src, "-o", out, "--style", style, "-q"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("names GPUs [0, 1] by number", r.stderr)
                    with open(out) as f:
                        text = f.read()
                    for kept in ('.to("cuda:0")', ".cuda(1)", "xb.cuda(0)", '.to("cuda:1")'):
                        self.assertIn(kept, text)

    def test_experiment_trackers_log_from_rank_0_only(self):
        # Weights & Biases and MLflow (stand-ins here, on PYTHONPATH: each call is written down
        # with the rank that made it): imported at the top and inside main(), a run object, a
        # context manager. Converted and run on 2 ranks, only rank 0 makes a run and logs.
        stubs = {
            "_tracker_record.py": "import os\n"
                                  "def record(what):\n"
                                  "    with open(os.environ['TRACKER_LOG'], 'a') as f:\n"
                                  "        f.write(os.environ.get('HOOP_RANK', '-') + ' ' + what + '\\n')\n",
            "wandb/__init__.py": "from _tracker_record import record\n"
                                 "config = {}\n"
                                 "class Run:\n"
                                 "    def log(self, d): record('run.log')\n"
                                 "def init(**kw): record('init'); return Run()\n"
                                 "def log(d, **kw): record('log')\n"
                                 "def watch(m, **kw): record('watch')\n"
                                 "def finish(): record('finish')\n",
            "mlflow/__init__.py": "import contextlib\n"
                                  "from _tracker_record import record\n"
                                  "@contextlib.contextmanager\n"
                                  "def start_run(**kw):\n"
                                  "    record('start_run'); yield None\n"
                                  "def log_metric(k, v, step=None): record('log_metric')\n",
        }
        script = """
import torch
import torch.nn.functional as F
import wandb
from torch.utils.data import DataLoader, TensorDataset


def main():
    import mlflow
    run = wandb.init(project="demo", config={"lr": 0.1})
    lr = wandb.config.get("lr", 0.1)
    loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
    model = torch.nn.Linear(4, 1)
    wandb.watch(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with mlflow.start_run():
        for epoch in range(2):
            for xb, yb in loader:
                opt.zero_grad()
                loss = F.mse_loss(model(xb), yb)
                loss.backward()
                opt.step()
                run.log({"loss": loss.item()})
            wandb.log({"epoch": epoch})
            mlflow.log_metric("loss", loss.item(), step=epoch)
    wandb.finish()


if __name__ == "__main__":
    main()
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for name, text in stubs.items():
                os.makedirs(os.path.dirname(os.path.join(tmp, "stubs", name)), exist_ok=True)
                with open(os.path.join(tmp, "stubs", name), "w") as f:
                    f.write(text)
            src = os.path.join(tmp, "track.py")
            with open(src, "w") as f:
                f.write(script)
            for style in drawn(("horovod", "ddp"), "trackers"):
                with self.subTest(style=style):
                    out, log = os.path.join(tmp, f"track_{style}.py"), os.path.join(tmp, f"{style}.log")
                    r = parallelize([src, "-o", out, "--style", style, "-q"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("line 4: experiment tracking (wandb) made rank 0's", r.stderr)
                    self.assertIn("line 9: experiment tracking (mlflow) made rank 0's", r.stderr)
                    self.assertIn("line 11: wandb.config read", r.stderr)
                    env = {"TRACKER_LOG": log,
                           "PYTHONPATH": os.path.join(tmp, "stubs") + os.pathsep + python_env()["PYTHONPATH"]}
                    run = hooprun(2, [sys.executable, out], env=env, timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    with open(log) as f:
                        calls = f.read().split()
                    self.assertEqual(sorted(calls[1::2]), sorted(["init", "watch", "start_run", "log", "log",
                                                                  "log_metric", "log_metric", "finish"]
                                                                 + ["run.log"] * 8), calls)
                    self.assertEqual(set(calls[0::2]), {"0"}, calls)


    @alternating
    def test_ddp_copies_of_the_model_are_of_the_plain_model(self):
        # torch.optim.swa_utils.AveragedModel(model) and copy.deepcopy(model) after the DDP wrap
        # would copy the wrapper: the averaged model's checkpoint would read module.module.0.weight;
        # torch.save(model) would pickle the wrapper, which loads only where a process group is;
        # named_parameters() (a TensorBoard histogram's tags) would read module.0.weight.
        script = """
import copy
import sys
import torch
import torch.nn.functional as F
from torch.optim.swa_utils import AveragedModel
from torch.utils.data import DataLoader, TensorDataset

loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
swa_model = AveragedModel(model)
best = copy.deepcopy(model)
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
    swa_model.update_parameters(model)
torch.save({"swa": swa_model.state_dict(), "best": best.state_dict(),
            "names": dict.fromkeys(name for name, _ in model.named_parameters())}, sys.argv[1])
torch.save(model, sys.argv[1] + ".whole")
torch.save({"model": model, "epochs": 2}, sys.argv[1] + ".dict")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src, out = os.path.join(tmp, "swa.py"), os.path.join(tmp, "swa_ddp.py")
            with open(src, "w") as f:
                f.write(script)
            r = parallelize([src, "-o", out, "--style", "ddp", "-q"], tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("AveragedModel(model) read from the wrapped model's .module", r.stderr)
            self.assertIn("copy.deepcopy(model) read from the wrapped model's .module", r.stderr)
            self.assertIn("torch.save(model) read from the wrapped model's .module", r.stderr)
            self.assertIn("torch.save(... model ...) read from the wrapped model's .module", r.stderr)
            self.assertIn("model.named_parameters read from the wrapped model's .module", r.stderr)
            alone = subprocess.run([sys.executable, src, os.path.join(tmp, "alone.pt")], env=python_env(),
                                   capture_output=True, text=True, timeout=120)
            self.assertEqual(alone.returncode, 0, alone.stderr)
            run = hooprun(2, [sys.executable, out, os.path.join(tmp, "ranks.pt")], timeout=120)
            self.assertEqual(run.returncode, 0, run.output)
            keys = {name: {k: sorted(v) for k, v in torch.load(os.path.join(tmp, name)).items()}
                    for name in ("alone.pt", "ranks.pt")}
            self.assertEqual(keys["ranks.pt"], keys["alone.pt"])
            # Saved whole, the plain model: this process, with no process group, loads it.
            for saved in ("ranks.pt.whole", "ranks.pt.dict"):
                got = torch.load(os.path.join(tmp, saved), weights_only=False)
                self.assertIsInstance(got if saved.endswith("whole") else got["model"], torch.nn.Sequential)


    def test_method_writers_are_rank_0s(self):
        # Files written through methods (a DataFrame's to_csv, a Path's write_text) and a results
        # folder emptied with shutil.rmtree at the start: rank 0 alone, so each line is written
        # once and no rank removes what rank 0 has just written.
        script = """
import os
import pathlib
import shutil
import sys
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Table:
    def __init__(self, row):
        self.row = row

    def to_csv(self, path):  # as a library would write it: nothing here tells a file is written
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        os.write(fd, (self.row + "\\n").encode())
        os.close(fd)


out = sys.argv[1]
if os.path.exists(out):
    shutil.rmtree(out)
os.makedirs(out, exist_ok=True)
loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(3):
    for xb, yb in loader:
        opt.zero_grad()
        F.mse_loss(model(xb), yb).backward()
        opt.step()
    Table(f"epoch {epoch}").to_csv(os.path.join(out, "log.csv"))
pathlib.Path(out, "done.txt").write_text("done\\n")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src = os.path.join(tmp, "writes.py")
            with open(src, "w") as f:
                f.write(script)
            for style in drawn(("horovod", "ddp"), "method writers"):
                with self.subTest(style=style):
                    out, results = os.path.join(tmp, f"writes_{style}.py"), os.path.join(tmp, f"results_{style}")
                    r = parallelize([src, "-o", out, "--style", style, "-q"], tmp)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("(lines 23, 24, 33, 34)", r.stderr)
                    os.makedirs(results)
                    with open(os.path.join(results, "old.txt"), "w") as f:
                        f.write("from before\n")
                    run = hooprun(2, [sys.executable, out, results], timeout=120)
                    self.assertEqual(run.returncode, 0, run.output)
                    self.assertEqual(sorted(os.listdir(results)), ["done.txt", "log.csv"])
                    with open(os.path.join(results, "log.csv")) as f:
                        self.assertEqual(f.read(), "epoch 0\nepoch 1\nepoch 2\n")


    @alternating
    def test_loggers_under_any_name_log_from_rank_0(self):
        # A logger kept as _LOG or self.logger (pytorch-template's trainers), or called straight
        # from logging.getLogger(...): its records come from rank 0 alone. (Elsewhere basicConfig
        # is rank 0's too, and logging's last-resort handler would still print warnings.)
        script = """
import logging
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

_LOG = logging.getLogger("train")
logging.basicConfig(level=logging.INFO, format="%(name)s %(message)s")


class Trainer:
    def __init__(self, model, loader):
        self.model, self.loader = model, loader
        self.opt = torch.optim.SGD(model.parameters(), lr=0.05)
        self.logger = logging.getLogger(type(self).__name__)

    def fit(self, epochs):
        for epoch in range(epochs):
            for xb, yb in self.loader:
                self.opt.zero_grad()
                loss = F.mse_loss(self.model(xb), yb)
                loss.backward()
                self.opt.step()
            self.logger.info("epoch %d", epoch)
            _LOG.warning("warned %d", epoch)
            logging.getLogger("direct").warning("direct %d", epoch)


loader = DataLoader(TensorDataset(torch.randn(64, 4), torch.randn(64, 1)), batch_size=8, shuffle=True)
Trainer(torch.nn.Linear(4, 1), loader).fit(2)
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            src, out = os.path.join(tmp, "logs.py"), os.path.join(tmp, "logs_dist.py")
            with open(src, "w") as f:
                f.write(script)
            r = parallelize([src, "-o", out, "-q"], tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("4 print/log/save/write statement(s) made rank 0 only (lines 8, 24, 25, 26)", r.stderr)
            run = hooprun(2, [sys.executable, out], timeout=120)
            self.assertEqual(run.returncode, 0, run.output)
            lines = [line for line in run.output.splitlines() if line.startswith("[")]
            self.assertEqual(sorted(lines), sorted(f"[0] {what} {e}" for e in range(2) for what in (
                "Trainer epoch", "train warned", "direct direct")), run.output)


    @alternating
    def test_data_the_script_fetches_is_fetched_once(self):
        # torchvision's datasets download themselves into the root they are given (download=True):
        # on the ranks of one host all at once, each would write the same files while the others
        # read them; so would a download under `if not os.path.exists(...)`, whose test every rank
        # passes before any has fetched. Converted, rank 0 fetches first, then the rest, who find
        # the files in place: a training loader's dataset (which the sampler shares), one returned
        # by a helper, and the guarded download (the whole `if` takes its turn, and the folder it
        # makes is made by whichever rank takes it, not rank 0 alone). The stand-ins
        # fetch as torchvision does, into root unless the file is there, and log each fetch.
        remote = """
import os
import time
import torch
from torch.utils.data import Dataset


class Remote(Dataset):
    def __init__(self, root, train=True, download=False):
        path = os.path.join(root, "train.pt" if train else "test.pt")
        if download and not os.path.exists(path):
            os.makedirs(root, exist_ok=True)
            x = torch.randn(96 if train else 32, 4, generator=torch.Generator().manual_seed(int(train)))
            torch.save((x, x.sum(1, keepdim=True)), f"{path}.{os.getpid()}")
            time.sleep(0.5)
            os.replace(f"{path}.{os.getpid()}", path)
            with open(os.path.join(root, "fetches"), "a") as f:
                f.write(f"{os.getpid()} {path}\\n")
        self.x, self.y = torch.load(path)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def download_url(url, root, filename):
    with open(os.path.join(root, filename), "w") as f:
        f.write(url)
    with open(os.path.join(root, "fetches"), "a") as f:
        f.write(f"{os.getpid()} {root}/{filename}\\n")
"""
        script = """
import os
import torch
from torch.utils.data import DataLoader
from remote_data import Remote, download_url


def test_loader(root):
    return DataLoader(Remote(root, train=False, download=True), batch_size=16)


train_loader = DataLoader(Remote("data", download=True), batch_size=8, shuffle=True)
val_loader = test_loader("data")
if not os.path.exists("data/notes.txt"):
    os.makedirs("data", exist_ok=True)
    download_url("https://example.org/notes.txt", "data", "notes.txt")
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for x, y in train_loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    with torch.no_grad():
        loss = sum(torch.nn.functional.mse_loss(model(x), y).item() for x, y in val_loader)
    print(f"epoch {epoch} val {loss:.4f}")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            with open(os.path.join(tmp, "remote_data.py"), "w") as f:
                f.write(remote)
            for style, r, out in convert_script(tmp, "fetch", script, drawn(("horovod", "ddp"), "downloads")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stderr.count("run by one rank at a time (rank 0 first)"), 3, r.stderr)
                    with open(out) as f:
                        text = f.read()
                    self.assertIn("DataLoader(_hoop_made_in_turn(lambda: Remote(root, train=False, download=True)), "
                                  "batch_size=16)", text)
                    turn = text.index("_hoop_in_turn(start=True)  # hoop-parallelize")
                    self.assertLess(turn, text.index("train_loader_dataset = Remote(\"data\", download=True)"))
                    self.assertIn("sampler=train_loader_sampler)\n_hoop_in_turn(start=False)\n", text)
                    self.assertIn("_hoop_in_turn(start=True)  # hoop-parallelize: one rank at a time: rank 0 fetches "
                                  "first\nif not os.path.exists", text)
                    # each rank that takes the `if` makes the folder it fetches into (another host's too)
                    self.assertIn('    os.makedirs("data", exist_ok=True)\n    download_url(', text)
                    shutil.rmtree(os.path.join(tmp, "data"), ignore_errors=True)
                    run = hooprun(3, [sys.executable, out], env={"HOOP_TIMEOUT": "30"}, timeout=180, args=("--wdir", tmp))
                    self.assertEqual(run.returncode, 0, run.output)
                    self.assertIn("epoch 1 val", run.output)
                    with open(os.path.join(tmp, "data", "fetches")) as f:
                        fetches = [line.split() for line in f.read().splitlines()]
                    self.assertEqual(sorted(p for _, p in fetches), ["data/notes.txt", "data/test.pt", "data/train.pt"],
                                     fetches)
                    self.assertEqual(len({pid for pid, _ in fetches}), 1, fetches)

    def test_a_file_the_script_makes_where_it_is_missing_is_made_once_per_disk(self):
        # A cache the script makes when it is not there (`if not os.path.exists(CACHE): ...
        # torch.save`), or an `if exists: load, else: make and save`: rank 0 alone wrote it, so on
        # another host's disk it was never made (FileNotFoundError there), and on one host a rank
        # could read it half written. Converted, the whole `if` takes its turn as a fetch does:
        # rank 0 makes it, then the first rank of each other host, then the rest find it there.
        # Two hosts are played by four ranks, two in each of two folders with local ranks 0, 1.
        # Under DDP a make takes longer than HOOP_TIMEOUT: the turns' own group waits for it.
        script = """
import io
import json
import os
import time
import torch
from torch.utils.data import DataLoader, TensorDataset

os.makedirs("cache", exist_ok=True)
CACHE = os.path.join("cache", "features.pt")
if not os.path.exists(CACHE):
    x = torch.randn(96, 4, generator=torch.Generator().manual_seed(0))
    buf = io.BytesIO()
    torch.save((x, x.sum(1, keepdim=True)), buf)
    with open(CACHE, "wb") as f:  # slowly, as a big one is written
        f.write(buf.getvalue()[:100])
        f.flush()
        time.sleep(float(os.environ.get("MAKE_S", "0.5")))
        f.write(buf.getvalue()[100:])
    with open("cache/made.log", "a") as f:
        f.write(f"{os.getpid()} features\\n")
x, y = torch.load(CACHE)
VOCAB = "cache/vocab.json"
if os.path.isfile(VOCAB):
    with open(VOCAB) as f:
        vocab = json.load(f)
else:
    vocab = {"n": len(x)}
    with open(VOCAB, "w") as f:
        f.write('{"n"')
        f.flush()
        time.sleep(float(os.environ.get("MAKE_S", "0.5")))
        f.write(f': {len(x)}}}')
    with open("cache/made.log", "a") as f:
        f.write(f"{os.getpid()} vocab\\n")
loader = DataLoader(TensorDataset(x, y), batch_size=8, shuffle=True)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(2):
    for xb, yb in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(xb), yb).backward()
        opt.step()
    print(f"epoch {epoch} vocab {vocab['n']}")
"""
        hosts = """
# ranks 0, 1 on host h0, ranks 2, 3 on host h1: each host's folder is its disk
h=h$((HOOP_RANK / 2))
cd "$1/$h" || exit 1
shift
export HOOP_LOCAL_RANK=$((HOOP_RANK % 2)) LOCAL_RANK=$((HOOP_RANK % 2)) HOOP_LOCAL_SIZE=2 LOCAL_WORLD_SIZE=2
export HOOP_CROSS_RANK=$((HOOP_RANK / 2)) HOOP_CROSS_SIZE=2
exec "$@"
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            with open(os.path.join(tmp, "hosts.sh"), "w") as f:
                f.write(hosts)
            for style, r, out in convert_script(tmp, "made", script, drawn(("horovod", "ddp"), "made in turn")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stderr.count("the `if` that writes what it finds missing"), 2, r.stderr)
                    with open(out) as f:
                        text = f.read()
                    self.assertIn("_hoop_in_turn(start=True)  # hoop-parallelize: one rank at a time: rank 0 makes it "
                                  "first\nif not os.path.exists(CACHE):", text)
                    self.assertIn("_hoop_in_turn(start=False)\nx, y = torch.load(CACHE)", text)  # no barrier of its own
                    self.assertIn('\n    with open(CACHE, "wb") as f:', text)  # by whoever takes the `if`
                    for run_no in range(2):  # the second finds the files made
                        for h in ("h0", "h1"):
                            os.makedirs(os.path.join(tmp, h), exist_ok=True)
                        # DDP's turns wait in a group of their own, longer than the calls' timeout.
                        slow = {"HOOP_TIMEOUT": "5", "MAKE_S": "6"} if style == "ddp" else {"HOOP_TIMEOUT": "60"}
                        run = hooprun(4, ["/bin/sh", os.path.join(tmp, "hosts.sh"), tmp, sys.executable, out],
                                      env=slow, timeout=240)
                        self.assertEqual(run.returncode, 0, run.output)
                        self.assertIn("epoch 1 vocab 96", run.output)
                        for h in ("h0", "h1"):
                            with open(os.path.join(tmp, h, "cache", "made.log")) as f:
                                made = [line.split() for line in f.read().splitlines()]
                            self.assertEqual(sorted(what for _, what in made), ["features", "vocab"], (h, made))
                            self.assertEqual(len({pid for pid, _ in made}), 1, (h, made))
                    for h in ("h0", "h1"):
                        shutil.rmtree(os.path.join(tmp, h))


    def test_samples_a_dataset_caches_are_cached_by_the_rank_that_reads_them(self):
        # A dataset that caches each sample it makes (`if not os.path.exists(p): torch.save(...)`
        # in __getitem__) runs on each rank's share, often in a loader's workers: made rank 0's,
        # the other ranks' samples were never written, and their loads failed (FileNotFoundError).
        script = """
import os
import torch
from torch.utils.data import DataLoader, Dataset


class Cached(Dataset):
    def __len__(self):
        return 48

    def __getitem__(self, i):
        p = f"cache/{i}.pt"
        if not os.path.exists(p):
            torch.save(torch.full((4,), float(i)), p)
        x = torch.load(p)
        return x, x.sum(0, keepdim=True)


os.makedirs("cache", exist_ok=True)
loader = DataLoader(Cached(), batch_size=8, shuffle=True, num_workers=1)
model = torch.nn.Linear(4, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.001)
for epoch in range(2):
    for x, y in loader:
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print(f"epoch {epoch} done")
"""
        with tempfile.TemporaryDirectory(prefix="hoop-par-") as tmp:
            for style, r, out in convert_script(tmp, "cached", script, drawn(("horovod", "ddp"), "per sample")):
                with self.subTest(style=style):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertIn("left on every rank: the write(s) in a function run for each sample", r.stderr)
                    shutil.rmtree(os.path.join(tmp, "cache"), ignore_errors=True)
                    run = hooprun(2, [sys.executable, out], timeout=180, args=("--wdir", tmp))
                    self.assertEqual(run.returncode, 0, run.output)
                    self.assertIn("epoch 1 done", run.output)
                    self.assertEqual(len(os.listdir(os.path.join(tmp, "cache"))), 48)


if __name__ == "__main__":
    unittest.main()
