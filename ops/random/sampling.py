"""Random sampling: rand, randn, randint, randperm, normal, bernoulli, multinomial, poisson,
their `_like` forms, and the in-place samplers (uniform_, normal_, random_, bernoulli_, ...).

Each op validates its arguments at the call (PyTorch's errors), takes what it needs from its
generator there (a CPU generator: torch's mt19937 words, random_plans.py; another device's: the
next Philox stream, rng.py), and queues one kernel that turns them into the output. Samplers are
declared once, in the table SAMPLERS (samplers.py); every random op is a sampler and its parameters.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.kernel_launch import same_device
from ..elementwise.plans import torch_name
from ..dispatch.factory_args import (CHECKED_NAME, FLOAT_DIGITS, FLOAT_MAX, TYPEMETA_NAME, check_requires_grad,
                                     check_shape, device_arg, dtype_arg, empty_like_tensor, fmt, int_arg, is_int,
                                     number_arg, reject_extra, out_dtype, size_tuple, size_varargs, tensor_arg,
                                     write_out)
from ..movement.view_grads import overload
from .rng import Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state
from ..dispatch.limited_dtypes import check as check_limited
from .samplers import (_BAD_P, SAMPLED_NO_DERIVATIVE, _check_out, _fresh, _from_params, _refused_at_the_call,
                       _sample_inplace)

__all__ = ["Generator", "default_generator", "manual_seed", "seed", "initial_seed", "get_rng_state",
           "set_rng_state", "rand", "randn", "randint", "randperm", "normal", "bernoulli", "multinomial",
           "poisson", "rand_like", "randn_like", "randint_like"]
METHODS: dict = {}

_UNSET = object()


# -- parameter checks, shared by the in-place methods and the creation functions ---------------------------
def _not_implemented(kernel: str, dtype: dt.dtype) -> NotImplementedError:
    return NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(dtype)}'")


def _float_arg(fn: str, name: str, value) -> float:
    return float(number_arg(fn, name, value))


def _uniform_params(dtype: dt.dtype, low, high) -> tuple:
    low, high = _float_arg("uniform_", "from", low), _float_arg("uniform_", "to", high)
    if not dtype.is_floating_point:
        raise _not_implemented("check_uniform_bounds", dtype)
    # a complex dtype: both parts are drawn in [low, high), so its real dtype's bounds apply
    limit, name = FLOAT_MAX[dtype.to_real()], TYPEMETA_NAME[dtype.to_real()]  # (complex64: 'float', as torch)
    if not -limit <= low <= limit:
        raise RuntimeError(f"from is out of bounds for {name}")
    if not -limit <= high <= limit:
        raise RuntimeError(f"to is out of bounds for {name}")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={fmt(low)} > to={fmt(high)}")
    if high - low > limit:
        raise RuntimeError(f"uniform_ expects to-from <= std::numeric_limits<{torch_name(dtype)}>::max(), but found "
                           f"to={fmt(high)} and from={fmt(low)} which result in to-from to exceed the limit")
    return low, high


_COMPLEX_TYPEMETA = {dt.complex32: "c10::complex<c10::Half>", dt.complex64: "c10::complex<float>",
                     dt.complex128: "c10::complex<double>"}


def _continuous(dtype: dt.dtype) -> bool:
    """Whether a real-valued distribution may fill `dtype` (a float; complex dtypes count as floating in tidal)."""
    return dtype.is_floating_point and not dtype.is_complex


def _check_std(std: float) -> None:
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {fmt(std)}")


def _normal_params(dtype: dt.dtype, mean, std) -> tuple:
    mean, std = _float_arg("normal_", "mean", mean), _float_arg("normal_", "std", std)
    _check_std(std)
    if not dtype.is_floating_point:
        raise _not_implemented("normal_kernel_cpu", dtype)
    return mean, std


def _integer_bounds(dtype: dt.dtype) -> tuple:
    if dtype.is_floating_point:
        return -FLOAT_MAX[dtype], FLOAT_MAX[dtype]
    if dtype is dt.bool_:
        return 0, 1
    info = np.iinfo(dtype.np)
    return int(info.min), int(info.max)


def _random_params(fn: str, dtype: dt.dtype, low, high) -> tuple:
    """[low, high) as PyTorch's random_ checks it; high None means up to the dtype's largest integer."""
    low = int_arg(fn, "from", low)
    if dtype.is_complex:
        if high is None:  # random_(): the kernel's own refusal (a range is checked first)
            raise _not_implemented("random_kernel_cpu", dtype)
        raise RuntimeError("check_random_bounds handles only integral, floating-point and boolean types")
    if high is None:
        high_inclusive = (1 << FLOAT_DIGITS[dtype]) if dtype.is_floating_point else _integer_bounds(dtype)[1]
    else:
        high = int_arg(fn, "to", high)
        if low >= high:
            raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
        high_inclusive = high - 1
    lo, hi = _integer_bounds(dtype)
    for value, what in ((low, "from"), (high_inclusive, "to - 1")):
        if not lo <= value <= hi:
            raise RuntimeError(f"{what} is out of bounds for {TYPEMETA_NAME[dtype]}")
    return low, high_inclusive


def _expand_check(p: Tensor, target: tuple) -> None:
    src = p._v.shape
    if len(src) > len(target):
        raise RuntimeError(f"expand(tidal.{torch_name(p.dtype)}Tensor{{{list(src)}}}, size={list(target)}): the number "
                           f"of sizes provided ({len(target)}) must be greater or equal to the number of dimensions "
                           f"in the tensor ({len(src)})")
    for k in range(1, len(src) + 1):
        if src[-k] != 1 and src[-k] != target[-k]:
            raise RuntimeError(f"The expanded size of the tensor ({target[-k]}) must match the existing size "
                               f"({src[-k]}) at non-singleton dimension {len(target) - k}.  Target sizes: "
                               f"{list(target)}.  Tensor sizes: {list(src)}")


# -- in-place samplers (Tensor methods) ---------------------------------------------------------------------
def _from_keyword(op: str, from_, extra: dict):
    """torch's keyword `from` (a Python keyword, so passed as **{"from": ...}) in place of `from_`."""
    if "from" in extra:
        from_ = extra.pop("from")
    if extra:
        raise TypeError(f"{op}() got an unexpected keyword argument '{next(iter(extra))}'")
    return from_


def uniform_(self: Tensor, from_=0.0, to=1.0, *, generator=None, **from_keyword) -> Tensor:
    """Fill with samples from the uniform distribution on [from, to)."""
    check_limited("uniform_", self.dtype)
    from_ = _from_keyword("uniform_", from_, from_keyword)
    return _sample_inplace("uniform_", self, _uniform_params(self.dtype, from_, to), generator, "uniform")


def normal_(self: Tensor, mean=0.0, std=1.0, *, generator=None) -> Tensor:
    """Fill with samples from the normal distribution N(mean, std**2)."""
    check_limited("normal_", self.dtype)
    return _sample_inplace("normal_", self, _normal_params(self.dtype, mean, std), generator, "normal")


def random_(self: Tensor, from_=_UNSET, to=_UNSET, *, generator=None, **from_keyword) -> Tensor:
    """Fill with integers: random_() over the dtype's range, random_(to) in [0, to), random_(from, to)
    (to=None: up to the dtype's largest integer)."""
    from_ = _from_keyword("random_", from_, from_keyword)
    if to is _UNSET:
        low, high = (0, None) if from_ is _UNSET else (0, from_)
    else:
        low, high = (0 if from_ is _UNSET else from_), to
    bare = to is _UNSET and from_ is _UNSET  # (torch draws differently without bounds: random_words)
    node = overload("random", 2 if bare else 1 if to is _UNSET else 0)
    params = _random_params("random_", self.dtype, low, high) + (bare,)
    return _sample_inplace("random_", self, params, generator, node)


def bernoulli_(self: Tensor, p=0.5, *, generator=None) -> Tensor:
    """Fill with 0/1 samples, 1 with probability `p` (a number, or a tensor broadcast to this shape)."""
    if isinstance(p, Tensor):
        if not p.dtype.is_floating_point:
            raise _not_implemented("bernoulli_tensor_cpu_p_", p.dtype)
        if self.dtype.is_complex:
            raise _not_implemented("bernoulli_tensor_cpu_self_", self.dtype)
        check_limited("bernoulli_(p tensor)", self.dtype)
        _expand_check(p, self._v.shape)
        _refused_at_the_call(~((p >= 0) & (p <= 1)), _BAD_P)
        return _sample_inplace("bernoulli", self, (), generator, overload("bernoulli", 1), (p,), "bernoulli_")
    p = _float_arg("bernoulli_", "p", p)
    check_limited("bernoulli_", self.dtype)
    if not 0 <= p <= 1:
        raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={fmt(p)}")
    if self.dtype.is_complex:
        raise _not_implemented("bernoulli_scalar_cpu_", self.dtype)
    return _sample_inplace("bernoulli_", self, (p,), generator, overload("bernoulli", 2))


def exponential_(self: Tensor, lambd=1.0, *, generator=None) -> Tensor:
    """Fill with samples from the exponential distribution of rate `lambd`."""
    lambd = _float_arg("exponential_", "lambd", lambd)
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={fmt(lambd)}")
    if not _continuous(self.dtype):
        raise RuntimeError("Exponential distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified {torch_name(self.dtype)}")
    return _sample_inplace("exponential_", self, (lambd,), generator, "exponential")


def geometric_(self: Tensor, p, *, generator=None) -> Tensor:
    """Fill with the number of Bernoulli(p) trials up to the first success (1, 2, ...)."""
    p = _float_arg("geometric_", "p", p)
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={fmt(p)}")
    if self.dtype is dt.bool_ or self.dtype.is_complex:
        raise _not_implemented("geometric_cpu", self.dtype)
    return _sample_inplace("geometric_", self, (p,), generator, "geometric")


def log_normal_(self: Tensor, mean=1.0, std=2.0, *, generator=None) -> Tensor:
    """Fill with exp(N(mean, std**2)) samples."""
    mean, std = _float_arg("log_normal_", "mean", mean), _float_arg("log_normal_", "std", std)
    if not std > 0:
        raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={fmt(std)}")
    if not _continuous(self.dtype):
        raise _not_implemented("log_normal_cpu", self.dtype)
    return _sample_inplace("log_normal_", self, (mean, std), generator, "log_normal")


def cauchy_(self: Tensor, median=0.0, sigma=1.0, *, generator=None) -> Tensor:
    """Fill with samples from the Cauchy distribution centred on `median` with scale `sigma`."""
    median, sigma = _float_arg("cauchy_", "median", median), _float_arg("cauchy_", "sigma", sigma)
    if not sigma > 0:
        raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={fmt(sigma)}")
    if not _continuous(self.dtype):
        raise RuntimeError("Cauchy distribution is a continuous probability distribution. dtype must be a "
                           f"floating point but you specified "
                           f"{TYPEMETA_NAME.get(self.dtype) or _COMPLEX_TYPEMETA[self.dtype]}")
    return _sample_inplace("cauchy_", self, (median, sigma), generator, "cauchy")


METHODS.update(uniform_=uniform_, normal_=normal_, random_=random_, bernoulli_=bernoulli_,
               exponential_=exponential_, geometric_=geometric_, log_normal_=log_normal_, cauchy_=cauchy_)


# -- creation ------------------------------------------------------------------------------------------------
def _check_float8(sampler: str, dtype: dt.dtype) -> None:
    """torch's refusal of a float8 fill by its sampling kernel (the unsigned types are refused before this)."""
    if dtype in dt.FLOAT8:
        check_limited(sampler, dtype)


def rand(*size, generator=None, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
         pin_memory: bool = False, requires_grad: bool = False, **kwargs) -> Tensor:
    """Samples from the uniform distribution on [0, 1)."""
    shape = check_shape(size_varargs("rand", size, kwargs.pop("size", None)))
    reject_extra("rand", kwargs)
    dtype = out_dtype("rand", dtype_arg("rand", dtype), out) or dt.get_default_dtype()
    params = _uniform_params(dtype, 0.0, 1.0)
    check_requires_grad(dtype, requires_grad)
    _check_float8("uniform_", dtype)
    return _fresh("rand", "uniform_", params, Tensor._empty(shape, dtype, device_arg(device)), requires_grad,
                  generator, out=out)


def randn(*size, generator=None, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
          pin_memory: bool = False, requires_grad: bool = False, **kwargs) -> Tensor:
    """Samples from the standard normal distribution."""
    shape = check_shape(size_varargs("randn", size, kwargs.pop("size", None)))
    reject_extra("randn", kwargs)
    dtype = out_dtype("randn", dtype_arg("randn", dtype), out) or dt.get_default_dtype()
    params = _normal_params(dtype, 0.0, 1.0)
    check_requires_grad(dtype, requires_grad)
    _check_float8("normal_", dtype)
    return _fresh("randn", "normal_", params, Tensor._empty(shape, dtype, device_arg(device)), requires_grad,
                  generator, out=out)


def _randint_args(args: tuple, low, high, size) -> tuple:
    """(low, high, size) from randint's forms: (high, size), (low, high, size), keywords."""
    args = list(args)
    if size is None:
        if args and not is_int(args[-1]) and not isinstance(args[-1], (float, bool)):
            size = args.pop()
        elif len(args) in (2, 3):
            raise TypeError(f"randint(): argument 'size' (position {len(args)}) must be tuple of ints, "
                            f"not {type(args[-1]).__name__}")
        else:
            raise TypeError("randint() missing required argument 'size'")
        position = len(args) + 1
    else:
        position = None
    if len(args) == 2:
        low, high = args
    elif len(args) == 1:
        if high is None:
            high = args[0]
        else:
            low = args[0]
    elif args:
        raise TypeError(f"randint() takes at most 3 positional arguments ({len(args) + 1} given)")
    if high is None:
        raise TypeError("randint() missing required argument 'high'")
    return (0 if low is None else low), high, size_tuple("randint", size, position)


def randint(*args, size=None, low=None, high=None, generator=None, out=None, dtype: dt.dtype | None = None,
            layout=None, device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Integers drawn uniformly from [low, high): `randint(high, size)` or `randint(low, high, size)`."""
    low, high, shape = _randint_args(args, low, high, size)
    check_shape(shape)
    dtype = out_dtype("randint", dtype_arg("randint", dtype), out) or dt.int64
    params = _random_params("randint", dtype, low, high)
    check_requires_grad(dtype, requires_grad)
    return _fresh("randint", "random_", params, Tensor._empty(shape, dtype, device_arg(device)), requires_grad,
                  generator, out=out)


_RANDPERM_FLOAT_LIMIT = {dt.float16: (2049, "2049", "Half"), dt.float32: (2 ** 24 + 1, "2^24+1", "Float"),
                         dt.float64: (2 ** 53 + 1, "2^53+1", "Double")}


def randperm(n, *, generator=None, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
             pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """A random permutation of 0 .. n-1."""
    n = int_arg("randperm", "n", n, 1)
    check_shape((n,))
    dtype = out_dtype("randperm", dtype_arg("randperm", dtype), out) or dt.int64
    if dtype is dt.bool_:
        raise _not_implemented("randperm", dtype)
    check_limited("randperm", dtype)
    if dtype in _RANDPERM_FLOAT_LIMIT:
        limit, text, name = _RANDPERM_FLOAT_LIMIT[dtype]
        if n > limit:
            raise RuntimeError(f"n cannot be greater than {text} for {name} type.")
    elif dtype.category == dt.INT and n > 0 and n - 1 > np.iinfo(dtype.np).max:
        raise RuntimeError(f"value cannot be converted to type {CHECKED_NAME[dtype]} without overflow")
    check_requires_grad(dtype, requires_grad)
    return _fresh("randperm", "randperm", (), Tensor._empty((n,), dtype, device_arg(device)), requires_grad,
                  generator, out=out)


def _invalid_normal(got: str) -> TypeError:
    return TypeError(f"normal() received an invalid combination of arguments - got ({got}), but expected one of: "
                     "(Tensor mean, Tensor std), (Tensor mean, float std = 1), (float mean, Tensor std), "
                     "(float mean, float std, tuple of ints size)")


def normal(mean, std=_UNSET, size=None, *, generator=None, out=None, dtype: dt.dtype | None = None, layout=None,
           device=None, pin_memory: bool = False, requires_grad: bool = False) -> Tensor:
    """Samples from N(mean, std**2): mean and std are numbers (then `size` is required) or tensors."""
    tensors = [a for a in (mean, std) if isinstance(a, Tensor)]
    if not tensors:
        if size is None or std is _UNSET:
            raise _invalid_normal(", ".join(type(a).__name__ for a in (mean, std) if a is not _UNSET))
        shape = check_shape(size_tuple("normal", size, 3))
        dtype = out_dtype("normal", dtype_arg("normal", dtype), out) or dt.get_default_dtype()
        params = _normal_params(dtype, mean, std)
        check_requires_grad(dtype, requires_grad)
        return _fresh("normal", "normal_", params, Tensor._empty(shape, dtype, device_arg(device)), requires_grad,
                      generator, out=out)
    if size is not None or dtype is not None or device is not None or requires_grad:
        raise _invalid_normal("Tensor arguments with size, dtype, device or requires_grad")
    std = 1.0 if std is _UNSET else std
    if isinstance(std, Tensor) and std.dtype.is_complex:
        raise RuntimeError("normal expects standard deviation to be non-complex")
    if isinstance(std, Tensor) and std.numel():
        _refused_at_the_call(~(std >= 0), "normal expects all elements of std >= 0.0")  # (NaN too)
    if isinstance(mean, Tensor) and isinstance(std, Tensor):
        dev = same_device("normal", (mean, std))
        shape, result_dtype, params = broadcast_shapes(mean._v.shape, std._v.shape), mean.dtype, (None, None)
    elif isinstance(mean, Tensor):
        std = _float_arg("normal", "std", std)
        _check_std(std)
        dev, shape, result_dtype, params = mean.device, mean._v.shape, mean.dtype, (None, std)
    else:
        dev, shape, result_dtype = std.device, std._v.shape, std.dtype
        params = (_float_arg("normal", "mean", mean), None)
    if not result_dtype.is_floating_point:
        raise _not_implemented("normal_kernel_cpu", result_dtype)
    _check_out("normal", tuple(tensors), out)
    result = _fresh("normal", "normal", params, Tensor._empty(shape, result_dtype, dev), False, generator,
                    tuple(tensors), out=out)
    # torch's overloads: NormalBackward1 (a tensor mean), 2 (a tensor std), 3 (both)
    return _from_params(overload("normal", 1 * (params[0] is None) + 2 * (params[1] is None)), result, tuple(tensors))


def bernoulli(input: Tensor, p=None, *, generator=None, out=None) -> Tensor:
    """0/1 samples: 1 with probability `input` (elementwise), or with probability `p` when given."""
    tensor_arg("bernoulli", "input", input)
    result = Tensor._empty(input._v.shape, input.dtype, input.device)
    if p is None:
        if input.dtype.is_complex:
            raise _not_implemented("bernoulli_tensor_cpu_self_", input.dtype)
        if not input.dtype.is_floating_point:
            raise _not_implemented("bernoulli_tensor_cpu_p_", input.dtype)
        _check_out("bernoulli", (input,), out)
        _refused_at_the_call(~((input >= 0) & (input <= 1)), _BAD_P)
        return _from_params("bernoulli", _fresh("bernoulli", "bernoulli", (), result, False, generator, (input,),
                                                out=out), (input,))
    _check_out("bernoulli", (input,), out)
    bernoulli_(result, p, generator=generator)
    result._v.blob.version = 0
    # PyTorch links the sample to `input` (only its shape was used) through a node without a derivative
    return write_out(_from_params("not_implemented", result, (input,), SAMPLED_NO_DERIVATIVE), out)


def multinomial(input: Tensor, num_samples, replacement: bool = False, *, generator=None, out=None) -> Tensor:
    """Indices sampled from the categorical distribution(s) in the last dimension of `input` (weights)."""
    tensor_arg("multinomial", "input", input)
    num_samples = int_arg("multinomial", "num_samples", num_samples, 2)
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not _continuous(input.dtype):
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: {torch_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if out is not None and out.dtype is not dt.int64:
        raise RuntimeError(f"multinomial expects Long tensor out, got: {torch_name(out.dtype)}")
    categories = input._v.shape[-1]
    if not replacement and num_samples > categories:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    if categories > 1 << 24:
        raise RuntimeError("number of categories cannot exceed 2^24")
    if input.numel():
        _refused_at_the_call(~((input >= 0) & input.isfinite()),
                             "probability tensor contains either `inf`, `nan` or element < 0")
        _refused_at_the_call(input.sum(-1) <= 0, "invalid multinomial distribution (sum of probabilities <= 0)")
    shape = input._v.shape[:-1] + (num_samples,)
    return _fresh("multinomial", "multinomial", (num_samples, bool(replacement)),
                  Tensor._empty(shape, dt.int64, input.device), False, generator, (input,), out=out)


def poisson(input: Tensor, generator=None) -> Tensor:
    """Samples from Poisson distributions whose rates are `input`."""
    tensor_arg("poisson", "input", input)
    if not _continuous(input.dtype):
        raise _not_implemented("poisson_cpu", input.dtype)
    if input.numel():
        _refused_at_the_call(~(input >= 0), "invalid Poisson rate, expected rate to be non-negative")
    result = _fresh("poisson", "poisson", (), Tensor._empty(input._v.shape, input.dtype, input.device), False,
                    generator, (input,))
    return _from_params("poisson", result, (input,))


def rrelu_noise(input: Tensor, lower: float, upper: float, generator=None) -> Tensor:
    """rrelu's training slopes, as ATen's rrelu_with_noise draws them: for each element <= 0 (row-major) a
    uniform double on [lower, upper) in the input's precision, 1 elsewhere; rrelu is input * noise."""
    tensor_arg("rrelu", "input", input)
    params = (float(np.float32(lower)), float(np.float32(upper))) if input.dtype is not dt.float64 else \
        (float(lower), float(upper))
    return _fresh("rrelu", "rrelu_noise", params, Tensor._empty(input._v.shape, input.dtype, input.device), False,
                  generator, (input.detach().contiguous(),))


METHODS.update(bernoulli=bernoulli, multinomial=multinomial)


# -- like another tensor ---------------------------------------------------------------------------------------
def _like(fn: str, input, dtype, device, memory_format) -> tuple:
    tensor_arg(fn, "input", input)
    dtype = dtype_arg(fn, dtype) or input.dtype
    return dtype, (input.device if device is None else device_arg(device))


def rand_like(input: Tensor, *, generator=None, dtype: dt.dtype | None = None, layout=None, device=None,
              requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """Uniform [0, 1) samples shaped like `input`."""
    dtype, dev = _like("rand_like", input, dtype, device, memory_format)
    params = _uniform_params(dtype, 0.0, 1.0)
    check_requires_grad(dtype, requires_grad)
    _check_float8("uniform_", dtype)
    return _fresh("rand_like", "uniform_", params, empty_like_tensor(input, dtype, dev, memory_format),
                  requires_grad, generator)


def randn_like(input: Tensor, *, generator=None, dtype: dt.dtype | None = None, layout=None, device=None,
               requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """Standard normal samples shaped like `input`."""
    dtype, dev = _like("randn_like", input, dtype, device, memory_format)
    params = _normal_params(dtype, 0.0, 1.0)
    check_requires_grad(dtype, requires_grad)
    _check_float8("normal_", dtype)
    return _fresh("randn_like", "normal_", params, empty_like_tensor(input, dtype, dev, memory_format),
                  requires_grad, generator)


def randint_like(input: Tensor, low=0, high=None, *, generator=None, dtype: dt.dtype | None = None, layout=None,
                 device=None, requires_grad: bool = False, pin_memory: bool = False, memory_format=None) -> Tensor:
    """Integers from [low, high) shaped like `input` (in its dtype): `randint_like(x, high)` or `(x, low, high)`."""
    if high is None:
        low, high = 0, low
    dtype, dev = _like("randint_like", input, dtype, device, memory_format)
    params = _random_params("randint_like", dtype, low, high)
    check_requires_grad(dtype, requires_grad)
    return _fresh("randint_like", "random_", params, empty_like_tensor(input, dtype, dev, memory_format),
                  requires_grad, generator)

