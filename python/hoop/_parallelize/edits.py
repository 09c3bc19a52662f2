"""hoop-parallelize's vocabulary and its text editor: the names it recognises (optimizers, file
writers, logging calls, what DistributedDataParallel answers itself), Refused, and Edits, which
changes the original text only where the converter says so."""
import ast

OPTIMIZERS = {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD",
              "Rprop", "LBFGS", "SparseAdam"}
WRITERS = {"torch.save", "np.save", "numpy.save", "np.savetxt", "numpy.savetxt", "np.savez", "numpy.savez", "json.dump",
           "pickle.dump", "plt.savefig", "shutil.copy", "shutil.copyfile", "shutil.copy2", "shutil.move", "os.makedirs",
           "os.mkdir", "os.replace", "os.rename", "os.remove", "os.unlink", "shutil.rmtree", "shutil.copytree",
           "np.savez_compressed", "numpy.savez_compressed", "torch.jit.save", "joblib.dump", "yaml.dump",
           "yaml.safe_dump", "torchvision.utils.save_image", "vutils.save_image", "utils.save_image", "save_image"}
# Methods that write files, whatever they are called on (a DataFrame's to_csv, a figure's
# savefig, a Hugging Face model's save_pretrained, a pathlib.Path's write_text).
METHOD_WRITERS = {"to_csv", "to_parquet", "to_json", "to_pickle", "to_excel", "to_feather", "savefig",
                  "save_pretrained", "write_text", "write_bytes"}
# Objects that write files as soon as they are made: made on rank 0 only (elsewhere a stand-in that
# does nothing, whatever is called on it).
MAKERS = {"SummaryWriter"}
# What DistributedDataParallel answers itself, as nn.Module does: everything else is read from its .module.
MODULE_ATTRS = {"train", "eval", "training", "parameters", "named_parameters", "buffers", "named_buffers", "children",
                "named_children", "modules", "named_modules", "state_dict", "load_state_dict", "to", "cuda", "cpu",
                "half", "float", "double", "bfloat16", "type", "zero_grad", "apply", "requires_grad_", "forward",
                "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
                "register_backward_hook", "register_buffer", "register_parameter", "add_module", "no_sync", "module",
                "join", "share_memory", "get_submodule", "get_parameter", "get_buffer", "to_empty",
                "register_comm_hook", "__class__", "__dict__"}
FILE_HANDLERS = {"FileHandler", "RotatingFileHandler", "TimedRotatingFileHandler", "WatchedFileHandler"}
CLIPPERS = {"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"}
# Schedulers given learning rates of their own, not factors of the optimizer's: each such argument
# by name and position (SWALR's target rate, a cosine schedule's floor, a plateau's least rate).
CYCLIC = {"OneCycleLR": (("max_lr", 1),), "CyclicLR": (("base_lr", 1), ("max_lr", 2)), "SWALR": (("swa_lr", 1),),
          "CosineAnnealingLR": (("eta_min", 2),), "CosineAnnealingWarmRestarts": (("eta_min", 3),),
          "ReduceLROnPlateau": (("min_lr", 7),)}
LOGGING = {"debug", "info", "warning", "error", "critical", "exception", "log", "basicConfig"}
# Training frameworks that split the work between processes themselves: a script on them is refused.
FRAMEWORKS = {"accelerate", "lightning", "pytorch_lightning", "deepspeed", "fairscale", "colossalai"}
MARK = "# hoop-parallelize:"


class Refused(Exception):
    """The script cannot be converted safely; the message says why."""


def dotted(node):
    """'torch.optim.SGD' for an attribute chain of names, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def dotted_source(text):
    """Whether text is a plain chain of names ('model.base', 'self.model')."""
    return all(part.isidentifier() for part in text.split("."))


def call_name(node):
    return dotted(node.func) if isinstance(node, ast.Call) else None


def last_name(node):
    """The last part of the name a call makes ('SGD' for torch.optim.SGD(...)); '' for none."""
    return (call_name(node) or "").split(".")[-1]


class Edits:
    """Edits to the original text: replacements inside lines (no newlines), then whole-line
    insertions and statement wraps, applied from the bottom up so positions stay valid."""

    def __init__(self, text):
        self.lines = text.splitlines(keepends=True)
        if self.lines and not self.lines[-1].endswith("\n"):
            self.lines[-1] += "\n"
        self.spans = []  # (line, col, end_line, end_col, text)
        self.ops = []  # (line, order, kind, payload): kind "insert" (before line) or "wrap"
        self.unit = self._indent_unit()

    def _indent_unit(self):
        for line in self.lines:
            stripped = line.lstrip(" \t")
            if stripped.strip() and line != stripped:
                return line[:len(line) - len(stripped)]
        return "    "

    def indent_of(self, node):
        line = self.lines[node.lineno - 1]
        return line[:len(line) - len(line.lstrip(" \t"))]

    def alone_on_lines(self, node):
        """Whether the statement has its lines to itself (it can be wrapped or have lines put around it)."""
        first = self.lines[node.lineno - 1]
        last = self.lines[node.end_lineno - 1]
        before = first.encode()[:node.col_offset].decode(errors="replace")
        after = last.encode()[node.end_col_offset:].decode(errors="replace").strip()
        return not before.strip() and (not after or after.startswith("#"))

    def source(self, node):
        if node.lineno == node.end_lineno:
            return self.lines[node.lineno - 1].encode()[node.col_offset:node.end_col_offset].decode()
        first = self.lines[node.lineno - 1].encode()[node.col_offset:].decode()
        middle = self.lines[node.lineno:node.end_lineno - 1]
        last = self.lines[node.end_lineno - 1].encode()[:node.end_col_offset].decode()
        return first + "".join(middle) + last

    def replace(self, node, text):
        self.spans.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))

    def overlaps(self, node):
        """Whether a replacement made so far overlaps the node's text (holds it, lies in it, or crosses it)."""
        start, end = (node.lineno, node.col_offset), (node.end_lineno, node.end_col_offset)
        return any((l0, c0) < end and start < (l1, c1) for (l0, c0, l1, c1, _) in self.spans)

    def insert_before(self, line, text_lines, indent, first=False, closing=False):
        """text_lines before line; first: above anything else put there (the set-up every later
        line needs), else above what was put there before it; closing: above even those (what
        ends the statement just above, such as the second half of a pair around it)."""
        order = -2 if closing else -1 if first else 1
        self.ops.append((line, order, "insert", [indent + t + "\n" if t else "\n" for t in text_lines]))

    def insert_after(self, node, text_lines, indent=None, first=False, closing=False):
        self.insert_before(node.end_lineno + 1, text_lines, self.indent_of(node) if indent is None else indent, first,
                           closing)

    def wrap(self, node, condition):
        self.ops.append((node.lineno, 0, "wrap", (node.end_lineno, self.indent_of(node), condition)))

    def apply(self):
        spans = sorted(set(self.spans), reverse=True)  # the same change made twice is made once
        for later, earlier in zip(spans, spans[1:]):
            if earlier[2:4] > later[0:2]:  # it ends after the later one starts: one text would break the other
                raise Refused(f"lines {earlier[0]} and {later[0]}: two of hoop-parallelize's changes overlap there "
                              "(a limit of hoop-parallelize: please report it with the script)")
        lines = list(self.lines)
        for (l0, c0, l1, c1, text) in spans:
            a, b = lines[l0 - 1].encode(), lines[l1 - 1].encode()
            merged = (a[:c0] + text.encode() + b[c1:]).decode()
            lines[l0 - 1:l1] = [merged]
            # A replacement across lines leaves fewer lines: keep later positions valid by padding.
            lines[l0:l0] = [""] * (l1 - l0)
        for line, _, kind, payload in sorted(self.ops, key=lambda o: (o[0], o[1]), reverse=True):
            if kind == "insert":
                lines[line - 1:line - 1] = payload
            else:
                end, indent, condition = payload
                for i in range(line - 1, end):
                    if lines[i].strip():
                        lines[i] = self.unit + lines[i]
                lines[line - 1:line - 1] = [indent + condition + "\n"]
        return "".join(lines)
