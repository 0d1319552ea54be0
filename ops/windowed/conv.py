"""Convolution: conv1d/2d/3d, their transposes and conv_tbc, forward and backward (unfold/fold: fold.py).

Three kernels do all convolution work, and each one's backward is written with the other two, so
gradients of any order come for free:

    convolution(x, w)            y = w @ im2col(x)                     (conv, and the grad of a transpose)
    convolution_backward_input   x = col2im(w^T @ y)                   (conv's input grad; conv_transpose)
    convolution_backward_weight  w = sum over the batch of y @ im2col(x)^T

They work on the canonical (N, C, [D,] H, W) layout of ops/windowed/windows.py: conv1d is conv2d with height 1.
"""
from __future__ import annotations

from typing import NamedTuple

import math

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm import intra_op
from ...vm.codegen import import_numba_user, kernel_module
from ..dispatch import autocast as _ac
from . import conv_rows
from ..movement.memory_format import conv_layout
from ..linalg.product_kernels import blas_matmul, blas_rows
from ..dispatch.primitive import Primitive
from .windows import (COMPILED_FLOATS, TENSOR_TYPE, batched, check_tensor, col2im, compute_array, is_int, int_list,
                      not_implemented, padded, pair, sliding_windows)

__all__ = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc"]
METHODS: dict = {}


class ConvGeometry(NamedTuple):
    """Everything a convolution's kernels need: the layout of the image (the conv's input), the
    weight and the result (the conv's output), as the user sees them and in canonical form (4-D or 5-D)."""
    stride: tuple      # per canonical spatial dim: ([depth,] height, width)
    dilation: tuple
    pads: tuple        # (before, after) per canonical spatial dim: (top, bottom, left, right) in 2-D
    groups: int
    image: tuple
    weight: tuple
    result: tuple
    image4: tuple
    weight4: tuple
    result4: tuple

    @property
    def kernel(self) -> tuple:
        return self.weight4[2:]


# -- kernels -------------------------------------------------------------------------------------
def _taps(geo: ConvGeometry) -> int:
    """Inputs per output value: C/groups * kh * kw (times kd in 3-D)."""
    return geo.weight4[1] * math.prod(geo.kernel)


def _positions(geo: ConvGeometry) -> int:
    """Output positions per plane: oh * ow (times od in 3-D)."""
    return math.prod(geo.result4[2:])


def _compiled(a: np.ndarray, geo: ConvGeometry) -> bool:
    """Whether the compiled 2-D col2im of ops/windowed/conv_kernels.py handles `a`'s dtype and this rank."""
    return len(geo.kernel) == 2 and a.dtype in COMPILED_FLOATS


def _image_columns(x: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """im2col of the image in the batch-inner layout (groups, C/groups * kh * kw, N * oh * ow): one
    product with it convolves (or correlates with) the whole batch at once."""
    n, rank = geo.result4[0], len(geo.kernel)
    windows = sliding_windows(padded(compute_array(x).reshape(geo.image4), geo.pads), geo.result4[2:], geo.kernel,
                              geo.stride, geo.dilation)
    order = (1,) + tuple(range(2, 2 + rank)) + (0,) + tuple(range(2 + rank, 2 + 2 * rank))
    windows = windows.transpose(order)
    cols = blas_rows((geo.groups * _taps(geo),), n * _positions(geo), windows.dtype)
    np.copyto(cols.reshape(windows.shape), windows)
    return cols.reshape(geo.groups, _taps(geo), n * _positions(geo))


def _image(cols: np.ndarray, out: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """col2im of batch-inner columns (C, *kernel, N, *out positions) into an image, written into `out`
    (canonical image shape) when the compiled kernel can; returns the image."""
    n, c = geo.image4[:2]
    cols = cols.reshape((c,) + geo.kernel + (n,) + geo.result4[2:])
    if _compiled(cols, geo) and out.dtype == cols.dtype and out.flags.c_contiguous:
        compiled = import_numba_user(".conv_kernels", __package__).col2im  # numba: loaded on first use
        compiled(np.ascontiguousarray(cols), out, *geo.stride, *geo.dilation, geo.pads[0], geo.pads[2])
        return out
    rank = len(geo.kernel)
    order = (1 + rank, 0) + tuple(range(1, 1 + rank)) + tuple(range(2 + rank, 2 + 2 * rank))
    return col2im(cols.transpose(order), geo.image4[2:], geo.stride, geo.dilation, geo.pads)


def _grouped_weight(w: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """The weight as (groups, out_channels/groups, C/groups * kh * kw)."""
    return compute_array(w).reshape(geo.groups, geo.weight4[0] // geo.groups, _taps(geo))


def _channels_outer(y: np.ndarray, geo: ConvGeometry) -> np.ndarray:
    """A result-shaped array as (groups, out_channels/groups, N * oh * ow), batch inside channels."""
    n, o = geo.result4[:2]
    y = compute_array(y).reshape(n, o, _positions(geo))
    if n > 1:
        rows = blas_rows((o,), n * _positions(geo), y.dtype)
        np.copyto(rows.reshape(o, n, _positions(geo)), y.transpose(1, 0, 2))
        y = rows
    return y.reshape(geo.groups, o // geo.groups, n * _positions(geo))


NUMPY_MACS = 2e10  # multiply-adds a second of the NumPy path (batch-wide columns and product), roughly: its heat


def _by_image(kind: str, geo: ConvGeometry, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
              out: np.ndarray) -> bool:
    """Run work `kind` ("forward", "input_grad", "weight_grad") an image at a time (ops/windowed/conv_image_kernels.py)
    into `out`, where those kernels serve this convolution: 2-D, operands and result of one dtype (float32, float64), at
    least an image per thread (one image: the batch-wide product splits over the threads instead); whether it did."""
    dtype = out.dtype
    if (len(geo.kernel) != 2 or dtype not in COMPILED_FLOATS or a.dtype != dtype or b.dtype != dtype
            or (bias is not None and bias.dtype != dtype) or 0 in geo.image4 or 0 in geo.result4):
        return False
    parallel = intra_op.parallel()
    parts = intra_op.get_threads() if parallel else 1
    if geo.image4[0] < parts:
        return False
    (n, c, h, w), (o, _, kh, kw), (oh, ow) = geo.image4, geo.weight4, geo.result4[2:]
    kernels = kernel_module('.conv_image_kernels', __package__, spent=n * o * oh * ow * _taps(geo) / NUMPY_MACS)
    if kernels is None:
        return False
    dims = np.array((n, c, h, w, o, oh, ow, kh, kw, *geo.stride, *geo.dilation, geo.pads[0], geo.pads[2],
                     geo.groups), np.int64)
    scratch = np.empty(parts * _taps(geo) * oh * ow, dtype)
    target = out if out.flags.c_contiguous else np.empty(out.shape, dtype)
    flat = (np.ascontiguousarray(a).reshape(-1), np.ascontiguousarray(b).reshape(-1),
            np.empty(0, dtype) if bias is None else np.ascontiguousarray(bias).reshape(-1))
    if parallel:
        intra_op.enter()
    run = kernels.run_parallel if parallel else kernels.run_serial
    if kind == "weight_grad":
        partial = np.zeros((parts,) + out.shape, dtype)
        run(kernels.WEIGHT_GRAD, dtype.type(1), *flat, partial.reshape(-1), scratch, dims, parts)
        np.sum(partial, axis=0, out=target)
    else:
        run(getattr(kernels, kind.upper()), dtype.type(1), *flat, target.reshape(-1), scratch, dims, parts)
    if target is not out:
        out[...] = target
    return True


def _convolution_kernel(ins, outs, geo: ConvGeometry) -> None:
    if _by_image("forward", geo, ins[0], ins[1], ins[2] if len(ins) > 2 else None, outs[0]):
        return
    n, o = geo.result4[:2]
    weight, cols = _grouped_weight(ins[1], geo), _image_columns(ins[0], geo)
    rows = blas_rows(weight.shape[:2], cols.shape[-1], np.result_type(weight, cols))
    # (o, n, *positions) -> the (n, o, *positions) result, with the bias added in the same pass
    result = blas_matmul(weight, cols, rows).reshape((o, n) + geo.result4[2:]).swapaxes(0, 1)
    target = outs[0].reshape(geo.result4)
    if len(ins) > 2:
        bias = compute_array(ins[2]).reshape((1, o) + (1,) * (len(geo.result4) - 2))
        if target.dtype == result.dtype:
            np.add(result, bias, out=target)
        else:
            target[...] = result + bias
    else:
        target[...] = result


def _convolution_backward_input_kernel(ins, outs, geo: ConvGeometry) -> None:
    if _by_image("input_grad", geo, ins[0], ins[1], ins[2] if len(ins) > 2 else None, outs[0]):
        return
    weight = _grouped_weight(ins[1], geo).transpose(0, 2, 1)
    target = outs[0].reshape(geo.image4)
    if conv_rows.takes(geo):
        # the slack columns of y's rows are zeros, so the columns' slack is too unless a weight is not finite
        rows = conv_rows.result_rows(ins[0], geo)
        cols = blas_rows(weight.shape[:2], rows.shape[-1], np.result_type(weight, rows))
        blas_matmul(weight, rows, cols)
        conv_rows.add_columns(cols, target, geo, slack_is_zero=bool(np.isfinite(weight).all()))
        image = target
    else:
        image = _image(blas_matmul(weight, _channels_outer(ins[0], geo)), target, geo)
    if len(ins) > 2:
        image += compute_array(ins[2]).reshape((geo.image4[1],) + (1,) * len(geo.kernel))
    if image is not target:
        target[...] = image


def _convolution_backward_weight_kernel(ins, outs, geo: ConvGeometry) -> None:
    if _by_image("weight_grad", geo, ins[0], ins[1], None, outs[0]):
        return
    cols, grad = _image_columns(ins[0], geo), _channels_outer(ins[1], geo)
    target = outs[0].reshape(geo.groups, geo.weight4[0] // geo.groups, _taps(geo))
    if target.dtype == np.result_type(grad, cols):
        blas_matmul(grad, cols.transpose(0, 2, 1), target)
    else:
        target[...] = blas_matmul(grad, cols.transpose(0, 2, 1))


# -- the three differentiable primitives -------------------------------------------------------------
def _wants(node, k: int) -> bool:
    """Whether input `k` of `node` needs a gradient."""
    return node.next_functions[k][0] is not None


def _conjugated(node) -> tuple:
    """The saved factors of a bilinear primitive, conjugated for complex dtypes: each input's gradient is the
    real formula with the other factor conjugated (torch's convention)."""
    return tuple(None if t is None else t.conj() for t in node.saved_tensors)


def _bias_grad(g: Tensor, shape: tuple, geo: ConvGeometry) -> Tensor:
    """The gradient of a per-channel bias added to `g`'s tensor (of `shape`): a sum over all but channels."""
    channel = 0 if len(shape) == len(geo.weight) - 1 else 1
    return g.sum(tuple(d for d in range(len(shape)) if d != channel))


def convolve(x: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry) -> Tensor:
    """The convolution of image `x` by `w` (plus bias `b`), recorded for autograd."""
    return CONVOLUTION((x, w, b), geo)


def _convolve_backward(node, g: Tensor) -> tuple:
    x, w = _conjugated(node)
    geo = node.attrs
    return (convolve_transpose(g, w, None, geo) if _wants(node, 0) else None,
            weight_grad(x, g, geo) if _wants(node, 1) else None,
            _bias_grad(g, geo.result, geo) if _wants(node, 2) else None)


def convolve_transpose(y: Tensor, w: Tensor, b: Tensor | None, geo: ConvGeometry, node: str | None = None) -> Tensor:
    """The adjoint of `convolve` in its image: a transposed convolution of `y` by `w` (plus `b`); `node` names
    its autograd node (conv_transpose's is torch's `convolution`)."""
    return CONVOLUTION_BACKWARD_INPUT((y, w, b), geo, node)


def _convolve_transpose_backward(node, g: Tensor) -> tuple:
    y, w = _conjugated(node)
    geo = node.attrs
    return (convolve(g, w, None, geo) if _wants(node, 0) else None,
            weight_grad(g, y, geo) if _wants(node, 1) else None,
            _bias_grad(g, geo.image, geo) if _wants(node, 2) else None)


def weight_grad(x: Tensor, y: Tensor, geo: ConvGeometry) -> Tensor:
    """The gradient of <y, convolve(x, w)> in w: the correlation of image `x` with result-shaped `y`."""
    return CONVOLUTION_BACKWARD_WEIGHT((x, y), geo)


def _weight_grad_backward(node, g: Tensor) -> tuple:
    x, y = _conjugated(node)
    geo = node.attrs
    return (convolve_transpose(y, g, None, geo) if _wants(node, 0) else None,
            convolve(x, g, None, geo) if _wants(node, 1) else None)


# the three records, each one's backward written with the other two; the bias is an optional input: None
# keeps its place in the node (a None edge, as torch's) and is absent from the kernel's inputs
CONVOLUTION = Primitive("convolution", lambda ins, geo: [(geo.result, ins[0].dtype)], cpu=_convolution_kernel,
                        cuda=None, backward=_convolve_backward, saved=("input0", "input1"), optional=True)
CONVOLUTION_BACKWARD_INPUT = Primitive("convolution_backward_input", lambda ins, geo: [(geo.image, ins[0].dtype)],
                                       cpu=_convolution_backward_input_kernel, cuda=None,
                                       backward=_convolve_transpose_backward, saved=("input0", "input1"),
                                       optional=True)
CONVOLUTION_BACKWARD_WEIGHT = Primitive("convolution_backward_weight", lambda ins, geo: [(geo.weight, ins[0].dtype)],
                                        cpu=_convolution_backward_weight_kernel, cuda=None,
                                        backward=_weight_grad_backward, saved=("input0", "input1"))


# -- argument checks -----------------------------------------------------------------------------
def _per_dim(value, spatial: int, op: str, arg: str) -> list:
    """An int-or-sequence conv argument as `spatial` ints, with PyTorch's length error."""
    values = int_list(value, op, arg)
    if len(values) == 1:
        values = values * spatial
    if len(values) != spatial:
        raise RuntimeError(f"expected {arg} to be a single integer value or a list of {spatial} values to match "
                           f"the convolution dimensions, but got {arg}={values}")
    return values


# the C++ type names torch 2.13's conv prints for a bias of another dtype than the input
_C_TYPE = {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16",
           dt.int64: "long int", dt.int32: "int", dt.int16: "short int", dt.int8: "signed char",
           dt.uint8: "unsigned char", dt.bool_: "bool", dt.complex64: "c10::complex<float>",
           dt.complex128: "c10::complex<double>"}


_NO_TRANSPOSED_KERNEL = frozenset((dt.int32, dt.int16, dt.int8, dt.uint8, dt.bool_))  # (int64 has one)


def _uses_mkldnn(input: Tensor, full: list, w_shape, groups: int) -> bool:
    """Whether torch's CPU conv takes its MKLDNN path (float32 only: groups, a kernel larger than 3x3, a batch, a
    large image), whose dtype refusal differs from the native kernel's."""
    if input.dtype is not dt.float32:
        return False
    image = list(full) if len(full) != 3 else [full[0], full[1], 1, full[2]]  # (1-D: seen as 2-D)
    kernel = list(w_shape[2:]) if len(w_shape) != 3 else [1, w_shape[2]]
    return groups > 1 or (kernel[-1] > 3 and kernel[-2] > 3) or image[0] > 1 or math.prod(image[:4]) > 20480


def _check_dtypes(op: str, input: Tensor, weight: Tensor, bias, transposed: bool = False,
                  mkldnn: bool = False) -> None:
    """torch 2.13's refusals of mixed dtypes, in its order: on the MKLDNN path the weight first; then a plain
    conv's bias (C type names), then the weight ("expected scalar type Double but found Float"); a transposed
    conv names the weight."""
    if mkldnn and weight.dtype is not input.dtype:
        other = "CPUBFloat16Type" if weight.dtype is dt.bfloat16 else f"torch.{TENSOR_TYPE[weight.dtype]}Tensor"
        raise RuntimeError(f"Input type (torch.{TENSOR_TYPE[input.dtype]}Tensor) and weight type ({other}) should be "
                           "the same or input should be a MKLDNN tensor and weight is a dense tensor")
    if transposed and input.dtype in _NO_TRANSPOSED_KERNEL:
        raise not_implemented(f"slow_conv_transpose{3 if weight.dim() == 5 else 2}d_out_cpu", input.dtype)
    if bias is not None and bias.dtype is not input.dtype and not transposed:
        raise RuntimeError(f"Input type ({_C_TYPE.get(input.dtype, input.dtype.name)}) and bias type "
                           f"({_C_TYPE.get(bias.dtype, bias.dtype.name)}) should be the same")
    for other in (weight,) if transposed else (weight, bias):  # (a transposed conv adds any bias)
        if other is None or other.dtype is input.dtype:
            continue
        if input.dtype is dt.bool_ and not transposed:
            break  # torch's kernel refuses bool first (below)
        if input.dtype.is_complex:
            raise RuntimeError(f"Input type (CPU{TENSOR_TYPE[input.dtype]}Type) and weight type "
                               f"(torch.{TENSOR_TYPE[other.dtype]}Tensor) should be the same")
        raise RuntimeError(f"expected scalar type {TENSOR_TYPE[input.dtype]} but found {TENSOR_TYPE[other.dtype]}")
    if input.dtype is dt.bool_:
        raise not_implemented("compute_columns3d" if weight.dim() == 5 else "slow_conv2d_cpu", input.dtype)


def _check_operands(op: str, input, weight, bias, groups, spatial: int, transposed: bool) -> tuple:
    """Shared checks of conv and conv_transpose; returns the canonical input shape."""
    check_tensor(input, op, "input", 1)
    check_tensor(weight, op, "weight", 2)
    if bias is not None:
        check_tensor(bias, op, "bias", 3)
    if not is_int(groups):
        raise TypeError(f"{op}(): argument 'groups' must be int, not {type(groups).__name__}")
    if input.dim() not in (spatial + 1, spatial + 2):
        raise RuntimeError(f"Expected {spatial + 1}D (unbatched) or {spatial + 2}D (batched) input to {op}, but "
                           f"got input of size: {list(input.shape)}")
    full = list(input.shape) if input.dim() == spatial + 2 else [1] + list(input.shape)
    if weight.dim() != spatial + 2:
        raise RuntimeError(f"Expected {weight.dim()}-dimensional input for {weight.dim()}-dimensional weight "
                           f"{list(weight.shape)}, but got {len(full)}-dimensional input of size {full} instead")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    w_shape = list(weight.shape)
    if w_shape[0] < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but "
                           f"got weight of size {w_shape} instead")
    if w_shape[0] % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, "
                           f"but got weight of size [{w_shape}] instead")
    channels = w_shape[0] if transposed else w_shape[1] * groups
    if full[1] != channels:
        given = "transposed=1" if transposed else f"groups={groups}"
        raise RuntimeError(f"Given {given}, weight of size {w_shape}, expected input{full} to have {channels} "
                           f"channels, but got {full[1]} channels instead")
    out_channels = w_shape[1] * groups if transposed else w_shape[0]
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != out_channels):
        given = "transposed=1, " if transposed else ""
        raise RuntimeError(f"Given {given}weight of size {w_shape}, expected bias to be 1-dimensional with "
                           f"{out_channels} elements, but got bias of size {list(bias.shape)} instead")
    _check_dtypes(op, input, weight, bias, transposed, _uses_mkldnn(input, full, w_shape, groups))
    if any(s == 0 for s in full[2:]):
        raise RuntimeError(f"Only zero batch or zero channel inputs are supported, but got input shape: {full}")
    if any(k == 0 for k in w_shape[2:]):
        raise RuntimeError(f"{op}: expected a non-empty kernel, but got weight of size {w_shape}")
    return tuple(full)


def _check_window_args(stride: list, dilation: list, padding: list | None) -> None:
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if padding is not None and any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    if any(d < 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(d == 0 for d in dilation):  # (torch words a zero by its backend: this is oneDNN's, batched inputs')
        raise RuntimeError("non-positive dilation is not supported")


def _same_pads(kernel: list, dilation: list) -> list:
    """PyTorch's padding='same': the total padding split with the odd element after the image."""
    pads = []
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads += [total // 2, total - total // 2]
    return pads


def _geometry(weight: Tensor, spatial: int, stride: list, dilation: list, pads: list, groups: int,
              image: tuple, result: tuple) -> ConvGeometry:
    """A ConvGeometry from per-dim arguments (pads as before/after pairs per spatial dim)."""
    pads = [0, 0] * (len(batched(image, spatial)) - 2 - spatial) + pads
    return ConvGeometry(pair(stride, spatial, 1), pair(dilation, spatial, 1), tuple(pads), groups, image,
                        tuple(weight.shape), result, batched(image, spatial), batched(weight.shape, spatial),
                        batched(result, spatial))


def _convnd(op: str, spatial: int, input, weight, bias, stride, padding, dilation, groups) -> Tensor:
    if _ac.ACTIVE[0]:
        input, weight, bias = _ac.lower(input, weight, bias)
    stride, dilation = _per_dim(stride, spatial, op, "stride"), _per_dim(dilation, spatial, op, "dilation")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if padding == "same" and any(s != 1 for s in stride):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        pad_list = None
    else:
        pad_list = _per_dim(padding, spatial, op, "padding")
    full = _check_operands(op, input, weight, bias, groups, spatial, transposed=False)
    _check_window_args(stride, dilation, pad_list)
    kernel = list(weight.shape[2:])
    if padding == "same":
        pads = _same_pads(kernel, dilation)
    else:
        pads = [p for p in (pad_list or [0] * spatial) for _ in range(2)]
    padded_size = [s + pads[2 * i] + pads[2 * i + 1] for i, s in enumerate(full[2:])]
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilation)]
    if any(p < e for p, e in zip(padded_size, extent)):
        raise RuntimeError(f"Calculated padded input size per channel: ({' x '.join(map(str, padded_size))}). "
                           f"Kernel size: ({' x '.join(map(str, extent))}). Kernel size can't be greater than "
                           "actual input size")
    out_size = [(p - e) // s + 1 for p, e, s in zip(padded_size, extent, stride)]
    result = tuple(input.shape[:-spatial - 1]) + (weight.shape[0],) + tuple(out_size)
    geo = _geometry(weight, spatial, stride, dilation, pads, groups, tuple(input.shape), result)
    return conv_layout(convolve(input, weight, bias, geo), input, weight)  # channels_last in, channels_last out


def _conv_transposend(op: str, spatial: int, input, weight, bias, stride, padding, output_padding, groups,
                      dilation) -> Tensor:
    if _ac.ACTIVE[0]:
        input, weight, bias = _ac.lower(input, weight, bias)
    stride, dilation = _per_dim(stride, spatial, op, "stride"), _per_dim(dilation, spatial, op, "dilation")
    padding = _per_dim(padding, spatial, op, "padding")
    output_padding = _per_dim(output_padding, spatial, op, "output_padding")
    full = _check_operands(op, input, weight, bias, groups, spatial, transposed=True)
    _check_window_args(stride, dilation, padding)
    if any(p < 0 for p in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(p >= s and p >= d for p, s, d in zip(output_padding, stride, dilation)):
        parts = []
        for name, values in (("output_padding", output_padding), ("stride", stride), ("dilation", dilation)):
            dims = pair(values, spatial, 0 if name == "output_padding" else 1)
            labels = ("depth", "height", "width")[-len(dims):]
            parts.append(" ".join(f"{name}_{label}: {v}" for label, v in zip(labels, dims)))
        raise RuntimeError("output padding must be smaller than either stride or dilation, but got "
                           + " ".join(parts))
    kernel = list(weight.shape[2:])
    out_size = [(n - 1) * s - 2 * p + d * (k - 1) + op_ + 1
                for n, s, p, d, k, op_ in zip(full[2:], stride, padding, dilation, kernel, output_padding)]
    if any(s <= 0 for s in out_size):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, full[2:]))}). Calculated output "
                           f"size per channel: ({' x '.join(map(str, out_size))}). Output size is too small")
    image = tuple(input.shape[:-spatial - 1]) + (weight.shape[1] * groups,) + tuple(out_size)
    pads = [p for p in padding for _ in range(2)]
    geo = _geometry(weight, spatial, stride, dilation, pads, groups, image, tuple(input.shape))
    # channels_last in, channels_last out (as convolutions)
    return conv_layout(convolve_transpose(input, weight, bias, geo, node="convolution"), input, weight)


# -- public convolutions -------------------------------------------------------------------------
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """1-D cross-correlation of (N, C, L) or (C, L) `input` with (O, C/groups, k) `weight`."""
    return _convnd("conv1d", 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """2-D cross-correlation of (N, C, H, W) or (C, H, W) `input` with (O, C/groups, kh, kw) `weight`."""
    return _convnd("conv2d", 2, input, weight, bias, stride, padding, dilation, groups)


def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0, dilation=1,
           groups: int = 1) -> Tensor:
    """3-D cross-correlation of (N, C, D, H, W) or (C, D, H, W) `input` with (O, C/groups, kd, kh, kw) `weight`."""
    return _convnd("conv3d", 3, input, weight, bias, stride, padding, dilation, groups)


def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """1-D transposed convolution (the gradient of conv1d in its input) with (C, O/groups, k) `weight`."""
    return _conv_transposend("conv_transpose1d", 1, input, weight, bias, stride, padding, output_padding,
                             groups, dilation)


def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """2-D transposed convolution (the gradient of conv2d in its input) with (C, O/groups, kh, kw) `weight`."""
    return _conv_transposend("conv_transpose2d", 2, input, weight, bias, stride, padding, output_padding,
                             groups, dilation)


def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride=1, padding=0,
                     output_padding=0, groups: int = 1, dilation=1) -> Tensor:
    """3-D transposed convolution (the gradient of conv3d in its input) with (C, O/groups, kd, kh, kw) `weight`."""
    return _conv_transposend("conv_transpose3d", 3, input, weight, bias, stride, padding, output_padding,
                             groups, dilation)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """1-D convolution in (time, batch, channel) layout with a (k, in, out) `weight`; negative `pad` crops."""
    if input.dim() != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.dim() != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, out_channels.")
    if bias.dim() != 1 or bias.shape[0] != weight.shape[2]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output channels).")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if pad < 0:
        input = input[-pad:input.shape[0] + pad]
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=max(pad, 0))
    return out.permute(2, 0, 1)


