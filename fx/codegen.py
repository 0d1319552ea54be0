"""Python source from a Graph (torch.fx's codegen): one line per node, operators written as operators.

The text matches torch's: `add = x + y;  x = y = None` frees each value after its last use, call_module reads
`self.conv(x)`, a torch function `torch.flatten(view, 1)`. `PythonCode.globals` holds what the source names
(`torch` is tidal.compat, so the code runs under tidal).
"""
from __future__ import annotations

import builtins
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

from ..nn import functional
from ..tensor import Tensor
from ..tensor.device import device
from ..tensor.dtype import dtype
from ._aten import aten
from ._names import MAGIC_METHODS, REFLECTABLE, Namespace, qualified_name  # (the tables: re-exported)
from .node import Node

__all__ = ["PythonCode", "python_code", "MAGIC_METHODS", "REFLECTABLE"]

# operator functions written as Python operators in the code (and traced from the Proxy's dunders)
_FRAME = re.compile(r'^File "(.+)", line (\d+), in (.+)$')


@dataclass
class PythonCode:
    """The generated source of a graph and the globals it needs (torch.fx.graph.PythonCode)."""
    src: str
    globals: dict = field(default_factory=dict)
    _lineno_map: dict | None = None


def _format_target(base: str, target: str) -> str:
    out = base
    for part in target.split("."):
        out = f"{out}.{part}" if part.isidentifier() else f'getattr({out}, "{part}")'
    return out


class _TorchC:
    """`torch._C._nn` as generated code names it: the torch.nn.functional functions torch writes in C."""

    def __getattr__(self, name: str) -> Any:
        if name == "_nn":
            return functional
        raise AttributeError(f"torch._C has no attribute {name!r} in tidal")


class _CodeTorch:
    """The `torch` generated code runs with: tidal.compat, plus the `torch._C._nn.<fn>` spellings of torch's
    graphs (each bound to the tidal function the node calls)."""
    _C = _TorchC()

    def __getattr__(self, name: str) -> Any:
        import tidal.compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
        if name == "ops":
            return _CodeOps()
        return getattr(tidal.compat, name)

    def __repr__(self) -> str:
        return "<module 'torch' (tidal.compat)>"


class _CodeOps:
    """`torch.ops` as generated code names it: compat's, with the ATen ops of exported graphs (fx/_aten.py)."""

    def __getattr__(self, name: str) -> Any:
        if name == "aten":
            return aten
        import tidal.compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
        return getattr(tidal.compat.ops, name)


_CODE_TORCH: list = []


def _code_torch() -> _CodeTorch:
    if not _CODE_TORCH:
        _CODE_TORCH.append(_CodeTorch())
    return _CODE_TORCH[0]


class _Globals:
    """The names the code reads besides its own values, each bound to its object."""

    def __init__(self, namespace: Namespace) -> None:
        self.namespace = namespace
        self.values: dict = {"inf": math.inf, "nan": math.nan, "NoneType": type(None), "torch": _code_torch(),
                             "device": device, "operator": operator}

    def add(self, obj: Any) -> str:
        """The name the code uses for `obj`."""
        name = qualified_name(obj)
        head = name.split(".")[0]
        if name.startswith("torch."):
            return name
        if builtins.__dict__.get(name) is obj:
            return name
        if head == "operator" and getattr(operator, name[9:], None) is obj:
            name = "_" + name  # torch's global for an operator function called by name: _operator_abs
        short = self.namespace.create_name(name, obj)  # (torch's hint: the dotted name, dots made '_')
        self.values[short] = obj
        return short

    def repr(self, arg: Any) -> str:
        """`arg` as source text."""
        if isinstance(arg, Node):
            return arg.name
        if isinstance(arg, tuple) and hasattr(arg, "_fields"):
            inner = ", ".join(self.repr(a) for a in arg)
            return f"{self.add(type(arg))}({inner})"
        if isinstance(arg, tuple):
            inner = ", ".join(self.repr(a) for a in arg)
            return f"({inner},)" if len(arg) == 1 else f"({inner})"
        if isinstance(arg, list):
            return "[" + ", ".join(self.repr(a) for a in arg) + "]"
        if isinstance(arg, dict):
            return "{" + ", ".join(f"{k!r}: {self.repr(v)}" for k, v in arg.items()) + "}"
        if isinstance(arg, slice):
            return f"slice({self.repr(arg.start)}, {self.repr(arg.stop)}, {self.repr(arg.step)})"
        if isinstance(arg, dtype):
            return f"torch.{str(arg).split('.')[-1]}"
        if isinstance(arg, device):
            return f"device({str(arg)!r})"
        if callable(arg) and not isinstance(arg, type) and hasattr(arg, "__name__"):
            return self.add(arg)
        if isinstance(arg, type):
            return self.add(arg)
        return repr(arg)

    def annotation(self, t: Any) -> str:
        """` : type` for a placeholder's annotation ('' when there is none or it is not a plain class)."""
        if isinstance(t, str):  # a postponed annotation: torch binds the string to a global named from its repr
            short = self.namespace.create_name(repr(t), t)
            self.values[short] = t
            return f" : {short}"
        if not isinstance(t, type):
            return ""  # typing constructs are left out of the code
        if issubclass(t, Tensor) and t.__module__.startswith("tidal."):
            return " : torch.Tensor"
        if t.__module__ == "builtins":
            return f" : {t.__qualname__}"
        return f" : {self.add(t)}"

    def args(self, args: tuple, kwargs: dict) -> str:
        """Call arguments as source text: `a, 1, dim = 1`."""
        parts = [self.repr(a) for a in args] + [f"{k} = {self.repr(v)}" for k, v in kwargs.items()]
        return ", ".join(parts)


def python_code(graph, root_module: str = "self", verbose: bool = False) -> PythonCode:
    """The source of `def forward(self, ...)` running `graph`, with the globals it names (`verbose`: with
    torch's comments naming where the traced program made each run of nodes)."""
    namespace = graph._namespace.copy()
    glob = _Globals(namespace)
    nodes = list(graph.nodes)
    last_uses: dict = {}  # user -> the values it uses last
    seen: set = set()
    for user in reversed(nodes):
        for inp in user.all_input_nodes:
            if inp not in seen:
                seen.add(inp)
                last_uses.setdefault(user, []).append(inp)
    free_vars = [root_module]
    body: list = []
    wrapped: list = []
    summary = None
    for node in nodes:
        if verbose and node.op not in ("placeholder", "output"):
            text = f"\n# {_summary(node.stack_trace)}\n"
            if text != summary:
                summary = text
                body.append(text)
        line = _emit(node, glob, root_module, free_vars)
        if line is not None and node.type is not None and node.op not in ("placeholder", "output"):
            line = line.replace(f"{node.name} = ", f"{node.name}{glob.annotation(node.type)} = ", 1)  # annotate()
        if node.meta.get("is_wrapped") and node.op == "call_function":
            wrapped.append(glob.add(node.target))
        if line is None:
            continue
        if node.op == "output":
            body.append(line + "\n")
            continue
        dead = list(last_uses.get(node, []))
        if not node.users and node.op != "placeholder":
            dead.append(node)
        if node.op == "placeholder":
            dead = []
        body.append(line + (";  " + " = ".join([n.name for n in dead] + ["None"]) if dead else "") + "\n")
    if not any(n.op == "output" for n in nodes):
        body.append("pass\n")
    code = "".join(body).lstrip("\n")
    code = "\n".join("    " + line for line in code.split("\n"))
    wraps = "\n".join(f'torch.fx._symbolic_trace.wrap("{name}")' for name in dict.fromkeys(wrapped))
    src = f"\n{wraps}\n\ndef forward({', '.join(free_vars)}):\n{code}"
    return PythonCode(src, glob.values)


def _summary(stack_trace: str | None) -> str:
    """The innermost frame of a node's stack trace, as torch's verbose code names it."""
    lines = (stack_trace or "").strip().split("\n")
    for i in range(len(lines) - 2, -1, -1):
        found = _FRAME.match(lines[i].strip())
        if found:
            return f"File: {found.group(1)}:{found.group(2)} in {found.group(3)}, code: {lines[i + 1].strip()}"
    return "No stacktrace found for following nodes"


def _emit(node: Node, glob: _Globals, root: str, free_vars: list) -> str | None:
    name = node.name
    if node.op == "placeholder":
        default = f" = {glob.repr(node.args[0])}" if node.args else ""
        free_vars.append(f"{node.target}{glob.annotation(node.type)}{default}")
        raw = node.target.replace("*", "")
        return f"{name} = {raw}" if raw != name else None
    if node.op == "call_method":
        method = _format_target(glob.repr(node.args[0]), node.target)
        return f"{name} = {method}({glob.args(node.args[1:], node.kwargs)})"
    if node.op == "call_function":
        target = node.target
        short = getattr(target, "__name__", None)
        if short in MAGIC_METHODS and getattr(operator, short, None) is target and not node.kwargs:
            pattern = MAGIC_METHODS[short]
            if pattern.count("{}") == len(node.args):
                return f"{name} = {pattern.format(*(glob.repr(a) for a in node.args))}"
        if target is builtins.getattr and len(node.args) == 2 and isinstance(node.args[1], str) \
                and node.args[1].isidentifier() and not node.kwargs:
            return f"{name} = {_format_target(glob.repr(node.args[0]), node.args[1])}"
        spelled = node.meta.get("torch_spelling") or glob.add(target)  # (F.relu, also torch.relu: its F name)
        return f"{name} = {spelled}({glob.args(node.args, node.kwargs)})"
    if node.op == "call_module":
        return f"{name} = {_format_target(root, node.target)}({glob.args(node.args, node.kwargs)})"
    if node.op == "get_attr":
        return f"{name} = {_format_target(root, node.target)}"
    if node.op == "output":
        return f"return {glob.repr(node.args[0])}"
    raise NotImplementedError(f"node: {node.op} {node.target}")
