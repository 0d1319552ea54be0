"""Where torch's public binary functions take a Python number in place of a tensor, and where they refuse one.

One table of torch's schemas for the binary elementwise functions: whether `input`, `other` or both may be
numbers. It is applied at the public boundary (ops/__init__.py wraps the public functions and the Tensor
methods named here), as torch's argument parser applies its schemas: a number where torch wants a Tensor
raises torch's TypeError at the user's call, while tidal's own ops keep passing numbers to each other.
"""
from __future__ import annotations

import numbers

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from .ready_values import computed_values

# neither argument may be a number (torch: "argument 'other' (position 2) must be Tensor")
TENSORS_ONLY = frozenset({"atan2", "arctan2", "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "logical_and",
                          "logical_or", "logical_xor", "maximum", "minimum", "nextafter"})
# `input` may be a number when `other` is a tensor (torch's `(Number self, Tensor other)` overloads)
NUMBER_INPUT = frozenset({"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                          "floor_divide", "pow", "remainder", "xlogy", "float_power", "bitwise_and", "bitwise_or",
                          "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift"})
# both may be numbers: the result is a 0-d tensor
TWO_NUMBERS = frozenset({"add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
                         "floor_divide"})
# every other binary function: a Tensor `input`, a Tensor or a number `other` (eq, fmod, copysign...)


def number_tensor(x, widest: bool = False) -> Tensor:
    """A Python number as the 0-d tensor torch makes of it (bool, int64, or the default float dtype); with `widest`,
    as torch's argument parser wraps one for a Tensor parameter (`copy_(2.5)`: float64, complex128)."""
    if isinstance(x, bool):
        dtype = dt.bool_
    elif isinstance(x, numbers.Integral):
        dtype = dt.int64
    elif not widest:
        dtype = dt.get_default_dtype()
    else:
        dtype = dt.float64 if isinstance(x, numbers.Real) else dt.complex128
    return Tensor._from_array(np.array(x, dtype=dtype.np), dtype)


def typed_number(st, value):
    """A Python number as the NumPy scalar type `st` of an op's kernel, as torch converts a number operand: an
    int outside int64 and uint64 raises torch's OverflowError, an int past `st`'s range wraps (a C++ cast)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < -(1 << 63):
            raise OverflowError("can't convert negative int to unsigned")
        if value >= 1 << 64:
            raise OverflowError("int too big to convert")
        kind = np.dtype(st)
        if kind.kind in "iu":
            bits = kind.itemsize * 8
            value &= (1 << bits) - 1
            if kind.kind == "i" and value >= 1 << (bits - 1):
                value -= 1 << bits
    return st(value)


def must_be_tensor(op: str, arg: str, position: int, value) -> TypeError:
    """torch's TypeError for a non-tensor where a single schema takes only a Tensor."""
    return TypeError(f"{op}(): argument '{arg}' (position {position}) must be Tensor, not {type(value).__name__}")


def invalid_combination(op: str, args: tuple, schemas: tuple) -> TypeError:
    """torch's TypeError when no overload of `op` takes these argument types."""
    got = ", ".join("Tensor" if isinstance(a, Tensor) else type(a).__name__ for a in args)
    lines = "".join(f"\n * ({s})" for s in schemas)
    return TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:{lines}")


_OVERLOADS = ("Tensor input, Tensor other, *, Tensor out = None", "Tensor input, Number other, *, Tensor out = None")


def binary(op: str, input, other, names: tuple = ("input", "other")) -> tuple:
    """(input, other) ready for elementwise op `op`, at least one of them a tensor (two numbers become
    a 0-d tensor and a number where torch allows it); torch's TypeError where its schema refuses."""
    in_tensor, other_tensor = isinstance(input, Tensor), isinstance(other, Tensor)
    if in_tensor and other_tensor:
        return input, other
    for k, value in enumerate((input, other)):
        if not isinstance(value, (Tensor, numbers.Number)):
            raise must_be_tensor(op, names[k], k + 1, value)
    if op in TENSORS_ONLY:
        raise must_be_tensor(op, names[0], 1, input) if not in_tensor else must_be_tensor(op, names[1], 2, other)
    if in_tensor:
        return input, other
    if other_tensor and op in NUMBER_INPUT:
        return input, other
    if not other_tensor and op in TWO_NUMBERS:
        return number_tensor(input), other
    schemas = tuple(s.replace("other", names[1]) for s in _OVERLOADS)
    if op in NUMBER_INPUT:
        schemas += (f"Number self, Tensor {names[1]}",)
    raise invalid_combination(op, (input, other), schemas)


# public functions whose first argument must be a tensor whatever follows, and torch's overloads
TENSOR_INPUT = {
    "max": ("Tensor input, *, Tensor out = None", "Tensor input, Tensor other, *, Tensor out = None",
            "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None"),
    "min": ("Tensor input, *, Tensor out = None", "Tensor input, Tensor other, *, Tensor out = None",
            "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None"),
}
# the second argument's name where it is not `other`
SECOND = {"clamp_min": "min", "clamp_max": "max", "pow": "exponent", "float_power": "exponent"}
# the public functions checked at the boundary: those refusing a number `input` (the NUMBER_INPUT ops refuse
# only two numbers, as their own bodies already do, so their calls pay nothing)
BINARY = TENSORS_ONLY | {"eq", "ne", "lt", "le", "gt", "ge", "greater", "greater_equal", "less", "less_equal",
                         "not_equal", "fmod", "copysign", "clamp_min", "clamp_max"}


# integer division by a Python number that is 0 once cast to the result dtype (`int8_tensor // 256` too): torch
# raises at the call, so tidal does; so it does for a tensor divisor whose values are already computed (read
# without waiting); one still being computed is checked by the kernel, its error raised at the next sync point.
# Public functions and Tensor methods (in-place and operator forms) by torch name; the reflected operators
# (`3 // t`: t is the divisor) swap their operands.
DIVISIONS = {"floor_divide": False, "remainder": False, "fmod": False, "div": True, "divide": True,
             "true_divide": True, "__floordiv__": False, "__mod__": False, "__ifloordiv__": False, "__imod__": False,
             "__rfloordiv__": False, "__rmod__": False}
_REFLECTED = frozenset({"__rfloordiv__", "__rmod__"})
_ZERO_DIVISION = "ZeroDivisionError"


def divides_by_zero(a, b) -> bool:
    """Whether integer division of tensor `a` by the number `b` divides by zero (`b` cast as torch casts it)."""
    if not isinstance(b, (int, np.integer)) or not isinstance(a, Tensor):
        return False
    cat = a.dtype.category
    if cat == dt.BOOL:  # bool // int gives int64; bool // bool is refused by the kernel lookup
        return not isinstance(b, bool) and int(b) % (1 << 64) == 0 and a.numel() > 0
    return cat == dt.INT and int(b) % (1 << (8 * a.dtype.itemsize)) == 0 and a.numel() > 0


def _zero_division_check(name: str, first=None):
    """The check for division `name`, after `first` (its schema check) when given."""
    rounding = DIVISIONS[name]  # div & co. divide integers only with a rounding mode

    def check_divisor(args: tuple, kwargs: dict) -> None:
        if first is not None:
            first(args, kwargs)
        if rounding and kwargs.get("rounding_mode") not in ("floor", "trunc"):
            return
        a = args[0] if args else kwargs.get("input")
        b = args[1] if len(args) > 1 else kwargs.get("other")
        if name in _REFLECTED:
            a, b = b, a
        if divides_by_zero(a, b) or holds_zero_divisor(a, b):
            raise RuntimeError(_ZERO_DIVISION)
    return check_divisor


def holds_zero_divisor(a, b) -> bool:
    """Whether integer division of `a` by the tensor `b` meets a zero among b's values, when those are already
    computed (a divisor still being computed is left to the kernel: reading it here would wait for it)."""
    if b.__class__ is not Tensor or b.dtype.category > dt.INT or not b.numel():
        return False
    if isinstance(a, Tensor):
        if a.dtype.category > dt.INT or not a.numel() or a.dtype is dt.bool_ and b.dtype is dt.bool_:
            return False  # a float quotient (inf, no error), an empty one, or bool // bool (refused by its kernel)
    elif isinstance(a, bool) and b.dtype is dt.bool_ or not isinstance(a, (int, np.integer)):
        return False
    values = computed_values(b)
    return values is not None and not values.all()


def checker(name: str):
    """The argument check of public function `name` (a callable on its (args, kwargs)), or None."""
    if name in DIVISIONS:
        return _zero_division_check(name, _schema_checker(name))
    return _schema_checker(name)


def _schema_checker(name: str):
    if name in TENSOR_INPUT:
        schemas = TENSOR_INPUT[name]

        def check_input(args: tuple, kwargs: dict) -> None:
            x = args[0] if args else kwargs.get("input")
            if not isinstance(x, Tensor):
                raise invalid_combination(name, args, schemas)
        return check_input
    if name not in BINARY:
        return None
    names = ("input", SECOND.get(name, "other"))

    def check_binary(args: tuple, kwargs: dict) -> None:
        a = args[0] if args else kwargs.get(names[0])
        b = args[1] if len(args) > 1 else kwargs.get(names[1])
        if a.__class__ is not Tensor or b.__class__ is not Tensor:
            binary(name, a, b, names)
    return check_binary


def method_checker(name: str):
    """The check of Tensor method `name` (in-place forms too): `self` is a tensor, so only the Tensor-only
    ops have something to refuse."""
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    if base in DIVISIONS:
        return _zero_division_check(base)
    return checker(base) if base in TENSORS_ONLY else None


def require_tensor(op: str, value, arg: str = "input", position: int = 1) -> Tensor:
    """`value` when it is a tensor; torch's TypeError naming the argument otherwise."""
    if not isinstance(value, Tensor):
        raise must_be_tensor(op, arg, position, value)
    return value


def require_self(method: str, self) -> None:
    """torch's TypeError for a Tensor method called unbound on something else (`Tensor.__radd__(2, t)`)."""
    if not isinstance(self, Tensor):
        raise TypeError(f"descriptor '{method}' for 'Tensor' objects doesn't apply to a "
                        f"'{type(self).__name__}' object")
