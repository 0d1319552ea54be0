"""torch.masked on strided tensors: reductions and normalizations over the elements a boolean mask keeps.

Each fills the masked-out elements with its reduction's identity (0 for sums, 1 for products, -inf for
maxima...) and runs the plain tidal op, so the result, its NaN/inf for fully masked slices and its gradient
are those of PyTorch's masked reference implementations.
"""
from __future__ import annotations

import math

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M
from ..factories.creation import ones_like
from ..linalg.namespace import vector_norm
from .extremes import amax as _amax, amin as _amin
from .softmax import log_softmax as _log_softmax, softmax as _softmax
from .stats import logsumexp as _logsumexp

__all__: list = []  # no top-level names: these live in torch.masked
METHODS: dict = {}
MASKED = ["amax", "amin", "argmax", "argmin", "cumprod", "cumsum", "is_masked_tensor", "log_softmax", "logaddexp",
          "logsumexp", "mean", "median", "norm", "normalize", "prod", "softmax", "softmin", "std", "sum", "var"]


def _prepare(input: Tensor, mask, dtype) -> tuple:
    x = input if dtype is None else input.to(dtype)
    if mask is None:
        return x, None
    if mask.dtype is not dt.bool_:
        raise ValueError(f"masked: expected mask to have dtype torch.bool, got {mask.dtype}")
    if mask.ndim > x.ndim:
        raise IndexError("_input_mask expected broadcastable mask (got mask dimensionality higher than of the input)")
    return x, mask.expand(*x.shape) if tuple(mask.shape) != tuple(x.shape) else mask


def _filled(x: Tensor, mask, value) -> Tensor:
    return x if mask is None else M.where(mask, x, value)


def _lowest(x: Tensor):
    """The identity of a maximum in x's dtype: -inf, or the integer dtype's smallest value (as torch.masked)."""
    if x.dtype.is_floating_point or x.dtype is dt.bool_:
        return -math.inf
    return int(np.iinfo(x.dtype.np).min)


def _highest(x: Tensor):
    """The identity of a minimum in x's dtype: inf, or the integer dtype's largest value."""
    if x.dtype.is_floating_point or x.dtype is dt.bool_:
        return math.inf
    return int(np.iinfo(x.dtype.np).max)


def _dims(x: Tensor, dim) -> tuple | None:
    if dim is None:
        return None
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _reduce(fn, x: Tensor, dim, keepdim: bool) -> Tensor:
    dims = _dims(x, dim)
    return fn(x, dims, keepdim) if dims is not None else fn(x, tuple(range(x.ndim)), keepdim)


def sum(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The sum of the kept elements (0 where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    return _reduce(lambda t, d, k: t.sum(d, keepdim=k), _filled(x, mask, 0), dim, keepdim)


def prod(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The product of the kept elements (1 where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    filled = _filled(x, mask, 1)
    dims = _dims(x, dim) if dim is not None else tuple(range(x.ndim))
    for d in sorted((d % x.ndim for d in dims), reverse=True) if x.ndim else ():
        filled = filled.prod(d, keepdim=True)
    if x.ndim == 0:
        return filled.prod()  # the dtype of a product (int64 for bool and the integers)
    return filled if keepdim else filled.reshape([s for i, s in enumerate(filled.shape)
                                                  if i not in {d % max(x.ndim, 1) for d in dims}])


def amax(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The largest kept element (-inf where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    return _reduce(lambda t, d, k: _amax(t, d, k), _filled(x, mask, _lowest(x)), dim, keepdim)


def amin(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The smallest kept element (inf where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    return _reduce(lambda t, d, k: _amin(t, d, k), _filled(x, mask, _highest(x)), dim, keepdim)


def argmax(input: Tensor, dim: int | None = None, *, keepdim: bool = False, dtype=None,
           mask: Tensor | None = None) -> Tensor:
    """The index of the largest kept element along dim (in input's dtype, as torch.masked gives it)."""
    x, mask = _prepare(input, mask, dtype)
    return _filled(x, mask, _lowest(x)).argmax(dim, keepdim=keepdim).to(x.dtype)


def argmin(input: Tensor, dim: int | None = None, *, keepdim: bool = False, dtype=None,
           mask: Tensor | None = None) -> Tensor:
    """The index of the smallest kept element along dim (in input's dtype, as torch.masked gives it)."""
    x, mask = _prepare(input, mask, dtype)
    return _filled(x, mask, _highest(x)).argmin(dim, keepdim=keepdim).to(x.dtype)


def _count(x: Tensor, mask, dim, keepdim: bool) -> Tensor:
    kept = ones_like(x) if mask is None else mask.to(x.dtype)
    return _reduce(lambda t, d, k: t.sum(d, keepdim=k), kept, dim, keepdim)


def mean(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The mean of the kept elements (NaN where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    return M.div(sum(x, dim, keepdim=keepdim, mask=mask), _count(x, mask, dim, keepdim))


def median(input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The median of the kept elements along dim (NaN where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    return _filled(x, mask, math.nan).nanmedian(dim, keepdim=keepdim)[0]


def logsumexp(input: Tensor, dim=None, *, keepdim: bool = False, dtype=None, mask: Tensor | None = None) -> Tensor:
    """log(sum(exp)) of the kept elements (-inf where none is kept), in input's dtype (as torch.masked)."""
    x, mask = _prepare(input, mask, dtype)
    dims = _dims(x, dim) if dim is not None else tuple(range(x.ndim))
    return _logsumexp(_filled(x, mask, _lowest(x)), dims, keepdim).to(x.dtype)


def norm(input: Tensor, ord: float | None = 2.0, dim=None, *, keepdim: bool = False, dtype=None,
         mask: Tensor | None = None) -> Tensor:
    """The ord-norm of the kept elements (masked-out ones count as 0; as inf for negative ord)."""
    x, mask = _prepare(input, mask, dtype)
    ord = 2.0 if ord is None else ord
    return vector_norm(_filled(x, mask, math.inf if ord < 0 else 0.0), ord, dim=_dims(x, dim), keepdim=keepdim)


def _variance(input: Tensor, dim, unbiased, correction, keepdim: bool, dtype, mask) -> Tensor:
    x, mask = _prepare(input, mask, dtype)
    if correction is None:
        correction = 1 if unbiased is None or unbiased else 0
    count = _count(x, mask, dim, True)
    centre = M.div(sum(x, dim, keepdim=True, mask=mask), count)
    deviation = _filled(M.sub(x, centre), mask, 0)
    # |deviation|^2, kept complex for complex input (torch.masked's dtype); the count is real
    total = _reduce(lambda t, d, k: t.sum(d, keepdim=k), M.mul(deviation, deviation.conj()), dim, keepdim)
    divisor = M.clamp_min(M.sub(_count(x.real if x.dtype.is_complex else x, mask, dim, keepdim), correction), 0)
    return M.div(total, divisor)


def var(input: Tensor, dim=None, unbiased: bool | None = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask: Tensor | None = None) -> Tensor:
    """The variance of the kept elements (NaN where too few are kept)."""
    return _variance(input, dim, unbiased, correction, keepdim, dtype, mask)


def std(input: Tensor, dim=None, unbiased: bool | None = None, *, correction=None, keepdim: bool = False,
        dtype=None, mask: Tensor | None = None) -> Tensor:
    """The standard deviation of the kept elements."""
    return M.sqrt(_variance(input, dim, unbiased, correction, keepdim, dtype, mask))


def cumsum(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The running sum along dim, masked-out elements adding 0."""
    x, mask = _prepare(input, mask, dtype)
    return _filled(x, mask, 0).cumsum(dim, dtype=x.dtype)  # (torch's masked cumsum keeps the dtype: int16 stays)


def cumprod(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """The running product along dim, masked-out elements multiplying by 1."""
    x, mask = _prepare(input, mask, dtype)
    return _filled(x, mask, 1).cumprod(dim, dtype=x.dtype)


def softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """softmax over the kept elements (0 at masked-out ones; NaN where none is kept)."""
    x, mask = _prepare(input, mask, dtype)
    return _softmax(_filled(x, mask, -math.inf), dim)


def log_softmax(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """log_softmax over the kept elements (-inf at masked-out ones)."""
    x, mask = _prepare(input, mask, dtype)
    return _log_softmax(_filled(x, mask, -math.inf), dim)


def softmin(input: Tensor, dim: int, *, dtype=None, mask: Tensor | None = None) -> Tensor:
    """softmax of -input over the kept elements."""
    x, mask = _prepare(input, mask, dtype)
    return _softmax(_filled(M.neg(x), mask, -math.inf), dim)


def normalize(input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype=None,
              mask: Tensor | None = None) -> Tensor:
    """input divided by the ord-norm of its kept elements along dim (masked-out elements give 0)."""
    x, mask = _prepare(input, mask, dtype)
    n = norm(x, ord, dim, keepdim=True, mask=mask)
    return M.div(_filled(x, mask, 0), M.clamp_min(n, eps))


def logaddexp(input: Tensor, other: Tensor, *, dtype=None, input_mask: Tensor | None = None,
              other_mask: Tensor | None = None) -> Tensor:
    """log(exp(input) + exp(other)), a masked-out element counting as exp(-inf) = 0."""
    x, input_mask = _prepare(input, input_mask, dtype)
    y, other_mask = _prepare(other, other_mask, dtype)
    return M.logaddexp(_filled(x, input_mask, -math.inf), _filled(y, other_mask, -math.inf))


def is_masked_tensor(obj) -> bool:
    """False: tidal has no MaskedTensor type, so nothing is one."""
    return False
