"""Reductions (sum, mean, prod, any, all...) and the plumbing every reduction shares, with their gradients.

Each reduction is a record (`Reduction`, a primitive record of ops/dispatch/primitive.py): a kernel body
(NumPy on the CPU) that reduces an array over some axes with keepdims, in the family's kernel template, its
backward (written in tidal ops, next to the op: most broadcast the gradient back over the reduced dims with
`restore`) and what that reads, and the templates by which the VM may fuse it. The public function checks
arguments and picks the result and accumulation dtypes and the axes on the calling thread, then calls the
record (`reduce_by`).
Extremes live in extremes.py, softmax in softmax.py, spread, norms and order statistics in stats.py, the
cumulative ops in scan.py; all share this plumbing.
"""
from __future__ import annotations

import builtins
import collections
import math
from typing import NamedTuple

import numpy as np

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
from ..dispatch.kernel_launch import kernel_for
from ..dispatch.primitive import Primitive
from ..elementwise.plans import _CAST_NAME, torch_name
from ..movement.view_grads import overload
from ..factories.ranges import arange

__all__ = ["sum", "nansum", "mean", "nanmean", "prod", "any", "all", "count_nonzero"]
METHODS: dict = {}


# -- plumbing shared with ops/reductions/stats.py and ops/reductions/scan.py ----------------------------------
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
        # (0/0 and overflow give nan/inf, or int garbage, as in torch: the VM runs every kernel with NumPy's
        # floating-point errors ignored, vm/codegen.quiet)
        results = body(a, axes, extra)
        if not isinstance(results, tuple):
            results = (results,)
        for out, res in zip(outs, results):
            res = res.reshape(out.shape) if res.__class__ is np.ndarray else np.reshape(res, out.shape)
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


class ReduceAttrs(NamedTuple):
    """A reduction's attributes: its kernel reads the first three (the template's), the shape rule the rest."""

    axes: tuple           # the reduced dims (a 0-d input's: (0,))
    compute: object       # the NumPy dtype the body reduces in (None: the input's)
    extra: object         # the op's own attribute (a direction, a correction...), None for most
    keepdim: bool
    dtypes: tuple         # the outputs' dtypes


def _reduced_shapes(inputs: tuple, attrs: ReduceAttrs) -> list:
    shape = _out_shape(inputs[0], attrs.axes, attrs.keepdim)
    return [(shape, d) for d in attrs.dtypes]


def _reduced_node(inputs: tuple, attrs: ReduceAttrs) -> "Reduced":
    return _reduced(inputs[0]._v.shape, attrs.axes, attrs.keepdim, attrs.extra)


class Reduction(Primitive):
    """A reduction primitive, declared once: `body(array, axes, extra) -> result(s)` in the family's kernel
    template (`array_kernel`), the reduced shape rule, a `Reduced` as what its backward reads, and `fusable`: the
    (init, combine, finish) templates the VM may fold into the loop that computes the input (vm/instruction.py),
    or None; `sbp`: its family of signatures on global tensors (Primitive's). Called with `ReduceAttrs` (or through
    `reduce_by`); a repeated call is planned once."""

    __slots__ = ("fusable",)

    def __init__(self, name: str, body, *, backward=None, saved: tuple = (), fusable: tuple | None = None,
                 cuda=None, sbp: str | None = None):
        super().__init__(name, _reduced_shapes, cpu=array_kernel(body), cuda=cuda, backward=backward, saved=saved,
                         node_attrs=_reduced_node, sbp=sbp)
        self.fusable = fusable

    def __call__(self, inputs: tuple, attrs: ReduceAttrs, node: str | None = None):
        """The reduction of `inputs[0]`: its output, or a tuple of its outputs; the node recorded (`node`: its
        name where the overload called decides it)."""
        compute = None if attrs.compute is None else dt.from_numpy(attrs.compute)
        return reduce_by(self, inputs[0], attrs.axes, attrs.keepdim, attrs.dtypes, compute, attrs.extra, node)


def reduce_by(record: Reduction, x: Tensor, axes: tuple, keepdim: bool, out_dtypes, compute: dt.dtype | None = None,
              extra=None, node: str | None = None):
    """`record` run on `x` over `axes`, one output per dtype in `out_dtypes`, reducing in `compute`: its output,
    or a tuple of its outputs, with the node recorded (`node`: its name where the overload called decides it)."""
    dtypes = out_dtypes if out_dtypes.__class__ is tuple else tuple(out_dtypes)
    vm = x._vm
    if extra is None and len(x._v.shape) <= many_dims.MAX_NDIM:  # planned once per signature (the hot path)
        key = (record, x.dtype, x._v.shape, vm, axes, keepdim, dtypes, compute)
        plan = _launch_plans.get(key)
        if plan is None:
            plan = _ReducePlan(record, x, _attrs(axes, keepdim, dtypes, compute, None))
            if len(_launch_plans) < 16384:
                _launch_plans[key] = plan
        attrs, reduced = plan.attrs, plan.reduced
        outs = _push(record.name, plan, x, vm)
    else:  # attributes that may not hash, or more dims than a reduction over some of them takes
        attrs, reduced = _attrs(axes, keepdim, dtypes, compute, extra), None
        outs = _launch(record, x, attrs) if len(x._v.shape) <= many_dims.MAX_NDIM else \
            many_dims.reduce_whole(_launch, record, x, attrs)  # (only whole reductions get there: _check_dim_mask)
    if x._requires_grad:  # (its node, with the planned attrs: the record checks for a backward and grad mode)
        record.attach((x,), outs if outs.__class__ is tuple else (outs,), attrs, node, node_attrs=reduced)
    return outs


def _attrs(axes: tuple, keepdim: bool, dtypes: tuple, compute: dt.dtype | None, extra) -> ReduceAttrs:
    return ReduceAttrs(axes, None if compute is None else compute.np, extra, keepdim, dtypes)


_launch_plans: dict = {}  # (record, x's dtype, shape and VM, axes, keepdim, dtypes, compute) -> _ReducePlan


class _ReducePlan:
    """What queuing one reduction needs, computed once per signature: kernel, attributes, fusable reduction data,
    each output's layout, and what its backward reads."""

    __slots__ = ("kernel", "attrs", "reduce", "outs", "head", "reduced")

    def __init__(self, record: Reduction, x: Tensor, attrs: ReduceAttrs):
        self.kernel = kernel_for(record.name, x.device)
        self.attrs = attrs
        fusable = _fusable(record, x, attrs)
        self.reduce = None if fusable is None else (attrs.axes,) + fusable  # declares the reduction to the VM
        self.outs = []
        for shape, d in _reduced_shapes((x,), attrs):
            strides = contiguous_strides(shape)
            self.outs.append((shape, strides, numel_of(shape) * d.itemsize, d, layout_id(shape, strides, 0, d.np)))
        self.outs = tuple(self.outs)
        self.head = replay_head(self.kernel, self.reduce, "compute", 1, len(self.outs))  # made once (vm/replay)
        self.reduced = _reduced_node((x,), attrs)


def _launch(record: Reduction, x: Tensor, attrs: ReduceAttrs):
    """Queue `record`'s reduction of `x`, planned afresh: its output, or a tuple of them."""
    fusable = _fusable(record, x, attrs)
    reduce = None if fusable is None else (attrs.axes,) + fusable
    outs = record.queue((x,), attrs, reduce=reduce)
    return outs[0] if len(outs) == 1 else tuple(outs)


def _push(name: str, plan: _ReducePlan, x: Tensor, vm):
    # the planned reduction's outputs and instruction (the hot path: no lists for the usual single output)
    dev = x.device
    if len(plan.outs) == 1:
        shape, strides, nbytes, d, layout = plan.outs[0]
        view = fresh_view(nbytes, vm, shape, strides, d.np, layout)
        vm.push(compute_instruction(name, plan.kernel, (x._v,), (view,), plan.attrs, None, plan.reduce, plan.head))
        return Tensor._make(view, d, dev, vm)
    outs, views_ = [], []
    for shape, strides, nbytes, d, layout in plan.outs:
        view = fresh_view(nbytes, vm, shape, strides, d.np, layout)
        views_.append(view)
        outs.append(Tensor._make(view, d, dev, vm))
    vm.push(compute_instruction(name, plan.kernel, (x._v,), tuple(views_), plan.attrs, None, plan.reduce, plan.head))
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
SUM_FUSABLE = ("0", "{0} + {A}({1})", "{O}({0})")
MEAN_FUSABLE = ("0", "{0} + {A}({1})", "{O}({0} / {1})")
PROD_FUSABLE = ("1", "{0} * {A}({1})", "{O}({0})")
MAX_FUSABLE = ("lowest", "np.maximum({0}, {A}({1}))", "{O}({0})")
MIN_FUSABLE = ("highest", "np.minimum({0}, {A}({1}))", "{O}({0})")
_WIDE_SUMS = (SUM_FUSABLE, MEAN_FUSABLE)  # float32 accumulates in float64


def _fusable(record: Reduction, x: Tensor, attrs: ReduceAttrs) -> tuple | None:
    """(init, combine, finish) for `record` on `x`, or None when it is not fusable."""
    spec = record.fusable
    compute = attrs.compute
    # the fused loops are generated for the CPU only (a device's fused elementwise runner
    # knows no reductions yet)
    if spec is None or x.ndim == 0 or compute is None or compute == np.bool_ or x.device.type != "cpu":
        return None
    init, combine, finish = spec
    acc = dt.float64 if compute == np.float32 and spec in _WIDE_SUMS else dt.from_numpy(compute)
    if init == "lowest":
        init = "-np.inf" if acc.is_floating_point else f"{np.iinfo(acc.np).min + 1} - 1"  # a literal that fits
    elif init == "highest":
        init = "np.inf" if acc.is_floating_point else str(np.iinfo(acc.np).max)
    cast_acc, cast_out = _CAST_NAME[acc], _CAST_NAME[attrs.dtypes[0]]
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
        # (NumPy reduces about a float a nanosecond: a program of reductions alone loads the loops once they are hot)
        _row_kernels = kernel_module('.reduce_kernels', __package__, spent=a.size * 1e-9)
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


def _prod_half_body(a, axes, _):
    return reduce_half.prod_half(a, axes)


def _nansum_body(a, axes, _):
    return np.add.reduce(np.where(np.isnan(a), 0, a) if a.dtype.kind == "f" else a, axis=axes, keepdims=True)


def _mean_body(a, axes, _):
    rows = _compiled_rows("mean", a, axes, a.dtype)
    return rows if rows is not None else np.add.reduce(a, axis=axes, keepdims=True) / _count(a, axes)


def _nanmean_body(a, axes, _):
    present = ~np.isnan(a)
    return np.add.reduce(np.where(present, a, 0), axis=axes, keepdims=True) / \
        np.add.reduce(present, axis=axes, keepdims=True)


def _count_nonzero_body(a, axes, _):
    return np.count_nonzero(a, axis=axes, keepdims=True)


# -- sums, means, products -----------------------------------------------------------------
def sum(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Sum over `dim` (int, tuple, None or () for all); integers and bool sum to int64."""
    out, axes = _sum_like_args("sum", input, dim, dtype)
    return reduce_by(SUM, input, axes, keepdim, (out,), out.compute, node=None if dim is None else _SUM_DIM)


def _sum_backward(node, g):
    return restore(g, node.attrs)


def nansum(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Sum treating NaN as zero."""
    out = accumulate_dtype(input, dtype, "nansum")
    axes = _axes(input, dim, "nansum")
    refuse_complex(input, "nansum on CPU does not support complex inputs", RuntimeError)
    return reduce_by(NANSUM, input, axes, keepdim, (out,), out.compute)


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
    return reduce_by(MEAN, input, axes, keepdim, (out,), out.compute, node=None if dim is None else _MEAN_DIM)


def _mean_backward(node, g):
    r = node.attrs
    return restore(g, r) / math.prod(r.shape[d] for d in r.axes if r.shape)


def nanmean(input: Tensor, dim=None, keepdim: bool = False, *, dtype: dt.dtype | None = None) -> Tensor:
    """Mean of the non-NaN elements."""
    _require_float(input, "nanmean(): expected input to have floating point or complex dtype but got {name}")
    out = _mean_dtype(input, dtype, "nanmean")
    axes = _axes(input, dim, "nanmean")
    refuse_complex(input, "nansum on CPU does not support complex inputs", RuntimeError)
    return reduce_by(NANMEAN, input, axes, keepdim, (out,), out.compute)


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
        return reduce_by(PROD_HALF, x, axes, keepdim, (out,), node=name)  # (in 16 bits, in torch's order: half_prod)
    return reduce_by(PROD, x, axes, keepdim, (out,), out.compute, node=name)


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
    return reduce_by(ANY if op == "any" else ALL, x, _axes(x, dim, op, empty_is_all=False), keepdim, (out,),
                     x.dtype.compute)


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
    return reduce_by(COUNT_NONZERO, input, _axes(input, dim, "count_nonzero"), False, (dt.int64,),
                     input.dtype.compute)


# -- the records ---------------------------------------------------------------------------------------
SUM = Reduction("sum", _ufunc_body("sum", np.add), backward=_sum_backward, fusable=SUM_FUSABLE, sbp="summation")
NANSUM = Reduction("nansum", _nansum_body, backward=_nansum_backward, saved=("input0",), sbp="summation")
MEAN = Reduction("mean", _mean_body, backward=_mean_backward, fusable=MEAN_FUSABLE, sbp="averaging")
NANMEAN = Reduction("nanmean", _nanmean_body, backward=_nanmean_backward, saved=("input0",), sbp="reduction")
PROD = Reduction("prod", _ufunc_body("prod", np.multiply), backward=_prod_backward, saved=("input0", "output0"),
                 fusable=PROD_FUSABLE, sbp="reduction")
PROD_HALF = Reduction("prod_half", _prod_half_body, backward=_prod_backward, saved=("input0", "output0"),
                      sbp="reduction")
ANY = Reduction("any", _ufunc_body("any", np.logical_or), sbp="reduction")
ALL = Reduction("all", _ufunc_body("all", np.logical_and), sbp="reduction")
COUNT_NONZERO = Reduction("count_nonzero", _count_nonzero_body, sbp="reduction")
_SUM_DIM, _MEAN_DIM = overload("sum", 1), overload("mean", 1)  # torch's node classes when a dim is given

METHODS.update({name: globals()[name] for name in __all__})
