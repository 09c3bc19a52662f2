"""hoop-parallelize: one GPU per rank. The converted script pins each rank to its local rank's
GPU at start-up (hoop/parallelize.py); here, what in the script would still spread a rank over
other GPUs is changed. A mixin of Converter: it uses the converter's tree, parents, edits and
changes."""
import ast

from hoop._parallelize.edits import MARK, call_name


class Devices:
    def one_gpu_per_rank(self, local):
        """Each rank on its own GPU: the tutorials' "cuda:0" made "cuda" (the device set for the
        rank), and nn.DataParallel, which would spread every rank over all the GPUs, kept to the
        rank's one (horovod: device_ids=[local rank], its .module as before) or dropped (ddp:
        the DistributedDataParallel wrap gives the .module the script reads)."""
        for c in ast.walk(self.tree):
            if isinstance(c, ast.Constant) and c.value == "cuda:0" and isinstance(self.parent.get(c), ast.expr):
                self.e.replace(c, self.e.source(c).replace(":0", ""))
                self.changes.append(f"line {c.lineno}: 'cuda:0' made 'cuda', this rank's GPU (its local rank's)")
            elif isinstance(c, ast.Call) and (call_name(c) or "").split(".")[-1] == "DataParallel" and c.args \
                    and "\n" not in self.e.source(c):
                inner, stmt = self.e.source(c.args[0]), self.stmt_of(c)
                if self.style == "ddp" and isinstance(stmt, ast.Assign) and stmt.value is c and self.e.alone_on_lines(
                        stmt) and [self.e.source(t) for t in stmt.targets] == [inner]:
                    self.e.replace(stmt, f"pass  {MARK} was {self.e.source(stmt)}: one GPU per rank")
                else:
                    self.e.replace(c, inner if self.style == "ddp" else
                                   f"{self.e.source(c.func)}({inner}, device_ids=[{local}])")
                self.changes.append(f"line {c.lineno}: nn.DataParallel " + ("dropped (one GPU per rank; the "
                                    "DistributedDataParallel wrap has the .module)" if self.style == "ddp" else
                                    "kept to this rank's GPU (one GPU per rank)"))
