"""Gradients of views: the nodes view ops record, and the one kernel that sends a view's gradient back.

A view reads elements of its input's memory through (shape, strides, offset). Its gradient is the
adjoint: the view's gradient added into zeros shaped like the input, through the same layout.
`transfer` is that move in general (add `x` into a zeroed buffer through one layout, read the buffer
back through another); its adjoint is the same move with the two layouts swapped, so a view's
gradient is itself differentiable and double backward needs nothing more. The records are at the
bottom of the file: the transfer (a kernel) and the nodes of views that pick elements (no kernel: the
view is metadata), whose backward is a transfer.
"""
from __future__ import annotations

import numpy as np

from ...autograd import graph
from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor.tensor import contiguous_strides, numel_of
from ...vm import View
from ..dispatch.node_names import overload  # (declared there with the other node names; view ops import it from here)
from ..dispatch.primitive import Primitive


def inplace_node(t: Tensor, name: str, k: int) -> None:
    """Give `t`'s node (just recorded by an in-place view op) the class of PyTorch's in-place overload."""
    if t.grad_fn is not None:
        t.grad_fn.__class__ = graph.node_class(overload(name, k))  # same layout: only the name differs


# -- the transfer op -----------------------------------------------------------------------------
def _overlaps(shape: tuple, strides: tuple) -> bool:
    """Whether two indices may reach one element: each stride must clear the span of the smaller ones."""
    if not numel_of(shape):
        return False
    reach = 0  # the farthest element the dims seen so far reach
    for n, s in sorted(((n, s) for n, s in zip(shape, strides) if n > 1), key=lambda p: p[1]):
        if s <= reach:
            return True
        reach += (n - 1) * s
    return False


def _loop_dims(shape: tuple, strides: tuple) -> tuple:
    """Dims to loop over (fewest iterations first) so that the other dims never reach one element twice."""
    loop, rest = [], [d for d in range(len(shape)) if shape[d] > 1]
    while _overlaps(tuple(shape[d] for d in rest), tuple(strides[d] for d in rest)):
        d = min(rest, key=lambda d: shape[d])
        rest.remove(d)
        loop.append(d)
    return tuple(loop)


def _strided(buf: np.ndarray, layout: tuple) -> np.ndarray:
    shape, strides, offset = layout
    return np.lib.stride_tricks.as_strided(buf[offset:], shape, tuple(s * buf.itemsize for s in strides))


def _transfer_kernel(ins, outs, attrs):
    span, src, dst, loop = attrs
    x, out = ins[0], outs[0]
    # half types accumulate in float32 (and bfloat16 arrays lack most NumPy loops)
    buf = np.zeros(span, np.float32 if x.dtype.itemsize < 4 else x.dtype)
    if x.size and not loop:
        _strided(buf, src)[...] = x
    elif x.size:  # elements reached several times: add one non-overlapping slice at a time
        shape, strides, offset = src
        keep = [d for d in range(len(shape)) if d not in loop]
        inner = (tuple(shape[d] for d in keep), tuple(strides[d] for d in keep))
        for at in np.ndindex(*(shape[d] for d in loop)):
            where = dict(zip(loop, at))
            part = _strided(buf, inner + (offset + sum(i * strides[d] for d, i in where.items()),))
            part += x[tuple(where.get(d, slice(None)) for d in range(len(shape)))]
    if out.size:
        out[...] = _strided(buf, dst)


def transfer(x: Tensor, span: int, src: tuple, dst: tuple) -> Tensor:
    """`x` added into `span` zeros through layout `src` (elements reached twice add up), read through `dst`."""
    return TRANSFER((x,), (span, src, dst, _loop_dims(src[0], src[1])), node="as_strided_scatter")


def _transfer_backward(node, g):
    span, src, dst = node.attrs
    return (transfer(g, span, dst, src),)


def _scatter_back(node, g):
    span, view_layout, input_layout = node.attrs
    return (transfer(g, span, view_layout, input_layout),)


def window_node(name: str, view_fn, input: Tensor, out: Tensor, *args) -> Tensor:
    """Record `name` for `out = view_fn(input, *args)` (a view, or a copy of one) of `input`.

    The backward adds the gradient into zeros shaped like `input` through the view's layout, found by
    applying `view_fn` to a contiguous stand-in of `input` (metadata only, nothing is read).
    """
    if needs_grad((input,)):
        shape = input._v.shape
        strides = contiguous_strides(shape)
        standin = Tensor._make(View(input._v.blob, shape, strides, 0, input.dtype.np), input.dtype, input.device,
                               input._vm)
        v = view_fn(standin, *args)._v
        AS_STRIDED.attach((input,), (out,), (numel_of(shape), (v.shape, v.strides, v.offset), (shape, strides, 0)),
                          node=name)
    return out


def strided_node(name: str, input: Tensor, out: Tensor) -> Tensor:
    """Record `name` for a view `out` of `input` placed anywhere in its memory (as_strided)."""
    if needs_grad((input,)):
        a, b = input._v, out._v
        ends = [(v.offset, v.offset + sum((n - 1) * s for n, s in zip(v.shape, v.strides)))
                for v in (a, b) if numel_of(v.shape)]
        lo = min((e[0] for e in ends), default=0)
        span = max((e[1] for e in ends), default=-1) - lo + 1
        layouts = ((b.shape, b.strides, b.offset - lo), (a.shape, a.strides, a.offset - lo))
        AS_STRIDED.attach((input,), (out,), (span,) + layouts, node=name)
    return out


# -- records -------------------------------------------------------------------------------------
def _transfer_shape(inputs: tuple, attrs: tuple) -> list:
    return [(attrs[2][0], inputs[0].dtype)]  # (the read layout's shape)


def _layouts(inputs: tuple, attrs: tuple) -> tuple:
    return attrs[:3]  # (span, src, dst: the loop dims are the kernel's alone)


TRANSFER = Primitive("strided_transfer", _transfer_shape, cpu=_transfer_kernel, backward=_transfer_backward,
                     node_attrs=_layouts)
# the nodes of views that pick elements anywhere in their input's memory (slice, select, diagonal, unfold,
# narrow_copy and as_strided name theirs): the gradient goes back through the view's layout
AS_STRIDED = Primitive("as_strided", None, cpu=None, backward=_scatter_back)
