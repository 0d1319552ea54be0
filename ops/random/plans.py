"""Random ops on a CPU generator, as torch runs them: at dispatch, `plan` takes from the generator's mt19937
engine exactly the words torch's kernel would (and updates the cached Box-Muller normal as torch's
generator does); the kernel, `fill`, turns those words into the output (random_transforms.py).

poisson, the standard gamma and binomial, whose draws depend on the values drawn, are sampled at
dispatch (random_rejection.py). A sampler not written as torch's (von Mises) takes two words as the
seed of a Philox stream: its values are not torch's, and neither is the stream after it (torch takes a
data-dependent number of words there).

bernoulli_ with a number p on a build with MKL and an Intel CPU (torch's dropout there) seeds MKL's VSL
stream with ONE 32-bit word and draws from VSL: those values cannot be reproduced, so tidal takes that one
word too (every later draw is still torch's) and draws its own values from a Philox stream keyed by it.
"""
from __future__ import annotations

import math

import numpy as np

from ...tensor import dtype as dt
from . import rejection as rr
from . import transforms as rt
from ..complex_numbers.half import fitted
from .rng import philox

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)


def _vendor_is_intel() -> bool:
    """Whether torch would take its MKL bernoulli path here (cpuinfo's vendor of processor 0 is Intel)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            for line in info:
                if line.startswith("vendor_id"):
                    return "GenuineIntel" in line
    except OSError:
        pass
    import platform
    return "intel" in platform.processor().lower()


MKL_BERNOULLI = _vendor_is_intel()


def _parts(dtype: dt.dtype) -> tuple:
    """(NumPy dtype the samples are drawn in, draws per element): a complex dtype draws its real view."""
    if dtype.is_complex:
        return (np.dtype(np.float16) if dtype is dt.complex32 else np.empty(0, dtype.np).real.dtype), 2
    return np.dtype(dtype.np), 1


def _scalar_normals(mt, count: int) -> tuple:
    """Words and the cached normal for `count` normal_distribution<double> draws; updates the generator's."""
    cached = mt.next_double_normal
    words = mt.words(4 * rt.normal_pairs(count, cached is not None))
    mt.next_double_normal = rt.normal_scalar_next_cache(words, count, cached)
    return words, cached


_REJECTION = {"poisson": rr.poisson, "_standard_gamma": rr.standard_gamma, "binomial": rr.binomial}


def plan(sampler: str, target, params: tuple, ins: tuple, mt) -> tuple:
    """("mt", words, extra): the words the op takes from the engine `mt`, now, and what its kernel needs."""
    part, per = _parts(target.dtype)
    n = target.numel() * per
    if sampler == "uniform_":
        return "mt", mt.words(rt.word_count(part, n)), None
    if sampler in ("normal_", "normal"):
        if n >= 16 and target.is_contiguous():  # ATen's normal_fill; else its serial kernel
            return "mt", mt.words(rt.normal_fill_words(part, n)), "fill"
        return ("mt",) + _scalar_normals(mt, n)
    if sampler == "log_normal_":
        return ("mt",) + _scalar_normals(mt, n)
    if sampler == "random_":
        return "mt", mt.words(n * rt.random_words(part, *params)), None
    if sampler == "bernoulli_":
        return ("mt", mt.words(1), "vsl") if MKL_BERNOULLI else ("mt", mt.words(2 * n), None)
    if sampler == "bernoulli":
        return "mt", mt.words(n * (2 if ins[0].dtype is dt.float64 else 1)), None
    if sampler in ("exponential_", "cauchy_", "geometric_"):
        return "mt", mt.words(2 * n), None
    if sampler == "randperm":
        return "mt", mt.words(rt.randperm_words(target.numel())), None
    if sampler == "multinomial":
        if not params[1] or params[0] == 1:  # torch's exponential race: exponential_ on the probs
            return "mt", mt.words(2 * ins[0].numel()), None
        return "mt", mt.words(2 * target.numel()), "cdf"  # one double uniform per sample
    if sampler == "rrelu_noise":  # two words per element <= 0: which those are is read now
        below = np.asarray(ins[0].detach()._host_array()) <= 0
        return "values", rt.rrelu_noise(mt.words(2 * int(below.sum())), below, *params), None
    if sampler in _REJECTION:  # the draws depend on the values drawn: sampled here (reads the parameters)
        return "values", _REJECTION[sampler](*(np.asarray(t.detach()._host_array()) for t in ins), mt), None
    return "seeded", mt.words(2), None


def _store(out: np.ndarray, values: np.ndarray) -> None:
    """Write values drawn in ATen's iteration order (memory order) into `out`."""
    view = rt.iteration_view(out)
    with np.errstate(over="ignore", invalid="ignore"):
        np.copyto(view, fitted(view, np.asarray(values).reshape(view.shape)), casting="unsafe")


def _complex(values: np.ndarray) -> np.ndarray:
    pairs = values.astype(np.result_type(values.dtype, _F32)).reshape(-1, 2)
    return pairs[:, 0] + 1j * pairs[:, 1]


def fill(sampler: str, out: np.ndarray, source: tuple, ins: tuple, params: tuple, fallback) -> None:
    """The kernel: turn the planned words into `out`'s values. `fallback(rng)` runs the sampler on a NumPy
    generator for the "seeded" and "vsl" plans."""
    kind, words, extra = source
    if kind == "values":  # (a fresh contiguous output: sampled in row-major order)
        _store(out, words)
        return
    if kind == "seeded" or extra == "vsl":
        seed = int(words[0]) | (int(words[1]) << 32) if len(words) > 1 else int(words[0])
        fallback(philox(seed, 0))
        return
    is_complex = out.dtype.kind == "c" or out.dtype == dt.COMPLEX32_NP
    part = (np.dtype(np.float16) if out.dtype == dt.COMPLEX32_NP else out.real.dtype) if is_complex else out.dtype
    n = out.size * (2 if is_complex else 1)
    if sampler == "bernoulli":  # p, broadcast to the output, read in the output's iteration order
        p = np.broadcast_to(np.asarray(ins[0]), out.shape).transpose(rt.iteration_axes(out))
        ins = (np.ascontiguousarray(p).reshape(-1),)
    values = _values(sampler, part, n, words, extra, ins, params, is_complex)
    if sampler == "multinomial":
        out[...] = values
        return
    values = _complex(values) if is_complex else values
    if sampler == "normal" and None in params:  # a fresh contiguous output: its iteration order is row-major
        values = _with_tensors(values.reshape(out.shape), *params, ins)
    _store(out, values)


def _values(sampler, part, n, words, extra, ins, params, is_complex):
    if sampler == "uniform_":
        return rt.uniform(words, part, *params)
    if sampler in ("normal_", "normal"):
        mean, std = params
        tensors = sampler == "normal" and (mean is None or std is None)
        if tensors:
            fill_mean, fill_std = 0.0, (std if std is not None else 1.0)
        else:
            fill_mean, fill_std = mean, std
        if is_complex:
            fill_std = fill_std / math.sqrt(2)
        if extra == "fill":
            values = rt.normal_fill(words, part, n, fill_mean, fill_std)
        else:
            raw, _ = rt.normal_scalar(words, n, extra, fill_mean, fill_std)
            values = rt.to_dtype(raw, part)
        return values
    if sampler == "log_normal_":
        raw, _ = rt.normal_scalar(words, n, extra, *params)
        return rt.to_dtype(rt.log_normal(raw), part)
    if sampler == "random_":
        return rt.random_ints(words, part, *params)
    if sampler == "bernoulli_":
        return rt.bernoulli_scalar(words, params[0])
    if sampler == "bernoulli":
        return rt.bernoulli_tensor(words, ins[0])
    if sampler == "exponential_":
        return rt.to_dtype(rt.exponential(words, params[0]), part)
    if sampler == "cauchy_":
        return rt.to_dtype(rt.cauchy(words, *params), part)
    if sampler == "geometric_":
        return rt.geometric(words, params[0])
    if sampler == "randperm":
        return rt.randperm(words, n)
    if sampler == "multinomial":
        if extra == "cdf":
            return _multinomial_cdf(words, np.asarray(ins[0]), params[0])
        return _multinomial(words, np.asarray(ins[0]), params[0])
    raise AssertionError(sampler)


def _with_tensors(values, mean, std, ins):
    """torch's normal(Tensor...): the fill, then `mul_(std)` and `add_(mean)` in the output's dtype."""
    tensors = iter(ins)
    mean_t = next(tensors) if mean is None else None
    std_t = next(tensors) if std is None else None
    if std_t is not None:
        values = (values * np.asarray(std_t)).astype(values.dtype)
    if mean_t is not None:
        return (values + np.asarray(mean_t)).astype(values.dtype)
    return (values + values.dtype.type(mean)).astype(values.dtype)


def _multinomial(words: np.ndarray, probs: np.ndarray, num_samples: int) -> np.ndarray:
    """torch's fast path (no replacement, or one sample): q ~ Exp(1) per category, then the top p / q."""
    if not np.isfinite(probs).all() or (probs < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    q = np.empty_like(probs)  # (torch's empty_like(self): the draws follow the probabilities' memory order)
    _store(q, rt.to_dtype(rt.exponential(words, 1.0), probs.dtype))
    with np.errstate(divide="ignore", invalid="ignore"):
        keys = (probs / q).astype(probs.dtype)
    if num_samples == 1:
        return np.argmax(keys, axis=-1)[..., None]
    return np.argsort(-keys, axis=-1, kind="stable")[..., :num_samples]


def _multinomial_cdf(words: np.ndarray, probs: np.ndarray, num_samples: int) -> np.ndarray:
    """torch's sampling with replacement: per row the running sum of the weights (in the weights' precision,
    float for the reduced types) divided by the total, its last entry set to 1, and per sample the first
    entry not below a double uniform."""
    rows = probs.reshape(-1, probs.shape[-1])
    if not np.isfinite(rows).all() or (rows < 0).any():
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    work = rows.dtype if rows.dtype in (_F32, _F64) else _F32
    uniforms = rt.unit(words, _F64).reshape(len(rows), num_samples)
    picks = np.empty((len(rows), num_samples), np.int64)
    for i, row in enumerate(rows.astype(work)):
        cdf = np.cumsum(row, dtype=work)  # (a running sum, one addition after another, as ATen's loop)
        total = cdf[-1]
        if not total > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        cdf = (cdf / total).astype(work)
        cdf[-1] = 1
        picks[i] = np.searchsorted(cdf.astype(_F64), uniforms[i], side="left")
    return picks.reshape(probs.shape[:-1] + (num_samples,))
