"""Memory formats: the strides torch gives a result for `memory_format=` (contiguous_format, channels_last,
channels_last_3d, preserve_format), and the layout its TensorIterator gives elementwise results of
channels_last inputs. A tidal tensor is already a strided view of its blob, so a format is only a choice of
strides for new memory: values never change.

Torch's rules, as followed here:
- contiguous(fmt): self when already dense in fmt's order, else a copy laid out in it (preserve refused);
- clone/empty_like/*_like/to with preserve_format: a dense non-overlapping input keeps its strides, another
  gets the dense strides of its stride order; explicit formats lay the result out in their order. One
  difference: torch's default memory_format is preserve_format, but tidal's own code relies on clone() and
  to() giving row-major copies, so without memory_format= they keep the layout only of inputs whose strides
  suggest channels_last(_3d) (torch's suggest_memory_format); an explicit preserve_format follows torch fully;
- an elementwise result follows its inputs' stride order (TensorIterator's permutation) when one of them suggests
  channels_last(_3d) (dense or sliced); tidal keeps row-major results for other strided inputs;
- cat (and stack along an existing dim) lays its result out in the format every input suggests.
torch's two "dense strides in the inputs' stride order" rules (infer_dense_strides, TensorIterator's) are one
function, `dense_strides`. The stride arithmetic is in stride_rules.py; this file makes the tensors (empty ones in a
format, `to`'s copies, results relaid in a format); clone/contiguous and `laid_out` (a copy into given strides) are
ops/elementwise/copies.py's.
"""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides
from ..dispatch.factory_args import empty_strided_tensor
from ..elementwise.copies import convert, laid_out
# the stride rules (importers take them from here too)
from .stride_rules import (CONTIGUOUS, PRESERVE, _RANK, cat_memory_format, channels_last_like,  # noqa: F401
                           dense_strides, elementwise_strides, format_strides, iterator_strides, memory_format_name,
                           non_overlapping_and_dense, preserved_strides, suggest_memory_format, suggested_format)

__all__ = ["memory_format_name", "format_strides", "empty_in_format", "to_layout", "preserved_strides", "laid_out",
           "elementwise_strides", "iterator_strides", "conv_layout", "channels_last_like",
           "suggest_memory_format", "non_overlapping_and_dense", "dense_strides", "cat_memory_format", "in_format",
           "relaid", "suggested_format"]


def empty_in_format(t: Tensor, memory_format) -> Tensor:
    """torch.empty(memory_format=): a new tensor like `t` (fresh, uninitialized) laid out in the format."""
    name = memory_format_name("empty", memory_format, CONTIGUOUS)
    if name == PRESERVE:
        raise RuntimeError("unsupported memory format Preserve")
    strides = format_strides(t._v.shape, name)
    if strides == t._v.strides:
        return t
    out = empty_strided_tensor(t._v.shape, strides, t.dtype, t.device)
    out.requires_grad = t.requires_grad
    return out


def to_layout(x: Tensor, dtype: dt.dtype, copy: bool, memory_format) -> Tensor | None:
    """Tensor.to's memory format on the same device: the result, or None for the caller's row-major
    conversion (preserve_format of a row-major input)."""
    name = memory_format_name("to", memory_format)
    if dtype is x.dtype and not copy and (name == PRESERVE or suggest_memory_format(x) == name):
        return x
    if name == PRESERVE:
        if memory_format is None and (x.is_contiguous() or suggest_memory_format(x) == CONTIGUOUS):
            return None  # (tidal's default: see the module's docstring)
        strides = preserved_strides(x)
        return None if strides == contiguous_strides(x._v.shape) else laid_out(x, strides, dtype)
    return laid_out(x, format_strides(x._v.shape, name), dtype)


# -- convolutions ----------------------------------------------------------------------------------------
def conv_layout(result: Tensor, input: Tensor, weight: Tensor) -> Tensor:
    """torch's CPU convolution gives a channels_last result when its input or weight is channels_last."""
    fmt = suggest_memory_format(input)
    return in_format(result, suggest_memory_format(weight) if fmt == CONTIGUOUS else fmt)


def in_format(result: Tensor, fmt: str) -> Tensor:
    """`result` (a new op result) laid out in format `fmt`: itself for contiguous_format or a format of another
    rank, else a copy that keeps its grad_fn (kernels compute row-major; torch's CPU kernels write the format)."""
    if fmt == CONTIGUOUS or len(result._v.shape) != _RANK[fmt]:
        return result
    return relaid(result, format_strides(result._v.shape, fmt))


def relaid(result: Tensor, strides: tuple) -> Tensor:
    """`result` (a new op result) with `strides`: itself when it has them, else a copy that keeps its grad_fn."""
    if strides == result._v.strides:
        return result
    return laid_out(result, strides, node="clone") if result.grad_fn is None else _relaid(result, strides)


def _relaid(result: Tensor, strides: tuple) -> Tensor:
    """A copy of a result in the graph with `strides`, that keeps the result's node as its grad_fn."""
    out = empty_strided_tensor(result._v.shape, strides, result.dtype, result.device)
    convert(result.detach(), result.dtype, out=out)
    out._v.blob.version = 0
    out.grad_fn, out._requires_grad, out._output_nr = result.grad_fn, True, result._output_nr
    return out
