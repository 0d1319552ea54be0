"""Gather and scatter (gather, scatter, scatter_add, scatter_reduce) and the gradient helpers of the
indexing ops.

Shapes, dtypes and arguments are checked at the call; the values inside index tensors
are checked by the kernels (only the data can tell), which raise PyTorch's error and let
the VM re-raise it at the next sync point. Kernels compute 16-bit floats in float32.
Each kernel is a primitive record (ops/dispatch/primitive.py: at the bottom of the file) with its
backward next to its front end; the formulas are tidal ops (gather's gradient is a scatter_add, whose
gradient is a gather...), so double backward works. In-place ops record on the tensor they write, as
PyTorch does: their records are `inplace`, the node's inputs (self, index, src).
index_select/add/copy/fill, take, put and take_along_dim live in ops/indexing/index_ops.py.
"""
from __future__ import annotations

import numpy as np

from ...autograd.graph import needs_grad
from ...autograd.view_inplace import inplace_writer, track_view
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides, numel_of
from ...vm import View
from ..elementwise import plans as ew
from ..elementwise import copies, arithmetic as M
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from ..dispatch.factory_args import CHECKED_NAME, TYPEMETA_NAME, overflows
from ..dispatch.mem_overlap import check_out
from ..dispatch.out_checks import check_out_grad, prepare_out  # (importers take them from here too)
from ..dispatch.ready_values import GIL_KEPT_ELEMENTS, computed_values  # noqa: F401 (likewise)
from ..movement.view_grads import overload, transfer
from ..dispatch.limited_dtypes import check as check_limited
from ..complex_numbers.half import fitted, widened as complex32_widened

__all__ = ["gather", "scatter", "scatter_add", "scatter_reduce"]
METHODS: dict = {}

INDEX_DTYPES = (dt.int64, dt.int32)
C_NAMES = TYPEMETA_NAME  # the C++ names some PyTorch messages print
_NARROW_FLOATS = (np.dtype(np.float16), dt.bfloat16.np)


# -- helpers at the call (shared with ops/indexing/subscript.py) -----------------------------------------
def check_index_dtype(index, allowed: tuple, message: str, exc=RuntimeError) -> None:
    """Raise `exc(message)` unless `index` is a tensor of one of the `allowed` dtypes."""
    if not isinstance(index, Tensor):
        raise TypeError(f"expected Tensor as index argument, but got {type(index).__name__}")
    if index.dtype not in allowed:
        raise exc(message.format(got=torch_name(index.dtype)))


def scalar_for(dtype: dt.dtype, value):
    """A Python number `value` converted the way PyTorch converts it to `dtype`."""
    if isinstance(value, Tensor):
        value = value.item()
    if dtype is dt.bool_:
        return bool(value)
    if dtype.is_complex:
        return complex(value)
    if isinstance(value, (complex, np.complexfloating)):  # torch's checked conversion: a real part only
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")
        value = value.real
    if dtype.category != dt.INT:
        return float(value)
    value = int(value)
    low, high = INT_RANGE.get(dtype.np, (value, value))
    if not low <= value <= high:  # torch's checked conversion; what passes it keeps its low bits (-1 into uint8: 255)
        if overflows(value, dtype):
            raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")
        value = int(np.array(value, dtype=np.int64).astype(dtype.np))
    return value


INT_RANGE = {np.dtype(d): (int(np.iinfo(d).min), int(np.iinfo(d).max)) for d in
             (np.uint8, np.int8, np.int16, np.int32, np.uint16, np.uint32)}


def broadcasts_to(shape: tuple, target: tuple) -> bool:
    """Whether `shape` broadcasts to exactly `target`."""
    lead = len(target) - len(shape)
    return lead >= 0 and all(s == 1 or s == target[lead + d] for d, s in enumerate(shape))


def check_expand(src: Tensor, target: tuple) -> None:
    """Raise PyTorch's expand() errors unless `src` broadcasts to exactly `target`."""
    shape = src._v.shape
    if len(shape) > len(target):
        raise RuntimeError(f"expand({src.type()}{{{list(shape)}}}, size={list(target)}): the number of sizes "
                           f"provided ({len(target)}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for d, size in enumerate(shape):
        if size != 1 and size != target[lead + d]:
            raise RuntimeError(f"The expanded size of the tensor ({target[lead + d]}) must match the existing "
                               f"size ({size}) at non-singleton dimension {lead + d}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(shape)}")


def check_no_overlap(self: Tensor, others) -> None:
    """PyTorch's error when an op writing `self` in place reads memory of `self` (any layout)."""
    check_out(self, others)


def emit(rec: Primitive, ins: tuple, attrs=None, out: Tensor | None = None, checks_data: bool = True,
         node: str | None = None) -> Tensor:
    """Run the one-output index record `rec` on `ins` (into `out` when given: no graph then, `check_out_grad`
    has refused one); `checks_data`: the kernel checks indices not known at the call (see `check_now`)."""
    if out is None:
        return rec(ins, attrs, node, checks_data=checks_data)
    ((shape, dtype),) = rec.shapes(ins, attrs)
    prepare_out(out, shape, dtype, ins)
    rec.write(ins, (out,), attrs, None, node, checks_data=checks_data)
    return out


def picked_shapes(inputs: tuple, attrs) -> list:
    """The index ops whose output has the index's shape (gather, take), in the input's dtype."""
    return [(inputs[1]._v.shape, inputs[0].dtype)]


def written_only(inputs: tuple, attrs) -> list:
    """The shape rule of an in-place record (its output is the tensor it writes): only `write` runs it."""
    raise TypeError("this index op writes in place: run it with Primitive.write")


def input_shape_and(inputs: tuple, attrs) -> tuple:
    """The node attrs of an op reading input0 at indices: its shape (for the zeros the gradient goes into), attrs."""
    return inputs[0]._v.shape, attrs


def _dim1(t: Tensor) -> int:
    """Number of dims with 0-d counted as 1 (PyTorch's rule for gather/scatter shapes)."""
    return max(t.ndim, 1)


def size1(t: Tensor, d: int) -> int:
    return t._v.shape[d] if t.ndim else 1


# -- gradient helpers (shared with ops/indexing/subscript.py, ops/indexing/index_ops.py, ops/indexing/masked.py) -------
def wants(node, k: int) -> bool:
    """Whether input `k` of `node` takes a gradient."""
    return node.next_functions[k][0] is not None


def inplace_grad(self: Tensor, others: tuple) -> bool:
    """Whether an in-place write of `self` that reads `others` is recorded; PyTorch's error on a leaf."""
    if not needs_grad((self,) + tuple(others)):
        return False
    ew.check_leaf_inplace(self)
    return True


def filled(shape: tuple, like: Tensor, value=0) -> Tensor:
    """A new tensor of `shape` holding `value`, with `like`'s dtype and device."""
    return copies.fill_(Tensor._empty(tuple(shape), like.dtype, like.device), value)


def view_of(t: Tensor, shape: tuple, strides: tuple, offset: int) -> Tensor:
    """A view of `t`'s blob with this layout (no instruction, no graph)."""
    if 0 in shape:  # an empty view may point past the end; the CPU backend can't map that
        offset = min(offset, t._v.blob.nbytes // t.dtype.itemsize)
    if t.__class__ is not Tensor and hasattr(t, "_lazy_view"):  # a conj view's views keep its bit (lazy_views)
        return t._lazy_view(shape, strides, offset, None)
    base = t if t._base is None else t._base
    out = Tensor._make(View(t._v.blob, tuple(shape), tuple(strides), offset, t._v.dtype), t.dtype, t.device,
                       t._vm, base=base)
    track_view(out)
    return out


def restrided(t: Tensor, geometry: tuple) -> Tensor:
    """A copy of the view `geometry` = (shape, strides, offset) of `t`, the geometry given in the row-major
    layout of t's shape; differentiable (its gradient is `embed`)."""
    return transfer(t, numel_of(t._v.shape), box(t._v.shape, t._v.shape), geometry)


def embed(g: Tensor, shape: tuple, geometry: tuple) -> Tensor:
    """Zeros of `shape` with `g` added at the row-major view `geometry`: a view's gradient."""
    return transfer(g, numel_of(shape), geometry, box(shape, shape))


def box(shape: tuple, full: tuple) -> tuple:
    """The geometry of the leading `shape` block of a row-major `full` shape."""
    return tuple(shape), contiguous_strides(tuple(full)), 0


def fit_rank(grad: Tensor, ndim: int) -> Tensor:
    """`grad` with size-1 dims put in front up to `ndim` (assigned values lose leading ones)."""
    if grad.ndim >= ndim:
        return grad
    shape = (1,) * (ndim - grad.ndim) + grad._v.shape
    return restrided(grad, box(shape, shape))


def check_now(index: Tensor, size: int, dim: int, **kwargs) -> bool:
    """The kernel's index check (`checked_index`) at the call, when `index`'s values are already computed.
    True when they are not: the kernel checks them and may fail later, so its launch passes `checks_data`
    (the instruction records the user's line for the deferred error)."""
    if index.numel():
        values = computed_values(index)
        if values is None:
            return True
        checked_index(values, size, dim, **kwargs)
    return False


# -- helpers inside kernels ------------------------------------------------------------------
def checked_index(idx: np.ndarray, size: int, dim: int, *, negative_ok: bool = False, exc=IndexError,
                  message: str = "index {i} is out of bounds for dimension {d} with size {n}") -> np.ndarray:
    """(kernel side) `idx` as int64 with negatives wrapped; raise `exc` naming the first bad index."""
    idx = np.asarray(idx, dtype=np.int64)
    low = -size if negative_ok else 0
    bad = (idx < low) | (idx >= size)
    if bad.any():
        raise exc(message.format(i=int(idx[bad].flat[0]), d=dim, n=size))
    return np.where(idx < 0, idx + size, idx) if negative_ok else idx


def widened(a: np.ndarray) -> np.ndarray:
    """`a` in the dtype kernels compute it in (float32 for 16-bit floats)."""
    return a.astype(np.float32) if a.dtype in _NARROW_FLOATS else complex32_widened(a)


def accumulate_at(ufunc, dst: np.ndarray, key, vals) -> None:
    """`ufunc.at(dst, key, vals)` (repeated indices accumulate), computed in the widened dtype."""
    work = widened(dst)
    ufunc.at(work, key, np.asarray(vals).astype(work.dtype, copy=False))
    if work is not dst:
        dst[...] = fitted(dst, work)


def at_least_1d(a: np.ndarray) -> np.ndarray:
    return a.reshape(1) if a.ndim == 0 else a


def _box(shape: tuple, skip: int | None = None) -> tuple:
    """Slices keeping the leading `shape` of an array (all of dimension `skip`)."""
    return tuple(slice(None) if d == skip else slice(0, n) for d, n in enumerate(shape))


def _scatter_key(idx: np.ndarray, dim: int) -> tuple:
    """Coordinates that element (i, j, ...) of `idx` addresses: its own position, `idx` along `dim`."""
    nd = idx.ndim
    return tuple(idx if d == dim else np.arange(n).reshape([-1 if e == d else 1 for e in range(nd)])
                 for d, n in enumerate(idx.shape))


# -- gather / scatter --------------------------------------------------------------------------
def _check_gather_shapes(input: Tensor, dim: int, index: Tensor, src: Tensor | None, op: str) -> None:
    if index.numel() == 0:  # torch checks nothing of an empty index's shape (its dims may differ)
        return
    if _dim1(index) != _dim1(input):
        raise RuntimeError(f"Index tensor must have the same number of dimensions as "
                           f"{'input' if op == 'gather' else 'self'} tensor")
    if src is not None and _dim1(index) != _dim1(src):
        raise RuntimeError("Index tensor must have the same number of dimensions as src tensor")
    for d in range(_dim1(index)):
        too_big = d != dim and size1(index, d) > size1(input, d)
        if op == "gather" and too_big:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be "
                               f"no larger than self {list(input.shape)} apart from dimension {dim}")
        if op != "gather" and (too_big or (src is not None and size1(index, d) > size1(src, d))):
            tail = f" and to be no larger size than src {list(src.shape)}" if src is not None else ""
            raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than self "
                               f"{list(input.shape)} apart from dimension {dim}{tail}")


def gather(input: Tensor, dim: int, index: Tensor, *, sparse_grad: bool = False,
           out: Tensor | None = None) -> Tensor:
    """out[i][j] = input[index[i][j]][j] (for dim=0): values picked along `dim`."""
    dim = input._dim(dim, "gather")
    if not isinstance(index, Tensor) or index.numel():  # torch takes an empty index of any dtype
        check_index_dtype(index, INDEX_DTYPES, "gather(): Expected dtype int32/int64 for index")
    _check_gather_shapes(input, dim, index, None, "gather")
    check_limited("gather", input.dtype)
    check_out_grad("gather", out, (input,))
    deferred = check_now(index, size1(input, dim), dim, exc=RuntimeError)
    return emit(GATHER, (input, index), dim, out, deferred)


def _gather_backward(node, g):
    shape, dim = node.attrs
    return scatter_add(filled(shape, g), dim, node.saved_tensors[0], g), None


def _gather_kernel(ins, outs, dim):
    src, idx = at_least_1d(ins[0]), at_least_1d(ins[1])
    if idx.size:
        idx = checked_index(idx, src.shape[dim], dim, exc=RuntimeError)
        outs[0][...] = np.take_along_axis(src[_box(idx.shape, dim)], idx, axis=dim).reshape(outs[0].shape)


def _src_grad(g: Tensor, dim: int, index: Tensor, src_shape: tuple) -> Tensor:
    """The gradient of a scatter's `src`: g gathered at `index`, zero where src reaches past it."""
    picked = gather(g, dim, index)
    return picked if picked._v.shape == src_shape else embed(picked, src_shape, box(picked._v.shape, src_shape))


def _scatter_backward(node, g):
    dim, src_shape, _ = node.attrs
    (index,) = node.saved_tensors
    grad_self = scatter(g, dim, index, 0.0) if wants(node, 0) else None
    if src_shape is None:  # a value scattered: the node's inputs are (self, index)
        return grad_self, None
    return grad_self, None, _src_grad(g, dim, index, src_shape) if wants(node, 2) else None


def _scatter_add_backward(node, g):
    dim, src_shape, _ = node.attrs
    return g, None, _src_grad(g, dim, node.saved_tensors[0], src_shape) if wants(node, 2) else None


def _no_derivative(node, g):
    raise RuntimeError("derivative for aten::scatter is not implemented")


def _scatter_any_backward(node, g):
    """The backward of the scatter kernel's node: scatter's, scatter_add's or none (reduce=), as recorded."""
    return _SCATTER_GRADS[node.attrs[2]](node, g)


_SCATTER_REDUCE = {"add": np.add, "multiply": np.multiply}
_SCATTER_GRADS = {"scatter": _scatter_backward, "scatter_add": _scatter_add_backward,
                  "not_implemented": _no_derivative}  # torch has no derivative for scatter(reduce=...)


def _scatter(self: Tensor, dim: int, index: Tensor, src, value, reduce, grad_name: str) -> Tensor:
    dim = self._dim(dim, "scatter")
    if not isinstance(index, Tensor) or index.numel():  # torch takes an empty index of any dtype
        check_index_dtype(index, INDEX_DTYPES, "scatter(): Expected dtype int32/int64 for index")
    if src is not None and src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    _check_gather_shapes(self, dim, index, src, "scatter")
    if reduce is not None and reduce not in _SCATTER_REDUCE:
        raise RuntimeError("reduce argument must be either add or multiply.")
    check_limited("scatter" if src is not None else "scatter(value=)", self.dtype)
    ins = (index,) if src is None else (index, src)
    check_no_overlap(self, ins)
    typed = None if src is not None else scalar_for(self.dtype, value)
    deferred = check_now(index, size1(self, dim), dim, exc=RuntimeError)
    inplace_grad(self, (src,))  # (torch's error on a leaf, before anything is queued)
    name = overload(grad_name, 1) if grad_name == "scatter" and src is None else grad_name  # ScatterBackward1
    SCATTER.write(ins, (self,), (dim, reduce, typed, grad_name), None, name, checks_data=deferred)
    return self


@inplace_writer
def scatter_(self: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None) -> Tensor:
    """In place: self[index[i][j]][j] = src[i][j] (for dim=0), or a `value`; `reduce` 'add'/'multiply'."""
    if src is not None and not isinstance(src, Tensor):
        src, value = None, src
    if src is None and value is None:
        raise TypeError("scatter() missing required argument 'src' or 'value'")
    return _scatter(self, dim, index, src, value, reduce, "scatter" if reduce is None else "not_implemented")


def out_of_place(inplace, input: Tensor, *args, **kwargs) -> Tensor:
    """`inplace(a clone of input, *args, **kwargs)`: an out-of-place index op whose node is edged to `input` itself, as
    torch's (the clone's node, whose gradient is the identity, is left out of the graph)."""
    copy = copies.clone(input)
    made = copy.grad_fn
    out = inplace(copy, *args, **kwargs)
    node = out.grad_fn
    if made is not None and node is not made and node is not None and node.next_functions[0][0] is made:
        node.next_functions = made.next_functions[:1] + node.next_functions[1:]
    return out


def scatter(input: Tensor, dim: int, index: Tensor, src=None, value=None, *, reduce: str | None = None) -> Tensor:
    """A copy of `input` with `src` (or `value`) scattered into it along `dim` (see scatter_)."""
    return out_of_place(scatter_, input, dim, index, src, value, reduce=reduce)


def _scatter_kernel(ins, outs, attrs):
    dim, reduce, value, _ = attrs
    dst, idx = at_least_1d(outs[0]), at_least_1d(ins[0])
    if not idx.size:
        return
    key = _scatter_key(checked_index(idx, dst.shape[dim], dim, exc=RuntimeError), dim)
    vals = at_least_1d(ins[1])[_box(idx.shape)] if len(ins) > 1 else value
    if reduce is None:
        dst[key] = vals
    else:
        accumulate_at(_SCATTER_REDUCE[reduce], dst, key, vals)


@inplace_writer
def scatter_add_(self: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """In place: self[index[i][j]][j] += src[i][j] (for dim=0); repeated indices accumulate."""
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_add(): argument 'src' must be Tensor, not {type(src).__name__}")
    return _scatter(self, dim, index, src, None, "add", "scatter_add")


def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """A copy of `input` with `src` added at `index` along `dim`."""
    return out_of_place(scatter_add_, input, dim, index, src)


_REDUCTIONS = {"sum": np.add, "prod": np.multiply, "mean": np.add, "amax": np.maximum, "amin": np.minimum}
_NEEDS_VALUES = ("prod", "amax", "amin")  # reductions whose gradient reads self, src and the result


def _scatter_reduce(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, include_self: bool,
                    before: Tensor | None) -> Tensor:
    """scatter_reduce_ into `self`; `before` holds self's values before the write (None: clone them)."""
    dim = self._dim(dim, "scatter_reduce")
    if not isinstance(index, Tensor) or index.numel():  # torch takes an empty index of any dtype
        check_index_dtype(index, INDEX_DTYPES, "scatter(): Expected dtype int32/int64 for index")
    if not isinstance(src, Tensor):
        raise TypeError(f"scatter_reduce(): argument 'src' must be Tensor, not {type(src).__name__}")
    if src.dtype is not self.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    _check_gather_shapes(self, dim, index, src, "scatter")
    check_limited(f"scatter_reduce({reduce})" if include_self else "scatter_reduce(include_self=False)", self.dtype)
    check_no_overlap(self, (index, src))
    deferred = check_now(index, size1(self, dim), dim, exc=RuntimeError)
    saved = None  # (index,) as declared; prod/amax/amin's backward also reads src, self before and after the write
    if inplace_grad(self, (src,)) and reduce in _NEEDS_VALUES:
        saved = (index, src, copies.clone(self) if before is None else before, self)
    SCATTER_REDUCE.write((index, src), (self,), (dim, reduce, bool(include_self)), saved, checks_data=deferred)
    return self


@inplace_writer
def scatter_reduce_(self: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                    include_self: bool = True) -> Tensor:
    """In place: reduce (sum/prod/mean/amax/amin) `src` into self at `index` along `dim`."""
    return _scatter_reduce(self, dim, index, src, reduce, include_self, None)


def scatter_reduce(input: Tensor, dim: int, index: Tensor, src: Tensor, reduce: str, *,
                   include_self: bool = True) -> Tensor:
    """A copy of `input` with `src` reduced into it at `index` along `dim`."""
    return out_of_place(_scatter_reduce, input, dim, index, src, reduce, include_self, input)


def _reduce_sum_grads(g, dim, index, include_self, src, before, result):
    return g, gather(g, dim, index)


def _reduce_mean_grads(g, dim, index, include_self, src, before, result):
    count = scatter_add(filled(g._v.shape, g, int(include_self)), dim, index, filled(index._v.shape, g, 1))
    count = M.where(M.eq(count, 0), 1.0, count)
    return g / count, gather(g, dim, index) / gather(count, dim, index)


def _reduce_extreme_grads(g, dim, index, include_self, src, before, result):
    # ties share the gradient evenly, as in torch
    self_wins, src_wins = M.eq(before, result), M.eq(src, gather(result, dim, index))
    share = g / scatter_add(copies.convert(self_wins, g.dtype), dim, index, copies.convert(src_wins, g.dtype))
    return M.where(self_wins, share, 0.0), M.where(src_wins, gather(share, dim, index), 0.0)


def _reduce_prod_grads(g, dim, index, include_self, src, before, result):
    # products "without me" computed with zeros replaced by one, so a single zero still gets its gradient
    nonzero_self = M.where(M.eq(before, 0), 1.0, before)
    grad_self = g * scatter_reduce(nonzero_self, dim, index, src, "prod", include_self=include_self) / nonzero_self
    src_zero = M.eq(src, 0)
    zeros_there = gather(scatter_add(filled(g._v.shape, g), dim, index, copies.convert(src_zero, g.dtype)), dim, index)
    lone_zero = M.logical_and(src_zero, M.eq(zeros_there, 1))
    without_lone = scatter_reduce(before, dim, index, M.where(lone_zero, 1.0, src), "prod", include_self=include_self)
    grad_src = M.where(lone_zero, gather(g * without_lone, dim, index),
                       gather(g * result, dim, index) / M.where(src_zero, 1.0, src))
    return grad_self, grad_src


_REDUCE_GRADS = {"sum": _reduce_sum_grads, "mean": _reduce_mean_grads, "amax": _reduce_extreme_grads,
                 "amin": _reduce_extreme_grads, "prod": _reduce_prod_grads}


def _scatter_reduce_backward(node, g):
    dim, reduce, include_self, src_shape = node.attrs
    index, src, before, result = node.saved_tensors + (None,) * (4 - len(node.saved_tensors))
    if src is not None and src._v.shape != index._v.shape:  # src may reach past the index: use its used block
        src = restrided(src, box(index._v.shape, src._v.shape))
    grad_self, grad_src = _REDUCE_GRADS[reduce](g, dim, index, include_self, src, before, result)
    if not include_self:
        grad_self = scatter(grad_self, dim, index, 0.0)
    if grad_src._v.shape != src_shape:
        grad_src = embed(grad_src, src_shape, box(grad_src._v.shape, src_shape))
    return grad_self if wants(node, 0) else None, None, grad_src if wants(node, 2) else None


def _identity(reduce: str, dtype: np.dtype):
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    if dtype.kind == "f":
        return -np.inf if reduce == "amax" else np.inf
    if dtype.kind == "b":
        return reduce == "amin"
    info = np.iinfo(dtype)
    return info.min if reduce == "amax" else info.max


def _scatter_reduce_kernel(ins, outs, attrs):
    dim, reduce, include_self = attrs
    dst, idx = at_least_1d(outs[0]), at_least_1d(ins[0])
    if not idx.size:
        return
    key = _scatter_key(checked_index(idx, dst.shape[dim], dim, exc=RuntimeError), dim)
    work = widened(dst).copy()
    if not include_self:
        work[key] = _identity(reduce, work.dtype)
    _REDUCTIONS[reduce].at(work, key, widened(at_least_1d(ins[1])[_box(idx.shape)]).astype(work.dtype))
    if reduce == "mean":
        count = np.full(work.shape, int(include_self), np.int64)
        np.add.at(count, key, 1)
        count = np.maximum(count, 1)
        work = work / count if work.dtype.kind == "f" else work // count
    dst[...] = work


# -- the records (the scatters' nodes take self, then the index and src: no edge for the index) --------------------
def _scatter_node(inputs: tuple, attrs: tuple) -> tuple:
    """(dim, src's shape or None for a value, which backward): what scatter's backward reads."""
    return attrs[0], inputs[2]._v.shape if len(inputs) > 2 else None, attrs[3]


GATHER = Primitive("gather", picked_shapes, cpu=_gather_kernel, cuda=None, backward=_gather_backward,
                   saved=("input1", "input0"), node_attrs=input_shape_and, grad_inputs=(0,))  # (input0: as torch)
SCATTER = Primitive("scatter", written_only, cpu=_scatter_kernel, cuda=None, backward=_scatter_any_backward,
                    saved=("input1",), node_attrs=_scatter_node, grad_inputs=(0, 2), inplace=True)
SCATTER_REDUCE = Primitive("scatter_reduce", written_only, cpu=_scatter_reduce_kernel, cuda=None,
                           backward=_scatter_reduce_backward, saved=("input1",),
                           node_attrs=lambda inputs, attrs: attrs + (inputs[2]._v.shape,), grad_inputs=(0, 2),
                           inplace=True)

METHODS.update(gather=gather, scatter=scatter, scatter_=scatter_, scatter_add=scatter_add, scatter_add_=scatter_add_,
               scatter_reduce=scatter_reduce, scatter_reduce_=scatter_reduce_)
