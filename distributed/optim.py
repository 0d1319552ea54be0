"""torch.distributed.optim.DistributedOptimizer: one optimizer per worker owning some of the parameters (given as
RRefs), each stepped with the gradients that worker's distributed autograd context holds."""
from __future__ import annotations

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    """The optimizer on a parameters' owner (made there by remote())."""

    def __init__(self, optimizer_class, param_rrefs: list, args: tuple, kwargs: dict) -> None:
        self.params = [r.local_value() for r in param_rrefs]
        self.optim = optimizer_class(self.params, *args, **kwargs)

    @staticmethod
    def step_remote(optimizer_rref, context_id: int) -> None:
        """Step with the context's gradients (None for a parameter that got none); .grad is left as it was (torch's
        distributed optimizer never writes it)."""
        from .autograd import get_gradients
        self = optimizer_rref.local_value()
        grads = get_gradients(context_id)
        kept = [p.grad for p in self.params]
        for p in self.params:
            p.grad = grads.get(p)
        try:
            self.optim.step()
        finally:
            for p, g in zip(self.params, kept):
                p.grad = g


class DistributedOptimizer:
    """Step `optimizer_class(params, *args, **kwargs)` on every worker owning some of `params_rref`, with the
    gradients of a distributed autograd context."""

    def __init__(self, optimizer_class, params_rref: list, *args, **kwargs) -> None:
        from . import rpc
        by_owner: dict = {}
        for rref in params_rref:
            by_owner.setdefault(rref._owner, []).append(rref)
        self.remote_optimizers = [rpc.remote(owner, _LocalOptimizer, args=(optimizer_class, rrefs, args, kwargs))
                                  for owner, rrefs in by_owner.items()]

    def step(self, context_id: int) -> None:
        """One step of every worker's optimizer with the gradients of `context_id`."""
        from . import rpc
        futures = [rpc.rpc_async(r.owner(), _LocalOptimizer.step_remote, args=(r, context_id))
                   for r in self.remote_optimizers]
        for future in futures:
            future.wait()
