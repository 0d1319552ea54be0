"""Pooling: max and average pools in 1-D, 2-D and 3-D, forward and backward, and the kernels of every pool
(the adaptive pools themselves: adaptive_pool.py).

Each pool is a kernel over the canonical (N, C, [D,] H, W) layout of ops/windowed/windows.py paired with the
kernel that computes its gradient; the pair are each other's backward, so double backward works:

    max pools     values + flat input indices   <->  scatter-add by those indices / gather by them
    avg_pool      window sums / divisor          <->  divisor-scaled col2im
    adaptive avg  Ah @ x @ Aw^T (separable)      <->  Ah^T @ g @ Aw

Kernels compute row-major; a result or gradient torch lays out channels_last(_3d) is copied into that layout
(see _batched_format for which pools do).
"""
from __future__ import annotations

from typing import NamedTuple

import functools
import math

import numpy as np

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm.codegen import import_numba_user
from ..dispatch.primitive import Primitive
from ..movement.memory_format import (CONTIGUOUS, format_strides, in_format, relaid, suggest_memory_format,
                                      suggested_format)
from ..dispatch.node_names import torch_node
from .windows import (batched, check_tensor, col2im, compute_array, int_list, not_implemented, padded, pair,
                      sliding_windows)

__all__ = ["max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices"]
METHODS: dict = {}
_COUNT = {2: "two", 3: "three"}


class PoolGeometry(NamedTuple):
    """A pool's windows, and the input (image) and output (result) layouts, as seen and in canonical
    form ((N, C, H, W), or (N, C, D, H, W) for 3-D pools; the names say 4 for either)."""
    image: tuple
    result: tuple
    image4: tuple
    result4: tuple
    kernel: tuple = (1, 1)
    stride: tuple = (1, 1)
    dilation: tuple = (1, 1)
    pads: tuple = (0, 0, 0, 0)   # (before, after) per spatial dim; `after` includes ceil_mode's overhang
    divisor: object = None       # avg_pool: the output-shaped array each window sum is divided by
    tables: tuple = ()           # adaptive pools: per-dim matrices (avg) or window index tables (max)
    result_format: str = CONTIGUOUS  # memory formats of new result- and image-shaped (gradient) tensors; the
    image_format: str = CONTIGUOUS   # kernels compute row-major (see _batched_format)


# -- kernels -------------------------------------------------------------------------------------
def _lowest(dtype: np.dtype):
    return -np.inf if dtype.kind == "f" else np.iinfo(dtype).min


def _argmax(taps: np.ndarray, axis: int) -> np.ndarray:
    """Positions of the maxima along `axis` as PyTorch's scan finds them: the first maximum, or the
    last NaN when there is one."""
    best = taps.argmax(axis=axis)
    if taps.dtype.kind == "f":
        nan = np.isnan(taps)
        if nan.any():
            last = taps.shape[axis] - 1 - np.flip(nan, axis).argmax(axis=axis)
            best = np.where(nan.any(axis=axis), last, best)
    return best


def _planes(shape4: tuple) -> tuple:
    """A canonical shape as (N * C, D, H, W), with D = 1 for 1-D and 2-D pools."""
    return (shape4[0] * shape4[1],) + (1,) * (5 - len(shape4)) + tuple(shape4[2:])


def _triple(values: tuple, fill: int) -> tuple:
    return (fill,) * (3 - len(values)) + tuple(values)


def _is_plain_2x2(geo: PoolGeometry) -> bool:
    """Whether a max pool has 2-D 2x2 windows with stride 2 and no padding, overhang or dilation."""
    return geo.kernel == (2, 2) and geo.stride == (2, 2) and geo.dilation == (1, 1) and not any(geo.pads)


def _max_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    kernels = import_numba_user(".pool_kernels", __package__)  # numba: loaded on first use
    max_pool_2x2, max_pool_forward = kernels.max_pool_2x2, kernels.max_pool_forward
    x = compute_array(ins[0]).reshape(_planes(geo.image4))
    planes = _planes(geo.result4)
    direct = outs[0].dtype == x.dtype  # else computed in float32 for a 16-bit float, then rounded
    values = outs[0].reshape(planes) if direct else np.empty(planes, x.dtype)
    if _is_plain_2x2(geo):
        flat = planes[:1] + planes[2:]  # (planes, H, W): the depth is 1
        max_pool_2x2(x.reshape(x.shape[:1] + x.shape[2:]), values.reshape(flat), outs[1].reshape(flat))
    else:
        max_pool_forward(x, values, outs[1].reshape(planes), _triple(geo.kernel, 1), _triple(geo.stride, 1),
                         _triple(geo.dilation, 1), _triple(geo.pads[0::2], 0), x.dtype.type(_lowest(x.dtype)))
    if not direct:
        outs[0].reshape(planes)[...] = values


def _adaptive_max_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    # separable: the maximum of each window along the last dim first, then along the one before, and
    # so on; picking the first maximum (or last NaN) at every step picks it in row-major order, as
    # PyTorch's scan does
    values = compute_array(ins[0]).reshape(geo.image4)
    index, inner = None, 1  # flat positions within the dims reduced so far, and their input extent
    for d in range(len(geo.tables) - 1, -1, -1):
        axis, table = 2 + d, geo.tables[d]
        taps = np.take(values, table, axis=axis)                  # (..., out_d, K_d, ...)
        best = _argmax(taps, axis=axis + 1)
        values = np.take_along_axis(taps, np.expand_dims(best, axis + 1), axis=axis + 1).squeeze(axis + 1)
        picked = table[np.arange(table.shape[0]).reshape((-1,) + (1,) * (values.ndim - axis - 1)), best]
        index = picked * inner if index is None else picked * inner + np.take_along_axis(index, picked, axis=axis)
        inner *= geo.image4[axis]
    outs[0].reshape(values.shape)[...] = values
    outs[1].reshape(index.shape)[...] = index


def _max_pool_scatter_kernel(ins, outs, geo: PoolGeometry) -> None:
    scatter_add_by_index = import_numba_user(".pool_kernels", __package__).scatter_add_by_index
    planes, pooled, size = geo.image4[0] * geo.image4[1], math.prod(geo.result4[2:]), math.prod(geo.image4[2:])
    grad = compute_array(ins[0]).reshape(planes, pooled)
    target = outs[0].reshape(planes, size)
    total = target if target.dtype == grad.dtype else np.empty(target.shape, grad.dtype)
    scatter_add_by_index(grad, ins[1].reshape(planes, pooled), total)
    if total is not target:
        target[...] = total


def _max_pool_gather_kernel(ins, outs, geo: PoolGeometry) -> None:
    planes = geo.image4[0] * geo.image4[1]
    image = compute_array(ins[0]).reshape(planes, math.prod(geo.image4[2:]))
    picked = np.take_along_axis(image, ins[1].reshape(planes, math.prod(geo.result4[2:])), axis=1)
    outs[0].reshape(picked.shape)[...] = picked


def _avg_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    x = compute_array(ins[0]).reshape(geo.image4)
    windows = sliding_windows(padded(x, geo.pads), geo.result4[2:], geo.kernel, geo.stride, (1,) * len(geo.kernel))
    total = np.zeros(geo.result4, np.int64 if x.dtype.kind in "iu" else x.dtype)
    for offset in np.ndindex(*geo.kernel):
        total += windows[(slice(None), slice(None)) + offset]
    if total.dtype.kind == "i":  # integer averages truncate toward zero, as C++ division does
        divisor = geo.divisor.astype(np.int64)
        outs[0].reshape(geo.result4)[...] = np.sign(total) * np.sign(divisor) * (np.abs(total) // np.abs(divisor))
    else:
        outs[0].reshape(geo.result4)[...] = total / geo.divisor.astype(total.dtype)


def _avg_pool_backward_kernel(ins, outs, geo: PoolGeometry) -> None:
    grad = compute_array(ins[0]).reshape(geo.result4)
    scaled = grad / geo.divisor.astype(grad.dtype)
    rank = len(geo.kernel)
    cols = np.broadcast_to(scaled[(slice(None), slice(None)) + (None,) * rank],
                           geo.result4[:2] + geo.kernel + geo.result4[2:])
    outs[0].reshape(geo.image4)[...] = col2im(cols, geo.image4[2:], geo.stride, (1,) * rank, geo.pads)


def _per_dim_product(x: np.ndarray, matrices: tuple, transpose: bool) -> np.ndarray:
    """x multiplied along each spatial dim d by matrices[d] (out_d, in_d), or by its transpose."""
    if not transpose and x.dtype.kind in "fc" and not np.isfinite(x).all():
        return _per_dim_windows(x, matrices)
    for d, m in enumerate(matrices):
        m = (m.T if transpose else m).astype(x.dtype)
        x = np.moveaxis(np.matmul(m, np.moveaxis(x, 2 + d, -2)), -2, 2 + d)
    return x


def _per_dim_windows(x: np.ndarray, matrices: tuple) -> np.ndarray:
    """The same averages window by window: a product would add 0 * inf = NaN from outside each window, so an
    inf (or NaN) in one window must not reach the others."""
    for d, m in enumerate(matrices):
        axis = 2 + d
        parts = []
        for row in m:
            taps = np.nonzero(row)[0]
            window = np.take(x, np.arange(taps[0], taps[-1] + 1), axis=axis)
            parts.append(window.sum(axis=axis, keepdims=True) / len(taps))
        x = np.concatenate(parts, axis=axis).astype(x.dtype, copy=False) if parts else np.take(x, [], axis=axis)
    return x


def _adaptive_avg_pool_kernel(ins, outs, geo: PoolGeometry) -> None:
    x = compute_array(ins[0]).reshape(geo.image4)
    outs[0].reshape(geo.result4)[...] = _per_dim_product(x, geo.tables, transpose=False)


def _adaptive_avg_pool_backward_kernel(ins, outs, geo: PoolGeometry) -> None:
    g = compute_array(ins[0]).reshape(geo.result4)
    outs[0].reshape(geo.image4)[...] = _per_dim_product(g, geo.tables, transpose=True)


# -- differentiable primitives ---------------------------------------------------------------------
def _max_pool(name: str, x: Tensor, geo: PoolGeometry) -> tuple:
    """(values, flat input indices) of max pool `name` (its record)."""
    values, index = _MAX_POOLS[name]((x,), geo)
    return _laid(values, geo.result_format), _laid(index, geo.result_format)  # (saved index: row-major)


def _max_pool_backward(node, g, _):
    return _scatter(g, node.saved_tensors[0], node.attrs)


def _scatter(g: Tensor, index: Tensor, geo: PoolGeometry) -> Tensor:
    """Gradients of a max pool's outputs added into the input positions `index` picked."""
    return _laid(MAX_POOL_SCATTER((g, index), geo), geo.image_format)


def _gather(image: Tensor, index: Tensor, geo: PoolGeometry) -> Tensor:
    """The values of an input-shaped tensor at a max pool's `index` (the adjoint of `_scatter`)."""
    return _laid(MAX_POOL_GATHER((image, index), geo), geo.result_format)


def _linear_pool(x: Tensor, geo: PoolGeometry, kernel: str, forward: bool = True, saves: bool = True) -> Tensor:
    """A pool linear in its input (avg, adaptive avg), or with `forward` False its adjoint (the
    gradient); each is the other's backward. `saves` False: the node keeps no input (torch's mean)."""
    out = _LINEAR_POOLS[kernel, forward]((x,), geo, saved=None if saves else ())
    return _laid(out, geo.result_format if forward else geo.image_format)


def _linear_pool_record(kernel: str, forward: bool, cpu) -> Primitive:
    name = kernel if forward else kernel + "_backward"
    def backward(node, g):
        node.saved_tensors  # (the pool's input, saved as torch's for its version alone: a later write is refused)
        return _linear_pool(g, node.attrs, kernel, not forward)
    return Primitive(name, lambda ins, geo: [(geo.result if forward else geo.image, ins[0].dtype)], cpu=cpu,
                     cuda=None, backward=backward, saved=("input0",) if forward else ())


# one record per node name torch gives (the pools of every rank run the canonical kernels); each pair of
# records below is the other's backward, so gradients of any order stay pools
_MAX_POOLS = {name: Primitive(name, lambda ins, geo: [(geo.result, ins[0].dtype), (geo.result, dt.int64)],
                              cpu=cpu, cuda=None, backward=_max_pool_backward, saved=("output1", "input0"))
              for name, cpu in (("max_pool1d_with_indices", _max_pool_kernel),
                                ("max_pool2d_with_indices", _max_pool_kernel),
                                ("max_pool3d_with_indices", _max_pool_kernel),
                                ("adaptive_max_pool2d", _adaptive_max_pool_kernel),
                                ("adaptive_max_pool3d", _adaptive_max_pool_kernel))}
MAX_POOL_SCATTER = Primitive("max_pool_scatter", lambda ins, geo: [(geo.image, ins[0].dtype)],
                             cpu=_max_pool_scatter_kernel, cuda=None, saved=("input1",),
                             backward=lambda node, g: (_gather(g, node.saved_tensors[0], node.attrs), None))
MAX_POOL_GATHER = Primitive("max_pool_gather", lambda ins, geo: [(geo.result, ins[0].dtype)],
                            cpu=_max_pool_gather_kernel, cuda=None, saved=("input1",),
                            backward=lambda node, g: (_scatter(g, node.saved_tensors[0], node.attrs), None))
_LINEAR_POOLS = {(kernel, forward): _linear_pool_record(kernel, forward, cpu)
                 for kernel, forward, cpu in (("avg_pool2d", True, _avg_pool_kernel),
                                              ("avg_pool2d", False, _avg_pool_backward_kernel),
                                              ("adaptive_avg_pool2d", True, _adaptive_avg_pool_kernel),
                                              ("adaptive_avg_pool2d", False, _adaptive_avg_pool_backward_kernel))}


def _batched_format(input: Tensor, spatial: int) -> str:
    """The format torch's CPU pool kernels write for a batched `input` (and its gradient): the channels_last(_3d)
    it suggests. Kept by max_pool2d/3d, avg_pool2d and the 2-d adaptive pools (and averages to one element, as
    torch's mean); avg_pool3d and the other 3-d adaptive pools give row-major results. torch runs a 1-d pool as a
    2-d one of the (N, C, 1, L) view, so a (N, C, L) input whose channels are innermost suggests channels_last."""
    if input.dim() != spatial + 2:
        return CONTIGUOUS
    if spatial > 1:
        return suggest_memory_format(input)
    (n, c, length), (sn, sc, sl) = input.shape, input._v.strides
    return suggested_format((n, c, 1, length), (sn, sc, length * sl, sl))


def _laid(t: Tensor, fmt: str) -> Tensor:
    """A pool's new tensor in format `fmt` (a 1-d pool's (N, C, L) one: as the 2-d one it squeezes)."""
    if len(t._v.shape) == 3 and fmt == "channels_last":
        n, c, length = t._v.shape
        strides = format_strides((n, c, 1, length), fmt)
        return relaid(t, strides[:2] + strides[3:])
    return in_format(t, fmt)


def _formats(geo: PoolGeometry, fmt: str) -> PoolGeometry:
    return geo._replace(result_format=fmt, image_format=fmt)


# -- argument checks (calling thread) ----------------------------------------------------------------
def _shape_text(c: int, hw) -> str:
    return "x".join(map(str, (c,) + tuple(hw)))


def _per_dim(value, op: str, arg: str, spatial: int) -> list:
    """A pooling size argument as `spatial` ints, with PyTorch's message for a wrong length."""
    values = int_list(value, op, arg)
    if len(values) == 1:
        return values * spatial
    if len(values) != spatial:
        if op == "max_pool1d":
            raise RuntimeError(f"max_pool1d() {arg} must be an int, list of ints or tuple of ints of size 1 but "
                               f"got size {len(values)}")
        if spatial == 1:
            raise RuntimeError(f"{op}() argument '{arg}' should contain one int (got {len(values)})")
        either = "either be omitted, a single int," if arg == "stride" else "either be a single int,"
        if arg == "dilation":
            either = "be either a single int,"
        if op == "avg_pool3d" and arg == "kernel_size":
            either = "be a single int,"
        raise RuntimeError(f"{op}: {arg} must {either} or a tuple of {_COUNT[spatial]} ints")
    return values


def _check_input_dims(op: str, input: Tensor, spatial: int) -> None:
    """Pools take ((N,) C, *spatial) inputs with non-empty non-batch dims (messages as PyTorch's)."""
    shape = list(input.shape)
    if op == "max_pool1d":
        if input.dim() not in (2, 3) or 0 in shape[-2:]:
            raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size "
                               f"for input, but got:{shape}")
        return
    if input.dim() not in (spatial + 1, spatial + 2):
        if spatial == 1:
            raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.dim()}-dimensional tensor for argument "
                               f"#1 'self' (while checking arguments for {op})")
        raise RuntimeError(f"non-empty {spatial + 1}D or {spatial + 2}D (batch mode) tensor expected for input")
    if 0 in shape[-spatial - 1:]:
        if spatial == 3:
            raise RuntimeError(f"{op}_with_indices_out_cpu_template(): Expected input's non-batch dimensions to have "
                               f"positive length, but input has a shape of {shape} and non-batch dimension "
                               f"{shape.index(0, input.dim() - 4)} has length zero!")
        shown = shape if spatial == 2 else shape[:-1] + [1, shape[-1]]  # 1-D pools run as 2-D ones
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
                           f"got:{shown}")


def _check_max_pool1d(kernel: int, stride: int, padding: int, dilation: int) -> None:
    """max_pool1d's own argument messages."""
    for bad, text in ((kernel <= 0, f"kernel_size must be greater than zero, but got {kernel}"),
                      (stride <= 0, f"stride must be greater than zero, but got {stride}"),
                      (padding < 0, f"padding must be non-negative, but got {padding}"),
                      (dilation <= 0, f"dilation must be greater than zero, but got {dilation}"),
                      (padding > kernel // 2, "padding should be at most half of kernel size, but got "
                                              f"padding={padding} and kernel_size={kernel}")):
        if bad:
            raise RuntimeError(f"max_pool1d() {text}")


def _check_window_values(kernel: tuple, stride: tuple, padding: tuple, dilation: tuple) -> None:
    """The pooling argument messages (1-D pools use the 2-D ones, as in PyTorch)."""
    if 0 in stride:
        raise RuntimeError("stride should not be zero")
    dims = ("T", "H", "W")[-len(kernel):]
    for values, label, text in ((stride, "d", "stride"), (kernel, "k", "kernel size"),
                                (dilation, "dilation", "dilation")):
        if min(values) <= 0:
            shown = " ".join(f"{label}{d}: {v}" for d, v in zip(dims, values))
            raise RuntimeError(f"{text} should be greater than zero, but got {shown}")
    if min(padding) < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {min(padding)}")
    for k, p, d in zip(kernel, padding, dilation):
        if p > ((k - 1) * d + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got pad={p}, "
                               f"kernel_size={k} and dilation={d}")


def _pooled_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output length; with ceil_mode the last window must start inside the input
    or its left padding."""
    out = (size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _window_geometry(op: str, spatial: int, input, kernel_size, stride, padding, dilation,
                     ceil_mode: bool) -> PoolGeometry:
    """Checks and geometry of max_pool/avg_pool."""
    check_tensor(input, op, "input", 1)
    kernel = _per_dim(kernel_size, op, "kernel_size", spatial)
    no_stride = stride is None or (isinstance(stride, (list, tuple)) and not stride)
    stride = list(kernel) if no_stride else _per_dim(stride, op, "stride", spatial)
    padding, dilation = _per_dim(padding, op, "padding", spatial), _per_dim(dilation, op, "dilation", spatial)
    _check_input_dims(op, input, spatial)
    if op == "max_pool1d":
        _check_max_pool1d(kernel[0], stride[0], padding[0], dilation[0])
    kernel, stride = pair(kernel, spatial, 1), pair(stride, spatial, 1)
    padding, dilation = pair(padding, spatial, 0), pair(dilation, spatial, 1)
    _check_window_values(kernel, stride, padding, dilation)
    image4 = batched(input.shape, spatial)
    out = tuple(_pooled_size(n, k, s, p, d, ceil_mode)
                for n, k, s, p, d in zip(image4[2:], kernel, stride, padding, dilation))
    if op == "avg_pool3d" and any(n + 2 * p < k for n, p, k in zip(image4[2:], padding, kernel)):
        raise RuntimeError("input image (T: {} H: {} W: {}) smaller than kernel size (kT: {} kH: {} kW: {})".format(
            *(n + 2 * p for n, p in zip(image4[2:], padding)), *kernel))
    if min(out) < 1:
        if op == "max_pool1d":
            raise RuntimeError(f"max_pool1d() Invalid computed output size: {out[1]}")
        raise RuntimeError(f"Given input size: ({_shape_text(image4[1], image4[2:])}). Calculated output size: "
                           f"({_shape_text(image4[1], out)}). Output size is too small")
    # ceil_mode's last window may overhang the padding: pad the far side enough for it
    far = [max(p, (o - 1) * s + d * (k - 1) + 1 - n - p)
           for n, k, s, p, d, o in zip(image4[2:], kernel, stride, padding, dilation, out)]
    result = tuple(input.shape[:-spatial]) + out[len(out) - spatial:]
    pads = tuple(v for p, f in zip(padding, far) for v in (p, f))
    return PoolGeometry(tuple(input.shape), result, image4, image4[:2] + out, kernel, stride, dilation, pads)


def _divisor(geo: PoolGeometry, padding: tuple, count_include_pad: bool, divisor_override) -> np.ndarray:
    """avg_pool's divisor per output position, following PyTorch: windows count the padding they
    cover (when `count_include_pad`) but never the ceil_mode overhang."""
    if divisor_override is not None:
        return np.full(geo.result4[2:], float(divisor_override))
    sizes = []
    for n, k, s, p, o in zip(geo.image4[2:], geo.kernel, geo.stride, padding, geo.result4[2:]):
        start = np.arange(o) * s - p
        end = np.minimum(start + k, n + p)
        sizes.append(end - start if count_include_pad else np.minimum(end, n) - np.maximum(start, 0))
    return functools.reduce(np.multiply.outer, sizes).astype(np.float64)


def _max_pool_nd(op: str, spatial: int, input, kernel_size, stride, padding, dilation, ceil_mode,
                 return_indices):
    geo = _window_geometry(op, spatial, input, kernel_size, stride, padding, dilation, ceil_mode)
    if input.dtype is dt.bool_:
        raise not_implemented(op, input.dtype)
    if input.dtype.is_complex:  # torch's kernel names: the 1-d and 2-d pools share the 2-d one
        kernel = "max_pool1d_impl" if spatial == 1 and not return_indices else f"max_pool{max(spatial, 2)}d"
        raise not_implemented(kernel, input.dtype)
    if spatial == 3 and suggest_memory_format(input) == "channels_last":  # (an unbatched input)
        raise RuntimeError("Unsupported memory format. Supports only ChannelsLast3d, Contiguous")
    # torch's max_pool1d runs its own row-major kernel, unless it needs indices (return_indices, or a gradient)
    fmt = _batched_format(input, spatial) if spatial > 1 or return_indices or needs_grad((input,)) else CONTIGUOUS
    values, index = _max_pool(f"max_pool{spatial}d_with_indices", input, _formats(geo, fmt))
    return (values, index) if return_indices else values


def _avg_pool_nd(op: str, spatial: int, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                 divisor_override) -> Tensor:
    geo = _window_geometry(op, spatial, input, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    # PyTorch's CPU avg_pool3d has no 16-bit float kernels; refuse them as it does
    half = spatial == 3 and input.dtype in (dt.float16, dt.bfloat16)
    if half or input.dtype.is_complex or not (input.dtype.is_floating_point or input.dtype is dt.int64):
        raise not_implemented("avg_pool3d_out_frame" if spatial == 3 else "avg_pool2d", input.dtype)
    padding = geo.pads[0::2]
    geo = geo._replace(divisor=_divisor(geo, padding, count_include_pad, divisor_override))
    return _linear_pool(input, _formats(geo, _batched_format(input, spatial)) if spatial < 3 else geo, "avg_pool2d")


# -- public pools --------------------------------------------------------------------------------
def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """1-D max pooling of ((N,) C, L) `input`; with `return_indices`, also the argmax positions in L."""
    return _squeezed(_max_pool_nd("max_pool1d", 1, input, kernel_size, stride, padding, dilation, ceil_mode,
                                  return_indices), input)


def max_pool2d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """2-D max pooling of ((N,) C, H, W) `input`; with `return_indices`, also flat argmax positions in H*W."""
    return _max_pool_nd("max_pool2d", 2, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool3d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """3-D max pooling of ((N,) C, D, H, W) `input`; with `return_indices`, also flat argmax positions in D*H*W."""
    return _max_pool_nd("max_pool3d", 3, input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)


def max_pool1d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple:
    """max_pool1d's values and argmax positions."""
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple:
    """max_pool2d's values and flat argmax positions."""
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
                            return_indices: bool = False) -> tuple:
    """max_pool3d's values and flat argmax positions."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


# torch's grad_fn names where it runs a pool through another: 1-d pools as 2-d ones and a squeeze, adaptive
# averages to a single element as a mean
def _squeezed(result, input: Tensor):
    torch_node(result[0] if isinstance(result, tuple) else result, "SqueezeBackward1", input)
    return result


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True) -> Tensor:
    """1-D average pooling of ((N,) C, L) `input`."""
    return _squeezed(_avg_pool_nd("avg_pool1d", 1, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                                  None), input)


def avg_pool2d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """2-D average pooling of ((N,) C, H, W) `input`."""
    return _avg_pool_nd("avg_pool2d", 2, input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                        divisor_override)


def avg_pool3d(input: Tensor, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override: int | None = None) -> Tensor:
    """3-D average pooling of ((N,) C, D, H, W) `input`."""
    return torch_node(_avg_pool_nd("avg_pool3d", 3, input, kernel_size, stride, padding, ceil_mode,
                                   count_include_pad, divisor_override), "avg_pool3d", input)


