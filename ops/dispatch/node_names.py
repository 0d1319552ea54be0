"""torch's grad_fn names for ops tidal composes from primitives.

`F.mse_loss` is one node in torch (`MseLossBackward0`) and a chain of elementwise nodes here, ending in
`MeanBackward0`. Scripts print `loss.grad_fn` (the tutorials do), so the chain's last node takes torch's
class name; its backward, its inputs and the nodes below it stay tidal's own.
"""
from __future__ import annotations

from ...autograd.graph import Node
from ...tensor import Tensor

__all__: list = []

_CLASSES: dict = {}


def _node_type(op: str) -> type:
    """A Node class named as torch's codegen names it: each '_'-separated part title-cased, so
    'upsample_nearest2d' gives UpsampleNearest2DBackward0; a name given in full ('SqueezeBackward4') is kept."""
    cls = _CLASSES.get(op)
    if cls is None:
        name = op if op[:1].isupper() else "".join(p.title() for p in op.split("_")) + "Backward0"
        cls = _CLASSES[op] = type(name, (Node,), {"__slots__": ()})
    return cls


def torch_node(out: Tensor, op: str, *inputs) -> Tensor:
    """Name `out`'s grad_fn after torch's node for `op` when this composite made it (not when `out` is
    an input passed through, nor a node with saved-tensor hooks or a custom Function's); returns `out`."""
    fn = out.grad_fn
    if fn is None or type(fn).__bases__ != (Node,):
        return out
    for t in inputs:
        if isinstance(t, Tensor) and t.grad_fn is fn:
            return out
    fn.__class__ = _node_type(op)
    return out
