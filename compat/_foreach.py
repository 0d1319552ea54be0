"""torch._foreach_*: an op applied to each tensor of a list (optimizers, gradient scaling and clipping code call them).

Each function runs the per-tensor op on every element, so dtypes, broadcasting, errors and autograd are the per-tensor
op's; the list checks (empty, lengths, scalar lists, a one-element `ScalarTensor`) are torch's, made before anything is
queued. Out-of-place forms return a tuple; in-place forms return the list they changed.
"""
from __future__ import annotations

import numbers

import tidal as _t
from ..tensor import Tensor

__all__: list = []

_UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1", "floor", "frac",
          "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal", "round", "rsqrt", "sigmoid", "sign", "sin",
          "sinh", "sqrt", "tan", "tanh", "trunc")
# binary ops: which second operands each takes (a tensor list, one number, a list of numbers, one 0-d tensor)
_BINARY = {"add": "lnst", "sub": "lns", "mul": "lnst", "div": "lnst", "maximum": "lns", "minimum": "lns",
           "pow": "lns", "clamp_min": "lns", "clamp_max": "lns"}
_ALPHA = ("add", "sub")  # (a tensor-list or 0-d tensor second operand takes alpha)
_NUMBER_FORMS = {"maximum": "clamp_min", "minimum": "clamp_max"}  # (maximum(x, 2.0) has no per-tensor form)


def _tensor_list(tensors) -> list:
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("Tensor list must have at least one tensor.")
    return tensors


def _same_length(first: list, other: list) -> None:
    if len(first) != len(other):
        raise RuntimeError(f"Tensor lists must have the same number of tensors, got {len(first)} and {len(other)}")


def _seconds(label: str, tensors: list, other, kinds: str, alpha) -> list:
    """The second operand of each tensor, checked as torch's overloads check it (`label`: the function's name)."""
    if isinstance(other, Tensor):
        if alpha is not None and "t" not in kinds:  # (alpha: only the tensor-list overload is left)
            raise TypeError(f"{label}(): argument 'other' (position 2) must be tuple of Tensors, not Tensor")
        if other.ndim == 0:  # (torch's argument parser reads a 0-d tensor as a number where no overload takes one)
            return [other] * len(tensors)
        if "t" in kinds:
            raise RuntimeError(f"scalar tensor expected to be 0 dim but it has {other.ndim} dimensions and "
                               f"{other.numel()} elements.")
        raise TypeError(f"{label}() received an invalid combination of arguments - got (list, Tensor), but expected "
                        "one of:")
    if isinstance(other, numbers.Number):
        if alpha is not None:
            raise TypeError(f"{label}() received an invalid combination of arguments - got (list, "
                            f"{type(other).__name__}, alpha={type(alpha).__name__}), but expected one of:")
        return [other] * len(tensors)
    other = list(other)
    if other and all(isinstance(o, Tensor) for o in other):
        _same_length(tensors, other)
        return other
    if len(other) != len(tensors):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return other


def _unary(name: str):
    def out_of_place(self) -> tuple:
        return tuple(getattr(_t, name)(x) for x in _tensor_list(self))

    def in_place(self) -> list:
        for x in _tensor_list(self):
            getattr(x, name + "_")()
        return self
    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
    out_of_place.__doc__ = f"{name} of each tensor."
    in_place.__doc__ = f"In-place {name} of each tensor."
    return out_of_place, in_place


def _binary(name: str, kinds: str):
    takes_alpha = name in _ALPHA

    def call(x, y, alpha, inplace):
        op = name if not isinstance(y, numbers.Number) else _NUMBER_FORMS.get(name, name)
        if inplace:
            fn = getattr(x, op + "_")
            return fn(y) if alpha is None else fn(y, alpha=alpha)
        fn = getattr(_t, op)
        return fn(x, y) if alpha is None else fn(x, y, alpha=alpha)

    def out_of_place(self, other, *, alpha=None) -> tuple:
        if alpha is not None and not takes_alpha:
            raise TypeError(f"_foreach_{name}() got an unexpected keyword argument 'alpha'")
        if name == "pow" and isinstance(self, numbers.Number):  # a number raised to each tensor
            return tuple(_t.pow(self, x) for x in _tensor_list(other))
        tensors = _tensor_list(self)
        seconds = _seconds(f"_foreach_{name}", tensors, other, kinds, alpha)
        return tuple(call(x, y, alpha, False) for x, y in zip(tensors, seconds))

    def in_place(self, other, *, alpha=None) -> list:
        if alpha is not None and not takes_alpha:
            raise TypeError(f"_foreach_{name}_() got an unexpected keyword argument 'alpha'")
        tensors = _tensor_list(self)
        for x, y in zip(tensors, _seconds(f"_foreach_{name}_", tensors, other, kinds, alpha)):
            call(x, y, alpha, True)
        return self
    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
    out_of_place.__doc__ = f"{name} of each tensor with its second operand."
    in_place.__doc__ = f"In-place {name} of each tensor with its second operand."
    return out_of_place, in_place


def _pointwise(name: str):
    def values_of(tensors: list, scalars) -> list:
        if isinstance(scalars, Tensor):  # one value per tensor, held in a 1-d tensor
            scalars = scalars.tolist()
        if isinstance(scalars, numbers.Number):
            return [scalars] * len(tensors)
        if len(scalars) != len(tensors):
            raise RuntimeError("Tensor list must have same number of elements as scalar list.")
        return list(scalars)

    def out_of_place(self, tensor1, tensor2, value=1) -> tuple:
        tensors, first, second = _tensor_list(self), list(tensor1), list(tensor2)
        _same_length(tensors, first)
        _same_length(tensors, second)
        return tuple(getattr(_t, name)(x, a, b, value=v)
                     for x, a, b, v in zip(tensors, first, second, values_of(tensors, value)))

    def in_place(self, tensor1, tensor2, value=1) -> list:
        tensors, first, second = _tensor_list(self), list(tensor1), list(tensor2)
        _same_length(tensors, first)
        _same_length(tensors, second)
        for x, a, b, v in zip(tensors, first, second, values_of(tensors, value)):
            getattr(x, name + "_")(a, b, value=v)
        return self
    out_of_place.__name__, in_place.__name__ = f"_foreach_{name}", f"_foreach_{name}_"
    out_of_place.__doc__ = f"{name} of each tensor with its two operands."
    in_place.__doc__ = f"In-place {name} of each tensor with its two operands."
    return out_of_place, in_place


def _foreach_lerp(self, tensors1, weight) -> tuple:
    """lerp of each tensor toward its end, by one weight, a weight per tensor, or a list of weight tensors."""
    tensors, ends = _tensor_list(self), list(tensors1)
    _same_length(tensors, ends)
    return tuple(_t.lerp(x, e, w) for x, e, w in zip(tensors, ends, _weights(tensors, weight)))


def _foreach_lerp_(self, tensors1, weight) -> list:
    """In-place lerp of each tensor toward its end."""
    tensors, ends = _tensor_list(self), list(tensors1)
    _same_length(tensors, ends)
    for x, e, w in zip(tensors, ends, _weights(tensors, weight)):
        x.lerp_(e, w)
    return self


def _weights(tensors: list, weight) -> list:
    if isinstance(weight, (numbers.Number, Tensor)):
        return [weight] * len(tensors)
    weight = list(weight)
    if weight and isinstance(weight[0], Tensor):
        _same_length(tensors, weight)
    elif len(weight) != len(tensors):
        raise RuntimeError("Tensor list must have same number of elements as scalar list.")
    return weight


def _foreach_zero_(self) -> list:
    """Fill each tensor with zeros."""
    for x in _tensor_list(self):
        x.zero_()
    return self


def _foreach_copy_(self, src, non_blocking: bool = False) -> list:
    """Copy each source into its tensor."""
    tensors, sources = _tensor_list(self), list(src)
    _same_length(tensors, sources)
    for x, s in zip(tensors, sources):
        x.copy_(s, non_blocking)
    return self


def _foreach_clone(self, *, memory_format=None) -> tuple:
    """A clone of each tensor."""
    return tuple(x.clone() if memory_format is None else x.clone(memory_format=memory_format)
                 for x in _tensor_list(self))


def _foreach_norm(self, ord=2, dtype=None) -> tuple:
    """The vector norm of each tensor."""
    return tuple(_t.linalg.vector_norm(x, ord, dtype=dtype) for x in _tensor_list(self))


def _foreach_max(self) -> tuple:
    """The largest value of each tensor."""
    tensors = _tensor_list(self)
    if any(x.numel() == 0 for x in tensors):
        raise RuntimeError("_foreach_max cannot compute the maximum of an empty tensor; max over zero elements is "
                           "undefined.")
    return tuple(x.max() for x in tensors)


def _foreach_powsum(self, ord=2, dtype=None) -> tuple:
    """The sum of |x| ** ord over each tensor."""
    return tuple((x.abs() if dtype is None else x.to(dtype).abs()).pow(ord).sum() for x in _tensor_list(self))


def _foreach_mm(self, mat2) -> tuple:
    """The matrix product of each pair."""
    tensors, others = _tensor_list(self), list(mat2)
    _same_length(tensors, others)
    return tuple(_t.mm(a, b) for a, b in zip(tensors, others))


def _one_float(name: str, t: Tensor) -> None:
    if t.numel() != 1:
        raise RuntimeError(f"{name} must be a 1-element tensor.")
    if t.dtype is not _t.float32:
        raise RuntimeError(f"{name} must be a float tensor.")


def _amp_foreach_non_finite_check_and_unscale_(self, found_inf: Tensor, inv_scale: Tensor) -> None:
    """GradScaler's unscale: each tensor multiplied by inv_scale in place; found_inf set to 1 where one holds an inf
    or NaN (computed on the device: nothing is read back)."""
    _one_float("found_inf", found_inf)
    _one_float("inv_scale", inv_scale)
    for x in self:
        bad = _t.logical_not(_t.isfinite(x)).any()
        found_inf.copy_(_t.where(bad, 1.0, found_inf))
        x.mul_(inv_scale)


def _amp_update_scale_(self: Tensor, growth_tracker: Tensor, found_inf: Tensor, growth_factor: float,
                       backoff_factor: float, growth_interval: int) -> Tensor:
    """GradScaler's scale update: backed off after an inf, grown after growth_interval clean steps (if finite)."""
    _one_float("current_scale", self)
    if growth_tracker.numel() != 1:
        raise RuntimeError("growth_tracker must be a 1-element tensor.")
    if growth_tracker.dtype is not _t.int32:
        raise RuntimeError("growth_tracker must be an int tensor.")
    _one_float("found_inf", found_inf)
    found = _t.gt(found_inf, 0)
    successful = _t.add(growth_tracker, 1)
    grow = _t.logical_and(_t.logical_not(found), _t.eq(successful, growth_interval))
    grown = _t.mul(self, growth_factor)
    scale = _t.where(found, _t.mul(self, backoff_factor),
                     _t.where(_t.logical_and(grow, _t.isfinite(grown)), grown, self))
    self.copy_(scale)
    growth_tracker.copy_(_t.where(_t.logical_or(found, grow), 0, successful))
    return self


def _define() -> None:
    space = globals()
    for name in _UNARY:
        space[f"_foreach_{name}"], space[f"_foreach_{name}_"] = _unary(name)
    for name, kinds in _BINARY.items():
        space[f"_foreach_{name}"], space[f"_foreach_{name}_"] = _binary(name, kinds)
    for name in ("addcmul", "addcdiv"):
        space[f"_foreach_{name}"], space[f"_foreach_{name}_"] = _pointwise(name)
    __all__.extend(sorted(n for n in space if n.startswith(("_foreach_", "_amp_"))))


_define()
