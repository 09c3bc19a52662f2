"""hoop-parallelize: what a training DataLoader draws from, beyond a shuffle. A sampler that
draws (WeightedRandomSampler, for class imbalance; RandomSampler with replacement or num_samples)
has no DistributedSampler to stand in for it: one process draws num_samples indices per epoch
from its weights, and that is what the ranks share. So the script's sampler is kept and wrapped
in `_HoopDrawnShare`: each epoch every rank makes the same draw (the sampler's generator seeded
alike, from the script's own generator's seed or 0, plus the epoch set by set_epoch, as
DistributedSampler seeds its shuffle) and takes every size()-th index of it, as many on every
rank. A stream (an IterableDataset, a WebDataset, load_dataset(..., streaming=True)) takes no
sampler at all and is refused. A mixin of Converter (hoop/parallelize.py), beside DataSplitting."""
import ast

from hoop._parallelize.data import Trail
from hoop._parallelize.edits import MARK, Refused, call_name, dotted

DRAWN = ("WeightedRandomSampler", "RandomSampler")


class Samplers:
    def drawn_sampler(self, call, expr):
        """The sampler call the loader's sampler= comes from (in place or by name) where it draws
        (WeightedRandomSampler; RandomSampler with replacement or num_samples), else None."""
        found = [expr] if isinstance(expr, ast.Call) else [
            c for c, _ in self.resolve_loader(dotted(expr), call, Trail(DRAWN, False))] if dotted(expr) else []
        if len(found) != 1:
            return None
        kind = (call_name(found[0]) or "").split(".")[-1]
        if kind == "WeightedRandomSampler" or (kind == "RandomSampler" and (len(found[0].args) > 1 or any(
                k.arg in ("replacement", "num_samples") for k in found[0].keywords))):
            return found[0]
        return None

    def share_drawn_sampler(self, call, stmt, own, made, what):
        """sampler=_HoopDrawnShare(the script's sampler), and its set_epoch each epoch."""
        others = self.other_uses(call)
        if others:
            raise Refused(f"line {call.lineno}: the DataLoader {what} makes the training loader and also "
                          f"{', '.join(others)}: give the training loader a DataLoader call of its own")
        if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
            raise Refused(f"line {call.lineno}: the training DataLoader {what} shares its line with other code: "
                          "give it a line of its own")
        self.e.replace(own.value, f"_HoopDrawnShare({self.e.source(own.value)})")
        kind = (call_name(made) or "").split(".")[-1]
        self.changes.append(f"line {call.lineno}: DataLoader {what}: its {kind}'s draws dealt out between the ranks "
                            f"(each epoch one draw, the same on every rank, each taking every {self.SIZE}-th index)")
        self.set_epochs(call, "its sampler", "True", stmt)

    def drawn_helper(self):
        """The converted script's _HoopDrawnShare, where a training loader draws."""
        if not any(self.drawn_sampler(c, k.value) for c, _, _ in self.train_loaders for k in c.keywords
                   if k.arg == "sampler"):
            return []
        return ["", "", f"class _HoopDrawnShare(torch.utils.data.Sampler):  {MARK} the script's sampler's draw "
                "each epoch, the same on every rank, dealt out between them",
                "    def __init__(self, sampler):",
                "        self.sampler, self.epoch = sampler, 0",
                "        own = getattr(sampler, 'generator', None)",
                "        self.seed = own.initial_seed() if own is not None else 0",
                "",
                "    def set_epoch(self, epoch):",
                "        self.epoch = epoch",
                "",
                "    def __iter__(self):",
                "        self.sampler.generator = torch.Generator().manual_seed(self.seed + self.epoch)",
                "        drawn = list(self.sampler)",
                f"        return iter(drawn[{self.RANK}:len(drawn) // {self.SIZE} * {self.SIZE}:{self.SIZE}])",
                "",
                "    def __len__(self):",
                f"        return len(self.sampler) // {self.SIZE}"]

    def iterable_dataset(self, dataset, call):
        """Whether the dataset is a stream (no len(), no sampler): made by a class of the script
        derived from IterableDataset or IterDataPipe, a WebDataset, or load_dataset(...,
        streaming=True), in place or assigned to the name given."""
        kinds = {c.name for c in ast.walk(self.tree) if isinstance(c, ast.ClassDef) and any(
            (dotted(b) or "").split(".")[-1] in ("IterableDataset", "IterDataPipe") for b in c.bases)}
        kinds |= {"WebDataset", "IterableDataset"}
        made = [dataset] if isinstance(dataset, ast.Call) else [
            c for c, _ in self.resolve_loader(dotted(dataset), call, Trail(tuple(kinds) + ("load_dataset",), False))
        ] if dotted(dataset) else []
        return any((call_name(m) or "").split(".")[-1] in kinds or (
            (call_name(m) or "").split(".")[-1] == "load_dataset" and any(
                k.arg == "streaming" and isinstance(k.value, ast.Constant) and k.value.value for k in m.keywords))
            for m in made)
