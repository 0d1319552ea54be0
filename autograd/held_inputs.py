"""Inputs that torch's node of a composite op saves, held by tidal's node for that op.

`F.mse_loss` is one node in torch (MseLossBackward0) that saves `self` and `target`; here it is a chain of
primitives whose last node takes torch's name (ops/dispatch/node_names.torch_node) and whose own formulas read
other values. torch refuses at backward a write into `input` made after the loss ("one of the variables needed for
gradient computation has been modified by an inplace operation"), which the chain's saved tensors alone would not
see. A holding node keeps those inputs after its own saved tensors (their versions checked first, as torch's node
checks its saved inputs), so that graph.Node's version check covers them: the check runs when the node's formula
is read to be run (the engine reads `backward_fn` only then), and the backward replay's walk sees them among the
node's saved tensors (a changed version leaves the replay for the engine, which raises). Its own formula still sees
only its own saved tensors. The held inputs are freed with the others after backward, and `grad_fn._saved_<name>`
gives them under torch's names (saved_names.py). Under saved_tensors_hooks a composite's node is not renamed and
holds nothing (torch_node leaves hooked nodes alone).
"""
from __future__ import annotations

from ..tensor import Tensor
from .graph import INFERENCE_SAVED, Node

__all__ = ["HoldingNode", "hold"]

_FORMULA = Node.__dict__["backward_fn"]  # Node's slot for the node's own backward formula


class HoldingNode(Node):
    """A node that also holds the inputs torch's node for its op saves (`held_names`, after its own saved)."""

    __slots__ = ()
    held_names: tuple = ()  # torch's names of the held inputs, in order (each class sets its own)
    names_held = True  # whether grad_fn._saved_<name> gives them (not where an outer composite renamed the node)

    @property
    def backward_fn(self):
        """The node's formula, read by the engine to run it: a held input written in place since raises here."""
        Node.saved_tensors.fget(self)  # (torch's errors: freed, or a saved or held tensor modified since)
        return _FORMULA.__get__(self)

    @backward_fn.setter
    def backward_fn(self, fn) -> None:
        _FORMULA.__set__(self, fn)

    @property
    def saved_tensors(self) -> tuple:
        """The node's own saved tensors (the held inputs are checked, not given)."""
        saved = Node.saved_tensors.fget(self)
        return saved[:len(saved) - len(self.held_names)]

    def held(self, name: str):
        """The input held under torch's name `name` (checked as saved tensors are)."""
        saved = Node.saved_tensors.fget(self)
        return saved[len(saved) - len(self.held_names) + self.held_names.index(name)]


def hold(node: Node, inputs: tuple) -> None:
    """Keep `inputs` (one per name of the node's class, None where not a tensor) at their current versions."""
    k = len(node._saved)
    kept, versions = [], []
    for t in inputs:
        if isinstance(t, Tensor):
            if t._inference:
                raise RuntimeError(INFERENCE_SAVED)
            versions.append((k, (t._vc or t._v.blob).version))
            kept.append(t)
        else:
            kept.append(None)
        k += 1
    node._saved = node._saved + tuple(kept)
    # (checked first, as torch's node checks its own saved inputs: a write into the input of a composite that saved
    # a view of it, glu's halves, names the input)
    node._versions = tuple(versions) + node._versions
