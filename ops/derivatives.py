"""Backward formulas of the elementwise ops, one line each, written in tidal ops.

`FORMULAS[name](g, out, *inputs)` returns one gradient per input (None where there is
none); inputs may be Python scalars. Broadcasting and dtype are fitted by the engine.
The formulas are tidal ops, so they run on the VM, fuse, and support double backward.
"""
from __future__ import annotations

import math

from ..tensor import Tensor
from . import elementwise as ew
from . import math_api as M

ap = ew.apply
_LN2, _LN10, _2_SQRTPI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)


def _zero(g: Tensor) -> Tensor:
    return M.fill_(M.convert(g, g.dtype), 0)


def _tie_split(a, b, g, first_wins):
    # PyTorch splits the gradient evenly between equal inputs of maximum/minimum
    share = M.where(ap("eq", a, b), g * 0.5, M.where(first_wins, g, _zero(g)))
    return share, g - share


FORMULAS = {
    "add": lambda g, o, a, b: (g, g),
    "sub": lambda g, o, a, b: (g, -g),
    "mul": lambda g, o, a, b: (g * b, g * a),
    "div": lambda g, o, a, b: (g / b, -g * a / (b * b)),
    "maximum": lambda g, o, a, b: _tie_split(a, b, g, ap("gt", a, b)),
    "minimum": lambda g, o, a, b: _tie_split(a, b, g, ap("lt", a, b)),
    "fmax": lambda g, o, a, b: _tie_split(a, b, g, ap("eq", o, a)),
    "fmin": lambda g, o, a, b: _tie_split(a, b, g, ap("eq", o, a)),
    "pow": lambda g, o, a, b: (g * b * ap("pow", a, b - 1) if not isinstance(b, Tensor) else
                               g * b * ap("pow", a, b - 1),
                               M.where(ap("eq", a, 0), 0.0, g * o * ap("log", a))),
    "atan2": lambda g, o, a, b: (g * b / (a * a + b * b), -g * a / (a * a + b * b)),
    "hypot": lambda g, o, a, b: (g * a / o, g * b / o),
    "logaddexp": lambda g, o, a, b: (g * ap("exp", a - o), g * ap("exp", b - o)),
    "logaddexp2": lambda g, o, a, b: (g * ap("exp2", a - o), g * ap("exp2", b - o)),
    "remainder": lambda g, o, a, b: (g, -g * ap("floor_divide", a, b)),
    "fmod": lambda g, o, a, b: (g, -g * ap("trunc", a / b)),
    "floor_divide": lambda g, o, a, b: (_zero(g), _zero(g)),
    "copysign": lambda g, o, a, b: (g * ap("sign", a) * ap("sign", o), _zero(g)),
    "xlogy": lambda g, o, a, b: (g * ap("log", b) * ap("ne", a, 0), g * a / b),
    "neg": lambda g, o, a: (-g,),
    "positive": lambda g, o, a: (g,),
    "abs": lambda g, o, a: (g * ap("sign", a),),
    "sign": lambda g, o, a: (_zero(g),),
    "square": lambda g, o, a: (g * 2 * a,),
    "floor": lambda g, o, a: (_zero(g),),
    "ceil": lambda g, o, a: (_zero(g),),
    "trunc": lambda g, o, a: (_zero(g),),
    "round": lambda g, o, a: (_zero(g),),
    "frac": lambda g, o, a: (g,),
    "relu": lambda g, o, a: (g * ap("gt", o, 0),),
    "exp": lambda g, o, a: (g * o,),
    "exp2": lambda g, o, a: (g * o * _LN2,),
    "expm1": lambda g, o, a: (g * (o + 1),),
    "log": lambda g, o, a: (g / a,),
    "log2": lambda g, o, a: (g / (a * _LN2),),
    "log10": lambda g, o, a: (g / (a * _LN10),),
    "log1p": lambda g, o, a: (g / (a + 1),),
    "sqrt": lambda g, o, a: (g / (2 * o),),
    "rsqrt": lambda g, o, a: (g * -0.5 * o * o * o,),
    "reciprocal": lambda g, o, a: (-g * o * o,),
    "sin": lambda g, o, a: (g * ap("cos", a),),
    "cos": lambda g, o, a: (-g * ap("sin", a),),
    "tan": lambda g, o, a: (g * (o * o + 1),),
    "asin": lambda g, o, a: (g * ap("rsqrt", 1 - a * a),),
    "acos": lambda g, o, a: (-g * ap("rsqrt", 1 - a * a),),
    "atan": lambda g, o, a: (g / (a * a + 1),),
    "sinh": lambda g, o, a: (g * ap("cosh", a),),
    "cosh": lambda g, o, a: (g * ap("sinh", a),),
    "tanh": lambda g, o, a: (g * (1 - o * o),),
    "asinh": lambda g, o, a: (g * ap("rsqrt", a * a + 1),),
    "acosh": lambda g, o, a: (g * ap("rsqrt", a * a - 1),),
    "atanh": lambda g, o, a: (g / (1 - a * a),),
    "sigmoid": lambda g, o, a: (g * o * (1 - o),),
    "erf": lambda g, o, a: (g * _2_SQRTPI * ap("exp", -(a * a)),),
    "erfc": lambda g, o, a: (-g * _2_SQRTPI * ap("exp", -(a * a)),),
    "lgamma": lambda g, o, a: (g * ap("digamma", a),),
    "deg2rad": lambda g, o, a: (g * (math.pi / 180),),
    "rad2deg": lambda g, o, a: (g * (180 / math.pi),),
    "logit": lambda g, o, a: (g / (a * (1 - a)),),
    "sinc": lambda g, o, a: (g * M.where(ap("eq", a, 0), 0.0,
                                         (ap("cos", a * math.pi) * math.pi - o * math.pi) / (a * math.pi)),),
    "clamp": lambda g, o, a, lo, hi: (g * ap("logical_and", ap("ge", a, lo), ap("le", a, hi)),
                                      g * ap("lt", a, lo), g * ap("gt", a, hi)),
    "where": lambda g, o, c, a, b: (None, M.where(c, g, 0.0), M.where(c, 0.0, g)),
    "lerp": lambda g, o, a, end, w: (g * (1 - w), g * w, g * (end - a)),
}

USES_OUTPUT = {"exp", "exp2", "expm1", "sqrt", "rsqrt", "reciprocal", "tan", "tanh", "sigmoid", "relu",
               "pow", "hypot", "logaddexp", "logaddexp2", "fmax", "fmin", "copysign", "sinc"}


def backward_of(name: str):
    """The node backward for elementwise op `name`: unpacks saved inputs, applies the formula."""
    formula = FORMULAS[name]
    uses_out = name in USES_OUTPUT

    def backward(node, g):
        saved = node.saved_tensors
        out = saved[-1] if uses_out else None
        inputs = saved[:-1] if uses_out else saved
        return formula(g, out, *inputs)
    return backward


_cache: dict = {}


def record(name: str, args: tuple, out: Tensor) -> None:
    """Attach the backward node of elementwise op `name` to `out` (when it is differentiable)."""
    from ..autograd.graph import record as attach
    fn = _cache.get(name)
    if fn is None:
        if name not in FORMULAS:
            raise RuntimeError(f"the derivative for '{name}' is not implemented.")
        fn = _cache[name] = backward_of(name)
    saved = args + (out,) if name in USES_OUTPUT else args
    attach(name, fn, args, (out,), saved)
