"""torch.backends: the flags scripts set for cuDNN, cuBLAS and MPS. tidal records them; none of
those libraries runs under tidal, so the flags change nothing."""
from __future__ import annotations

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
