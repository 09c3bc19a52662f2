"""hoop-parallelize: batch-norm statistics recomputed over a split loader. SWA's
torch.optim.swa_utils.update_bn(loader, swa_model) resets the model's running means and
variances and takes their plain average over the loader's batches; over a training loader split
between the ranks each rank averages its own share, so the ranks' models differ and rank 0 saves
statistics of a part of the data. Every rank takes as many batches (DistributedSampler), so the
ranks' averages averaged are the average over every batch, what one process computes: done
right after the call, for each batch-norm layer's running mean and variance. A mixin of
Converter (hoop/parallelize.py)."""
import ast

from hoop._parallelize.data import ref
from hoop._parallelize.edits import MARK, Refused, last_name


class BatchStats:
    def find_stats_passes(self):
        """[(call, its statement, the model)] of update_bn(loader, model) over a split loader; the
        loader (first argument, or loader=) followed as the converter follows training loaders."""
        self.stats_passes = []
        for c in ast.walk(self.tree):
            if not (isinstance(c, ast.Call) and last_name(c) == "update_bn"):
                continue
            loader = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "loader"), None)
            model = c.args[1] if len(c.args) > 1 else next((k.value for k in c.keywords if k.arg == "model"), None)
            if loader is None or model is None or not self.is_split_ref(ref(loader), c):
                continue
            stmt = self.stmt_of(c)
            if not (isinstance(stmt, ast.Expr) and stmt.value is c and self.e.alone_on_lines(stmt)) or \
                    self.on_header_line(stmt):
                raise Refused(f"line {c.lineno}: update_bn over the split training loader is part of a larger "
                              "statement: give it a line of its own (its statistics must be averaged over the ranks "
                              "after it)")
            self.stats_passes.append((c, stmt, model))

    def stats_helper(self):
        """The converted script's _hoop_batch_stats(model): every batch-norm layer's running mean
        and variance averaged over the ranks, in place."""
        if not self.stats_passes:
            return []
        if self.style == "horovod":
            reduce = "hvd.allreduce_(stat, op=hvd.Average, name=f'batch_stats.{i}.{which}')"
        else:
            reduce = f"{self.DIST}.all_reduce(stat, op={self.DIST}.ReduceOp.AVG)"
        return ["", "", f"def _hoop_batch_stats(model):  {MARK} batch-norm statistics of this rank's share, "
                "averaged over the ranks: those of every batch",
                "    for i, m in enumerate(model.modules()):",
                "        if isinstance(m, torch.nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:",
                "            for which in ('running_mean', 'running_var'):",
                "                stat = getattr(m, which)",
                f"                {reduce}"]

    def average_stats(self):
        """_hoop_batch_stats(model) on the line after each such update_bn."""
        for c, stmt, model in self.stats_passes:
            self.e.insert_after(stmt, [f"_hoop_batch_stats({self.e.source(model)})  {MARK} over every rank's share"])
            self.changes.append(f"line {c.lineno}: the batch-norm statistics update_bn took over this rank's share "
                                "averaged over the ranks")
