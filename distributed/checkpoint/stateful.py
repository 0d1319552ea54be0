"""torch.distributed.checkpoint.stateful: the Stateful protocol, and how save/load treat such objects.

Any object with `state_dict()` and `load_state_dict(sd)` (a module, an optimizer, the DCP tutorial's
AppState) is Stateful. As in torch, a Stateful value at the top level of the state dict given to
dcp.save is saved as its state_dict(); dcp.load fills that state dict from the checkpoint and hands it
to the object's load_state_dict.
"""
from __future__ import annotations

from typing import Any, Protocol, TypeVar, runtime_checkable

__all__ = ["Stateful", "StatefulT"]


@runtime_checkable
class Stateful(Protocol):
    """An object that checkpoints through its own state_dict/load_state_dict."""

    def state_dict(self) -> dict[str, Any]:
        """The object's state, as a (nested) dict of tensors and plain values."""
        ...

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the object from a state dict shaped like state_dict()'s."""
        ...


StatefulT = TypeVar("StatefulT", bound=Stateful)


def _expand(state_dict: dict) -> tuple[dict, dict]:
    """(the state dict with each top-level Stateful value replaced by its state_dict(), those objects by key)."""
    if not isinstance(state_dict, dict):
        raise TypeError(f"expected the state_dict to be a dict, got {type(state_dict).__name__}")
    objects = {k: v for k, v in state_dict.items() if isinstance(v, Stateful)}
    return {k: v.state_dict() if k in objects else v for k, v in state_dict.items()}, objects


def _hand_back(state_dict: dict, loaded: dict, objects: dict) -> None:
    """After a load into `loaded` (from _expand): Stateful objects load their part, other top-level values
    are stored back into the caller's `state_dict` (a plain value is replaced, not filled in place)."""
    for k, v in loaded.items():
        if k in objects:
            objects[k].load_state_dict(v)
        else:
            state_dict[k] = v
