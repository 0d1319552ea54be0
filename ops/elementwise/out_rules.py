"""torch's `out=` rules for elementwise functions: resizing an out of another shape as TensorIterator lays out a result,
and the unary functions whose out= differs from the result-type cast every other op allows."""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from . import plans as ew
from ..movement import memory_format as _mf
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.factory_args import empty_strided_tensor
from ..dispatch.out_checks import check_out_grad, prepare_out


def fit_out(name: str, out, *args) -> None:
    """torch's `out=` for an elementwise function: refused when an argument requires grad (grad mode on); of another
    shape, resized to the arguments' broadcast shape (its warning when `out` held elements) and laid out as an
    elementwise result of them. In-place calls (x.add_(y) passes out=x) keep their checks: a shape must match."""
    if out is None or not isinstance(out, Tensor) or any(a is out for a in args):
        return
    check_out_grad(name, out, args)
    shapes = [a._v.shape for a in args if isinstance(a, Tensor)]
    try:
        shape = broadcast_shapes(*shapes) if shapes else ()
    except RuntimeError:
        return
    if out._v.shape == shape:
        return
    prepare_out(out, shape, out.dtype, tuple(a for a in args if isinstance(a, Tensor)))  # (the warning, the storage)
    if len(shape) in (4, 5) and any(_mf.suggest_memory_format(a) != _mf.CONTIGUOUS for a in args
                                    if isinstance(a, Tensor) and a.dim() == len(shape)):
        out._v = empty_strided_tensor(shape, _mf.iterator_strides(shape, args), out.dtype, out.device)._v


# torch's out= rules for unary functions that differ from the result-type cast every other op allows
_NO_OUT = frozenset(("isnan", "isinf", "isfinite", "positive", "relu"))  # their schemas have no out=
_BOOL_OUT = frozenset(("signbit", "isposinf", "isneginf"))
# results written in the input's own dtype only (abs of complex is the real part: the usual cast rule)
_SAME_DTYPE_OUT = frozenset(("abs", "neg", "sign", "sgn", "ceil", "floor", "round", "trunc", "frac", "bitwise_not"))
_COMPLEX_REFUSED = frozenset(("ceil", "floor", "trunc", "sign", "signbit", "isposinf", "isneginf"))


def check_unary_out(name: str, input, out: Tensor) -> None:
    """torch's refusals of an `out=` for unary `name` (the op's own refusals of its input come first)."""
    if name in _NO_OUT:
        raise TypeError(f"{name}() got an unexpected keyword argument 'out'")
    if not isinstance(input, Tensor) or out is input:
        return
    if input.dtype.is_complex and name in _COMPLEX_REFUSED:  # these refuse complex input before out's checks
        if name in ew.COMPLEX_REJECT:
            kind, message = ew.COMPLEX_REJECT[name]
            raise kind(message.format(t=ew.torch_name(input.dtype)))
        return  # (the op's own error, raised by apply)
    if name in _BOOL_OUT and out.dtype is not dt.bool_:
        raise RuntimeError(f"{name} does not support non-boolean outputs.")
    if name not in _SAME_DTYPE_OUT or out.dtype is input.dtype or (name == "abs" and input.dtype.is_complex):
        return
    if name == "neg" and input.dtype is dt.bool_:
        return  # (the op's own error, raised by apply)
    raise RuntimeError(f"Found dtype {out.dtype.scalar_name} but expected {input.dtype.scalar_name}")
