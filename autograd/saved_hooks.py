"""Saved-tensor hooks (torch.autograd.graph.saved_tensors_hooks, save_on_cpu, disable_saved_tensors_hooks).

While a `saved_tensors_hooks(pack, unpack)` block is active, every tensor an op saves for backward is
passed to `pack` and the graph keeps only what `pack` returned; `unpack(packed)` gives the tensor back
each time backward (or `node.saved_tensors`) reads it. Only the innermost block applies.

How: while a block is active, `Node.__init__` is swapped for one that also packs (outside any block
recording pays nothing, not even a check). A node recorded under a block has its class swapped for a twin
subclass (same name, same layout) whose `_saved` is a property: assignments pack (ops that save their
output assign `_saved` after recording, see ops/elementwise/derivatives.py), reads unpack.

As in torch: a packed tensor is not checked for in-place changes at unpack (the graph no longer holds
it); the stack of blocks, and of disable_saved_tensors_hooks blocks, is per thread: a block entered on
one thread does not pack what another thread records (the swapped Node.__init__ finds that thread's
stack empty and records plainly).
"""
from __future__ import annotations

import threading
import weakref

from ..tensor import Tensor
from .graph import FREED, Node
from . import hooks

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class _Stacks(threading.local):
    """This thread's active blocks, innermost last: (pack, unpack) pairs, and the error messages of
    disable_saved_tensors_hooks blocks."""

    def __init__(self) -> None:
        self.hooks: list = []
        self.disabled: list = []


_stacks = _Stacks()
_open = [0]                 # hook blocks open on all threads: while any is, Node.__init__ is _packing_init
_open_lock = threading.Lock()
_raw = Node._saved  # the slot descriptor: the packed entries of a hooked node
_twins: dict = {}   # Node subclass -> its hooked twin


class _Packed:
    """One saved tensor as its pack hook returned it; `source` (a weak reference to the original) lets a
    reassignment of `_saved` that keeps the same tensor reuse the packing instead of packing again."""

    __slots__ = ("value", "unpack", "source")

    def __init__(self, value, unpack, source):
        self.value, self.unpack, self.source = value, unpack, source


def _pack(t, hooks: tuple, old: tuple):
    if not isinstance(t, Tensor):
        return t
    for entry in old:
        if isinstance(entry, _Packed) and entry.source() is t:
            return entry
    pack, unpack = hooks
    return _Packed(pack(t), unpack, weakref.ref(t))


def _unpack(entry):
    if not isinstance(entry, _Packed):
        return entry
    out = entry.unpack(entry.value)
    if not isinstance(out, Tensor):
        raise TypeError(f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                        f"{type(out).__name__}")
    return out


def _get_saved(node) -> tuple:
    return tuple([_unpack(e) for e in _raw.__get__(node)])


def _set_saved(node, saved: tuple) -> None:
    hooks = node.__dict__["_saved_hooks"]
    old = _raw.__get__(node) if hooks is not None else ()
    _raw.__set__(node, tuple([_pack(t, hooks, old) for t in saved]) if saved else ())


def _saved_tensors(node) -> tuple:
    """The saved tensors, each given back by its unpack hook (no version check: the graph holds no original)."""
    if node._freed:
        raise RuntimeError(FREED)
    return node.outputs_restored(_get_saved(node)) if node._saved_outputs else _get_saved(node)


def _twin(cls: type) -> type:
    twin = _twins.get(cls)
    if twin is None:
        twin = _twins[cls] = type(cls.__name__, (cls,), {
            "__slots__": (), "__module__": cls.__module__, "__qualname__": cls.__qualname__, "_hooked": True,
            "_saved": property(_get_saved, _set_saved), "saved_tensors": property(_saved_tensors)})
    return twin


_plain_init = Node.__init__


def _packing_init(node: Node, *args) -> None:
    """Node.__init__ while a hooks block is active on some thread: record, then, if this thread has a
    block, pack what `node` saved, now and later."""
    _plain_init(node, *args)
    hooks = _stacks.hooks
    if not hooks:
        return
    node.__class__ = _twin(type(node))
    node.__dict__["_saved_hooks"] = hooks[-1]
    saved = _raw.__get__(node)
    _raw.__set__(node, ())
    node._saved = saved


class saved_tensors_hooks:
    """Context manager: `pack_hook(tensor)` runs when an op saves `tensor` for backward, and
    `unpack_hook(packed)` when backward reads it back (must return a tensor)."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self) -> None:
        if _stacks.disabled:
            raise RuntimeError(_stacks.disabled[-1])
        _stacks.hooks.append((self.pack_hook, self.unpack_hook))
        with _open_lock:
            _open[0] += 1
            Node.__init__ = _packing_init

    def __exit__(self, *exc) -> None:
        _stacks.hooks.pop()
        with _open_lock:
            _open[0] -= 1
            if not _open[0]:
                Node.__init__ = _plain_init


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept in CPU memory (pinned if asked) and moved back to their device when read."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda"):
        def pack_to_cpu(tensor: Tensor):
            if not pin_memory:
                return tensor.device, tensor.cpu()
            packed = hooks.empty(tuple(tensor.shape), dtype=tensor.dtype, device="cpu", pin_memory=True)
            packed.copy_(tensor)
            return tensor.device, packed

        def unpack_from_cpu(packed) -> Tensor:
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


class disable_saved_tensors_hooks:
    """Context manager: entering saved_tensors_hooks inside it raises RuntimeError(error_message); it may
    not be entered while hooks are active."""

    def __init__(self, error_message: str):
        self.error_message = error_message

    def __enter__(self) -> None:
        if _stacks.hooks:
            raise RuntimeError(self.error_message)
        _stacks.disabled.append(self.error_message)

    def __exit__(self, *exc) -> None:
        _stacks.disabled.pop()
