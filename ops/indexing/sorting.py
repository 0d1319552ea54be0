"""Sorting and searching: sort, argsort, msort, topk, kthvalue, unique, unique_consecutive, searchsorted, bucketize.

Orders follow PyTorch: NaN sorts as the largest value. `stable=True` keeps ties in input order
(descending sorts too); otherwise sort, topk, kthvalue and unique pick among equal values the index
torch's CPU kernels pick (`ops/indexing/tie_order.py` runs the same algorithms). unique and
unique_consecutive have data-dependent shapes: they sync and compute on the host.

sort, msort, topk and kthvalue are differentiable: the values' gradient is scattered back to the
positions the indices name. Indices, argsort, unique and searchsorted get no grad_fn.
"""
from __future__ import annotations

import numbers

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from . import scatter as S
from ..factories.creation import full
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from ..dispatch.return_types import return_type
from .scatter import scatter
from ..movement.views import unsqueeze
from ..dispatch.limited_dtypes import check as check_limited
from . import tie_order

__all__ = ["sort", "argsort", "msort", "topk", "kthvalue", "unique", "unique_consecutive", "searchsorted",
           "bucketize"]
METHODS: dict = {}


SortResult, TopkResult, KthvalueResult = (return_type(n) for n in ("sort", "topk", "kthvalue"))

# -- kernels ---------------------------------------------------------------------------------------
def _key(x: np.ndarray) -> np.ndarray:
    """`x` as NumPy orders and compares it like PyTorch: bfloat16 widened to float32 (exactly)."""
    return x.astype(np.float32) if x.dtype == dt.bfloat16.np else x


def _stable_order(key: np.ndarray, axis: int, descending: bool) -> np.ndarray:
    """Indices sorting `key` along `axis`; ties keep input order, NaN counts as the largest."""
    if not descending:
        return np.argsort(key, axis=axis, kind="stable")
    # sort the reversed array ascending and read it backwards: ties come out in input order
    n = key.shape[axis]
    return (n - 1) - np.flip(np.argsort(np.flip(key, axis), axis=axis, kind="stable"), axis)


def _as_1d(arrays) -> list:
    """0-d arrays as one-element 1-D views (dim 0 then means the only element)."""
    return [a.reshape(1) if a.ndim == 0 else a for a in arrays]


def _sort_kernel(ins, outs, attrs) -> None:
    (x,), outs = _as_1d(ins), _as_1d(outs)
    axis, descending, stable = attrs
    if stable:
        order = _stable_order(_key(x), axis, descending)
    elif x.strides[axis] == 0:  # torch skips the sort of an expanded dim: indices in input order
        order = np.broadcast_to(np.arange(x.shape[axis]).reshape((-1,) + (1,) * (x.ndim - axis - 1)), x.shape)
    else:  # torch's std::sort: its own order of ties
        order = tie_order.sort_order(_key(x), axis, descending)
    outs[-1][...] = order
    if len(outs) == 2:  # sort; argsort has only the indices
        outs[0][...] = np.take_along_axis(x, order, axis)


def _topk_kernel(ins, outs, attrs) -> None:
    (x,), (values, indices) = _as_1d(ins), _as_1d(outs)
    axis, k, largest, sorted_ = attrs
    if values.size == 0:
        return
    order = tie_order.topk_order(_key(x), axis, k, largest, sorted_)
    indices[...] = order
    values[...] = np.take_along_axis(x, order, axis)


def _kthvalue_kernel(ins, outs, attrs) -> None:
    (x,) = _as_1d(ins)
    values, indices = outs
    axis, k, _ = attrs
    if values.size == 0:
        return
    at = tie_order.kthvalue_index(_key(x), axis, k)
    indices[...] = at.reshape(indices.shape)
    values[...] = np.take_along_axis(x, at, axis).reshape(values.shape)


def _binary_search(bounds: np.ndarray, values: np.ndarray, right: bool, sorter) -> np.ndarray:
    """Row-wise lower/upper bound with PyTorch's comparisons (a NaN never stops the search)."""
    rows, n = bounds.shape
    lo = np.zeros(values.shape, np.int64)
    hi = np.full(values.shape, n, np.int64)
    row = np.arange(rows)[:, None]
    active = lo < hi
    while active.any():
        mid = (lo + hi) >> 1
        pos = np.minimum(mid, n - 1)
        probe = bounds[row, pos if sorter is None else sorter[row, pos]]
        go_right = ~(probe > values) if right else ~(probe >= values)
        lo = np.where(active & go_right, mid + 1, lo)
        hi = np.where(active & ~go_right, mid, hi)
        active = lo < hi
    return lo


def _searchsorted_kernel(ins, outs, attrs) -> None:
    bounds, values = _key(ins[0]), _key(ins[1])
    sorter = ins[2] if len(ins) > 2 else None
    out, right = outs[0], attrs[0]
    n = bounds.shape[-1]
    if sorter is not None and sorter.size and (sorter.min() < 0 or sorter.max() >= n):
        raise RuntimeError("torch.searchsorted(): sorter index out of range")
    if bounds.ndim == 1 and sorter is None and not (bounds.dtype.kind == "f" and np.isnan(bounds).any()):
        out[...] = np.searchsorted(bounds, values, side="right" if right else "left")
        return
    rows = int(np.prod(bounds.shape[:-1]))
    flat_values = values.reshape(rows, values.shape[-1]) if bounds.ndim > 1 else values.reshape(1, values.size)
    flat_sorter = None if sorter is None else sorter.reshape(rows, n)
    out[...] = _binary_search(bounds.reshape(rows, n), flat_values, right, flat_sorter).reshape(out.shape)


# -- sort, topk, kthvalue --------------------------------------------------------------------------
def _selected_backward(node, g, _indices_grad):
    """The values' gradient scattered back to the positions they were picked from (zeros elsewhere)."""
    (indices,) = node.saved_tensors
    shape, axis, kept = node.attrs
    if not shape:  # a 0-d input: the value is the input
        return (g,)
    if not kept:
        g, indices = unsqueeze(g, axis), unsqueeze(indices, axis)
    return (scatter(full(shape, 0, dtype=g.dtype, device=g.device), axis, indices, g),)


def _kept_node(inputs: tuple, attrs: tuple) -> tuple:
    """What sort's and topk's backward reads: the input's shape and the axis (kept in the outputs)."""
    return inputs[0]._v.shape, attrs[0], True


def _kthvalue_node(inputs: tuple, attrs: tuple) -> tuple:
    """kthvalue's: the input's shape, the axis and keepdim."""
    return inputs[0]._v.shape, attrs[0], attrs[2]


def _sort_shapes(inputs: tuple, attrs: tuple) -> list:
    x = inputs[0]
    return [(x._v.shape, x.dtype), (x._v.shape, dt.int64)]


def _argsort_shapes(inputs: tuple, attrs: tuple) -> list:
    return [(inputs[0]._v.shape, dt.int64)]


def _topk_shapes(inputs: tuple, attrs: tuple) -> list:
    """k values and indices along the axis (attrs: axis, k, largest, sorted); a 0-d input gives 0-d ones."""
    x, (axis, k) = inputs[0], attrs[:2]
    shape = x._v.shape[:axis] + (k,) + x._v.shape[axis + 1:] if x.ndim else ()
    return [(shape, x.dtype), (shape, dt.int64)]


def _kthvalue_shapes(inputs: tuple, attrs: tuple) -> list:
    """One value and index along the axis (attrs: axis, k, keepdim), the axis kept as 1 or dropped."""
    x, (axis, _, keepdim) = inputs[0], attrs
    shape = x._v.shape[:axis] + ((1,) if keepdim else ()) + x._v.shape[axis + 1:] if x.ndim else ()
    return [(shape, x.dtype), (shape, dt.int64)]


def _into(rec: Primitive, input: Tensor, out, attrs) -> tuple:
    """Run selection `rec` into `out` = (values, indices), with torch's checks (grad, overlap, dtypes)."""
    values, indices = out
    S.check_out_grad(rec.name, values, (input,))
    for o, (shape, dtype) in zip(out, rec.shapes((input,), attrs)):
        S.prepare_out(o, shape, dtype, (input,))
    rec.write((input,), (values, indices), attrs)
    return values, indices


def _need_tensor(op: str, x) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")


def _need_int(op: str, name: str, pos: int, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{op}(): argument '{name}' (position {pos}) must be int, not {type(value).__name__}")


def _axis_size(x: Tensor, axis: int) -> int:
    return x._v.shape[axis] if x.ndim else 1


def _refuse_complex(x: Tensor, message: str, exc=RuntimeError) -> None:
    """torch's error for an ordering op on complex input (complex numbers have no order)."""
    if x.dtype.is_complex:
        raise exc(message.format(name=torch_name(x.dtype)))


# torch's overloads when `stable` is given: the one taking it takes dim and descending by keyword only
_STABLE_SCHEMAS = {
    ("sort", False): ("Tensor input, *, bool stable, int dim = -1, bool descending = False, "
                      "tuple of Tensors out = None",
                      "Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = None"),
    ("argsort", False): ("Tensor input, *, bool stable, int dim = -1, bool descending = False, Tensor out = None",
                         "Tensor input, int dim = -1, bool descending = False"),
    ("sort", True): ("*, bool stable, int dim = -1, bool descending = False", "int dim = -1, bool descending = False"),
}
_STABLE_SCHEMAS["argsort", True] = _STABLE_SCHEMAS["sort", True]
_KEYWORD_ORDER = {"stable": 0, "dim": 1, "descending": 2, "out": 3}


def _stable_keyword_only(fn, method: bool):
    """`fn` (sort or argsort) refusing dim or descending passed by position beside `stable`, with torch's TypeError
    (its parser's: a wrong combination, or too many positional arguments)."""
    name = fn.__name__

    def checked(input, *args, **kwargs):
        if args and "stable" in kwargs:
            given = args if method else (input,) + args
            extra = [k for k in kwargs if k != "stable"]
            if len(args) > 1 and not (name == "sort" and not method) or (extra and method):
                raise TypeError(f"{name}() takes from {1 + (not method)} to {int(not method)} positional arguments "
                                f"but {len(given)} were given")
            keywords = sorted(kwargs, key=lambda k: _KEYWORD_ORDER.get(k, 4))
            got = ", ".join(["Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in given] +
                            [f"{k}={type(kwargs[k]).__name__}" for k in keywords])
            lines = "".join(f"\n * ({schema})" for schema in _STABLE_SCHEMAS[name, method])
            why = "" if name == "sort" and not method else \
                "\n      didn't match because some of the keywords were incorrect: stable"
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({got}), but expected one "
                            f"of:{lines}{why}\n")
        return fn(input, *args, **kwargs)
    checked.__name__, checked.__qualname__, checked.__doc__ = name, fn.__qualname__, fn.__doc__
    checked.__wrapped__ = fn
    return checked


def sort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool | None = False, out=None):
    """Sorted values and their indices along `dim` (ties in torch's order; input order if `stable`), into
    `out`=(values, indices) if given."""
    _need_tensor("sort", input)
    axis = input._dim(dim, "sort")
    _refuse_complex(input, " Sort does not support complex dtypes on CPU")
    check_limited("sort", input.dtype)
    attrs = (axis, bool(descending), bool(stable))
    return SortResult(*(SORT((input,), attrs) if out is None else _into(SORT, input, out, attrs)))


def argsort(input: Tensor, dim: int = -1, descending: bool = False, *, stable: bool = False) -> Tensor:
    """The indices that sort `input` along `dim` (ties as `sort`'s)."""
    _need_tensor("argsort", input)
    axis = input._dim(dim, "argsort")
    _refuse_complex(input, " Sort does not support complex dtypes on CPU")
    check_limited("sort", input.dtype)
    return ARGSORT((input,), (axis, bool(descending), bool(stable)))


def msort(input: Tensor) -> Tensor:
    """`input` sorted along its first dimension (its gradient node is sort's, as in PyTorch)."""
    return sort(input, 0).values


def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True, sorted: bool = True, *, out=None):
    """The k largest (or smallest) values along `dim` and their indices, in sorted order (into `out`=(values,
    indices) if given)."""
    _need_tensor("topk", input)
    _need_int("topk", "k", 2, k)
    axis = input._dim(dim, "topk")
    if k < 0 or k > _axis_size(input, axis):
        raise RuntimeError("selected index k out of range")
    check_limited("topk", input.dtype)
    if input.dtype is dt.bool_:
        raise RuntimeError("topk does not support bool dtypes on CPU")
    _refuse_complex(input, " topk does not support complex dtypes on CPU")
    attrs = (axis, 1 if input.ndim == 0 else int(k), bool(largest), bool(sorted))  # (0-d: the element, k = 0 too)
    return TopkResult(*(TOPK((input,), attrs) if out is None else _into(TOPK, input, out, attrs)))


def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False, *, out=None):
    """The k-th smallest value along `dim` (k counts from 1) and its index (into `out`=(values, indices))."""
    _need_tensor("kthvalue", input)
    _need_int("kthvalue", "k", 2, k)
    axis = input._dim(dim, "kthvalue")
    if input.dtype is dt.bool_ or input.dtype.is_complex:
        raise NotImplementedError(f"\"kthvalue_cpu\" not implemented for '{torch_name(input.dtype)}'")
    check_limited("kthvalue", input.dtype)
    size = _axis_size(input, axis)
    if size == 0:
        raise IndexError(f"kthvalue(): Expected reduction dim {axis} to have non-zero size.")
    if k < 1 or k > size:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    attrs = (axis, int(k), bool(keepdim))
    return KthvalueResult(*(KTHVALUE((input,), attrs) if out is None else _into(KTHVALUE, input, out, attrs)))


# -- unique ----------------------------------------------------------------------------------------
def _grouped(x: Tensor, dim: int | None, sort_first: bool) -> tuple:
    """Runs of equal elements (dim=None) or slices along `dim`, after a lexicographic sort if asked.

    Returns (unique values array, inverse array, counts array). Equality is `==`, so NaNs never merge.
    """
    arr = x._host_array()
    if dim is None:
        moved = arr.reshape(-1)
        rows = moved.reshape(-1, 1)
    else:
        if x.ndim == 0:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        dim = x._dim(dim, "unique")
        if arr.size == 0 and arr.shape[dim] != 0:
            raise RuntimeError("There are 0 sized dimensions, and they aren't selected, so unique cannot be "
                               "applied")
        moved = np.moveaxis(arr, dim, 0)
        rows = moved.reshape(moved.shape[0], int(np.prod(moved.shape[1:])))
    key = _key(rows)
    n = key.shape[0]
    if not sort_first or key.shape[1] == 0:
        order = np.arange(n)
    elif dim is None:  # torch sorts the flattened input (std::sort): which of equal values leads is its
        order = tie_order.sort_order(key[:, 0], 0, False)
    else:  # torch's std::sort of the slices, compared lexicographically
        order = tie_order.lex_order(key)
    ordered = key[order]
    starts = np.ones(n, bool)
    if n > 1:
        starts[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)
    inverse = np.empty(n, np.int64)
    inverse[order] = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), n)).astype(np.int64)
    values = moved[order[starts]]
    if dim is None:
        inverse = inverse.reshape(arr.shape)
    else:
        values = np.moveaxis(values, 0, dim)
    return values, inverse, counts


def _unique_result(x: Tensor, grouped: tuple, return_inverse: bool, return_counts: bool):
    values, inverse, counts = grouped
    out = [Tensor._from_array(values, x.dtype)]
    if return_inverse:
        out.append(Tensor._from_array(inverse, dt.int64))
    if return_counts:
        out.append(Tensor._from_array(counts, dt.int64))
    if x.device.type != "cpu":
        out = [t.to(x.device) for t in out]
    return out[0] if len(out) == 1 else tuple(out)


def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False, return_counts: bool = False,
           dim: int | None = None):
    """The distinct elements (or slices along `dim`), sorted; optionally inverse indices and counts (syncs)."""
    _need_tensor("unique", input)
    _refuse_complex(input, "\"unique" + ("_dim" if dim is not None else "") + "\" not implemented for '{name}'",
                    NotImplementedError)
    check_limited("unique" if dim is None else "unique_dim", input.dtype)
    return _unique_result(input, _grouped(input, dim, True), return_inverse, return_counts)


def unique_consecutive(input: Tensor, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Collapse each run of equal consecutive elements (or slices along `dim`) to one (syncs)."""
    _need_tensor("unique_consecutive", input)
    _refuse_complex(input, "\"unique" + ("_dim" if dim is not None else "") + "\" not implemented for '{name}'",
                    NotImplementedError)
    check_limited("unique", input.dtype)
    return _unique_result(input, _grouped(input, dim, False), return_inverse, return_counts)


# -- searchsorted, bucketize -----------------------------------------------------------------------
def _search_side(side: str | None, right: bool) -> bool:
    if side is None:
        return bool(right)
    if side not in ("left", "right"):
        raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
    if right and side == "left":
        raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                           "while right was True")
    return side == "right"


def searchsorted(sorted_sequence: Tensor, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value would be inserted to keep the innermost rows of `sorted_sequence` sorted."""
    if not isinstance(sorted_sequence, Tensor) or not isinstance(input, (Tensor, numbers.Number)):
        raise TypeError(f"searchsorted() received an invalid combination of arguments - got "
                        f"({type(sorted_sequence).__name__}, {type(input).__name__})")
    right = _search_side(side, right)
    bounds = sorted_sequence
    if bounds.ndim == 0:
        raise RuntimeError("torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 "
                           "dimension")
    if not isinstance(input, Tensor):
        input = full((), input, dtype=dt.float64 if isinstance(input, float) else dt.scalar_dtype(input),
                     device=bounds.device)
    if bounds.ndim != 1:
        if input.ndim == 0:
            raise RuntimeError(f"torch.searchsorted(): input value can be a scalar only when boundaries tensor "
                               f"dimension is 1, but we got boundaries tensor dim({bounds.ndim}) and input "
                               f"value's dim(0) numel(1)")
        if bounds.ndim != input.ndim or bounds.shape[:-1] != input.shape[:-1]:
            raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 "
                               f"dimensions of boundaries tensor and input value tensor must match, but we got "
                               f"boundaries tensor {list(bounds.shape)} and input value tensor "
                               f"{list(input.shape)}")
    ins, order = (bounds, input), None
    if sorter is not None:
        if sorter.dtype is not dt.int64:
            raise RuntimeError(f"torch.searchsorted(): sorter must be a tensor of long dtype but got dtype "
                               f"{torch_name(sorter.dtype)}")
        if sorter.shape != bounds.shape:
            raise RuntimeError(f"torch.searchsorted(): boundary and sorter must have the same size, but got "
                               f"boundary tensor {list(bounds.shape)}and got sorter tensor {list(sorter.shape)}")
        ins += (sorter,)
        order = S.computed_values(sorter)  # (checked at the call when already computed; else by the kernel)
        if order is not None and order.size and (order.min() < 0 or order.max() >= bounds.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
    if bounds.dtype is dt.bool_ and input.dtype is dt.bool_:
        raise NotImplementedError("\"searchsorted_out_cpu\" not implemented for 'Bool'")
    for t in ins[:2] if input.numel() else ():  # (torch's kernel refuses them only when it has work)
        _refuse_complex(t, "\"searchsorted_out_cpu\" not implemented for '{name}'", NotImplementedError)
    if input.numel():  # (its kernel runs in the two's common dtype)
        check_limited("searchsorted", dt.promote_types(bounds.dtype, input.dtype))
    return SEARCHSORTED(ins, (right, dt.int32 if out_int32 else dt.int64))


def bucketize(input, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The bucket of each value given 1-D sorted `boundaries` (right=True: boundaries[i-1] <= x < boundaries[i])."""
    if isinstance(boundaries, Tensor) and boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


# -- the records -------------------------------------------------------------------------------------
def _searchsorted_shapes(inputs: tuple, attrs: tuple) -> list:
    return [(inputs[1]._v.shape, attrs[1])]


SORT = Primitive("sort", _sort_shapes, cpu=_sort_kernel, cuda=None, backward=_selected_backward,
                 saved=("output1",), node_attrs=_kept_node)
ARGSORT = Primitive("argsort", _argsort_shapes, cpu=_sort_kernel, cuda=None)  # (sort's kernel, indices only)
TOPK = Primitive("topk", _topk_shapes, cpu=_topk_kernel, cuda=None, backward=_selected_backward, saved=("output1",),
                 node_attrs=_kept_node)
KTHVALUE = Primitive("kthvalue", _kthvalue_shapes, cpu=_kthvalue_kernel, cuda=None, backward=_selected_backward,
                     saved=("output1",), node_attrs=_kthvalue_node)
# the kernel checks a sorter's values (those not yet computed at the call)
SEARCHSORTED = Primitive("searchsorted", _searchsorted_shapes, cpu=_searchsorted_kernel, cuda=None, checks_data=True)

METHODS.update(sort=_stable_keyword_only(sort, True), argsort=_stable_keyword_only(argsort, True), msort=msort,
               topk=topk, kthvalue=kthvalue, unique=unique, unique_consecutive=unique_consecutive)
sort, argsort = _stable_keyword_only(sort, False), _stable_keyword_only(argsort, False)
