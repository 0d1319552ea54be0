"""Pytrees (torch.utils._pytree): nested containers flattened to a list of leaves and a TreeSpec that builds
them back, with map/any/all helpers, key paths and a registry for user container types.

Containers (nodes) are tuple, list, dict, OrderedDict, defaultdict, deque, named tuples, tidal's return types
(torch's structseqs: max, sort...) and Size, plus whatever `register_pytree_node` adds; anything else, None
included, is a leaf. Specs print, compare and report their counts as torch's do.
"""
from __future__ import annotations

import collections
import dataclasses
from typing import Any, Callable, Iterable

from ..tensor.tensor import Size

__all__ = ["PyTree", "Context", "FlattenFn", "UnflattenFn", "TreeSpec", "LeafSpec", "SUPPORTED_NODES", "NodeDef",
           "register_pytree_node", "tree_is_leaf", "tree_flatten", "tree_unflatten", "tree_iter", "tree_leaves",
           "tree_structure", "tree_map", "tree_map_", "tree_map_only", "tree_map_only_", "tree_all", "tree_any",
           "tree_all_only", "tree_any_only", "tree_flatten_with_path", "tree_leaves_with_path",
           "tree_map_with_path", "keystr", "key_get", "SequenceKey", "MappingKey", "GetAttrKey", "treespec_pprint",
           "is_namedtuple",
           "is_namedtuple_class", "is_namedtuple_instance", "is_structseq", "is_structseq_class",
           "is_structseq_instance"]

PyTree = Any
Context = Any
FlattenFn = Callable[[PyTree], "tuple[list, Context]"]
UnflattenFn = Callable[[Iterable, Context], PyTree]


@dataclasses.dataclass(frozen=True)
class NodeDef:
    """How one container type flattens (children, context) and is rebuilt from them."""
    type: Any
    flatten_fn: Callable
    unflatten_fn: Callable
    flatten_with_keys_fn: Callable | None = None


SUPPORTED_NODES: dict = {}


# -- key paths -------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class SequenceKey:
    """A position in a sequence: `[idx]`."""
    idx: int

    def __str__(self) -> str:
        return f"[{self.idx!r}]"

    def get(self, sequence: Any) -> Any:
        """The child at this position."""
        return sequence[self.idx]


@dataclasses.dataclass(frozen=True)
class MappingKey:
    """A key of a mapping: `[key]`."""
    key: Any

    def __str__(self) -> str:
        return f"[{self.key!r}]"

    def get(self, mapping: Any) -> Any:
        """The child under this key."""
        return mapping[self.key]


@dataclasses.dataclass(frozen=True)
class GetAttrKey:
    """An attribute: `.name`."""
    name: str

    def __str__(self) -> str:
        return f".{self.name}"

    def get(self, obj: Any) -> Any:
        """The child in this attribute."""
        return getattr(obj, self.name)


def keystr(kp: tuple) -> str:
    """A key path as text: `['a'][1].x`."""
    return "".join(str(k) for k in kp)


def key_get(obj: Any, kp: tuple) -> Any:
    """The part of `obj` at key path `kp`."""
    for k in kp:
        obj = k.get(obj)
    return obj


# -- named tuples and structseqs -------------------------------------------------------------------------
def is_structseq_class(cls: type) -> bool:
    """Whether `cls` is a return type of torch functions (torch.return_types: max, sort, ...)."""
    return isinstance(cls, type) and issubclass(cls, tuple) and cls.__module__ in ("tidal.ops.dispatch.return_types",
                                                                                   "torch.return_types")


def is_structseq_instance(obj: Any) -> bool:
    """Whether `obj` is an instance of a torch return type."""
    return is_structseq_class(type(obj))


def is_structseq(obj: Any) -> bool:
    """Whether `obj` (a class or an instance) is a torch return type."""
    return is_structseq_class(obj if isinstance(obj, type) else type(obj))


def is_namedtuple_class(cls: type) -> bool:
    """Whether `cls` is a named tuple class (collections.namedtuple or typing.NamedTuple)."""
    return (isinstance(cls, type) and issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple)
            and callable(getattr(cls, "_make", None)) and not is_structseq_class(cls))


def is_namedtuple_instance(obj: Any) -> bool:
    """Whether `obj` is a named tuple."""
    return is_namedtuple_class(type(obj))


def is_namedtuple(obj: Any) -> bool:
    """Whether `obj` (a class or an instance) is a named tuple."""
    return is_namedtuple_class(obj if isinstance(obj, type) else type(obj))


# -- specs -----------------------------------------------------------------------------------------------
class TreeSpec:
    """The structure of a pytree: the node's type, its context (dict keys, a named tuple's class...) and the
    specs of its children."""

    def __init__(self, type: Any, context: Context, children_specs: list) -> None:
        self.type, self.context, self.children_specs = type, context, list(children_specs)
        self.num_nodes = 1 + sum(c.num_nodes for c in self.children_specs)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)
        self.num_children = len(self.children_specs)

    def is_leaf(self) -> bool:
        """Whether this spec is a single leaf."""
        return self.type is None

    def children(self) -> list:
        """The children's specs."""
        return list(self.children_specs)

    def child(self, index: int) -> "TreeSpec":
        """One child's spec."""
        return self.children_specs[index]

    def __eq__(self, other: Any) -> bool:
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    __hash__ = None  # (mutable lists inside, as torch's)

    def __repr__(self, indent: int = 0) -> str:
        if self.is_leaf():
            return "*"
        name = getattr(self.type, "__name__", str(self.type))
        inner = ""
        if self.children_specs:
            indent += 2
            parts = [c.__repr__(indent) for c in self.children_specs]
            inner = parts[0] + ("," if len(parts) > 1 else "") + ",".join("\n" + " " * indent + p for p in parts[1:])
        return f"TreeSpec({name}, {self.context}, [{inner}])"

    def unflatten(self, leaves: Iterable) -> PyTree:
        """The pytree of this structure holding `leaves`."""
        leaves = list(leaves)
        if len(leaves) != self.num_leaves:
            raise ValueError(f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers "
                             f"to a pytree that holds {self.num_leaves} items ({self}).")
        return _build(self, iter(leaves))

    def flatten_up_to(self, tree: PyTree) -> list:
        """The subtrees of `tree` at this spec's leaves (`tree` must have this structure above them)."""
        out: list = []
        _up_to(self, tree, out)
        return out


class LeafSpec(TreeSpec):
    """The spec of a leaf (`*`)."""

    def __init__(self) -> None:
        super().__init__(None, None, [])
        self.num_nodes, self.num_leaves = 1, 1


_LEAF = LeafSpec()


def _node_type(tree: Any) -> Any:
    """The registry key for `tree`'s node type (None for a leaf)."""
    cls = type(tree)
    if cls in SUPPORTED_NODES:
        return cls
    if is_namedtuple_class(cls):
        return collections.namedtuple
    if is_structseq_class(cls):
        return _STRUCTSEQ
    return None


def tree_is_leaf(tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether `tree` is a leaf (not a registered container, or `is_leaf` says so)."""
    return (is_leaf is not None and is_leaf(tree)) or _node_type(tree) is None


def _spec_type(key: Any, tree: Any) -> Any:
    return type(tree) if key is _STRUCTSEQ else key


def _flatten(tree: Any, is_leaf: Callable | None, leaves: list, paths: list | None, path: tuple) -> TreeSpec:
    if tree_is_leaf(tree, is_leaf):
        leaves.append(tree)
        if paths is not None:
            paths.append(path)
        return _LEAF
    key = _node_type(tree)
    node = SUPPORTED_NODES[key]
    if paths is None:
        children, context = node.flatten_fn(tree)
        specs = [_flatten(c, is_leaf, leaves, None, ()) for c in children]
    else:
        if node.flatten_with_keys_fn is None:
            raise ValueError(f"Did not find a flatten_with_keys_fn for type: {_spec_type(key, tree)}. Please pass a "
                             "flatten_with_keys_fn argument to register_pytree_node.")
        keyed, context = node.flatten_with_keys_fn(tree)
        specs = [_flatten(c, is_leaf, leaves, paths, path + (k,)) for k, c in keyed]
    return TreeSpec(_spec_type(key, tree), context, specs)


def _build(spec: TreeSpec, leaves: Iterable) -> Any:
    if spec.is_leaf():
        return next(leaves)
    children = [_build(c, leaves) for c in spec.children_specs]
    if is_structseq_class(spec.type):  # (tidal's return types are named tuples; torch's take one sequence)
        return spec.type._make(children) if hasattr(spec.type, "_make") else spec.type(children)
    return SUPPORTED_NODES[spec.type].unflatten_fn(children, spec.context)


def _up_to(spec: TreeSpec, tree: Any, out: list) -> None:
    if spec.is_leaf():
        out.append(tree)
        return
    key = _node_type(tree)
    if key is None or _spec_type(key, tree) is not spec.type:
        raise ValueError(f"Node type mismatch; expected {spec.type}, but got {type(tree)}.")
    children, context = SUPPORTED_NODES[key].flatten_fn(tree)
    if len(children) != spec.num_children:
        raise ValueError(f"Node arity mismatch; expected {spec.num_children}, but got {len(children)}.")
    if context != spec.context:
        raise ValueError(f"Node context mismatch for custom node type {spec.type}.")
    for c, s in zip(children, spec.children_specs):
        _up_to(s, c, out)


# -- the public functions --------------------------------------------------------------------------------
def tree_flatten(tree: PyTree, is_leaf: Callable | None = None) -> tuple:
    """The leaves of `tree` in order, and its TreeSpec."""
    leaves: list = []
    return leaves, _flatten(tree, is_leaf, leaves, None, ())


def tree_unflatten(leaves: Iterable, treespec: TreeSpec) -> PyTree:
    """The pytree of structure `treespec` holding `leaves`."""
    if not isinstance(treespec, TreeSpec):
        raise TypeError(f"Expected `treespec` to be an instance of PyTreeSpec but got item of type "
                        f"{type(treespec)}.")
    return treespec.unflatten(leaves)


def tree_iter(tree: PyTree, is_leaf: Callable | None = None) -> Iterable:
    """The leaves of `tree`, one by one."""
    yield from tree_flatten(tree, is_leaf)[0]


def tree_leaves(tree: PyTree, is_leaf: Callable | None = None) -> list:
    """The leaves of `tree`."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree: PyTree, is_leaf: Callable | None = None) -> TreeSpec:
    """The TreeSpec of `tree`."""
    return tree_flatten(tree, is_leaf)[1]


def tree_map(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """`tree` with each leaf x replaced by func(x, *the same leaves of `rests`)."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *flat))


def tree_map_(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """Call func on each leaf (with the matching leaves of `rests`) for its effect; returns `tree`."""
    leaves, spec = tree_flatten(tree, is_leaf)
    flat = [leaves] + [spec.flatten_up_to(r) for r in rests]
    collections.deque(map(func, *flat), maxlen=0)
    return tree


def _only(type_or_types_or_pred: Any, func: Callable) -> Callable:
    if isinstance(type_or_types_or_pred, (type, tuple)):
        pred = (lambda x: isinstance(x, type_or_types_or_pred))
    elif callable(type_or_types_or_pred):
        pred = type_or_types_or_pred
    else:
        raise TypeError("Argument must be a type, a tuple of types, or a callable.")
    return lambda x: func(x) if pred(x) else x


def tree_map_only(type_or_types_or_pred: Any, func: Callable, tree: PyTree,
                  is_leaf: Callable | None = None) -> PyTree:
    """tree_map applying `func` only to the leaves of the given type(s) (or passing the predicate)."""
    return tree_map(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_map_only_(type_or_types_or_pred: Any, func: Callable, tree: PyTree,
                   is_leaf: Callable | None = None) -> PyTree:
    """tree_map_ calling `func` only on the leaves of the given type(s) (or passing the predicate)."""
    return tree_map_(_only(type_or_types_or_pred, func), tree, is_leaf=is_leaf)


def tree_all(pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether pred holds for every leaf."""
    return all(map(pred, tree_iter(tree, is_leaf)))


def tree_any(pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether pred holds for some leaf."""
    return any(map(pred, tree_iter(tree, is_leaf)))


def tree_all_only(type_or_types: Any, pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether pred holds for every leaf of the given type(s)."""
    return all(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_any_only(type_or_types: Any, pred: Callable, tree: PyTree, is_leaf: Callable | None = None) -> bool:
    """Whether pred holds for some leaf of the given type(s)."""
    return any(pred(x) for x in tree_iter(tree, is_leaf) if isinstance(x, type_or_types))


def tree_flatten_with_path(tree: PyTree, is_leaf: Callable | None = None) -> tuple:
    """([(key path, leaf)], TreeSpec) of `tree`."""
    leaves: list = []
    paths: list = []
    spec = _flatten(tree, is_leaf, leaves, paths, ())
    return list(zip(paths, leaves)), spec


def tree_leaves_with_path(tree: PyTree, is_leaf: Callable | None = None) -> list:
    """[(key path, leaf)] of `tree`."""
    return tree_flatten_with_path(tree, is_leaf)[0]


def tree_map_with_path(func: Callable, tree: PyTree, *rests: PyTree, is_leaf: Callable | None = None) -> PyTree:
    """`tree` with each leaf x replaced by func(its key path, x, *the same leaves of `rests`)."""
    pairs, spec = tree_flatten_with_path(tree, is_leaf)
    paths, leaves = [p for p, _ in pairs], [x for _, x in pairs]
    flat = [paths, leaves] + [spec.flatten_up_to(r) for r in rests]
    return spec.unflatten(map(func, *flat))


class _Star:
    """A leaf that prints as `*` (treespec_pprint)."""

    def __repr__(self) -> str:
        return "*"


def treespec_pprint(treespec: TreeSpec) -> str:
    """The structure as the containers print, each leaf a `*`: {'a': (*, [*, *])}."""
    return repr(treespec.unflatten([_Star()] * treespec.num_leaves))


def register_pytree_node(cls: type, flatten_fn: FlattenFn, unflatten_fn: UnflattenFn, *,
                         serialized_type_name: str | None = None, to_dumpable_context: Callable | None = None,
                         from_dumpable_context: Callable | None = None,
                         flatten_with_keys_fn: Callable | None = None) -> None:
    """Make `cls` a container: flatten_fn(node) -> (children, context), unflatten_fn(children, context) -> node;
    flatten_with_keys_fn(node) -> ([(key, child)], context) for the *_with_path functions."""
    if cls in SUPPORTED_NODES:
        raise ValueError(f"{cls} is already registered as pytree node.")
    SUPPORTED_NODES[cls] = NodeDef(cls, flatten_fn, unflatten_fn, flatten_with_keys_fn)


# -- the built-in containers -----------------------------------------------------------------------------
_STRUCTSEQ = object()  # registry key shared by every return type (each is its own spec type, as torch's)


def _seq_keys(children: list, context: Any) -> tuple:
    return [(SequenceKey(i), c) for i, c in enumerate(children)], context


def _dict_flatten(d: dict) -> tuple:
    return list(d.values()), list(d.keys())


def _register_builtins() -> None:
    register_pytree_node(tuple, lambda t: (list(t), None), lambda c, _: tuple(c),
                         flatten_with_keys_fn=lambda t: _seq_keys(list(t), None))
    register_pytree_node(list, lambda t: (list(t), None), lambda c, _: list(c),
                         flatten_with_keys_fn=lambda t: _seq_keys(list(t), None))
    register_pytree_node(dict, _dict_flatten, lambda c, keys: dict(zip(keys, c)),
                         flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()], list(d)))
    register_pytree_node(collections.namedtuple, lambda t: (list(t), type(t)), lambda c, cls: cls(*c),
                         flatten_with_keys_fn=lambda t: ([(GetAttrKey(f), v) for f, v in zip(t._fields, t)],
                                                         type(t)))
    register_pytree_node(collections.OrderedDict, _dict_flatten,
                         lambda c, keys: collections.OrderedDict(zip(keys, c)),
                         flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()], list(d)))
    register_pytree_node(collections.defaultdict, lambda d: (list(d.values()), [d.default_factory, list(d)]),
                         lambda c, ctx: collections.defaultdict(ctx[0], zip(ctx[1], c)),
                         flatten_with_keys_fn=lambda d: ([(MappingKey(k), v) for k, v in d.items()],
                                                         [d.default_factory, list(d)]))
    register_pytree_node(collections.deque, lambda d: (list(d), d.maxlen),
                         lambda c, maxlen: collections.deque(c, maxlen=maxlen),
                         flatten_with_keys_fn=lambda d: _seq_keys(list(d), d.maxlen))
    register_pytree_node(Size, lambda s: (list(s), None), lambda c, _: tuple(c),  # (torch rebuilds a tuple)
                         flatten_with_keys_fn=lambda s: _seq_keys(list(s), None))
    SUPPORTED_NODES[_STRUCTSEQ] = NodeDef(_STRUCTSEQ, lambda t: (list(t), None), None,
                                          lambda t: _seq_keys(list(t), None))


_register_builtins()

