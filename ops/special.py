"""The NumPy side of the special-function vocabulary: scalar_kernels' code, vectorized lazily.

Each entry is a ufunc that numba builds from the same scalar function the compiled
kernels call, on its first use (so `import tidal` never imports numba), for float32 and
float64, the only types templates hand them (inputs are cast to the compute dtype first).
"""
from __future__ import annotations

import threading

import numpy as np

_lock = threading.Lock()


class LazyUfunc:
    """A function of ops/scalar_kernels.py, made a NumPy ufunc by numba when first called."""

    __slots__ = ("name", "nin", "_ufunc")

    def __init__(self, name: str, nin: int = 1):
        self.name, self.nin, self._ufunc = name, nin, None

    def _build(self):
        with _lock:
            if self._ufunc is None:
                import numba

                from . import scalar_kernels
                scalar = getattr(scalar_kernels, self.name)
                sigs = [f"{t}({', '.join([t] * self.nin)})" for t in ("float32", "float64")]
                self._ufunc = numba.vectorize(sigs, cache=True)(getattr(scalar, "py_func", scalar))
        return self._ufunc

    def __call__(self, *args):
        fn = self._ufunc
        if fn is None:
            fn = self._build()
        return fn(*args)

    def __repr__(self) -> str:
        return f"<lazy ufunc {self.name}>"


def sgn(x):
    """PyTorch's sign on arrays: NaN gives 0, bool is returned unchanged."""
    x = np.asarray(x)
    if x.dtype == np.bool_:
        return x
    return (x > 0).astype(x.dtype) - (x < 0).astype(x.dtype)


NUMPY_FUNCS = {name: LazyUfunc(name) for name in ("erf", "erfc", "lgamma", "erfinv", "digamma", "bessel_i0")}
NUMPY_FUNCS["polygamma"] = LazyUfunc("polygamma", 2)
NUMPY_FUNCS["sgn"] = sgn
