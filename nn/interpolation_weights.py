"""interpolate's weights as torch computes them for float32 and 16-bit inputs (its opmath is float32; 16-bit
kernels then hold linear, trilinear and bicubic weights in the input's dtype). functional_shape's taps compute
them in float64, which torch does for float64 inputs only."""
from __future__ import annotations

import numpy as np

from ..tensor import dtype as dt

CUBIC_A = -0.75  # torch's bicubic convolution parameter

HALF = (dt.float16, dt.bfloat16)
SINGLE = (dt.float32, *HALF)


def single_linear_weights(n_in: int, n_out: int, scale: float | None, align_corners: bool) -> np.ndarray:
    """torch's (bi/tri)linear weights for a float32 (or 16-bit) input: the source position and its fraction in
    float32 (the indices are _taps' own)."""
    f = np.float32
    dst = np.arange(n_out, dtype=f)
    if align_corners:
        src = dst * (f(n_in - 1) / f(n_out - 1) if n_out > 1 else f(0))
    else:
        src = np.maximum((dst + f(0.5)) * (f(1.0 / scale) if scale else f(n_in) / f(n_out)) - f(0.5), f(0))
    far = np.clip(src - np.floor(src), f(0), f(1))
    return np.stack([f(1) - far, far], axis=1)


LINEAR_MODES = ("linear", "trilinear")  # 16-bit weights held in the dtype (torch's bilinear kernel keeps float32)


def half_weights(w: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """torch's (bi/tri)linear weights for a 16-bit input: held in that dtype, the far one rounded first and the
    near one as 1 minus it (then rounded)."""
    far = np.float32(w[:, 1]).astype(dtype.np).astype(np.float32)
    near = (np.float32(1) - far).astype(dtype.np).astype(np.float32)
    return np.stack([near, far], axis=1)


def half_cubic_weights(n_in: int, n_out: int, scale: float | None, align_corners: bool,
                       dtype: dt.dtype) -> np.ndarray:
    """torch's bicubic weights for a float32 or 16-bit input: source positions and the cubic in float32, each
    weight then held in the input's dtype."""
    f = np.float32
    dst = np.arange(n_out, dtype=f)
    if align_corners:
        src = dst * (f((n_in - 1) / (n_out - 1)) if n_out > 1 else f(0))
    else:
        src = (dst + f(0.5)) * (f(1.0 / scale) if scale else f(n_in / n_out)) - f(0.5)
    t = src - np.floor(src)
    a = f(CUBIC_A)

    def near(x):  # |x| <= 1
        return ((a + f(2)) * x - (a + f(3))) * x * x + f(1)

    def far(x):  # 1 < |x| < 2
        return ((a * x - f(5) * a) * x + f(8) * a) * x - f(4) * a
    w = np.stack([far(t + f(1)), near(t), near(f(1) - t), far((f(1) - t) + f(1))], axis=1)
    return w.astype(dtype.np).astype(f)
