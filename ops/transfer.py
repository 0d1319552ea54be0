"""Copies between devices. Only `cpu` exists until the CUDA backend registers itself."""
from __future__ import annotations

from ..tensor import Tensor
from ..vm import machine


def to_device(x: Tensor, dev, dtype) -> Tensor:
    """A copy of `x` on device `dev` with `dtype`."""
    if dev.type not in machine._backends:
        raise RuntimeError(f"to(): device '{dev}' is not available: tidal has no {dev.type} backend "
                           "on this machine")
    host = x.detach()._host_array()
    out = Tensor._from_array(host, x.dtype)
    if dev.type != "cpu":  # pragma: no cover - needs a GPU backend
        raise NotImplementedError(f"to(): copies to {dev.type} are not implemented yet")
    return out if dtype is x.dtype else out.to(dtype)
