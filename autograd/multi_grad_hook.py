"""torch.autograd.graph.register_multi_grad_hook: one hook over the gradients of several tensors."""
from __future__ import annotations

from typing import Callable, Sequence

from ..tensor import Tensor
from . import engine
from .graph import gradient_edge

__all__ = ["register_multi_grad_hook"]


class _MultiHandle:
    """Removes every per-tensor hook of one register_multi_grad_hook."""

    def __init__(self, handles: tuple):
        self.handles = handles

    def remove(self) -> None:
        """Unregister the hook from every tensor."""
        for h in self.handles:
            h.remove()

    def __enter__(self) -> "_MultiHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def register_multi_grad_hook(tensors: Sequence[Tensor], fn: Callable, *, mode: str = "all") -> _MultiHandle:
    """mode "all": `fn(grads)` once per backward, after the gradients of all of `tensors` that this backward
    computes (None for the others); mode "any": `fn(grad)` with the first of them computed, once per backward."""
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    tensors = tuple(tensors)
    state = {"task": None, "grads": None, "left": 0}

    def start(task) -> bool:
        """True at the first hook call of a new backward (which then resets the state)."""
        if state["task"] is task:
            return False
        state["task"] = task
        if task is not None:  # let go of the backward's nodes when it ends
            engine.queue_callback(lambda: state.update(task=None, grads=None))
        if mode == "all":
            state["grads"] = [None] * len(tensors)
            state["left"] = sum(1 for t in tensors if engine.will_run(gradient_edge(t)))
        return True

    def make(k: int):
        def hook(grad):
            fresh = start(engine._tasks[-1] if engine._tasks else None)
            if mode == "any":
                return fn(grad) if fresh else None
            state["grads"][k] = grad
            state["left"] -= 1
            if state["left"] == 0:
                grads, state["grads"] = tuple(state["grads"]), None
                return fn(grads)
            return None
        return hook

    handles = tuple(t.register_hook(_observer(make(k))) for k, t in enumerate(tensors))
    return _MultiHandle(handles)


def _observer(hook: Callable) -> Callable:
    """A tensor hook that runs `hook` but never replaces the gradient (the multi-hook only observes)."""
    def observe(grad):
        hook(grad)
    return observe
