"""In-place writes through views of tensors in the graph (PyTorch's CopySlices and view rebase).

A view shares its base's memory, so an in-place write into either changes what the other holds.
One rule, for every in-place writer and view chains of any depth (every view's `_base` is the root):

- writing into a view `v` of `base`: the write's own node takes the view's old history; `base`
  gets a CopySlices node that sends its gradient outside the written region to its old history
  and inside the region to the write's node;
- after any in-place write that changes `base`'s history, every live view of `base` that takes part
  in autograd gets a fresh AsStridedBackward0 node on `base`'s new history (torch regenerates a
  stale view's grad_fn on access; tidal does it at the write, which gives the same graph);
- torch's errors where it refuses: a view of a leaf that requires grad, one output of a function
  that returns several views.

Writers that record their node on the tensor they write use `write_inplace(out, writer, ...)`;
elementwise in-place ops (which compute the result out of place first) use `needs_rebase` and
`write_through_view`.
"""
from __future__ import annotations

import weakref

from ..tensor import Tensor
from ..tensor.tensor import numel_of
from . import graph
from . import hooks
from .grad_mode import is_grad_enabled, no_grad
from .graph import _versioned, no_tangents, record

LEAF_VIEW = "a view of a leaf Variable that requires grad is being used in an in-place operation."
NO_GRAD_VIEW = ("A view was created in no_grad mode and is being modified inplace with grad mode enabled. Given that "
                "this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving "
                "both the view and the inplace either both inside the no_grad block (if you don't want the inplace "
                "to be tracked) or both outside (if you want the inplace to be tracked).")
_MULTI_VIEW = ("Output {k} of {fn} is a view and is being modified inplace. This view is the output of a function "
               "that returns multiple views. Such functions do not allow the output views to be modified inplace. "
               "You should replace the inplace operation by an out-of-place one.")
_CUSTOM_VIEW = ("Output {k} of {fn} is a view and is being modified inplace. This view was created inside a custom "
                "Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would "
                "override the custom backward associated with the custom Function, leading to incorrect gradients. "
                "This behavior is forbidden. You can fix this by cloning the output of the custom Function.")
_MULTI_VIEW_FNS = {"UnbindBackward0": "Unbind", "SplitBackward0": "Split", "SplitWithSizesBackward0": "SplitWithSizes",
                   "ChunkBackward0": "Split", "UnsafeSplitBackward0": "Split"}
# PyTorch's class name for the base's node is CopySlices, without "Backward0"
graph._node_classes.setdefault("copy_slices", type("CopySlices", (graph.Node,), {
    "__slots__": (), "name": lambda self: "torch::autograd::CopySlices"}))
# and Tensor.copy_'s node is CopyBackwards
graph._node_classes.setdefault("copy_", type("CopyBackwards", (graph.Node,), {
    "__slots__": (), "name": lambda self: "torch::autograd::CopyBackwards"}))


# -- the live views of a base -----------------------------------------------------------------
def track_view(view: Tensor) -> None:
    """Remember `view` (weakly) on its base, if an in-place write in grad mode may give the base a new history.
    Under no_grad, a view of a tensor that requires grad is marked as torch's: it requires grad, yet no gradient
    reaches it or its base (graph.gradient_edge), and an in-place write into it in grad mode is refused."""
    base = view._base
    if base is None:
        return
    if not is_grad_enabled():
        if base._requires_grad and view.dtype.is_floating_point:
            view._requires_grad = True
            view.__dict__["_nograd_view"] = True
        return
    if base._requires_grad and base.grad_fn is None:
        return  # views of a leaf that requires grad never need it: torch refuses writes through them
    refs = base.__dict__.get("_views")
    if refs is None:
        base.__dict__["_views"] = [weakref.ref(view)]
        return
    refs.append(weakref.ref(view))
    if len(refs) >= 64 and not len(refs) & (len(refs) - 1):  # at powers of two: drop the dead
        refs[:] = [r for r in refs if r() is not None]


def _live_views(base: Tensor) -> list:
    refs = base.__dict__.get("_views")
    if not refs:
        return []
    live = [(r, v) for r, v in ((r, r()) for r in refs) if v is not None and v._base is base
            and v._v.blob is base._v.blob]
    refs[:] = [r for r, _ in live]
    return [v for _, v in live]


_STALE_MULTI_VIEW = ("Output {k} of {fn} is a view and its base or another view of its base has been modified "
                     "inplace. This view is the output of a function that returns multiple views. Such functions do "
                     "not allow the output views to be modified inplace. You should replace the inplace operation by "
                     "an out-of-place one.")


def _refuse_stale_multi_view(node, g):
    raise RuntimeError(node.attrs)


def refresh_views(base: Tensor) -> None:
    """Give every live view of `base` a node on `base`'s current history (AsStridedBackward0). One output of a
    function returning several views (split, unbind, chunk) gets a node that refuses backward with torch's error
    (torch refuses such a view at its next use in grad mode; tidal when backward reaches it)."""
    if base.grad_fn is None:
        return
    for v in _live_views(base):
        fn = v.grad_fn
        if fn is not None and fn.n_outputs > 1 and fn.name() in _MULTI_VIEW_FNS:
            message = _STALE_MULTI_VIEW.format(k=v._output_nr, fn=_MULTI_VIEW_FNS[fn.name()])
            v.__dict__.pop("_output_nr", None)
            record("as_strided", _refuse_stale_multi_view, (base,), (v,), attrs=message)
            continue
        if v.dtype is base.dtype:
            v.__dict__.pop("_output_nr", None)
            hooks.strided_node("as_strided", base, v)
        elif _as_parts(base, v):  # real/imag parts of a complex base, or complex numbers over real pairs
            v.__dict__.pop("_output_nr", None)
            hooks.parts_node(base, v)


# -- the rule ---------------------------------------------------------------------------------
def needs_rebase(out: Tensor) -> bool:
    """Whether an in-place write into `out` (in grad mode) must go through `write_through_view`."""
    base = out._base
    if base is not None and base is not out:
        return True
    refs = out.__dict__.get("_views")
    return bool(refs) and bool(_live_views(out))


def check_view_write(out: Tensor) -> None:
    """torch's errors for an in-place write (in grad mode) into view `out`."""
    base = out._base
    custom = out.__dict__.get("_custom_function_view")
    if custom is not None and out._requires_grad:  # a view a custom Function returned (autograd.function)
        k, fn, several = custom
        raise RuntimeError((_MULTI_VIEW if several else _CUSTOM_VIEW).format(k=k, fn=fn))
    if out.grad_fn is None and base._requires_grad and is_grad_enabled():
        # a view of a tensor that requires grad has a node unless it was made under no_grad
        raise RuntimeError(NO_GRAD_VIEW)
    fn = out.grad_fn
    # torch reads the view's creation (one of several views) before whether its base is a leaf
    if fn is not None and fn.n_outputs > 1 and fn.name() in _MULTI_VIEW_FNS:
        raise RuntimeError(_MULTI_VIEW.format(k=out._output_nr, fn=_MULTI_VIEW_FNS[fn.name()]))
    if out._requires_grad and base._requires_grad and base.grad_fn is None:
        raise RuntimeError(LEAF_VIEW)


def _as_parts(base: Tensor, view: Tensor) -> bool:
    """Whether `view` reads `base`'s memory as another dtype of the same numbers: a real/imag view of a complex
    base, or a complex view of real pairs (its autograd works on the real parts)."""
    a, b = base.dtype, view.dtype
    return (a.is_complex and a.to_real() is b) or (b.is_complex and b.to_real() is a)


def _layout(t: Tensor) -> tuple:
    """(shape, strides, offset) of `t`, counted in real parts when it is complex (a last dim of 2)."""
    v = t._v
    if not t.dtype.is_complex:
        return v.shape, v.strides, v.offset
    return v.shape + (2,), tuple(2 * s for s in v.strides) + (1,), 2 * v.offset


def _geometry(base: Tensor, view: Tensor) -> tuple:
    """(span, base layout, view layout, parts): both layouts relative to the lowest element either reaches.
    For a view as another dtype (see _as_parts) they count real parts, and `parts` names the complex one
    ("base" or "view"); else it is None."""
    parts = None
    if base.dtype is not view.dtype and _as_parts(base, view):
        parts = "base" if base.dtype.is_complex else "view"
    a, b = (_layout(base), _layout(view)) if parts else ((t._v.shape, t._v.strides, t._v.offset) for t in (base, view))
    ends = [(v[2], v[2] + sum((n - 1) * s for n, s in zip(v[0], v[1]))) for v in (a, b) if numel_of(v[0])]
    lo = min((e[0] for e in ends), default=0)
    span = max((e[1] for e in ends), default=-1) - lo + 1
    return span, (a[0], a[1], a[2] - lo), (b[0], b[1], b[2] - lo), parts


def _copy_slices_backward(node, g):
    span, base_layout, view_layout, parts = node.attrs
    if parts == "base":  # work on the real parts of the complex gradient
        g = hooks.as_parts(g)
    rest = None
    if node.next_functions[0][0] is not None:  # the base's old history: everything but the written region
        with no_grad():
            ones = hooks.fill_(Tensor._empty(view_layout[0], g.dtype, g.device), 1)
            written = hooks.ne(hooks.transfer(ones, span, view_layout, base_layout), 0)
        rest = hooks.where(written, 0.0, g)
    region = hooks.transfer(g, span, base_layout, view_layout) if node.next_functions[1][0] is not None else None
    if parts == "base" and rest is not None:
        rest = hooks.from_parts(rest)
    if parts == "view" and region is not None:
        region = hooks.from_parts(region)
    return rest, region


def rebase(base: Tensor, out: Tensor, result: Tensor) -> None:
    """`result` (whose node made the values now in view `out`) becomes part of `base`'s history."""
    if result.grad_fn is not None:
        record("copy_slices", _copy_slices_backward, (base, result), (base,), attrs=_geometry(base, out))
    refs = base.__dict__.get("_views")
    if not refs or all(r() is not out for r in refs):
        base.__dict__.setdefault("_views", []).append(weakref.ref(out))
    refresh_views(base)


def write_inplace(out: Tensor, writer, *args, **kwargs) -> Tensor:
    """`writer(out, *args, **kwargs)`, an in-place op that records its node on the tensor it writes, with
    the rule above when `out` is a view (or has views) in the graph; returns `out`."""
    if not is_grad_enabled():
        return writer(out, *args, **kwargs)
    base = out._base
    if base is None or base is out:
        before = out.grad_fn
        writer(out, *args, **kwargs)
        if out.grad_fn is not before and out.__dict__.get("_views"):
            refresh_views(out)
        return out
    check_view_write(out)
    standin = Tensor._make(out._v, out.dtype, out.device, out._vm)  # the view, detached from its base
    standin._requires_grad, standin.grad_fn = out._requires_grad, out.grad_fn
    if out.grad_fn is not None:
        standin._output_nr = out._output_nr
    writer(standin, *args, **kwargs)
    if standin.grad_fn is not out.grad_fn:  # the write was recorded: the base takes it into its history
        rebase(base, out, standin)
    return out


def inplace_writer(fn):
    """Decorator: make in-place op `fn(self, ...)` follow the rule for views (see `write_inplace`)."""
    def method(self, *args, **kwargs):
        return write_inplace(self, fn, *args, **kwargs)
    method.__name__, method.__qualname__, method.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    method.__wrapped__ = fn
    return method


def _keep_saved_values(node, out: Tensor) -> None:
    """`node` saved `out` (once) before the write overwrites it: save a copy instead, as torch's in-place
    ops keep their original self. Saved twice (`y.mul_(y)`), torch refuses at backward, and so do we."""
    saved = getattr(node, "_saved", ())
    hits = [k for k, t in enumerate(saved) if t is out]
    if len(hits) != 1:
        return
    k = hits[0]
    copy = hooks.clone(out)
    node._saved = saved[:k] + (copy,) + saved[k + 1:]
    node._versions = _versioned(node._versions, k, copy._version)


def _save_written(node, out: Tensor, result: Tensor) -> None:
    """A node that saved its result (relu_, sigmoid_, exp_) keeps `out`, which the result was written into, as torch's
    in-place op saves self: a later write into `out`, its base or another view of it then fails at backward with
    torch's error instead of going unnoticed (the result computed out of place is never written again)."""
    if node._hooked or not node._saved_outputs or result.dtype is not out.dtype or result.shape != out.shape:
        return
    nr = result._output_nr
    saved = list(node._saved)
    for k, j in node._saved_outputs:
        if j == nr and isinstance(saved[k], Tensor):
            saved[k] = graph.output_alias(out)
            node._versions = _versioned(node._versions, k, (out._vc or out._v.blob).version)
    node._saved = tuple(saved)


def write_through_view(out: Tensor, result: Tensor) -> Tensor:
    """Store `result` (computed out of place, with its node) into `out` and rebase; returns `out`."""
    base = out._base
    if base is not None and base is not out:
        check_view_write(out)
    if result.grad_fn is not None:
        _keep_saved_values(result.grad_fn, out)
    with no_grad(), no_tangents():
        hooks.convert(result, out.dtype, out=out)
    if result.grad_fn is not None:
        _save_written(result.grad_fn, out, result)
    if base is None or base is out:  # the whole base is rewritten: it takes the result's history
        out.grad_fn, out._requires_grad = result.grad_fn, result._requires_grad
        out.__dict__.pop("_output_nr", None)
        if result._output_nr:
            out._output_nr = result._output_nr
        refresh_views(out)
        return out
    rebase(base, out, result)
    return out
