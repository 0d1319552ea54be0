"""unfold and fold (torch.nn.functional's im2col and col2im) as ops, forward and backward.

An image cut into sliding blocks (Blocks) and put back: each is the other's gradient, run by the
NumPy helpers that convolution shares (windows.py).
"""
from __future__ import annotations

from typing import NamedTuple

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from .windows import batched, check_tensor, col2im, compute_array, im2col, int_list, not_implemented

__all__ = ["unfold", "fold"]
METHODS: dict = {}



# -- unfold / fold: im2col and col2im as ops ------------------------------------------------------------
class Blocks(NamedTuple):
    """The geometry of unfold/fold: an image cut into sliding blocks."""
    image: tuple       # ((N,) C, H, W)
    columns: tuple     # ((N,) C * kh * kw, blocks)
    image4: tuple
    kernel: tuple
    stride: tuple
    dilation: tuple
    pads: tuple        # (top, bottom, left, right)
    blocks: tuple      # (rows, columns) of blocks


def _im2col_kernel(ins, outs, b: Blocks) -> None:
    cols = im2col(compute_array(ins[0]).reshape(b.image4), b.blocks, b.kernel, b.stride, b.dilation, b.pads)
    outs[0].reshape(cols.shape)[...] = cols


def _col2im_kernel(ins, outs, b: Blocks) -> None:
    n, c, h, w = b.image4
    cols = compute_array(ins[0]).reshape((n, c) + b.kernel + b.blocks)
    outs[0].reshape(b.image4)[...] = col2im(cols, (h, w), b.stride, b.dilation, b.pads)


def _to_columns(x: Tensor, b: Blocks) -> Tensor:
    return IM2COL((x,), b)


def _to_image(cols: Tensor, b: Blocks) -> Tensor:
    return COL2IM((cols,), b)


# each is the other's gradient, so gradients of any order stay im2col / col2im
IM2COL = Primitive("im2col", lambda ins, b: [(b.columns, ins[0].dtype)], cpu=_im2col_kernel, cuda=None,
                   backward=lambda node, g: _to_image(g, node.attrs))
COL2IM = Primitive("col2im", lambda ins, b: [(b.image, ins[0].dtype)], cpu=_col2im_kernel, cuda=None,
                   backward=lambda node, g: _to_columns(g, node.attrs))


def _block_args(op: str, kernel_size, dilation, padding, stride) -> tuple:
    """kernel_size, dilation, padding and stride as pairs, with PyTorch's im2col/col2im checks."""
    args = []
    for name, value in (("kernel_size", kernel_size), ("dilation", dilation), ("padding", padding),
                        ("stride", stride)):
        values = int_list(value, op, name)
        values = values * 2 if len(values) == 1 else values
        if len(values) != 2:
            raise RuntimeError(f"It is expected {name} equals to 2, but got size {len(values)}")
        args.append(tuple(values))
    kernel, dilation, padding, stride = args
    for values, bad, what, label in ((kernel, min(kernel) <= 0, "kernel size should be greater than zero", "kernel"),
                                     (stride, min(stride) <= 0, "stride should be greater than zero", "stride"),
                                     (padding, min(padding) < 0, "padding should be non-negative", "pad"),
                                     (dilation, min(dilation) <= 0, "dilation should be greater than zero",
                                      "dilation")):
        if bad:
            raise RuntimeError(f"{what}, but got {label}_height: {values[0]} {label}_width: {values[1]}")
    return kernel, dilation, padding, stride


def _block_counts(size: tuple, kernel, dilation, padding, stride) -> tuple:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, d, p, s in zip(size, kernel, dilation, padding, stride))


def _check_block_dtype(x: Tensor, kernel_name: str) -> None:
    if not x.dtype.is_floating_point and x.dtype is not dt.bool_:  # torch's im2col/col2im take bool too
        raise not_implemented(kernel_name, x.dtype)


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Sliding blocks of a ((N,) C, H, W) image as columns ((N,) C * kh * kw, blocks): im2col."""
    check_tensor(input, "unfold", "input", 1)
    kernel, dilation, padding, stride = _block_args("unfold", kernel_size, dilation, padding, stride)
    if input.dim() not in (3, 4):
        raise RuntimeError(f"Input Error: Only 3D or 4D input Tensors are supported (got {input.dim()}D)")
    image4 = batched(input.shape, 2)
    if 0 in image4[1:]:
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_block_dtype(input, "im2col_out_cpu")
    blocks = _block_counts(image4[2:], kernel, dilation, padding, stride)
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size {tuple(image4[2:])}, kernel_size={kernel}, dilation="
                           f"{dilation}, padding={padding}, calculated shape of the array of sliding blocks as "
                           f"{blocks}, but its components must be at least one.")
    columns = tuple(input.shape[:-3]) + (image4[1] * kernel[0] * kernel[1], blocks[0] * blocks[1])
    pads = (padding[0], padding[0], padding[1], padding[1])
    return _to_columns(input, Blocks(tuple(input.shape), columns, image4, kernel, stride, dilation, pads, blocks))


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:
    """Columns ((N,) C * kh * kw, blocks) summed back into a ((N,) C, H, W) image: col2im."""
    check_tensor(input, "fold", "input", 1)
    size = int_list(output_size, "fold", "output_size")
    size = tuple(size * 2 if len(size) == 1 else size)
    if len(size) != 2:
        raise RuntimeError(f"It is expected output_size equals to 2, but got size {len(size)}")
    kernel, dilation, padding, stride = _block_args("fold", kernel_size, dilation, padding, stride)
    if input.dim() not in (2, 3) or 0 in input.shape[-2:]:
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
                           f"dimensions for input, but got: {list(input.shape)}")
    _check_block_dtype(input, "col2im_out_cpu")
    rows, count = input.shape[-2:]
    if rows % (kernel[0] * kernel[1]):
        raise RuntimeError("Expected size of input's dimension 1 to be divisible by the product of kernel_size, but "
                           f"got input.size(1)={rows} and kernel_size={kernel}.")
    blocks = _block_counts(size, kernel, dilation, padding, stride)
    if min(blocks) < 1 or blocks[0] * blocks[1] != count:
        raise RuntimeError(f"Given output_size={size}, kernel_size={kernel}, dilation={dilation}, padding={padding}, "
                           f"stride={stride}, expected size of input's dimension 2 to match the calculated number of "
                           f"sliding blocks {blocks[0]} * {blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={count}.")
    image = tuple(input.shape[:-2]) + (rows // (kernel[0] * kernel[1]),) + size
    pads = (padding[0], padding[0], padding[1], padding[1])
    return _to_image(input, Blocks(image, tuple(input.shape), batched(image, 2), kernel, stride, dilation, pads,
                                   blocks))
