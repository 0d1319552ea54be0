"""Helpers shared by the distributions: broadcasting parameters, probs <-> logits, lazy properties."""
from __future__ import annotations

import numbers
from functools import update_wrapper

import numpy as np

from .. import ops
from ..autograd import enable_grad
from ..ops.dispatch.factory_args import FLOAT_DIGITS, FLOAT_MAX
from ..tensor import Size, Tensor
from ..tensor import dtype as dt

__all__ = ["broadcast_all", "logits_to_probs", "probs_to_logits", "clamp_probs", "lazy_property", "eps_of",
           "min_of", "tiny_of", "tril_matrix_to_vec", "vec_to_tril_matrix"]

_TINY = {dt.float16: 6.103515625e-05, dt.bfloat16: 1.1754943508222875e-38, dt.float32: 1.1754943508222875e-38,
         dt.float64: 2.2250738585072014e-308}


def eps_of(dtype: dt.dtype) -> float:
    """finfo(dtype).eps: the gap between 1 and the next float."""
    return 2.0 ** (1 - FLOAT_DIGITS[dtype])


def min_of(dtype: dt.dtype) -> float:
    """finfo(dtype).min: the most negative finite float."""
    return -FLOAT_MAX[dtype]


def tiny_of(dtype: dt.dtype) -> float:
    """finfo(dtype).tiny: the smallest normal number."""
    return _TINY[dtype]


def broadcast_all(*values) -> tuple:
    """Broadcast numbers and tensors to one shape; numbers take the first tensor's dtype and device."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number, torch.Tensor or objects "
                         "implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        like = next((v for v in values if isinstance(v, Tensor)), None)
        dtype = like.dtype if like is not None else dt.get_default_dtype()
        device = like.device if like is not None else None
        values = tuple(v if isinstance(v, Tensor) else ops.tensor(v, dtype=dtype, device=device) for v in values)
    return tuple(ops.broadcast_tensors(*values))


def broadcast_params(*values) -> tuple[tuple[Tensor, ...], Size]:
    """broadcast_all(*values) and the batch shape they give a distribution: Size() when all are plain numbers."""
    tensors = broadcast_all(*values)
    return tensors, (Size() if all(isinstance(v, numbers.Number) for v in values) else tensors[0].size())


def _standard_normal(shape, dtype: dt.dtype, device) -> Tensor:
    """Standard normal noise of `shape` from tidal's default generator."""
    return ops.randn(tuple(shape), dtype=dtype, device=device)


def _sum_rightmost(value: Tensor, dim: int) -> Tensor:
    """Sum out the `dim` rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(tuple(value.shape[:-dim]) + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    """Probabilities from logits: sigmoid when binary, else softmax over the last dimension."""
    if is_binary:
        return ops.sigmoid(logits)
    return ops.softmax(logits, dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """Clamp into [eps, 1 - eps] so logs stay finite."""
    eps = eps_of(probs.dtype)
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    """Logits from probabilities (log-odds when binary, else log-probabilities)."""
    ps_clamped = clamp_probs(probs)
    if is_binary:
        return ops.log(ps_clamped) - ops.log1p(-ps_clamped)
    return ops.log(ps_clamped)


class lazy_property:
    """A property computed once on first access (with grad enabled) and then stored on the instance."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        update_wrapper(self, wrapped)

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What the class sees: a lazy_property that is also a property (for introspection)."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def as_size(shape) -> Size:
    """A Size from a tuple, list or Size."""
    return shape if isinstance(shape, Size) else Size(tuple(shape))


def _tril_indices(n: int, diag: int) -> np.ndarray:
    """Flat (row-major) positions of the entries of an n x n matrix on or below diagonal `diag`, in row order."""
    rows, cols = np.nonzero(np.arange(n) < np.arange(n)[:, None] + (diag + 1))
    return rows * n + cols


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The lower-triangular entries (below diagonal `diag`) of a batch of square matrices, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    index = ops.tensor(_tril_indices(n, diag), device=mat.device)
    return mat.flatten(-2).index_select(-1, index)


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The batch of D x D lower-triangular matrices whose entries (row order) are `vec`'s last dimension."""
    # the positive root of D^2 + (1 + 2 diag) D - |diag| (diag + 1) - 2 N = 0
    n = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1] + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(n) - n > eps_of(vec.dtype):
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be expressed as "
                         "the lower triangular part of a square D x D matrix.")
    n = round(n)
    # scatter through a 0/1 placement matrix, so the result stays differentiable in vec
    placement = np.zeros((vec.shape[-1], n * n))
    placement[np.arange(vec.shape[-1]), _tril_indices(n, diag)] = 1
    flat = vec @ ops.tensor(placement, dtype=vec.dtype, device=vec.device)
    return flat.reshape(tuple(vec.shape[:-1]) + (n, n))

