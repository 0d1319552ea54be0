"""col2im for unit-stride convolutions (their input gradient), as adds of contiguous runs of the padded image.

With stride 1, the window of tap (i, j) over every output position of a plane is one contiguous run of
the flattened padded plane, starting at i * dh * Wp + j * dw and oh * Wp long (Wp: the padded width),
if each output row is taken Wp wide instead of ow: the Wp - ow extra columns per row ("slack") hold
values no output keeps. The input gradient's columns, W^T @ y, are computed that wide (y's rows with
zeros in the slack), and col2im becomes kh * kw adds of runs, compiled a plane at a time, where the
general col2im (ops/conv_kernels.col2im) scatters element by element: the small CNN's 16->32 layer's
input gradient 3.5 -> 3.07 ms on one core. The product grows by Wp / ow; convolutions whose slack would
cost more than `MAX_SLACK` take the general path. (Im2col the same way made the forward and the weight
gradient slower: their larger product costs more than the cheaper copy saves.) Any rank: the spatial
dims past the first flatten into the run alike.

Columns are (C, *kernel, N, L) with L = o_0 * pitch_0 (pitch_0: the padded plane's first-dim stride); a
gradient in this layout is (channels, N, o_0, P_1, ..., P_r) with only [..., :o_1, ...] real. Rows are
laid out by products.blas_rows (a little wider where BLAS would be slow).
"""
from __future__ import annotations

import math

import numpy as np

from ...vm.codegen import import_numba_user
from ..linalg.product_kernels import blas_rows
from .windows import COMPILED_FLOATS, compute_array

MAX_SLACK = 1.5  # the largest L / (o_0 * o_1 ...) this path takes


def _padded_shape(geo) -> tuple:
    return tuple(s + geo.pads[2 * d] + geo.pads[2 * d + 1] for d, s in enumerate(geo.image4[2:]))


def _pitches(shape: tuple) -> tuple:
    """Element strides of a C-contiguous array of `shape`."""
    return tuple(math.prod(shape[d + 1:]) for d in range(len(shape)))


def _run(geo) -> int:
    """L: the run of the flattened padded plane that one tap covers."""
    padded = _padded_shape(geo)
    return geo.result4[2] * math.prod(padded[1:])


def takes(geo) -> bool:
    """Whether this path serves `geo`: unit strides, little slack, nothing empty."""
    if any(s != 1 for s in geo.stride) or 0 in geo.result4 or 0 in geo.image4:
        return False
    return _run(geo) <= MAX_SLACK * max(math.prod(geo.result4[2:]), 1)


def _tap_steps(geo) -> tuple:
    """How far a tap's run starts from the previous tap's along each kernel dim (dilation times the padded
    plane's stride), and the reach past the plane's end of the last tap's run (the slack a buffer needs
    after its last plane)."""
    steps = tuple(d * p for d, p in zip(geo.dilation, _pitches(_padded_shape(geo))))
    return steps, sum((k - 1) * step for k, step in zip(geo.kernel[1:], steps[1:]))


def _buffer(n_planes: int, plane: int, reach: int, dtype) -> np.ndarray:
    # planes back to back, then the last run's reach: zeros (the padding)
    return np.zeros(n_planes * plane + reach, dtype)


def _interior(buf: np.ndarray, geo, planes: tuple) -> np.ndarray:
    """The image inside the padding of a flat buffer of padded planes."""
    padded = _padded_shape(geo)
    grid = buf[:math.prod(planes) * math.prod(padded)].reshape(planes + padded)
    inner = tuple(slice(geo.pads[2 * d], geo.pads[2 * d] + s) for d, s in enumerate(geo.image4[2:]))
    return grid[(slice(None), slice(None)) + inner]


def _runs(buf: np.ndarray, geo, offset: int, writeable: bool = False) -> np.ndarray:
    """The (C, N, L) runs of one tap (at `offset`) over every plane of a flat (N, C, padded) buffer."""
    n, c = geo.image4[:2]
    plane, item = math.prod(_padded_shape(geo)), buf.itemsize
    return np.lib.stride_tricks.as_strided(buf[offset:], (c, n, _run(geo)), (plane * item, c * plane * item, item),
                                           writeable=writeable)


def _real(rows: np.ndarray, geo) -> np.ndarray:
    """A (channels, ..., N * L) array in this layout as (channels, N, *o): the real positions (a view)."""
    n, padded = geo.image4[0], _padded_shape(geo)
    grid = rows.reshape((-1, n, geo.result4[2]) + padded[1:])
    return grid[(slice(None),) * 3 + tuple(slice(0, o) for o in geo.result4[3:])]


def zero_slack(rows: np.ndarray, geo) -> None:
    """Write zeros into the slack positions of a (..., N * L) array in this layout."""
    n, padded = geo.image4[0], _padded_shape(geo)
    grid = rows.reshape((-1, n, geo.result4[2]) + padded[1:])
    for d, o in enumerate(geo.result4[3:]):
        if o < padded[1 + d]:
            grid[(slice(None),) * (3 + d) + (slice(o, None),)] = 0


def result_rows(y: np.ndarray, geo) -> np.ndarray:
    """A result-shaped (N, O, *o) array as (groups, O/groups, N * L), zeros in the slack."""
    n, o = geo.result4[:2]
    rows = blas_rows((o,), n * _run(geo), compute_array(y[:0]).dtype, zeros=True)
    _real(rows, geo)[...] = compute_array(y).reshape(geo.result4).swapaxes(0, 1)
    return rows.reshape(geo.groups, o // geo.groups, n * _run(geo))


def add_columns(cols: np.ndarray, out: np.ndarray, geo, slack_is_zero: bool) -> None:
    """out (the image, (N, C, *spatial)) = the sum of columns (C * taps, N * L) over the taps covering each
    pixel: col2im. Unless `slack_is_zero`, the slack of `cols` is first overwritten with zeros."""
    n, c = geo.image4[:2]
    if not slack_is_zero:
        zero_slack(cols, geo)
    steps, reach = _tap_steps(geo)
    plane = math.prod(_padded_shape(geo))
    buf = _buffer(n * c, plane, reach, cols.dtype)
    taps = cols.reshape(c, -1, n, _run(geo))
    offsets = np.array([sum(i * step for i, step in zip(tap, steps)) for tap in np.ndindex(*geo.kernel)], np.int64)
    if cols.dtype in COMPILED_FLOATS and taps.strides[-1] == taps.itemsize:
        import_numba_user(".conv_kernels", __package__).add_runs(taps, buf, offsets, plane)  # numba: on first use
    else:
        for t, offset in enumerate(offsets):
            # within one tap the runs of different planes never overlap (L <= the plane)
            runs = _runs(buf, geo, int(offset), writeable=True)
            runs += taps[:, t]
    out.reshape(geo.image4)[...] = _interior(buf, geo, (n, c))
