"""torch's grad_fn names for ops tidal composes from primitives.

`F.mse_loss` is one node in torch (`MseLossBackward0`) and a chain of elementwise nodes here, ending in
`MeanBackward0`. Scripts print `loss.grad_fn` (the tutorials do), so the chain's last node takes torch's
class name; its backward, its inputs and the nodes below it stay tidal's own.
`overload(name, k)` is the node name of an op's k-th overload (torch's SqueezeBackward1, RoundBackward1).
"""
from __future__ import annotations

from ...autograd import graph
from ...autograd.graph import Node
from ...autograd.held_inputs import HoldingNode, hold
from ...autograd.saved_names import HELD_INPUTS
from ...tensor import Tensor

__all__: list = []

_CLASSES: dict = {}


def _node_type(op: str, held: tuple | None = None) -> type:
    """A Node class named as torch's codegen names it: each '_'-separated part title-cased, so
    'upsample_nearest2d' gives UpsampleNearest2DBackward0; a name given in full ('SqueezeBackward4') is kept; a
    holding class where `op` holds inputs (HELD_INPUTS), or holding `held` (a node renamed that holds them)."""
    inner = held is not None  # (what an inner composite's node held: checked, not named as this node's)
    held = HELD_INPUTS.get(op) if held is None else held
    cls = _CLASSES.get((op, held, inner))
    if cls is None:
        name = op if op[:1].isupper() else "".join(p.title() for p in op.split("_")) + "Backward0"
        # (names_a_composite: grad_fn._saved_<name> reads no table row meant for the op's own node)
        cls = _CLASSES[op, held, inner] = type(name, (Node,), {"__slots__": (), "names_a_composite": True}) \
            if not held else type(name, (HoldingNode,), {"__slots__": (), "held_names": held,
                                                          "names_held": not inner, "names_a_composite": True})
    return cls


def torch_node(out: Tensor, op: str, *inputs) -> Tensor:
    """Name `out`'s grad_fn after torch's node for `op` when this composite made it (not when `out` is
    an input passed through, nor a node with saved-tensor hooks or a custom Function's), holding the `inputs`
    torch's node saves (HELD_INPUTS); returns `out`. A node that holds inputs already (an inner composite's, as
    instance_norm's batch norm) keeps them, and holds no more."""
    fn = out.grad_fn
    if fn is None:
        return out
    bases = type(fn).__bases__
    if bases != (Node,) and bases != (HoldingNode,):
        return out
    for t in inputs:
        if isinstance(t, Tensor) and t.grad_fn is fn:
            return out
    if bases == (HoldingNode,):
        fn.__class__ = _node_type(op, type(fn).held_names)
        return out
    cls = _node_type(op)
    if op in HELD_INPUTS:
        hold(fn, inputs[:len(cls.held_names)])
    fn.__class__ = cls
    return out


_overloads: dict = {}  # (name, k) -> its key in graph._node_classes


def overload(name: str, k: int) -> str:
    """A node name giving PyTorch's class for the k-th overload of `name` (SqueezeBackward1, TBackward1)."""
    key = _overloads.get((name, k))
    if key is None:  # graph.node_class only makes `...Backward0`: the class for this key is made once, kept there
        key = _overloads[name, k] = f"{name}.{k}"
        zeroth = graph.node_class(name).__name__
        graph._node_classes[key] = type(zeroth[:-1] + str(k), (graph.Node,), {"__slots__": ()})
    return key
