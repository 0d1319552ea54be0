"""One walk over the recorded graph: from some nodes (a tensor's grad_fn) down to the leaf accumulators.

Forward-mode AD, the func transforms and activation checkpointing each ask a different question of
the graph (which dual nodes does it reach, does it leave this transform, where does the segment
end), but all walk it the same way; this is that walk, written once.
"""
from __future__ import annotations

from typing import Callable, Iterable, Iterator

from .graph import AccumulateGrad, Node

__all__ = ["walk", "leaves_reached", "roots_of"]


def roots_of(tensors: Iterable) -> list:
    """The grad_fn of each tensor that has one (where a walk from `tensors` starts)."""
    return [t.grad_fn for t in tensors if getattr(t, "grad_fn", None) is not None]


def walk(roots: Iterable, prune: Callable[[Node], bool] | None = None) -> Iterator[Node]:
    """Every node reachable from `roots` (None entries are skipped), each once, depth-first. A node for
    which `prune(node)` is true is neither yielded nor walked through. A node's inputs are taken before
    it is yielded, so the caller may rewire `next_functions` without changing the walk."""
    seen: set = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if prune is not None and prune(node):
            continue
        if not isinstance(node, AccumulateGrad):
            stack.extend(nxt for nxt, _ in node.next_functions)
        yield node


def leaves_reached(roots: Iterable, prune: Callable[[Node], bool] | None = None) -> Iterator:
    """The leaf tensors whose accumulators a walk from `roots` reaches."""
    for node in walk(roots, prune):
        if isinstance(node, AccumulateGrad):
            yield node.variable
