"""Samplers: what each random op computes from its generator's stream, declared once in the table SAMPLERS,
the kernel that runs a sampler into its output, and the helpers that queue it and record its node.

A sampler takes (rng, shape, dtype, inputs, *params) and returns values the kernel copies (casts) into the
output; the public ops (sampling.py) check their arguments at the call and hand a sampler's name and
parameters to `_sample` (a fresh tensor) or `_sample_inplace`.
"""
from __future__ import annotations

import numpy as np

from ...autograd.graph import needs_grad
from ...autograd.view_inplace import write_inplace
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..factories.creation import zeros_like
from ..elementwise.plans import check_leaf_inplace
from ..dispatch.factory_args import FLOAT_DIGITS, write_out
from ..movement import many_dims
from . import plans as random_plans
from ..dispatch.mem_overlap import check_out
from .rng import generator_for, philox
from ..complex_numbers.half import fitted


# -- samplers: run in kernels, return values that are copied (cast) into the output -----------------------
_UNIT_BITS = {dt.float16.np: FLOAT_DIGITS[dt.float16], dt.bfloat16.np: FLOAT_DIGITS[dt.bfloat16]}


def _work(dtype: np.dtype) -> np.dtype:
    """The precision samples are drawn in: double for float64 outputs, single for the rest."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _unit(rng, shape, dtype: np.dtype):
    """Uniform in [0, 1) with no more random bits than the output's mantissa holds (so never 1)."""
    if dtype == np.float64:
        return rng.random(shape)
    u = rng.random(shape, dtype=np.float32)
    bits = _UNIT_BITS.get(dtype)
    return u if bits is None else np.floor(u * (1 << bits)) / np.float32(1 << bits)


def _uniform(rng, shape, dtype, ins, low, high):
    return _unit(rng, shape, dtype) * (high - low) + low


def _normal(rng, shape, dtype, ins, mean, std):
    # mean / std are numbers, or None where the op passed that parameter as a tensor (in `ins`)
    work, tensors = _work(dtype), iter(ins)
    mean = np.asarray(next(tensors), work) if mean is None else mean
    if std is None:
        std = np.asarray(next(tensors), work)
        if not (std >= 0).all():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    return rng.standard_normal(shape, dtype=work) * std + mean


def _random(rng, shape, dtype, ins, low, high_inclusive, bare=False):
    return rng.integers(low, high_inclusive, size=shape, dtype=np.int64, endpoint=True)


_BAD_P = ("Expected p_in >= 0 && p_in <= 1 to be true, but got false.  (Could this error message be improved?  If so, "
          "please report an enhancement request to PyTorch.)")


def _refused_at_the_call(bad: Tensor, message: str) -> None:
    """torch checks a tensor parameter's values when the op is called (its kernel reads them there): read the
    verdict now (a sync on the parameter), so a program's `except RuntimeError` around the call sees the refusal
    (the kernel's own check would raise it only at a later sync point)."""
    if bool(bad.any()):
        raise RuntimeError(message)


def _bernoulli(rng, shape, dtype, ins, p=None):
    if p is None:
        p = np.asarray(ins[0], np.float64)
        if not ((p >= 0) & (p <= 1)).all():
            raise RuntimeError(_BAD_P)
    return rng.random(shape) < p


def _exponential(rng, shape, dtype, ins, lambd):
    return rng.standard_exponential(shape, dtype=_work(dtype)) / lambd


def _geometric(rng, shape, dtype, ins, p):
    return rng.geometric(p, shape)


def _log_normal(rng, shape, dtype, ins, mean, std):
    return np.exp(rng.standard_normal(shape, dtype=_work(dtype)) * std + mean)


def _cauchy(rng, shape, dtype, ins, median, sigma):
    return np.tan(np.pi * (rng.random(shape) - 0.5)) * sigma + median


def _randperm(rng, shape, dtype, ins):
    return rng.permutation(shape[0])


def _multinomial(rng, shape, dtype, ins, num_samples, replacement):
    probs = np.asarray(ins[0], np.float64)
    rows = probs.reshape(-1, probs.shape[-1])
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    totals = rows.sum(axis=1)
    if (totals <= 0).any():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if replacement:  # inverse CDF; side='right' never lands on a zero-probability category
        cdf = np.cumsum(rows, axis=1)
        draws = rng.random((len(rows), num_samples)) * totals[:, None]
        last_positive = rows.shape[1] - 1 - np.argmax(rows[:, ::-1] > 0, axis=1)
        picks = np.stack([np.searchsorted(c, d, side="right") for c, d in zip(cdf, draws)]) if len(rows) \
            else np.zeros((0, num_samples), np.int64)
        picks = np.minimum(picks, last_positive[:, None])
    else:  # exponential races: the categories with the smallest E/p arrive first, all distinct
        keys = rows / rng.standard_exponential(rows.shape)
        picks = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    return picks.reshape(shape)


def _rrelu_noise(rng, shape, dtype, ins, lower, upper):
    return np.where(np.asarray(ins[0]) <= 0, rng.random(shape) * (upper - lower) + lower, 1.0)


def _poisson(rng, shape, dtype, ins):
    rates = np.asarray(ins[0], np.float64)
    if not (rates >= 0).all():
        raise RuntimeError("invalid Poisson rate, expected rate to be non-negative")
    huge = rates > 1e18  # beyond NumPy's sampler; the rate itself is the only sensible answer
    values = np.asarray(rng.poisson(np.where(huge, 0.0, rates)), np.float64)  # a 0-d rate gives a Python int
    return np.where(huge, rates, values)


SAMPLERS = {"uniform_": _uniform, "normal_": _normal, "normal": _normal, "random_": _random,
            "bernoulli_": _bernoulli, "bernoulli": _bernoulli, "exponential_": _exponential,
            "geometric_": _geometric, "log_normal_": _log_normal, "cauchy_": _cauchy, "randperm": _randperm,
            "multinomial": _multinomial, "poisson": _poisson, "rrelu_noise": _rrelu_noise}


def _part_dtype(dtype) -> np.dtype:
    """The NumPy dtype of a complex NumPy dtype's parts (complex32's float16 pairs included)."""
    return np.dtype(np.float16) if dtype == dt.COMPLEX32_NP else np.empty(0, dtype).real.dtype


def _complex_uniform(rng, shape, dtype, ins, low, high):
    """torch's: the real and imaginary parts each uniform on [low, high)."""
    pairs = _uniform(rng, shape + (2,), _part_dtype(dtype), ins, low, high)
    return pairs[..., 0] + 1j * pairs[..., 1]


def _complex_normal(rng, shape, dtype, ins, mean, std):
    """torch's: the real and imaginary parts each of variance std**2 / 2 (so E|z - mean|^2 = std**2); a number
    `mean` is the mean of both parts (normal_ on the real view), a tensor one the complex mean."""
    work, tensors = _work(_part_dtype(dtype)), iter(ins)
    mean = np.asarray(next(tensors)) if mean is None else complex(mean, mean)
    if std is None:
        std = np.asarray(next(tensors), work)
        if not (std >= 0).all():
            raise RuntimeError("normal expects all elements of std >= 0.0")
    pairs = rng.standard_normal(shape + (2,), dtype=work) * (std / np.sqrt(2))[..., None]
    return pairs[..., 0] + 1j * pairs[..., 1] + mean


_COMPLEX_SAMPLERS = {"uniform_": _complex_uniform, "normal_": _complex_normal, "normal": _complex_normal}


def _random_kernel(ins, outs, attrs) -> None:
    name, source, params = attrs
    out = outs[0]
    samplers = _COMPLEX_SAMPLERS if out.dtype.kind == "c" or out.dtype == dt.COMPLEX32_NP else SAMPLERS

    def run(rng) -> None:
        values = samplers[name](rng, out.shape, out.dtype, ins, *params)
        with np.errstate(over="ignore", invalid="ignore"):
            np.copyto(out, fitted(out, values), casting="unsafe")

    if source[0] == "philox":
        run(philox(source[1], source[2]))
    else:  # a CPU generator's mt19937 words, taken at dispatch
        random_plans.fill(name, out, source, ins, params, run)


def _written_only(inputs: tuple, attrs) -> list:
    raise TypeError(f"{attrs[0]}: a sampler writes into an existing tensor (its record's write), it makes none")


def declare(name: str) -> Primitive:
    """A sampler's record: `_random_kernel` running SAMPLERS[name] into the output it writes (attrs: the
    sampler's name, its stream and parameters); a sample's node is one of the records below."""
    return Primitive(name, _written_only, cpu=_random_kernel, cuda=None)


RECORDS = {name: declare(name) for name in SAMPLERS}


def _sample(sampler: str, out: Tensor, params: tuple, generator, ins: tuple = (), fn: str | None = None) -> Tensor:
    """Queue `sampler` writing into `out`, on the next stream of the generator (claimed now)."""
    check_out(out)  # an expanded tensor: torch's sampling refuses it
    gen = generator_for(fn or sampler, generator, out.device)
    # more dims than a NumPy array holds: draw into the same memory seen in fewer dims
    target = many_dims.collapsed(out) if len(out._v.shape) > many_dims.MAX_NDIM and not ins else out
    if gen.device.type == "cpu":  # torch's mt19937 stream: the op's words are taken now
        source = gen.draw(lambda engine: random_plans.plan(sampler, target, params, ins, engine))
    else:
        source = ("philox",) + gen.next_stream()
    # multinomial checks its probabilities in the kernel: a failure names the caller's line
    RECORDS[sampler].write(ins, (target,), (sampler, source, params), checks_data=sampler == "multinomial")
    return out


def _zero_backward(node, g):
    return tuple(g.new_zeros(shape, dtype=d) for shape, d in node.attrs)


def _no_derivative(node, g):
    raise RuntimeError("derivative for aten::bernoulli is not implemented")


def _param_meta(inputs: tuple, attrs) -> tuple:
    return tuple([(t._v.shape, t.dtype) for t in inputs])


# a sample's link to the tensors it was drawn with (named per call: NormalBackward0, PoissonBackward0...): a zero
# gradient, or none (bernoulli(input, p): torch's NotImplemented node)
SAMPLED = Primitive("sampled", None, cpu=None, backward=_zero_backward, node_attrs=_param_meta)
SAMPLED_NO_DERIVATIVE = Primitive("sampled_no_derivative", None, cpu=None, backward=_no_derivative,
                                  node_attrs=_param_meta)


def _check_out(fn: str, params: tuple, out) -> None:
    if out is not None:
        check_out(out)  # an expanded out=, refused before anything is drawn
    if out is not None and needs_grad(params):
        raise RuntimeError(f"{fn}(): functions with out=... arguments don't support automatic differentiation, but "
                           "one of the arguments requires grad.")


def _from_params(name: str, result: Tensor, params: tuple, rec: Primitive = SAMPLED) -> Tensor:
    """Link a sample to the tensors it was drawn with, as PyTorch does: their gradient is zero (sampling is
    not reparameterized; rsample-style gradients are built from randn by the caller)."""
    if result.dtype.is_floating_point:
        rec.attach(params, (result,), node=name)
    return result


def _sample_inplace(sampler: str, out: Tensor, params: tuple, generator, node: str, ins: tuple = (),
                    fn: str | None = None) -> Tensor:
    """`_sample` for an in-place method: in grad mode, torch's refusal on a leaf (or a view made under no_grad)
    and a node (`node`, e.g. NormalBackward0) whose gradient is zero for `out`'s old values and for `ins`."""
    if not needs_grad((out,) + ins):
        return _sample(sampler, out, params, generator, ins, fn)
    check_leaf_inplace(out)
    return write_inplace(out, _sample_recorded, sampler, params, generator, node, ins, fn)


def _sample_recorded(out: Tensor, sampler: str, params: tuple, generator, node: str, ins: tuple, fn) -> Tensor:
    _sample(sampler, out, params, generator, ins, fn)
    if out.dtype.is_floating_point:
        SAMPLED_INPLACE.attach((out,) + ins, (out,), node=node)
    return out


def _zero_grads(node, g) -> tuple:
    zero = zeros_like(g)  # (the engine sums it to each input's shape)
    return (zero,) * len(node.next_functions)


# an in-place sample's node on the tensor it wrote (named per call: UniformBackward0, RandomBackward1...), linked
# to its old values and its tensor parameters: a zero gradient for each
SAMPLED_INPLACE = Primitive("sampled_inplace", None, cpu=None, backward=_zero_grads)


def _fresh(fn: str, sampler: str, params: tuple, target: Tensor, requires_grad: bool, generator,
           ins: tuple = (), out=None) -> Tensor:
    """Fill a new tensor with samples (a creation, so its version stays 0); copy it to `out=` if given."""
    if out is not None:
        check_out(out)  # before drawing: an expanded out= consumes no random numbers
        if out._v.shape == target._v.shape and out.dtype is target.dtype and out.device == target.device \
                and not needs_grad((out,)):
            # torch samples into out= itself: its layout decides the draw order (and normal_'s kernel)
            return _sample(sampler, out, params, generator, ins, fn)
    _sample(sampler, target, params, generator, ins, fn)
    target._v.blob.version = 0
    target.requires_grad = requires_grad
    return write_out(target, out)


