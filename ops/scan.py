"""Cumulative ops along one dim: cumsum, cumprod, cummax, cummin, logcumsumexp.

They share the reduction plumbing of ops/reduce.py (a kernel body gets the array in its
accumulation dtype and the axis); the outputs keep the input's shape.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from .dispatch import launch, launch_into
from .elementwise import torch_name
from .reduce import accumulate_dtype, dtype_arg, one_axis, reduction_kernel, return_type

__all__ = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]
METHODS: dict = {}


@reduction_kernel("cumsum")
def _cumsum_body(a, axes, _):
    return np.cumsum(a, axis=axes[0])


@reduction_kernel("cumprod")
def _cumprod_body(a, axes, _):
    return np.cumprod(a, axis=axes[0])


@reduction_kernel("logcumsumexp")
def _logcumsumexp_body(a, axes, _):
    return np.logaddexp.accumulate(a, axis=axes[0])


@reduction_kernel("cum_extreme")
def _cum_extreme_body(a, axes, is_max):
    """Running max (min) and the index where it was last reached; NaN, once seen, wins."""
    axis = axes[0]
    values = (np.maximum if is_max else np.minimum).accumulate(a, axis=axis)
    reached = a == values
    if a.dtype.kind == "f":
        reached |= np.isnan(a) & np.isnan(values)
    # The running value only changes where it is reached, so the last index reached so far is the answer.
    positions = np.arange(a.shape[axis]).reshape((-1,) + (1,) * (a.ndim - axis - 1))
    return values, np.maximum.accumulate(np.where(reached, positions, 0), axis=axis)


def _scan(op: str, x: Tensor, dim, out_dtypes, compute: dt.dtype, extra=None, kernel: str | None = None):
    axes = one_axis(x, dim, op)
    outs = launch(kernel or op, (x,), [(x._v.shape, d) for d in out_dtypes], (axes, compute.np, extra))
    return outs[0] if len(outs) == 1 else tuple(outs)


def cumsum(input: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
    """Running sum along `dim`; integers and bool accumulate in int64."""
    out = accumulate_dtype(input, dtype, "cumsum")
    return _scan("cumsum", input, dim, [out], out.compute)


def cumprod(input: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
    """Running product along `dim`; integers and bool accumulate in int64."""
    out = accumulate_dtype(input, dtype, "cumprod")
    return _scan("cumprod", input, dim, [out], out.compute)


def _in_place(op: str):
    def fn(self: Tensor, dim: int, *, dtype: dt.dtype | None = None) -> Tensor:
        if dtype_arg(dtype, op + "_") is not None and dtype is not self.dtype:
            raise RuntimeError(f"Bad in-place call: input tensor dtype {torch_name(self.dtype)} and output tensor "
                               f"dtype {torch_name(dtype)} should match")
        if self.dtype is dt.bool_:
            raise NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
        axes = one_axis(self, dim, op + "_")
        compute = accumulate_dtype(self, None, op).compute
        launch_into(op, (self,), (self,), (axes, compute.np, None))
        return self
    fn.__name__ = op + "_"
    fn.__doc__ = f"In-place {op} along `dim`."
    return fn


_cummax_type = return_type("cummax", ("values", "indices"))
_cummin_type = return_type("cummin", ("values", "indices"))


def cummax(input: Tensor, dim: int):
    """(running maximum, index of its last occurrence) along `dim`."""
    return _cummax_type(*_scan("cummax", input, dim, [input.dtype, dt.int64], input.dtype.compute, True,
                                      "cum_extreme"))


def cummin(input: Tensor, dim: int):
    """(running minimum, index of its last occurrence) along `dim`."""
    return _cummin_type(*_scan("cummin", input, dim, [input.dtype, dt.int64], input.dtype.compute, False,
                                      "cum_extreme"))


def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """log(cumsum(exp(input))) along `dim`, computed stably (floating inputs)."""
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"logcumsumexp_out_cpu\" not implemented for '{torch_name(input.dtype)}'")
    return _scan("logcumsumexp", input, dim, [input.dtype], input.dtype.compute)


METHODS.update({name: globals()[name] for name in __all__})
METHODS.update(cumsum_=_in_place("cumsum"), cumprod_=_in_place("cumprod"))
