"""torch.special: the special functions, composed from tidal ops where they can be, with PyTorch's gradients.

Functions with a closed form in tidal ops (ndtr, erfcx, i0e, xlog1py...) compute their value in float64
(the tails need it) and carry PyTorch's backward formula, written in tidal ops. Those PyTorch gives no
gradient (Bessel functions of the new family, orthogonal polynomials, airy_ai) run as one NumPy kernel
each (ops/elementwise/special_kernels.py) and return tensors outside the graph, as PyTorch's do.
"""
from __future__ import annotations

import math
import numbers

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from . import arithmetic as M, copies
from . import special_kernels as K
from .activations import _check_tensor, _opmath, _store
from .plans import apply
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.primitive import Primitive
from ..reductions.softmax import log_softmax as _log_softmax, softmax as _softmax
from ..reductions.stats import logsumexp

__all__ = ["igamma", "igammac"]  # top-level torch names; the torch.special names are in SPECIAL
METHODS: dict = {}

_SQRT1_2 = math.sqrt(0.5)
_SQRT2PI = math.sqrt(2 * math.pi)


# -- arguments -----------------------------------------------------------------------------------
def _tensor(x, op: str, arg: str = "input", position: int = 1) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if isinstance(x, numbers.Number) and not isinstance(x, bool):
        return M._number_tensor(x)
    raise TypeError(f"special_{op}(): argument '{arg}' (position {position}) must be Tensor, not "
                    f"{type(x).__name__}")


def _result_dtype(*tensors: Tensor) -> dt.dtype:
    """The float dtype PyTorch's unary/binary float ops give: promoted, integers to the default float."""
    d = M.ew._signature_dtype(None, [t.dtype for t in tensors], [t.ndim for t in tensors])
    return d if d.is_floating_point else dt.get_default_dtype()


def _f64(x: Tensor) -> Tensor:
    return x if x.dtype is dt.float64 else copies.convert(x, dt.float64)


def _finish(rec: Primitive, value64: Tensor, dtype: dt.dtype, inputs: tuple, node: str | None = None) -> Tensor:
    """`value64` (computed without a graph) in `dtype`, with the node of `rec` (torch's formula) attached."""
    out = value64 if dtype is dt.float64 else copies.convert(value64, dtype)
    rec.attach(inputs, (out,), node=node)
    return out


def _formula(name: str, backward, nin: int = 1) -> Primitive:
    """The record of torch's node for special function `name` (a composite here): `backward` reads the inputs
    and the result."""
    return Primitive(name, None, cpu=None, backward=backward, saved=tuple(f"input{k}" for k in range(nin)) +
                     ("output0",))


# -- special functions with arguments of their own (top-level torch names and Tensor methods) -------------
def logit(input: Tensor, eps: float | None = None, *, out: Tensor | None = None) -> Tensor:
    """log(p / (1 - p)), with p clamped to [eps, 1 - eps] when eps is given (and not negative)."""
    _check_tensor("logit", input)
    if eps is None or eps < 0:
        return apply("logit", input, out=out)
    dtype = input.dtype if input.dtype.is_floating_point else dt.get_default_dtype()
    x = _opmath(input)
    y = apply("logit", M.clamp(x, float(eps), 1.0 - float(eps)))
    return _store("logit", y, dtype, out)


def logit_(input: Tensor, eps: float | None = None) -> Tensor:
    """In-place logit."""
    return logit(input, eps, out=input)


def _check_order(name: str, n, what: str = "n") -> None:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{name}(): argument '{what}' (position 1) must be int, not {type(n).__name__}")


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """The n-th derivative of digamma (n = 0 is digamma itself)."""
    _check_order("polygamma", n)
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    _check_tensor("polygamma", input)
    return apply("polygamma", input, n, out=out)


METHODS["polygamma"] = lambda self, n: polygamma(n, self)
METHODS["polygamma_"] = lambda self, n: polygamma(n, self, out=self)


def mvlgamma(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:
    """The multivariate log-gamma of dimension p: sum_k lgamma(x - k/2) + p(p-1)/4 log(pi)."""
    _check_tensor("mvlgamma", input)
    _check_order("mvlgamma", p, "p")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    dtype = input.dtype if input.dtype.is_floating_point else dt.get_default_dtype()
    x = _opmath(input) if input.dtype.is_floating_point else copies.convert(input, dtype)
    total = None
    for k in range(p):  # PyTorch's order: offsets -(p-1)/2 ... 0
        offset = -(p - 1) / 2 + k / 2
        term = M.lgamma(M.add(x, offset) if offset else x)
        total = term if total is None else M.add(total, term)
    return _store("mvlgamma", M.add(total, p * (p - 1) / 4 * math.log(math.pi)), dtype, out)


METHODS["mvlgamma_"] = lambda self, p: mvlgamma(self, p, out=self)


__all__ += ["logit", "logit_", "polygamma", "mvlgamma"]
METHODS.update(logit=logit, logit_=logit_, mvlgamma=mvlgamma)


# -- aliases of tidal ops ------------------------------------------------------------------------
erf, erfc, erfinv, expm1, exp2, log1p, sinc, digamma, i0 = (M.erf, M.erfc, M.erfinv, M.expm1, M.exp2, M.log1p,
                                                             M.sinc, M.digamma, M.i0)
psi, gammaln, expit, i1, round, multigammaln = M.digamma, M.lgamma, M.sigmoid, M.i1, M.round, mvlgamma


def xlogy(input, other, *, out: Tensor | None = None) -> Tensor:
    """input * log(other), 0 where input is 0 (NaN other stays NaN)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("special_xlogy(): argument 'self' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    return M.xlogy(input, other, out=out)


def softmax(input: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`."""
    return _softmax(input, dim, dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
    """x - logsumexp(x) along `dim`."""
    return _log_softmax(input, dim, dtype)


# -- the normal distribution ---------------------------------------------------------------------
def ndtr(input: Tensor) -> Tensor:
    """The standard normal CDF, as PyTorch computes it: (1 + erf(x / sqrt 2)) / 2 in the input's dtype."""
    x = _tensor(input, "ndtr")
    if not x.dtype.is_floating_point:
        x = copies.convert(x, dt.get_default_dtype())
    return M.mul(M.add(M.erf(M.mul(x, _SQRT1_2)), 1.0), 0.5)


def _erfcx64(x: Tensor) -> Tensor:
    """exp(x^2) erfc(x) in float64: direct below 25, the asymptotic series above (no overflow)."""
    big = M.ge(x, 25.0)
    small = M.where(big, 0.0, x)
    direct = M.mul(M.exp(M.mul(small, small)), M.erfc(small))
    z = M.where(big, x, 25.0)
    w = M.reciprocal(M.mul(M.mul(z, z), 2.0))  # 1 / (2 z^2)
    series = M.mul(M.reciprocal(M.mul(z, math.sqrt(math.pi))),
                   1 - w * (1 - 3 * w * (1 - 5 * w * (1 - 7 * w * (1 - 9 * w)))))
    return M.where(big, series, direct)



def _refuse_dtype(kernel: str, dtype: dt.dtype, halves: bool = False, ints: bool = False) -> None:
    """torch's NotImplementedError where its CPU kernel has no loop for `dtype`: never complex; 16-bit floats or
    integers (bool too) where the kernel lacks them."""
    if dtype.is_complex or halves and dtype in (dt.float16, dt.bfloat16) or ints and dtype.category < dt.FLOAT:
        raise NotImplementedError(f'"{kernel}_cpu" not implemented for \'{dtype.scalar_name}\'')


def _common(a: Tensor, b: Tensor) -> dt.dtype:
    """The two operands' promoted dtype, as torch's TensorIterator picks the kernel's (0-d operands yield)."""
    return M.ew._signature_dtype(None, [a.dtype, b.dtype], [a.ndim, b.ndim])


def erfcx(input: Tensor) -> Tensor:
    """The scaled complementary error function exp(x^2) erfc(x)."""
    x = _tensor(input, "erfcx")
    _refuse_dtype("erfcx", x.dtype, halves=True)
    with no_grad():
        value = _erfcx64(_f64(x))
    return _finish(ERFCX, value, _result_dtype(x), (x,))


ERFCX = _formula("special_erfcx", lambda node, g: (
    g * (2 * node.saved_tensors[0] * node.saved_tensors[1] - 2 / math.sqrt(math.pi)),))


def _log_ndtr64(x: Tensor) -> Tensor:
    upper = M.gt(x, -1.0)
    hi = M.where(upper, x, 0.0)
    lo = M.where(upper, -1.0, x)
    tail = M.sub(M.log(M.mul(_erfcx64(M.mul(lo, -_SQRT1_2)), 0.5)), M.mul(M.mul(lo, lo), 0.5))
    return M.where(upper, M.log1p(M.mul(M.erfc(M.mul(hi, _SQRT1_2)), -0.5)), tail)


def log_ndtr(input: Tensor) -> Tensor:
    """log of the standard normal CDF, accurate far into both tails."""
    x = _tensor(input, "log_ndtr")
    _refuse_dtype("log_ndtr", x.dtype, halves=True)
    with no_grad():
        value = _log_ndtr64(_f64(x))
    return _finish(LOG_NDTR, value, _result_dtype(x), (x,))


def _log_ndtr_backward(node, g):
    x, out = node.saved_tensors
    return (g * M.exp(-(x * x) * 0.5 - out) / _SQRT2PI,)  # pdf / cdf


LOG_NDTR = _formula("special_log_ndtr", _log_ndtr_backward)


def ndtri(input: Tensor) -> Tensor:
    """The inverse of ndtr: erfinv for a start, then Newton steps on log_ndtr for the tails."""
    p = _tensor(input, "ndtri")
    _refuse_dtype("ndtri", p.dtype, halves=True)
    with no_grad():
        p64 = _f64(p)
        inside = M.logical_and(M.gt(p64, 0.0), M.lt(p64, 1.0))
        q = M.where(inside, p64, 0.5)
        lower = M.lt(q, 0.5)
        tail = M.minimum(q, M.sub(1.0, q))  # solve in the lower tail, where log_ndtr is accurate
        ltail = M.log(tail)
        start = M.mul(M.erfinv(M.sub(M.mul(tail, 2.0), 1.0)), math.sqrt(2.0))
        t = M.sqrt(M.mul(ltail, -2.0))
        asymptotic = M.neg(M.sub(t, M.div(M.add(M.log(t), math.log(4 * math.pi) / 2), t)))
        y = M.where(M.lt(tail, 1e-10), asymptotic, start)
        for _ in range(4):
            y = M.sub(y, M.mul(M.sub(_log_ndtr64(y), ltail),
                               M.exp(M.add(_log_ndtr64(y), M.add(M.mul(M.mul(y, y), 0.5), math.log(_SQRT2PI))))))
        y = M.where(lower, y, M.neg(y))
        edge = M.where(M.eq(p64, 0.0), -math.inf, M.where(M.eq(p64, 1.0), math.inf, math.nan))
        value = M.where(inside, y, edge)
    return _finish(NDTRI, value, _result_dtype(p), (p,))


NDTRI = _formula("special_ndtri", lambda node, g: (g * _SQRT2PI * M.exp(node.saved_tensors[1] ** 2 * 0.5),))


# -- logs and entropies --------------------------------------------------------------------------
def entr(input: Tensor) -> Tensor:
    """-x log x elementwise (0 at 0, -inf below 0)."""
    x = _tensor(input, "entr")
    _refuse_dtype("entr", x.dtype)
    with no_grad():
        x64 = _f64(x)
        pos = M.gt(x64, 0.0)
        value = M.where(pos, M.mul(M.neg(x64), M.log(M.where(pos, x64, 1.0))),
                        M.where(M.eq(x64, 0.0), 0.0, M.where(M.isnan(x64), x64, -math.inf)))
    return _finish(ENTR, value, _result_dtype(x), (x,))


ENTR = _formula("special_entr", lambda node, g: (g * -(1 + M.log(node.saved_tensors[0])),))


def xlog1py(input, other) -> Tensor:
    """input * log1p(other), 0 where input is 0 (NaN other stays NaN)."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise TypeError("special_xlog1py(): argument 'self' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    x, y = _tensor(input, "xlog1py"), _tensor(other, "xlog1py", "other", 2)
    _refuse_dtype("xlog1py", _common(x, y))
    dtype = _result_dtype(x, y)
    with no_grad():
        x64, y64 = _f64(x), _f64(y)
        value = M.where(M.isnan(y64), y64, M.where(M.eq(x64, 0.0), 0.0, M.mul(x64, M.log1p(y64))))
    return _finish(XLOG1PY, value, dtype, (x, y))


def _xlog1py_backward(node, g):
    a, b, _ = node.saved_tensors
    ga = g * M.where(M.eq(a, 0), 0.0, M.log1p(b)) if a._requires_grad else None
    gb = g * a / (b + 1) if b._requires_grad else None
    return _reduce_to(ga, a), _reduce_to(gb, b)


XLOG1PY = _formula("special_xlog1py", _xlog1py_backward, 2)


def _reduce_to(g, t: Tensor):
    """A broadcast gradient summed back to `t`'s shape."""
    if g is None or tuple(g.shape) == tuple(t.shape):
        return g
    lead = g.ndim - t.ndim
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(t.shape) if s == 1 and g.shape[lead + i] != 1)
    g = g.sum(dims, keepdim=True) if dims else g
    return g.reshape(t.shape)


# -- exponentially scaled modified Bessel functions ------------------------------------------------
def _scaled_large(a: Tensor, order: float) -> Tensor:
    """e^-a I_order(a) for large a: the asymptotic series (a > 700, where I itself overflows)."""
    nu = 4 * order * order
    term, total = 1.0, 1.0
    inv = M.reciprocal(M.mul(a, 8.0))
    for k in range(1, 6):
        term = term * ((2 * k - 1) ** 2 - nu) / k * inv
        total = total + term
    return M.mul(total, M.rsqrt(M.mul(a, 2 * math.pi)))


def _i0e64(x: Tensor) -> Tensor:
    a = M.abs(x)
    big = M.gt(a, 700.0)
    direct = M.mul(M.i0(M.where(big, 0.0, a)), M.exp(M.neg(a)))
    return M.where(big, _scaled_large(M.where(big, a, 700.0), 0.0), direct)


def _i1e64(x: Tensor) -> Tensor:
    a = M.abs(x)
    big = M.gt(a, 700.0)
    direct = M.mul(M.i1(M.where(big, 0.0, a)), M.exp(M.neg(a)))
    scaled = M.where(big, _scaled_large(M.where(big, a, 700.0), 1.0), direct)
    return M.mul(scaled, M.sign(x))


def i0e(input: Tensor) -> Tensor:
    """exp(-|x|) I0(x)."""
    x = _tensor(input, "i0e")
    _refuse_dtype("i0e", x.dtype)
    with no_grad():
        value = _i0e64(_f64(x))
    return _finish(I0E, value, _result_dtype(x), (x,))


def i1e(input: Tensor) -> Tensor:
    """exp(-|x|) I1(x)."""
    x = _tensor(input, "i1e")
    _refuse_dtype("i1e", x.dtype)
    with no_grad():
        value = _i1e64(_f64(x))
    return _finish(I1E, value, _result_dtype(x), (x,))


def _i0e_backward(node, g):
    x, out = node.saved_tensors
    return (g * (i1e(x) - M.sign(x) * out),)


def _i1e_backward(node, g):
    x, out = node.saved_tensors
    zero = M.eq(x, 0)
    return (g * M.where(zero, 0.5, i0e(x) - out * (M.sign(x) + M.reciprocal(M.where(zero, 1.0, x)))),)


I0E, I1E = _formula("special_i0e", _i0e_backward), _formula("special_i1e", _i1e_backward)


# -- incomplete gamma and Hurwitz zeta ------------------------------------------------------------
def _binary_kernel_op(name: str, a, x, position_names=("input", "other")) -> tuple:
    if not isinstance(a, Tensor) and not isinstance(x, Tensor):
        raise TypeError(f"special_{name}() received an invalid combination of arguments - got "
                        f"({type(a).__name__}, {type(x).__name__}): at least one argument must be a Tensor")
    a, x = _tensor(a, name, position_names[0], 1), _tensor(x, name, position_names[1], 2)
    return a, x, _result_dtype(a, x)


def _kernel_value(name: str, inputs: tuple, dtype: dt.dtype, node: str | None = None) -> Tensor:
    """special_<name>'s kernel (float64) on `inputs`, its result in `dtype`; a kernel with a gradient has its
    record's node (named `node`) on that result."""
    rec = KERNELS[name]
    if dtype is dt.float64:
        return rec(inputs, node=node)
    value = rec(tuple([t.detach() for t in inputs]) if rec.backward is not None else inputs)
    out = copies.convert(value, dtype)
    rec.attach(inputs, (out,), node=node)
    return out


def _igamma(name: str, input, other, upper: bool) -> Tensor:
    for arg, position, value in (("input", 1, input), ("other", 2, other)):
        if not isinstance(value, Tensor):  # torch's schema takes no Python number here
            raise TypeError(f"{name}(): argument '{arg}' (position {position}) must be Tensor, not "
                            f"{type(value).__name__}")
    a, x, dtype = _binary_kernel_op(name, input, other)
    _refuse_dtype(name, _common(a, x), ints=True)
    return _kernel_value(name, (a, x), dtype, name)


def _igamma_backward(name: str, upper: bool):
    def backward(node, g):
        a, x, _ = node.saved_tensors
        if a._requires_grad:
            raise NotImplementedError(f"the derivative for '{name}: input' is not implemented.")
        density = M.exp((a - 1) * M.log(x) - x - M.lgamma(a))
        return None, _reduce_to(-g * density if upper else g * density, x)
    return backward


def gammainc(input, other) -> Tensor:
    """The regularized lower incomplete gamma function P(input, other)."""
    return _igamma("igamma", input, other, upper=False)


def gammaincc(input, other) -> Tensor:
    """The regularized upper incomplete gamma function Q(input, other)."""
    return _igamma("igammac", input, other, upper=True)


igamma, igammac = gammainc, gammaincc
METHODS.update(igamma=gammainc, igammac=gammaincc, igamma_=lambda self, other: self.copy_(gammainc(self, other)),
               igammac_=lambda self, other: self.copy_(gammaincc(self, other)))


def zeta(input, other) -> Tensor:
    """The Hurwitz zeta function sum_k (other + k)^-input."""
    x, q, dtype = _binary_kernel_op("zeta", input, other, ("self", "other"))
    _refuse_dtype("zeta", _common(x, q), halves=True)
    return _kernel_value("zeta", (x, q), dtype)


def _zeta_backward(node, g):
    x, q, _ = node.saved_tensors
    if x._requires_grad:
        raise NotImplementedError("the derivative for 'zeta' is not implemented.")
    return None, _reduce_to(-g * x * zeta(x + 1, q), q)


# -- functions PyTorch gives no gradient: one NumPy kernel each ----------------------------------
def _no_grad_op(name: str, *args) -> Tensor:
    tensors = tuple([_tensor(a, name, ("input", "n")[min(i, 1)], i + 1) for i, a in enumerate(args)])
    _refuse_dtype(name, tensors[0].dtype if len(tensors) == 1 else _common(*tensors), halves=True)
    return _kernel_value(name, tensors, _result_dtype(*tensors))


def _unary(name: str):
    def fn(input: Tensor) -> Tensor:
        return _no_grad_op(name, input)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name} (no gradient, as in PyTorch)."
    return fn


def _polynomial(name: str):
    def fn(input, n) -> Tensor:
        if not isinstance(input, Tensor) and not isinstance(n, Tensor):
            raise TypeError(f"special_{name}(): argument 'x' (position 1) must be Tensor, not {type(input).__name__}")
        return _no_grad_op(name, input, n)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"torch.special.{name}: the degree-n polynomial at x, by its three-term recurrence."
    return fn


UNARY_KERNELS = ("bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i0", "modified_bessel_i1",
                 "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
                 "scaled_modified_bessel_k1", "spherical_bessel_j0", "airy_ai")
for _name in UNARY_KERNELS:
    globals()[_name] = _unary(_name)
for _name in K.POLYNOMIALS:
    globals()[_name] = _polynomial(_name)


def _value_shapes(inputs: tuple, attrs) -> list:
    """A special kernel's value: float64, in the inputs' broadcast shape (the front end rounds it after)."""
    return [(broadcast_shapes(*[t._v.shape for t in inputs]), dt.float64)]


def _kernel(fn):
    def kernel(ins, outs, attrs):
        outs[0][...] = fn(*[a.astype("float64") for a in ins])
    return kernel


# special_<name>: one NumPy kernel each; the incomplete gammas and zeta carry torch's gradient in the second input
_SAVED = ("input0", "input1", "output0")
KERNELS = {name: Primitive("special_" + name, _value_shapes, cpu=_kernel(getattr(K, name)), cuda=None)
           for name in UNARY_KERNELS + tuple(K.POLYNOMIALS)}
KERNELS.update((name, Primitive("special_" + name, _value_shapes, cpu=_kernel(getattr(K, name)), cuda=None,
                                backward=backward, saved=_SAVED))
               for name, backward in (("igamma", _igamma_backward("igamma", False)),
                                      ("igammac", _igamma_backward("igammac", True)), ("zeta", _zeta_backward)))

SPECIAL = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", *K.POLYNOMIALS, "digamma", "entr", "erf",
           "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc", "gammaln", "i0", "i0e", "i1",
           "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "modified_bessel_i0",
           "modified_bessel_i1", "modified_bessel_k0", "modified_bessel_k1", "multigammaln", "ndtr", "ndtri",
           "polygamma", "psi", "round", "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "sinc",
           "softmax", "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]
_ = logsumexp  # re-exported through SPECIAL
