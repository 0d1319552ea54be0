"""hash_tensor: the xor of every element's 64-bit pattern over the reduced dims (torch's mode 0).

The worked example of a primitive declared once (see ops/dispatch/primitive.py): one record with its
CPU kernel and its (empty) CUDA slot, one front end that parses torch's arguments; its tests come from
torch's op database (tests/torch_op_db.py and tests/op_edges.py run every op tidal has).
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from .reduce import _as_given, _axes, _means_all, _out_shape, _require_nonempty

__all__ = ["hash_tensor"]


def _shapes(inputs: tuple, attrs: tuple) -> list:
    axes, keepdim, _ = attrs
    return [(_out_shape(inputs[0], axes, keepdim), dt.uint64)]


def _xor_sum_cpu(ins, outs, attrs) -> None:
    """Each element widened to its 64-bit float or integer kind, its bits xor-ed over `axes`."""
    axes, keepdim, wide = attrs
    a = ins[0].reshape(1) if ins[0].ndim == 0 else ins[0]
    bits = a.astype(wide).view(np.uint64)
    outs[0][...] = np.bitwise_xor.reduce(bits, axis=axes, keepdims=keepdim).reshape(outs[0].shape)


HASH_TENSOR = Primitive("hash_tensor", _shapes, cpu=_xor_sum_cpu, cuda=None)


_NO_KERNEL = frozenset({dt.uint16, dt.uint32, dt.uint64, dt.complex32}) | dt.FLOAT8


def _wide(x: Tensor) -> np.dtype:
    """The 64-bit dtype torch widens `x`'s elements to before taking their bits (its kernel's dtypes only)."""
    if x.dtype.is_complex or x.dtype in _NO_KERNEL:
        raise NotImplementedError(f"\"xor_sum_cpu\" not implemented for '{torch_name(x.dtype)}'")
    return np.dtype(np.float64 if x.dtype.is_floating_point else np.int64)


def hash_tensor(input: Tensor, dim=None, *, keepdim: bool = False, mode: int = 0) -> Tensor:
    """A uint64 hash of `input` over `dim` (all dims if None): the xor of the elements' 64-bit patterns."""
    if mode != 0:
        raise RuntimeError(f"Unknown hash_tensor mode: {mode}")
    axes = _axes(input, dim, "hash_tensor")
    if _means_all(dim) and input.numel() == 0:
        raise RuntimeError("hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify "
                           "the reduction dim with the 'dim' argument.")
    _require_nonempty(input, axes, "hash_tensor:", _as_given(dim, axes))
    return HASH_TENSOR((input,), (axes, keepdim, _wide(input)))


METHODS = {"hash_tensor": hash_tensor}
