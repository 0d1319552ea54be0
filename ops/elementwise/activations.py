"""Activation functions and other elementwise composites (addcmul, heaviside, nan_to_num, sgn, prelu).

Every function here is a few elementwise primitives, so it fuses into one kernel. Half and
bfloat16 inputs run the chain in float32 and round once at the end, as PyTorch's opmath does.
Names torch has at top level are public (`tidal.selu`); the others, which torch keeps in
torch.nn.functional (`gelu`, `silu`...), are listed in FUNCTIONAL for the nn.functional layer.
logit, polygamma and mvlgamma (special functions with arguments of their own) are in special_functions.py.
"""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...autograd.graph import needs_grad
from ...autograd.view_inplace import write_through_view
from ...tensor import Tensor
from ...tensor import dtype as dt
from . import declarations, plans as ew
from . import arithmetic as M, copies
from .plans import apply, unary_method
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.factory_args import CHECKED_NAME, overflows
from ..dispatch.node_names import torch_node
from ..dispatch.primitive import Primitive
from ..dispatch.limited_dtypes import check as check_limited
from ..dispatch.mem_overlap import check_out
from ..complex_numbers.tensors import refuse_complex
from ..dispatch import autocast as _ac

__all__: list = []
METHODS: dict = {}
FUNCTIONAL: list = []  # names of torch.nn.functional functions defined here

_HALF = (dt.float16, dt.bfloat16)
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_SQRT1_2 = 0.7071067811865476
_SQRT_2_OVER_PI = 0.7978845608028654


def _export(*, top: bool = True, functional: bool = False, method: bool = False):
    """Register a function: top-level (torch.<name>), nn.functional, and/or Tensor method."""
    def deco(fn):
        if top:
            __all__.append(fn.__name__)
        if functional:
            FUNCTIONAL.append(fn.__name__)
        if method:
            METHODS[fn.__name__] = fn
        return fn
    return deco


# -- shared plumbing ---------------------------------------------------------------------------
def _check_tensor(name: str, x, arg: str = "input") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' must be Tensor, not {type(x).__name__}")


# torch's kernel names, as its dtype errors print them (real floating dtypes only, unless listed in _COMPLEX_OK)
_KERNEL = {"elu": "elu_cpu", "selu": "elu_cpu", "celu": "elu_cpu", "gelu": "GeluKernelImpl", "mish": "mish_cpu",
           "hardswish": "hardswish_cpu", "hardsigmoid": "hardsigmoid_cpu", "leaky_relu": "leaky_relu_cpu",
           "softplus": "softplus_cpu", "log_sigmoid": "log_sigmoid_cpu", "softshrink": "softshrink_check",
           "hardshrink": "hardshrink_cpu", "silu": "silu_cpu", "threshold": "threshold_cpu"}
_COMPLEX_OK = {"silu"}
# the activations torch runs as one node: their chain's last node takes its name ("" when it is the op's own)
_TORCH_NODE = {"leaky_relu": "", "silu": "", "mish": "", "softplus": "", "elu": "", "selu": "elu", "celu": "",
               "hardsigmoid": "", "hardswish": "", "log_sigmoid": "", "hardshrink": "", "softshrink": ""}


# torch's node of each in-place activation _run serves (its overload 1 where the formula reads the result)
_INPLACE_NODE = {"silu": "SiluBackward0", "mish": "MishBackward0", "hardswish": "HardswishBackward0",
                 "hardsigmoid": "HardsigmoidBackward0"}  # (elu, selu, celu, leaky_relu: _RESULT_NODES)


def _float_only(name: str, x: Tensor) -> None:
    if not x.dtype.is_floating_point or (x.dtype.is_complex and name not in _COMPLEX_OK):
        raise NotImplementedError(f'"{_KERNEL.get(name, name)}" not implemented for \'{ew.torch_name(x.dtype)}\'')


def _opmath(x: Tensor) -> Tensor:
    """`x` in the dtype a chain of ops should run in (float32 for 16-bit floats)."""
    return copies.convert(x, dt.float32) if x.dtype in _HALF else x


def _store(name: str, y: Tensor, dtype: dt.dtype, out: Tensor | None) -> Tensor:
    """The result `y` as `dtype`, or written into `out` (PyTorch's casting rule checked)."""
    if out is None:
        return y if y.dtype is dtype else copies.convert(y, dtype)
    _check_tensor(name, out, "out")
    ew.check_inplace(name, out, ew.Plan(y._v.shape, dtype, None, None))
    return copies.convert(y, out.dtype, out=out)


def _run(name: str, x: Tensor, body, inplace: bool = False, float_only: bool = True,
         opmath: bool = True, grad_node: Primitive | None = None, params: tuple = ()) -> Tensor:
    """Apply `body` (a chain of tidal ops) to `x`, in opmath precision unless PyTorch composes the
    op from separately rounded ops itself (opmath=False); in place if asked. `grad_node`, when given, is the record
    of torch's node for the op (its backward torch's formula, reading `params`): the op then gets that node (the
    chain's pieces differentiated disagree with torch at NaN, infinities and the pieces' seams)."""
    _check_tensor(name, x)
    if float_only:
        _float_only(name, x)
    if inplace and x.dtype.is_floating_point and needs_grad((x,)):
        # computed out of place, then written into x, which takes the node (one edge, to x's old history): torch's
        # in-place elu/celu/selu/leaky_relu save their result (EluBackward1...), so a later write into x is refused
        # at backward; the others save the original input (a copy: x may be written again later)
        ew.check_leaf_inplace(x)
        if name in _RESULT_NODES:
            with no_grad():
                out = _store(name, body(_opmath(x) if opmath else x), x.dtype, None)
            _RESULT_NODES[name].attach((x,), (out,), params, node=M.overload(_NODE_OF.get(name, name), 1))
            return write_through_view(x, out)
        write_through_view(x, _run(name, x, body, False, float_only, opmath, grad_node, params))
        return x if x._base is not None else torch_node(x, _INPLACE_NODE[name])  # (a view's is CopySlices)
    if grad_node is not None and not inplace and needs_grad((x,)):
        with no_grad():
            y = body(_opmath(x) if opmath else x)
            out = _store(name, y, x.dtype if x.dtype.is_floating_point else y.dtype, None)
        grad_node.attach((x,), (out,), params, node=_TORCH_NODE.get(name) or None)
        return out
    y = body(_opmath(x) if opmath else x)
    dtype = x.dtype if x.dtype.is_floating_point else y.dtype  # integer inputs of float ops give floats
    if inplace:
        return _store(name, y, dtype, x)
    out, node = _store(name, y, dtype, None), _TORCH_NODE.get(name)
    return out if node is None else torch_node(out, node or name, x)


def _formula_node(name: str, formula) -> Primitive:
    """The record of torch's node for activation `name`: its backward is torch's `formula(x, g, *params)`, run
    in opmath precision as torch's kernels (16-bit floats in float32); it saves the input."""
    def backward(node, g):
        gx = formula(_opmath(node.saved_tensors[0]), _opmath(g), *node.attrs)
        return (gx if gx.dtype is g.dtype else copies.convert(gx, g.dtype),)
    return Primitive(name, None, cpu=None, backward=backward, saved=("input0",), sbp="elementwise")


def _typed(x: Tensor, value):
    """A Python scalar converted to `x`'s integer dtype (truncated, range-checked) as PyTorch does;
    unchanged for other dtypes."""
    if x.dtype.category != dt.INT:
        return value
    v = int(value)
    info = np.iinfo(x.dtype.np)
    if not info.min <= v <= info.max:
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[x.dtype]} without overflow")
    return v


def _finfo(d: dt.dtype):
    return ml_dtypes.finfo(d.np)


def _coef(a: float, b: float, x: Tensor) -> float:
    """a * b rounded as PyTorch computes scalar coefficients: in the opmath dtype."""
    t = x.dtype.compute.np.type
    return float(t(a) * t(b))


# -- rectifiers and clamps -------------------------------------------------------------------------
def _checked_relu(input: Tensor, inplace: bool = False) -> Tensor:
    _check_tensor("relu", input)
    if input.dtype is dt.bool_:
        raise RuntimeError("Boolean inputs not supported for relu")
    return apply("relu", input, out=input if inplace else None)


_relu_method = unary_method("relu", _checked_relu)  # a cached plan was checked when it was made


@_export(method=True, functional=True)
def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """max(input, 0)."""
    if input.__class__ is Tensor and not inplace:
        return _relu_method(input)
    return _checked_relu(input, inplace)


@_export(method=True, functional=True)
def relu_(input: Tensor) -> Tensor:
    """In-place relu."""
    return relu(input, inplace=True)


@_export(top=False, functional=True)
def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    """Clamp to [min_val, max_val]; integer tensors truncate the bounds."""
    _check_tensor("hardtanh", input)
    if input.dtype is dt.bool_:
        raise RuntimeError("Bool inputs not supported for hardtanh")
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if input.dtype is dt.uint8 and (min_val < 0 or max_val < 0):
        raise RuntimeError("cannot do hardtanh on an unsigned type with negative limits")
    check_limited("clamp_scalar", input.dtype)
    lo, hi = _typed(input, min_val), _typed(input, max_val)
    if input.dtype.is_floating_point:
        lo, hi = float(lo), float(hi)
    if not (input.dtype.is_floating_point and needs_grad((input,))):
        return apply("clamp", input, lo, hi, out=input) if inplace else \
            torch_node(apply("clamp", input, lo, hi), "hardtanh", input)
    if inplace:
        ew.check_leaf_inplace(input)
    with no_grad():  # torch's node: no gradient at the bounds themselves (clamp passes it there)
        out = apply("clamp", input, lo, hi)
    HARDTANH.attach((input,), (out,), (lo, hi))
    if not inplace:
        return out
    write_through_view(input, out)  # (the node keeps a copy of the input it saved, as torch's original self)
    return input if input._base is not None else torch_node(input, "hardtanh")


def _hardtanh_backward(node, g: Tensor) -> tuple:
    (x,) = node.saved_tensors
    lo, hi = node.attrs
    return (g * ~((x <= lo) | (x >= hi)),)


# torch's node: the clamp computed under no_grad, then this node on its input (attrs: the bounds); it saves the
# input, as torch's, so the result may be written in place afterwards
HARDTANH = Primitive("hardtanh", None, cpu=None, backward=_hardtanh_backward, saved=("input0",), sbp="elementwise")


@_export(top=False, functional=True)
def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    """In-place hardtanh."""
    return hardtanh(input, min_val, max_val, inplace=True)


@_export(top=False, functional=True)
def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    """min(max(input, 0), 6)."""
    return hardtanh(input, 0.0, 6.0, inplace)


@_export(top=False, functional=True)
def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """input where positive, else input * negative_slope."""
    return _run("leaky_relu", input, lambda x: M.where(M.gt(x, 0), x, M.mul(x, negative_slope)), inplace,
                grad_node=LEAKY_RELU, params=(negative_slope,))


@_export(top=False, functional=True)
def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    """In-place leaky_relu."""
    return leaky_relu(input, negative_slope, inplace=True)


def _threshold(input: Tensor, threshold: float, value: float, out: Tensor | None) -> Tensor:
    _check_tensor("threshold", input)
    if input.dtype.is_complex or input.dtype is dt.bool_:
        _float_only("threshold", input)
    check_limited("threshold", input.dtype)
    th, val = _typed(input, threshold), _typed(input, value)
    if out is not None:
        out = apply("where", M.le(input, th), val, input, out=out)
        return out if out._base is not None else torch_node(out, "ThresholdBackward1")  # (a view's: CopySlices)
    return torch_node(apply("where", M.le(input, th), val, input), "threshold", input)


@_export(functional=True)
def threshold(input: Tensor, threshold: float, value: float, inplace: bool = False) -> Tensor:
    """`value` where input <= threshold, else input."""
    return _threshold(input, threshold, value, input if inplace else None)


@_export(functional=True)
def threshold_(input: Tensor, threshold: float, value: float) -> Tensor:
    """In-place threshold."""
    return _threshold(input, threshold, value, input)


@_export(functional=True, method=True)
def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """0 where |input| <= lambd, else input."""
    return _run("hardshrink", input, lambda x: M.where(M.le(M.abs(x), lambd), 0, x))


@_export(top=False, functional=True)
def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:
    """input - lambd above lambd, input + lambd below -lambd, else 0."""
    _check_tensor("softshrink", input)
    _float_only("softshrink", input)
    top = float(_finfo(input.dtype).max)
    if not 0 <= lambd <= top:
        raise RuntimeError(f"lambda must be in range [0, {top:g}] for input dtype "
                           f"{ew.torch_name(input.dtype)}, but found {lambd:g}")
    return _run("softshrink", input, lambda x: M.where(
        M.gt(x, lambd), M.sub(x, lambd), M.where(M.lt(x, -lambd), M.add(x, lambd), M.mul(x, 0))),
        grad_node=SOFTSHRINK, params=(lambd,))


SOFTSHRINK = _formula_node("softshrink", lambda x, g, lambd: M.where(
    M.logical_and(M.ge(x, -lambd), M.le(x, lambd)), 0.0, g))


# -- smooth activations --------------------------------------------------------------------------
# gelu is one elementwise op (not a chain) so autograd saves only the input and a fused kernel
# computes it once; the formula's order follows PyTorch's kernels.
# TODO(core): move these two templates into ops/elementwise/declarations.py's table.
declarations._declare("float", 1, {
    "gelu": "{0} * 0.5 * (1 + erf({0} * %r))" % _SQRT1_2,
    "gelu_tanh": "0.5 * {0} * (1 + np.tanh(%r * ({0} + 0.044715 * ({0} * {0} * {0}))))" % _SQRT_2_OVER_PI,
})
# float32 (and bfloat16) computes in float32 as torch's vectorized kernel does, in its order: the float64 constants
# of the template above made a compiled loop convert to float64 and back, at half the vector width (2x slower)
ew._SINGLE_TEMPLATES[declarations.OPS["gelu"].template] = \
    "{0} * as_float32(0.5) * (as_float32(1) + erf_single({0} * as_float32(%r)))" % _SQRT1_2
_GELU_OPS = {"none": "gelu", "tanh": "gelu_tanh"}


@_export(top=False, functional=True)
def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    """x * Phi(x), exactly (erf) or with PyTorch's tanh approximation."""
    op = _GELU_OPS.get(approximate) if isinstance(approximate, str) else None
    if op is None:
        raise RuntimeError("approximate argument must be either none or tanh.")
    _check_tensor("gelu", input)
    _float_only("gelu", input)
    return apply(op, input)


@_export(top=False, functional=True)
def silu(input: Tensor, inplace: bool = False) -> Tensor:
    """x * sigmoid(x), computed as PyTorch does: x / (1 + exp(-x))."""
    if isinstance(input, Tensor) and input.dtype.is_complex and input.requires_grad and is_grad_enabled():
        raise RuntimeError("silu does not support automatic differentiation for outputs with complex dtype.")
    return _run("silu", input, lambda x: M.div(x, M.add(M.exp(M.neg(x)), 1)), inplace)


@_export(top=False, functional=True)
def mish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * tanh(softplus(x))."""
    return _run("mish", input, lambda x: M.mul(x, M.tanh(M.log1p(M.exp(x)))), inplace)


@_export(top=False, functional=True)
def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """log(1 + exp(beta * x)) / beta, linear where beta * x > threshold."""
    def body(x):
        z = x if beta == 1 else M.mul(x, beta)
        soft = M.log1p(M.exp(z))
        return M.where(M.gt(z, threshold), x, soft if beta == 1 else M.div(soft, beta))

    return _run("softplus", input, body, grad_node=SOFTPLUS, params=(beta, threshold))


def _softplus_grad(x: Tensor, g: Tensor, beta: float, threshold: float) -> Tensor:
    """torch's softplus_backward (whose own derivative has no slope at beta * x == threshold, as torch's)."""
    bx = x if beta == 1 else M.mul(x, beta)
    z = M.exp(M.where(M.lt(bx, threshold), bx, bx.detach()))
    return M.where(M.gt(bx, threshold), g, M.div(M.mul(g, z), M.add(z, 1)))


def _elu_grad(x: Tensor, g: Tensor, negcoef: float, poscoef: float, input_scale: float) -> Tensor:
    """torch's elu_backward: x <= 0 takes the exponential's slope, everything else (NaN, +inf) poscoef."""
    inner = x if input_scale == 1 else M.mul(x, input_scale)
    return M.where(M.le(x, 0), M.mul(M.mul(g, negcoef * input_scale), M.exp(inner)),
                   g if poscoef == 1 else M.mul(g, poscoef))


SOFTPLUS = _formula_node("softplus", _softplus_grad)
# torch's leaky_relu_backward: it saves the input (a later write into it is refused at backward)
LEAKY_RELU = _formula_node("leaky_relu", lambda x, g, slope: M.where(M.gt(x, 0), g, M.mul(g, slope)))
ELU, SELU, CELU = (_formula_node(name, _elu_grad) for name in ("elu", "selu", "celu"))


def _result_node(name: str, formula) -> Primitive:
    """The record of torch's node for an in-place activation that saves its result: backward is
    `formula(result, g, *params)`, in opmath precision."""
    def backward(node, g):
        gx = formula(_opmath(node.saved_tensors[0]), _opmath(g), *node.attrs)
        return (gx if gx.dtype is g.dtype else copies.convert(gx, g.dtype),)
    return Primitive(f"{name}_result", None, cpu=None, backward=backward, saved=("output0",), sbp="elementwise")


def _elu_result_grad(y: Tensor, g: Tensor, negcoef: float, poscoef: float, input_scale: float) -> Tensor:
    """torch's elu_backward from the result (is_result): y <= 0 takes g * input_scale * (y + negcoef)."""
    return M.where(M.le(y, 0), M.mul(M.mul(g, input_scale), M.add(y, negcoef)),
                   g if poscoef == 1 else M.mul(g, poscoef))


_ELU_RESULT = _result_node("elu", _elu_result_grad)
# in-place activation -> the record of its result-saving node (named after _NODE_OF's op, overload 1: EluBackward1)
_RESULT_NODES = {"elu": _ELU_RESULT, "selu": _ELU_RESULT, "celu": _ELU_RESULT,
                 "leaky_relu": _result_node("leaky_relu", lambda y, g, slope: M.where(M.gt(y, 0), g, M.mul(g, slope)))}
_NODE_OF = {"selu": "elu"}


def _elu_body(x: Tensor, negcoef: float, poscoef: float, input_scale: float) -> Tensor:
    inner = x if input_scale == 1 else M.mul(x, input_scale)
    neg = M.expm1(inner) if negcoef == 1 else M.mul(M.expm1(inner), negcoef)
    return M.where(M.gt(x, 0), x if poscoef == 1 else M.mul(x, poscoef), neg)


@_export(top=False, functional=True)
def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where positive, else alpha * (exp(x) - 1)."""
    return _run("elu", input, lambda x: _elu_body(x, alpha, 1.0, 1.0), inplace, grad_node=ELU,
                params=(alpha, 1.0, 1.0))


@_export(top=False, functional=True)
def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place elu."""
    return elu(input, alpha, inplace=True)


@_export(functional=True)
def selu(input: Tensor, inplace: bool = False) -> Tensor:
    """scale * elu(x, alpha) with the self-normalizing constants."""
    negcoef = _coef(_SELU_ALPHA, _SELU_SCALE, input)
    return _run("selu", input, lambda x: _elu_body(x, negcoef, _SELU_SCALE, 1.0), inplace,
                grad_node=SELU, params=(negcoef, _SELU_SCALE, 1.0))


@_export(functional=True)
def selu_(input: Tensor) -> Tensor:
    """In-place selu."""
    return selu(input, inplace=True)


@_export(functional=True)
def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x where positive, else alpha * (exp(x / alpha) - 1)."""
    if alpha == 0:
        raise RuntimeError("ZeroDivisionError: alpha cannot be 0 for CELU")
    return _run("celu", input, lambda x: _elu_body(x, alpha, 1.0, 1.0 / alpha), inplace,
                grad_node=CELU, params=(alpha, 1.0, 1.0 / alpha))


@_export(functional=True)
def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    """In-place celu."""
    return celu(input, alpha, inplace=True)


@_export(top=False, functional=True)
def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    """clamp(x + 3, 0, 6) / 6."""
    return _run("hardsigmoid", input, lambda x: M.div(M.clamp(M.add(x, 3), 0, 6), 6), inplace,
                grad_node=HARDSIGMOID)


HARDSIGMOID = _formula_node("hardsigmoid", lambda x, g: M.where(M.logical_and(M.gt(x, -3), M.lt(x, 3)),
                                                                 M.div(g, 6), 0.0))


@_export(top=False, functional=True)
def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    """x * clamp(x + 3, 0, 6) / 6."""
    return _run("hardswish", input, lambda x: M.div(M.mul(x, M.clamp(M.add(x, 3), 0, 6)), 6), inplace,
                grad_node=HARDSWISH)


HARDSWISH = _formula_node("hardswish", lambda x, g: M.where(
    M.le(x, -3), 0.0, M.where(M.lt(x, 3), M.mul(g, M.add(M.div(x, 3), 0.5)), g)))


@_export(top=False, functional=True)
def logsigmoid(input: Tensor) -> Tensor:
    """log(sigmoid(x)), stable for large |x|: min(x, 0) - log1p(exp(-|x|))."""
    return _run("log_sigmoid", input, lambda x: M.sub(M.minimum(x, 0), M.log1p(M.exp(M.neg(M.abs(x))))))


@_export(top=False, functional=True)
def softsign(input: Tensor) -> Tensor:
    """x / (1 + |x|)."""
    return _run("softsign", input, lambda x: M.div(x, M.add(M.abs(x), 1)), float_only=False, opmath=False)


@_export(top=False, functional=True)
def tanhshrink(input: Tensor) -> Tensor:
    """x - tanh(x)."""
    _check_tensor("tanhshrink", input)
    if input.dtype is dt.bool_:
        raise RuntimeError("Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                           "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
    return _run("tanhshrink", input, lambda x: M.sub(x, M.tanh(x)), float_only=False, opmath=False)


# -- other elementwise composites ---------------------------------------------------------------------
@_export(method=True)
def heaviside(input: Tensor, values: Tensor, *, out: Tensor | None = None) -> Tensor:
    """0 where input < 0, `values` where input == 0, 1 where input > 0."""
    _check_tensor("heaviside", input)
    if not isinstance(values, Tensor):
        raise TypeError(f"heaviside(): argument 'values' (position 2) must be Tensor, not {type(values).__name__}")
    if input.dtype.is_complex or values.dtype.is_complex:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    if input.dtype is not values.dtype or out is not None and out.dtype is not input.dtype:  # (out= counts too)
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    check_limited("heaviside", input.dtype)
    return apply("where", M.eq(input, 0), values, M.gt(input, 0), out=out)


METHODS["heaviside_"] = lambda self, values: heaviside(self, values, out=self)


@_export(method=True)
def nan_to_num(input: Tensor, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None, *,
               out: Tensor | None = None) -> Tensor:
    """NaN, +inf and -inf replaced by `nan`, `posinf`, `neginf` (defaults: 0 and the dtype's range)."""
    _check_tensor("nan_to_num", input)
    check_limited("nan_to_num", input.dtype)
    if out is not None and out.dtype is not input.dtype:
        raise RuntimeError(f"nan_to_num: dtype of out: {out.dtype.scalar_name} should be same as input: "
                           f"{input.dtype.scalar_name}")
    if not input.dtype.is_floating_point:
        return _store("nan_to_num", input, input.dtype, out) if out is not None else copies.clone(input)
    info = _finfo(input.dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    y = M.where(M.eq(input, math.inf), posinf, M.where(M.eq(input, -math.inf), neginf, input))
    result = apply("where", M.isnan(input), nan, y, out=out)
    if out is None:  # torch's node: NanToNumBackward0 (in place too; a view's is CopySlices)
        return torch_node(result, "nan_to_num", input)
    return torch_node(result, "nan_to_num") if out is input and out._base is None else result


@_export(method=True)
def nan_to_num_(input: Tensor, nan: float = 0.0, posinf: float | None = None,
                neginf: float | None = None) -> Tensor:
    """In-place nan_to_num."""
    return nan_to_num(input, nan, posinf, neginf, out=input)


def _addc(name: str, input, tensor1, tensor2, value, out, combine) -> Tensor:
    for arg, t in (("self", input), ("tensor1", tensor1), ("tensor2", tensor2)):
        _check_tensor(name, t, arg)
    operands = (input, tensor1, tensor2)
    result = ew._signature_dtype(None, [t.dtype for t in operands], [t.ndim for t in operands])
    broadcast_shapes(*(t._v.shape for t in operands))  # torch's error before any conversion
    if result is dt.bool_:
        raise NotImplementedError(f"\"{name}_cpu_out\" not implemented for 'Bool'")
    check_limited(name, result)
    if isinstance(value, complex) and not result.is_complex:  # torch's checked conversion of the scalar
        if value.imag:
            raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[result]} without overflow")
        value = value.real
    if result.category == dt.INT and not isinstance(value, float) and overflows(value, result):
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[result]} without overflow")
    if result.category == dt.INT and isinstance(value, float):
        value = int(value)  # PyTorch casts the scalar to the integral result type
    if out is not None:  # (written from a temporary: the overlap torch's iterator refuses is checked here)
        check_out(out, operands, elementwise=True)
    # every operand in the promoted (or, for 16-bit floats, float32) precision before value scales it, as torch
    args = [_opmath(t) if result in _HALF else t if t.dtype is result else copies.convert(t, result)
            for t in (input, tensor1, tensor2)]
    scaled = args[1] if value == 1 else M.mul(args[1], value)
    stored = _store(name, M.add(args[0], combine(scaled, args[2])), result, out)
    if out is None:  # torch's node: AddcmulBackward0 / AddcdivBackward0 (in place too; a view's is CopySlices)
        return torch_node(stored, name, input, tensor1, tensor2)
    return torch_node(stored, name) if out is input and out._base is None else stored


@_export(method=True)
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out: Tensor | None = None) -> Tensor:
    """input + value * tensor1 * tensor2."""
    return _addc("addcmul", input, tensor1, tensor2, value, out, M.mul)


@_export(method=True)
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value=1, out: Tensor | None = None) -> Tensor:
    """input + value * tensor1 / tensor2 (true division; integer tensor1 and tensor2 are refused)."""
    if isinstance(tensor1, Tensor) and isinstance(tensor2, Tensor) and \
            not tensor1.dtype.is_floating_point and not tensor2.dtype.is_floating_point:  # (complex counts)
        raise RuntimeError(
            "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform "
            "a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + "
            "value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * "
            "tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: "
            "(input + value * tensor1 / tensor2), for all dtypes.")
    return _addc("addcdiv", input, tensor1, tensor2, value, out, M.div)


METHODS["addcmul_"] = lambda self, tensor1, tensor2, *, value=1: addcmul(self, tensor1, tensor2, value=value,
                                                                         out=self)
METHODS["addcdiv_"] = lambda self, tensor1, tensor2, *, value=1: addcdiv(self, tensor1, tensor2, value=value,
                                                                         out=self)


@_export(method=True)
def sgn(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The sign of each element (for real tensors, the same as sign; z/|z| for complex ones)."""
    if out is not None:
        M.check_unary_out("sgn", input, out)
    return apply("sgn", input, out=out)


METHODS["sgn_"] = lambda self: apply("sgn", self, out=self)


FUNCTIONAL += ["sigmoid", "tanh"]  # in math_api; nn.functional has them too
sigmoid, tanh = M.sigmoid, M.tanh


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    """max(0, x) + weight * min(0, x), with one weight per channel (dim 1) or one shared (F.prelu, Tensor.prelu)."""
    if (input.dtype.is_complex or weight.dtype.is_complex) and input.dtype is not weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {ew.torch_name(input.dtype)} and "
                           f"{ew.torch_name(weight.dtype)}")
    if weight.dim() > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: ndim = {weight.dim()}")
    if weight.numel() != 1:
        if input.dim() == 0:
            raise RuntimeError("Not allow zero-dim input tensor.")
        channels = input.shape[1] if input.dim() >= 2 else 1
        if weight.numel() != channels:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found parameter numbers = "
                               f"{weight.numel()} and channel size = {channels}.")
        if input.dim() >= 2:
            weight = weight.reshape((channels,) + (1,) * (input.dim() - 2))
    elif input.dim() == 0:  # one weight on a 0-d input: the result stays 0-d, as in PyTorch
        weight = weight.reshape(())
    refuse_complex(input, "\"prelu_cpu\" not implemented for '{name}'")
    if _ac.ACTIVE[0]:  # on torch's autocast list of lower-precision ops
        input, weight = _ac.lower(input, weight)
    return torch_node(M.where(input > 0, input, weight * input), "prelu_kernel", input, weight)


METHODS["prelu"] = prelu
