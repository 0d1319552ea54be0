"""The NumPy side of the special-function vocabulary: scalar_kernels' code, vectorized lazily.

Also the small NumPy helpers that mirror scalar_kernels (sgn, nonzero_divisor).

Each entry is a ufunc that numba builds from the same scalar function the compiled
kernels call, on its first use (so `import tidal` never imports numba), one input type at
a time. Templates hand them float32 or float64 only (inputs are cast to the compute dtype
first), so a type is compiled once and then loaded from numba's on-disk cache.
"""
from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()


class LazyUfunc:
    """A function of ops/scalar_kernels.py, made a NumPy ufunc by numba for each input float type
    when first called with it (float32 in, float32 out; the code itself runs in float64)."""

    __slots__ = ("name", "nin", "_by_type")

    def __init__(self, name: str, nin: int = 1):
        self.name, self.nin, self._by_type = name, nin, {}

    def _build(self, np_type):
        with _lock:
            fn = self._by_type.get(np_type)
            if fn is None:
                import numba

                from . import scalar_kernels
                scalar = getattr(scalar_kernels, self.name)
                t = np.dtype(np_type).name
                sig = f"{t}({', '.join([t] * self.nin)})"
                fn = self._by_type[np_type] = numba.vectorize([sig], cache=True)(getattr(scalar, "py_func", scalar))
        return fn

    def __call__(self, *args):
        np_type = np.result_type(*args).type
        fn = self._by_type.get(np_type)
        if fn is None:
            fn = self._build(np_type)
        return fn(*args)

    def __repr__(self) -> str:
        return f"<lazy ufunc {self.name}>"


def sgn(x):
    """PyTorch's sign on arrays: NaN gives 0, bool is returned unchanged."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


def nonzero_divisor(b):
    """`b`, checked: integer division by zero raises PyTorch's error (float division gives inf/nan)."""
    arr = np.asarray(b)
    if arr.dtype.kind in "biu" and not arr.all():
        raise RuntimeError("ZeroDivisionError")
    return b


NUMPY_FUNCS = {name: LazyUfunc(name) for name in ("erf", "erfc", "lgamma", "erfinv", "digamma", "bessel_i0",
                                                 "bessel_i1")}
NUMPY_FUNCS["polygamma"] = LazyUfunc("polygamma", 2)
NUMPY_FUNCS.update(sgn=sgn, nonzero_divisor=nonzero_divisor)
