"""A minimal pytree: flatten nested tuples, lists and dicts of leaves, and build them back."""
from __future__ import annotations

from typing import Any, Callable


class TreeSpec:
    """The shape of a pytree: its container kind, keys and children (None marks a leaf)."""

    __slots__ = ("kind", "keys", "children")

    def __init__(self, kind, keys=None, children=()):
        self.kind, self.keys, self.children = kind, keys, children

    @property
    def num_leaves(self) -> int:
        """How many leaves the tree holds."""
        return 1 if self.kind is None else sum(c.num_leaves for c in self.children)

    def __repr__(self) -> str:
        return "*" if self.kind is None else f"{self.kind.__name__}({', '.join(map(repr, self.children))})"


LEAF = TreeSpec(None)


def _flatten(node, leaves: list) -> TreeSpec:
    # module-level recursion: a recursive closure is a reference cycle that would keep the leaves alive
    if isinstance(node, (tuple, list)):
        return TreeSpec(type(node), None, tuple(_flatten(c, leaves) for c in node))
    if isinstance(node, dict):
        keys = tuple(node)
        return TreeSpec(type(node), keys, tuple(_flatten(node[k], leaves) for k in keys))
    leaves.append(node)
    return LEAF


def tree_flatten(tree: Any) -> tuple:
    """The leaves of `tree` in order, and its spec."""
    leaves: list = []
    spec = _flatten(tree, leaves)
    return leaves, spec


def _build(spec: TreeSpec, it) -> Any:
    if spec.kind is None:
        return next(it)
    children = [_build(c, it) for c in spec.children]
    if spec.keys is not None:
        return spec.kind(zip(spec.keys, children))
    if hasattr(spec.kind, "_fields"):  # a namedtuple
        return spec.kind(*children)
    return spec.kind(children)


def tree_unflatten(leaves, spec: TreeSpec) -> Any:
    """Rebuild the tree of `spec` from `leaves`."""
    return _build(spec, iter(leaves))


def tree_map(fn: Callable, tree: Any) -> Any:
    """`tree` with `fn` applied to every leaf."""
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def _broadcast(p, node, out: list, what: str) -> None:
    if isinstance(node, (tuple, list, dict)) and isinstance(p, (tuple, list, dict)):
        if isinstance(node, dict):
            if not isinstance(p, dict) or set(p) != set(node):
                raise ValueError(f"{what} does not match the structure of the inputs")
            for k in node:
                _broadcast(p[k], node[k], out, what)
            return
        if isinstance(p, dict) or len(p) != len(node):
            raise ValueError(f"{what} does not match the structure of the inputs: expected {len(node)} "
                             f"entries, got {len(p)}")
        for pc, c in zip(p, node):
            _broadcast(pc, c, out, what)
        return
    if isinstance(p, (tuple, list, dict)):
        raise ValueError(f"{what} does not match the structure of the inputs")
    out.extend([p] * tree_flatten(node)[1].num_leaves)


def broadcast_prefix(prefix: Any, tree: Any, what: str = "in_dims") -> list:
    """One value per leaf of `tree`, from `prefix`, a tree that matches `tree` down to some depth."""
    out: list = []
    _broadcast(prefix, tree, out, what)
    return out
