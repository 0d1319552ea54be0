"""The list and dict a Node's arguments are kept in: read-only, so a node's users stay in step with its
arguments (torch.fx.immutable_collections). Assign a changed copy to `node.args` / `node.kwargs` instead."""
from __future__ import annotations

from ..utils import _pytree as pytree

__all__ = ["immutable_list", "immutable_dict"]

_MESSAGE = ("'{}' object does not support mutation. If you are attempting to modify the kwargs or args of a "
            "torch.fx.Node object,\ninstead create a new copy of it and assign the copy to the node:\n\n"
            "    new_args = ...  # copy and mutate args\n    node.args = new_args")


def _refuse(self, *args, **kwargs):
    raise TypeError(_MESSAGE.format(type(self).__name__))


class immutable_list(list):
    """A list that refuses changes; hashable like a tuple."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __reduce__(self):
        return (immutable_list, (list(self),))


class immutable_dict(dict):
    """A dict that refuses changes; hashable like a tuple of its items."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __hash__(self) -> int:
        return hash(tuple(self.items()))

    def __reduce__(self):
        return (immutable_dict, (dict(self),))


def _register_pytree_nodes() -> None:
    """torch registers both as pytree containers (node arguments flatten through them)."""
    pytree.register_pytree_node(immutable_list, lambda t: (list(t), None), lambda c, _: immutable_list(c),
                                flatten_with_keys_fn=lambda t: pytree._seq_keys(list(t), None))
    pytree.register_pytree_node(immutable_dict, lambda d: (list(d.values()), list(d)),
                                lambda c, keys: immutable_dict(zip(keys, c)),
                                flatten_with_keys_fn=lambda d: ([(pytree.MappingKey(k), v) for k, v in d.items()],
                                                                list(d)))


_register_pytree_nodes()
