"""A small sample database of ops tidal exposes that torch's OpInfo `op_db` lacks (tests/torch_op_db.py
can't reach them): one record per op, its samples built from NumPy arrays, its result compared with
torch's, and its gradient too where torch differentiates it.

A record: the op's name (`torch.<name>` and `tidal.compat.<name>` unless `fn` says otherwise), sample
builders (each returns the positional arguments and keyword arguments from a NumPy generator; an
ndarray becomes a tensor of each library), whether to compare gradients (float64) and tolerances.
tests/test_tidal_sample_db.py makes the tests.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import torch

import tidal
import tidal.compat as ttorch


@dataclass(frozen=True)
class Record:
    """One op: how each library calls it, its samples, whether gradients are compared."""
    name: str
    samples: tuple
    grad: bool = False
    fn: Callable | None = None  # fn(lib, *args, **kwargs); default: getattr(lib, name)
    rtol: float = 1e-5
    atol: float = 1e-6
    inplace: bool = False  # an in-place method: compare the modified first argument too
    tags: tuple = field(default=())


def call_op(record: Record, lib, args, kwargs):
    """The record's op called in `lib` (torch or tidal.compat)."""
    if record.fn is not None:
        return record.fn(lib, *args, **kwargs)
    return getattr(lib, record.name)(*args, **kwargs)


def _a(*shape, low=-2.0, high=2.0):
    return lambda r: r.uniform(low, high, shape)


def _s(*parts, **kw):
    """A sample: positional parts (callables of the generator give arrays) and keyword arguments."""
    return (parts, kw)


def _pool(name: str):
    return lambda lib, *a, **k: getattr(lib.nn.functional, name)(*a, **k)


def _assigned(x, index, value):
    """A copy of `x` with x[index] = value (setitem's node on the copy)."""
    y = x * 1
    y[index] = value
    return y


def _method(name: str):
    return lambda lib, x, *a, **k: getattr(x, name)(*a, **k)


def _seeded(lib, draw):
    """`draw()` after seeding `lib`'s default generator (the same seed for both libraries)."""
    lib.manual_seed(3)
    return draw()


def _standard_gamma(lib):
    return torch._standard_gamma if lib is torch else tidal.distributions._sampling.standard_gamma


RECORDS = [
    Record("adaptive_avg_pool1d", (_s(_a(2, 3, 7), 3), _s(_a(1, 5), 2)), grad=True),
    Record("adaptive_max_pool1d", (_s(_a(2, 3, 7), 3), _s(_a(2, 3, 8), 4, return_indices=True)), grad=True,
           fn=_pool("adaptive_max_pool1d")),
    Record("avg_pool1d", (_s(_a(2, 3, 9), 3), _s(_a(1, 2, 8), 2, 2, 1, ceil_mode=True)), grad=True),
    Record("max_pool1d", (_s(_a(2, 3, 9), 3), _s(_a(1, 2, 8), 2, 1, 1)), grad=True),
    Record("max_pool1d_with_indices", (_s(_a(2, 3, 9), 3),), grad=True, fn=_pool("max_pool1d_with_indices")),
    Record("max_pool2d", (_s(_a(1, 2, 6, 5), 2), _s(_a(2, 1, 7, 7), 3, 2, 1)), grad=True),
    Record("max_pool3d", (_s(_a(1, 1, 4, 4, 4), 2),), grad=True),
    Record("celu", (_s(_a(3, 4)), _s(_a(5), alpha=0.5)), grad=True),
    Record("selu", (_s(_a(3, 4)), _s(_a(0, 3))), grad=True),
    Record("relu", (_s(_a(3, 4)), _s(_a()), _s(_a(0, 2))), grad=True),
    Record("threshold", (_s(_a(3, 4), 0.5, -1.0),), grad=True, fn=_pool("threshold")),
    Record("hardshrink", (_s(_a(3, 4)), _s(_a(6), 1.2), _s(_a())), grad=True),
    Record("chain_matmul", (_s(_a(2, 3), _a(3, 4), _a(4, 2)),), grad=True),
    Record("conv_tbc", (_s(_a(5, 2, 3), _a(3, 3, 4), _a(4), 1),), grad=True, atol=1e-5),
    Record("frobenius_norm", (_s(_a(3, 4), (0, 1)), _s(_a(2, 3, 4), (1, 2), True)), grad=True),
    Record("nuclear_norm", (_s(_a(3, 4)), _s(_a(4, 4), True)), grad=True, atol=1e-5),
    Record("norm_except_dim", (_s(_a(3, 4), 2, 0), _s(_a(2, 3, 4), 2, 1)), grad=True),
    Record("slogdet", (_s(_a(3, 3)), _s(_a(2, 4, 4))), grad=True, atol=1e-5),
    Record("vander", (_s(_a(4)), _s(_a(3), N=5, increasing=True))),
    Record("select_copy", (_s(_a(3, 4), 1, 2), _s(_a(2, 3, 4), 0, -1)), grad=True),
    Record("slice_copy", (_s(_a(6, 4), 0, 1, 5, 2), _s(_a(3, 7), 1, None, None, 3)), grad=True),
    Record("split_copy", (_s(_a(6, 4), 2), _s(_a(5, 3), 2, 1)), grad=True),
    Record("detach_copy", (_s(_a(3, 4)),)),
    Record("as_subclass", (_s(_a(3, 4)),), grad=True, fn=lambda lib, x: x.as_subclass(lib.Tensor)),
    Record("set_", (_s(_a(3, 4), _a(2, 5)), _s(_a(3))), fn=lambda lib, x, *src: x.clone().set_(*src)),
    Record("is_signed", (_s(_a(3)),)),
    Record("is_same_size", (_s(_a(3, 2), _a(3, 2)), _s(_a(3, 2), _a(2, 3)))),
    Record("result_type", (_s(_a(3), 2.5), _s(_a(3), _a(2)))),
    Record("bartlett_window", (_s(5), _s(6, periodic=False)), fn=lambda lib, *a, **k: lib.bartlett_window(*a, **k)),
    Record("blackman_window", (_s(7), _s(4, periodic=False))),
    Record("hamming_window", (_s(7), _s(6, False, 0.5, 0.5))),
    Record("hann_window", (_s(8), _s(5, periodic=False))),
    Record("kaiser_window", (_s(9), _s(6, False, 8.0))),
    Record("range", (_s(0, 2, 0.5), _s(-1, 3))),
    Record("arccos_", (_s(_a(3, 4, low=-0.9, high=0.9)),), fn=_method("arccos_"), inplace=True),
    Record("arcsinh_", (_s(_a(5)),), fn=_method("arcsinh_"), inplace=True),
    Record("arctanh_", (_s(_a(5, low=-0.9, high=0.9)),), fn=_method("arctanh_"), inplace=True),
    Record("fix_", (_s(_a(3, 4, low=-5, high=5)),), fn=_method("fix_"), inplace=True),
    Record("negative_", (_s(_a(3, 4)),), fn=_method("negative_"), inplace=True),
    Record("clip_", (_s(_a(3, 4), -0.5, 0.5),), fn=_method("clip_"), inplace=True),
    Record("celu_", (_s(_a(3, 4)),), fn=lambda lib, x: lib.celu_(x), inplace=True),
    Record("selu_", (_s(_a(3, 4)),), fn=lambda lib, x: lib.selu_(x), inplace=True),
    Record("relu_", (_s(_a(3, 4)),), fn=lambda lib, x: lib.relu_(x), inplace=True),
    Record("threshold_", (_s(_a(3, 4), 0.1, 9.0),), fn=lambda lib, *a: lib.threshold_(*a), inplace=True),
    # samplers torch's op_db has no entry for: tidal draws torch's CPU streams, so seeded draws agree
    Record("randperm", (_s(10), _s(1), _s(0)), fn=lambda lib, n: _seeded(lib, lambda: lib.randperm(n))),
    Record("poisson", (_s(_a(3, 4, low=0.0, high=30.0)),), fn=lambda lib, x: _seeded(lib, lambda: lib.poisson(x))),
    Record("binomial", (_s(_a(1, 3, low=1.0, high=12.0), _a(1, 3, low=0.0, high=1.0)),), rtol=1e-3,
           fn=lambda lib, n, p: _seeded(lib, lambda: lib.binomial(n.round().expand(4000, 3).contiguous(),
                                                                  p.expand(4000, 3).contiguous()).mean(0))),
    Record("_standard_gamma", (_s(_a(1, 4, low=0.5, high=3.0)),), rtol=1e-3,
           fn=lambda lib, a: _seeded(lib, lambda: _standard_gamma(lib)(a.expand(4000, 4).contiguous()).mean(0))),
    Record("_standard_gamma_grad", (_s(_a(3, 4, low=0.5, high=3.0), _a(3, 4, low=0.1, high=5.0)),), rtol=1e-3,
           fn=lambda lib, a, x: torch._standard_gamma_grad(a, x) if lib is torch else
           tidal.distributions._sampling.STANDARD_GAMMA_GRAD((a, x))),  # (tidal sums the exact series)
    # x[index] = value on a copy: basic indexing (CopySlices) and index tensors (IndexPutBackward0)
    Record("__setitem__", (_s(_a(4, 5), _a(5), 1), _s(_a(4, 5), _a(4), (slice(None), 2)),
                           _s(_a(4, 5), _a(2, 5), [0, 2]), _s(_a(4, 5), _a(3), ([0, 3, 3], [1, 2, 4]))),
           grad=True, fn=lambda lib, x, value, index: _assigned(x, index, value)),
    Record("cross_map_lrn2d", (_s(_a(2, 5, 3, 3), 3), _s(_a(1, 4, 2, 5), 2)), grad=True,
           fn=lambda lib, x, size: lib.nn.CrossMapLRN2d(size)(x)),  # (nn.CrossMapLRN2d's legacy function)
]
BY_NAME = {r.name: r for r in RECORDS}


def build(lib, sample, rng_seed: int, dtype, requires_grad: bool = False):
    """The sample's arguments as `lib` tensors (same values for each library, from one seed)."""
    rng = np.random.default_rng(rng_seed)
    parts, kwargs = sample

    def make(p):
        if callable(p):
            arr = p(rng)
            if lib is torch:
                return torch.tensor(arr, dtype=dtype, requires_grad=requires_grad)
            return ttorch.tensor(arr, dtype=getattr(ttorch, str(dtype).split(".")[-1]), requires_grad=requires_grad)
        return p
    return [make(p) for p in parts], dict(kwargs)


def as_numpy(out):
    """Tensors (in tuples and named tuples) as NumPy arrays; other values as they are."""
    if isinstance(out, torch.Tensor):
        return out.detach().numpy()
    if isinstance(out, tidal.Tensor):
        return out.detach().numpy()
    if isinstance(out, (list, tuple)):
        return [as_numpy(o) for o in out]
    if isinstance(out, torch.dtype):
        return str(out).split(".")[-1]
    if isinstance(out, tidal.dtype):
        return str(out).split(".")[-1]
    return out


def assert_same(got, want, rtol: float, atol: float, path: str = "out") -> None:
    """Structures, dtypes, shapes and values equal (within tolerance for floats)."""
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), f"{path}: {got!r} != {want!r}"
        for k, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, rtol, atol, f"{path}[{k}]")
    elif isinstance(want, np.ndarray):
        assert isinstance(got, np.ndarray), f"{path}: {type(got).__name__}"
        assert got.dtype == want.dtype and got.shape == want.shape, f"{path}: {got.dtype}{got.shape} != " \
                                                                    f"{want.dtype}{want.shape}"
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=path)
    else:
        assert got == want and type(got) is type(want), f"{path}: {got!r} != {want!r}"
