"""Long-tail ops PyTorch scripts reach for: comparisons of whole tensors, grids, diagonals, distances,
counting (bincount, histc), differences and block matrices.

Nearly all are composites of tidal ops (so they fuse and differentiate); histc has a kernel, and
bincount and the index builders sync or build host data because their size depends on data.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..linalg import namespace as linalg_ns
from ..factories.creation import zeros
from ..dispatch.kernel_launch import launch
from ..dispatch.kernel_launch import register_kernel
from ..factories.ranges import arange
from .stats import norm as _norm
from ..movement.shape_ops import cat, stack
from ..dispatch.limited_dtypes import check as check_limited

__all__ = ["equal", "allclose", "isclose", "meshgrid", "diag", "diag_embed", "diagflat", "cdist", "bincount",
           "triu_indices", "tril_indices", "histc", "diff", "cartesian_prod", "block_diag", "inverse", "det"]
METHODS: dict = {}


def _need_tensor(op: str, arg: str, pos: int, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")


def _tensor_list(op: str, tensors: tuple) -> list:
    """`f(a, b)` and `f([a, b])` both work, as in torch."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        _need_tensor(op, "tensors", 1, t)
    return list(tensors)


# -- whole-tensor comparisons ------------------------------------------------------------------------
def equal(input: Tensor, other: Tensor) -> bool:
    """True when both have the same shape and equal elements (NaN is never equal)."""
    _need_tensor("equal", "input", 1, input)
    _need_tensor("equal", "other", 2, other)
    if tuple(input.shape) != tuple(other.shape):
        return False
    a, b = input._v, other._v
    if input.dtype is other.dtype and a.blob is b.blob and (a.offset, a.strides) == (b.offset, b.strides):
        check_limited("equal", input.dtype)  # torch checks one tensor against NaN: no float8 kernel for that
    return bool(M.eq(input, other).all().item())


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Elementwise |input - other| <= atol + rtol * |other| (equal infinities are close; NaN if equal_nan)."""
    _need_tensor("isclose", "input", 1, input)
    _need_tensor("isclose", "other", 2, other)
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


# -- grids -------------------------------------------------------------------------------------------
def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids (expanded views) from 0-D/1-D tensors; indexing 'ij' (default) or 'xy'."""
    tensors = _tensor_list("meshgrid", tensors)
    if indexing is None:
        warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing "
                      "argument.", UserWarning, stacklevel=2)
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for t in tensors:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: " + str(t))
    if len({t.dtype for t in tensors}) > 1:
        raise RuntimeError("meshgrid expects all tensors to have the same dtype")
    swap = indexing == "xy" and len(tensors) >= 2  # 'xy' is 'ij' with the first two inputs swapped
    if swap:
        tensors[0], tensors[1] = tensors[1], tensors[0]
    sizes = tuple(t.numel() for t in tensors)
    grids = []
    for k, t in enumerate(tensors):
        shape = [1] * len(tensors)
        shape[k] = sizes[k]
        grids.append(t.reshape(shape).expand(*sizes))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors) -> Tensor:
    """Every combination of the 1-D inputs' elements, one per row (the input itself for one tensor)."""
    tensors = _tensor_list("cartesian_prod", tensors)
    for t in tensors:
        if t.ndim != 1:
            raise RuntimeError(f"Expect a 1D vector, but got shape {list(t.shape)}")
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.flatten() for g in meshgrid(tensors, indexing="ij")], 1)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype: dt.dtype = dt.int64, device=None,
                 layout=None) -> Tensor:
    """The 2 x N (row, col) coordinates of the upper triangle (diagonal `offset`) of a row x col matrix."""
    return _tri_indices("triu_indices", np.triu_indices(row, offset, col), dtype, device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype: dt.dtype = dt.int64, device=None,
                 layout=None) -> Tensor:
    """The 2 x N (row, col) coordinates of the lower triangle (diagonal `offset`) of a row x col matrix."""
    return _tri_indices("tril_indices", np.tril_indices(row, offset, col), dtype, device)


def _tri_indices(name: str, rows_cols: tuple, dtype: dt.dtype, device) -> Tensor:
    if dtype not in (dt.int64, dt.int32):  # (torch's kernels have int32 and int64 loops only)
        raise NotImplementedError(f"\"{name}\" not implemented for '{dtype.scalar_name}'")
    t = Tensor._from_array(np.stack(rows_cols).astype(dtype.np).reshape(2, -1), dtype)
    return t if device is None else t.to(device)


# -- diagonals ---------------------------------------------------------------------------------------
def diag_embed(input: Tensor, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """Matrices (in dims dim1, dim2 of the result) whose `offset` diagonal holds the last dim of `input`."""
    _need_tensor("diag_embed", "input", 1, input)
    nd = input.ndim + 1
    a, b = _wrap(dim1, nd), _wrap(dim2, nd)
    if a == b:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    length = input.shape[-1] if input.ndim else 1
    v = input.reshape(1) if input.ndim == 0 else input
    n = length + abs(offset)
    # v padded to n: v[i] sits at row i (offset >= 0) or column i (offset < 0)
    v = cat([v, zeros(*v.shape[:-1], abs(offset), dtype=v.dtype, device=v.device)], -1)
    idx = arange(n, device=input.device)
    on_diag = M.eq(M.sub(idx.unsqueeze(0), idx.unsqueeze(1)), offset)  # [row, col]: col - row == offset
    along = v.unsqueeze(-1) if offset >= 0 else v.unsqueeze(-2)  # value indexed by row (or by column)
    out = M.where(on_diag, along, zeros((), dtype=v.dtype, device=v.device))
    return out.movedim((-2, -1), (a, b)) if (a, b) != (nd - 2, nd - 1) else out


def _wrap(d: int, n: int) -> int:
    if not -n <= d < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d % n


def diag(input: Tensor, diagonal: int = 0, *, out: Tensor | None = None) -> Tensor:
    """1-D input: a matrix with it on the `diagonal`; 2-D input: a copy of that diagonal."""
    _need_tensor("diag", "input", 1, input)
    if input.ndim == 1:
        res = diag_embed(input, diagonal)
    elif input.ndim == 2:
        res = input.diagonal(diagonal).clone()
    else:
        raise RuntimeError(f"diag(): Supports 1D or 2D tensors. Got {input.ndim}D")
    if out is not None:
        out.copy_(res)
        return out
    return res


def diagflat(input: Tensor, offset: int = 0) -> Tensor:
    """A matrix with the flattened input on diagonal `offset`."""
    _need_tensor("diagflat", "input", 1, input)
    return diag_embed(input.reshape(-1), offset)


def fill_diagonal_(self: Tensor, fill_value, wrap: bool = False) -> Tensor:
    """Fill the main diagonal in place (all dims equal when ndim > 2; `wrap` repeats it down tall matrices)."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) > 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    if self.ndim == 2:
        rows, cols = self.shape
        step = cols + 1 if wrap else rows  # torch's wrap restarts the diagonal one row below its end
        for start in range(0, rows, max(step, 1)):
            self[start:].diagonal().fill_(fill_value)
        return self
    d = self
    while d.ndim > 1:  # the diagonal of n equal dims, folded in pairwise: still a view of self
        d = d.diagonal(0, 0, -1)
    d.fill_(fill_value)
    return self


# -- distances, counting, differences ----------------------------------------------------------------
_CDIST_MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str = "use_mm_for_euclid_dist_if_necessary") -> Tensor:
    """p-norm distances between the rows of x1 (..., P, M) and of x2 (..., R, M): shape (..., P, R).

    Every compute_mode gives the same (direct) computation: torch's matmul form only trades accuracy
    for speed."""
    if compute_mode not in _CDIST_MODES:
        raise ValueError(f"{compute_mode} is not a valid value for compute_mode")
    _need_tensor("cdist", "x1", 1, x1)
    _need_tensor("cdist", "x2", 2, x2)
    for name, t in (("X1", x1), ("X2", x2)):
        if t.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: {t.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: {x2.shape[-1]}")
    for name, t in (("X1", x1), ("X2", x2)):
        if not t.dtype.is_floating_point or t.dtype.is_complex:
            raise RuntimeError(f"cdist only supports floating-point dtypes, {name} got: {t.dtype.scalar_name}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    if x1.dtype is not x2.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.scalar_name} but found {x2.dtype.scalar_name}")
    pairs = M.sub(x1.unsqueeze(-2), x2.unsqueeze(-3))  # (..., P, R, M)
    if p == 0:  # torch's cdist counts min(ceil|d|, 1): a NaN difference makes the distance NaN (a norm counts it)
        return M.clamp_max(M.ceil(M.abs(pairs)), 1).sum(-1)
    return _norm(pairs, float(p), -1)


def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts (or summed weights) of each non-negative integer in 1-D `input`; syncs for the output size."""
    _need_tensor("bincount", "input", 1, input)
    check_limited("bincount", input.dtype)
    if input.dtype.is_floating_point or input.dtype is dt.bool_:
        raise NotImplementedError(f"\"bincount_cpu\" not implemented for '{input.dtype.scalar_name}'")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    if input.ndim != 1:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is not None and (weights.ndim != 1 or weights.shape[0] != input.shape[0]):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    values = input._host_array()
    if values.size and values.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        counts, out_dtype = np.bincount(values, minlength=minlength), dt.int64
    else:
        out_dtype = dt.float32 if weights.dtype is dt.float32 else dt.float64
        counts = np.bincount(values, weights=weights._host_array().astype(np.float64), minlength=minlength)
    res = Tensor._from_array(counts.astype(out_dtype.np), out_dtype)
    return res if input.device.type == "cpu" else res.to(input.device)


@register_kernel("histc", "cpu")
def _histc_kernel(ins, outs, attrs) -> None:
    bins, lo, hi = attrs
    x = ins[0].astype(np.float64).ravel()
    if lo == hi and x.size:  # torch takes the data's range, widened by one when it is a single value
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise RuntimeError(f"torch.histc: range of [{lo}, {hi}] is not finite")
    x = x[(x >= lo) & (x <= hi)]
    idx = np.minimum(((x - lo) * bins / (hi - lo)).astype(np.int64), bins - 1)  # max lands in the last bin
    outs[0][...] = np.bincount(idx, minlength=bins)[:bins]


def histc(input: Tensor, bins: int = 100, min: float = 0, max: float = 0, *, out=None) -> Tensor:  # noqa: A002
    """Histogram of `bins` equal-width bins over [min, max] (the data's range when both are 0)."""
    _need_tensor("histc", "input", 1, input)
    check_limited("histc" if min == max == 0 else "histc(min, max)", input.dtype)
    if not input.dtype.is_floating_point or input.dtype.is_complex:
        # complex input, data range asked: torch fails in aminmax first
        kernel = "aminmax_cpu" if input.dtype.is_complex and min == max == 0 and input.numel() else "histogram_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.scalar_name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    (res,) = launch("histc", (input,), [((bins,), input.dtype)], (int(bins), float(min), float(max)))
    return res


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along `dim`, after joining prepend / append; bool uses !=."""
    _need_tensor("diff", "input", 1, input)
    if input.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    if n == 0:  # torch ignores prepend / append then
        return input
    dim = _wrap(dim, input.ndim)
    parts = []
    for extra in (prepend, input, append):
        if extra is not None:
            if extra.ndim != input.ndim:
                raise RuntimeError("diff expects prepend or append to be the same dimension as input")
            parts.append(extra)
    x = cat(parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        later, earlier = x.narrow(dim, 1, length - 1), x.narrow(dim, 0, length - 1)
        x = M.ne(later, earlier) if x.dtype is dt.bool_ else M.sub(later, earlier)
    return x


def block_diag(*tensors) -> Tensor:
    """A block-diagonal matrix of the 0-D/1-D/2-D inputs (0-D is 1x1, 1-D is one row), promoted dtype."""
    tensors = _tensor_list("block_diag", tensors)
    for k, t in enumerate(tensors):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {k} has "
                               f"{t.ndim} dimensions")
    if not tensors:
        return zeros(1, 0)
    out_dtype = tensors[0].dtype
    for t in tensors[1:]:
        out_dtype = dt.promote_types(out_dtype, t.dtype)
    blocks = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    width = sum(b.shape[1] for b in blocks)
    rows, left = [], 0
    device = tensors[0].device
    for b in blocks:
        h, w = b.shape
        pieces = [zeros(h, left, dtype=out_dtype, device=device), b.to(out_dtype),
                  zeros(h, width - left - w, dtype=out_dtype, device=device)]
        rows.append(cat(pieces, 1))
        left += w
    return cat(rows, 0)


inverse = linalg_ns.inv
det = linalg_ns.det

METHODS.update(__contains__=_contains, equal=equal, allclose=allclose, isclose=isclose, diag=diag,
               diag_embed=diag_embed, diagflat=diagflat, diff=diff, histc=histc, bincount=bincount, inverse=inverse, det=det, fill_diagonal_=fill_diagonal_)
