"""The complex side of the elementwise backward formulas (PyTorch's conjugate Wirtinger convention).

For a real loss L and z = x + iy, the gradient PyTorch propagates is dL/dx + i dL/dy. For a
holomorphic op with derivative f'(z) that is g * conj(f'(z)); the real formulas in ops/elementwise/derivatives.py
are linear in g with the factor f'(z), so conj(formula(conj(g), ...)) gives it without a second table.
abs, sgn and conj are not holomorphic: their formulas are written here. Complex ops whose formulas are
not holomorphic-safe (maximum, atan2...) are refused for complex inputs by ops/elementwise/plans.py.
"""
from __future__ import annotations

from ..elementwise import derivatives
from ..elementwise import plans as ew
from ..linalg.products import PRODUCT
from ..reductions.reduce import PROD, PROD_HALF
from .tensors import real

ap = ew.apply


def _conj(t):
    return ap("conj", t) if t.dtype.is_complex else t


def _holomorphic(fn):
    """For a complex gradient: conj(fn(conj(g), ...)) = g * conj(f'(z)), `fn` being the real formula."""
    if fn is None:
        return None

    def formula(g, o, *inputs):
        return _conj(fn(_conj(g), o, *inputs))
    formula.__wrapped__ = fn
    return formula


def _abs_grad(g, o, a):
    # |z| is real: the gradient is g * z/|z| (0 at 0), the sign for real inputs
    return g * ap("sgn", a)


def _sgn_grad(g, o, a):
    if not a.dtype.is_complex:
        return g * 0
    # s = z/|z|: (g - s * Re(g * conj(s))) / |z|, 0 where z is 0 (as torch's sgn_backward)
    size = ap("abs", a)
    grad = (g - o * real(g * ap("conj", o))) / size
    return ap("where", ap("eq", size, 0), grad * 0, grad)


# holomorphic formulas whose real spelling takes the wrong branch for complex inputs
_COMPLEX_SPELLING = {"acosh": lambda g, o, a: g * ap("rsqrt", a + 1) * ap("rsqrt", a - 1)}


_NOT_HOLOMORPHIC = {"abs": (_abs_grad,), "sgn": (_sgn_grad,), "conj": (lambda g, o, a: _conj(g),)}


def _holomorphic_node(fn):
    """A node backward `fn(node, g)` whose gradients are linear in g with holomorphic factors, made to
    give g * conj(factor) for complex gradients (as `_holomorphic`)."""
    def backward(node, g):
        if not g.dtype.is_complex:
            return fn(node, g)
        grads = fn(node, _conj(g))
        return tuple(None if x is None else _conj(x) for x in grads) if isinstance(grads, tuple) else _conj(grads)
    backward.__wrapped__ = fn
    return backward


# the records of products whose backward formulas (in their own files) multiply g by the other factors, unconjugated
_NODE_BACKWARDS = (PROD, PROD_HALF, PRODUCT)


def _install() -> None:
    for record in _NODE_BACKWARDS:
        if not hasattr(record.backward, "__wrapped__"):
            record.backward = _holomorphic_node(record.backward)
    # complex gradients read their own table (derivatives._backward picks it by the gradient's dtype): real ones
    # pay no wrapper
    for name, fns in derivatives.FORMULAS.items():
        if name not in _NOT_HOLOMORPHIC:
            derivatives.COMPLEX_FORMULAS[name] = tuple(_holomorphic(f) for f in fns)
    for name, fn in _COMPLEX_SPELLING.items():
        derivatives.COMPLEX_FORMULAS[name] = (_holomorphic(fn),)
    for name, fns in _NOT_HOLOMORPHIC.items():  # one formula for real and complex gradients
        derivatives.FORMULAS[name] = fns
        # what the new formulas read: abs its input alone (as torch's: its result may be written afterwards), sgn
        # both, conj nothing
        derivatives._READS[name] = tuple(derivatives._reads(fn) for fn in fns)


_install()
