"""torch.fx.traceback: carry a node's metadata (its stack trace, module stack, source function...) to the nodes
a pass makes from it. Inside `preserve_node_meta()`, the Interpreter makes each node's meta current while it runs
(`set_current_meta`), and every node a tracer creates then copies the current stack trace and the fields torch
copies; Transformer.transform runs so, so a rewritten graph keeps where its nodes came from."""
from __future__ import annotations

import contextlib
import copy
import traceback
from typing import Any, Iterator

__all__ = ["preserve_node_meta", "has_preserved_node_meta", "set_stack_trace", "set_current_meta",
           "get_current_meta", "format_stack", "copy_current_meta"]

# the node.meta fields a created node takes from the current meta (besides the stack trace), as torch's
_COPY_META_FIELDS = ("nn_module_stack", "torch_fn", "source_fn_stack", "original_aten", "recompute", "ac_graph_id",
                     "has_backward_hook", "from_node", "quantization_tag", "_numeric_debug_handle", "custom",
                     "partitioner_tag")
_STATE = {"preserve": False, "meta": {}}


@contextlib.contextmanager
def preserve_node_meta(enable: bool = True) -> Iterator[None]:
    """Within it, nodes created while another node's meta is current copy that meta."""
    saved = (_STATE["preserve"], dict(_STATE["meta"]))
    try:
        _STATE["preserve"] = enable
        yield
    finally:
        _STATE["preserve"], _STATE["meta"] = saved


def has_preserved_node_meta() -> bool:
    """Whether preserve_node_meta is on."""
    return _STATE["preserve"]


def set_stack_trace(stack: list) -> None:
    """Make `stack` (lines) the current stack trace (when preserving)."""
    if _STATE["preserve"] and stack:
        _STATE["meta"]["stack_trace"] = "".join(stack)


@contextlib.contextmanager
def set_current_meta(node: Any, pass_name: str = "") -> Iterator[None]:
    """Make `node.meta` the current meta for the block (when preserving and the node has meta)."""
    if _STATE["preserve"] and node.meta:
        saved = _STATE["meta"]
        try:
            _STATE["meta"] = dict(node.meta)
            yield
        finally:
            _STATE["meta"] = saved
    else:
        yield


def get_current_meta() -> dict:
    """The current meta."""
    return _STATE["meta"]


def format_stack() -> list:
    """The current stack trace when preserving meta, else Python's own stack as text."""
    if _STATE["preserve"]:
        return [_STATE["meta"].get("stack_trace", "")]
    return traceback.format_list(traceback.extract_stack()[:-1])


def copy_current_meta(node: Any) -> None:
    """Give a newly created `node` the current stack trace and copied fields (when preserving)."""
    if not _STATE["preserve"]:
        return
    current = _STATE["meta"]
    if current.get("stack_trace"):
        node.stack_trace = current["stack_trace"]
    for field in _COPY_META_FIELDS:
        if field in current:
            node.meta[field] = copy.copy(current[field])
