"""Cumulative ops along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp, with gradients.

Each is a primitive record (ops/dispatch/primitive.py): the reduction family's kernel template
(reduce.array_kernel: a body gets the array in its accumulation dtype and the axis), the scan shape rule (the
outputs keep the input's shape) and its backward. cumsum and logcumsumexp also run in reverse (last to
first): that is what their backward needs, and the reverse scan's backward is the forward one, so gradients
of any order stay scans.
"""
from __future__ import annotations

from typing import NamedTuple

import ml_dtypes
import numpy as np

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M, copies
from ..factories.creation import zeros_like
from ..dispatch.primitive import Primitive
from ..elementwise.plans import check_leaf_inplace, torch_name
from ..dispatch.return_types import return_type
from .reduce import Reduced, _prod, accumulate_dtype, array_kernel, dtype_arg, one_axis, sum
from ..dispatch.limited_dtypes import check as check_limited
from ..indexing.scatter import check_out_grad, prepare_out, scatter_add
from ..dispatch.mem_overlap import INTERNAL, has_internal_overlap
from ..windowed.windows import TENSOR_TYPE
from ..complex_numbers.tensors import conj

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
METHODS: dict = {}


def _directed(scan):
    """A kernel body running `scan(a, axis)` forward, or backward when its extra attr is true."""
    def body(a, axes, reverse):
        axis = axes[0]
        if reverse:
            return np.flip(scan(np.flip(a, axis), axis), axis)
        return scan(a, axis)
    return body


def _logaddexp_complex(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """log(exp(a) + exp(b)) for complex arrays as torch computes it: the larger real part plus
    log1p(exp(smaller - larger)) (`a` counts as the smaller on ties); NaN if either real part is; equal
    infinite real parts taken whole (-inf: `a`)."""
    swap = b.real < a.real
    lo, hi = np.where(swap, b, a), np.where(swap, a, b)
    out = hi + np.log1p(np.exp(lo - hi))
    same_inf = np.isinf(lo.real) & (lo.real == hi.real)
    out = np.where(same_inf, np.where(lo.real < 0, lo, np.log(np.exp(lo) + np.exp(hi))), out)
    return np.where(np.isnan(a.real) | np.isnan(b.real), complex(np.nan, np.nan), out)


def _logcumsumexp_scan(a: np.ndarray, axis: int) -> np.ndarray:
    if a.dtype.kind != "c":
        return np.logaddexp.accumulate(a, axis=axis)
    out = np.moveaxis(a.copy(), axis, 0)  # complex: one step at a time (NumPy's logaddexp is real only)
    acc = np.full(out.shape[1:], complex(-np.inf, 0), out.dtype)  # torch's scan starts from log(0)
    for i in range(out.shape[0]):
        acc = out[i] = _logaddexp_complex(acc, out[i])
    return np.moveaxis(out, 0, axis)


def _cum_extreme_body(a, axes, is_max):
    """Running max (min) and the index where it was last reached; NaN, once seen, wins."""
    axis = axes[0]
    values = (np.maximum if is_max else np.minimum).accumulate(a, axis=axis)
    reached = a == values
    if a.dtype.kind == "f":
        reached |= np.isnan(a) & np.isnan(values)
    # The running value only changes where it is reached, so the last index reached so far is the answer.
    positions = np.arange(a.shape[axis]).reshape((-1,) + (1,) * (a.ndim - axis - 1))
    return values, np.maximum.accumulate(np.where(reached, positions, 0), axis=axis)


class ScanAttrs(NamedTuple):
    """What a scan's kernel reads (the reduction template's (axes, compute, extra)) and its outputs' dtypes."""

    axes: tuple          # the scanned dim, as a one-axis tuple
    compute: np.dtype    # the dtype the scan runs in
    extra: object        # reverse (cumsum, logcumsumexp: last to first), or is_max (cummax / cummin)
    dtypes: tuple        # the outputs' dtypes


def _scan_shapes(inputs: tuple, attrs: ScanAttrs) -> list:
    return [(inputs[0]._v.shape, d) for d in attrs.dtypes]


def _scan_node(inputs: tuple, attrs: ScanAttrs) -> Reduced:
    """What a scan's backward reads: the input's shape, the axis and the direction."""
    return Reduced(inputs[0]._v.shape, attrs.axes, True, attrs.extra)


# -- running sums and products ---------------------------------------------------------------
def cumsum(input: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
    """Running sum along `dim`; integers and bool accumulate in int64."""
    return _cumsum(input, one_axis(input, dim, "cumsum"), accumulate_dtype(input, dtype, "cumsum"))


def _cumsum(x: Tensor, axes: tuple, out: dt.dtype, reverse: bool = False) -> Tensor:
    return CUMSUM((x,), ScanAttrs(axes, out.compute.np, reverse, (out,)))


def _cumsum_backward(node, g):
    r = node.attrs
    return _cumsum(g, r.axes, g.dtype, not r.extra)


def cumprod(input: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
    """Running product along `dim`; integers and bool accumulate in int64."""
    out = accumulate_dtype(input, dtype, "cumprod")
    axes = one_axis(input, dim, "cumprod")
    return CUMPROD((input,), ScanAttrs(axes, out.compute.np, None, (out,)))


def _cumprod_backward(node, g):
    """torch's cumprod_backward without its sync: before the first zero of a slice, the reverse
    running sum of g * y over x; at the first zero, the product before it times the running
    products after it (up to the second zero) weighted by g; after it, 0."""
    x, y = (t.conj() for t in node.saved_tensors)  # complex: the real formula on conjugates (torch's rule)
    r = node.attrs
    axes = r.axes
    if x.numel() <= 1 or r.shape[axes[0]] == 1:
        return g
    zero = M.eq(x, 0)
    zeros_so_far = _cumsum(zero, axes, dt.int64)
    before = M.eq(zeros_so_far, 0)
    first_span = M.eq(zeros_so_far, 1)
    head = _cumsum(M.where(before, y * g, 0.0), axes, g.dtype, reverse=True) / M.where(before, x, 1.0)
    prefix = _prod(M.where(before, x, 1.0), axes, True, y.dtype)
    running = cumprod(M.where(M.logical_and(first_span, M.logical_not(zero)), x, 1.0), axes[0])
    at_zero = prefix * sum(running * M.where(first_span, g, 0.0), axes, keepdim=True)
    return M.where(before, head, M.where(M.logical_and(zero, first_span), at_zero, 0.0))


def _in_place(scan: Primitive):
    op = scan.name

    def fn(self: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
        if dtype_arg(dtype, op + "_") is not None and dtype is not self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {torch_name(self.dtype)} and output tensor "
                               f"dtype {torch_name(dtype)} should match")
        if self.dtype is dt.bool_:
            raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
        check_limited(f"{op}(dtype=)", self.dtype)  # (computed in its own dtype)
        axes = one_axis(self, dim, op + "_")
        if has_internal_overlap(self):  # (torch's scan checks the written-to tensor; out= too, in prepare_out)
            raise RuntimeError(INTERNAL)
        compute = accumulate_dtype(self, None, op).compute
        grad = needs_grad((self,))
        if grad:
            check_leaf_inplace(self)
        # cumprod's backward reads the input, which the write overwrites: it saves a copy made first
        saved = (copies.clone(self), self) if grad and scan.saved else None
        scan.write((self,), (self,), ScanAttrs(axes, compute.np, False, (self.dtype,)), saved)
        return self
    fn.__name__ = op + "_"
    fn.__doc__ = f"In-place {op} along `dim`."
    return fn


# -- running extremes and logcumsumexp ---------------------------------------------------------
_cummax_type = return_type("cummax", ("values", "indices"))
_cummin_type = return_type("cummin", ("values", "indices"))


def cummax(input: Tensor, dim: int, *, out=None):
    """(running maximum, index of its last occurrence) along `dim` (into `out`=(values, indices) if given)."""
    return _cum_extreme("cummax", input, dim, True, out)


def cummin(input: Tensor, dim: int, *, out=None):
    """(running minimum, index of its last occurrence) along `dim` (into `out`=(values, indices) if given)."""
    return _cum_extreme("cummin", input, dim, False, out)


def _cum_extreme(op: str, x: Tensor, dim: int, is_max: bool, out=None):
    axes = one_axis(x, dim, op)
    if x.dtype.is_complex and x.numel():  # complex numbers have no order (an empty scan is no error)
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{torch_name(x.dtype)}'")
    check_limited(op, x.dtype)
    kind, scan = (_cummax_type, CUMMAX) if is_max else (_cummin_type, CUMMIN)
    attrs = ScanAttrs(axes, x.dtype.compute.np, is_max, (x.dtype, dt.int64))
    if out is not None:  # torch's checks on out (no grad, no overlap, its dtypes), then the scan into it
        check_out_grad(op, out[0], (x,))
        for o, dtype in zip(out, (x.dtype, dt.int64)):
            if o.dtype is not dtype:
                raise RuntimeError(f"expected scalar_type {TENSOR_TYPE[dtype]} but found {TENSOR_TYPE[o.dtype]}")
            prepare_out(o, x._v.shape, dtype, (x,))
        values, indices = scan((x,), attrs)
        for o, r in zip(out, (values, indices)):
            o.copy_(r)
        return kind(*out)
    return kind(*scan((x,), attrs))


def _cum_extreme_backward(node, g, _):
    """Each position's gradient goes to the index its running extreme came from (summed there)."""
    indices = node.saved_tensors[0]
    if not node.attrs.shape:
        return g
    return scatter_add(zeros_like(g), node.attrs.axes[0], indices, g)


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, computed stably (floating inputs)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{torch_name(input.dtype)}'")
    check_limited("logcumsumexp", input.dtype)
    return _logcumsumexp(input, one_axis(input, dim, "logcumsumexp"))


def _logcumsumexp(x: Tensor, axes: tuple, reverse: bool = False) -> Tensor:
    return LOGCUMSUMEXP((x,), ScanAttrs(axes, x.dtype.compute.np, reverse, (x.dtype,)))


def _logcumsumexp_backward(node, g):
    """sum over later j of g_j exp(x_i - y_j), in log space, positive and negative g apart (torch's formula).

    Both y (rounded to its dtype) and log|g_j| - y_j (log|g_j| rounded to the spacing of y's magnitude:
    1e-3 at y = 1e4 in float32) lose digits, so narrower floats redo y and the formula in float64: the
    gradient is then exact to their precision."""
    x, y = node.saved_tensors
    r = node.attrs
    if not r.shape or g.numel() == 0:
        return g
    if g.dtype.is_complex:  # torch's complex formula needs no split by sign
        return conj(M.exp(_logcumsumexp(M.log(conj(g)) - y, r.axes, not r.extra) + x))
    if g.dtype is not dt.float64:
        x = x.to(dt.float64)
        return _logcumsumexp_grad(x, _logcumsumexp(x, r.axes, r.extra), g.to(dt.float64), r).to(g.dtype)
    return _logcumsumexp_grad(x, y, g, r)


def _logcumsumexp_grad(x: Tensor, y: Tensor, g: Tensor, r) -> Tensor:
    lowest = float(ml_dtypes.finfo(g.dtype.np).min)
    size = M.log(M.abs(M.where(M.eq(g, 0), 1.0, g)))  # zeros take `lowest` below; no log(0) on the way

    def flow(log_part: Tensor) -> Tensor:
        return M.exp(_logcumsumexp(log_part - y, r.axes, not r.extra) + x)
    return flow(M.where(M.gt(g, 0), size, lowest)) - flow(M.where(M.lt(g, 0), size, lowest))


# -- the records -------------------------------------------------------------------------------------
def _scan_record(name: str, body, backward, saved: tuple = (), sbp: str | None = None) -> Primitive:
    return Primitive(name, _scan_shapes, cpu=array_kernel(body), cuda=None, backward=backward, saved=saved,
                     node_attrs=_scan_node, sbp=sbp)


CUMSUM = _scan_record("cumsum", _directed(lambda a, axis: np.cumsum(a, axis=axis)), _cumsum_backward, sbp="along_dim")
CUMPROD = _scan_record("cumprod", _directed(lambda a, axis: np.cumprod(a, axis=axis)), _cumprod_backward,
                       ("input0", "output0"), sbp="along_dim")
LOGCUMSUMEXP = _scan_record("logcumsumexp", _directed(_logcumsumexp_scan), _logcumsumexp_backward,
                            ("input0", "output0"))
# (the input saved too, as torch's: a later write into it is refused at backward)
CUMMAX = _scan_record("cummax", _cum_extreme_body, _cum_extreme_backward, ("output1", "input0"))
CUMMIN = _scan_record("cummin", _cum_extreme_body, _cum_extreme_backward, ("output1", "input0"))

METHODS.update({name: globals()[name] for name in __all__})
METHODS.update(cumsum_=_in_place(CUMSUM), cumprod_=_in_place(CUMPROD))
