"""Collation: turning a list of samples into one batch, as torch's default_collate does.

`collate` walks the structure of the first sample: a type found in `collate_fn_map` (exactly,
else by isinstance, in the map's order) is handled by its function; mappings, namedtuples and
sequences are collated field by field; anything else is a TypeError.
"""
from __future__ import annotations

import collections.abc
import copy
import re

import numpy as np

from ...ops.factories.from_data import as_tensor, tensor
from ...ops.movement.shape_ops import stack
from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map", "default_collate_err_msg_format"]

default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, numbers, dicts or "
                                  "lists; found {}")
_STRING_OR_OBJECT = re.compile(r"[SaUO]")  # NumPy dtype codes that have no tensor equivalent


def _is_namedtuple(obj) -> bool:
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


def _rebuild_mapping(elem, values: dict):
    # keep the sample's mapping type where it can be rebuilt, else a plain dict
    try:
        if isinstance(elem, collections.abc.MutableMapping):
            clone = copy.copy(elem)
            clone.update(values)
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def _rebuild_sequence(elem, values: list):
    try:
        if isinstance(elem, collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for i, v in enumerate(values):
                clone[i] = v
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def collate(batch: list, *, collate_fn_map: dict | None = None):
    """Collate `batch` (a list of samples) using `collate_fn_map` ({type or tuple of types: fn}) for leaves."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type, fn in collate_fn_map.items():
            if isinstance(elem, collate_type):
                return fn(batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild_mapping(elem, {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                                       for key in elem})
    if _is_namedtuple(elem):
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)]
        return fields if isinstance(elem, tuple) else _rebuild_sequence(elem, fields)
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """Stack tensors along a new first dimension."""
    return stack(batch, 0)


def collate_numpy_array_fn(batch: list, *, collate_fn_map: dict | None = None):
    """NumPy arrays become tensors, then are collated as tensors."""
    if _STRING_OR_OBJECT.search(batch[0].dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(batch[0].dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """NumPy scalars become a 1-D tensor of their dtype."""
    return as_tensor(batch)


def collate_float_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """Python floats become a float64 tensor."""
    return tensor(batch, dtype=dt.float64)


def collate_int_fn(batch: list, *, collate_fn_map: dict | None = None) -> Tensor:
    """Python ints (and bools) become a tensor of the dtype they infer (int64, bool)."""
    return tensor(batch)


def collate_str_fn(batch: list, *, collate_fn_map: dict | None = None):
    """Strings and bytes stay as they are."""
    return batch


default_collate_fn_map: dict = {Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
                                (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
                                float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
                                bytes: collate_str_fn}


def default_collate(batch: list):
    """Batch a list of samples: tensors are stacked, NumPy arrays and scalars become tensors, ints an
    int64 tensor, floats a float64 tensor, strings stay a list; dicts, namedtuples and sequences are
    collated field by field (tuples and lists become lists)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)


def default_convert(data):
    """Turn NumPy arrays and scalars into tensors throughout `data` (the no-batching counterpart of
    default_collate); tuples become lists, other leaves stay as they are."""
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_", "bytes_"):
        if isinstance(data, np.ndarray) and _STRING_OR_OBJECT.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild_mapping(data, {key: default_convert(data[key]) for key in data})
    if _is_namedtuple(data):
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        return _rebuild_sequence(data, [default_convert(d) for d in data])
    return data
