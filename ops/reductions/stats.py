"""Spread, norms, logsumexp and order statistics (var, std, norm, median, mode), with gradients.

Each is a reduction record (reduce.Reduction): a kernel body reduces a NumPy array with keepdims, the
public function validates on the calling thread and calls the record, whose backward, next to the op, is
written in tidal ops.
"""
from __future__ import annotations

import builtins
import math
import numbers
import warnings

import numpy as np

from ...autograd.grad_mode import no_grad
from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..elementwise.plans import torch_name
from ..dispatch.return_types import return_type
from .reduce import (ReduceAttrs, Reduction, _as_given, _axes, _count, _means_all, _require_float, _require_nonempty, dtype_arg,
                     indexed_backward, one_axis, reduce_by, restore, shared_backward, sum)
from .extremes import amax
from ..movement.view_grads import overload
from ..dispatch.limited_dtypes import check as check_limited
from ..indexing import tie_order
from ..dispatch.user_frame import user_stacklevel
from ..elementwise.copies import copy_
from ..indexing.scatter import check_out_grad, prepare_out

__all__ = ["var", "std", "var_mean", "std_mean", "norm", "logsumexp", "median", "nanmedian", "mode"]
METHODS: dict = {}


# -- kernel bodies ---------------------------------------------------------------------------
def _logsumexp_body(a, axes, _):
    # complex: shifted by the largest real part (torch's), so the imaginary part comes out in (-pi, pi]
    top = np.maximum.reduce(a.real if np.iscomplexobj(a) else a, axis=axes, keepdims=True, initial=-np.inf)
    top = np.where(np.isinf(top), 0, top)  # all -inf (or an inf) must not become inf - inf
    return np.log(np.add.reduce(np.exp(a - top), axis=axes, keepdims=True)) + top


def _norm_body(a, axes, p):
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


def _var_mean_body(a, axes, spec):
    correction, take_sqrt = spec[0], spec[1]
    n = _count(a, axes)
    mean = np.add.reduce(a, axis=axes, keepdims=True) / n
    dev = a - mean
    if dev.dtype.kind == "c":  # |x - mean|^2: a complex tensor's spread is real
        dev = np.abs(dev)
    var = np.add.reduce(dev * dev, axis=axes, keepdims=True) / builtins.max(n - correction, 0)
    return (np.sqrt(var) if take_sqrt else var), mean


def _median_body(a, axes, ignore_nan):
    """Lower median along one axis (or of everything) and its index; NaN wins unless ignored."""
    if len(axes) != 1:
        a, axes = a.reshape(-1), (0,)
    axis, n = axes[0], a.shape[axes[0]]
    if n == 0:  # only reachable without a dim: torch returns nan
        return np.full(1, np.nan), np.zeros(1, np.int64)
    nan = np.isnan(a) if a.dtype.kind == "f" else None
    if nan is None or not nan.any():  # the common case: a linear-time selection
        k = (n - 1) // 2
        value = np.take_along_axis(a, np.take(np.argpartition(a, k, axis=axis), [k], axis=axis), axis)
        # torch breaks ties by index: among the elements equal to the median, the one of rank k
        equal = a == value
        rank = k - np.count_nonzero(a < value, axis=axis, keepdims=True)
        index = np.argmax(np.cumsum(equal, axis=axis) > rank, axis=axis, keepdims=True)
        return value, index
    order = np.argsort(a, axis=axis, kind="stable")  # NaNs sort last, in their original order
    count = n - np.count_nonzero(nan, axis=axis, keepdims=True)
    if ignore_nan:
        k = np.maximum((count - 1) // 2, 0)
    else:  # a row holding NaN reports its first NaN
        k = np.where(count < n, count, (n - 1) // 2)
    index = np.take_along_axis(order, k, axis)
    return np.take_along_axis(a, index, axis), index


def _mode_body(a, axes, _):
    """The most frequent value along the axis and the index torch reports (see tie_order.mode_rows)."""
    return tie_order.mode_rows(a, axes[0])


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
    if x.dtype in dt.FLOAT8:  # torch has no float8 std/var kernel (the full reduction says so its own way)
        if dim is None:
            raise RuntimeError(f"std_var_all: Unsupported dtype {x.dtype.scalar_name}")
        check_limited("std", x.dtype)
    axes = _axes(x, dim, op)
    if math.prod(x._v.shape[d] for d in axes if x.ndim) - correction <= 0:
        warnings.warn(f"{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction "
                      "factor (input numel divided by output numel).", UserWarning, stacklevel=user_stacklevel())
    grad = needs_grad((x,))
    spread = x.dtype.to_real()  # complex input: a real var/std, a complex mean (as torch)
    dtypes = [spread, x.dtype] if with_mean or grad else [spread]  # (var/std keep the mean as a hidden output)
    whole = _means_all(dim) or x.ndim == 0  # (the backward's rule for too few degrees of freedom)
    outs = reduce_by(STD_MEAN if take_sqrt else VAR_MEAN, x, axes, keepdim, dtypes, x.dtype.compute,
                     (correction, take_sqrt, whole), node=op)
    return outs if with_mean or not grad else outs[0]


def _var_backward(node, g_spread, g_mean):
    """torch's var_backward (2 / dof * g * (x - mean)), std's (through g / (2 std), 0 where std is 0)
    and mean's, for the outputs that got a gradient."""
    x, *std_out = node.saved_tensors
    r = node.attrs
    correction, whole = r.extra[0], r.extra[2]
    n = math.prod(r.shape[d] for d in r.axes if r.shape)
    grad = None
    if g_spread is not None:
        g = restore(g_spread, r, expand=False)
        if std_out:
            spread = restore(std_out[0], r, expand=False)
            g = M.where(M.eq(spread, 0), 0.0, g / (spread * 2))
        # (the mean recomputed, as torch's var_backward: var_mean's mean output may be written in place since)
        dev = x - (x.mean(tuple(sorted(r.axes)), keepdim=True) if r.shape else x)
        if whole and n - correction <= 0:  # torch: NaN where x equals the mean, else inf
            grad = g * M.where(M.eq(dev, 0), math.nan, math.inf)
        else:
            grad = g * dev * (2.0 / (n - correction) if n != correction else math.inf)
    if g_mean is not None:
        from_mean = restore(g_mean, r) / n
        grad = from_mean if grad is None else grad + from_mean
    return grad


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


def _unregistered(*args, **kwargs):
    raise RuntimeError("norm(p='nuc'): ops/linalg/decompositions.py has not registered matrix_norm yet (tidal.ops loads it)")


# torch.norm's nuclear norm is linalg's matrix_norm (its gradient comes from svdvals): ops/linalg/decompositions.py, whose
# vector norms are this file's norm (so it imports this file), hands it over when it loads
_matrix_norm = _unregistered


def register_matrix_norm(fn) -> None:
    """Take linalg's matrix_norm for norm(p='nuc') (ops/linalg/decompositions.py calls this once, at import)."""
    global _matrix_norm
    _matrix_norm = fn


def norm(input: Tensor, p="fro", dim=None, keepdim: bool = False, dtype: dt.dtype | None = None) -> Tensor:
    """Vector p-norm over `dim` (p: number, inf, -inf, 'fro'), or the nuclear norm over two dims."""
    check_limited("norm", input.dtype)  # (float8: torch has no norm kernel)
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
        if dtype.is_complex != input.dtype.is_complex:
            kind = "complex" if input.dtype.is_complex else "real"
            raise RuntimeError(f"{op}: dtype should be {kind} for {kind} inputs, but got {torch_name(dtype)}")
        if dt.promote_types(input.dtype, dtype) is not dtype:
            raise RuntimeError(f"{op}: the dtype of the input ({torch_name(input.dtype)}) should be convertible "
                               f"without narrowing to the specified dtype ({torch_name(dtype)})")
        out = dtype
    if p != "nuc" and (p < 0 or p == math.inf):  # no identity: an empty reduction is an error
        _check_identity(input, dim, p)
    axes = _axes(input, dim, "norm")
    if p == "nuc":  # the sum of singular values: linalg's, whose gradient comes from svdvals
        return _matrix_norm(input, "nuc", tuple(axes), keepdim, dtype=dtype)
    # a complex input is reduced in its (complex) dtype into a real result
    return reduce_by(NORM, input, axes, keepdim, (out.to_real(),), out.compute, p)


def _check_identity(input: Tensor, dim, p: float) -> None:
    """torch's error for a norm without identity (p < 0, inf) over an empty dim; checked dim by dim, in the
    order given, before the dims are checked for repeats (a dim out of range is left to _axes)."""
    name = str(int(p)) if float(p).is_integer() else str(p)
    if _means_all(dim):
        if input.numel() == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on an empty tensor because the "
                               "operation does not have an identity")
        return
    for d in _as_given(dim, ()):
        if not isinstance(d, int) or not -input.ndim <= d < input.ndim:
            return
        if input._v.shape[d] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {name} norm on the dimension {d}"
                               "because this dimension is empty and the operation does not have an identity")


def _norm_backward(node, g):
    """torch's norm_backward, case by case in p; 0 where the norm is 0 (sgn: x/|x|, also for complex x)."""
    x, out = node.saved_tensors
    r = node.attrs
    p = r.extra
    if p == 0:  # piecewise constant: torch gives no gradient at all
        return None
    g, out = restore(g, r, expand=False), restore(out, r, expand=False)
    if p == 1:
        return M.sgn(x) * g
    if p == 2:
        return g * M.where(M.eq(out, 0), 0.0, x / out)
    if math.isinf(p):  # the max (min) of |x|, shared among ties; NaN elements take it
        size = M.abs(x)
        mask = M.logical_or(M.eq(size, out), M.isnan(size))
        return M.sgn(x) * (g / sum(mask, r.axes, keepdim=True) * mask)
    if p < 1:
        scaled = M.where(M.eq(x, 0), 0.0, M.sgn(x) * M.pow(M.abs(x), p - 1))
        return scaled * g * M.pow(out, 1 - p)
    scaled = M.sgn(x) * M.pow(M.abs(x), p - 1) if p < 2 else x * M.pow(M.abs(x), p - 2)
    return scaled * M.where(M.eq(out, 0), 0.0, g / M.pow(out, p - 1))


def logsumexp(input: Tensor, dim, keepdim: bool = False) -> Tensor:
    """log(sum(exp(input))) over `dim`, computed stably; integers give the default float."""
    if dim is None:
        raise TypeError("logsumexp(): argument 'dim' (position 2) must be tuple of ints, not NoneType")
    if input.dtype is dt.complex32:  # (torch's exp first)
        check_limited("exp", input.dtype)
    out = input.dtype if input.dtype.is_floating_point else dt.get_default_dtype()
    axes = _axes(input, dim, "logsumexp")
    if out in (dt.float16, dt.bfloat16) and input.numel():
        result = _logsumexp_half(input, axes, keepdim)
        LOGSUMEXP.attach((input,), (result,), ReduceAttrs(axes, out.compute.np, None, keepdim, (out,)))
        return result
    return reduce_by(LOGSUMEXP, input, axes, keepdim, (out,), out.compute)


def _logsumexp_half(x: Tensor, axes: tuple, keepdim: bool) -> Tensor:
    """torch's 16-bit logsumexp: its composite of 16-bit ops (each result rounded), the max where infinite as 0."""
    with no_grad():
        top = amax(x, axes, keepdim=True)
        top = M.where(M.isinf(top), 0.0, top)
        return M.add(M.log(sum(M.exp(M.sub(x, top)), axes, keepdim=keepdim)),
                     top if keepdim else top.reshape(tuple(s for i, s in enumerate(top.shape) if i not in axes)))


def _logsumexp_backward(node, g):
    x, out = node.saved_tensors
    return restore(g, node.attrs, expand=False) * M.exp(x - restore(out, node.attrs, expand=False)).conj()


# -- order statistics ------------------------------------------------------------------------
_median_type = return_type("median", ("values", "indices"))
_nanmedian_type = return_type("nanmedian", ("values", "indices"))
_mode_type = return_type("mode", ("values", "indices"))


def _median(op: str, x: Tensor, dim, keepdim: bool):
    ignore_nan = op == "nanmedian"
    axes = _axes(x, None, op) if dim is None else one_axis(x, dim, op)
    if dim is not None:
        _require_nonempty(x, axes, "median():")
    if (x.dtype is dt.bool_ or x.dtype.is_complex) and (dim is not None or x.numel()):
        kernel = "median_cpu" if dim is None else "median_out"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(x.dtype)}'")
    check_limited("median" if dim is None else "median_dim", x.dtype)
    if dim is None:  # the gradient is shared among the elements equal to the median, as in torch
        return reduce_by(MEDIAN_ALL, x, axes, False, (x.dtype,), x.dtype.compute, ignore_nan, node=op)
    values, indices = reduce_by(MEDIAN, x, axes, keepdim, (x.dtype, dt.int64), x.dtype.compute, ignore_nan,
                                node=overload(op, 1))
    return (_nanmedian_type if ignore_nan else _median_type)(values, indices)


def median(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out=None):
    """Lower median of everything (a tensor), or along `dim`: (values, indices). NaN propagates."""
    _out_needs_dim("median", dim, out)
    return _pair_into("median", input, _median("median", input, dim, keepdim), out)


def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False, *, out=None):
    """Lower median ignoring NaN; along `dim` it returns (values, indices)."""
    _out_needs_dim("nanmedian", dim, out)
    return _pair_into("nanmedian", input, _median("nanmedian", input, dim, keepdim), out)


def mode(input: Tensor, dim: int = -1, keepdim: bool = False, *, out=None):
    """The most frequent value along `dim` (smallest on ties) and the index torch's CPU kernel reports."""
    if out is not None and isinstance(out, Tensor):
        raise TypeError("mode(): argument 'out' must be tuple of Tensors, not Tensor")
    axes = one_axis(input, dim, "mode")
    _require_nonempty(input, axes, "mode():")
    if input.dtype.is_complex and input.numel():  # (torch's kernel refuses it only when it has work)
        raise NotImplementedError(f"\"mode_cpu\" not implemented for '{torch_name(input.dtype)}'")
    check_limited("mode", input.dtype)
    result = _mode_type(*reduce_by(MODE, input, axes, keepdim, (input.dtype, dt.int64), input.dtype.compute))
    return _pair_into("mode", input, result, out)


def _out_needs_dim(op: str, dim, out) -> None:
    if out is not None and dim is None:  # (the whole-tensor form has no out= overload in torch)
        raise TypeError(f'{op}() missing 1 required positional arguments: "dim"')


_OUT_TYPES = {op: return_type(op + "_out", ("values", "indices")) for op in ("median", "nanmedian", "mode")}


def _pair_into(op: str, input: Tensor, result, out):
    """`result` (values, indices) written into `out`=(values, indices), after torch's dtype checks (resized)."""
    if out is None:
        return result
    values, indices = out
    if values.dtype is not input.dtype:
        if op == "mode":
            raise RuntimeError(f"expected scalar type '{input.dtype.scalar_name}' but got '{values.dtype.scalar_name}' "
                               "for values output")
        raise RuntimeError(f"Expected tensor for 'values' to have the same type as tensor for argument #2 'self'; but "
                           f"type torch.{dt.LEGACY_TYPE_NAMES[values.dtype]} does not equal "
                           f"torch.{dt.LEGACY_TYPE_NAMES[input.dtype]} (while checking arguments for median)")
    if indices.dtype is not dt.int64:
        if op == "mode":
            raise RuntimeError(f"expected scalar type 'Long' but got '{indices.dtype.scalar_name}' for indices output")
        raise RuntimeError("Expected tensor for argument #1 'indices' to have scalar type Long; but got "
                           f"torch.{dt.LEGACY_TYPE_NAMES[indices.dtype]} instead (while checking arguments for median)")
    check_out_grad(op, values, (input,))
    for o, r in zip((values, indices), result):
        prepare_out(o, r._v.shape, r.dtype, (input,))
        copy_(o, r)
    return _OUT_TYPES[op](values, indices)


# -- the records ---------------------------------------------------------------------------------------
LOGSUMEXP = Reduction("logsumexp", _logsumexp_body, backward=_logsumexp_backward, saved=("input0", "output0"),
                      sbp="reduction")
NORM = Reduction("linalg_vector_norm", _norm_body, backward=_norm_backward, saved=("input0", "output0"))
# saved as torch's: the input (and std_mean's std); extra: (correction, take_sqrt, whole)
VAR_MEAN = Reduction("var_mean", _var_mean_body, backward=_var_backward, saved=("input0",), sbp="variance")
STD_MEAN = Reduction("std_mean", _var_mean_body, backward=_var_backward, saved=("input0", "output0"), sbp="variance")
MEDIAN_ALL = Reduction("median_all", _median_body, backward=shared_backward, saved=("input0", "output0"))
MEDIAN = Reduction("median", _median_body, backward=indexed_backward, saved=("output1",))  # along a dim
MODE = Reduction("mode", _mode_body, backward=indexed_backward, saved=("output1",))

METHODS.update({name: globals()[name] for name in __all__ if name not in ("var_mean", "std_mean")})
