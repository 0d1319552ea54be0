"""Names in fx: node names unique in a graph (torch's rules), and how a function target reads in text and code."""
from __future__ import annotations

import builtins
import keyword
import operator
import re
from collections import defaultdict
from typing import Any

from ..nn import functional as F
from ._functional_calls import c_spellings

__all__ = ["Namespace", "qualified_name", "target_name", "canonical_name", "snake_case"]

_ILLEGAL = re.compile(r"[^0-9a-zA-Z_]+")
_SUFFIX = re.compile(r"(.*)_(\d+)$")
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")
# names the generated code needs for itself (besides Python's builtins)
RESERVED = ("torch", "inf", "nan", "NoneType", "device", "operator", "self")


def snake_case(s: str) -> str:
    """CamelCase -> camel_case, as torch names the nodes of a target."""
    return _CAMEL.sub(r"_\1", s).lower()


class Namespace:
    """Hands out unique Python identifiers from candidates: `add`, `add_1`, `add_2`; never a keyword or builtin."""

    def __init__(self) -> None:
        self._used: set = set()
        self._base_count: dict = defaultdict(int)
        self._obj_to_name: dict = {}

    def create_name(self, candidate: str, obj: Any = None) -> str:
        """A fresh identifier close to `candidate` (the same one again for an `obj` already named)."""
        if obj is not None and id(obj) in self._obj_to_name:
            return self._obj_to_name[id(obj)]
        candidate = _ILLEGAL.sub("_", candidate) or "_unnamed"
        if candidate[0].isdigit():
            candidate = "_" + candidate
        match = _SUFFIX.match(candidate)
        base, num = (candidate, None) if match is None else (match.group(1), int(match.group(2)))
        candidate = base if num is None else f"{base}_{num}"
        if not num:
            num = self._base_count[base]
        while candidate in self._used or self._illegal(candidate, obj):
            num += 1
            candidate = f"{base}_{num}"
        self._used.add(candidate)
        self._base_count[base] = num
        if obj is not None:
            self._obj_to_name[id(obj)] = candidate
        return candidate

    def _illegal(self, name: str, obj: Any) -> bool:
        if keyword.iskeyword(name) or name in RESERVED:
            return True
        if name in builtins.__dict__:
            return obj is not builtins.__dict__[name]
        return False

    def copy(self) -> "Namespace":
        """An independent namespace with the same names taken."""
        other = Namespace()
        other._used = set(self._used)
        other._base_count = defaultdict(int, self._base_count)
        other._obj_to_name = dict(self._obj_to_name)
        return other


_TABLE: dict = {}
_SPACES: list = []  # (torch's module path, module) of fx modules above this one, registered when they load


def register_space(prefix: str, module) -> None:
    """Spell the functions of `module` as `prefix.<name>` (fx/_symbolic_trace.py registers itself when it loads:
    it sits above this file)."""
    _SPACES.append((prefix, module))
    _TABLE.clear()  # (read again with the new space on the next call)


def torch_table() -> dict:
    """id(function) -> its torch spelling, for the functions of torch, torch.nn.functional and the sub-namespaces."""
    if _TABLE:
        return _TABLE
    import tidal.compat as compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
    spaces = [*_SPACES, ("torch.nn.functional", F)]
    for sub in ("linalg", "fft", "special"):
        spaces.append((f"torch.{sub}", getattr(compat, sub)))
    spaces.append(("torch", compat))
    for prefix, module in spaces:  # the last spelling wins (torch.relu over torch.nn.functional.relu), except
        for name, value in vars(module).items():  # that an alias never hides the function's own name
            if name.startswith("__") or not callable(value) or isinstance(value, type):
                continue
            held = _TABLE.get(id(value))
            own = canonical_name(value)
            if held is None or name == own or held[0].rsplit(".", 1)[-1] != own:
                _TABLE[id(value)] = (f"{prefix}.{name}", value)
    for name, value in vars(F).items():  # functions F defines itself read as torch.nn.functional.<name>
        if callable(value) and getattr(value, "__module__", "") == F.__name__ and not name.startswith("_"):
            _TABLE[id(value)] = (f"torch.nn.functional.{name}", value)
    _TABLE.update(c_spellings())  # the F functions torch implements in C: torch._C._nn.gelu, torch.conv2d
    return _TABLE


def canonical_name(fn: Any) -> str:
    """A function's own name: its __qualname__ when that is a plain identifier (tidal's ops: `neg`), else __name__."""
    qualname = getattr(fn, "__qualname__", "")
    return qualname if qualname.isidentifier() else getattr(fn, "__name__", "")


def target_name(fn: Any) -> str:
    """The name a call_function node of `fn` is named after: torch's name for a torch function."""
    packet = getattr(fn, "overloadpacket", None)
    if packet is not None:  # an ATen op overload (export's graphs): named after its op, `linear`, `_softmax`
        return "sym_size_int" if packet.__name__ == "sym_size" else packet.__name__  # (torch's name for sizes)
    spelled = qualified_name(fn)
    for sub in ("linalg", "fft", "special"):  # torch names these functions linalg_norm, fft_fft, ...
        if spelled.startswith(f"torch.{sub}."):
            return f"{sub}_{spelled.rsplit('.', 1)[-1]}"
    return spelled.rsplit(".", 1)[-1] if spelled.startswith("torch.") else getattr(fn, "__name__", type(fn).__name__)


def qualified_name(fn: Any) -> str:
    """How `fn` reads as a call_function target: operator.add, getattr, torch.flatten, torch.nn.functional.linear."""
    name = getattr(fn, "__name__", None)
    if name is not None and getattr(operator, name, None) is fn:
        return f"operator.{name}"
    spelled = getattr(fn, "_fx_qualified_name", None)  # (an ATen op overload: torch.ops.aten.linear.default)
    if isinstance(spelled, str):
        return spelled
    if name is not None and builtins.__dict__.get(name) is fn:
        return name
    hit = torch_table().get(id(fn))
    if hit is not None and hit[1] is fn:
        return hit[0]
    module = getattr(fn, "__module__", None) or ""
    short = name or getattr(fn, "__qualname__", repr(fn))  # (torch's _get_qualified_name: __name__)
    return f"{module}.{short}" if module else short


# the operators a Proxy overloads and the code prints as operators (codegen), and their reflected forms
MAGIC_METHODS = {
    "add": "{} + {}", "sub": "{} - {}", "mul": "{} * {}", "floordiv": "{} // {}", "truediv": "{} / {}",
    "mod": "{} % {}", "pow": "{} ** {}", "lshift": "{} << {}", "rshift": "{} >> {}", "and_": "{} & {}",
    "or_": "{} | {}", "xor": "{} ^ {}", "getitem": "{}[{}]", "matmul": "{} @ {}", "eq": "{} == {}",
    "ne": "{} != {}", "lt": "{} < {}", "gt": "{} > {}", "le": "{} <= {}", "ge": "{} >= {}",
    "neg": "-{}", "pos": "+{}", "invert": "~{}"}
REFLECTABLE = ("add", "sub", "mul", "floordiv", "truediv", "mod", "pow", "lshift", "rshift", "and_", "or_",
               "xor", "matmul")
