"""Public elementwise functions, Tensor operators, casts, copies and fills."""
from __future__ import annotations

import numbers

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..autograd.graph import needs_grad, record
from ..autograd.view_inplace import needs_rebase, write_inplace, write_through_view
from ..vm import Instruction
from . import elementwise as ew
from .broadcast import broadcast_shapes

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
        return apply(name, input, other, out=out)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise {name} with broadcasting and type promotion."

    def inplace(self: Tensor, other) -> Tensor:
        return apply(name, self, other, out=self)
    inplace.__name__ = name + "_"
    METHODS[name + "_"] = inplace
    return _public(fn)


for _name, _op in ew.OPS.items():
    if _name in ("add", "sub", "where", "clamp", "lerp", "div"):
        continue
    if _op.nin == 1:
        globals()[_name] = _make_unary(_name)
    elif _op.nin == 2:
        globals()[_name] = _make_binary(_name)


@_public
def add(input, other, *, alpha=1, out: Tensor | None = None) -> Tensor:
    """input + alpha * other."""
    if alpha != 1:
        other = apply("mul", other, alpha)
    return apply("add", input, other, out=out)


@_public
def sub(input, other, *, alpha=1, out: Tensor | None = None) -> Tensor:
    """input - alpha * other."""
    if isinstance(input, Tensor) and input.dtype is dt.bool_ and isinstance(other, Tensor) \
            and other.dtype is dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. "
                           "Use the `^` or `logical_xor()` operator instead.")
    if alpha != 1:
        other = apply("mul", other, alpha)
    return apply("sub", input, other, out=out)


@_public
def div(input, other, *, rounding_mode: str | None = None, out: Tensor | None = None) -> Tensor:
    """Division: true (default), 'trunc' or 'floor' rounding."""
    if rounding_mode is None:
        return apply("div", input, other, out=out)
    if rounding_mode == "floor":
        return apply("floor_divide", input, other, out=out)
    if rounding_mode == "trunc":
        q = apply("div", input, other)
        res = apply("trunc", q)
        kind = ew.plan_for(ew.OPS["sub"], (input, other)).dtype
        return res if kind.is_floating_point and out is None else convert(res, kind, out=out)
    raise ValueError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
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
    if input is None and other is None:
        from . import indexing
        return indexing.nonzero(condition, as_tuple=True)
    return apply("where", condition, input, other)


def _where_method(self, condition, other):
    return apply("where", condition, self, other)


METHODS["where"] = _where_method


@_public
def clamp(input: Tensor, min=None, max=None, *, out: Tensor | None = None) -> Tensor:
    """Limit values to [min, max]; either bound may be None (a number or a tensor)."""
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if max is None:
        return apply("maximum", input, min, out=out)
    if min is None:
        return apply("minimum", input, max, out=out)
    return apply("clamp", input, min, max, out=out)


def _clamp_(self, min=None, max=None):
    return clamp(self, min, max, out=self)


clip = clamp
__all__.append("clip")
METHODS.update(clip=clamp, clamp_=_clamp_, clip_=_clamp_)


@_public
def clamp_min(input: Tensor, min) -> Tensor:
    """max(input, min)."""
    return apply("maximum", input, min)


@_public
def clamp_max(input: Tensor, max) -> Tensor:
    """min(input, max)."""
    return apply("minimum", input, max)


@_public
def lerp(input: Tensor, end, weight) -> Tensor:
    """input + weight * (end - input)."""
    return apply("lerp", input, end, weight)


METHODS["lerp_"] = lambda self, end, weight: apply("lerp", self, end, weight, out=self)


@_public
def float_power(input, exponent) -> Tensor:
    """pow computed in float64."""
    a = convert(input, dt.float64) if isinstance(input, Tensor) else float(input)
    b = convert(exponent, dt.float64) if isinstance(exponent, Tensor) else float(exponent)
    return apply("pow", a, b)


@_public
def square(input: Tensor) -> Tensor:
    """input * input (bool becomes int64, as in PyTorch)."""
    if input.dtype is dt.bool_:
        input = convert(input, dt.int64)
    return apply("square", input)


# -- casts, copies, fills ---------------------------------------------------------------------
def convert(x: Tensor, dtype: dt.dtype, out: Tensor | None = None) -> Tensor:
    """A contiguous copy of `x` converted to `dtype`, or written into `out` (in place)."""
    inplace = out is not None
    if out is None:
        out = Tensor._empty(x._v.shape, dtype, x.device)
    grad = out.dtype.is_floating_point and needs_grad((x, out) if inplace else (x,))
    if grad and inplace:
        ew.check_leaf_inplace(out)
        if needs_rebase(out):
            return write_through_view(out, convert(x, out.dtype) if x.shape == out.shape else
                                      convert(x, out.dtype).expand(out.shape))
    out._vm.push(Instruction("to", None, (x._v,), (out._v,), expr=f"{ew._CAST_NAME[out.dtype]}({{0}})"))
    if grad:
        record("copy_" if inplace else "to_copy", _copy_backward, (out, x) if inplace else (None, x), (out,))
    if inplace:
        out._v.blob.version += 1
    return out


def _copy_backward(node, g):
    # the old value of an overwritten tensor gets no gradient; the source gets g (fitted by the engine)
    return (None if node.next_functions[0][0] is None else fill_(convert(g, g.dtype), 0), g)


def copy_(self: Tensor, src, non_blocking: bool = False) -> Tensor:
    """Copy `src` (broadcast to this shape, converted to this dtype) into this tensor."""
    if not isinstance(src, Tensor):
        raise TypeError(f"copy_(): argument 'src' must be Tensor, not {type(src).__name__}")
    if broadcast_shapes(self._v.shape, src._v.shape) != self._v.shape:
        raise RuntimeError(f"copy_: the source of shape {list(src._v.shape)} can't be broadcast to the "
                           f"destination of shape {list(self._v.shape)}")
    if src.device != self.device:
        src = src.to(self.device)
    return convert(src, self.dtype, out=self)


def fill_(self: Tensor, value, *, _node: str = "fill") -> Tensor:
    """Set every element to `value` (a number or a one-element tensor)."""
    node = _node
    if isinstance(value, Tensor):
        if value.dim() != 0:
            raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                               f"{value.dim()} dimensions.")
        return copy_(self, value)
    if not isinstance(value, numbers.Number):
        raise TypeError(f"fill_(): argument 'value' must be Number, not {type(value).__name__}")
    from .factory_args import fill_scalar
    value = fill_scalar("fill_", value, self.dtype)
    if self.requires_grad and needs_grad((self,)):
        ew.check_leaf_inplace(self)
        return write_inplace(self, fill_values, value, node)
    return fill_values(self, value)


def fill_values(self: Tensor, value, node: str | None = None) -> Tensor:
    """Queue the fill of `self` with a checked `value`; with `node`, record it (no leaf check)."""
    self._v.blob.version += 1
    typed = self.dtype.compute.np.type(value) if self.dtype is not dt.bool_ else value
    self._vm.push(Instruction("fill", None, (typed,), (self._v,), expr=f"{ew._CAST_NAME[self.dtype]}({{0}})"))
    if node is not None and self.dtype.is_floating_point:  # the old values get no gradient
        from .view_grads import overload
        record(overload(node, 2) if node == "fill" else node, lambda n, g: (fill_(convert(g, g.dtype), 0),), (self,), (self,))
    return self


def zero_(self: Tensor) -> Tensor:
    """Set every element to zero."""
    return fill_(self, 0, _node="zero")


def clone(input: Tensor, *, memory_format=None) -> Tensor:
    """A contiguous copy."""
    return convert(input, input.dtype)


def contiguous(self: Tensor, memory_format=None) -> Tensor:
    """Self if already contiguous, else a contiguous copy."""
    return self if self.is_contiguous() else convert(self, self.dtype)


__all__.append("clone")
METHODS.update(copy_=copy_, fill_=fill_, zero_=zero_, clone=clone, contiguous=contiguous)


# -- operators ---------------------------------------------------------------------------------
def _rev(name):
    return lambda self, other: apply(name, other, self)


def _logical_or_bitwise(bitwise: str, logical: str):
    def op(self, other):
        return apply(logical if self.dtype is dt.bool_ and (not isinstance(other, Tensor) or
                                                          other.dtype is dt.bool_) else bitwise, self, other)
    return op


def _invert(self):
    return apply("logical_not" if self.dtype is dt.bool_ else "bitwise_not", self)


def _neg(self):
    if self.dtype is dt.bool_:
        raise RuntimeError("Negation, the `-` operator, on a bool tensor is not supported. "
                           "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return apply("neg", self)


def _rsub(self, other):
    return sub(other, self)


METHODS.update(
    __add__=add, __radd__=_rev("add"), __iadd__=_inplace_add, __sub__=sub, __rsub__=_rsub,
    __isub__=_inplace_sub, __mul__=globals()["mul"], __rmul__=_rev("mul"), __imul__=METHODS["mul_"],
    __truediv__=div, __rtruediv__=_rev("div"), __itruediv__=_inplace_div,
    __floordiv__=globals()["floor_divide"], __rfloordiv__=_rev("floor_divide"),
    __ifloordiv__=METHODS["floor_divide_"], __mod__=globals()["remainder"], __rmod__=_rev("remainder"),
    __imod__=METHODS["remainder_"], __pow__=globals()["pow"], __rpow__=_rev("pow"), __ipow__=METHODS["pow_"],
    __neg__=_neg, neg=_neg, negative=_neg, __pos__=lambda self: self, __abs__=globals()["abs"],
    __invert__=_invert, __and__=_logical_or_bitwise("bitwise_and", "logical_and"),
    __or__=_logical_or_bitwise("bitwise_or", "logical_or"),
    __xor__=_logical_or_bitwise("bitwise_xor", "logical_xor"),
    __rand__=_logical_or_bitwise("bitwise_and", "logical_and"),
    __ror__=_logical_or_bitwise("bitwise_or", "logical_or"),
    __rxor__=_logical_or_bitwise("bitwise_xor", "logical_xor"),
    __iand__=METHODS["bitwise_and_"], __ior__=METHODS["bitwise_or_"], __ixor__=METHODS["bitwise_xor_"],
    __lshift__=globals()["bitwise_left_shift"], __rshift__=globals()["bitwise_right_shift"],
    __eq__=globals()["eq"], __ne__=globals()["ne"], __lt__=globals()["lt"], __le__=globals()["le"],
    __gt__=globals()["gt"], __ge__=globals()["ge"],
    greater=globals()["gt"], greater_equal=globals()["ge"], less=globals()["lt"], less_equal=globals()["le"],
    not_equal=globals()["ne"], absolute=globals()["abs"], arctan2=globals()["atan2"],
)
greater, greater_equal, less, less_equal = METHODS["greater"], METHODS["ge"], METHODS["lt"], METHODS["le"]
not_equal, absolute, negative, arctan2 = METHODS["ne"], METHODS["abs"], _neg, METHODS["atan2"]
neg = _neg
__all__ += ["greater", "greater_equal", "less", "less_equal", "not_equal", "absolute", "negative", "arctan2",
            "neg"]
