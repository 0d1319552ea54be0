"""Tensors of more than 64 dims, which torch computes elementwise and reduces whole: NumPy arrays, the CPU
kernels' window on memory, hold at most 64 dims, so these ops run on views of the same memory whose dims
are collapsed first (dims of extent 1 dropped, neighbours that every operand walks as one merged).

A dim of extent 2 or more doubles the element count, so any tensor that fits in memory has at most 62 of
them: the collapse always reaches 64 dims or fewer (an empty tensor collapses to shape (0,)).
"""
from __future__ import annotations

from ...tensor import Tensor
from ...vm import View

MAX_NDIM = 64  # NumPy's limit (NPY_MAXDIMS)


class TooManyDims(RuntimeError):
    """An elementwise plan's result has more than 64 dims (the op then runs on collapsed views)."""

    def __init__(self, shape: tuple):
        super().__init__("only tensors with up to 64 dims are supported")
        self.shape = shape


def broadcast_strides(shape: tuple, strides: tuple, to: tuple) -> tuple:
    """The strides that walk a layout of `shape` broadcast to `to` (0 where it is repeated)."""
    lead = len(to) - len(shape)
    return (0,) * lead + tuple(0 if n == 1 and m != 1 else s for n, m, s in zip(shape, to[lead:], strides))


def collapse(shape: tuple, layouts: list) -> tuple:
    """(collapsed shape, collapsed strides per layout) for layouts (element strides) that all walk `shape`:
    the same elements in the same order, in as few dims as every layout allows."""
    if 0 in shape:
        return (0,), [(1,)] * len(layouts)
    dims, strides = [], [[] for _ in layouts]
    for i, n in enumerate(shape):
        if n == 1:
            continue
        if dims and all(st[-1] == n * s[i] for st, s in zip(strides, layouts)):
            dims[-1] *= n  # this dim continues the last one in every layout
            for st, s in zip(strides, layouts):
                st[-1] = s[i]
        else:
            dims.append(n)
            for st, s in zip(strides, layouts):
                st.append(s[i])
    return tuple(dims), [tuple(st) for st in strides]


def kernel_view(v: View) -> View:
    """`v` itself when a NumPy array can hold it, else a view of the same elements in fewer dims."""
    if len(v.shape) <= MAX_NDIM:
        return v
    shape, (strides,) = collapse(v.shape, [v.strides])
    return View(v.blob, shape, strides, v.offset, v.dtype)


def kernel_views(out: View, *ins: View) -> tuple:
    """(out, *ins) as views a NumPy array can hold, the inputs broadcast to `out`'s shape, collapsed together
    so that every view walks the same elements in the same order."""
    if len(out.shape) <= MAX_NDIM:
        return (out,) + ins
    layouts = [out.strides] + [broadcast_strides(v.shape, v.strides, out.shape) for v in ins]
    shape, strides = collapse(out.shape, layouts)
    return tuple(View(v.blob, shape, st, v.offset, v.dtype) for v, st in zip((out,) + ins, strides))


def collapsed(t: Tensor) -> Tensor:
    """A view of `t`'s elements, in order, in the fewest dims its layout allows (64 or fewer)."""
    shape, _ = collapse(tuple(t.shape), [t._v.strides])
    return t.view(shape)


def _restrided(t: Tensor, shape: tuple) -> Tensor:
    """`t` broadcast to `shape` (a view; expand refuses nothing here: shape is the broadcast of its own)."""
    return t if tuple(t.shape) == shape else t.expand(shape)


def result_dtype(plan_for, op, args: tuple):
    """The promoted dtype of elementwise `op` on `args`, some of more than 64 dims: tensors past 64 dims
    stand in as 1-dim tensors of their dtype (promotion reads only dtypes and whether a tensor has dims)."""
    stand_ins = tuple(Tensor._empty((1,), a.dtype, a.device) if isinstance(a, Tensor) and a.ndim > MAX_NDIM else a
                      for a in args)
    return plan_for(op, stand_ins).dtype


def along_dim(fn, x: Tensor, dim, *rest) -> Tensor:
    """`fn(x, dim, *rest)` (softmax, log_softmax) for `x` of more than 64 dims, run on a view of the dims
    before `dim`, `dim` and the dims after it, each merged into one (reshape: gradients flow back)."""
    if not isinstance(dim, int) or isinstance(dim, bool):
        return fn(x.reshape(-1), dim, *rest)  # the same TypeError about `dim` as for any tensor
    shape = tuple(x.shape)
    d = x._dim(dim, getattr(fn, "__name__", "dim"))
    before = after = 1
    for n in shape[:d]:
        before *= n
    for n in shape[d + 1:]:
        after *= n
    small = (before, shape[d], after) if d < len(shape) - 1 else (before, shape[d])  # the last dim stays last
    return fn(x.reshape(small), 1, *rest).reshape(shape)


def elementwise(apply, name: str, args: tuple, out: Tensor | None, shape: tuple) -> Tensor:
    """Elementwise op `name` on operands broadcasting to `shape` (more than 64 dims), run by `apply` on
    collapsed views of the same memory (views and reshapes: gradients flow back through them)."""
    tensors = [k for k, a in enumerate(args) if isinstance(a, Tensor)]
    full = {k: _restrided(args[k], shape) for k in tensors}
    layouts = [full[k]._v.strides for k in tensors] + ([out._v.strides] if out is not None else [])
    small, _ = collapse(shape, layouts)  # views of this shape exist for every operand (and out)
    small_args = tuple(full[k].view(small) if k in full else a for k, a in enumerate(args))
    if out is None:
        return apply(name, *small_args).view(shape)
    apply(name, *small_args, out=out.view(small))
    return out


# whole reductions torch refuses past 64 dims (they take its dim-mask path): always, or with keepdim
_REFUSED = frozenset({"all", "any", "nanmean"})
_REFUSED_KEEPDIM = frozenset({"sum", "mean"})


def reduce_whole(run, record, x: Tensor, attrs):
    """Reduction `record` of every element of `x` (more than 64 dims) by `run` (reduce._launch, which calls
    the record) over its elements in order, as one dim; with keepdim the results get x's dims back, each of
    extent 1."""
    op = record.name
    if op in _REFUSED or attrs.keepdim and op in _REFUSED_KEEPDIM:
        raise RuntimeError("only tensors with up to 64 dims are supported")
    outs = run(record, x.reshape(-1), attrs._replace(axes=(0,), keepdim=False))
    if not attrs.keepdim:
        return outs
    ones = (1,) * x.ndim
    return outs.reshape(ones) if isinstance(outs, Tensor) else tuple(o.reshape(ones) for o in outs)


def tolist(t: Tensor) -> list:
    """The elements of `t` (more than 64 dims) nested as torch's tolist nests them."""
    flat = t.reshape(-1).tolist()  # the elements in row-major order
    if not flat:  # an empty tensor: lists down to its first dim of extent 0
        return _empty_nest(tuple(t.shape))
    for n in reversed(t.shape[1:]):
        flat = [flat[i:i + n] for i in range(0, len(flat), n)]
    return flat


def _empty_nest(shape: tuple) -> list:
    return [] if shape[0] == 0 else [_empty_nest(shape[1:]) for _ in range(shape[0])]

