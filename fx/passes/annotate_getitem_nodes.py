"""annotate_getitem_nodes (torch.fx.passes.annotate_getitem_nodes): a `seq[i]` node takes its type from the
annotation of `seq` (Tuple[...]/tuple[...] by position, List[T]/list[T], a NamedTuple's field)."""
from __future__ import annotations

import operator
import typing

from ...tensor import Tensor
from ..graph import Graph

__all__ = ["annotate_getitem_nodes"]


def _item_type(seq_type, index: int, parameterized: tuple, kind: str):
    if kind == "tuple":
        if len(parameterized) == 2 and isinstance(parameterized[1], type(...)):
            return parameterized[0]  # Tuple[T, ...]
        if len(parameterized) <= index:
            raise AssertionError(f"Index {index} out of range for parameterized_types (len={len(parameterized)})")
        return parameterized[index]
    if len(parameterized) != 1:
        raise AssertionError(f"Expected 1 parameterized type, got {len(parameterized)}")
    return parameterized[0]


def annotate_getitem_nodes(graph: Graph) -> None:
    """Set the type of each getitem node whose container node has a typed annotation."""
    for node in graph.nodes:
        if node.target is not operator.getitem:
            continue
        seq, index = node.args
        kind_of = seq.type
        if not kind_of:
            continue
        args = typing.get_args(kind_of)
        name = getattr(kind_of, "_name", None)
        origin = getattr(kind_of, "__origin__", None)
        if name in ("Tuple", "List") and hasattr(kind_of, "_name"):
            node.type = _item_type(kind_of, index, args, name.lower())
        elif origin in (tuple, list):
            node.type = _item_type(kind_of, index, args, origin.__name__)
        elif hasattr(kind_of, "__annotations__") and hasattr(kind_of, "_fields") and kind_of is not Tensor:
            node.type = kind_of.__annotations__[kind_of._fields[index]]
