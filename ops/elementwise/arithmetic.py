"""Public elementwise functions (made from the op table, plus those with arguments of their own: round, pow,
add/sub/div with alpha and rounding modes, where, clamp, lerp) and the Tensor operators.

Casts, copies and fills are in copies.py."""
from __future__ import annotations

import math
import numbers

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...autograd.grad_mode import no_grad
from ...autograd.graph import needs_grad, no_tangents
from ...autograd.view_inplace import write_inplace
from . import plans as ew, declarations
from .copies import _zero_grad, convert, copy_
from ..dispatch import kernel_dtypes, limited_dtypes
from ..movement import many_dims
from ..dispatch.node_names import overload, torch_node
from ..dispatch.primitive import Primitive
from ..dispatch.number_args import binary, invalid_combination, require_self
from ..dispatch.operator_operands import operand_not_implemented
from ..dispatch.number_args import number_tensor as _number_tensor  # noqa: F401 (other modules import it from here)
from .out_rules import check_unary_out, fit_out  # noqa: F401 (activations reads check_unary_out from here)

apply = ew.apply
__all__: list = []
METHODS: dict = {}


def _public(fn, method: bool = True):
    __all__.append(fn.__name__)
    if method:
        METHODS[fn.__name__] = fn
    return fn


def _make_unary(name: str):
    def fn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
        if out is not None:
            check_unary_out(name, input, out)
        fit_out(name, out, input)
        return apply(name, input, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name}."

    def inplace(self: Tensor) -> Tensor:
        return apply(name, self, out=self)
    inplace.__name__ = name + "_"
    METHODS[name + "_"] = inplace
    return _public(fn)


def _make_binary(name: str):
    def fn(input, other, *, out: Tensor | None = None) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(other, Tensor):
            input, other = binary(name, input, other)
        fit_out(name, out, input, other)
        return apply(name, input, other, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting and type promotion."

    def inplace(self: Tensor, other) -> Tensor:
        return apply(name, self, other, out=self)
    inplace.__name__ = name + "_"
    METHODS[name + "_"] = inplace
    return _public(fn)


for _name, _op in declarations.OPS.items():
    if _name in ("add", "sub", "where", "clamp", "lerp", "div"):
        continue
    if _op.nin == 1:
        globals()[_name] = _make_unary(_name)
        METHODS[_name] = ew.unary_method(_name, globals()[_name])  # x.exp(): no `out`, a fast path
    elif _op.nin == 2:
        globals()[_name] = _make_binary(_name)


_plain_round, _plain_pow = globals()["round"], globals()["pow"]


@_public
def round(input: Tensor, *, decimals: int = 0, out: Tensor | None = None) -> Tensor:
    """Round half to even, at `decimals` decimal places (negative: to tens, hundreds...)."""
    if decimals == 0:
        return _plain_round(input, out=out)
    if input.dtype.category != dt.FLOAT:
        raise NotImplementedError(f'"round_cpu" not implemented for \'{ew.torch_name(input.dtype)}\'')
    with no_grad():  # torch's formula, with the power of ten in the tensor's dtype
        if decimals > 0:
            result = apply("div", apply("round", apply("mul", input, 10.0 ** decimals)), 10.0 ** decimals)
        else:
            result = apply("mul", apply("round", apply("div", input, 10.0 ** -decimals)), 10.0 ** -decimals)
    if input._requires_grad:
        ROUND_DECIMALS.attach((input,), (result,), node=overload("round", 1))
    return result if out is None else copy_(out, result)


# torch's RoundBackward1 on the composite above: a zero gradient
ROUND_DECIMALS = Primitive("round_decimals", None, cpu=None, backward=_zero_grad)


def _round_(self: Tensor, *, decimals: int = 0) -> Tensor:
    return _plain_round(self, out=self) if decimals == 0 else copy_(self, round(self, decimals=decimals))


METHODS["round_"] = _round_


def _result_dtype(name: str, args: tuple) -> dt.dtype:
    """The dtype elementwise op `name` promotes `args` to (tensors of more than 64 dims too)."""
    try:
        return ew.plan_for(declarations.OPS[name], args).dtype
    except many_dims.TooManyDims:
        return many_dims.result_dtype(ew.plan_for, declarations.OPS[name], args)


_NEGATIVE_POWER = "Integers to negative integer powers are not allowed."


@_public
def pow(input, exponent, *, out: Tensor | None = None) -> Tensor:
    """input ** exponent; integers to negative integer powers as torch computes them (0, or +-1 for base +-1)."""
    kernel_dtypes.check_pow(input, exponent)
    fit_out("pow", out, input, exponent)
    if isinstance(input, Tensor) and input.dtype.category == dt.FLOAT:
        result = apply("pow", input, exponent, out=out)
        # torch's node for a tensor exponent (pow.Tensor_Tensor); x ** 2 keeps PowBackward0
        return result if out is not None or exponent.__class__ is not Tensor else \
            torch_node(result, "PowBackward1", input, exponent)
    if not isinstance(input, Tensor) and not isinstance(exponent, Tensor):
        binary("pow", input, exponent, ("input", "exponent"))
    kind = _result_dtype("pow", (input, exponent))
    if kind.category != dt.INT:
        result = apply("pow", input, exponent, out=out)
        if out is None:  # torch's nodes: a number base (2 ** t) is pow.Scalar
            torch_node(result, "PowBackward1" if isinstance(input, Tensor) else "PowBackward2", input, exponent)
        return result
    if out is not None:  # (the composite below writes with copy_, which would cast anything into `out`)
        try:
            ew.check_inplace("pow", out, ew.plan_for(declarations.OPS["pow"], (input, exponent)))
        except many_dims.TooManyDims:  # (no plan past 64 dims: the composite's own ops check their dtypes)
            pass
    if not isinstance(exponent, Tensor) or exponent.dtype.np.kind != "i":  # a number, or never negative
        if not isinstance(exponent, Tensor) and exponent < 0:
            raise RuntimeError(_NEGATIVE_POWER)
        return apply("pow", input, exponent, out=out)
    negative = apply("lt", exponent, 0)
    result = apply("pow", input, apply("where", negative, 0, exponent))
    odd = apply("ne", apply("remainder", exponent, 2), 0)
    minus_one = apply("where", odd, -1, 1)  # (-1) ** e
    if isinstance(input, Tensor) and input.dtype.np.kind != "i":  # unsigned: 1 ** e = 1, others give 0
        special = apply("where", apply("eq", input, 1), 1, 0)
    elif isinstance(input, Tensor):
        special = apply("where", apply("eq", input, 1), 1, apply("where", apply("eq", input, -1), minus_one, 0))
    else:
        special = minus_one if input == -1 else apply("where", negative, int(input == 1), 0)
    result = convert(apply("where", negative, special, result), kind)
    return result if out is None else copy_(out, result)


def _pow_(self: Tensor, exponent) -> Tensor:
    if self.dtype.category == dt.INT and isinstance(exponent, Tensor) and exponent.dtype.np.kind == "i" \
            and _result_dtype("pow", (self, exponent)).category == dt.INT:
        return copy_(self, pow(self, exponent))  # integers to negative powers: computed apart, then stored
    return pow(self, exponent, out=self)


METHODS["pow_"] = _pow_


def _with_alpha(name: str, input, other, alpha, out):
    """input + alpha * other (sub: minus), after torch's checks of alpha against the result type."""
    kind = _result_dtype(name, (input, other))
    if isinstance(alpha, bool) and kind is not dt.bool_:
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, (float, complex)) and kind.category not in (dt.FLOAT, dt.COMPLEX):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    if isinstance(alpha, complex) and not kind.is_complex:
        raise RuntimeError("For non-complex input tensors, argument alpha must not be a complex number.")
    kernel_dtypes.check_number(-alpha if name == "sub" else alpha, kind)  # sub scales by -alpha
    if kind is dt.bool_:  # torch casts alpha to the result type: add(bools, alpha=2) stays bool
        alpha = bool(alpha)
    if alpha != 1 and kind in ew.ROUNDED:
        return _half_alpha(name, input, other, alpha, kind, out)
    if alpha != 1:  # (True, 1.0: other as it is)
        if not isinstance(other, Tensor):
            other = (bool(other) and alpha) if kind is dt.bool_ else other * alpha  # (a bool number stays bool)
        else:  # in the result dtype first, as torch casts it (an int8 product would wrap)
            other = apply("mul", other if other.dtype is kind else convert(other, kind), alpha)
    fit_out(name, out, input, other)
    return apply(name, input, other, out=out)


def _half_alpha(name: str, input, other, alpha, kind: dt.dtype, out) -> Tensor:
    """torch's float16/bfloat16 add/sub with alpha: alpha and the operands of another dtype rounded to `kind`, then
    its kernel's vectorized multiply-add in float32 (a product of two 16-bit values is exact there), rounded once."""
    rounded = ew.ROUNDED[kind]

    def wide(v):
        if not isinstance(v, Tensor):
            return float(rounded(v))
        return convert(v if v.dtype is kind else convert(v, kind), dt.float32)
    alpha = float(rounded(alpha))
    other = wide(other)
    scaled = apply("mul", other, alpha) if isinstance(other, Tensor) else other * alpha
    fit_out(name, out, input, other)
    # (an input of dtype `kind` is widened by the add's own promotion against a float32 product tensor)
    keep = isinstance(scaled, Tensor) and isinstance(input, Tensor) and input.dtype is kind
    result = apply(name, input if keep else wide(input), scaled)
    return convert(result, kind) if out is None else copy_(out, result)


@_public
def add(input, other, *, alpha=1, out: Tensor | None = None) -> Tensor:
    """input + alpha * other."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input, other = binary("add", input, other)
    if type(alpha) is not int or alpha != 1:
        return _with_alpha("add", input, other, alpha, out)
    fit_out("add", out, input, other)
    return apply("add", input, other, out=out)


@_public
def sub(input, other, *, alpha=1, out: Tensor | None = None) -> Tensor:
    """input - alpha * other."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input, other = binary("sub", input, other)
    bools = sum(isinstance(a, bool) or (isinstance(a, Tensor) and a.dtype is dt.bool_) for a in (input, other))
    if bools == 2:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if bools:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying "
                           "to invert a mask, use the `~` or `logical_not()` operator instead.")
    if type(alpha) is not int or alpha != 1:
        return _with_alpha("sub", input, other, alpha, out)
    fit_out("sub", out, input, other)
    return apply("sub", input, other, out=out)


_DIV_ROUNDED = Primitive("div_rounded", None, cpu=None, sbp="elementwise",
                         backward=lambda node, g: _zero_grad(node, g) * 2)  # (the engine fits each to its input)


def _rounded_div_into(self: Tensor, other, rounding_mode: str) -> Tensor:
    with no_grad(), no_tangents():  # (under no_grad alone a forward-AD dual still records: this would recurse)
        div(self, other, rounding_mode=rounding_mode, out=self)
    _DIV_ROUNDED.attach((self, other), (self,), node=overload("div", 2))
    return self


@_public
def div(input, other, *, rounding_mode: str | None = None, out: Tensor | None = None) -> Tensor:
    """Division: true (default), 'trunc' or 'floor' rounding."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        input, other = binary("div", input, other)
    fit_out("div", out, input, other)
    if rounding_mode is None:
        return apply("div", input, other, out=out)
    if rounding_mode in ("floor", "trunc") and (out is None or out is input) and needs_grad((input, other)):
        # torch's DivBackward2, a zero gradient (floor_divide's own node has none: backward refuses it)
        if out is not None:
            ew.check_leaf_inplace(out)
            return write_inplace(out, _rounded_div_into, other, rounding_mode)
        with no_grad(), no_tangents():  # (under no_grad alone a forward-AD dual still records: this would recurse)
            res = div(input, other, rounding_mode=rounding_mode)
        _DIV_ROUNDED.attach((input, other), (res,), node=overload("div", 2))
        return res
    if rounding_mode == "floor":
        return apply("floor_divide", input, other, out=out)
    if rounding_mode == "trunc":
        kind = _result_dtype("mul", (input, other))
        if kind is dt.bool_:
            raise NotImplementedError('"div_trunc_cpu" not implemented for \'Bool\'')
        limited_dtypes.check("div_trunc", kind)
        if out is not None and kind.category > out.dtype.category:  # (as the other ops' in-place check)
            raise RuntimeError(f"result type {ew.torch_name(kind)} can't be cast to the desired output type "
                               f"{ew.torch_name(out.dtype)}")
        if kind.category == dt.INT:  # exact for every int64 (a float quotient is not): floor, +1 where they differ
            q, r = apply("floor_divide", input, other), apply("fmod", input, other)
            negative = apply("lt", other, 0) if isinstance(other, Tensor) else other < 0
            res = apply("add", q, apply("logical_and", apply("ne", r, 0), apply("ne", apply("lt", r, 0), negative)))
            return res if out is None else convert(res, kind, out=out)
        res = apply("trunc", apply("div", input, other))
        return res if kind.is_floating_point and out is None else convert(res, kind, out=out)
    raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                     f"'{rounding_mode}'")


def _inplace_add(self, other, *, alpha=1):
    return add(self, other, alpha=alpha, out=self)


def _inplace_sub(self, other, *, alpha=1):
    return sub(self, other, alpha=alpha, out=self)


def _inplace_div(self, other, *, rounding_mode=None):
    return div(self, other, rounding_mode=rounding_mode, out=self)


METHODS.update(add_=_inplace_add, sub_=_inplace_sub, div_=_inplace_div)
true_divide = divide = div
multiply, subtract = globals()["mul"], sub
__all__ += ["true_divide", "divide", "multiply", "subtract"]
METHODS.update(true_divide=div, divide=div, multiply=multiply, subtract=sub, mul_=METHODS["mul_"],
               true_divide_=_inplace_div, divide_=_inplace_div, multiply_=METHODS["mul_"])


@_public
def where(condition: Tensor, input=None, other=None) -> Tensor:
    """Elements of `input` where `condition` holds, else of `other`; one argument: nonzero indices."""
    if input is None and other is None:  # torch.nonzero(condition, as_tuple=True), through the Tensor method
        if not isinstance(condition, Tensor):
            raise TypeError(f"where(): argument 'condition' (position 1) must be Tensor, not {type(condition).__name__}")
        return condition.nonzero(as_tuple=True)
    kernel_dtypes.check_where(input, other)
    return apply("where", condition, input, other)


def _where_method(self, condition, other):
    kernel_dtypes.check_where(self, other)
    return apply("where", condition, self, other)


METHODS["where"] = _where_method


@_public
def clamp(input: Tensor, min=None, max=None, *, out: Tensor | None = None) -> Tensor:
    """Limit values to [min, max]; either bound may be None (a number or a tensor)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    _no_complex_clamp(input, None)
    kernel_dtypes.check_clamp(input, min, max, out)
    fit_out("clamp", out, input, min, max)
    tensors = isinstance(min, Tensor) or isinstance(max, Tensor)
    return _named_clamp(_clamped(input, min, max, out), "ClampBackward0" if tensors else "ClampBackward1", input, out)


def _clamped(input: Tensor, min, max, out):
    """clamp's values, and torch's gradient: it passes where the input is within the bounds, ties included
    (maximum/minimum, which split a tie, serve only integers: they have no gradient)."""
    if input.dtype.is_floating_point:
        return apply("clamp", input, -math.inf if min is None else min, math.inf if max is None else max, out=out)
    if max is None:
        return apply("maximum", input, min, out=out)
    if min is None:
        return apply("minimum", input, max, out=out)
    return apply("clamp", input, min, max, out=out)


def _named_clamp(result: Tensor, name: str, input: Tensor, out) -> Tensor:
    if out is None:
        return torch_node(result, name, input)
    # in place: the tensor's new node takes the name (a view's is CopySlices; an out= tensor is not differentiated)
    return torch_node(out, name) if out is input and out._base is None else result


def _clamp_(self, min=None, max=None):
    return clamp(self, min, max, out=self)


clip = clamp
__all__.append("clip")
METHODS.update(clip=clamp, clamp_=_clamp_, clip_=_clamp_)


@_public
def clamp_min(input: Tensor, min) -> Tensor:
    """max(input, min)."""
    _no_complex_clamp(input, min, "maximum_cpu")
    kernel_dtypes.check_clamp(input, min, None)
    name = "ClampMinBackward1" if isinstance(min, Tensor) else "ClampMinBackward0"
    return _named_clamp(_clamped(input, min, None, None), name, input, None)


def _no_complex_clamp(input, bound, kernel: str | None = None) -> None:
    """torch's refusal of clamp on complex input: clamp's own with a number bound; clamp_min/clamp_max with a tensor
    bound run torch's maximum/minimum kernel (`kernel`), which has no complex loop."""
    if isinstance(input, Tensor) and input.dtype.is_complex:
        if not isinstance(bound, Tensor):
            raise NotImplementedError("clamp is not supported for complex types")
        if kernel is not None:
            raise NotImplementedError(f"\"{kernel}\" not implemented for '{ew.torch_name(input.dtype)}'")


@_public
def clamp_max(input: Tensor, max) -> Tensor:
    """min(input, max)."""
    _no_complex_clamp(input, max, "minimum_cpu")
    kernel_dtypes.check_clamp(input, None, max)
    name = "ClampMaxBackward1" if isinstance(max, Tensor) else "ClampMaxBackward0"
    return _named_clamp(_clamped(input, None, max, None), name, input, None)


@_public
def lerp(input: Tensor, end, weight) -> Tensor:
    """input + weight * (end - input)."""
    _lerp_args("lerp", (input, end, weight), None)
    kernel_dtypes.check_lerp(input, end, weight)
    return apply("lerp", input, end, weight)


def _lerp_method(self: Tensor, end, weight) -> Tensor:
    _lerp_args("lerp", (end, weight), self)
    kernel_dtypes.check_lerp(self, end, weight)
    return apply("lerp", self, end, weight)


def _lerp_(self: Tensor, end, weight) -> Tensor:
    _lerp_args("lerp_", (end, weight), self)
    kernel_dtypes.check_lerp(self, end, weight)
    return apply("lerp", self, end, weight, out=self)


_LERP_TYPES = ((Tensor, Tensor), (Tensor, numbers.Number))
_LERP_SCHEMAS = ("Tensor input, Tensor end, Tensor weight, *, Tensor out = None",
                 "Tensor input, Tensor end, Number weight, *, Tensor out = None")


def _lerp_args(op: str, args: tuple, self: Tensor | None) -> None:
    """torch's TypeError when lerp's `end` is not a tensor or its weight neither a tensor nor a number; `self` is
    given for the method forms, whose message marks, per overload, the arguments from the first that fails."""
    end, weight = args[-2:]
    if isinstance(end, Tensor) and isinstance(weight, (Tensor, numbers.Number)):
        return
    if self is None:
        raise TypeError(f"{invalid_combination(op, args, _LERP_SCHEMAS)}\n")
    names = [type(a).__name__ if not isinstance(a, Tensor) else "Tensor" for a in args]
    lines = []
    for types, schema in zip(_LERP_TYPES, ("Tensor end, Tensor weight", "Tensor end, Number weight")):
        bad = next(k for k, (a, t) in enumerate(zip(args, types)) if not isinstance(a, t))
        marked = ", ".join(n if k < bad else f"!{n}!" for k, n in enumerate(names))
        lines.append(f" * ({schema})\n      didn't match because some of the arguments have invalid types: ({marked})")
    raise TypeError(f"{op}() received an invalid combination of arguments - got ({', '.join(names)}), but expected "
                    f"one of:\n" + "\n".join(lines) + "\n")


METHODS.update(lerp=_lerp_method, lerp_=_lerp_)


@_public
def float_power(input, exponent) -> Tensor:
    """pow computed in float64 (complex128 when either side is complex)."""
    wide = dt.complex128 if any(isinstance(v, complex) or isinstance(v, Tensor) and v.dtype.is_complex
                                for v in (input, exponent)) else dt.float64
    number = complex if wide.is_complex else float
    a = convert(input, wide) if isinstance(input, Tensor) else number(input)
    b = convert(exponent, wide) if isinstance(exponent, Tensor) else number(exponent)
    return apply("pow", a, b)


@_public
def square(input: Tensor) -> Tensor:
    """input * input (bool becomes int64, as in PyTorch)."""
    if input.dtype is dt.bool_:
        input = convert(input, dt.int64)
    return apply("square", input)


def _square_(self: Tensor) -> Tensor:
    if self.dtype is dt.bool_:  # the result is int64, which a bool tensor can't hold
        raise RuntimeError("result type Long can't be cast to the desired output type Bool")
    return apply("square", self, out=self)


METHODS["square_"] = _square_


# -- operators ---------------------------------------------------------------------------------
def _rev(name, method: str | None = None, commutes: bool = False):
    def op(self, other):
        if method is not None:  # torch's C-level reflected operators check `self` (its Python ones do not)
            require_self(method, self)
        # `2 * t` is t.mul(2) in torch: the tensor is the node's first input (grad_fn.next_functions[0])
        return apply(name, self, other) if commutes else apply(name, other, self)
    return op


def _logical_or_bitwise(bitwise: str, logical: str, method: str):
    def op(self, other):
        require_self(method, self)
        return apply(logical if self.dtype is dt.bool_ and (other.__class__ is bool or isinstance(other, Tensor)
                                                          and other.dtype is dt.bool_) else bitwise, self, other)
    return op


def _invert(self):
    kernel_dtypes.check_invert(self)
    return apply("logical_not" if self.dtype is dt.bool_ else "bitwise_not", self)


def _neg(self):
    return apply("neg", self)  # (bool refused by the plan: elementwise.REAL_REJECT)


_neg_method = ew.unary_method("neg", _neg)


def _pos(self):
    kernel_dtypes.check_positive(self)
    return self


def _rsub(self, other):
    return torch_node(sub(other, self), "RsubBackward1", self)  # (torch's node for `1 - t`)


def _rtruediv(self, other):
    """other / self as torch's Tensor.__rdiv__ computes it: self's reciprocal times other (two roundings)."""
    return mul(globals()["reciprocal"](self), other)


_real_abs_ = METHODS["abs_"]


def _abs_(self: Tensor) -> Tensor:
    if self.dtype.is_complex:  # the real result cannot be stored back into the complex tensor
        raise RuntimeError("In-place abs is not supported for complex tensors.")
    return _real_abs_(self)


METHODS["abs_"] = _abs_


def _no_bool(self, other) -> bool:
    # sub's refusal of bool operands is checked by `sub` itself: keep those calls on it
    return self.dtype is not dt.bool_ and other.__class__ is not bool and \
        (other.__class__ is not Tensor or other.dtype is not dt.bool_)


def _binary_method(name: str):
    fn = globals()[name]
    return operand_not_implemented(lambda self, other: fn(self, other))


_N = operand_not_implemented  # torch's TypeError -> NotImplemented of binary operators


METHODS.update(
    __add__=ew.operator("add", _binary_method("add")), __radd__=ew.operator("add", _N(_rev("add", "__radd__", True))),
    __iadd__=_N(_inplace_add),
    __sub__=ew.operator("sub", _binary_method("sub"), _no_bool), __rsub__=_N(_rsub),
    __isub__=_N(_inplace_sub), __mul__=ew.operator("mul", _binary_method("mul")),
    __rmul__=ew.operator("mul", _N(_rev("mul", "__rmul__", True))),
    __imul__=_N(METHODS["mul_"]), __truediv__=ew.operator("div", _binary_method("div")),
    __rtruediv__=_N(_rtruediv), __itruediv__=_N(_inplace_div),
    __floordiv__=_N(globals()["floor_divide"]), __rfloordiv__=_N(_rev("floor_divide")),
    __ifloordiv__=_N(METHODS["floor_divide_"]), __mod__=_N(globals()["remainder"]), __rmod__=_N(_rev("remainder")),
    __imod__=_N(METHODS["remainder_"]), __pow__=_N(pow), __rpow__=_N(lambda self, other: pow(other, self)),
    __ipow__=_N(_pow_),
    __neg__=_neg_method, neg=_neg_method, negative=_neg_method, __pos__=_pos, __abs__=globals()["abs"],
    __invert__=_invert, __and__=_N(_logical_or_bitwise("bitwise_and", "logical_and", "__and__")),
    __or__=_N(_logical_or_bitwise("bitwise_or", "logical_or", "__or__")),
    __xor__=_N(_logical_or_bitwise("bitwise_xor", "logical_xor", "__xor__")),
    __rand__=_N(_logical_or_bitwise("bitwise_and", "logical_and", "__rand__")),
    __ror__=_N(_logical_or_bitwise("bitwise_or", "logical_or", "__ror__")),
    __rxor__=_N(_logical_or_bitwise("bitwise_xor", "logical_xor", "__rxor__")),
    __iand__=_N(METHODS["bitwise_and_"]), __ior__=_N(METHODS["bitwise_or_"]), __ixor__=_N(METHODS["bitwise_xor_"]),
    __lshift__=_N(globals()["bitwise_left_shift"]), __rshift__=_N(globals()["bitwise_right_shift"]),
    __rlshift__=_N(_rev("bitwise_left_shift")), __rrshift__=_N(_rev("bitwise_right_shift")),
    __ilshift__=_N(METHODS["bitwise_left_shift_"]), __irshift__=_N(METHODS["bitwise_right_shift_"]),
    # (comparisons and the commuting reflected operators take the operators' fast path off cached plans too)
    __eq__=ew.operator("eq", _N(globals()["eq"], arrays=True)), __ne__=ew.operator("ne", _N(globals()["ne"])),
    __lt__=ew.operator("lt", _N(globals()["lt"])), __le__=ew.operator("le", _N(globals()["le"])),
    __gt__=ew.operator("gt", _N(globals()["gt"])), __ge__=ew.operator("ge", _N(globals()["ge"])),
    greater=globals()["gt"], greater_equal=globals()["ge"], less=globals()["lt"], less_equal=globals()["le"],
    not_equal=globals()["ne"], absolute=globals()["abs"], arctan2=globals()["atan2"],
)
greater, greater_equal, less, less_equal = METHODS["greater"], METHODS["ge"], METHODS["lt"], METHODS["le"]
not_equal, absolute, negative, arctan2 = METHODS["ne"], METHODS["abs"], _neg, METHODS["atan2"]
neg = _neg
__all__ += ["greater", "greater_equal", "less", "less_equal", "not_equal", "absolute", "negative", "arctan2",
            "neg"]
