"""Complex tensors: real/imag views, conj, angle, view_as_real/view_as_complex, complex, polar, isreal.

A complex64 tensor's memory is pairs of float32 (real, imaginary), so `real`, `imag` and
`view_as_real` are float views over the same blob (strides and offset doubled) and writes through
them reach the complex tensor, as in PyTorch. Gradients follow PyTorch's convention: the gradient of
a real loss L with respect to z = x + iy is dL/dx + i dL/dy (see ops/complex_numbers/grad.py).
"""
from __future__ import annotations

import builtins

from ...autograd.graph import needs_grad
from ...autograd.view_inplace import _geometry
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm import View
from . import compiled as complex_compiled  # noqa: F401  (complex fused groups compile: it registers their vocabulary)
from .lazy_views import ConjView, NegView, lazy, resolved, unmarked, view_with
from .lazy_views import install_writers as install_lazy_writers  # noqa: F401  (tidal.ops calls it)
from ..elementwise import plans as ew
from ..elementwise import copies, arithmetic as M
from ..elementwise import number_ops
from ..factories.creation import zeros_like
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from ..movement.view_grads import transfer
from ..movement.views import make_view
from ..dispatch.limited_dtypes import check as check_limited

__all__ = ["real", "imag", "conj", "conj_physical", "conj_physical_", "angle", "view_as_real", "view_as_complex",
           "view_as_real_copy", "view_as_complex_copy", "complex", "polar", "is_complex", "is_conj", "is_neg",
           "resolve_conj", "resolve_neg"]
METHODS: dict = {}


# -- Python conversions --------------------------------------------------------------------------
def _complex_number(self: Tensor) -> complex:
    if self.numel() != 1:
        raise ValueError("only one element tensors can be converted to Python scalars")
    return builtins.complex(self.item())


def refuse_complex(x, message: str, exc=NotImplementedError) -> None:
    """Raise torch's error (`message`, with {name} the dtype's C++ name) when `x` is a complex tensor: the
    entry check of an op torch does not define for complex numbers."""
    if isinstance(x, Tensor) and x.dtype.is_complex:
        raise exc(message.format(name=torch_name(x.dtype)))


def is_complex(input: Tensor) -> bool:
    """Whether input's dtype is complex64 or complex128."""
    return input.dtype.is_complex


def _cfloat(self: Tensor, memory_format=None) -> Tensor:
    """This tensor as complex64 (self.to(torch.cfloat))."""
    return self.to(dt.complex64)


def _cdouble(self: Tensor, memory_format=None) -> Tensor:
    """This tensor as complex128 (self.to(torch.cdouble))."""
    return self.to(dt.complex128)


def _chalf(self: Tensor, memory_format=None) -> Tensor:
    """This tensor as complex32 (self.to(torch.chalf))."""
    return self.to(dt.complex32)


METHODS.update(__complex__=_complex_number, is_complex=is_complex, cfloat=_cfloat, cdouble=_cdouble, chalf=_chalf)


# -- real / imag / view_as_real: float views of the complex memory -------------------------------------
def _parts_view(z: Tensor, extra: bool, part: int) -> Tensor:
    """A float view of complex `z`: its real (part 0) or imaginary (part 1) parts, or both as a last dim of 2.
    Of a conj view: its real parts plainly, its imaginary parts as a negative view (both on the shared memory)."""
    if isinstance(z, ConjView):
        m = z._mem
        parts = View(m.blob, m.shape, tuple(2 * s for s in m.strides), 2 * m.offset + part, z.dtype.to_real().np)
        return view_with(NegView if part else Tensor, z, parts, z.dtype.to_real())
    v = z._v
    strides = tuple(2 * s for s in v.strides)
    if extra:
        return make_view(z, v.shape + (2,), strides + (1,), 2 * v.offset, z.dtype.to_real())
    return make_view(z, v.shape, strides, 2 * v.offset + part, z.dtype.to_real())


def _real_back(node, g):
    return (complex(g, zeros_like(g)),)


def _imag_back(node, g):
    return (complex(zeros_like(g), g),)


def _view_as_real_back(node, g):
    return (view_as_complex(copies.contiguous(g)),)


def _view_as_complex_back(node, g):
    return (view_as_real(g),)


# the views' nodes, attached to the float (or complex) view of the input's memory
REAL = Primitive("real", None, cpu=None, backward=_real_back)
IMAG = Primitive("imag", None, cpu=None, backward=_imag_back)
VIEW_AS_REAL = Primitive("view_as_real", None, cpu=None, backward=_view_as_real_back)
VIEW_AS_COMPLEX = Primitive("view_as_complex", None, cpu=None, backward=_view_as_complex_back)


def real(input: Tensor) -> Tensor:
    """The real parts, as a view for complex input (writes reach it); input itself for real dtypes."""
    if not input.dtype.is_complex:
        return input
    out = _parts_view(input, False, 0)
    REAL.attach((input,), (out,))
    return out


def imag(input: Tensor) -> Tensor:
    """The imaginary parts of a complex tensor, as a view (writes reach it)."""
    if not input.dtype.is_complex:
        raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")
    out = _parts_view(input, False, 1)
    IMAG.attach((input,), (out,))
    return out


def _set_part(getter):
    def setter(self: Tensor, value) -> None:
        getter(self).copy_(value)
    return setter


METHODS.update(real=property(real, _set_part(real), doc="The real parts (a view for complex tensors)."),
               imag=property(imag, _set_part(imag), doc="The imaginary parts of a complex tensor (a view)."))


def view_as_real(input: Tensor) -> Tensor:
    """A complex tensor seen as real pairs: shape (..., 2), sharing its memory."""
    if not input.dtype.is_complex:
        raise RuntimeError("view_as_real is only supported for complex tensors")
    if isinstance(input, ConjView):
        raise RuntimeError("view_as_real doesn't work on unresolved conjugated tensors.  To resolve the conjugate "
                           "tensor so you can view it as real, use self.resolve_conj(); however, be warned that the "
                           "resulting tensor will NOT alias the original.")
    out = _parts_view(input, True, 0)
    VIEW_AS_REAL.attach((input,), (out,))
    return out


def view_as_complex(input: Tensor) -> Tensor:
    """Real pairs (a last dim of size 2, stride 1) seen as complex numbers, sharing their memory."""
    if input.dtype not in (dt.float16, dt.float32, dt.float64):
        raise RuntimeError("view_as_complex is only supported for half, float and double tensors, but got a tensor "
                           f"of scalar type: {torch_name(input.dtype)}")
    v = input._v
    if not v.shape:
        raise RuntimeError("view_as_complex: Input tensor must have one or more dimensions")
    if v.shape[-1] != 2:
        raise RuntimeError("Tensor must have a last dimension of size 2")
    if v.strides[-1] != 1:
        raise RuntimeError("Tensor must have a last dimension with stride 1")
    if any(s % 2 for s in v.strides[:-1]):
        raise RuntimeError("Tensor must have a stride divisible by 2 for all but last dimension")
    if v.offset % 2:
        raise RuntimeError("Tensor must have a storage_offset divisible by 2")
    out = make_view(input, v.shape[:-1], tuple(s // 2 for s in v.strides[:-1]), v.offset // 2,
                    input.dtype.to_complex())
    VIEW_AS_COMPLEX.attach((input,), (out,))
    return out



def view_as_real_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """view_as_real(input) in new memory."""
    result = copies.clone(view_as_real(input))
    return result if out is None else out.copy_(result)


def view_as_complex_copy(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """view_as_complex(input) in new memory."""
    result = copies.clone(view_as_complex(input))
    return result if out is None else out.copy_(result)


# -- the gradient of a view between a complex dtype and its real one (autograd's rule for writes on views) ---
def as_parts(x: Tensor) -> Tensor:
    """A complex tensor's real parts as a float tensor with a last dim of 2 (view_as_real, differentiable)."""
    return view_as_real(x)


def from_parts(x: Tensor) -> Tensor:
    """Real pairs (a last dim of 2) as complex numbers (view_as_complex of a contiguous copy, differentiable)."""
    return view_as_complex(x.contiguous())


def _parts_back(node, g):
    span, view_layout, base_layout, base_complex = node.attrs
    grad = transfer(g if base_complex else as_parts(g), span, view_layout, base_layout)
    return (from_parts(grad) if base_complex else grad,)


def parts_node(input: Tensor, out: Tensor) -> Tensor:
    """Record a view node for `out`, a view of `input`'s memory as the other of a complex dtype and its real
    one (real/imag parts of complex numbers, or complex numbers over real pairs), anywhere in that memory:
    the gradient moves through both layouts counted in real parts."""
    if needs_grad((input,)):
        span, base_layout, view_layout, parts = _geometry(input, out)
        AS_STRIDED_PARTS.attach((input,), (out,), (span, view_layout, base_layout, parts == "base"), node="as_strided")
    return out


# the node of views of a complex tensor's memory as real parts, or the reverse (torch's AsStridedBackward0)
AS_STRIDED_PARTS = Primitive("as_strided_parts", None, cpu=None, backward=_parts_back)


# -- conj, angle ------------------------------------------------------------------------------------
# torch's conj() of a complex tensor is a lazy view (a conjugate bit on the same memory: writes through it reach
# the source, views of it keep the bit, its imaginary part has the negative bit). tidal's is the same, made by
# lazy_views.py (the bit is the tensor's class; see there for why plain tensors pay nothing).


def conj(input: Tensor) -> Tensor:
    """The complex conjugate as a lazy view of input's memory (torch's conjugate bit); input itself for real
    dtypes; conj() of a conj view is its memory's values, a plain view."""
    if not input.dtype.is_complex:
        return input
    if isinstance(input, ConjView):
        return unmarked(input)
    return lazy(ConjView, input)


def conj_physical(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex conjugate computed into new memory; input itself for real dtypes (as torch)."""
    if out is not None:
        if out.dtype is not input.dtype:  # (torch writes the conjugate in the input's dtype only)
            raise RuntimeError(f"Found dtype {out.dtype.scalar_name} but expected {input.dtype.scalar_name}")
        return ew.apply("conj", input, out=out)
    return ew.apply("conj", input) if input.dtype.is_complex else input


def is_conj(input: Tensor) -> bool:
    """Whether input is a conjugate view (torch's conjugate bit)."""
    return isinstance(input, ConjView)


def is_neg(input: Tensor) -> bool:
    """Whether input is a negative view (torch's negative bit: the imaginary part of a conjugate view)."""
    return isinstance(input, NegView)


def resolve_conj(input: Tensor) -> Tensor:
    """A conjugate view's values in new memory (no bit); input itself otherwise."""
    return resolved(input) if isinstance(input, ConjView) else input


def resolve_neg(input: Tensor) -> Tensor:
    """A negative view's values in new memory (no bit); input itself otherwise."""
    return resolved(input) if isinstance(input, NegView) else input


def angle(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The argument of each element: atan2(imag, real) for complex input (real input: number_ops.angle)."""
    if not input.dtype.is_complex:
        return number_ops.angle(input, out=out)
    check_limited("angle", input.dtype)
    if out is not None and out.dtype.category < dt.FLOAT:  # (torch's cast check: a real angle into an integer out)
        real_dtype = input.dtype.to_real()
        raise RuntimeError(f"result type {real_dtype.scalar_name} can't be cast to the desired output type "
                           f"{out.dtype.scalar_name}")
    z = input.detach()
    result = ew.apply("atan2", imag(z), real(z))
    ANGLE.attach((input,), (result,))
    return result if out is None else out.copy_(result)


def _angle_back(node, g):
    # torch's: g * i z / |z|^2, and 0 at z = 0 (where atan2's formula would give 0/0)
    (z,) = node.saved_tensors
    size2 = ew.apply("square", ew.apply("abs", z))
    grad = complex(-imag(z), real(z)) * (g / size2)
    return (M.where(ew.apply("eq", size2, 0), 0.0, grad),)


# torch's node for a complex angle, on atan2(imag, real) computed from the detached input
ANGLE = Primitive("angle", None, cpu=None, backward=_angle_back, saved=("input0",))


def conj_physical_(input: Tensor) -> Tensor:
    """Conjugate input in place (nothing to do for real dtypes)."""
    return ew.apply("conj", input, out=input) if input.dtype.is_complex else input


METHODS.update(conj=conj, conj_physical=conj_physical, angle=angle, conj_physical_=conj_physical_, is_conj=is_conj,
               is_neg=is_neg, resolve_conj=resolve_conj, resolve_neg=resolve_neg)


# -- complex(real, imag) and polar(abs, angle) --------------------------------------------------------
def _complex_kernel(ins, outs, attrs) -> None:
    out = outs[0]
    (out["real"] if out.dtype.names else out.real)[...] = ins[0]
    (out["imag"] if out.dtype.names else out.imag)[...] = ins[1]


def _complex_back(node, g):
    return real(g), imag(g)


def _complex_shapes(inputs: tuple, attrs) -> list:
    # (the front end checked the parts and broadcast them to one shape)
    return [(inputs[0]._v.shape, inputs[0].dtype.to_complex())]


COMPLEX = Primitive("complex", _complex_shapes, cpu=_complex_kernel, cuda=None, backward=_complex_back)


def _check_parts(fn: str, a: Tensor, b: Tensor, names: tuple) -> None:
    for t, name in ((a, names[0]), (b, names[1])):
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn}(): argument '{name}' (position {names.index(name) + 1}) must be Tensor, "
                            f"not {type(t).__name__}")
    if a.dtype not in (dt.float16, dt.float32, dt.float64) or b.dtype not in (dt.float16, dt.float32, dt.float64):
        raise RuntimeError(f"Expected both inputs to be Half, Float or Double tensors but got "
                           f"{torch_name(a.dtype)} and {torch_name(b.dtype)}")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"Expected object of scalar type {torch_name(a.dtype)} but got scalar type "
                           f"{torch_name(b.dtype)} for second argument")


def _check_out(out, a: Tensor) -> None:
    """torch's error for an out= tensor of another dtype than the complex result."""
    if out is not None and out.dtype is not a.dtype.to_complex():
        raise RuntimeError(f"Expected object of scalar type {torch_name(a.dtype.to_complex())} but got scalar type "
                           f"{torch_name(out.dtype)} for argument 'out'")


def complex(real: Tensor, imag: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex tensor real + i imag (broadcast; both float32 or both float64)."""
    _check_parts("complex", real, imag, ("real", "imag"))
    _check_out(out, real)
    shape = broadcast_shapes(real._v.shape, imag._v.shape)
    parts = tuple(t if t._v.shape == shape else t.expand(shape) for t in (real, imag))
    result = COMPLEX(parts)
    return result if out is None else out.copy_(result)


def polar(abs: Tensor, angle: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The complex tensor abs * (cos(angle) + i sin(angle))."""
    _check_parts("polar", abs, angle, ("abs", "angle"))
    if abs.dtype is dt.float16:  # torch's CPU polar has no half kernel
        raise NotImplementedError("\"polar_cpu\" not implemented for 'Half'")
    _check_out(out, abs)
    result = complex(abs * ew.apply("cos", angle), abs * ew.apply("sin", angle))
    return result if out is None else out.copy_(result)
