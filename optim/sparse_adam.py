"""SparseAdam: Adam restricted to the entries a sparse gradient holds.

Sparse (sparse_coo) gradients come from `Embedding(sparse=True)` / `F.embedding(sparse=True)`; only the
entries their coalesced indices address move, and their moments with them, as torch's `sparse_adam`
computes them (the same operations in the same order). Dense gradients are refused with PyTorch's error.
"""
from __future__ import annotations

import math

from ..ops.factories import creation
from ..ops.elementwise import arithmetic as M
from ..tensor import Tensor
from .optimizer import Optimizer, check
from .hyperparams import check_lr

__all__ = ["SparseAdam", "sparse_adam"]


def sparse_adam(param: Tensor, grad, exp_avg: Tensor, exp_avg_sq: Tensor, step: int, *, beta1: float,
                beta2: float, lr: float, eps: float, maximize: bool) -> None:
    """One parameter's SparseAdam step, in place: the moments and the parameter change where `grad` has entries."""
    grad = grad.coalesce()
    if grad._nnz() == 0:  # torch skips an empty gradient
        return
    held = grad.entry_mask()
    g = -grad.to_dense() if maximize else grad.to_dense()
    old_avg = M.where(held, exp_avg, 0.0)
    avg_update = (g - old_avg) * (1 - beta1)
    exp_avg.copy_(M.where(held, exp_avg + avg_update, exp_avg))
    old_sq = M.where(held, exp_avg_sq, 0.0)
    sq_update = (g * g - old_sq) * (1 - beta2)
    exp_avg_sq.copy_(M.where(held, exp_avg_sq + sq_update, exp_avg_sq))
    numer = avg_update + old_avg
    denom = (sq_update + old_sq).sqrt() + eps
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    param.copy_(M.where(held, param + (-step_size) * (numer / denom), param))


class SparseAdam(Optimizer):
    """SparseAdam, as torch.optim.SparseAdam (for sparse gradients only)."""

    _sparse_refusal = None

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check_lr(lr, positive=True)
        check(0.0 < eps, "epsilon value", eps)
        check(0.0 <= betas[0] < 1.0, "beta parameter at index 0", betas[0])
        check(0.0 <= betas[1] < 1.0, "beta parameter at index 1", betas[1])
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, maximize=maximize))
        complex_params = [[index, d_index] for index, group in enumerate(self.param_groups)
                          for d_index, p in enumerate(group["params"]) if p.dtype.is_complex]
        if complex_params:
            raise ValueError(f"Complex params at indices {complex_params}: SparseAdam does not support complex "
                             "parameters")

    def step(self, closure=None):
        """Perform one optimization step; `closure` re-evaluates the loss and returns it."""
        loss = self._evaluate(closure)
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:  # every gradient is checked before any state changes, as torch
                if not p.grad.is_sparse:
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
            beta1, beta2 = group["betas"]
            for p in params:
                state = self.state[p]
                if not state:
                    state.update(step=0, exp_avg=creation.zeros_like(p), exp_avg_sq=creation.zeros_like(p))
                state["step"] += 1
                sparse_adam(p, p.grad, state["exp_avg"], state["exp_avg_sq"], state["step"], beta1=beta1,
                            beta2=beta2, lr=group["lr"], eps=group["eps"], maximize=group["maximize"])
        return loss
