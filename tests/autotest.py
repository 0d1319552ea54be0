"""A dual-object harness: one test body drives tidal and real PyTorch side by side.

    x = dual.randn(3, 4, requires_grad=True)
    y = (x.exp() * 2).sum(dim=1)        # runs in both frameworks
    y.check()                            # values, shape, dtype agree
    y.sum().backward(); x.grad.check()   # and so do gradients

A `Dual` holds the same thing in both worlds. Attribute access, calls, operators and
indexing apply to both sides and wrap the results again; `check()` compares them.
"""
from __future__ import annotations

import numpy as np
import torch

import tidal


def _to_numpy(x):
    if isinstance(x, tidal.Tensor):
        return x.detach().numpy() if x.dtype is not tidal.bfloat16 else x.detach().float().numpy()
    if isinstance(x, torch.Tensor):
        x = x.detach()
        return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()
    return x


def _unwrap(value, side: int):
    if isinstance(value, Dual):
        return value.pair[side]
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, side) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v, side) for k, v in value.items()}
    return value


def _wrap(ours, theirs):
    if type(ours) is tuple and isinstance(theirs, tuple) and len(ours) == len(theirs):
        return tuple(_wrap(a, b) for a, b in zip(ours, theirs))
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        return [_wrap(a, b) for a, b in zip(ours, theirs)]
    return Dual(ours, theirs)


class Dual:
    """The same value in tidal and in torch."""

    __slots__ = ("pair",)

    def __init__(self, ours, theirs):
        object.__setattr__(self, "pair", (ours, theirs))

    def __getattr__(self, name):
        ours, theirs = self.pair
        return _wrap(getattr(ours, name), getattr(theirs, name))

    def __setattr__(self, name, value):
        setattr(self.pair[0], name, _unwrap(value, 0))
        setattr(self.pair[1], name, _unwrap(value, 1))

    def __call__(self, *args, **kwargs):
        ours = self.pair[0](*_unwrap(args, 0), **_unwrap(kwargs, 0))
        theirs = self.pair[1](*_unwrap(args, 1), **_unwrap(kwargs, 1))
        return _wrap(ours, theirs)

    def __getitem__(self, item):
        return _wrap(self.pair[0][_unwrap(item, 0)], self.pair[1][_unwrap(item, 1)])

    def __setitem__(self, item, value):
        self.pair[0][_unwrap(item, 0)] = _unwrap(value, 0)
        self.pair[1][_unwrap(item, 1)] = _unwrap(value, 1)

    def __iter__(self):
        return (_wrap(a, b) for a, b in zip(self.pair[0], self.pair[1]))

    def __len__(self):
        return len(self.pair[0])

    def check(self, rtol: float = 1e-6, atol: float = 1e-6, dtype: bool = True) -> "Dual":
        """Assert both sides agree: values (within tolerance), shapes and dtypes."""
        ours, theirs = self.pair
        if isinstance(ours, tidal.Tensor) or isinstance(theirs, torch.Tensor):
            assert tuple(ours.shape) == tuple(theirs.shape), (ours.shape, theirs.shape)
            if dtype:
                assert ours.dtype.name == str(theirs.dtype).replace("torch.", ""), (ours.dtype, theirs.dtype)
            a, b = _to_numpy(ours), _to_numpy(theirs)
            if a.dtype.kind in "biu":
                np.testing.assert_array_equal(a, b)
            else:
                np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)
        elif isinstance(ours, (int, float, bool)):
            np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol)
        elif isinstance(ours, (tuple, list)):  # named tuples (return types) included
            assert len(ours) == len(theirs)
            for a, b in zip(ours, theirs):
                Dual(a, b).check(rtol, atol, dtype)
        return self


def _binop(name):
    def op(self, other):
        return _wrap(getattr(self.pair[0], name)(_unwrap(other, 0)), getattr(self.pair[1], name)(_unwrap(other, 1)))
    return op


def _unop(name):
    return lambda self: _wrap(getattr(self.pair[0], name)(), getattr(self.pair[1], name)())


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "floordiv", "mod", "pow",
              "rpow", "matmul", "rmatmul", "and", "or", "xor", "eq", "ne", "lt", "le", "gt", "ge", "iadd", "isub",
              "imul", "itruediv"):
    setattr(Dual, f"__{_name}__", _binop(f"__{_name}__"))
for _name in ("neg", "abs", "invert", "pos"):
    setattr(Dual, f"__{_name}__", _unop(f"__{_name}__"))


class _Factory:
    """Builds Duals from the same random data: `dual.randn(2, 3)`, `dual.tensor(data)`, `dual.lib.relu`."""

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)
        self.lib = Dual(tidal, torch)
        self.nn = Dual(tidal.nn, torch.nn)
        self.F = Dual(tidal.nn.functional, torch.nn.functional)

    def tensor(self, data, dtype: str | None = None, requires_grad: bool = False) -> Dual:
        arr = np.asarray(data)
        ours = tidal.tensor(arr, dtype=getattr(tidal, dtype) if dtype else None, requires_grad=requires_grad)
        theirs = torch.tensor(arr, dtype=getattr(torch, dtype) if dtype else None, requires_grad=requires_grad)
        return Dual(ours, theirs)

    def randn(self, *shape, dtype: str = "float64", requires_grad: bool = False) -> Dual:
        return self.tensor(self.rng.standard_normal(shape), dtype, requires_grad)

    def randint(self, low: int, high: int, shape: tuple) -> Dual:
        return self.tensor(self.rng.integers(low, high, size=shape).astype(np.int64))

    def module(self, ours, theirs) -> Dual:
        """Pair two modules, giving the tidal one torch's weights."""
        ours.load_state_dict({k: tidal.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
        return Dual(ours, theirs)


dual = _Factory()
