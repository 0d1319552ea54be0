"""Reductions (sum, mean, prod, any, all...) and the plumbing every reduction shares, with their gradients.

Each reduction is a kernel body (NumPy on the CPU) that reduces an array over some axes
with keepdims; the public function checks arguments, picks the result and accumulation
dtypes and the axes on the calling thread, queues the body with `_reduce`, and, when the
input requires grad, records a node whose backward (written in tidal ops, next to the op)
broadcasts the gradient back over the reduced dims with `restore`.
Extremes live in extremes.py, softmax in softmax.py, spread, norms and order statistics in stats.py, the
cumulative ops in scan.py; all share this plumbing.
"""
from __future__ import annotations

import builtins
import collections
import math

import numpy as np

from ...autograd.graph import needs_grad, record
from ...tensor import Tensor, contiguous_strides, numel_of
from ...tensor import dtype as dt
from ...vm import compute_instruction, fresh_view
from ...vm.codegen import kernel_module
from ...vm.replay import head as replay_head, layout_id
from ..elementwise import arithmetic as M
from ..movement import many_dims
from . import half_prod as reduce_half
from ..complex_numbers.tensors import refuse_complex
from ..complex_numbers.half import to_complex32
from ..dispatch.limited_dtypes import check as check_limited
from ..movement import views
from ..dispatch.kernel_launch import kernel_for, register_kernel
from ..dispatch.kernel_launch import launch
from ..elementwise.plans import _CAST_NAME, torch_name
from ..movement.view_grads import overload

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "any", "all", "count_nonzero"]
METHODS: dict = {}


# -- plumbing shared with ops/reductions/stats.py and ops/reductions/scan.py ----------------------------------
def reduction_kernel(name: str):
    """Decorator: register `body(array, axes, extra) -> result(s)` as op `name`'s CPU kernel (see `array_kernel`)."""
    def deco(body):
        register_kernel(name, "cpu")(array_kernel(body))
        return body
    return deco


def array_kernel(body):
    """The reduction family's kernel template: a CPU kernel running `body(array, axes, extra) -> result(s)`.

    Its attrs start with (axes, compute dtype, extra). The array arrives in the compute dtype (a 0-d input seen
    as shape (1,)); each result is reshaped into its output, so bodies may return keepdims-shaped arrays.
    """
    def kernel(ins, outs, attrs):
        axes, compute, extra = attrs[0], attrs[1], attrs[2]
        a = ins[0]
        if a.ndim == 0:
            a = a.reshape(1)
        if compute is not None and a.dtype != compute:
            a = a.astype(compute) if a.dtype != dt.COMPLEX32_NP else dt.complex32_values(a).astype(compute)
        with np.errstate(all="ignore"):  # 0/0 and overflow give nan/inf (or int garbage), as in torch
            results = body(a, axes, extra)
            if not isinstance(results, tuple):
                results = (results,)
            for out, res in zip(outs, results):
                res = np.reshape(res, out.shape)
                out[...] = res if out.dtype.names is None else to_complex32(res)  # (complex32: float16 pairs)
    return kernel


def dtype_arg(dtype, op: str) -> dt.dtype | None:
    """Check a `dtype=` argument."""
    if dtype is not None and not isinstance(dtype, dt.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {type(dtype).__name__}")
    return dtype


def accumulate_dtype(x: Tensor, dtype: dt.dtype | None, op: str) -> dt.dtype:
    """The result dtype of sum-like ops: `dtype`, else int64 for integers and bool, else x's."""
    if dtype_arg(dtype, op) is not None:
        check_limited(f"{op}(dtype=)", dtype)
        return dtype
    if x.dtype in dt.NO_SUM and x.numel():  # no float8/complex32 sum/prod/cumsum kernels (an empty one runs none)
        check_limited(op, x.dtype)
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
    _check_dim_mask(x)
    out = []
    for d in dims:
        d = x._dim(d, op) % builtins.max(x.ndim, 1)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(out)


def _check_dim_mask(x: Tensor) -> None:
    """torch's error for a reduction over given dims of a tensor of more than 64 dims (its dim mask)."""
    if x.ndim > 64:
        raise RuntimeError("only tensors with up to 64 dims are supported")


def one_axis(x: Tensor, dim, op: str) -> tuple:
    """A single int `dim`, wrapped, as an axes tuple (TypeError for tuples, as torch's int-dim ops)."""
    _check_dim_mask(x)
    return (x._dim(dim, op) % builtins.max(x.ndim, 1),)


def _out_shape(x: Tensor, axes: tuple, keepdim: bool) -> tuple:
    if x.ndim == 0:
        return ()
    return tuple(1 if i in axes else s for i, s in enumerate(x._v.shape) if keepdim or i not in axes)


_launch_plans: dict = {}  # (op, x's dtype, shape and VM, axes, keepdim, dtypes, compute) -> _ReducePlan


class _ReducePlan:
    """What queuing one reduction needs, computed once per signature: kernel, attributes, fusable
    reduction data and each output's layout."""

    __slots__ = ("kernel", "attrs", "reduce", "outs", "head")

    def __init__(self, op: str, x: Tensor, axes: tuple, keepdim: bool, out_dtypes, compute):
        shape = _out_shape(x, axes, keepdim)
        self.kernel = kernel_for(op, x.device)
        self.attrs = (axes, None if compute is None else compute.np, None)
        fusable = _fusable(op, x, out_dtypes, compute)
        self.reduce = None if fusable is None else (axes,) + fusable  # declares the reduction to the VM
        strides = contiguous_strides(shape)
        self.outs = tuple((shape, strides, numel_of(shape) * d.itemsize, d, layout_id(shape, strides, 0, d.np))
                          for d in out_dtypes)
        self.head = replay_head(self.kernel, self.reduce, "compute", 1, len(self.outs))  # made once (vm/replay)


def _reduce(op: str, x: Tensor, axes: tuple, keepdim: bool, out_dtypes, compute: dt.dtype | None = None,
            extra=None):
    """Queue reduction `op` of `x` over `axes`; one output per dtype in `out_dtypes`."""
    if len(x._v.shape) > many_dims.MAX_NDIM:  # only whole reductions get here (_check_dim_mask)
        return many_dims.reduce_whole(_reduce, op, x, keepdim, out_dtypes, compute, extra)
    if extra is not None:  # attributes that may not hash: planned afresh
        shape = _out_shape(x, axes, keepdim)
        attrs = (axes, None if compute is None else compute.np, extra)
        fusable = _fusable(op, x, out_dtypes, compute)
        reduce = None if fusable is None else (axes,) + fusable
        outs = launch(op, (x,), [(shape, d) for d in out_dtypes], attrs, reduce=reduce)
        return outs[0] if len(outs) == 1 else tuple(outs)
    vm = x._vm
    key = (op, x.dtype, x._v.shape, vm, axes, keepdim,
           out_dtypes if out_dtypes.__class__ is tuple else tuple(out_dtypes), compute)
    plan = _launch_plans.get(key)
    if plan is None:
        plan = _ReducePlan(op, x, axes, keepdim, out_dtypes, compute)
        if len(_launch_plans) < 16384:
            _launch_plans[key] = plan
    dev = x.device
    if len(plan.outs) == 1:  # (the common case, without the lists)
        shape, strides, nbytes, d, layout = plan.outs[0]
        view = fresh_view(nbytes, vm, shape, strides, d.np, layout)
        vm.push(compute_instruction(op, plan.kernel, (x._v,), (view,), plan.attrs, None, plan.reduce, plan.head))
        return Tensor._make(view, d, dev, vm)
    outs, views_ = [], []
    for shape, strides, nbytes, d, layout in plan.outs:
        view = fresh_view(nbytes, vm, shape, strides, d.np, layout)
        views_.append(view)
        outs.append(Tensor._make(view, d, dev, vm))
    vm.push(compute_instruction(op, plan.kernel, (x._v,), tuple(views_), plan.attrs, None, plan.reduce, plan.head))
    return tuple(outs)


_reduce_args: dict = {}  # (op, x's dtype and shape, dim, dtype) -> (result dtype, axes) of sum and mean


def _sum_like_args(op: str, x: Tensor, dim, dtype) -> tuple:
    """sum/mean's result dtype and axes, checked once per signature (errors raised as before)."""
    cls = dim.__class__
    if dim is None or cls is int or (cls is tuple or cls is list) and builtins.all(d.__class__ is int for d in dim):
        # (ints only: a Tensor dim's value may change)
        key = (op, x.dtype, x._v.shape, dim if cls is not list else tuple(dim), dtype)
        hit = _reduce_args.get(key)
    else:
        key = hit = None
    if hit is None:
        out = accumulate_dtype(x, dtype, op) if op == "sum" else _mean_dtype(x, dtype, op)
        hit = (out, _axes(x, dim, op))
        if key is not None and len(_reduce_args) < 16384:
            _reduce_args[key] = hit
    return hit


# -- fusable reductions: (init, combine, finish) templates the VM may fold into the loop that computes
# the input (see vm/instruction.py). A float32 sum accumulates in float64 there: that loop adds
# sequentially, where NumPy's kernel sums pairwise.
_FUSABLE = {"sum": ("0", "{0} + {A}({1})", "{O}({0})"), "mean": ("0", "{0} + {A}({1})", "{O}({0} / {1})"),
            "prod": ("1", "{0} * {A}({1})", "{O}({0})"),
            "amax": ("lowest", "np.maximum({0}, {A}({1}))", "{O}({0})"),
            "amin": ("highest", "np.minimum({0}, {A}({1}))", "{O}({0})")}


def _fusable(op: str, x: Tensor, out_dtypes, compute: dt.dtype | None) -> tuple | None:
    """(init, combine, finish) for `op` on `x`, or None when it is not fusable."""
    spec = _FUSABLE.get(op)
    # the fused loops are generated for the CPU only (a device's fused elementwise runner
    # knows no reductions yet)
    if spec is None or x.ndim == 0 or compute is None or compute is dt.bool_ or x.device.type != "cpu":
        return None
    init, combine, finish = spec
    acc = dt.float64 if compute is dt.float32 and op in ("sum", "mean") else compute
    if init == "lowest":
        init = "-np.inf" if acc.is_floating_point else f"{np.iinfo(acc.np).min + 1} - 1"  # a literal that fits
    elif init == "highest":
        init = "np.inf" if acc.is_floating_point else str(np.iinfo(acc.np).max)
    cast_acc, cast_out = _CAST_NAME[acc], _CAST_NAME[out_dtypes[0]]
    return (f"{cast_acc}({init})", combine.replace("{A}", cast_acc),
            finish.replace("{O}", cast_out))


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


# -- gradient plumbing: put reduced dims back, route a gradient to the elements that won ----------
Reduced = collections.namedtuple("Reduced", ("shape", "axes", "keepdim", "extra"))
Reduced.__doc__ = "What a reduction's backward needs: the input's shape, the reduced axes, keepdim, op extras."


def track(name: str, backward, x: Tensor, outs, axes: tuple, keepdim: bool, save: tuple = (), extra=None):
    """Record `name`'s node on `outs` if `x` requires grad; `save` lists "input" and/or output positions."""
    if needs_grad((x,)):
        results = outs if isinstance(outs, tuple) else (outs,)
        saved = tuple([x if s == "input" else results[s] for s in save]) if save else ()
        record(name, backward, (x,), results, saved, _reduced(x._v.shape, axes, keepdim, extra))
    return outs


_reduced_cache: dict = {}  # (shape, axes, keepdim) -> its Reduced, for reductions without extras


def _reduced(shape: tuple, axes: tuple, keepdim: bool, extra) -> Reduced:
    """Reduced(shape, axes, keepdim, extra), made once per signature when there is no extra (it is immutable)."""
    if extra is not None:
        return Reduced(shape, axes, keepdim, extra)
    key = (shape, axes, keepdim)
    r = _reduced_cache.get(key)
    if r is None:
        r = Reduced(shape, axes, keepdim, None)
        if len(_reduced_cache) < 4096:
            _reduced_cache[key] = r
    return r


def restore(t: Tensor, r: Reduced, expand: bool = True) -> Tensor:
    """`t`, shaped like the reduction's result, with the reduced dims back as size 1 (a view), and
    broadcast to the input's shape if `expand`; differentiable (view nodes), for double backward."""
    if not r.shape:
        return t
    if not r.keepdim:
        for d in sorted(r.axes):
            t = views.unsqueeze(t, d)
    return views.expanded(t, r.shape) if expand else t


def share_evenly(g: Tensor, x: Tensor, out: Tensor, r: Reduced, nan_wins: bool) -> Tensor:
    """The gradient of a max/min-like result split evenly among the elements equal to it (torch's rule);
    with `nan_wins`, a NaN result sends it to the NaN elements."""
    out = restore(out, r, expand=False)
    mask = M.eq(x, out)
    if nan_wins:
        mask = M.logical_or(mask, M.logical_and(M.isnan(x), M.isnan(out)))
    return restore(g, r, expand=False) / sum(mask, r.axes, keepdim=True) * mask


def to_index(g: Tensor, indices: Tensor, r: Reduced) -> Tensor:
    """The gradient of values picked along one axis at `indices` (max(dim), median(dim)...): a one-hot."""
    if not r.shape:
        return g
    axis = r.axes[0]
    if not r.keepdim:
        indices = views.unsqueeze(indices, axis)
    from ..factories.ranges import arange
    positions = views.reshape(arange(r.shape[axis], device=g.device), (-1,) + (1,) * (len(r.shape) - axis - 1))
    return M.where(M.eq(positions, indices), restore(g, r, expand=False), 0.0)


def shared_backward(node, g, nan_wins: bool = True):
    """Backward of max()/min()/median() (and, without `nan_wins`, amax/amin): see share_evenly."""
    x, out = node.saved_tensors
    return share_evenly(g, x, out, node.attrs, nan_wins)


def indexed_backward(node, g, _):
    """Backward of (values, indices) ops along one dim: the values' gradient goes to the saved indices."""
    (indices,) = node.saved_tensors
    return to_index(g, indices, node.attrs)


# -- kernel bodies ---------------------------------------------------------------------------
_ROW_KERNELS = {"sum": "row_sums", "mean": "row_sums", "amax": "row_max", "amin": "row_min"}
_row_kernels = None  # ops/reductions/reduce_kernels.py, once loaded


def _compiled_rows(op: str, a: np.ndarray, axes: tuple, out_dtype) -> np.ndarray | None:
    """`op` over `axes` by ops/reductions/reduce_kernels.py's row loops (one value per row), where they apply: a float
    array of some size, C-contiguous, reduced over its trailing dims, once the loops are compiled (see
    vm.codegen.kernel_module: not before numba is loaded); else None."""
    global _row_kernels
    if a.dtype.kind != "f" or a.dtype.itemsize < 4 or a.size < 2048 or not a.flags.c_contiguous:
        return None
    ndim = a.ndim
    if builtins.sorted(axes) != list(range(ndim - len(axes), ndim)):
        return None
    n = math.prod(a.shape[ndim - len(axes):])
    if op in ("amax", "amin") and n > 512:  # NumPy's own loop is vectorized along long rows
        return None
    if _row_kernels is None:
        _row_kernels = kernel_module('.reduce_kernels', __package__)
        if _row_kernels is None:  # (compiling in the background meanwhile)
            return None
    rows = a.reshape(-1, n)
    out = np.empty(rows.shape[0], out_dtype)
    if op in ("sum", "mean"):
        _row_kernels.row_sums(rows, out, float(n) if op == "mean" else 1.0)
    else:
        getattr(_row_kernels, _ROW_KERNELS[op])(rows, out)
    return out


def _ufunc_body(op: str, ufunc):
    def body(a, axes, _):
        if op in _ROW_KERNELS:
            rows = _compiled_rows(op, a, axes, a.dtype)
            if rows is not None:
                return rows
        return ufunc.reduce(a, axis=axes, keepdims=True)
    return body


for _name, _ufunc in (("sum", np.add), ("prod", np.multiply), ("amax", np.maximum), ("amin", np.minimum),
                      ("any", np.logical_or), ("all", np.logical_and)):
    reduction_kernel(_name)(_ufunc_body(_name, _ufunc))


@reduction_kernel("prod_half")
def _prod_half_body(a, axes, _):
    return reduce_half.prod_half(a, axes)


@reduction_kernel("nansum")
def _nansum_body(a, axes, _):
    return np.add.reduce(np.where(np.isnan(a), 0, a) if a.dtype.kind == "f" else a, axis=axes, keepdims=True)


@reduction_kernel("mean")
def _mean_body(a, axes, _):
    rows = _compiled_rows("mean", a, axes, a.dtype)
    return rows if rows is not None else np.add.reduce(a, axis=axes, keepdims=True) / _count(a, axes)


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


# -- sums, means, products -----------------------------------------------------------------
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Sum over `dim` (int, tuple, None or () for all); integers and bool sum to int64."""
    out, axes = _sum_like_args("sum", input, dim, dtype)
    result = _reduce("sum", input, axes, keepdim, (out,), out.compute)
    if input.requires_grad:
        return track("sum" if dim is None else overload("sum", 1), _sum_backward, input, result, axes, keepdim)
    return result


def _sum_backward(node, g):
    return restore(g, node.attrs)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Sum treating NaN as zero."""
    out = accumulate_dtype(input, dtype, "nansum")
    axes = _axes(input, dim, "nansum")
    refuse_complex(input, "nansum on CPU does not support complex inputs", RuntimeError)
    result = _reduce("nansum", input, axes, keepdim, [out], out.compute)
    return track("nansum", _nansum_backward, input, result, axes, keepdim, save=("input",))


def _nansum_backward(node, g):
    (x,) = node.saved_tensors
    return restore(g, node.attrs) * M.logical_not(M.isnan(x))


def _mean_dtype(x: Tensor, dtype: dt.dtype | None, op: str) -> dt.dtype:
    if dtype_arg(dtype, op) is None:
        if not x.dtype.is_floating_point:
            raise RuntimeError(f"{op}(): could not infer output dtype. Input dtype must be either a floating "
                               f"point or complex dtype. Got: {torch_name(x.dtype)}")
        if x.dtype in dt.NO_SUM and x.numel():  # (mean sums in the input's dtype)
            check_limited(op, x.dtype)
        return x.dtype
    if not dtype.is_floating_point:
        raise RuntimeError(f"{op}(): could not infer output dtype. Optional dtype must be either a floating "
                           f"point or complex dtype. Got: {torch_name(dtype)}")
    check_limited(f"{op}(dtype=)", dtype)
    return dtype


def mean(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Arithmetic mean over `dim` (floating inputs, or a floating `dtype`)."""
    out, axes = _sum_like_args("mean", input, dim, dtype)
    result = _reduce("mean", input, axes, keepdim, (out,), out.compute)
    if input.requires_grad:
        return track("mean" if dim is None else overload("mean", 1), _mean_backward, input, result, axes, keepdim)
    return result


def _mean_backward(node, g):
    r = node.attrs
    return restore(g, r) / math.prod(r.shape[d] for d in r.axes if r.shape)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Mean of the non-NaN elements."""
    _require_float(input, "nanmean(): expected input to have floating point or complex dtype but got {name}")
    out = _mean_dtype(input, dtype, "nanmean")
    axes = _axes(input, dim, "nanmean")
    refuse_complex(input, "nansum on CPU does not support complex inputs", RuntimeError)
    result = _reduce("nanmean", input, axes, keepdim, [out], out.compute)
    return track("nanmean", _nanmean_backward, input, result, axes, keepdim, save=("input",))


def _nanmean_backward(node, g):
    (x,) = node.saved_tensors
    present = M.logical_not(M.isnan(x))
    return restore(g, node.attrs, expand=False) / sum(present, node.attrs.axes, keepdim=True) * present


def prod(input: Tensor, dim: int | None = None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Product over one dim (or of everything); integers and bool multiply in int64."""
    out = accumulate_dtype(input, dtype, "prod")
    axes = _axes(input, None, "prod") if dim is None else one_axis(input, dim, "prod")
    return _prod(input, axes, keepdim and dim is not None, out, "prod" if dim is None else overload("prod", 1))


def _prod(x: Tensor, axes: tuple, keepdim: bool, out: dt.dtype, name: str = "prod") -> Tensor:
    if out is x.dtype and out in (dt.float16, dt.bfloat16) and x.device.type == "cpu" and axes and x.numel():
        result = _reduce("prod_half", x, axes, keepdim, [out])  # (in 16 bits, in torch's order: ops/reduce_half)
    else:
        result = _reduce("prod", x, axes, keepdim, [out], out.compute)
    return track(name, _prod_backward, x, result, axes, keepdim, save=("input", 0))


def _prod_backward(node, g):
    """d prod / d x_i is the product of the others: out / x_i without zeros; with one zero, only the
    zero gets something (the product of the nonzeros). Written without a sync, and so that the
    second derivative stays right up to two zeros per slice."""
    x, out = node.saved_tensors
    r = node.attrs
    if not r.shape:
        return g
    zero = M.eq(x, 0)
    zeros = sum(zero, r.axes, keepdim=True)
    nonzero = M.where(zero, 1.0, x)
    others = _prod(nonzero, r.axes, True, out.dtype)
    zero_sum = sum(M.where(zero, x, 0.0), r.axes, keepdim=True)  # 0, but it carries the zeros' derivative
    at_zero = M.where(M.eq(zeros, 1), others, M.where(M.eq(zeros, 2), others * (zero_sum - x), 0.0))
    elsewhere = M.where(M.eq(zeros, 0), restore(out, r, expand=False), others * zero_sum) / nonzero
    elsewhere = M.where(M.gt(zeros, 1), 0.0, elsewhere)
    return restore(g, r, expand=False) * M.where(zero, at_zero, elsewhere)


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
    if dim is None:  # (torch's kernel along a dim takes uint16/32/64, its count of everything does not)
        check_limited("count_nonzero", input.dtype)
    return _reduce("count_nonzero", input, _axes(input, dim, "count_nonzero"), False, [dt.int64],
                   input.dtype.compute)


METHODS.update({name: globals()[name] for name in __all__})
