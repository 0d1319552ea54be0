"""torch.cond and torch.while_loop: torch's control-flow operators, run eagerly.

torch traces both branches (or the loop body) with torch.compile before running them, so it also refuses
programs its tracer cannot capture (outputs aliasing inputs, branches of different output shapes). tidal
runs eagerly, so it calls the branch chosen by `pred` (the body while `cond_fn` holds) on the operands and
checks only the arguments torch checks before tracing (none for a Python constant `pred`, as torch).
"""
from __future__ import annotations

from typing import Callable

from ..tensor import Tensor

__all__ = ["cond", "while_loop"]


def _only_tensor_leaves(tree, leaves=(Tensor, int, float, bool)) -> bool:
    if isinstance(tree, (list, tuple)):
        return all(_only_tensor_leaves(x, leaves) for x in tree)
    if isinstance(tree, dict):
        return all(_only_tensor_leaves(x, leaves) for x in tree.values())
    return isinstance(tree, leaves)


def _truth(value, what: str) -> bool:
    if isinstance(value, Tensor):
        if value.numel() != 1:
            raise RuntimeError(f"Expected {what} to be bool or single-element tensor, but got {value}.")
        return bool(value.item())
    return bool(value)


def cond(pred, true_fn: Callable, false_fn: Callable, operands: tuple | list = ()):
    """true_fn(*operands) if pred else false_fn(*operands); `pred` a Python constant or a one-element tensor."""
    if isinstance(pred, (bool, int, float)):  # torch's eager case: no checks, the branch runs
        return (true_fn if pred else false_fn)(*operands)
    if not isinstance(pred, Tensor):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if pred.numel() != 1:
        raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)) or not _only_tensor_leaves(operands, Tensor):
        raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple that only consists "
                           f"of tensor leaves, but got {operands}.")
    return (true_fn if bool(pred.item()) else false_fn)(*operands)


def while_loop(cond_fn: Callable, body_fn: Callable, carried_inputs: tuple | list):
    """Run carried = body_fn(*carried) while cond_fn(*carried) holds; the final carried values."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)) or not _only_tensor_leaves(carried_inputs, (Tensor, int)):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested dict/list/tuple that only"
                           f"consists of tensor or int leaves, but got {carried_inputs}.")  # (torch's, no space)
    carried, last = tuple(carried_inputs), None
    while _truth(cond_fn(*carried), "cond_fn's result"):
        last = body_fn(*carried)
        carried = tuple(last) if isinstance(last, (tuple, list)) else (last,)
    # torch returns the body's output as the body gave it (a bare tensor stays bare), a tuple otherwise
    return carried if last is None or isinstance(last, (tuple, list)) else last
