"""Copies between devices: through host memory, on the calling thread after the source's
writer is done (the destination is a fresh tensor nothing else can be writing)."""
from __future__ import annotations

from ...tensor import Tensor
from ...vm import machine
from ..dispatch.primitive import Primitive


def _available(device_type: str) -> bool:
    try:
        machine._backends[device_type]  # loads a device backend on first use
    except (RuntimeError, AssertionError):  # (AssertionError: torch's refusal of CUDA on a CPU-only build)
        return False
    return True


def _device_copy_backward(node, g):
    return (g.to(node.attrs),)  # the gradient goes back to the source's device


def to_device(x: Tensor, dev, dtype) -> Tensor:
    """A copy of `x` on device `dev` with `dtype` (a ToCopyBackward0 node when x needs grad, as in torch)."""
    out = _copied(x, dev)
    TO_DEVICE.attach((x,), (out,), x.device, node="to_copy")
    return out if dtype is x.dtype else out.to(dtype)


def _copied(x: Tensor, dev) -> Tensor:
    if not _available(dev.type):
        if dev.type == "cuda":  # a CPU-only torch build's refusal
            raise AssertionError("Torch not compiled with CUDA enabled")
        raise RuntimeError(f"to(): device '{dev}' is not available: tidal has no {dev.type} backend "
                           "on this machine")
    if dev.type == "meta":  # nothing to copy: a tensor of x's shape without data (reading x: none either)
        return Tensor._empty(tuple(x.shape), x.dtype, dev)
    host = x.detach()._host_array()  # a private copy when x is not on the CPU (meta: torch's refusal)
    if dev.type == "cpu":
        out = Tensor._from_array(host, x.dtype, share=x.device.type != "cpu")
    else:
        out = Tensor._empty(tuple(host.shape), x.dtype, dev)
        blob = out._v.blob
        blob.hold(out._vm.allocator.alloc(blob.nbytes))
        out._vm.backend.copy_from_host(out._v, host)
    return out


# the node of a copy to another device (made through host memory, not a kernel): torch's ToCopyBackward0
TO_DEVICE = Primitive("to_device", None, cpu=None, backward=_device_copy_backward)
