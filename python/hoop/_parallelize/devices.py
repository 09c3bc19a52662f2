"""hoop-parallelize: one GPU per rank. The converted script pins each rank to its local rank's
GPU at start-up (hoop/parallelize.py); here, what in the script would still spread a rank over
other GPUs is changed. A mixin of Converter: it uses the converter's tree, parents, edits and
changes."""
import ast
import re
import types

from hoop._parallelize.edits import MARK, call_name, last_name

_CUDA_N = re.compile(r"cuda:(\d+)")
# A device string made from an index: f"cuda:{i}", "cuda:{}".format(i), "cuda:%d" % i, "cuda:" + str(i).
_FORMATS = ("cuda:{}", "cuda:%d", "cuda:%s", "cuda:%i")


def _region(l0, c0, l1, c1):
    """A stand-in node for the source from (l0, c0) to (l1, c1) (for Edits.replace)."""
    return types.SimpleNamespace(lineno=l0, col_offset=c0, end_lineno=l1, end_col_offset=c1)


def _device_string(node):
    """Whether node builds "cuda:<index>" from an index expression (its index node), else None."""
    if isinstance(node, ast.JoinedStr) and len(node.values) == 2 and isinstance(node.values[0], ast.Constant) \
            and node.values[0].value == "cuda:" and isinstance(node.values[1], ast.FormattedValue):
        return node.values[1].value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format" \
            and isinstance(node.func.value, ast.Constant) and node.func.value.value == "cuda:{}" \
            and len(node.args) == 1 and not node.keywords:
        return node.args[0]
    if isinstance(node, ast.BinOp) and isinstance(node.left, ast.Constant) and (
            (isinstance(node.op, ast.Mod) and node.left.value in _FORMATS[1:])
            or (isinstance(node.op, ast.Add) and node.left.value == "cuda:")):
        right = node.right  # "cuda:" + str(i): the index is i
        return right.args[0] if call_name(right) == "str" and len(right.args) == 1 else right
    return None


class Devices:
    def one_gpu_per_rank(self, local):
        """Each rank on its own GPU: the tutorials' "cuda:0" made "cuda" (the device set for the
        rank), and nn.DataParallel, which would spread every rank over all the GPUs, kept to the
        rank's one (horovod: device_ids=[local rank], its .module as before) or dropped (ddp:
        the DistributedDataParallel wrap gives the .module the script reads)."""
        sites = self.gpu_sites()
        numbers = self.gpu_numbers(sites)
        for c in ast.walk(self.tree):
            if isinstance(c, ast.Constant) and c.value == "cuda:0" and isinstance(self.parent.get(c), ast.expr) \
                    and len(numbers) < 2:
                self.e.replace(c, self.e.source(c).replace(":0", ""))
                self.changes.append(f"line {c.lineno}: 'cuda:0' made 'cuda', this rank's GPU (its local rank's)")
            elif isinstance(c, ast.Call) and last_name(c) == "DataParallel" and c.args \
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
        self.gpu_indices(local, sites, numbers)

    def gpu_sites(self):
        """The places the script names a GPU by index: (kind, call or expression, index node)."""
        sites = []
        for c in ast.walk(self.tree):
            name = call_name(c) or ""
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "cuda":
                device = c.args[0] if c.args else next((k.value for k in c.keywords if k.arg == "device"), None)
                if device is not None and not (isinstance(device, ast.Constant) and device.value is None):
                    sites.append(("cuda", c, device))
            elif name.split(".")[-2:] in (["cuda", "set_device"], ["cuda", "device"]) and len(c.args) == 1:
                sites.append(("set", c, c.args[0]))
            elif name.split(".")[-1] == "device" and name.split(".")[0] == "torch" and isinstance(c, ast.Call):
                kinds = [a for a in c.args[:1]] + [k.value for k in c.keywords if k.arg == "type"]
                index = c.args[1] if len(c.args) > 1 else next((k.value for k in c.keywords if k.arg == "index"), None)
                if index is not None and any(isinstance(k, ast.Constant) and k.value == "cuda" for k in kinds):
                    sites.append(("torch.device", c, index))
            elif _device_string(c) is not None:
                sites.append(("string", c, _device_string(c)))
        return sites

    def gpu_numbers(self, sites):
        """The GPU numbers the script writes: literal indices at the sites, and "cuda:N" strings."""
        numbers = {i.value for _, _, i in sites if isinstance(i, ast.Constant) and isinstance(i.value, int)}
        return numbers | {int(m.group(1)) for c in ast.walk(self.tree) if isinstance(c, ast.Constant)
                          and isinstance(c.value, str) for m in [_CUDA_N.fullmatch(c.value)] if m}

    def gpu_indices(self, local, sites, numbers):
        """The script's own GPU choice by index (the ImageNet example's --gpu: set_device(args.gpu),
        model.cuda(args.gpu), images.cuda(args.gpu), torch.device("cuda", args.gpu), f"cuda:{args.gpu}")
        would put every rank on that one GPU: each becomes this rank's GPU. A script that names
        several GPUs by number (a model split over GPUs) is left as it is, and listed."""
        if len(numbers) > 1:
            self.notes.append(f"line {sites[0][1].lineno if sites else 1}: the script names GPUs {sorted(numbers)} by "
                              "number (a model over several GPUs?): left as written; each rank's own GPU is only "
                              "its default device")
            return
        texts = set()
        for kind, c, index in sites:
            texts.add(self.e.source(index))
            if kind == "set":
                self.e.replace(index, local)
            elif kind == "string":
                self.e.replace(c, '"cuda"')
            else:
                self.drop_argument(c, index)
            self.changes.append(f"line {c.lineno}: GPU {self.e.source(index)} made this rank's GPU (its local rank's)")
        for c in ast.walk(self.tree):
            if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "to" and c.args:
                a = c.args[0]
                literal = isinstance(a, ast.Constant) and type(a.value) is int
                if literal or self.e.source(a) in texts - {"None"}:
                    self.e.replace(a, '"cuda"')
                    self.changes.append(f"line {c.lineno}: .to({self.e.source(a)}) made .to(\"cuda\"), this rank's GPU")
        self.visible_devices_note()

    def drop_argument(self, call, value):
        """Removes the argument (positional, or the keyword) whose value is `value` from call, with
        the comma that joined it to the others."""
        items = sorted(list(call.args) + list(call.keywords), key=lambda n: (n.lineno, n.col_offset))
        i = next(k for k, n in enumerate(items) if n is value or getattr(n, "value", None) is value)
        node = items[i]
        if i + 1 < len(items):  # "index, rest" -> "rest"
            nxt = items[i + 1]
            self.e.replace(_region(node.lineno, node.col_offset, nxt.lineno, nxt.col_offset), "")
        elif i > 0:  # "first, index" -> "first"
            prev = items[i - 1]
            self.e.replace(_region(prev.end_lineno, prev.end_col_offset, node.end_lineno, node.end_col_offset), "")
        else:
            self.e.replace(node, "")

    def visible_devices_note(self):
        for c in ast.walk(self.tree):
            if isinstance(c, ast.Constant) and c.value == "CUDA_VISIBLE_DEVICES":
                self.notes.append(f"line {c.lineno}: the script sets CUDA_VISIBLE_DEVICES: with one GPU per rank, "
                                  "each rank must still see the GPU of its local rank")
                return
