"""hoop-parallelize on a corpus of training scripts in the shapes of well-known public ones
(parallelize_corpus/, issue 49): each is run as it is, then converted in both styles (horovod,
ddp) and run on 2 ranks under parallelize_probe.py, and must
  - exit 0 on both ranks, their parameters bitwise identical at the end (the probe's, not the
    script's own output);
  - print only on rank 0, each metric the script declares as many times as one process prints
    it and close to its value (not halved, not doubled);
  - write files on rank 0 only, the same files one process writes;
or, where the script declares a refusal, be refused with the line and what to do, nothing
written. At most one script in eight may be refused.

Each script declares what to check in comment lines of its own:
  # corpus-metric: REGEX     a number printed or logged (group 1); counted, the last values
                            compared (repeatable)
  # corpus-tolerance: R A    |2-rank - 1-process| <= R * max(|both|) + A (default 0.35 0)
  # corpus-says: TEXT        a change each conversion must report (corpus-says-horovod: one style)
  # corpus-refused: TEXT     the conversion must refuse, saying TEXT (corpus-refused-ddp: one style)
  # corpus-args: ARGS        the script's arguments
  # corpus-runs: N           run N times in the same folder (a checkpoint resumed)
  # corpus-rank0-stderr: RE  what only rank 0 may write to stderr (a progress bar)
A separate ctest entry (parallelize-corpus): too long to share the python entry's bound.
Skipped, saying so, without PyTorch.

Every script is converted in both styles on every run (refusals and reported changes checked in
both), but its 2-rank run, the time of the suite, is made in one style per run: the style drawn
per script from a seed (HOOPTEST_CORPUS_SEED, else the time), printed so that a failure can be
run again; over runs both styles of every script are covered. HOOPTEST_CORPUS_STYLES=all runs
both every time. HOOPTEST_CORPUS_PART=K/N runs, alone and on 2 ranks, only one of N parts of the
scripts (every script is still converted and its conversion checked): part (K + window) mod N
(K,L/N: parts (K + window) and (L + window) mod N),
the window being HOOPTEST_SHARE_WINDOW, else support.QUARTER_DAY (the quarter-day since 1970, or
HOOPTEST_QUARTER_DAY, fixed once per CI run), as support.drawn() takes it. CI's two corpus
entries, under Debian's PyTorch and pip's (tests/CMakeLists.txt), take 0,1/6 and 5/6 (pip's
PyTorch runs a script in about 2.5 times Debian's time): in each run half the scripts run, each
under one of the two; every script at least once a day, under both within a day and a half."""
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

from support import HERE, PARALLELIZE, QUARTER_DAY, hooprun, python_env

try:
    import torch
except ImportError:
    raise unittest.SkipTest("PyTorch is missing (scripts/setup.sh installs Debian's)")

TOOL = PARALLELIZE
PROBE = os.path.join(HERE, "parallelize_probe.py")
CORPUS = os.path.join(HERE, "parallelize_corpus")
SCRIPTS = sorted(f[:-3] for f in os.listdir(CORPUS) if f.endswith(".py"))
STYLES = ("horovod", "ddp")
SEED = int(os.environ.get("HOOPTEST_CORPUS_SEED") or time.time_ns() % 1000003)
ALL_STYLES = os.environ.get("HOOPTEST_CORPUS_STYLES") == "all"
PART = os.environ.get("HOOPTEST_CORPUS_PART") or "0/1"
if not re.fullmatch(r"\d+(,\d+)*/[1-9]\d*", PART):
    raise SystemExit(f"corpus: HOOPTEST_CORPUS_PART={PART}: expected K/N or K,L,.../N, as 0/2 or 0,1/3")
WINDOW = int(os.environ.get("HOOPTEST_SHARE_WINDOW") or QUARTER_DAY)
PARTS = int(PART.split("/")[1])
TAKEN = sorted({(int(k) + WINDOW) % PARTS for k in PART.split("/")[0].split(",")})
# Parts of (nearly) equal size: the scripts in a fixed shuffled order, dealt out in turn.
IN_PART = {n: i % PARTS for i, n in enumerate(sorted(SCRIPTS, key=lambda n: zlib.crc32(n.encode())))}
print(f"corpus: 2-rank runs in {'both styles' if ALL_STYLES else 'one style per script'}, "
      f"HOOPTEST_CORPUS_SEED={SEED}" + ("" if PARTS == 1 else f"; scripts of parts {TAKEN} of {PARTS} run "
                                         f"(HOOPTEST_CORPUS_PART={PART}, HOOPTEST_SHARE_WINDOW={WINDOW})"),
      file=sys.stderr)


def styles_run(name):
    """The styles whose conversion of `name` is run on 2 ranks this time."""
    if ALL_STYLES:
        return STYLES
    return (STYLES[zlib.crc32(f"{SEED}:{name}".encode()) % 2],)


def runs_this_time(name):
    """Whether `name` is run (alone and on 2 ranks) this time: always, unless HOOPTEST_CORPUS_PART."""
    return IN_PART[name] in TAKEN


def declared(path):
    """{key: [values]} from the script's `# corpus-KEY: VALUE` lines."""
    out = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"#\s*corpus-([a-z-]+):\s*(.*?)\s*$", line)
            if m:
                out.setdefault(m.group(1), []).append(m.group(2))
    return out


def files_under(root, skip=()):
    found = set()
    for d, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root)
            if not rel.startswith(skip) and "__pycache__" not in rel:
                found.add(rel)
    return found


def metrics(text, regexes):
    return {r: [float(m.group(1)) for m in re.finditer(r, text)] for r in regexes}


class Corpus(unittest.TestCase):
    def run_alone(self, src, spec, where):
        os.makedirs(where)
        args = shlex.split(spec.get("args", [""])[0])
        for _ in range(int(spec.get("runs", ["1"])[0])):
            r = subprocess.run([sys.executable, src, *args], cwd=where, env=python_env(), capture_output=True,
                               text=True, timeout=180)
            self.assertEqual(r.returncode, 0, f"one process: {r.stdout}\n{r.stderr}")
        return r.stdout + r.stderr

    def convert(self, src, out, style, spec):
        r = subprocess.run([TOOL, src, "-o", out, "--style", style, "-q"], env=python_env(), capture_output=True,
                           text=True, timeout=60)
        refused = spec.get("refused", []) + spec.get(f"refused-{style}", [])
        if refused:
            self.assertEqual(r.returncode, 2, r.stderr)
            self.assertIn(refused[0], r.stderr)
            self.assertRegex(r.stderr, r"line \d+")
            self.assertFalse(os.path.exists(out), "a refused conversion wrote its output")
            return False
        self.assertEqual(r.returncode, 0, r.stderr)
        for said in spec.get("says", []) + spec.get(f"says-{style}", []):
            self.assertIn(said, r.stderr)
        return True

    def run_ranks(self, out, spec, where, logs):
        os.makedirs(where)
        args = shlex.split(spec.get("args", [""])[0])
        probe = os.path.join(logs, "probe")
        for _ in range(int(spec.get("runs", ["1"])[0])):
            run = hooprun(2, [sys.executable, PROBE, probe, out, *args], timeout=240,
                          args=("--wdir", where, "--output-filename", logs))
            self.assertEqual(run.returncode, 0, run.output)
        outs, errs = [], []
        for rank in (0, 1):
            d = next(os.path.join(logs, x) for x in os.listdir(logs) if re.fullmatch(rf"rank\.0*{rank}", x))
            with open(os.path.join(d, "stdout")) as f:
                outs.append(f.read())
            with open(os.path.join(d, "stderr")) as f:
                errs.append(f.read())
        self.assertEqual(outs[1].strip(), "", f"rank 1 printed:\n{outs[1]}")
        for r in spec.get("metric", []) + spec.get("rank0-stderr", []):
            self.assertIsNone(re.search(r, errs[1]), f"rank 1 wrote '{r}' to stderr:\n{errs[1]}")
        a, b = (torch.load(f"{probe}.{k}.pt") for k in (0, 1))
        self.assertTrue(a, "the probe found no parameters")
        self.assertEqual(sorted(a), sorted(b))
        for k in a:
            self.assertTrue(torch.equal(a[k], b[k]), f"{k} differs between the ranks by "
                            f"{(a[k].double() - b[k].double()).abs().max().item()}")
        with open(f"{probe}.1.writes") as f:
            by_one = [p for p in f.read().split() if p.startswith(where + os.sep)]
        self.assertEqual(by_one, [], "rank 1 wrote files")
        return outs[0] + errs[0]

    def check_script(self, name):
        src = os.path.join(CORPUS, f"{name}.py")
        spec = declared(src)
        with tempfile.TemporaryDirectory(prefix=f"hoop-corpus-{name}-") as tmp:
            alone_dir = os.path.join(tmp, "alone")
            regexes = spec.get("metric", [])
            alone = None
            for style in STYLES:
                with self.subTest(style=style):
                    out = os.path.join(tmp, f"{name}_{style}.py")
                    if not self.convert(src, out, style, spec) or style not in styles_run(name):
                        continue
                    if not runs_this_time(name):
                        continue
                    if alone is None:
                        alone = self.run_alone(src, spec, alone_dir)
                        want = metrics(alone, regexes)
                        for r, values in want.items():
                            self.assertTrue(values, f"one process printed no '{r}':\n{alone}")
                    where = os.path.join(tmp, f"ranks-{style}")
                    printed = self.run_ranks(out, spec, where, os.path.join(tmp, f"logs-{style}"))
                    self.assertEqual(files_under(where), files_under(alone_dir), "the files written differ")
                    self.compare_metrics(want, metrics(printed, regexes), spec, printed)

    def compare_metrics(self, want, got, spec, printed):
        rel, atol = (float(x) for x in spec.get("tolerance", ["0.35 0"])[0].split())
        for r in want:
            self.assertEqual(len(got[r]), len(want[r]), f"'{r}' printed {len(got[r])} times on 2 ranks, "
                             f"{len(want[r])} by one process:\n{printed}")
            x, y = want[r][-1], got[r][-1]
            self.assertLessEqual(abs(x - y), rel * max(abs(x), abs(y)) + atol,
                                 f"'{r}': {y} on 2 ranks, {x} by one process")

    def test_at_most_one_in_eight_refused(self):
        refused = [n for n in SCRIPTS if "refused" in declared(os.path.join(CORPUS, f"{n}.py"))]
        self.assertGreaterEqual(len(SCRIPTS), 24)
        self.assertLessEqual(len(refused) * 8, len(SCRIPTS), refused)


for _name in SCRIPTS:
    setattr(Corpus, f"test_{_name}", lambda self, n=_name: self.check_script(n))

if __name__ == "__main__":
    unittest.main()
