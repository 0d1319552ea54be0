"""torch.distributed.autograd: backward across the workers of an RPC group (context, backward, get_gradients).

Inside `with context() as ctx_id:` every RPC carries the context id. A callee runs the call as usual and, when its
result requires grad, keeps the call's tensor arguments (leaves there) and result under the context. The caller
receives the result through a `_RecvBackward` node whose inputs are the tensors it sent (and the context's anchor,
a leaf that makes the node part of the graph even when nothing sent requires grad). `backward(ctx_id, roots)`
computes the gradients of every leaf the roots reach; crossing a `_RecvBackward` node sends the result's gradient
to the callee (an RPC), which computes its own leaves' gradients the same way and returns those of the arguments.
Gradients go into the context (`get_gradients`), never into `.grad`, as torch's do. The worker's side of it, which
rpc.py calls, is autograd_contexts.py.
"""
from __future__ import annotations

from .. import ops
from .autograd_contexts import _contexts, _counter, _get, _local, _lock, _run, current
from .rpc import _current

__all__ = ["context", "backward", "get_gradients", "is_available"]


def is_available() -> bool:
    """True: distributed autograd runs over tidal's RPC."""
    return True


class context:
    """`with context() as context_id:`: a new distributed autograd context for the calls made inside."""

    def __enter__(self) -> int:
        if current() is not None:
            raise RuntimeError("Already have an autograd context id for this thread.")
        ctx_id = (_current().rank << 48) + next(_counter)
        _get(ctx_id, create=True)
        _local.ctx = ctx_id
        return ctx_id

    def __exit__(self, *exc) -> None:
        ctx_id = _local.ctx
        _local.ctx = None
        found = _contexts.pop(ctx_id, None)
        agent = _current()
        for worker in sorted(found.workers if found else ()):
            if worker != agent.rank:  # (the workers it reached drop theirs too)
                agent.call(worker, {"op": "release", "ctx": ctx_id})


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


