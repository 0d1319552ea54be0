"""Copies between devices: through host memory, on the calling thread after the source's
writer is done (the destination is a fresh tensor nothing else can be writing)."""
from __future__ import annotations

from ..tensor import Tensor
from ..vm import machine


def _available(device_type: str) -> bool:
    try:
        machine._backends[device_type]  # loads a device backend on first use
    except RuntimeError:
        return False
    return True


def to_device(x: Tensor, dev, dtype) -> Tensor:
    """A copy of `x` on device `dev` with `dtype`."""
    if not _available(dev.type):
        raise RuntimeError(f"to(): device '{dev}' is not available: tidal has no {dev.type} backend "
                           "on this machine")
    host = x.detach()._host_array()  # a private copy when x is not on the CPU
    if dev.type == "cpu":
        out = Tensor._from_array(host, x.dtype, share=x.device.type != "cpu")
    else:
        out = Tensor._empty(tuple(host.shape), x.dtype, dev)
        blob = out._v.blob
        blob.hold(out._vm.allocator.alloc(blob.nbytes))
        out._vm.backend.copy_from_host(out._v, host)
    return out if dtype is x.dtype else out.to(dtype)
