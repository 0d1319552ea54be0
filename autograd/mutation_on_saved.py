"""torch.autograd.graph.allow_mutation_on_saved_tensors: within it, a tensor saved for backward may be changed
in place afterwards; backward then reads the value it had when it was saved.

torch clones a saved tensor at the moment an in-place op is about to change it (a dispatch mode sees the op);
tidal has no such mode, so the saved-tensor hooks keep a copy from the start and backward uses it only when the
tensor's version moved (otherwise the tensor itself, still in the graph for double backward). Memory: one copy
of each saved tensor while the graph lives, within this context only.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

from ..tensor import Tensor
from .saved_hooks import saved_tensors_hooks

__all__ = ["allow_mutation_on_saved_tensors"]

_ACTIVE: list = []


class _AllowMutationOnSavedContext:
    """The state of one allow_mutation_on_saved_tensors block: the copies kept for the saved tensors."""

    def __init__(self) -> None:
        self.cloned: dict = {}  # id(saved tensor) -> its copy at save time

    def clear(self) -> None:
        """Drop the copies (done on leaving the block)."""
        self.cloned.clear()


@contextlib.contextmanager
def allow_mutation_on_saved_tensors() -> Iterator[_AllowMutationOnSavedContext]:
    """Allow in-place changes of tensors saved for backward (run forward and backward inside it)."""
    if _ACTIVE:
        raise RuntimeError("allow_mutation_on_saved_tensors contexts cannot be nested")
    ctx = _AllowMutationOnSavedContext()

    def pack(t: Tensor):
        copy = t.detach().clone()
        ctx.cloned[id(t)] = copy
        return t, t._version, copy

    def unpack(packed) -> Tensor:
        t, version, copy = packed
        return t if t._version == version else copy

    _ACTIVE.append(ctx)
    try:
        with saved_tensors_hooks(pack, unpack):
            yield ctx
    finally:
        _ACTIVE.pop()
        ctx.clear()
