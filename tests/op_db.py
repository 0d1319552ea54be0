"""The elementwise op database: one record per op, compared against PyTorch.

tests/test_elementwise.py generates its tests from these records: forward values and dtypes
over shape cases and dtypes, Python scalar operands, in-place variants and `out=`. A record
says how to call the op in tidal and in torch, which inputs it takes (arity and a value
domain per input), the dtypes torch supports, tolerances, and known skips with reasons.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import ml_dtypes
import numpy as np
import torch
import torch.nn.functional as F

import tidal
from tidal.ops.elementwise import activations as A
from tidal.ops.dispatch.number_args import TENSORS_ONLY

FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int64", "int32", "int16", "int8", "uint8")
NUMERIC = FLOATS + INTS
ALL = NUMERIC + ("bool",)
SIGNED = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8")

NP_DTYPES = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
             "bfloat16": ml_dtypes.bfloat16, "int64": np.int64, "int32": np.int32, "int16": np.int16,
             "int8": np.int8, "uint8": np.uint8, "bool": np.bool_}

# (rtol, atol) for comparisons with torch; integer and bool results are compared exactly
DEFAULT_TOL = {"float64": (1e-10, 1e-12), "float32": (2e-6, 1e-6), "float16": (2e-3, 1e-3),
               "bfloat16": (1.6e-2, 1e-2)}


@dataclass(frozen=True)
class OpInfo:
    """One op: how tidal and torch call it, what it accepts, how closely results must agree."""

    name: str
    op: Callable                      # tidal: op(*inputs, **kwargs)
    ref: Callable                     # torch: ref(*inputs, **kwargs)
    arity: int = 1
    domains: tuple = ("real",)        # one value domain per input (see `sample`)
    dtypes: tuple = ALL               # dtypes torch supports for every input
    tol: dict = field(default_factory=dict)   # dtype -> (rtol, atol), overriding DEFAULT_TOL
    skips: dict = field(default_factory=dict)  # test kind or (test kind, dtype) -> reason
    inplace: str | None = None        # Tensor method doing it in place ("add_")
    out: bool = False                 # accepts out=
    scalars: bool = False             # a Python number may replace an input (binary ops torch lets take one)
    exact: bool = False               # no transcendental: results must match torch (and fused kernels) bitwise

    def tolerance(self, dtype: str) -> tuple:
        """(rtol, atol) for results of `dtype`."""
        return self.tol.get(dtype, DEFAULT_TOL.get(dtype, (0, 0)))

    def skip_reason(self, kind: str, dtype: str | None = None) -> str | None:
        """Why a test of this kind (and dtype) is skipped, or None."""
        return self.skips.get((kind, dtype)) or self.skips.get(kind)

    def __repr__(self) -> str:
        return self.name


# -- input domains -----------------------------------------------------------------------------
def _ints(rng, shape, lo, hi):
    return rng.integers(lo, hi + 1, size=shape)


def sample(domain: str, shape: tuple, dtype: str, rng: np.random.Generator) -> np.ndarray:
    """Random values of `dtype` (a name) from a domain an op is defined and well-conditioned on."""
    is_int = dtype in INTS
    unsigned = dtype == "uint8"
    if dtype == "bool":  # True only where zero is outside the domain (divisors, logarithms)
        vals = rng.random(shape) < 0.5 if domain not in ("positive", "nonzero", "ge1") else np.ones(shape, bool)
    elif domain == "real":
        vals = _ints(rng, shape, 0 if unsigned else -9, 9) if is_int else rng.standard_normal(shape) * 3
    elif domain == "positive":
        vals = _ints(rng, shape, 1, 9) if is_int else rng.uniform(0.1, 5, shape)
    elif domain == "nonzero":
        mag = _ints(rng, shape, 1, 9) if is_int else rng.uniform(0.5, 4, shape)
        vals = mag if unsigned else mag * rng.choice([-1, 1], shape)
    elif domain == "unit":  # |x| < 1
        vals = _ints(rng, shape, 0 if unsigned else -1, 1) if is_int else rng.uniform(-0.95, 0.95, shape)
    elif domain == "prob":  # (0, 1)
        vals = _ints(rng, shape, 0, 1) if is_int else rng.uniform(0.05, 0.95, shape)
    elif domain == "ge1":
        vals = _ints(rng, shape, 1, 9) if is_int else rng.uniform(1.05, 6, shape)
    elif domain == "exponent":  # small powers, non-negative for integers
        vals = _ints(rng, shape, 0, 4) if is_int else rng.uniform(-2, 2, shape)
    elif domain == "shift":
        vals = _ints(rng, shape, 0, 6)
    elif domain == "gamma":  # away from the poles at 0, -1, -2 ...
        vals = _ints(rng, shape, 1, 9) if is_int else (
            rng.integers(-4, 6, shape) + rng.uniform(0.1, 0.9, shape))
    elif domain == "specials":  # finite values mixed with inf, -inf, nan, signed zeros
        if is_int:
            vals = _ints(rng, shape, 0 if unsigned else -9, 9)
        else:
            pool = np.array([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.5, -2.25, 1e4])
            vals = np.where(rng.random(shape) < 0.5, rng.choice(pool, shape), rng.standard_normal(shape))
    else:
        raise ValueError(f"unknown domain {domain!r}")
    return np.asarray(vals).astype(NP_DTYPES[dtype])


# -- record builders -----------------------------------------------------------------------------
def _t(name: str):
    return getattr(torch, name)


def unary(name, ref=None, op=None, **kw) -> OpInfo:
    """A unary op: tidal.<name> against torch.<name> unless given."""
    kw.setdefault("inplace", name + "_")
    kw.setdefault("out", True)
    return OpInfo(name, op or getattr(tidal, name), ref or _t(name), **kw)


def binary(name, ref=None, op=None, domains=("real", "real"), **kw) -> OpInfo:
    """A binary op with broadcasting: tidal.<name>(a, b) against torch.<name>(a, b)."""
    kw.setdefault("inplace", name + "_")
    kw.setdefault("out", True)
    kw.setdefault("scalars", name not in TENSORS_ONLY)  # torch's schema refuses numbers there (test_number_args)
    return OpInfo(name, op or getattr(tidal, name), ref or _t(name), arity=2, domains=domains, **kw)


def functional(name, op, ref, dtypes=FLOATS, **kw) -> OpInfo:
    """An activation: no out=, in place only where the record says so."""
    kw.setdefault("inplace", None)
    return OpInfo(name, op, ref, dtypes=dtypes, **kw)


_LOOSE = {"float32": (1e-5, 1e-5), "float64": (1e-9, 1e-9)}

OPS: list = [
    # arithmetic
    binary("add", dtypes=ALL, exact=True),
    binary("sub", dtypes=NUMERIC, exact=True),
    binary("mul", dtypes=ALL, exact=True),
    binary("div", dtypes=ALL, domains=("real", "nonzero"), exact=True),
    binary("floor_divide", dtypes=NUMERIC, domains=("real", "nonzero"), exact=True),
    binary("remainder", dtypes=NUMERIC, domains=("real", "nonzero"), exact=True),
    binary("fmod", dtypes=NUMERIC, domains=("real", "nonzero"), exact=True),
    binary("pow", dtypes=NUMERIC, domains=("positive", "exponent"), tol={"float32": (1e-5, 1e-6)}),
    binary("maximum", dtypes=ALL, exact=True, inplace=None),
    binary("minimum", dtypes=ALL, exact=True, inplace=None),
    binary("fmax", dtypes=ALL, domains=("specials", "specials"), exact=True, inplace=None),
    binary("fmin", dtypes=ALL, domains=("specials", "specials"), exact=True, inplace=None),
    binary("atan2", dtypes=ALL),
    binary("hypot", dtypes=FLOATS),
    binary("logaddexp", dtypes=FLOATS, inplace=None),
    binary("logaddexp2", dtypes=FLOATS, inplace=None),
    binary("copysign", dtypes=ALL, domains=("real", "specials")),
    binary("nextafter", dtypes=("float32", "float64"), exact=True),
    binary("xlogy", dtypes=ALL, domains=("real", "specials")),
    # comparisons and logic
    *(binary(n, dtypes=ALL, domains=("specials", "specials"), exact=True)
      for n in ("eq", "ne", "lt", "le", "gt", "ge")),
    *(binary(n, dtypes=ALL, exact=True) for n in ("logical_and", "logical_or", "logical_xor")),
    unary("logical_not", dtypes=ALL, exact=True),
    *(binary(n, dtypes=INTS + ("bool",), exact=True) for n in ("bitwise_and", "bitwise_or", "bitwise_xor")),
    binary("bitwise_left_shift", dtypes=INTS, domains=("real", "shift"), exact=True),
    binary("bitwise_right_shift", dtypes=INTS, domains=("real", "shift"), exact=True),
    unary("bitwise_not", dtypes=INTS + ("bool",), exact=True),
    # value-keeping unary ops
    unary("neg", dtypes=NUMERIC, exact=True, out=False),  # math_api's neg has no out= (reported)
    unary("abs", dtypes=NUMERIC, exact=True),
    unary("sign", dtypes=ALL, domains=("specials",), exact=True),
    unary("sgn", dtypes=ALL, domains=("specials",), exact=True),
    unary("square", dtypes=ALL, exact=True, out=False, skips={("inplace", "bool"): "bool square is int64"}),
    unary("floor", dtypes=NUMERIC, exact=True),
    unary("ceil", dtypes=NUMERIC, exact=True),
    unary("trunc", dtypes=NUMERIC, exact=True),
    unary("round", dtypes=NUMERIC, exact=True),
    unary("frac", dtypes=FLOATS, exact=True),
    unary("positive", dtypes=NUMERIC, exact=True, inplace=None, out=False),
    unary("relu", op=tidal.relu, dtypes=NUMERIC, exact=True, out=False),
    unary("reciprocal", dtypes=ALL, domains=("nonzero",)),
    # predicates
    *(unary(n, dtypes=ALL, domains=("specials",), exact=True, inplace=None)
      for n in ("isnan", "isinf", "isfinite", "isposinf", "isneginf", "signbit")),
    # transcendental
    unary("exp", dtypes=ALL), unary("exp2", dtypes=ALL), unary("expm1", dtypes=ALL),
    unary("log", dtypes=ALL, domains=("positive",)), unary("log2", dtypes=ALL, domains=("positive",)),
    unary("log10", dtypes=ALL, domains=("positive",)), unary("log1p", dtypes=ALL, domains=("positive",)),
    unary("sqrt", dtypes=ALL, domains=("positive",)), unary("rsqrt", dtypes=ALL, domains=("positive",)),
    unary("sin", dtypes=ALL), unary("cos", dtypes=ALL), unary("tan", dtypes=ALL, domains=("unit",)),
    unary("asin", dtypes=ALL, domains=("unit",)), unary("acos", dtypes=ALL, domains=("unit",)),
    unary("atan", dtypes=ALL), unary("sinh", dtypes=ALL, domains=("unit",)),
    unary("cosh", dtypes=ALL, domains=("unit",)), unary("tanh", dtypes=ALL), unary("asinh", dtypes=ALL),
    unary("acosh", dtypes=ALL, domains=("ge1",)), unary("atanh", dtypes=ALL, domains=("unit",)),
    unary("sigmoid", dtypes=ALL),
    unary("deg2rad", dtypes=FLOATS), unary("rad2deg", dtypes=FLOATS),
    # special functions
    unary("erf", dtypes=ALL), unary("erfc", dtypes=ALL),
    unary("erfinv", dtypes=ALL, domains=("unit",), tol={"float64": (1e-9, 1e-12)}),
    unary("lgamma", dtypes=ALL, domains=("gamma",), tol=_LOOSE),
    unary("digamma", dtypes=ALL, domains=("gamma",), tol=_LOOSE),
    unary("i0", dtypes=ALL, tol={"float64": (1e-12, 1e-12), "float32": (1e-5, 1e-6)}),
    unary("i1", ref=torch.special.i1, dtypes=ALL, inplace=None,
          tol={"float64": (1e-12, 1e-12), "float32": (1e-5, 1e-6)}),
    unary("sinc", dtypes=ALL, tol={"float32": (1e-5, 1e-6), "float64": (1e-9, 1e-12)}),
    unary("logit", dtypes=ALL, domains=("prob",)),
    OpInfo("logit_eps", lambda x: tidal.logit(x, eps=0.2), lambda x: torch.logit(x, eps=0.2), dtypes=ALL,
           domains=("real",), inplace=None),
    *(OpInfo(f"polygamma_{n}", lambda x, n=n: tidal.polygamma(n, x), lambda x, n=n: torch.polygamma(n, x),
             dtypes=ALL, domains=("gamma",), tol={"float64": (1e-7, 1e-9), "float32": (1e-4, 1e-5)})
      for n in range(4)),
    OpInfo("mvlgamma", lambda x: tidal.mvlgamma(x, 3), lambda x: torch.mvlgamma(x, 3), dtypes=FLOATS,
           domains=("ge1",), tol=_LOOSE),
    # ternary
    OpInfo("clamp", tidal.clamp, torch.clamp, arity=3, domains=("real", "real", "real"), dtypes=NUMERIC,
           inplace="clamp_", out=True, exact=True),
    OpInfo("lerp", tidal.lerp, torch.lerp, arity=3, domains=("real", "real", "unit"), dtypes=FLOATS,
           inplace="lerp_", tol={"float32": (1e-5, 1e-5)}),
    OpInfo("where", lambda c, a, b: tidal.where(c.bool(), a, b), lambda c, a, b: torch.where(c.bool(), a, b),
           arity=3, domains=("real", "real", "real"), dtypes=ALL, exact=True),
    # activations and composites
    functional("relu6", A.relu6, F.relu6, dtypes=FLOATS + ("int64", "int32", "uint8"), exact=True),
    functional("hardtanh", lambda x: A.hardtanh(x, -0.5, 2.5), lambda x: F.hardtanh(x, -0.5, 2.5),
               dtypes=SIGNED, exact=True),
    functional("gelu", A.gelu, F.gelu),
    functional("gelu_tanh", lambda x: A.gelu(x, approximate="tanh"), lambda x: F.gelu(x, approximate="tanh"),
               tol={"float32": (1e-5, 1e-6)}),
    functional("silu", A.silu, F.silu),
    functional("mish", A.mish, F.mish, tol={"float32": (1e-5, 1e-6)}),
    functional("softplus", A.softplus, F.softplus, tol={"float32": (1e-5, 1e-6)}),
    functional("softplus_beta", lambda x: A.softplus(x, beta=2.0, threshold=3.0),
               lambda x: F.softplus(x, beta=2.0, threshold=3.0), tol={"float32": (1e-5, 1e-6)}),
    functional("elu", lambda x: A.elu(x, 0.7), lambda x: F.elu(x, 0.7)),
    functional("selu", A.selu, F.selu),
    functional("celu", lambda x: A.celu(x, 1.3), lambda x: F.celu(x, 1.3)),
    functional("leaky_relu", lambda x: A.leaky_relu(x, 0.2), lambda x: F.leaky_relu(x, 0.2), exact=True),
    functional("hardswish", A.hardswish, F.hardswish, exact=True),
    functional("hardsigmoid", A.hardsigmoid, F.hardsigmoid, exact=True),
    functional("logsigmoid", A.logsigmoid, F.logsigmoid),
    functional("softsign", A.softsign, F.softsign, dtypes=NUMERIC, exact=True),
    functional("tanhshrink", A.tanhshrink, F.tanhshrink, dtypes=NUMERIC, tol={"float32": (1e-5, 1e-5)}),
    functional("hardshrink", lambda x: A.hardshrink(x, 0.7), lambda x: F.hardshrink(x, 0.7), exact=True),
    functional("softshrink", lambda x: A.softshrink(x, 0.7), lambda x: F.softshrink(x, 0.7), exact=True),
    functional("threshold", lambda x: A.threshold(x, 0.3, -2.0), lambda x: F.threshold(x, 0.3, -2.0),
               dtypes=SIGNED, exact=True),
    OpInfo("heaviside", tidal.heaviside, torch.heaviside, arity=2, domains=("unit", "real"), dtypes=ALL,
           inplace="heaviside_", out=True, exact=True),
    OpInfo("nan_to_num", tidal.nan_to_num, torch.nan_to_num, domains=("specials",), dtypes=ALL,
           inplace="nan_to_num_", out=True, exact=True),
    OpInfo("nan_to_num_args", lambda x: tidal.nan_to_num(x, 1.0, 2.0, -3.0),
           lambda x: torch.nan_to_num(x, 1.0, 2.0, -3.0), domains=("specials",), dtypes=FLOATS, exact=True),
    OpInfo("addcmul", lambda a, b, c: tidal.addcmul(a, b, c, value=2),
           lambda a, b, c: torch.addcmul(a, b, c, value=2), arity=3, domains=("real", "real", "real"),
           dtypes=NUMERIC),  # torch fuses the multiply-add (one rounding): not bitwise
    OpInfo("addcdiv", lambda a, b, c: tidal.addcdiv(a, b, c, value=0.5),
           lambda a, b, c: torch.addcdiv(a, b, c, value=0.5), arity=3, domains=("real", "real", "nonzero"),
           dtypes=FLOATS, exact=True),
]

BY_NAME = {info.name: info for info in OPS}
