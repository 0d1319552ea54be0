"""torch.functional: the module torch defines some of its functions in (split, einsum, stft, meshgrid...)."""
from __future__ import annotations

import tidal as _tidal

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "broadcast_shapes", "broadcast_tensors", "cartesian_prod",
           "block_diag", "cdist", "chain_matmul", "einsum", "istft", "lu", "norm", "meshgrid", "pca_lowrank", "split",
           "stft", "svd_lowrank", "tensordot", "unique", "unique_consecutive", "unravel_index"]
globals().update({_name: getattr(_tidal, _name) for _name in __all__})
