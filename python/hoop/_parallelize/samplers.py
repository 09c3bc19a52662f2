"""hoop-parallelize: what a training DataLoader draws from, beyond a shuffle. A sampler that
draws (WeightedRandomSampler, for class imbalance; RandomSampler with replacement or num_samples)
has no DistributedSampler to stand in for it: one process draws num_samples indices per epoch
from its weights, and that is what the ranks share. So the script's sampler is kept and wrapped
in `_HoopDrawnShare`: each epoch every rank makes the same draw (the sampler's generator seeded
alike, from the script's own generator's seed or 0, plus the epoch set by set_epoch, as
DistributedSampler seeds its shuffle) and takes every size()-th index of it, as many on every
rank. A stream (an IterableDataset, a WebDataset, load_dataset(..., streaming=True)) takes no
sampler at all and is refused. A loader given `batch_sampler=BatchSampler(S, B, drop_last)`
(or `sampler=` it, with batch_size=None, for a dataset that reads a whole batch at once) keeps its
BatchSampler: S (a RandomSampler or SequentialSampler over the dataset, in place or by name)
becomes a DistributedSampler over the same dataset, one that draws is dealt out as above, and the
epoch is set through `loader.batch_sampler.sampler` (the loader's own .sampler is then a
SequentialSampler over the whole set), or `loader.sampler.sampler`. A mixin of Converter
(hoop/parallelize.py), beside DataSplitting."""
import ast

from hoop._parallelize.data import ITEM, Trail
from hoop._parallelize.edits import MARK, Refused, dotted, last_name

DRAWN = ("WeightedRandomSampler", "RandomSampler")
PLAIN = ("RandomSampler", "SequentialSampler")


class Samplers:
    def sampler_call(self, expr, at, kinds):
        """The one call of one of `kinds` that expr is, in place or by a name read at `at`; else None."""
        found = [expr] if isinstance(expr, ast.Call) else [
            c for c, _ in self.resolve_loader(dotted(expr), at, Trail(kinds, False))] if dotted(expr) else []
        return found[0] if len(found) == 1 and last_name(found[0]) in kinds else None

    def drawn_sampler(self, call, expr):
        """The sampler call the loader's sampler= comes from (in place or by name) where it draws
        (WeightedRandomSampler; RandomSampler with replacement or num_samples), else None."""
        found = self.sampler_call(expr, call, DRAWN)
        if found is not None and (last_name(found) == "WeightedRandomSampler" or len(found.args) > 1 or any(
                k.arg in ("replacement", "num_samples") for k in found.keywords)):
            return found
        return None

    def batch_sampler_of(self, call):
        """(the BatchSampler call the loader's batch_sampler= is, or its sampler= with batch_size=None
        reading whole batches from the dataset, the sampler it batches) or None."""
        given = next((k.value for k in call.keywords if k.arg == "batch_sampler"), None) or next(
            (k.value for k in call.keywords if k.arg == "sampler"), None)
        batches = self.sampler_call(given, call, ("BatchSampler",)) if given is not None else None
        if batches is None:
            return None
        inner = batches.args[0] if batches.args else next((k.value for k in batches.keywords if k.arg == "sampler"), None)
        return (batches, inner) if inner is not None else None

    def sampler_path(self, calls):
        """Where the sampler of these loaders is reached from the loader: batch_sampler.sampler for
        a loader given a BatchSampler, sampler.sampler for one given it as its sampler, else sampler."""
        if any(k.arg == "batch_sampler" for c in calls for k in c.keywords):
            return "batch_sampler.sampler"
        return "sampler.sampler" if any(self.batch_sampler_of(c) for c in calls) else "sampler"

    def loader_sampler(self, of):
        """The text of the sampler of the loader expression `of` (as read where it is)."""
        name = dotted(of)
        calls = [c for c, _ in self.resolve_loader(name, of, Trail(record=False))] if name else []
        return f"{self.e.source(of)}.{self.sampler_path(calls)}"

    def share_batch_sampler(self, call, stmt, what):
        """batch_sampler=BatchSampler(S, ...): S split between the ranks (or its draws dealt out)."""
        found = self.batch_sampler_of(call)
        whose = f"line {call.lineno}: the training DataLoader {what}"
        if found is None:
            raise Refused(f"{whose} has a batch sampler of its own (not a BatchSampler over a sampler): give it a "
                          "DistributedSampler by hand")
        if self.enclosing(call, (ast.DictComp, ast.ListComp, ast.GeneratorExp, ast.Lambda, ast.Dict, ast.List,
                                 ast.Tuple)) is not None or self.other_uses(call):
            raise Refused(f"{whose} has a batch sampler and is made beside other loaders: give it a DataLoader "
                          "call and a BatchSampler of its own")
        if not self.e.alone_on_lines(stmt) or self.on_header_line(stmt):
            raise Refused(f"{whose} shares its line with other code: give it a line of its own")
        batches, inner = found
        drawn = self.drawn_sampler(batches, inner)
        made = drawn or self.sampler_call(inner, batches, PLAIN)
        data = made and (made.args[0] if made.args else next((k.value for k in made.keywords
                                                              if k.arg == "data_source"), None))
        if drawn is not None:
            self.e.replace(inner, f"_HoopDrawnShare({self.e.source(inner)})")
            how, order = f"its {last_name(drawn)}'s draws dealt out between the ranks", "True"
        elif made is None or data is None or len(made.args) > 1 or any(
                k.arg not in ("data_source", "generator") for k in made.keywords):
            raise Refused(f"{whose} batches a sampler other than a RandomSampler or SequentialSampler over its "
                          "dataset: give it a DistributedSampler by hand")
        else:
            order = "False" if last_name(made) == "SequentialSampler" else "True"
            self.e.replace(made, f"DistributedSampler({self.e.source(data)}, num_replicas={self.SIZE}, "
                                 f"rank={self.RANK}, shuffle={order})")
            how = f"the {last_name(made)} its BatchSampler batches made a DistributedSampler"
        self.changes.append(f"line {call.lineno}: DataLoader {what}: {how}")
        self.set_epochs(call, "its sampler", order, stmt)

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
        kind = last_name(made)
        self.changes.append(f"line {call.lineno}: DataLoader {what}: its {kind}'s draws dealt out between the ranks "
                            f"(each epoch one draw, the same on every rank, each taking every {self.SIZE}-th index)")
        self.set_epochs(call, "its sampler", "True", stmt)

    def one_pass(self, names):
        """Whether the loader (by these names) is iterated once in all: by one `for` loop that no
        loop runs again, at the top level or in a function called once from there (one epoch, or a
        warm-up pass): one order, and no epoch to set."""
        fors = [f for f in ast.walk(self.tree) if isinstance(f, ast.For) and any(
            n in names or n + ITEM in names for n in self.iterated_names(f.iter))]

        def again(node, depth=2):
            if self.enclosing(node, (ast.For, ast.While, ast.ListComp, ast.GeneratorExp)) is not None:
                return True
            fn = self.enclosing(node, (ast.FunctionDef,))
            calls = self.calls_of(fn) if fn is not None else []
            return fn is not None and (not depth or len(calls) != 1 or again(calls[0][0], depth - 1))

        return len(fors) == 1 and not again(fors[0])

    def drawn_helper(self):
        """The converted script's _HoopDrawnShare, where a training loader draws."""
        batched = [self.batch_sampler_of(c) for c, _, _ in self.train_loaders]
        if not any(self.drawn_sampler(c, k.value) for c, _, _ in self.train_loaders for k in c.keywords
                   if k.arg == "sampler") and not any(self.drawn_sampler(*b) for b in batched if b):
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
        return any(last_name(m) in kinds or (
            last_name(m) == "load_dataset" and any(
                k.arg == "streaming" and isinstance(k.value, ast.Constant) and k.value.value for k in m.keywords))
            for m in made)
