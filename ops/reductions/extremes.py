"""Extremes: max, min, amax, amin, aminmax, argmax and argmin, with their gradients.

The gradient goes to the elements that won (split evenly among ties, as torch does), through the plumbing of
ops/reductions/reduce.py.
"""
from __future__ import annotations

import functools

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M, copies
from ..complex_numbers.tensors import refuse_complex
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.return_types import return_type
from ..indexing.scatter import check_out_grad, prepare_out
from ..movement.view_grads import overload
from .reduce import (MAX_FUSABLE, MIN_FUSABLE, Reduction, _as_given, _axes, _means_all, _require_dim_for_empty,
                     _require_nonempty, _ufunc_body, indexed_backward, one_axis, reduce_by, share_evenly, shared_backward)

__all__ = ["max", "min", "amax", "amin", "aminmax", "argmax", "argmin"]



# -- extremes --------------------------------------------------------------------------------
def amax(input: Tensor, dim=(), keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Maximum over `dim` (int or tuple; () or None for all); NaN propagates."""
    result = _amax_amin("amax", input, dim, keepdim)
    return result if out is None else _written("amax", input, (result,), (out,))[0]


def amin(input: Tensor, dim=(), keepdim: bool = False, *, out: Tensor | None = None) -> Tensor:
    """Minimum over `dim` (int or tuple; () or None for all); NaN propagates."""
    result = _amax_amin("amin", input, dim, keepdim)
    return result if out is None else _written("amin", input, (result,), (out,))[0]


def _amax_amin(op: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    axes = _axes(x, dim, op)
    if _means_all(dim):
        _require_dim_for_empty(x, op)
    _require_nonempty(x, axes, f"{op}():", _as_given(dim, axes))
    refuse_complex(x, f"\"{op[1:]}_values_cpu\" not implemented for '{{name}}'")
    check_limited(op, x.dtype)
    return reduce_by(AMAX if op == "amax" else AMIN, x, axes, keepdim, (x.dtype,), x.dtype.compute)


_amax_amin_backward = functools.partial(shared_backward, nan_wins=False)  # torch: a NaN result gives NaN grads


_max_type = return_type("max", ("values", "indices"))
_min_type = return_type("min", ("values", "indices"))


def _extreme(op: str, x: Tensor, dim, keepdim: bool, other) -> object:
    """max/min: of everything, along one dim with indices, or elementwise against `other`."""
    if isinstance(dim, Tensor) and other is None:
        dim, other = None, dim
    if other is not None:
        return M.maximum(x, other) if op == "max" else M.minimum(x, other)
    if dim is None:
        _require_dim_for_empty(x, op)
        refuse_complex(x, f"\"{op}_all\" not implemented for '{{name}}'")
        check_limited(op, x.dtype)
        axes = _axes(x, None, op)
        return reduce_by(MAX_ALL if op == "max" else MIN_ALL, x, axes, False, (x.dtype,), x.dtype.compute,
                         node=overload(op, 1))
    axes = one_axis(x, dim, op)
    _require_nonempty(x, axes, f"{op}():")
    refuse_complex(x, f"{op}(): does not support complex input", RuntimeError)
    check_limited(f"{op}_dim", x.dtype)
    is_max = op == "max"
    values, indices = reduce_by(MAX if is_max else MIN, x, axes, keepdim, (x.dtype, dt.int64), x.dtype.compute, is_max)
    return (_max_type if is_max else _min_type)(values, indices)


def max(input: Tensor, dim=None, keepdim: bool = False, *, other: Tensor | None = None):
    """max(x): the largest value; max(x, dim): (values, indices); max(x, other): elementwise maximum."""
    return _extreme("max", input, dim, keepdim, other)


def min(input: Tensor, dim=None, keepdim: bool = False, *, other: Tensor | None = None):
    """min(x): the smallest value; min(x, dim): (values, indices); min(x, other): elementwise minimum."""
    return _extreme("min", input, dim, keepdim, other)


_aminmax_type = return_type("aminmax", ("min", "max"))


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False, out=None):
    """(min, max) over one dim or everything, in one pass (into `out`=(min, max) when given)."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                               "no identity.")
        axes = _axes(input, None, "aminmax")
    else:
        axes = one_axis(input, dim, "aminmax")
        _require_nonempty(input, axes, "aminmax:")
    refuse_complex(input, "\"aminmax_cpu\" not implemented for '{name}'")
    check_limited("aminmax", input.dtype)
    result = _aminmax_type(*reduce_by(AMINMAX, input, axes, keepdim, (input.dtype,) * 2, input.dtype.compute))
    if out is not None:
        return _aminmax_type(*_written("aminmax", input, result, tuple(out)))
    return result


def _written(op: str, input: Tensor, results: tuple, outs: tuple) -> tuple:
    """`results` copied into the `out=` tensors, after torch's checks (grad, overlap, dtype; resized)."""
    check_out_grad(op, outs[0], (input,))
    for o, r in zip(outs, results):
        prepare_out(o, r._v.shape, input.dtype, (input,))
    return tuple(copies.copy_(o, r) for o, r in zip(outs, results))


def _aminmax_backward(node, g_min, g_max):
    x, low, high = node.saved_tensors
    parts = [share_evenly(g, x, out, node.attrs, False) for g, out in ((g_min, low), (g_max, high)) if g is not None]
    return parts[0] if len(parts) == 1 else parts[0] + parts[1]


def _arg_extreme(op: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    if x.dtype is dt.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")
    refuse_complex(x, f"{op}(): does not support complex input", RuntimeError)
    if dim is None:
        _require_dim_for_empty(x, op, IndexError, hint=False)
        axes = _axes(x, None, op)
    else:
        axes = one_axis(x, dim, op)
        _require_nonempty(x, axes, f"{op}():")
    check_limited(op, x.dtype)
    return reduce_by(ARGMAX if op == "argmax" else ARGMIN, x, axes, keepdim, (dt.int64,), x.dtype.compute,
                     op == "argmax")


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum along `dim` (of the flattened tensor if None)."""
    return _arg_extreme("argmax", input, dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum along `dim` (of the flattened tensor if None)."""
    return _arg_extreme("argmin", input, dim, keepdim)


def _aminmax_body(a, axes, _):
    return np.minimum.reduce(a, axis=axes, keepdims=True), np.maximum.reduce(a, axis=axes, keepdims=True)


def _arg_extreme_body(a, axes, is_max):
    """Index of the first max (min) along one axis, or in the flattened array; NaN counts as extreme."""
    find = np.argmax if is_max else np.argmin
    if len(axes) != 1:
        return find(a.reshape(-1))
    return find(a, axis=axes[0], keepdims=True)


def _extreme_with_index_body(a, axes, is_max):
    index = _arg_extreme_body(a, axes, is_max)
    return np.take_along_axis(a, index, axes[0]), index


# -- the records ---------------------------------------------------------------------------------------
AMAX = Reduction("amax", _ufunc_body("amax", np.maximum), backward=_amax_amin_backward, saved=("input0", "output0"),
                 fusable=MAX_FUSABLE, sbp="reduction")
AMIN = Reduction("amin", _ufunc_body("amin", np.minimum), backward=_amax_amin_backward, saved=("input0", "output0"),
                 fusable=MIN_FUSABLE, sbp="reduction")
# max() / min() of everything: amax's kernel, the gradient shared among ties (NaN wins), torch's node MaxBackward1
MAX_ALL = Reduction("max_all", _ufunc_body("amax", np.maximum), backward=shared_backward, saved=("input0", "output0"),
                    fusable=MAX_FUSABLE, sbp="reduction")
MIN_ALL = Reduction("min_all", _ufunc_body("amin", np.minimum), backward=shared_backward, saved=("input0", "output0"),
                    fusable=MIN_FUSABLE, sbp="reduction")
# max(x, dim) / min(x, dim): values and indices along a dim
MAX = Reduction("max", _extreme_with_index_body, backward=indexed_backward, saved=("output1",), sbp="reduction")
MIN = Reduction("min", _extreme_with_index_body, backward=indexed_backward, saved=("output1",), sbp="reduction")
AMINMAX = Reduction("aminmax", _aminmax_body, backward=_aminmax_backward, saved=("input0", "output0", "output1"))
ARGMAX = Reduction("argmax", _arg_extreme_body, sbp="reduction")
ARGMIN = Reduction("argmin", _arg_extreme_body, sbp="reduction")

METHODS = {name: globals()[name] for name in __all__}
