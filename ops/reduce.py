"""Reductions (sum, mean, max, var, norm, median...) and softmax built from them.

Each reduction is a kernel body (NumPy on the CPU) that reduces an array over some axes
with keepdims; the public function checks arguments, picks the result and accumulation
dtypes and the axes on the calling thread, and queues the body with `_reduce`.
The cumulative ops (cumsum...) live in ops/scan.py and share this plumbing.
"""
from __future__ import annotations

import builtins
import collections
import math
import numbers
import warnings

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from . import math_api as M
from .dispatch import launch, register_kernel
from .elementwise import torch_name

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "max", "min", "amax", "amin", "aminmax", "argmax",
           "argmin", "var", "std", "var_mean", "std_mean", "norm", "logsumexp", "any", "all", "count_nonzero",
           "median", "nanmedian", "mode", "softmax", "log_softmax"]
METHODS: dict = {}


# -- plumbing shared with ops/scan.py ----------------------------------------------------------
def return_type(name: str, fields: tuple) -> type:
    """A namedtuple class that prints like torch.return_types.<name>."""
    base = collections.namedtuple(name, fields)

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(fields, self))
        return f"tidal.return_types.{name}(\n{body})"
    return type(name, (base,), {"__slots__": (), "__repr__": __repr__})


def reduction_kernel(name: str):
    """Decorator: register `body(array, axes, extra) -> result(s)` as op `name`'s CPU kernel.

    The array arrives in the accumulation dtype (a 0-d input seen as shape (1,)); each result is
    reshaped into its output, so bodies may return keepdims-shaped arrays.
    """
    def deco(body):
        def kernel(ins, outs, attrs):
            axes, compute, extra = attrs
            a = ins[0]
            if a.ndim == 0:
                a = a.reshape(1)
            if compute is not None and a.dtype != compute:
                a = a.astype(compute)
            with np.errstate(all="ignore"):  # 0/0 and overflow give nan/inf (or int garbage), as in torch
                results = body(a, axes, extra)
                if not isinstance(results, tuple):
                    results = (results,)
                for out, res in zip(outs, results):
                    out[...] = np.reshape(res, out.shape)
        register_kernel(name, "cpu")(kernel)
        return body
    return deco


def dtype_arg(dtype, op: str) -> dt.dtype | None:
    """Check a `dtype=` argument."""
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    return dtype


def accumulate_dtype(x: Tensor, dtype: dt.dtype | None, op: str) -> dt.dtype:
    """The result dtype of sum-like ops: `dtype`, else int64 for integers and bool, else x's."""
    if dtype_arg(dtype, op) is not None:
        return dtype
    return x.dtype if x.dtype.is_floating_point else dt.int64


def _axes(x: Tensor, dim, op: str, empty_is_all: bool = True) -> tuple:
    """The dims to reduce, wrapped, in the order given; None (or () if `empty_is_all`) is every dim.

    A 0-d tensor is reduced as shape (1,), so its dims are (0,).
    """
    if dim is None:
        return tuple(range(builtins.max(x.ndim, 1)))
    if isinstance(dim, Tensor):
        dim = int(dim)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    if not dims:
        return tuple(range(builtins.max(x.ndim, 1))) if empty_is_all else ()
    out = []
    for d in dims:
        d = x._dim(d, op) % builtins.max(x.ndim, 1)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(out)


def one_axis(x: Tensor, dim, op: str) -> tuple:
    """A single int `dim`, wrapped, as an axes tuple (TypeError for tuples, as torch's int-dim ops)."""
    return (x._dim(dim, op) % builtins.max(x.ndim, 1),)


def _out_shape(x: Tensor, axes: tuple, keepdim: bool) -> tuple:
    if x.ndim == 0:
        return ()
    return tuple(1 if i in axes else s for i, s in enumerate(x._v.shape) if keepdim or i not in axes)


def _reduce(op: str, x: Tensor, axes: tuple, keepdim: bool, out_dtypes, compute: dt.dtype | None = None,
            extra=None):
    """Queue reduction `op` of `x` over `axes`; one output per dtype in `out_dtypes`."""
    shape = _out_shape(x, axes, keepdim)
    outs = launch(op, (x,), [(shape, d) for d in out_dtypes],
                  (axes, None if compute is None else compute.np, extra))
    return outs[0] if len(outs) == 1 else tuple(outs)


def _means_all(dim) -> bool:
    return dim is None or (isinstance(dim, (tuple, list)) and not dim)


def _as_given(dim, axes: tuple) -> tuple:
    """The dims as the caller wrote them (torch's messages for tuple-dim ops quote them unwrapped)."""
    if _means_all(dim):
        return axes
    return tuple(dim) if isinstance(dim, (tuple, list)) else (dim,)


def _require_nonempty(x: Tensor, axes: tuple, label: str, shown: tuple | None = None) -> None:
    """IndexError, as torch's, when a reduced dim of an op with no identity is empty."""
    for d, s in zip(axes, shown or axes):
        if x.ndim and x._v.shape[d] == 0:
            raise IndexError(f"{label} Expected reduction dim {s} to have non-zero size.")


def _require_dim_for_empty(x: Tensor, op: str, exc=RuntimeError, hint: bool = True) -> None:
    if x.numel() == 0:
        raise exc(f"{op}(): Expected reduction dim to be specified for input.numel() == 0."
                  + (" Specify the reduction dim with the 'dim' argument." if hint else ""))


def _require_float(x: Tensor, message: str, exc=RuntimeError) -> None:
    if not x.dtype.is_floating_point:
        raise exc(message.format(name=torch_name(x.dtype)))


def _count(a: np.ndarray, axes: tuple) -> int:
    return math.prod(a.shape[d] for d in axes)


# -- kernel bodies ---------------------------------------------------------------------------
for _name, _ufunc in (("sum", np.add), ("prod", np.multiply), ("amax", np.maximum), ("amin", np.minimum),
                      ("any", np.logical_or), ("all", np.logical_and)):
    reduction_kernel(_name)(lambda a, axes, _, ufunc=_ufunc: ufunc.reduce(a, axis=axes, keepdims=True))


@reduction_kernel("nansum")
def _nansum_body(a, axes, _):
    return np.add.reduce(np.where(np.isnan(a), 0, a) if a.dtype.kind == "f" else a, axis=axes, keepdims=True)


@reduction_kernel("mean")
def _mean_body(a, axes, _):
    return np.add.reduce(a, axis=axes, keepdims=True) / _count(a, axes)


@reduction_kernel("nanmean")
def _nanmean_body(a, axes, _):
    present = ~np.isnan(a)
    return np.add.reduce(np.where(present, a, 0), axis=axes, keepdims=True) / \
        np.add.reduce(present, axis=axes, keepdims=True)


@reduction_kernel("aminmax")
def _aminmax_body(a, axes, _):
    return np.minimum.reduce(a, axis=axes, keepdims=True), np.maximum.reduce(a, axis=axes, keepdims=True)


@reduction_kernel("count_nonzero")
def _count_nonzero_body(a, axes, _):
    return np.count_nonzero(a, axis=axes, keepdims=True)


@reduction_kernel("arg_extreme")
def _arg_extreme_body(a, axes, is_max):
    """Index of the first max (min) along one axis, or in the flattened array; NaN counts as extreme."""
    find = np.argmax if is_max else np.argmin
    if len(axes) != 1:
        return find(a.reshape(-1))
    return find(a, axis=axes[0], keepdims=True)


@reduction_kernel("extreme_with_index")
def _extreme_with_index_body(a, axes, is_max):
    index = _arg_extreme_body(a, axes, is_max)
    return np.take_along_axis(a, index, axes[0]), index


@reduction_kernel("logsumexp")
def _logsumexp_body(a, axes, _):
    top = np.maximum.reduce(a, axis=axes, keepdims=True, initial=-np.inf)
    top = np.where(np.isinf(top), 0, top)  # all -inf (or an inf) must not become inf - inf
    return np.log(np.add.reduce(np.exp(a - top), axis=axes, keepdims=True)) + top


@reduction_kernel("norm")
def _norm_body(a, axes, p):
    if p == "nuc":
        return np.linalg.norm(a, "nuc", axis=axes, keepdims=True)
    size = np.abs(a)
    if p in (math.inf, -math.inf):
        return (np.maximum if p > 0 else np.minimum).reduce(size, axis=axes, keepdims=True)
    if p == 0:
        return np.count_nonzero(size, axis=axes, keepdims=True)
    if p == 1:
        return np.add.reduce(size, axis=axes, keepdims=True)
    if p == 2:
        return np.sqrt(np.add.reduce(size * size, axis=axes, keepdims=True))
    return np.add.reduce(size ** p, axis=axes, keepdims=True) ** (1 / p)


@reduction_kernel("var_mean")
def _var_mean_body(a, axes, spec):
    correction, take_sqrt = spec
    n = _count(a, axes)
    mean = np.add.reduce(a, axis=axes, keepdims=True) / n
    dev = a - mean
    var = np.add.reduce(dev * dev, axis=axes, keepdims=True) / builtins.max(n - correction, 0)
    return (np.sqrt(var) if take_sqrt else var), mean


@reduction_kernel("median")
def _median_body(a, axes, ignore_nan):
    """Lower median along one axis (or of everything) and its index; NaN wins unless ignored."""
    if len(axes) != 1:
        a, axes = a.reshape(-1), (0,)
    axis, n = axes[0], a.shape[axes[0]]
    if n == 0:  # only reachable without a dim: torch returns nan
        return np.full(1, np.nan), np.zeros(1, np.int64)
    nan = np.isnan(a) if a.dtype.kind == "f" else None
    if nan is None or not nan.any():  # the common case: a linear-time selection
        index = np.take(np.argpartition(a, (n - 1) // 2, axis=axis), [(n - 1) // 2], axis=axis)
        return np.take_along_axis(a, index, axis), index
    order = np.argsort(a, axis=axis, kind="stable")  # NaNs sort last, in their original order
    count = n - np.count_nonzero(nan, axis=axis, keepdims=True)
    if ignore_nan:
        k = np.maximum((count - 1) // 2, 0)
    else:  # a row holding NaN reports its first NaN
        k = np.where(count < n, count, (n - 1) // 2)
    index = np.take_along_axis(order, k, axis)
    return np.take_along_axis(a, index, axis), index


@reduction_kernel("mode")
def _mode_body(a, axes, _):
    """The most frequent value along the axis (the smallest on ties) and its last index."""
    axis = axes[0]
    rows = np.moveaxis(a, axis, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    values = np.empty(flat.shape[0], a.dtype)
    indices = np.empty(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        uniq, counts = np.unique(row, return_counts=True)
        values[r] = uniq[np.argmax(counts)]
        hits = np.flatnonzero(row == values[r])
        indices[r] = hits[-1] if hits.size else 0  # NaN matches nothing
    shape = rows.shape[:-1] + (1,)
    return (np.moveaxis(values.reshape(shape), -1, axis), np.moveaxis(indices.reshape(shape), -1, axis))


# -- sums and means --------------------------------------------------------------------------
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Sum over `dim` (int, tuple, None or () for all); integers and bool sum to int64."""
    out = accumulate_dtype(input, dtype, "sum")
    return _reduce("sum", input, _axes(input, dim, "sum"), keepdim, [out], out.compute)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Sum treating NaN as zero."""
    out = accumulate_dtype(input, dtype, "nansum")
    return _reduce("nansum", input, _axes(input, dim, "nansum"), keepdim, [out], out.compute)


def _mean_dtype(x: Tensor, dtype: dt.dtype | None, op: str) -> dt.dtype:
    if dtype_arg(dtype, op) is None:
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a floating "
                               f"point or complex dtype. Got: {torch_name(x.dtype)}")
        return x.dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be either a floating "
                           f"point or complex dtype. Got: {torch_name(dtype)}")
    return dtype


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Arithmetic mean over `dim` (floating inputs, or a floating `dtype`)."""
    out = _mean_dtype(input, dtype, "mean")
    return _reduce("mean", input, _axes(input, dim, "mean"), keepdim, [out], out.compute)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Mean of the non-NaN elements."""
    _require_float(input, "nanmean(): expected input to have floating point or complex dtype but got {name}")
    out = _mean_dtype(input, dtype, "nanmean")
    return _reduce("nanmean", input, _axes(input, dim, "nanmean"), keepdim, [out], out.compute)


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Product over one dim (or of everything); integers and bool multiply in int64."""
    out = accumulate_dtype(input, dtype, "prod")
    axes = _axes(input, None, "prod") if dim is None else one_axis(input, dim, "prod")
    return _reduce("prod", input, axes, keepdim and dim is not None, [out], out.compute)


# -- extremes --------------------------------------------------------------------------------
def amax(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Maximum over `dim` (int or tuple; () or None for all); NaN propagates."""
    return _amax_amin("amax", input, dim, keepdim)


def amin(input: Tensor, dim=(), keepdim: bool = False) -> Tensor:
    """Minimum over `dim` (int or tuple; () or None for all); NaN propagates."""
    return _amax_amin("amin", input, dim, keepdim)


def _amax_amin(op: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    axes = _axes(x, dim, op)
    if _means_all(dim):
        _require_dim_for_empty(x, op)
    _require_nonempty(x, axes, f"{op}():", _as_given(dim, axes))
    return _reduce(op, x, axes, keepdim, [x.dtype], x.dtype.compute)


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
        return _reduce("amax" if op == "max" else "amin", x, _axes(x, None, op), False, [x.dtype], x.dtype.compute)
    axes = one_axis(x, dim, op)
    _require_nonempty(x, axes, f"{op}():")
    values, indices = _reduce("extreme_with_index", x, axes, keepdim, [x.dtype, dt.int64], x.dtype.compute,
                              op == "max")
    return (_max_type if op == "max" else _min_type)(values, indices)


def max(input: Tensor, dim=None, keepdim: bool = False, *, other: Tensor | None = None):
    """max(x): the largest value; max(x, dim): (values, indices); max(x, other): elementwise maximum."""
    return _extreme("max", input, dim, keepdim, other)


def min(input: Tensor, dim=None, keepdim: bool = False, *, other: Tensor | None = None):
    """min(x): the smallest value; min(x, dim): (values, indices); min(x, other): elementwise minimum."""
    return _extreme("min", input, dim, keepdim, other)


_aminmax_type = return_type("aminmax", ("min", "max"))


def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False):
    """(min, max) over one dim or everything, in one pass."""
    if dim is None:
        if input.numel() == 0:
            raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has "
                               "no identity.")
        axes = _axes(input, None, "aminmax")
    else:
        axes = one_axis(input, dim, "aminmax")
        _require_nonempty(input, axes, "aminmax:")
    return _aminmax_type(*_reduce("aminmax", input, axes, keepdim, [input.dtype] * 2, input.dtype.compute))


def _arg_extreme(op: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    if x.dtype is dt.bool_:
        raise RuntimeError(f"{op}(): does not support bool input")
    if dim is None:
        _require_dim_for_empty(x, op, IndexError, hint=False)
        axes = _axes(x, None, op)
    else:
        axes = one_axis(x, dim, op)
        _require_nonempty(x, axes, f"{op}():")
    return _reduce("arg_extreme", x, axes, keepdim, [dt.int64], x.dtype.compute, op == "argmax")


def argmax(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first maximum along `dim` (of the flattened tensor if None)."""
    return _arg_extreme("argmax", input, dim, keepdim)


def argmin(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor:
    """Index of the first minimum along `dim` (of the flattened tensor if None)."""
    return _arg_extreme("argmin", input, dim, keepdim)


# -- spread and norms -----------------------------------------------------------------------
def _var_like(op: str, x: Tensor, dim, unbiased, keepdim: bool, correction, take_sqrt: bool, with_mean: bool):
    if isinstance(dim, bool):  # legacy var(x, unbiased)
        dim, unbiased = None, dim
    if unbiased is not None and correction is not None:
        raise TypeError(f"{op}() received an invalid combination of arguments: 'unbiased' and 'correction' "
                        "can't be given together")
    if unbiased is not None:
        correction = 1 if unbiased else 0
    elif correction is None:
        correction = 1
    _require_float(x, ("std and var" if not with_mean else op) + " only support floating point and complex dtypes")
    axes = _axes(x, dim, op)
    if math.prod(x._v.shape[d] for d in axes if x.ndim) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=3)
    dtypes = [x.dtype, x.dtype] if with_mean else [x.dtype]
    return _reduce("var_mean", x, axes, keepdim, dtypes, x.dtype.compute, (correction, take_sqrt))


def var(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Variance with Bessel's `correction` (default 1; the legacy `unbiased` flag also works)."""
    return _var_like("var", input, dim, unbiased, keepdim, correction, False, False)


def std(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
        correction: float | None = None) -> Tensor:
    """Standard deviation with Bessel's `correction` (default 1)."""
    return _var_like("std", input, dim, unbiased, keepdim, correction, True, False)


def var_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple:
    """(variance, mean) in one pass."""
    return _var_like("var_mean", input, dim, unbiased, keepdim, correction, False, True)


def std_mean(input: Tensor, dim=None, unbiased: bool | None = None, keepdim: bool = False, *,
             correction: float | None = None) -> tuple:
    """(standard deviation, mean) in one pass."""
    return _var_like("std_mean", input, dim, unbiased, keepdim, correction, True, True)


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype: dt.dtype | None = None) -> Tensor:
    """Vector p-norm over `dim` (p: number, inf, -inf, 'fro'), or the nuclear norm over two dims."""
    n_dims = None if dim is None else (1 if not isinstance(dim, (tuple, list)) else len(dim))
    if p is None:
        p = 2
    if isinstance(p, str):
        matrix_dims = n_dims if n_dims is not None else input.ndim
        if p not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")
        if p == "fro" and (n_dims is None or n_dims <= 2):
            p = 2
        elif p == "nuc" and dim is None and input.ndim < 2:
            raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
        elif matrix_dims != 2:
            dims = dim if isinstance(dim, (tuple, list)) else (dim,) if dim is not None else range(input.ndim)
            raise RuntimeError("linalg.matrix_norm: dim must be a 2-tuple. Got " + " ".join(map(str, dims)))
    elif not isinstance(p, numbers.Number) or isinstance(p, bool):
        raise TypeError(f"linalg_vector_norm(): argument 'ord' (position 2) must be Number, not {type(p).__name__}")
    else:
        p = float(p)
    op = "linalg.matrix_norm" if p == "nuc" else "linalg.vector_norm"
    _require_float(input, op + ": Expected a floating point or complex tensor as input. Got {name}")
    out = input.dtype
    if dtype_arg(dtype, "norm") is not None:
        if not dtype.is_floating_point:
            raise RuntimeError(f"{op}: dtype should be floating point or complex, but got {torch_name(dtype)}")
        if dt.promote_types(input.dtype, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({torch_name(input.dtype)}) should be convertible "
                               f"without narrowing to the specified dtype ({torch_name(dtype)})")
        out = dtype
    axes = _axes(input, dim, "norm")
    if p != "nuc" and (p < 0 or p == math.inf):  # no identity: an empty reduction is an error
        name = str(int(p)) if float(p).is_integer() else str(p)
        if _means_all(dim) and input.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because the "
                               "operation does not have an identity")
        for d, shown in zip(axes, _as_given(dim, axes)):
            if input.ndim and input._v.shape[d] == 0:
                raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {shown}"
                                   "because this dimension is empty and the operation does not have an identity")
    return _reduce("norm", input, axes, keepdim, [out], out.compute, p)


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input))) over `dim`, computed stably; integers give the default float."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not NoneType")
    out = input.dtype if input.dtype.is_floating_point else dt.get_default_dtype()
    return _reduce("logsumexp", input, _axes(input, dim, "logsumexp"), keepdim, [out], out.compute)


# -- logic and counting ---------------------------------------------------------------------
def _any_all(op: str, x: Tensor, dim, keepdim: bool) -> Tensor:
    out = dt.uint8 if x.dtype is dt.uint8 else dt.bool_
    return _reduce(op, x, _axes(x, dim, op, empty_is_all=False), keepdim, [out], x.dtype.compute)


def any(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether any element along `dim` is nonzero (dim=() tests each element)."""
    return _any_all("any", input, dim, keepdim)


def all(input: Tensor, dim=None, keepdim: bool = False) -> Tensor:
    """Whether every element along `dim` is nonzero (dim=() tests each element)."""
    return _any_all("all", input, dim, keepdim)


def count_nonzero(input: Tensor, dim=None) -> Tensor:
    """The number of nonzero elements along `dim` (int, tuple or None)."""
    return _reduce("count_nonzero", input, _axes(input, dim, "count_nonzero"), False, [dt.int64],
                   input.dtype.compute)


# -- order statistics ------------------------------------------------------------------------
_median_type = return_type("median", ("values", "indices"))
_nanmedian_type = return_type("nanmedian", ("values", "indices"))
_mode_type = return_type("mode", ("values", "indices"))


def _median(op: str, x: Tensor, dim, keepdim: bool):
    ignore_nan = op == "nanmedian"
    axes = _axes(x, None, op) if dim is None else one_axis(x, dim, op)
    if dim is not None:
        _require_nonempty(x, axes, "median():")
    if x.dtype is dt.bool_ and (dim is not None or x.numel()):
        kernel = "median_cpu" if dim is None else "median_out"
        raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
    if dim is None:
        return _reduce("median", x, axes, False, [x.dtype], x.dtype.compute, ignore_nan)
    values, indices = _reduce("median", x, axes, keepdim, [x.dtype, dt.int64], x.dtype.compute, ignore_nan)
    return (_nanmedian_type if ignore_nan else _median_type)(values, indices)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """Lower median of everything (a tensor), or along `dim`: (values, indices). NaN propagates."""
    return _median("median", input, dim, keepdim)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """Lower median ignoring NaN; along `dim` it returns (values, indices)."""
    return _median("nanmedian", input, dim, keepdim)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False):
    """The most frequent value along `dim` (smallest on ties) and the index of its last occurrence."""
    axes = one_axis(input, dim, "mode")
    _require_nonempty(input, axes, "mode():")
    values, indices = _reduce("mode", input, axes, keepdim, [input.dtype, dt.int64], input.dtype.compute)
    return _mode_type(values, indices)


# -- softmax, composed of tidal ops so that the elementwise part fuses ------------------------
def _softmax_input(op: str, x: Tensor, dim, dtype) -> tuple:
    """(x in its compute dtype, the wrapped dim, the result dtype); errors as torch's."""
    if dim is None:
        raise TypeError(f"{op}(): argument 'dim' (position 2) must be int, not NoneType")
    if dtype_arg(dtype, op) is not None and dtype is not x.dtype:
        x = M.convert(x, dtype)
    d = one_axis(x, dim, op)[0]
    if not x.dtype.is_floating_point and x.numel():
        kernel = f"{op}_lastdim_kernel_impl" if d == builtins.max(x.ndim - 1, 0) else f"{op}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(x.dtype)}'")
    return (x if x.dtype.compute is x.dtype else M.convert(x, x.dtype.compute)), d, x.dtype


def _finish(result: Tensor, dtype: dt.dtype) -> Tensor:
    return result if result.dtype is dtype else M.convert(result, dtype)


def softmax(input: Tensor, dim: int, dtype: dt.dtype | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, shifted by the max for stability."""
    x, d, out = _softmax_input("softmax", input, dim, dtype)
    if x.numel() == 0:
        return Tensor._empty(x._v.shape, out, x.device)
    e = M.exp(M.sub(x, amax(x, d, keepdim=True)))
    return _finish(M.div(e, sum(e, d, keepdim=True)), out)


def log_softmax(input: Tensor, dim: int, dtype: dt.dtype | None = None) -> Tensor:
    """x - logsumexp(x) along `dim`, shifted by the max for stability."""
    x, d, out = _softmax_input("log_softmax", input, dim, dtype)
    if x.numel() == 0:
        return Tensor._empty(x._v.shape, out, x.device)
    shifted = M.sub(x, amax(x, d, keepdim=True))
    return _finish(M.sub(shifted, M.log(sum(M.exp(shifted), d, keepdim=True))), out)


METHODS.update({name: globals()[name] for name in __all__ if name not in ("var_mean", "std_mean")})

