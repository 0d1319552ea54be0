"""The structure of numbers and dtypes: gcd/lcm, frexp/ldexp, angle of reals, rsub, result_type, can_cast.

gcd, lcm and frexp run one NumPy kernel each (integer Euclid and float decomposition have no composite);
the rest are composites of tidal ops, so they fuse and differentiate.
"""
from __future__ import annotations

import math

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from . import arithmetic as M
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from ..dispatch.return_types import return_type
from ..dispatch.limited_dtypes import check as check_limited

__all__ = ["gcd", "lcm", "gcd_", "lcm_", "frexp", "ldexp", "ldexp_", "angle", "rsub", "result_type", "can_cast"]
METHODS: dict = {}


def _integer_pair(op: str, input: Tensor, other: Tensor) -> dt.dtype:
    common = result_type(input, other)  # (a 0-d operand yields to a dimensioned one of its kind, as in torch)
    if common.is_floating_point or common is dt.bool_:
        raise NotImplementedError(f"\"{op}_cpu\" not implemented for '{M.ew.torch_name(common)}'")
    return common


def _gcd_kernel(ins, outs, attrs) -> None:
    outs[0][...] = np.gcd(ins[0], ins[1])


def _lcm_kernel(ins, outs, attrs) -> None:
    outs[0][...] = np.abs(np.lcm(ins[0], ins[1]))


def _pair_shapes(inputs: tuple, attrs) -> list:
    """gcd's and lcm's output: the operands' broadcast shape, in their (common, checked) dtype."""
    return [(broadcast_shapes(inputs[0]._v.shape, inputs[1]._v.shape), inputs[0].dtype)]


GCD = Primitive("gcd", _pair_shapes, cpu=_gcd_kernel, cuda=None)
LCM = Primitive("lcm", _pair_shapes, cpu=_lcm_kernel, cuda=None)


def _tensors(op: str, input, other) -> None:
    """torch's TypeError for a Python number where the schema takes only tensors."""
    for arg, position, value in (("input", 1, input), ("other", 2, other)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{arg}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")


def _number_theory(op: str, input: Tensor, other: Tensor) -> Tensor:
    _tensors(op, input, other)
    common = _integer_pair(op, input, other)
    check_limited(op, common)
    return (GCD if op == "gcd" else LCM)((input.to(common), other.to(common)))


def gcd(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The greatest common divisor, elementwise (non-negative; gcd(0, 0) = 0)."""
    result = _number_theory("gcd", input, other)
    return result if out is None else out.copy_(result)


def lcm(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The least common multiple, elementwise (non-negative; 0 where either is 0)."""
    result = _number_theory("lcm", input, other)
    return result if out is None else out.copy_(result)


def gcd_(input: Tensor, other: Tensor) -> Tensor:
    """In-place gcd."""
    return input.copy_(gcd(input, other))


def lcm_(input: Tensor, other: Tensor) -> Tensor:
    """In-place lcm."""
    return input.copy_(lcm(input, other))


def _frexp_kernel(ins, outs, attrs) -> None:
    mantissa, exponent = np.frexp(ins[0])
    outs[0][...] = mantissa
    outs[1][...] = exponent


def _frexp_backward(node, g):
    (exponent,) = node.saved_tensors
    return (M.div(g, M.exp2(exponent.to(g.dtype))),)  # mantissa = input / 2 ** exponent


def _frexp_shapes(inputs: tuple, attrs) -> list:
    shape = inputs[0]._v.shape
    return [(shape, inputs[0].dtype), (shape, dt.int32)]


# the node sits on the mantissa alone (the exponent is an integer) and reads the exponent
FREXP = Primitive("frexp", _frexp_shapes, cpu=_frexp_kernel, cuda=None, backward=_frexp_backward,
                  saved=("output1",), grad_outputs=(0,))


def frexp(input: Tensor, *, out=None) -> tuple:
    """(mantissa, exponent) with input = mantissa * 2 ** exponent and 0.5 <= |mantissa| < 1 (exponent int32)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    mantissa, exponent = FREXP((input,))
    return return_type("frexp", ("mantissa", "exponent"))(mantissa, exponent)


def ldexp(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input * 2 ** other (integers give the default float)."""
    _tensors("ldexp", input, other)
    if other.dtype is dt.bool_ and input.dtype.category == dt.FLOAT:  # (torch's float kernel has no bool exponents)
        raise NotImplementedError('"ldexp_cpu_exp" not implemented for \'Bool\'')
    if other.dtype.category < dt.FLOAT:  # integer exponents: powers in input's dtype (float16 stays float16)
        other = other.to(input.dtype if input.dtype.category >= dt.FLOAT else dt.get_default_dtype())
    result = M.mul(input, M.exp2(other))
    return result if out is None else out.copy_(result)


def ldexp_(input: Tensor, other: Tensor) -> Tensor:
    """In-place ldexp."""
    return input.copy_(ldexp(input, other))


def angle(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The argument of a real number: pi below zero, 0 elsewhere, NaN kept (integers give the default float)."""
    x = input if input.dtype.is_floating_point else input.to(dt.get_default_dtype())
    result = M.where(M.isnan(x), x, M.where(M.lt(x, 0), math.pi, 0.0).to(x.dtype))
    if x._requires_grad:
        result = M.add(result, M.mul(x, 0))  # a zero gradient, as torch's for real inputs
    if out is not None and out.dtype.category < dt.FLOAT:  # (torch's cast check: a float angle into an integer out)
        raise RuntimeError(f"result type {M.ew.torch_name(result.dtype)} can't be cast to the desired output type "
                           f"{M.ew.torch_name(out.dtype)}")
    return result if out is None else out.copy_(result)


def rsub(input: Tensor, other, *, alpha=1) -> Tensor:
    """other - alpha * input."""
    if not isinstance(input, Tensor):
        raise TypeError(f"rsub() received an invalid combination of arguments - got ({type(input).__name__}, "
                        f"{type(other).__name__}): 'input' must be a Tensor")
    return M.sub(other, input, alpha=alpha)  # (sub's alpha: torch's kernel, one multiply-add)


def result_type(tensor, other) -> dt.dtype:
    """The dtype an arithmetic op on the two arguments (tensors or numbers) would give."""
    args = [a if isinstance(a, Tensor) else None for a in (tensor, other)]
    dtypes = [a.dtype if isinstance(a, Tensor) else dt.scalar_dtype(a) for a in (tensor, other)]
    ndims = [a.ndim if a is not None else None for a in args]
    return M.ew._signature_dtype(None, dtypes, ndims)



def can_cast(from_: dt.dtype, to: dt.dtype) -> bool:
    """Whether PyTorch's casting rules allow from_ -> to: never to a lower kind (complex -> float, float -> int,
    int -> bool)."""
    def kind(d: dt.dtype) -> int:
        return 0 if d is dt.bool_ else 3 if d.is_complex else 2 if d.is_floating_point else 1
    return kind(from_) <= kind(to)


METHODS.update(gcd=gcd, lcm=lcm, gcd_=gcd_, lcm_=lcm_, frexp=frexp, ldexp=ldexp, ldexp_=ldexp_, angle=angle)
