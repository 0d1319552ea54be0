"""Flatten parameters into one vector and back."""
from __future__ import annotations

from typing import Iterable

from ... import ops
from ...tensor import Tensor
from ..parameter import set_data

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param: Tensor, first) -> object:
    if first is None:
        return param.device
    if param.device != first:
        raise TypeError("Found two parameters on different devices, this is currently not supported.")
    return first


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    """All parameters flattened and concatenated into one 1-D tensor."""
    device = None
    flat = []
    for param in parameters:
        device = _check_same_device(param, device)
        flat.append(param.reshape(-1))
    return ops.cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    """Make each parameter a view of the matching slice of `vec` (the inverse of parameters_to_vector)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected tidal.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for param in parameters:
        device = _check_same_device(param, device)
        n = param.numel()
        set_data(param, vec.detach()[pointer:pointer + n].view_as(param))
        pointer += n
