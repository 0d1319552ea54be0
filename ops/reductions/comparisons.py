"""Comparisons of whole tensors: equal, isclose, allclose and `element in tensor`.

Composites of tidal ops (isclose fuses); equal, allclose and `in` sync once for their Python bool.
"""
from __future__ import annotations

import numbers


from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.dim_args import need_tensor

__all__ = ["equal", "allclose", "isclose"]
METHODS: dict = {}


# -- whole-tensor comparisons ------------------------------------------------------------------------
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and equal elements (NaN is never equal)."""
    need_tensor("equal", "input", 1, input)
    need_tensor("equal", "other", 2, other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    a, b = input._v, other._v
    if input.dtype is other.dtype and a.blob is b.blob and (a.offset, a.strides) == (b.offset, b.strides):
        check_limited("equal", input.dtype)  # torch checks one tensor against NaN: no float8 kernel for that
    return bool(M.eq(input, other).all().item())


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise |input - other| <= atol + rtol * |other| (equal infinities are close; NaN if equal_nan)."""
    need_tensor("isclose", "input", 1, input)
    need_tensor("isclose", "other", 2, other)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"{input.dtype.scalar_name} did not match {other.dtype.scalar_name}")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    close = M.eq(input, other)
    if input.dtype is dt.bool_:
        return close
    if equal_nan and input.dtype.is_floating_point:
        close = M.logical_or(close, M.logical_and(M.isnan(input), M.isnan(other)))
    # integers are compared in the default float dtype, as torch does
    a, b = (input, other) if input.dtype.is_floating_point else (input.to(dt.get_default_dtype()),
                                                                  other.to(dt.get_default_dtype()))
    error = M.abs(M.sub(a, b))
    within = M.logical_and(M.isfinite(error), M.le(error, M.add(M.abs(M.mul(b, rtol)), atol)))
    return M.logical_or(close, within)


def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of `input` isclose to `other` (one sync)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def _contains(self: Tensor, element) -> bool:
    """`element in tensor`: whether any element equals it (one sync), as torch (not Python's row iteration)."""
    if not isinstance(element, (Tensor, numbers.Number)):
        raise RuntimeError(f"Tensor.__contains__ only supports Tensor or scalar, but you passed in a "
                           f"{type(element)}.")
    found = M.eq(element, self) if isinstance(element, Tensor) else M.eq(self, element)  # (torch's order)
    return bool(found.any().item())


METHODS.update(__contains__=_contains, equal=equal, allclose=allclose, isclose=isclose)
