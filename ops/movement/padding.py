"""torch.nn.functional.pad: constant, reflect, replicate and circular padding of the last dims, as index gathers
(a tensor op in torch too; nn.functional and stft reach it here)."""
from __future__ import annotations

import numpy as np

from ...autograd.grad_mode import no_grad
from ...tensor import Tensor
from ..dispatch.node_names import torch_node
from ..dispatch.primitive import Primitive
from ..elementwise import copies
from ..factories.creation import full
from ..indexing.index_ops import INDEX_SELECT
from .memory_format import in_format, suggest_memory_format
from .shape_ops import cat
from .slicing import narrow

__all__ = ["pad"]


def _pad_source_index(size: int, left: int, right: int, mode: str) -> np.ndarray:
    """For each position of the padded dim, the source position it copies (reflect/replicate/circular)."""
    j = np.arange(size + left + right) - left
    if mode == "reflect":
        j = np.abs(j)
        j = np.where(j >= size, 2 * (size - 1) - j, j)
    elif mode == "replicate":
        j = np.clip(j, 0, size - 1)
    else:  # circular, as PyTorch: negative pads crop first, positive pads wrap around what is left
        kept = np.arange(max(-left, 0), size - max(-right, 0))
        j = kept[np.mod(np.arange(-max(left, 0), kept.size + max(right, 0)), max(kept.size, 1))]
    return j


def _check_circular(size: int, left: int, right: int) -> None:
    """PyTorch's errors for circular padding of a dim of `size` by (left, right)."""
    if left > size or right > size:
        raise RuntimeError("Padding value causes wrapping around more than once.")
    if size + left + right < 0:
        raise RuntimeError("Negative padding value is resulting in an empty dimension")
    kept = size - max(-left, 0) - max(-right, 0)
    # PyTorch wraps from its own output: a pad wider than what is kept overlaps the copy's source
    if kept < 0 or (size + left + right > 0 and max(left, right) > kept):
        raise RuntimeError("unsupported operation: some elements of the input tensor and the written-to tensor "
                           "refer to a single memory location. Please clone() the tensor before performing the "
                           "operation.")


def _pad_constant(x: Tensor, d: int, left: int, right: int, value) -> Tensor:
    if left < 0:
        x = narrow(x, d, -left, x.shape[d] + left)
        left = 0
    if right < 0:
        x = narrow(x, d, 0, x.shape[d] + right)
        right = 0
    if left == 0 and right == 0:
        return x
    pieces = []
    for n in (left, right):
        shape = list(x.shape)
        shape[d] = n
        pieces.append(full(tuple(shape), value, dtype=x.dtype, device=x.device))
    return cat([pieces[0], x, pieces[1]], d)


def pad(input: Tensor, pad, mode: str = "constant", value: float | None = None) -> Tensor:
    """Pad the last len(pad)//2 dims: pad = (last_left, last_right, 2nd_last_left, ...)."""
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.dim():
        raise RuntimeError(f"Padding length should be less than or equal to two times the input dimension but got "
                           f"padding length {len(pad)} and input of dimension {input.dim()}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode != "constant":
        if value not in (None, 0, 0.0):
            raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
        dims = len(pad) // 2
        if not (input.dim() in (dims + 1, dims + 2) and 1 <= dims <= 3):
            raise NotImplementedError(f"Padding size {len(pad)} is not supported for {input.dim()}D input tensor.\n"
                                      "Supported combinations for non-constant padding:\n"
                                      "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
                                      "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
                                      "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode == "constant":
        return _constant_pad(input, pad, 0 if value is None else value)
    out = input
    for k in range(len(pad) // 2):
        d = input.dim() - 1 - k
        left, right = pad[2 * k], pad[2 * k + 1]
        size = out.shape[d]
        if mode == "reflect" and (left >= size or right >= size):
            raise RuntimeError(f"Argument #4: Padding size should be less than the corresponding input dimension, "
                               f"but got: padding ({left}, {right}) at dimension {d} of input {list(input.shape)}")
        if mode == "circular":
            _check_circular(size, left, right)
        index = Tensor._from_array(_pad_source_index(size, left, right, mode).astype(np.int64)).to(device=out.device)
        if k == 0 and mode != "circular":  # torch's reflection/replication pads save their input: a later write
            # into it is refused at backward (indices in range)
            out = INDEX_SELECT((out, index), d, checks_data=False, saved=(index, out))
        else:
            out = out.index_select(d, index)
    node = _PAD_NODES.get(mode)
    if node is None:  # circular: a composite in torch too, row-major
        return out
    return in_format(torch_node(out, node.format(len(pad) // 2), input), suggest_memory_format(input))


# torch's grad_fn for each padding mode ({} the number of padded dims); circular is a composite there too
_PAD_NODES = {"reflect": "reflection_pad{}d", "replicate": "replication_pad{}d"}


def _constant_pad(input: Tensor, pad: tuple, value) -> Tensor:
    """Constant padding (negative pads crop), a new tensor whose node (torch's ConstantPadNdBackward0) is edged to
    the input alone and pads the gradient back by the negated pads."""
    with no_grad():
        out = input
        for k in range(len(pad) // 2):
            out = _pad_constant(out, input.dim() - 1 - k, pad[2 * k], pad[2 * k + 1], value)
        if out is input or out._base is not None:  # (no pad, or crops alone: still a new tensor, as torch's)
            out = copies.clone(out)
    CONSTANT_PAD.attach((input,), (out,), tuple(-p for p in pad))
    return in_format(out, suggest_memory_format(input))


def _constant_pad_backward(node, g: Tensor) -> tuple:
    return (_constant_pad(g, node.attrs, 0),)


# constant padding's node on the input (attrs: the negated pads, its gradient's own padding)
CONSTANT_PAD = Primitive("constant_pad_nd", None, cpu=None, backward=_constant_pad_backward)
