"""cross_map_lrn2d: the legacy (Lua Torch) local response normalization across channels behind nn.CrossMapLRN2d.

It differs from F.local_response_norm: its running-sum window never drops channel 0 and its backward is the
legacy formula (a window shifted from the forward's), so both are reproduced exactly as channel-mixing
matrices built by replaying the legacy loops on the identity."""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.dispatch.primitive import Primitive
from ..tensor import Tensor

__all__: list = []


def _forward_window(size: int, channels: int) -> np.ndarray:
    """M with scale[c] = sum_j M[c, j] * x[j]^2: the legacy running sum, replayed on one-hot channels."""
    sq = np.eye(channels)
    scale = np.zeros((channels, channels))
    pre_pad = int((size - 1) / 2 + 1)
    for c in range(min(pre_pad, channels)):
        scale[0] += sq[c]
    for c in range(1, channels):
        scale[c] = scale[c - 1]
        if c < channels - pre_pad + 1:
            scale[c] += sq[c + pre_pad - 1]
        if c > pre_pad:
            scale[c] -= sq[c - pre_pad]
    return scale


def _backward_window(size: int, channels: int) -> np.ndarray:
    """B with accum[c] = sum_j B[c, j] * ratio[j]: the legacy backward's running sum, replayed likewise."""
    padded = np.zeros((channels + size - 1, channels))
    inverse_pre_pad = int(size - (size - 1) / 2)
    padded[inverse_pre_pad:inverse_pre_pad + channels] = np.eye(channels)[:len(padded) - inverse_pre_pad]
    accum = padded[:size - 1].sum(0)
    rows = np.zeros((channels, channels))
    for c in range(channels):
        accum = accum + padded[c + size - 1]
        rows[c] = accum
        accum = accum - padded[c]
    return rows


def _mix(matrix: np.ndarray, x: Tensor) -> Tensor:
    """sum_j matrix[c, j] * x[:, j] for (N, C, H, W) `x`."""
    n, c, h, w = x.shape
    m = ops.tensor(matrix, dtype=x.dtype, device=x.device)
    return ops.matmul(m, x.reshape(n, c, h * w)).reshape(n, c, h, w)


def cross_map_lrn2d(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> Tensor:
    """x * (k + alpha / size * (sum of x^2 over a window of channels))^-beta, on (N, C, H, W) input."""
    if input.dim() != 4:
        raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.dim()}D instead.")
    channels = input.shape[1]
    x = input.detach()
    scale = _mix(_forward_window(size, channels), x * x) * (alpha / size) + k
    out = x * scale.pow(-beta)
    CROSS_MAP_LRN2D.attach((input,), (out,), (size, alpha, beta, channels), saved=(x, out, scale))
    return out


def _backward(node, g: Tensor) -> tuple:
    x, out, scale = node.saved_tensors
    size, alpha, beta, window = node.attrs
    accum = _mix(window, g * out / scale)
    return (scale.pow(-beta) * g - (2 * alpha * beta / size) * x * accum,)


# the composite's node on the input, saving it (detached), the output and the scale; its attrs (size, alpha, beta,
# the legacy backward's channel-mixing matrix: made only when a node is recorded)
CROSS_MAP_LRN2D = Primitive("cross_map_lrn2d", None, cpu=None, backward=_backward,
                            node_attrs=lambda inputs, attrs: attrs[:3] + (_backward_window(attrs[0], attrs[3]),))
