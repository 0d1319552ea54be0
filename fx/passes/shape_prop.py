"""ShapeProp: run a GraphModule, noting each node's shape and dtype in node.meta (torch.fx.passes.shape_prop)."""
from __future__ import annotations

from typing import Any, NamedTuple

from ..interpreter import Interpreter
from ..node import Node, map_aggregate
from ...tensor import layout as _layout
from ...tensor import Tensor

__all__ = ["TensorMetadata", "ShapeProp", "extract_tensor_metadata"]


class TensorMetadata(NamedTuple):
    """What ShapeProp records of a tensor value."""
    shape: Any
    dtype: Any
    requires_grad: bool
    stride: tuple
    memory_format: Any
    is_quantized: bool
    qparams: dict


def extract_tensor_metadata(result) -> TensorMetadata:
    """The TensorMetadata of one tensor."""
    memory_format = None
    for fmt in (_layout.contiguous_format, _layout.channels_last, _layout.channels_last_3d):
        try:
            if result.is_contiguous(memory_format=fmt):
                memory_format = fmt
                break
        except (RuntimeError, TypeError, ValueError):
            continue
    return TensorMetadata(result.shape, result.dtype, result.requires_grad, tuple(result.stride()), memory_format,
                          False, {})


class ShapeProp(Interpreter):
    """An Interpreter that stores `tensor_meta` (shape, dtype, ...) and `type` in each node's meta."""

    def __init__(self, gm, fake_mode: Any = None) -> None:
        super().__init__(gm)
        self.fake_mode = fake_mode

    def run_node(self, n: Node) -> Any:
        """Run the node and record its result's metadata."""
        result = super().run_node(n)
        found = []

        def extract(obj):
            if isinstance(obj, Tensor):
                found.append(True)
                return extract_tensor_metadata(obj)
            return obj
        meta = map_aggregate(result, extract)
        if found:
            n.meta["tensor_meta"] = meta
        n.meta["type"] = type(result)
        return result

    def propagate(self, *args) -> Any:
        """Run the module on `args` (recording metadata on the way); returns its output."""
        return super().run(*args)
