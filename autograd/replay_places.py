"""A recorded backward pass made again in a new graph's places: its blobs, views, instruction inputs and results.

Both replays of a recorded pass (backward_replay's instructions, lowered_replay's kernels) name memory the same
way: internal blobs by number (made when first named), the graph's own tensors (saved, leaves, .grad, the root
gradient) by place after them, and views as (number, place or -1, internal blob number, nbytes, shape, strides,
offset, NumPy dtype, layout) entries at the step that names them first.
"""
from __future__ import annotations

from ..tensor import Tensor
from ..vm.blob import fresh_blob, view_of


def begin(n_blobs: int, walk, retain_graph: bool) -> list:
    """The blob table (`n_blobs` internal ones, then the graph's places); the graph is let go (its nodes' saved
    tensors freed unless `retain_graph`: the recorded steps name what they read, nothing else need stay alive)."""
    blobs: list = [None] * n_blobs + [t._v.blob for t in walk.places]
    walk.places = walk.blobs = None
    if not retain_graph:
        for node in walk.nodes:
            node.release()
    walk.nodes = None
    return blobs


def make_views(first: tuple, views: list, blobs: list, n_blobs: int, vm) -> None:
    """The views a step names first, into `views` (an internal blob is made when first named)."""
    for n, place, b, nbytes, shape, strides, offset, np_dtype, layout in first:
        if place >= 0:
            blob = blobs[n_blobs + place]
        else:
            blob = blobs[b]
            if blob is None:
                blob = blobs[b] = fresh_blob(nbytes, vm)
        views[n] = view_of(blob, shape, strides, offset, np_dtype, layout)


def inputs(args: tuple, views: list) -> tuple:
    """A step's inputs: view numbers, or (view number or None, scalar) pairs where a scalar is among them."""
    if args and args[0].__class__ is tuple:
        return tuple([views[n] if n is not None else x for n, x in args])
    return tuple([views[n] for n in args])


def finish(rec, walk, blobs: list, vm) -> None:
    """Set the leaves' new gradients as the recording did and bump the versions of places it wrote in place."""
    n_blobs = rec.n_blobs
    for node, grad in zip(walk.leaves, rec.grads):
        if grad is not None:
            b, shape, strides, offset, np_dtype, layout, dtype = grad
            leaf = node.variable  # (its .grad setter's checks passed when the engine wrote the recorded pass)
            leaf.__dict__["grad"] = Tensor._make(view_of(blobs[b], shape, strides, offset, np_dtype, layout), dtype,
                                                 leaf.device, vm)
    for place, bump in rec.bumps:
        blobs[n_blobs + place].version += bump
