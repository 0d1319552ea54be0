"""SparseAdam: Adam restricted to the entries a sparse gradient holds.

tidal has no sparse layout, so every gradient it makes is dense, and PyTorch's SparseAdam refuses
dense gradients: `step` raises PyTorch's error for them. The class still checks its hyperparameters,
keeps parameter groups, and loads and saves PyTorch's state dicts.
"""
from __future__ import annotations

from .optimizer import Optimizer, check

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """SparseAdam, as torch.optim.SparseAdam (for sparse gradients only)."""

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        check(0.0 < lr, "learning rate", lr)
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
            for p in group["params"]:
                if p.grad is not None and not getattr(p.grad, "is_sparse", False):
                    raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
        return loss
