"""hoop-parallelize: experiment trackers are rank 0's. A script that logs to Weights & Biases,
MLflow, Comet, Neptune, Aim, ClearML, DVCLive or SwanLab would, run on N ranks, make N runs (or
fail on the ranks that never called wandb.init()). Each name such an import binds becomes, on
every rank but 0, the stand-in that does nothing (_HoopNothing, rank0.py), right after the import
(for the imports at the top of the script, right after hoop's set-up): wandb.init(), wandb.log(),
`with mlflow.start_run():`, run["loss"].append(...) then do nothing there. What the script reads
back from a tracker (wandb.config, a sweep's hyperparameters) rank 0 alone has: listed for a
person. A mixin of Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.edits import MARK

TRACKERS = {"wandb", "mlflow", "comet_ml", "neptune", "aim", "clearml", "dvclive", "swanlab"}


class Trackers:
    def find_trackers(self):
        """The imports of tracker modules: (statement, names it binds)."""
        self.trackers = []
        for stmt in ast.walk(self.tree):
            names = []
            if isinstance(stmt, ast.Import):
                names = [a.asname or a.name.split(".")[0] for a in stmt.names if a.name.split(".")[0] in TRACKERS]
            elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0 and (stmt.module or "").split(".")[0] in TRACKERS:
                names = [a.asname or a.name for a in stmt.names if a.name != "*"]
            if names:
                self.trackers.append((stmt, names))

    def tracker_lines(self, names):
        return [f"if {self.RANK} != 0:  {MARK} experiment tracking is rank 0's: a stand-in elsewhere",
                f"    {' = '.join(names)} = _HoopNothing()"]

    def trackers_rank0(self, setup_imports):
        """Lines for hoop's set-up (the trackers imported at the top, `setup_imports`), and the
        edits after the other imports."""
        lines, modules = [], []
        for stmt, names in sorted(self.trackers, key=lambda t: t[0].lineno):
            modules += [n for n in names if n not in modules]
            if stmt in setup_imports:
                lines += self.tracker_lines(names)
            elif not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
                self.notes.append(f"line {stmt.lineno}: a tracker's import shares its line with other code: its "
                                  "calls were not made rank 0's")
                continue
            else:
                self.e.insert_after(stmt, self.tracker_lines(names))
            self.changes.append(f"line {stmt.lineno}: experiment tracking ({', '.join(names)}) made rank 0's (a "
                                "stand-in that does nothing elsewhere)")
        self.tracker_reads(modules)
        return lines

    def tracker_reads(self, modules):
        """wandb.config (or a run's .config) read: what a sweep sets reaches rank 0 only. Its
        update() and setdefaults() write, and are rank 0's with the rest."""
        runs = set(modules)
        for a in ast.walk(self.tree):
            if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call) and isinstance(a.value.func, ast.Attribute) \
                    and isinstance(a.value.func.value, ast.Name) and a.value.func.value.id in modules:
                runs |= {t.id for t in a.targets if isinstance(t, ast.Name)}  # run = wandb.init(...)
        for n in ast.walk(self.tree):
            if not (isinstance(n, ast.Attribute) and n.attr == "config" and isinstance(n.value, ast.Name)
                    and n.value.id in runs):
                continue
            p = self.parent.get(n)
            if isinstance(p, ast.Attribute) and p.attr in ("update", "setdefaults", "setdefault") \
                    and isinstance(self.parent.get(p), ast.Call) and self.parent[p].func is p:
                continue
            if isinstance(p, ast.Attribute) and isinstance(p.ctx, ast.Store) \
                    or isinstance(p, ast.Subscript) and isinstance(p.ctx, ast.Store):
                continue  # wandb.config.lr = ... / wandb.config["lr"] = ...: a write
            share = "hvd.broadcast_object" if self.style == "horovod" else f"{self.DIST}.broadcast_object_list"
            self.notes.append(f"line {n.lineno}: {n.value.id}.config read: on ranks other than 0 it is a stand-in (a "
                              f"sweep's settings reach rank 0 only): send what the ranks need from rank 0 ({share})")
            return
