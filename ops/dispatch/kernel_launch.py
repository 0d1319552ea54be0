"""Dispatch of non-elementwise ops: outputs created now, the kernel queued on the VM."""
from __future__ import annotations

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ...vm import compute_instruction
from ...vm.failure import issuing_site
from .mem_overlap import check_written

_kernels: dict = {}  # (op name, device type) -> kernel


def register_kernel(name: str, device_type: str):
    """Decorator: `fn(ins, outs, attrs)` is the kernel of op `name` on `device_type`."""
    def deco(fn):
        _kernels[name, device_type] = fn
        return fn
    return deco


ANY_OP = "*"  # register_kernel(ANY_OP, device_type): the kernel of every op on that type (meta: never run)


def kernel_for(name: str, device) -> object:
    """The kernel registered for `name` on `device` (or for ANY_OP there); NotImplementedError naming both if none."""
    fn = _kernels.get((name, device.type))
    if fn is None:
        fn = _kernels.get((ANY_OP, device.type))
    if fn is None:
        raise NotImplementedError(f"{name}: no kernel for device type '{device.type}'")
    return fn


@register_kernel(ANY_OP, "meta")
def _meta_kernel(ins, outs, attrs) -> None:
    raise AssertionError("the meta VM runs no kernel")  # (vm/meta.py: meta tensors have no data)


def same_device(name: str, tensors) -> object:
    """The one device of `tensors`; RuntimeError as PyTorch's when they differ."""
    dev = None
    for t in tensors:
        if dev is None:
            dev = t.device
        elif t.device is not dev and t.device != dev:  # devices are mostly shared objects: skip __eq__
            raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                               f"devices, {dev} and {t.device}! ({name})")
    return dev


def launch(name: str, ins: tuple, out_specs, attrs=None, device=None, reduce=None,
           checks_data: bool = False) -> list:
    """Create outputs of the given (shape, dtype) specs and queue `name`'s kernel; returns them.
    `reduce` declares a reduction the VM may fuse (see Instruction). `checks_data`: the kernel may
    fail on the values it reads (indices), so the instruction records the user's line that issued it
    for the deferred error (a stack walk: only for such ops, never for elementwise ones)."""
    dev = device if device is not None else same_device(name, ins)
    outs = [Tensor._empty(tuple(shape), dtype, dev) for shape, dtype in out_specs]
    if outs:
        instr = compute_instruction(name, kernel_for(name, dev), tuple([t._v for t in ins]),
                                    tuple([o._v for o in outs]), attrs, None, reduce, None)
        if checks_data:
            instr.origin = issuing_site()
        outs[0]._vm.push(instr)
    return outs


def launch_into(name: str, ins: tuple, outs: tuple, attrs=None, checks_data: bool = False) -> None:
    """Queue `name`'s kernel writing into existing tensors (in place); bumps their versions.
    `checks_data` as for `launch`."""
    dev = same_device(name, tuple(ins) + tuple(outs))
    for o in outs:
        if o.__class__ is not Tensor and hasattr(o, "_lazy_view"):
            return _launch_into_lazy(name, ins, outs, attrs, checks_data)
        check_written(o)  # (an inference tensor outside inference_mode: refused before anything is queued)
        (o._vc or o._v.blob).version += 1
    instr = compute_instruction(name, kernel_for(name, dev), tuple([t._v for t in ins]), tuple([o._v for o in outs]),
                                attrs, None, None, None)
    if checks_data:
        instr.origin = issuing_site()
    outs[0]._vm.push(instr)


def _launch_into_lazy(name: str, ins: tuple, outs: tuple, attrs, checks_data: bool) -> None:
    """launch_into with a conj (or negative) view among `outs` (an out= argument): the kernel writes a copy of its
    values, which is then stored through the view's own writer, so its memory holds them conjugated."""
    with no_grad():
        temps = tuple([o.resolve_conj().resolve_neg() for o in outs])
        launch_into(name, ins, temps, attrs, checks_data)
        for o, t in zip(outs, temps):
            if t is not o:
                o.copy_(t)
