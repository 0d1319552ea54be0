"""`grad_fn._saved_<name>`: a node's saved tensors under torch's names (derivatives.yaml's argument names).

    y = a * b
    y.grad_fn._saved_self is a, y.grad_fn._saved_other is b   # True True
    torch.exp(a).grad_fn._saved_result                         # equal to the output (not the same object)

Elementwise nodes save the output (`result`) and the inputs their formulas read (ops/elementwise/derivatives.py); a name
exists on a node when some formula of its op reads that value, and gives None where the inputs that needed it
did not require grad, as torch's undefined saved variables do. Reading goes through the node's saved tensors, so
it raises torch's error once backward freed them and runs saved_tensors_hooks' unpack hook. Other nodes
expose no names yet (AttributeError, as for a name torch's node does not have).
"""
from __future__ import annotations

from . import hooks

__all__ = ["saved_value", "SAVED_NAMES"]

# input names of elementwise ops whose torch schema does not call them self/other
_ARG_NAMES = {"pow": ("self", "exponent"), "float_power": ("self", "exponent"),
              "where": ("condition", "self", "other"), "lerp": ("self", "end", "weight"),
              "clamp": ("self", "min", "max"),
              "addcmul": ("self", "tensor1", "tensor2"), "addcdiv": ("self", "tensor1", "tensor2"),
              "masked_fill": ("self", "mask", "value")}
_DEFAULT = ("self", "other")
SAVED_NAMES = frozenset({"result", *_DEFAULT, *(n for names in _ARG_NAMES.values() for n in names)})


def _names(node) -> dict | None:
    """{name: place in the node's saved tuple} for an elementwise node, else None."""
    if node.backward_fn is not hooks.elementwise_backward:
        return None
    op = node.attrs[0]
    reads = set().union(*hooks.elementwise_reads[op])  # 1: the output, 2 + k: input k
    inputs = _ARG_NAMES.get(op, _DEFAULT if len(node.attrs[1]) <= 2 else ())
    names = {"result": 0} if 1 in reads else {}
    names.update({name: k + 1 for k, name in enumerate(inputs) if k + 2 in reads})
    return names


def saved_value(node, name: str):
    """The value node `node` saved under torch's name `name` (e.g. 'self', 'other', 'result')."""
    names = _names(node)
    if names is None or name not in names:
        raise AttributeError(f"'{type(node).__name__}' object has no attribute '_saved_{name}'")
    return node.saved_tensors[names[name]]
