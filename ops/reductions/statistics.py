"""Statistics and numerical calculus over tensors: quantile/nanquantile, cov/corrcoef, trapezoid and
cumulative_trapezoid, gradient, isin, unravel_index, histogram/histogramdd.

All but the histograms are composites of tidal ops (sort, gather, lerp, matmul...), so they differentiate
as PyTorch's do; the histograms count on the host in one kernel, as histc does.
"""
from __future__ import annotations

import builtins
import math
import numbers
import warnings

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..complex_numbers import tensors as C
from ..movement import views, slicing
from ..factories.creation import ones_like, zeros_like
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from .reduce import sum as _sum
from ..dispatch.return_types import return_type
from ..movement.shape_ops import cat
from ..indexing.sorting import searchsorted, sort
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.dim_args import need_tensor
from ..movement.diagonals import _wrap

__all__ = ["quantile", "nanquantile", "cov", "corrcoef", "trapezoid", "trapz", "cumulative_trapezoid", "gradient",
           "isin", "unravel_index", "histogram", "histogramdd"]
METHODS: dict = {}
_C_NAME = {dt.float32: "float", dt.float64: "double"}  # as torch's messages print them
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


# -- quantiles -----------------------------------------------------------------------------------
def _quantile(op: str, input: Tensor, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    op = "quantile"  # torch's checks name quantile() for nanquantile too
    if input.numel() == 0:
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if input.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype")
    scalar_q = not isinstance(q, Tensor) or q.ndim == 0
    if isinstance(q, Tensor):
        if q.ndim > 1:
            raise RuntimeError(f"{op}() q must be a scalar or 1D tensor")
        if q.dtype is not input.dtype:
            raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor")
        q_values = q.reshape(-1)
        if not bool(M.logical_and(M.ge(q_values, 0), M.le(q_values, 1)).all().item()):
            raise RuntimeError(f"{op}() q values must be in the range [0, 1]")
    else:
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        q_values = Tensor._from_array(np.array([q], dtype=input.dtype.np), input.dtype)
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    if dim is None:
        x = input.reshape(-1)
    else:
        dim = input._dim(dim, op) if input.ndim else 0
        x = views.movedim(input, dim, -1) if input.ndim else input.reshape(1)
    values = sort(x, -1)[0]
    n = values.shape[-1]
    nan = M.isnan(values)
    if ignore_nan:
        count = _sum(M.logical_not(nan), -1, keepdim=True).to(input.dtype)
        ranks = M.mul(q_values, M.sub(count, 1))
        ranks = M.where(M.eq(count, 0), float(n - 1), ranks)
    else:
        ranks = M.mul(q_values, float(n - 1)).expand(*values.shape[:-1], q_values.shape[0])
        ranks = M.where(nan.any(-1, keepdim=True), float(n - 1), ranks)
    if interpolation == "lower":
        ranks = M.floor(ranks)
    elif interpolation == "higher":
        ranks = M.ceil(ranks)
    elif interpolation == "nearest":
        ranks = M.round(ranks)
    below_index = ranks.to(dt.int64)
    below = values.gather(-1, below_index)
    if interpolation in ("linear", "midpoint"):
        weights = M.sub(ranks, below_index.to(ranks.dtype)) if interpolation == "linear" else \
            M.mul(ones_like(ranks), 0.5)
        above = values.gather(-1, M.ceil(ranks).to(dt.int64))
        below = M.lerp(below, above, weights)
    result = views.movedim(below, -1, 0)  # (Q, *batch)
    if keepdim:
        if dim is None:
            result = result.reshape((result.shape[0],) + (1,) * input.ndim)
        elif input.ndim:
            result = result.unsqueeze(dim + 1)
    return result[0] if scalar_q else result


def quantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear",
             out: Tensor | None = None) -> Tensor:
    """The q-th quantiles of input (along dim, or of all its values); NaN where a row holds NaN."""
    result = _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)
    return result if out is None else out.copy_(result)


def nanquantile(input: Tensor, q, dim: int | None = None, keepdim: bool = False, *, interpolation: str = "linear",
                out: Tensor | None = None) -> Tensor:
    """quantile ignoring NaN values (NaN only where a row is all NaN)."""
    result = _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)
    return result if out is None else out.copy_(result)


# -- covariance ------------------------------------------------------------------------------------
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance of the variables in input's rows (observations in columns)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                         f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not x.dtype.is_floating_point:
        x = x.to(dt.get_default_dtype())
    n = x.shape[1]
    w = None
    for name, weights in (("fweights", fweights), ("aweights", aweights)):
        if weights is not None and weights.ndim > 1:
            raise RuntimeError(f"cov(): expected {name} to have one or fewer dimensions but got {name} with "
                               f"{weights.ndim} dimensions")
        if weights is not None and weights.numel() != n:
            raise RuntimeError(f"cov(): expected {name} to have the same numel as there are observations in the "
                               f"input but got {weights.numel()} != {n}")
    if fweights is not None:
        if fweights.dtype.is_floating_point:
            raise RuntimeError("cov(): expected fweights to have integral dtype")
        if bool(M.lt(fweights, 0).any().item()):
            raise RuntimeError("cov(): fweights cannot be negative")
        w = fweights
    if aweights is not None:
        if not aweights.dtype.is_floating_point:
            raise RuntimeError("cov(): expected aweights to have floating point dtype")
        if bool(M.lt(aweights, 0).any().item()):
            raise RuntimeError("cov(): aweights cannot be negative")
        w = aweights if w is None else M.mul(w, aweights)
    if w is None:
        avg = x.mean(1)
        w_sum = float(n)
        norm = w_sum - correction
    else:
        w = w.to(x.dtype.to_real())  # (real weights for complex input too)
        w_sum = w.sum()
        avg = M.div(_sum(M.mul(x, w), 1), w_sum)
        norm = M.sub(w_sum, correction) if aweights is None else \
            M.sub(w_sum, M.div(M.mul(_sum(M.mul(w, aweights.to(w.dtype))), correction), w_sum))
    if isinstance(norm, Tensor):
        if bool(M.le(norm, 0).item()):
            warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the "
                          "number of observations.", RuntimeWarning, stacklevel=2)
        norm = M.clamp_min(norm, 0)
    elif norm <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number "
                      "of observations.", RuntimeWarning, stacklevel=2)
        norm = 0.0
    centered = M.sub(x, avg.unsqueeze(1))
    weighted = centered if w is None else M.mul(centered, w)
    c = M.div(weighted.matmul(centered.t().conj() if x.dtype.is_complex else centered.t()), norm)  # x x^H
    return c.reshape(()) if input.ndim < 2 or input.shape[0] == 1 else c  # one variable: a 0-d variance


def corrcoef(input: Tensor) -> Tensor:
    """Pearson correlation coefficients of the variables in input's rows, clipped to [-1, 1] (complex ones: each
    part clipped, as torch)."""
    c = cov(input)
    if c.ndim == 0:
        return M.div(c, c)
    diag = slicing.diagonal(c)
    std = M.sqrt(diag.real if diag.dtype.is_complex else diag)
    c = M.div(M.div(c, std.unsqueeze(1)), std.unsqueeze(0))
    if c.dtype.is_complex:
        return C.complex(M.clamp(c.real, -1, 1), M.clamp(c.imag, -1, 1))
    return M.clamp(c, -1, 1)


METHODS.update(quantile=quantile, nanquantile=nanquantile, cov=cov, corrcoef=corrcoef)


# -- integration and differentiation of samples -----------------------------------------------------
def _pair_slices(y: Tensor, dim: int) -> tuple:
    d = dim % y.ndim
    return y[(slice(None),) * d + (slice(1, None),)], y[(slice(None),) * d + (slice(None, -1),)]


def _spacing(y: Tensor, x, dx, dim: int, op: str):
    """The steps along `dim`: a number, or a tensor broadcastable against the sample pairs."""
    if x is None:
        return 1 if dx is None else dx
    if not isinstance(x, Tensor):
        return x
    if x.ndim == 1:
        if x.shape[0] != y.shape[dim]:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        steps = M.sub(x[1:], x[:-1])
        shape = [1] * y.ndim
        shape[dim % y.ndim] = steps.shape[0]
        return steps.reshape(shape)
    right, left = _pair_slices(x, dim)
    return M.sub(right, left)


def trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The trapezoidal rule along dim: sum of (y[i] + y[i+1]) / 2 * step."""
    if y.ndim == 0:  # (torch's words: its dim wraps to 0 first)
        raise IndexError("trapezoid: Dimension specified as 0 but tensor has no dimensions")
    if y.shape[dim] == 0:
        return M.sum(y, dim) if y.dtype.is_floating_point else M.sum(y, dim).to(dt.get_default_dtype())
    right, left = _pair_slices(y, dim)
    steps = _spacing(y, x, dx, dim, "trapezoid")
    if not isinstance(steps, Tensor):
        return M.mul(M.div(_sum(M.add(right, left), dim), 2), steps)
    return M.div(_sum(M.mul(steps, M.add(right, left)), dim), 2)


def trapz(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """trapezoid's older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y: Tensor, x=None, *, dx=None, dim: int = -1) -> Tensor:
    """The running trapezoidal integral along dim (one element shorter than y there)."""
    if y.ndim == 0:
        raise IndexError("cumulative_trapezoid: slice() cannot be applied to a 0-dim tensor.")
    right, left = _pair_slices(y, dim)
    steps = _spacing(y, x, dx, dim, "cumulative_trapezoid")
    areas = M.div(M.mul(steps, M.add(right, left)) if isinstance(steps, Tensor)
                  else M.mul(M.add(right, left), steps), 2)
    return areas.cumsum(dim)


def _gradient_1d(f: Tensor, d: int, h, edge_order: int) -> Tensor:
    """The derivative of f along d from central differences, h a number or a 1-D coordinate tensor."""
    def part(start, stop):
        return f[(slice(None),) * d + (slice(start, stop),)]

    def shaped(t: Tensor) -> Tensor:
        shape = [1] * f.ndim
        shape[d] = t.shape[0]
        return t.reshape(shape)
    if isinstance(h, Tensor):
        dx = M.sub(h[1:], h[:-1])
        hl, hr = shaped(dx[:-1]), shaped(dx[1:])
        a = M.div(M.neg(hr), M.mul(hl, M.add(hl, hr)))
        b = M.div(M.sub(hr, hl), M.mul(hl, hr))
        c = M.div(hl, M.mul(hr, M.add(hl, hr)))
        interior = M.add(M.add(M.mul(a, part(None, -2)), M.mul(b, part(1, -1))), M.mul(c, part(2, None)))
        h0, h1, hn1, hn2 = dx[0], dx[1] if dx.shape[0] > 1 else dx[0], dx[-1], dx[-2] if dx.shape[0] > 1 else dx[-1]
    else:
        interior = M.div(M.sub(part(2, None), part(None, -2)), 2.0 * h)
        h0 = h1 = hn1 = hn2 = h
    if edge_order == 1:
        first = M.div(M.sub(part(1, 2), part(0, 1)), h0)
        last = M.div(M.sub(part(-1, None), part(-2, -1)), hn1)
    else:  # second-order one-sided differences (numpy's formulas)
        a0 = -(2.0 * h0 + h1) / (h0 * (h0 + h1))
        b0 = (h0 + h1) / (h0 * h1)
        c0 = -h0 / (h1 * (h0 + h1))
        first = M.add(M.add(M.mul(part(0, 1), a0), M.mul(part(1, 2), b0)), M.mul(part(2, 3), c0))
        an = hn1 / (hn2 * (hn2 + hn1))
        bn = -(hn1 + hn2) / (hn2 * hn1)
        cn = (2.0 * hn1 + hn2) / (hn1 * (hn2 + hn1))
        last = M.add(M.add(M.mul(part(-3, -2), an), M.mul(part(-2, -1), bn)), M.mul(part(-1, None), cn))
    return cat([first, interior, last], d)


def gradient(input: Tensor, *, spacing=1, dim=None, edge_order: int = 1) -> tuple:
    """Estimates of d input / d x_i along each dim by central differences (one-sided at the edges)."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = list(range(input.ndim)) if dim is None else ([dim] if isinstance(dim, int) else list(dim))
    dims = [input._dim(d, "gradient") for d in dims]
    for i, d in enumerate(dims):
        if d in dims[:i]:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least edge_order+1")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's spacing and "
                               f"dim arguments to have the same length, but got a spacing argument of length "
                               f"{len(spacing)} and a dim argument of length {len(dims)}.")
        steps = list(spacing)
    else:
        steps = [1 if spacing is None else spacing] * len(dims)
    f = input if input.dtype.is_floating_point else input.to(dt.get_default_dtype())
    out = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor) and h.ndim == 0:
            h = float(h.item())
        out.append(_gradient_1d(f, d, h, edge_order))
    return tuple(out)


# -- membership and indices ---------------------------------------------------------------------
def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False) -> Tensor:
    """Whether each element of `elements` is in `test_elements` (a bool tensor shaped like elements)."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("isin() received an invalid combination of arguments: at least one of 'elements' and "
                        "'test_elements' must be a Tensor")
    a = elements if isinstance(elements, Tensor) else M._number_tensor(elements)
    b = test_elements if isinstance(test_elements, Tensor) else M._number_tensor(test_elements)
    common = dt.promote_types(a.dtype, b.dtype)
    check_limited("isin", common)
    if common.is_complex:  # (complex numbers have no order to search in)
        raise RuntimeError(f"Unsupported input type encountered for isin(): {torch_name(common)}")
    a, b = a.to(common), b.to(common).reshape(-1)
    if b.numel() == 0:
        found = zeros_like(a, dtype=dt.bool_)
    else:
        table = sort(b)[0]
        if common.is_floating_point:  # NaN is in no set, and breaks the binary search: it becomes the least element
            table = sort(M.where(M.isnan(table), table[0], table))[0]  # (sorted last, so table[0] is a number)
        at = M.clamp_max(searchsorted(table, a.reshape(-1)), b.numel() - 1)
        found = M.eq(table[at], a.reshape(-1)).reshape(a.shape)
    return M.logical_not(found) if invert else found


def _torch_type(value) -> str:
    """type(value) as torch's message prints it (a tidal tensor under torch's name)."""
    return "<class 'torch.Tensor'>" if isinstance(value, Tensor) else str(type(value))


def unravel_index(indices, shape) -> tuple:
    """The coordinates, one tensor per dim of `shape`, of flat `indices` into a tensor of that shape."""
    t = indices if isinstance(indices, Tensor) else M._number_tensor(indices)
    if t.dtype.is_floating_point or t.dtype is dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {t.dtype}")
    if isinstance(shape, numbers.Integral):  # (torch's type checks: a tensor, a float are refused, not converted)
        shape = (shape,)
    elif not isinstance(shape, (list, tuple)):
        raise TypeError(f"expected 'shape' to be int or sequence of ints, but got {_torch_type(shape)}")
    for s in shape:
        if not isinstance(s, numbers.Integral):
            raise TypeError(f"expected 'shape' sequence to only contain ints, but got {_torch_type(s)}")
    shape = tuple(int(s) for s in shape)
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got " + str(tuple(shape)))
    total = math.prod(shape)
    t = t.to(dt.int64)
    if t.numel() and total:
        lo, hi = int(t.min().item()), int(t.max().item())
        if lo < -total or hi >= total:
            raise ValueError("'indices' must be in range [-N, N) where N = prod(shape)")  # torch's check
    flat = M.where(M.lt(t, 0), M.add(t, total), t)
    coords = []
    for size in reversed(shape):
        coords.append(M.remainder(flat, size) if size else flat)
        flat = M.floor_divide(flat, size) if size else flat
    return tuple(reversed(coords))


# -- histograms ------------------------------------------------------------------------------------
def _edges_for(values: np.ndarray, bins: int, lo, hi, k: int = 0) -> np.ndarray:
    if lo is None:
        lo, hi = (float(values.min()), float(values.max())) if values.size else (0.0, 1.0)
        if not (np.isfinite(lo) and np.isfinite(hi)):  # (NaN or inf in the data: no bins to spread over)
            raise RuntimeError(f"torch.histogramdd: dimension {k}'s range [{lo:g}, {hi:g}] is not finite")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(lo, hi, bins + 1)


def _count(values: np.ndarray, edges: list, weight, density: bool) -> np.ndarray:
    """The (weighted) counts of rows of `values` in the bins between `edges` (last edge inclusive)."""
    keep = np.ones(values.shape[0], bool)
    index = np.zeros(values.shape[0], np.int64)
    for k, e in enumerate(edges):
        v = values[:, k]
        keep &= (v >= e[0]) & (v <= e[-1])
        pos = np.clip(np.searchsorted(e, v, side="right") - 1, 0, len(e) - 2)
        index = index * (len(e) - 1) + pos
    size = math.prod(len(e) - 1 for e in edges)
    w = None if weight is None else weight.reshape(-1)[keep]
    hist = np.bincount(index[keep], weights=w, minlength=size).astype(np.float64)
    if density:
        volume = np.ones(())
        for e in edges:
            volume = np.multiply.outer(volume, np.diff(e))
        hist = hist / (hist.sum() * volume.reshape(-1))
    return hist.reshape([len(e) - 1 for e in edges])


def _histogramdd_kernel(ins, outs, attrs) -> None:
    bins, ranges, density, weighted, given = attrs
    values = ins[0].astype(np.float64).reshape(-1, len(bins))
    weight = ins[1].astype(np.float64) if weighted else None
    edge_ins = ins[2 if weighted else 1:]
    edges = []
    for k, b in enumerate(bins):
        if given:
            e = edge_ins[k].astype(np.float64)
        else:
            lo, hi = (None, None) if ranges is None else ranges[2 * k:2 * k + 2]
            e = _edges_for(values[:, k], b, lo, hi, k)
        edges.append(e)
        outs[1 + k][...] = e
    outs[0][...] = _count(values, edges, weight, density)


def _histogramdd(op: str, input: Tensor, bins, range, weight, density: bool, dims: int) -> tuple:
    if input.dtype not in (dt.float32, dt.float64):
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{M.ew.torch_name(input.dtype)}'")
    given = not isinstance(bins, numbers.Integral) and not (isinstance(bins, (list, tuple)) and bins and
                                                            isinstance(bins[0], numbers.Integral))
    if isinstance(bins, numbers.Integral):
        bins = [int(bins)] * dims
    if len(bins) != dims:
        raise RuntimeError(f"torch.histogramdd: expected {dims} sequences of bin edges for a {dims}-dimensional "
                           f"histogram but got {len(bins)}" if given else
                           "histogramdd: The size of bins must be equal to the innermost dimension of the input.")
    if given:
        tensors = list(bins)
        counts = [t.numel() - 1 for t in tensors]
        for k, t in enumerate(tensors):
            if t.dtype is not input.dtype:
                raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the same dtype, "
                                   f"but got input with dtype {_C_NAME[input.dtype]} and bins for dimension {k} "
                                   f"with dtype {_C_NAME.get(t.dtype, t.dtype.name)}")
    else:
        tensors, counts = [], [int(b) for b in bins]
        if any(b <= 0 for b in counts):
            k = next(i for i, b in enumerate(counts) if b <= 0)
            raise RuntimeError(f"torch.{op}(): bins must be > 0, but got {counts[k]} for dimension {k}")
    if range is not None:
        range = [float(r) for r in range]
        for k in builtins.range(0, len(range), 2):
            if range[k] > range[k + 1]:
                raise RuntimeError(f"torch.{op}: min should not exceed max, but got min {range[k]} max "
                                   f"{range[k + 1]} for dimension {k // 2}")
    ins = (input,) + ((weight,) if weight is not None else ()) + tuple(tensors)
    attrs = (tuple(counts), None if range is None else tuple(range), bool(density), weight is not None, given)
    outs = HISTOGRAMDD(ins, attrs)
    return outs[0], tuple(outs[1:])


def _histogramdd_shapes(inputs: tuple, attrs: tuple) -> list:
    # the histogram (one dim per bin count), then each dimension's edges (one more than its bins), in input's dtype
    counts, d = attrs[0], inputs[0].dtype
    return [(counts, d)] + [((c + 1,), d) for c in counts]


# histogram/histogramdd's record: inputs (values (N, D), the weights if any, the given edges if any), attrs
# (bin counts, ranges, density, weighted, edges given); no gradient, as torch's
HISTOGRAMDD = Primitive("histogramdd", _histogramdd_shapes, cpu=_histogramdd_kernel, cuda=None)



def histogram(input: Tensor, bins=100, *, range=None, weight: Tensor | None = None, density: bool = False,
              out=None) -> tuple:
    """(hist, bin_edges): counts (or weights, or densities) of input's values in equal-width or given bins."""
    hist, edges = _histogramdd("histogram", input.reshape(-1, 1), bins if not isinstance(bins, Tensor) else [bins],
                               range, weight, density, 1)
    return return_type("histogram", ("hist", "bin_edges"))(hist, edges[0])


def histogramdd(input: Tensor, bins=10, *, range=None, weight: Tensor | None = None, density: bool = False,
                out=None) -> tuple:
    """(hist, bin_edges): the D-dimensional histogram of the rows of an (N, D) input."""
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    dims = input.shape[-1]
    hist, edges = _histogramdd("histogramdd", input.reshape(-1, dims), bins, range, weight, density, dims)
    return return_type("histogramdd", ("hist", "bin_edges"))(hist, edges)


METHODS.update(histogram=histogram)


# -- counting and differences ---------------------------------------------------------------------
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """Counts (or summed weights) of each non-negative integer in 1-D `input`; syncs for the output size."""
    need_tensor("bincount", "input", 1, input)
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
    need_tensor("histc", "input", 1, input)
    check_limited("histc" if min == max == 0 else "histc(min, max)", input.dtype)
    if not input.dtype.is_floating_point or input.dtype.is_complex:
        # complex input, data range asked: torch fails in aminmax first
        kernel = "aminmax_cpu" if input.dtype.is_complex and min == max == 0 and input.numel() else "histogram_cpu"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{input.dtype.scalar_name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histogram(): bins must be > 0, but got {bins} for dimension 0")
    if min > max:
        raise RuntimeError("torch.histc: max must be larger than min")
    return HISTC((input,), (int(bins), float(min), float(max)))


# histc's record: attrs (bins, min, max); no gradient, as torch's
HISTC = Primitive("histc", lambda inputs, attrs: [((attrs[0],), inputs[0].dtype)], cpu=_histc_kernel, cuda=None)


def diff(input: Tensor, n: int = 1, dim: int = -1, prepend: Tensor | None = None,
         append: Tensor | None = None) -> Tensor:
    """The n-th forward difference along `dim`, after joining prepend / append; bool uses !=."""
    need_tensor("diff", "input", 1, input)
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


__all__ += ["bincount", "histc", "diff"]
METHODS.update(diff=diff, histc=histc, bincount=bincount)
