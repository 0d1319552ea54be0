"""Other spellings PyTorch offers for ops tidal already has: the arc* names (NumPy's), the top-level in-place
forms (`torch.abs_(x)` is `x.abs_()`), the in-place method forms of comparison and arithmetic aliases
(`x.greater_(y)`), and the trivial predicates of tensors without conjugate or negative bits.

Each is a one-line forward to the op it names, so it shares that op's checks, dtypes and gradient.
"""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.node_names import torch_node
from .arithmetic import _no_complex_clamp
from .plans import torch_name
from ..factories.creation import ones_like

__all__: list = []
METHODS: dict = {}

# arc* spelling -> tidal's name
_ARC = {"arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh", "arctan": "atan",
        "arctanh": "atanh"}
# method name -> the method it spells (in place)
_INPLACE_METHOD_ALIASES = {"absolute_": "abs_", "arctan2_": "atan2_", "subtract_": "sub_", "negative_": "neg_",
                           "greater_": "gt_", "greater_equal_": "ge_", "less_": "lt_", "less_equal_": "le_",
                           "not_equal_": "ne_", "clamp_min_": None, "clamp_max_": None, "fix_": "trunc_",
                           **{name + "_": tidal + "_" for name, tidal in _ARC.items()}}
# top-level in-place functions: torch.<name>(input, *args) is input.<name>(*args)
_TOP_INPLACE = ("abs_", "acos_", "acosh_", "asin_", "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_",
                "clamp_min_", "clip_", "cos_", "cosh_", "deg2rad_", "erf_", "erfc_", "exp2_", "exp_", "expm1_",
                "fix_", "floor_", "frac_", "i0_", "log10_", "log1p_", "log2_", "log_", "neg_", "negative_",
                "rad2deg_", "reciprocal_", "round_", "rsqrt_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_",
                "square_", "tan_", "tanh_", "trunc_", "xlogy_", "zero_", "fill_", "detach_", "index_put_",
                "addmv_", *(name + "_" for name in _ARC))


def _forward(target: str, name: str, doc: str):
    def fn(input: Tensor, *args, **kwargs):
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
        return getattr(input, target)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = doc
    return fn


for _alias, _target in _ARC.items():
    _fn = _forward(_target, _alias, f"{_target} under NumPy's name {_alias}.")
    globals()[_alias] = _fn
    __all__.append(_alias)
    METHODS[_alias] = _fn
for _alias, _target in _INPLACE_METHOD_ALIASES.items():
    if _target is not None:
        METHODS[_alias] = _forward(_target, _alias, f"In-place {_target[:-1]} (PyTorch's alias {_alias}).")
for _name in _TOP_INPLACE:
    globals()[_name] = _forward(_name, _name, f"input.{_name}(...): PyTorch's top-level in-place form.")
    __all__.append(_name)


def _clamp_min_(self: Tensor, min) -> Tensor:
    """self = max(self, min), in place (its node torch's ClampMinBackward0; a view's stays CopySlices)."""
    _no_complex_clamp(self, min, "maximum_cpu")
    self.clamp_(min=min)
    return torch_node(self, "clamp_min") if self._base is None else self


def _clamp_max_(self: Tensor, max) -> Tensor:
    """self = min(self, max), in place (its node torch's ClampMaxBackward0; a view's stays CopySlices)."""
    _no_complex_clamp(self, max, "minimum_cpu")
    self.clamp_(max=max)
    return torch_node(self, "clamp_max") if self._base is None else self


METHODS.update(clamp_min_=_clamp_min_, clamp_max_=_clamp_max_)


def fix(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """trunc under its other name."""
    if out is not None and out.dtype is not input.dtype and not input.dtype.is_complex:  # (as trunc's out=)
        raise RuntimeError(f"Found dtype {out.dtype.scalar_name} but expected {input.dtype.scalar_name}")
    return input.trunc() if out is None else out.copy_(input.trunc())


def _refuse_delitem(self: Tensor, index) -> None:
    raise TypeError("Tensor does not support deleting items")


METHODS["__delitem__"] = _refuse_delitem  # (`del t[0]`: torch's TypeError, not Python's AttributeError)


def fill(input: Tensor, value) -> Tensor:
    """A copy of input with every element set to value."""
    return input.clone().fill_(value)


def detach(input: Tensor) -> Tensor:
    """input.detach()."""
    return input.detach()


# -- predicates ----------------------------------------------------------------------------------------
def is_signed(input: Tensor) -> bool:
    """Whether input's dtype is signed (everything but bool and the unsigned integers)."""
    return input.dtype.is_signed


def is_nonzero(input: Tensor) -> bool:
    """The truth of a one-element tensor; PyTorch's errors otherwise."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.reshape(()).item())


def is_same_size(input: Tensor, other: Tensor) -> bool:
    """Whether both have the same shape."""
    return tuple(input.shape) == tuple(other.shape)


def isreal(input: Tensor) -> Tensor:
    """Where the imaginary part is zero (True everywhere for real dtypes)."""
    if input.dtype.is_complex:
        return input.imag == 0
    return ones_like(input, dtype=dt.bool_)


__all__ += ["fix", "fill", "detach", "is_signed", "is_nonzero", "is_same_size", "isreal"]
METHODS.update(fix=fix, fix_=METHODS["fix_"], is_signed=is_signed, is_nonzero=is_nonzero, is_same_size=is_same_size,
               isreal=isreal)


# torch's unsafe_* forms differ only in skipping the aliasing checks of their outputs
unsafe_chunk = _forward("chunk", "unsafe_chunk", "chunk (torch skips the aliasing checks of its outputs).")
unsafe_split = _forward("split", "unsafe_split", "split (torch skips the aliasing checks of its outputs).")
__all__ += ["unsafe_chunk", "unsafe_split"]


def _rdiv(self: Tensor, other) -> Tensor:
    """other / self, computed as torch's Tensor.__rdiv__ does (other times self's reciprocal)."""
    return self.reciprocal() * other


METHODS.update(unsafe_chunk=unsafe_chunk, unsafe_split=unsafe_split, __rdiv__=_rdiv)


# -- in-place float_power, Tensor.prelu ------------------------------------------------------------------
def _float_power_(self: Tensor, exponent) -> Tensor:
    """self = self ** exponent, computed in double precision: self must already be float64 (complex128 when
    either side is complex), as torch requires."""
    complex_ = self.dtype.is_complex or isinstance(exponent, complex) or (
        isinstance(exponent, Tensor) and exponent.dtype.is_complex)
    want = dt.complex128 if complex_ else dt.float64
    if self.dtype is not want:
        raise RuntimeError(f"the base given to float_power_ has dtype {torch_name(self.dtype)} but the operation's "
                           f"result requires dtype {torch_name(want)}")
    return self.pow_(exponent.to(want) if isinstance(exponent, Tensor) else exponent)


METHODS.update(float_power_=_float_power_)
