"""Distributed autograd on one worker, the side rpc.py calls: the contexts and their gradients, the calls a worker
answered inside one, the backward it runs for a caller, and the node that joins a reply to the caller's graph
(distributed/autograd.py, torch.distributed.autograd, is the user's side, above rpc.py)."""
from __future__ import annotations

import itertools
import threading
from typing import Callable

from .. import ops
from ..autograd import grad
from ..autograd import Function
from ..autograd.graph import gradient_edge
from ..autograd.graph_walk import leaves_reached
from ..tensor import Tensor
from ..utils._pytree import tree_leaves
from ..utils._pytree import tree_flatten
from ..utils._pytree import tree_unflatten

_local = threading.local()      # .ctx: the context id of the calls this thread makes
_contexts: dict = {}            # context id -> _Context on this worker
_lock = threading.Lock()
_counter = itertools.count()


class _Context:
    """A distributed autograd context on one worker: its gradients, the calls it answered, its anchor."""

    def __init__(self, ctx_id: int) -> None:
        self.id = ctx_id
        self.grads: dict = {}      # id(leaf) -> (leaf, gradient)
        self.calls: dict = {}      # call id -> (argument leaves, result tensors)
        self.workers: set = set()  # the workers this context sent calls to
        self.anchor = ops.zeros((1,), requires_grad=True)

    def accumulate(self, leaf, grad) -> None:
        """Add `grad` to the context's gradient of `leaf`."""
        if grad is None:
            return
        with _lock:
            held = self.grads.get(id(leaf))
            self.grads[id(leaf)] = (leaf, grad if held is None else held[1] + grad)


def _get(ctx_id: int, create: bool = False) -> _Context:
    with _lock:
        found = _contexts.get(ctx_id)
        if found is None and create:
            found = _contexts[ctx_id] = _Context(ctx_id)
    if found is None:
        raise RuntimeError(f"Could not find autograd context with id: {ctx_id}")
    return found


def current() -> int | None:
    """The context id this thread's RPCs carry (None outside any context)."""
    return getattr(_local, "ctx", None)


def _reached_leaves(roots: list) -> list:
    edges = [gradient_edge(t) for t in roots if t.requires_grad]
    return list(dict.fromkeys(leaves_reached([e for e in edges if e is not None])))


def _run(ctx: _Context, outputs: list, grad_outputs, retain_graph: bool, keep: list) -> list:
    """Backward from `outputs` into every leaf they reach: leaves in `keep` get their gradients returned, the
    others (parameters, tensors made on this worker) accumulate theirs in the context."""
    leaves = _reached_leaves(outputs)
    for k in keep:
        if k.requires_grad and not any(k is leaf for leaf in leaves):
            leaves.append(k)
    if not leaves:
        return [None] * len(keep)
    grads = grad(outputs, leaves, grad_outputs=grad_outputs, retain_graph=retain_graph, allow_unused=True)
    by_leaf = {id(leaf): g for leaf, g in zip(leaves, grads)}
    kept = {id(k) for k in keep}
    for leaf, g in zip(leaves, grads):
        if id(leaf) not in kept and leaf is not ctx.anchor and not getattr(leaf, "_dist_anchor", False):
            ctx.accumulate(leaf, g)
    return [by_leaf.get(id(k)) for k in keep]


def record_call(ctx_id: int, call: str, args, result) -> bool:
    """On a callee: keep a call's argument leaves and result under the context when the result requires grad."""
    outputs = [t for t in tree_leaves(result) if isinstance(t, Tensor) and t.requires_grad]
    if not outputs:
        return False
    leaves = [t for t in tree_leaves(args) if isinstance(t, Tensor) and t.requires_grad]
    _get(ctx_id, create=True).calls[call] = (leaves, outputs)
    return True


def remote_backward(ctx_id: int, call: str, grads: list) -> list:
    """On a callee: backward of a recorded call's result; its arguments' gradients (returned to the caller)."""
    ctx = _get(ctx_id)
    leaves, outputs = ctx.calls.pop(call)
    pairs = [(o, g) for o, g in zip(outputs, grads) if g is not None]
    if not pairs:
        return [None] * len(leaves)
    return _run(ctx, [o for o, _ in pairs], [g for _, g in pairs], False, leaves)


def release(ctx_id: int) -> None:
    """Drop a context on this worker."""
    with _lock:
        _contexts.pop(ctx_id, None)


def bridge(dst: int, ctx_id: int, sent: list, result, ask: Callable):
    """On a caller: `result` (received from `dst`) joined to the graph of the tensors it sent, so that backward
    asks `dst` for the rest of the gradient: `ask(grads)` (rpc.py's) sends the result's gradients and returns
    those of the arguments."""
    ctx = _get(ctx_id)
    ctx.workers.add(dst)
    leaves, spec = tree_flatten(result)
    positions = [k for k, t in enumerate(leaves) if isinstance(t, Tensor) and t.requires_grad]
    received = [leaves[k] for k in positions]

    class _RecvBackward(Function):
        @staticmethod
        def forward(fctx, anchor, *inputs):
            return tuple(t.detach().clone() for t in received)

        @staticmethod
        def backward(fctx, *grads):
            return (None, *ask(list(grads)))

    outs = _RecvBackward.apply(ctx.anchor, *sent)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for k, t in zip(positions, outs):
        leaves[k] = t
    return tree_unflatten(leaves, spec)
