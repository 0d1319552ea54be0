"""What save() and load() share: their arguments (storage, process group, rank), a nested state dict
flattened to dotted keys, and the region of the global tensor that this rank's shard covers."""
from __future__ import annotations

import os
from typing import Callable

from ...comm.boxing import chunk_span
from ...comm.global_tensor import GlobalTensor
from ...tensor import Tensor
from .default_planner import _check_planner

__all__ = ["setup", "flatten", "key_paths", "region", "group_of", "plain", "restore"]


def setup(verb: str, checkpoint_id, storage, role: str, make: Callable, planner, process_group,
          no_dist: bool) -> tuple:
    """(storage, process group or None, this rank) for save/load (`verb`): `storage` is the user's
    storage_reader/writer (`role`) pointed at `checkpoint_id`, or `make(checkpoint_id)`."""
    _check_planner(verb, planner)
    if storage is None:
        if checkpoint_id is None:
            raise RuntimeError(f"`checkpoint_id` and `{role}` cannot both be None.")
        storage = make(checkpoint_id)
    elif checkpoint_id is not None:
        storage.path = os.fspath(checkpoint_id)
    group = group_of(process_group, no_dist)
    from ...comm import process_group as pg  # comm loads on first use (keeps import light)
    return storage, group, (pg.get_rank() if group is not None else 0)


def _is_leaf_list(value) -> bool:
    return not any(isinstance(v, (dict, list, Tensor, GlobalTensor)) for v in value)


def flatten(obj, prefix: str = "") -> list:
    """(dotted key, container, index, leaf) for every tensor and plain value in a nested dict/list."""
    found = []
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for k, v in items:
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            found.extend(flatten(v, key + "."))
        elif isinstance(v, list) and v and not _is_leaf_list(v):
            found.extend(flatten(v, key + "."))
        else:
            found.append((key, obj, k, v))
    return found


def key_paths(obj, prefix: str = "", path: tuple = ()) -> dict:
    """{dotted key: its path} for every leaf flatten() finds, a path being [["d", dict key] or ["l", list index],
    ...] (what format_utils needs to rebuild the nesting; a key JSON cannot hold is kept as its str)."""
    found = {}
    kind = "d" if isinstance(obj, dict) else "l"
    items = obj.items() if isinstance(obj, dict) else enumerate(obj)
    for k, v in items:
        key = f"{prefix}{k}"
        here = path + ([kind, k if isinstance(k, (str, int)) and not isinstance(k, bool) else str(k)],)
        if (isinstance(v, dict) and v) or (isinstance(v, list) and v and not _is_leaf_list(v)):
            found.update(key_paths(v, key + ".", here))
        else:
            found[key] = list(here)
    return found


def region(g: GlobalTensor, rank: int) -> tuple:
    """(offsets, sizes, writes) of `rank`'s shard of `g`: writes is False on every replica but the first."""
    coords = g.placement.coords(rank)
    sizes, offsets = list(g._shape), [0] * len(g._shape)
    writes = True
    for axis, s in enumerate(g.sbp):
        n, c = g.placement.hierarchy[axis], coords[axis]
        if s.is_split:                    # an inner axis splits the outer axis's shard again
            offset, sizes[s.dim] = chunk_span(sizes[s.dim], n, c)
            offsets[s.dim] += offset
        elif c != 0:
            writes = False
    return offsets, sizes, writes


def group_of(process_group, no_dist: bool):
    """The process group save/load run over, or None for a single process."""
    from ...comm import process_group as pg  # comm loads on first use (keeps import light)
    if no_dist or not pg.is_initialized():
        return None
    return process_group if process_group is not None else pg.default_group()


def plain(value, key: str):
    """`value` as JSON data (tuples become lists); anything else is refused."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v, key) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: plain(v, key) for k, v in value.items()}
    raise TypeError(f"save(): cannot store the {type(value).__name__} at {key!r}: tidal's distributed checkpoints "
                    "hold tensors and plain values (None, bool, int, float, str, lists and str-keyed dicts)")


def restore(value, like):
    """A value read from the metadata, shaped like the state dict's current one (tuples stay tuples)."""
    if isinstance(like, tuple) and isinstance(value, list):
        return tuple(restore(v, w) for v, w in zip(value, like)) if len(value) == len(like) else tuple(value)
    return value
