"""Dynamic shapes for torch.export: Dim, dims, Dim.AUTO/STATIC/DYNAMIC, and how a traced program stays general in
the dims they mark.

Each dynamic dim of an input is a symbol (s0, s1, ...). While tracing, every node's value is computed once for the
example and once more per symbol with that symbol's size changed (a "probe"): a dim of any value that differs
between the example and a probe depends on that symbol, and reading it (`x.shape[0]`, `h.size(1)`) gives a SymInt,
an int that also records how it was computed (aten.sym_size.int of the input, then +, *, // ... nodes), so the
graph computes the size instead of baking the example's number in. A dim the program fixes to the example's size
(`x.view(5, 3)`) makes a probe fail: torch's "Constraints violated" error. Sizes are taken to be affine in each
symbol (a*s + b), which covers views, flattening and concatenation along one dynamic dim.
"""
from __future__ import annotations

import enum
import operator

from ..tensor import Tensor
from ..utils._pytree import tree_flatten

__all__ = ["Dim", "DimHint", "dims", "SymInt", "Symbol", "ValueRange", "INT_OO"]


class _IntOO:
    """Unbounded above (torch's int_oo)."""

    def __repr__(self) -> str:
        return "int_oo"

    def __ge__(self, other) -> bool:
        return True

    def __gt__(self, other) -> bool:
        return True


INT_OO = _IntOO()


class DimHint(enum.Enum):
    """Dim.AUTO (dynamic if the program allows it), Dim.STATIC, Dim.DYNAMIC."""
    AUTO = "AUTO"
    STATIC = "STATIC"
    DYNAMIC = "DYNAMIC"

    def __repr__(self) -> str:
        return f"DimHint({self.value})"


class Dim:
    """A named dynamic dim with an optional range (torch.export.Dim)."""

    AUTO, STATIC, DYNAMIC = DimHint.AUTO, DimHint.STATIC, DimHint.DYNAMIC

    def __init__(self, name: str, *, min: int | None = None, max: int | None = None) -> None:
        if not isinstance(name, str) or not name.isidentifier():
            raise ValueError(f"Dim name must be a valid identifier, got {name}")
        low = 0 if min is None else min
        if max is not None and max < low:
            raise ValueError(f"Cannot create Dim with inconsistent min={min}, max={max}")
        self.__name__, self.min, self.max = name, low, INT_OO if max is None else max

    def __repr__(self) -> str:
        bound = "" if self.max is INT_OO else f", max={self.max}"
        return f"Dim('{self.__name__}', min={self.min}{bound})"


def dims(*names: str, min: int | None = None, max: int | None = None) -> tuple:
    """Several Dims with one range."""
    return tuple(Dim(name, min=min, max=max) for name in names)


class Symbol:
    """A dynamic dim's symbol (sympy's Symbol in torch): prints as s0."""

    def __init__(self, index: int, name: str, low, high) -> None:
        self.index, self.dim_name, self.low, self.high = index, name, low, high

    def __repr__(self) -> str:
        return f"s{self.index}"

    __str__ = __repr__


class ValueRange:
    """A symbol's range: VR[low, high]."""

    def __init__(self, lower, upper) -> None:
        self.lower, self.upper = lower, upper

    def __repr__(self) -> str:
        return f"VR[{self.lower}, {self.upper}]"

    def __eq__(self, other) -> bool:
        return isinstance(other, ValueRange) and (self.lower, repr(self.upper)) == (other.lower, repr(other.upper))


class SymInt(int):
    """A size read from a traced value that depends on a dynamic dim: an int (the example's size) that carries the
    traced proxy computing it."""

    def __new__(cls, value: int, proxy) -> "SymInt":
        out = super().__new__(cls, value)
        out.proxy = proxy
        return out

    def _apply(self, op, other, reflected: bool = False):
        if not isinstance(other, int) or isinstance(other, bool):
            return op(int(self), other) if not reflected else op(other, int(self))
        if not isinstance(other, SymInt) and (op is operator.mul and other == 1 or op is operator.add and other == 0
                                              or op is operator.sub and other == 0 and not reflected):
            return self  # (no node for an identity)
        a = self.proxy
        b = other.proxy if isinstance(other, SymInt) else int(other)
        result = op(int(other), int(self)) if reflected else op(int(self), int(other))
        args = (b, a) if reflected else (a, b)
        return SymInt(result, a.tracer.create_proxy("call_function", op, args, {}))

    def __add__(self, other):
        return self._apply(operator.add, other)

    def __radd__(self, other):
        return self._apply(operator.add, other, True)

    def __sub__(self, other):
        return self._apply(operator.sub, other)

    def __rsub__(self, other):
        return self._apply(operator.sub, other, True)

    def __mul__(self, other):
        return self._apply(operator.mul, other)

    def __rmul__(self, other):
        return self._apply(operator.mul, other, True)

    def __floordiv__(self, other):
        return self._apply(operator.floordiv, other)

    def __rfloordiv__(self, other):
        return self._apply(operator.floordiv, other, True)

    def __mod__(self, other):
        return self._apply(operator.mod, other)

    def __neg__(self):
        return self._apply(operator.mul, -1)

    def __hash__(self) -> int:
        return int.__hash__(self)


def affine(values: list, symbols: list) -> list | None:
    """The size's dependence on each symbol from its example value and probe values: [(symbol, a, b)] with
    size = b + sum(a_i * (s_i - example_i)); None when the size does not change."""
    base = values[0]
    terms = []
    for symbol, (example, probe), value in zip(symbols, [(s.example, s.probe) for s in symbols], values[1:]):
        if value != base:
            slope = (value - base) / (probe - example)
            terms.append((symbol, slope))
    return terms or None


def spelled(base: int, terms: list) -> str:
    """A size as torch prints it: s0, 3*s0, s0 + 1."""
    offset = base - sum(slope * symbol.example for symbol, slope in terms)
    parts = []
    for symbol, slope in terms:
        slope = int(slope) if float(slope).is_integer() else slope
        parts.append(str(symbol) if slope == 1 else f"{slope}*{symbol}")
    text = " + ".join(parts)
    if offset:
        offset = int(offset) if float(offset).is_integer() else offset
        text = f"{text} + {offset}" if offset > 0 else f"{text} - {-offset}"
    return text


def parse(dynamic_shapes, fn, args: tuple, kwargs: dict) -> dict:
    """{id(input tensor): {dim: Dim or hint}} for the tensors `dynamic_shapes` marks (keyed by the forward's
    argument names, or a tuple/list in argument order; each spec a {dim: Dim} dict or a per-dim list)."""
    import inspect

    params = [p.name for p in list(inspect.signature(fn).parameters.values())[1:]]
    bound = dict(zip(params, args))
    bound.update(kwargs)
    if isinstance(dynamic_shapes, dict):
        unknown = [k for k in dynamic_shapes if k not in bound]
        if unknown:
            raise ValueError(f"dynamic_shapes: unexpected argument names {unknown}; the forward takes {params}")
        specs = [dynamic_shapes.get(name) for name in bound]
    else:
        specs = list(dynamic_shapes) + [None] * (len(bound) - len(dynamic_shapes))
    out: dict = {}
    for (name, value), spec in zip(bound.items(), specs):
        if spec is None:
            continue
        pairs = [(value, spec)] if isinstance(value, Tensor) else \
            list(zip(tree_flatten(value)[0], tree_flatten(spec, is_leaf=lambda x: isinstance(x, dict))[0]))
        for leaf, marks in pairs:
            if not isinstance(leaf, Tensor) or marks is None:
                continue
            items = marks.items() if isinstance(marks, dict) else enumerate(marks)
            chosen = {d % leaf.dim(): m for d, m in items if m is not None and m is not DimHint.STATIC}
            if chosen:
                out[id(leaf)] = chosen
    return out
