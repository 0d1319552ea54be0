"""torch.distributed.autograd: backward across the workers of an RPC group (context, backward, get_gradients).

Inside `with context() as ctx_id:` every RPC carries the context id. A callee runs the call as usual and, when its
result requires grad, keeps the call's tensor arguments (leaves there) and result under the context. The caller
receives the result through a `_RecvBackward` node whose inputs are the tensors it sent (and the context's anchor,
a leaf that makes the node part of the graph even when nothing sent requires grad). `backward(ctx_id, roots)`
computes the gradients of every leaf the roots reach; crossing a `_RecvBackward` node sends the result's gradient
to the callee (an RPC), which computes its own leaves' gradients the same way and returns those of the arguments.
Gradients go into the context (`get_gradients`), never into `.grad`, as torch's do.
"""
from __future__ import annotations

import itertools
import threading

from .. import ops
from ..autograd import grad
from ..autograd import Function
from ..autograd.graph import gradient_edge
from ..autograd.graph_walk import leaves_reached
from ..tensor import Tensor
from ..utils._pytree import tree_leaves
from ..utils._pytree import tree_flatten
from ..utils._pytree import tree_unflatten

__all__ = ["context", "backward", "get_gradients", "is_available"]

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


def is_available() -> bool:
    """True: distributed autograd runs over tidal's RPC."""
    return True


def current() -> int | None:
    """The context id this thread's RPCs carry (None outside any context)."""
    return getattr(_local, "ctx", None)


class context:
    """`with context() as context_id:`: a new distributed autograd context for the calls made inside."""

    def __enter__(self) -> int:
        from .rpc import _current  # in an import circle with rpc (FILE_CIRCLES_LEFT)
        if current() is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        ctx_id = (_current().rank << 48) + next(_counter)
        _get(ctx_id, create=True)
        _local.ctx = ctx_id
        return ctx_id

    def __exit__(self, *exc) -> None:
        from .rpc import _current  # in an import circle with rpc (FILE_CIRCLES_LEFT)
        ctx_id = _local.ctx
        _local.ctx = None
        found = _contexts.pop(ctx_id, None)
        agent = _current()
        for worker in sorted(found.workers if found else ()):
            if worker != agent.rank:  # (the workers it reached drop theirs too)
                agent.call(worker, {"op": "release", "ctx": ctx_id})


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


def backward(context_id: int, roots: list, retain_graph: bool = False) -> None:
    """Backward from `roots` (scalars) across every worker their graph reaches, into context `context_id`."""
    ctx = _get(context_id)
    roots = list(roots)
    for r in roots:
        if r.numel() != 1:
            raise RuntimeError("backward(): roots must be scalars (one element)")
        if not r.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
    _run(ctx, roots, [ops.ones_like(r) for r in roots], retain_graph, [])


def get_gradients(context_id: int) -> dict:
    """{tensor: gradient} of this worker's leaves in the context."""
    ctx = _get(context_id)
    with _lock:
        return {leaf: g for leaf, g in ctx.grads.values()}


# -- the RPC side (distributed/rpc.py calls these) ----------------------------------------------------------


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


def bridge(dst: int, ctx_id: int, call: str, sent: list, result):
    """On a caller: `result` (received from `dst`) joined to the graph of the tensors it sent, so that backward
    asks `dst` for the rest of the gradient."""
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
            # in an import circle with rpc (FILE_CIRCLES_LEFT)
            from .rpc import _current, _wait, DEFAULT_RPC_TIMEOUT_SEC
            agent = _current()
            future = agent.call(dst, {"op": "backward", "ctx": ctx_id, "backward_call": call,
                                      "grads": _encode(list(grads))})
            arg_grads = _wait(future, agent.options.rpc_timeout or DEFAULT_RPC_TIMEOUT_SEC)
            return (None, *arg_grads)

    outs = _RecvBackward.apply(ctx.anchor, *sent)
    outs = outs if isinstance(outs, tuple) else (outs,)
    for k, t in zip(positions, outs):
        leaves[k] = t
    return tree_unflatten(leaves, spec)


def _encode(value):
    from .rpc import encode  # in an import circle with rpc (FILE_CIRCLES_LEFT)
    return encode(value)
