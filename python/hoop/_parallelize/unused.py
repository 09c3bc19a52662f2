"""hoop-parallelize, --style ddp: layers of the model that its forward() never uses. After the
first backward DistributedDataParallel waits for a gradient of every parameter; one that
takes no part in forward (an auxiliary head kept for later, a decoder only generate() runs)
never gets one, and DDP stops the script at the next iteration ("Expected to have finished
reduction in the prior iteration"). Where the script's own model class (or a class of the
script it is built from) keeps such a layer, the wrap asks DDP to find unused parameters each
step. What forward reaches: its own body and the methods of self it calls, through the
script's classes the layers are made of. Code that reaches layers by name at run time
(self.children(), getattr(self, ...)) counts as using them all. A mixin of Converter: it uses
Scopes' classes, methods and lineage."""
import ast

from hoop._parallelize.edits import call_name, dotted

# torch.nn's layers without parameters: keeping one unused costs DDP nothing.
NO_PARAMETERS = {
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh", "Softmax",
    "LogSoftmax", "Softplus", "Hardtanh", "Hardswish", "Hardsigmoid", "Dropout", "Dropout1d", "Dropout2d",
    "Dropout3d", "AlphaDropout", "Flatten", "Unflatten", "Identity", "MaxPool1d", "MaxPool2d", "MaxPool3d",
    "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
    "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "ZeroPad2d", "ConstantPad2d",
}
DYNAMIC = {"children", "named_children", "modules", "named_modules", "parameters", "named_parameters", "_modules",
           "__dict__"}
MOVERS = ("to", "cuda", "cpu", "train", "float", "double", "half")


class UnusedParams:
    def model_class(self, model, stmt):
        """The script's class the model is an instance of, from its assignment before stmt
        (`model = Net()`, `Net().to(device)`, or a script function returning one), or None."""
        classes, fns = self.classes(), self.functions()
        values = [a.value for a in ast.walk(self.tree) if isinstance(a, ast.Assign) and a.lineno < stmt.lineno
                  and any(dotted(t) == model for t in a.targets)]
        for value in reversed(values):
            if self.model_class_of(value, classes) is not None:
                return self.model_class_of(value, classes)
            name = call_name(self.unmoved(value))
            if name in fns:  # get_model(): the class it returns
                made = [self.model_class_of(r.value, classes) for r in ast.walk(fns[name])
                        if isinstance(r, ast.Return) and r.value is not None]
                return next((c for c in made if c is not None), None)
        return None

    @staticmethod
    def unmoved(value):
        """`Net()` of `Net().to(device).cuda()`."""
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MOVERS:
            value = value.func.value
        return value

    def model_class_of(self, value, classes):
        return classes.get(call_name(self.unmoved(value)))

    def unused_layers(self, cls, seen=None):
        """["Class.attr"] for each layer that cls's __init__ keeps (self.attr = a call that may
        make parameters) and that forward() never reaches; the script's classes it is made of
        are looked into the same way."""
        seen = seen if seen is not None else set()
        if cls is None or cls.name in seen:
            return []
        seen.add(cls.name)
        methods, classes = self.methods(cls), self.classes()
        init, forward = methods.get("__init__"), methods.get("forward")
        if init is None or forward is None:
            return []
        used = self.reached_attrs(forward, methods)
        out = []
        for t, value in self.kept(init):
            if used is not None and t.attr not in used and self.may_have_parameters(value):
                out.append(f"{cls.name}.{t.attr}")
            for c in ast.walk(value):  # layers of the script's own classes, looked into
                if isinstance(c, ast.Call) and call_name(c) in classes:
                    out += self.unused_layers(classes[call_name(c)], seen)
        return out

    @staticmethod
    def kept(init):
        """[(self.attr, call)] for each call __init__ keeps: `self.a = C()`, `self.a, self.b = C(), D()`."""
        pairs = []
        for a in ast.walk(init):
            if not isinstance(a, ast.Assign):
                continue
            for t in a.targets:
                if isinstance(t, ast.Tuple) and isinstance(a.value, ast.Tuple) and len(t.elts) == len(a.value.elts):
                    pairs += zip(t.elts, a.value.elts)
                else:
                    pairs.append((t, a.value))
        return [(t, v) for t, v in pairs if isinstance(t, ast.Attribute) and dotted(t.value) == "self"
                and isinstance(v, ast.Call)]

    def reached_attrs(self, forward, methods):
        """The attributes of self that forward and the methods of self it calls read, or None
        where they reach layers by name at run time."""
        todo, done, attrs = [forward], set(), set()
        while todo:
            f = todo.pop()
            if f.name in done:
                continue
            done.add(f.name)
            for n in ast.walk(f):
                if isinstance(n, ast.Attribute) and dotted(n.value) == "self":
                    if n.attr in DYNAMIC:
                        return None
                    attrs.add(n.attr)
                    if n.attr in methods:
                        todo.append(methods[n.attr])
                elif isinstance(n, ast.Call) and call_name(n) in ("getattr", "vars") and n.args and \
                        dotted(n.args[0]) == "self":
                    return None
        return attrs

    def may_have_parameters(self, call):
        """Whether the call makes a layer that may hold parameters: torch.nn's (nn.Linear(...),
        nn.Parameter(...), containers), a class of the script's, a model zoo's constructor."""
        full = call_name(call) or ""
        name = full.rsplit(".", 1)[-1]
        if name in NO_PARAMETERS or name.endswith("Loss"):
            return False
        return full.startswith(("nn.", "torch.nn.", "models.", "torchvision.", "timm.")) or full in self.classes()
