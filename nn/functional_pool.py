"""Pools built from other ops: power-average (lp_pool), max unpooling, fractional max pooling, channel shuffle."""
from __future__ import annotations

import math

import numpy as np

from .. import ops
from ..ops.windowed import pool as _pool
from ..ops.movement.memory_format import in_format, suggest_memory_format
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["lp_pool1d", "lp_pool2d", "lp_pool3d", "max_unpool1d", "max_unpool2d", "max_unpool3d",
           "fractional_max_pool2d", "fractional_max_pool3d", "fractional_max_pool2d_with_indices",
           "fractional_max_pool3d_with_indices", "channel_shuffle", "native_channel_shuffle"]


def _ntuple(value, n: int) -> tuple:
    return tuple(value) if isinstance(value, (list, tuple)) else (value,) * n


# -- lp_pool: (sum over the window of x^p)^(1/p) ---------------------------------------------------------
def _lp_pool(spatial: int, input: Tensor, norm_type: float, kernel_size, stride, ceil_mode: bool) -> Tensor:
    avg = {1: _pool.avg_pool1d, 2: _pool.avg_pool2d, 3: _pool.avg_pool3d}[spatial]
    kernel = _ntuple(kernel_size, spatial)
    if stride is not None:
        out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    else:
        out = avg(input.pow(norm_type), kernel_size, padding=0, ceil_mode=ceil_mode)
    # the window sum is the average times the window size; negative sums (odd p) clamp to zero as PyTorch
    return (ops.sign(out) * ops.relu(ops.abs(out))).mul(math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """1-D power-average pooling: (sum of x^p over each window)^(1/p)."""
    return _lp_pool(1, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """2-D power-average pooling: (sum of x^p over each window)^(1/p)."""
    return _lp_pool(2, input, norm_type, kernel_size, stride, ceil_mode)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False) -> Tensor:
    """3-D power-average pooling: (sum of x^p over each window)^(1/p)."""
    return _lp_pool(3, input, norm_type, kernel_size, stride, ceil_mode)


# -- max_unpool: values scattered back to the positions a max pool took them from ---------------------------
def _unpool_output_size(input: Tensor, kernel: tuple, stride: tuple, padding: tuple, output_size) -> list:
    """PyTorch's default output size of an unpool, or `output_size` checked against it."""
    n = len(kernel)
    default = [(input.shape[-n + d] - 1) * stride[d] + kernel[d] - 2 * padding[d] for d in range(n)]
    if output_size is None:
        return default
    if len(output_size) == n + 2:
        output_size = output_size[2:]
    if len(output_size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} elements, but it has a "
                         f"length of '{len(output_size)}'")
    for d in range(n):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            # torch's message shows the sequence as the caller gave it (a tuple stays a tuple)
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between {low} and {high})')
    return list(output_size)


def _max_unpool(spatial: int, input: Tensor, indices: Tensor, kernel_size, stride, padding, output_size) -> Tensor:
    kernel = _ntuple(kernel_size, spatial)
    stride = _ntuple(stride, spatial) if stride is not None else kernel
    size = _unpool_output_size(input, kernel, stride, _ntuple(padding, spatial), output_size)
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: {list(indices.shape)}")
    if indices.dtype is not dt.int64:
        raise RuntimeError(f"elements in indices should be type int64 but got: {indices.dtype}")
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D or {spatial + 2}D input tensor, but got {list(input.shape)}")
    lead = tuple(input.shape[:-spatial])
    host = indices.numpy()
    bad = host[(host < 0) | (host >= math.prod(size))]
    if bad.size:  # checked here, at the call, as PyTorch does (the scatter would fail later, on the VM)
        # torch's kernel records an invalid index and goes on (no break): the last one is reported
        raise RuntimeError(f"Found an invalid max index: {bad.flat[-1]} (output volumes are of size "
                           f"{'x'.join(map(str, size + [1] * (spatial == 1)))})")  # (1-d runs as 2-d, width 1)
    flat = ops.zeros(lead + (math.prod(size),), dtype=input.dtype, device=input.device)
    out = flat.scatter(-1, indices.flatten(-spatial), input.flatten(-spatial))
    return out.reshape(lead + tuple(size))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool1d: values put back at their `indices`, zeros elsewhere."""
    return _max_unpool(1, input, indices, kernel_size, stride, padding, output_size)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool2d: values put back at their flat `indices`, zeros elsewhere."""
    return _max_unpool(2, input, indices, kernel_size, stride, padding, output_size)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size, stride=None, padding=0, output_size=None) -> Tensor:
    """The partial inverse of max_pool3d: values put back at their flat `indices`, zeros elsewhere."""
    return _max_unpool(3, input, indices, kernel_size, stride, padding, output_size)


# -- fractional max pooling (Graham, 2014) ----------------------------------------------------------------
def _intervals(sample: np.ndarray, size: int, out: int, pool: int) -> np.ndarray:
    """PyTorch's pseudo-random window starts for each sample (computed in the input's precision)."""
    starts = np.empty(sample.shape + (out,), np.int64)
    if out > 1:
        alpha = sample.dtype.type(size - pool) / sample.dtype.type(out - 1)
        i = np.arange(out - 1, dtype=sample.dtype)
        starts[..., :-1] = ((i + sample[..., None]) * alpha).astype(np.int64) - \
            (sample[..., None] * alpha).astype(np.int64)
    if out > 0:
        starts[..., -1] = size - pool
    return starts


def _check_random_samples(samples: Tensor, input: Tensor, n: int, c: int, spatial: int) -> None:
    """torch's checks of a given `_random_samples`, in its order (its words, "then" included)."""
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.dim() != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.dim()}")
    if samples.shape[0] < n:
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != c:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != spatial:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {spatial}; got {samples.shape[2]}.")


def _fractional_max_pool(spatial: int, input: Tensor, kernel_size, output_size, output_ratio, return_indices,
                         _random_samples) -> tuple:
    name = f"fractional_max_pool{spatial}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an output_ratio")
    kernel = _ntuple(kernel_size, spatial)
    if output_size is None:
        ratio = _ntuple(output_ratio, spatial)
        output_size = [int(input.shape[-spatial + d] * ratio[d]) for d in range(spatial)]
    size = _ntuple(output_size, spatial)
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"{name}(): Expected {spatial + 1}D or {spatial + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    batched = input if input.dim() == spatial + 2 else input.unsqueeze(0)
    n, c = batched.shape[:2]
    image = tuple(batched.shape[2:])
    # torch's checks name each dim; its 3-D kernel wants the last window to end before the input's end
    where = f"{name}()" if spatial == 2 else f"{name}_out()"
    for d, dim_name in enumerate(("time", "height", "width")[-spatial:]):
        if size[d] + kernel[d] - 1 > image[d] - (spatial == 3):
            raise RuntimeError(f"{where}: pool {dim_name} {kernel[d]} too large relative to input {dim_name} "
                               f"{image[d]}")
    if _random_samples is None:
        _random_samples = ops.rand(n, c, spatial, dtype=input.dtype, device=input.device)
    else:
        _check_random_samples(_random_samples, input, n, c, spatial)
    # (the host array: bfloat16 samples have no numpy()); an unbatched input reads the first row, as PyTorch's
    samples = _random_samples.detach()._host_array()[:n]
    if samples.dtype.itemsize < 4:
        samples = samples.astype(np.float32)
    # the sample for the last spatial dim comes first, as in PyTorch's 2-D kernel; 3-D reads them in order
    order = list(range(spatial)) if spatial == 3 else [1, 0]
    starts = [_intervals(samples[:, :, order[d]], image[d], size[d], kernel[d]) for d in range(spatial)]
    # flat input position of every tap of every window: (N, C, *out, *kernel)
    flat = np.zeros((n, c) + tuple(size) + kernel, np.int64)
    for d in range(spatial):
        pos = starts[d].reshape((n, c) + tuple(size[d] if e == d else 1 for e in range(spatial)) + (1,) * spatial)
        tap = np.arange(kernel[d]).reshape((1,) * (2 + spatial) + tuple(kernel[d] if e == d else 1
                                                                         for e in range(spatial)))
        flat = flat + (pos + tap) * math.prod(image[d + 1:])
    taps_index = ops.tensor(flat.reshape(n, c, math.prod(size) * math.prod(kernel)), device=input.device)  # (n may be 0)
    taps = batched.flatten(2).gather(2, taps_index).reshape((n, c, math.prod(size), math.prod(kernel)))
    values, best = taps.max(-1)
    indices = taps_index.reshape(n, c, math.prod(size), math.prod(kernel)).gather(3, best.unsqueeze(-1)).squeeze(-1)
    values, indices = values.reshape((n, c) + size), indices.reshape((n, c) + size)
    if input.dim() == spatial + 1:
        values, indices = values.squeeze(0), indices.squeeze(0)
    return (values, indices) if return_indices else values


def fractional_max_pool2d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """2-D max pooling over pseudo-random, overlapping windows that shrink the input by a fractional ratio."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool3d(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples: Tensor | None = None):
    """3-D max pooling over pseudo-random, overlapping windows that shrink the input by a fractional ratio."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, return_indices, _random_samples)


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None) -> tuple:
    """fractional_max_pool2d's values and flat argmax positions."""
    return _fractional_max_pool(2, input, kernel_size, output_size, output_ratio, True, _random_samples)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None) -> tuple:
    """fractional_max_pool3d's values and flat argmax positions."""
    return _fractional_max_pool(3, input, kernel_size, output_size, output_ratio, True, _random_samples)


# -- channel shuffle ------------------------------------------------------------------------------
def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    """Channels (dim 1) regrouped: (N, g, C/g, *) transposed to (N, C/g, g, *), as in ShuffleNet."""
    if input.dim() <= 2:  # torch checks the rank before groups
        raise RuntimeError(f"channel_shuffle expects input with > 2 dims, but got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of groups:{groups}")
    c = input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels and {groups} groups.")
    lead, rest = input.shape[0], tuple(input.shape[2:])
    out = input.reshape((lead, groups, c // groups) + rest).transpose(1, 2).reshape(tuple(input.shape))
    return in_format(out, suggest_memory_format(input))  # torch's kernel writes the format the input suggests


native_channel_shuffle = channel_shuffle
