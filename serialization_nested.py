"""Nested tensors in checkpoints, as torch writes them:
- jagged: `torch._tensor._rebuild_from_type_v2(torch.nested._internal.nested_tensor._rebuild_njt, NestedTensor,
  ({"values", "offsets", "lengths", "_ragged_idx", "_metadata_cache", "requires_grad"},), state)`;
- strided: `torch._utils._rebuild_nested_tensor(buffer, sizes, strides, storage_offsets)`, each component
  `buffer.as_strided(sizes[i], strides[i], storage_offsets[i])`.
So a nested tensor saved by tidal loads in torch as a nested tensor, and the other way round."""
from __future__ import annotations

import pickle

import numpy as np

from . import ops
from .tensor import Tensor

__all__ = ["NJT_MODULE", "DimRange", "nested_class", "nested_reduction", "rebuild_njt", "rebuild_nested_tensor"]

NJT_MODULE = "torch.nested._internal.nested_tensor"


def nested_class() -> type:
    """tidal's NestedTensor, the class a checkpoint's torch.nested._internal.nested_tensor.NestedTensor names."""
    from .nested.nested_tensor import NestedTensor  # nested loads on first use (keeps import light)
    return NestedTensor


class DimRange:
    """torch._dynamo.decorators._DimRange (dim, min, max): torch writes sets of them into the state of a jagged
    tensor's cached sequence lengths; read as plain data (tidal has no use for them)."""

    __slots__ = ("dim", "min", "max")

    def __setstate__(self, state) -> None:
        if isinstance(state, tuple) and len(state) == 2:  # (dict, slots) form
            state = (state[1] or {}).get("dim"), (state[1] or {}).get("min"), (state[1] or {}).get("max")
        self.dim, self.min, self.max = (list(state) + [None] * 3)[:3]

    def _key(self) -> tuple:
        return getattr(self, "dim", None), getattr(self, "min", None), getattr(self, "max", None)

    def __eq__(self, other) -> bool:
        return isinstance(other, DimRange) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())


def nested_reduction(t: Tensor, torch_name) -> tuple | None:
    """torch's (callable, args) that rebuild nested tensor `t`, the callables named with `torch_name(module,
    name)`; None when `t` is not nested."""
    from .nested.nested_tensor import NestedTensor, _components  # nested loads on first use (keeps import light)
    if not isinstance(t, NestedTensor):
        return None
    if t._jagged:
        fields = {"values": t.values().detach(), "offsets": t._offsets, "lengths": t._lengths,
                  "_ragged_idx": t._ragged_idx, "_metadata_cache": {}, "requires_grad": t.requires_grad}
        return (torch_name("torch._tensor", "_rebuild_from_type_v2"),
                (torch_name(NJT_MODULE, "_rebuild_njt"), torch_name(NJT_MODULE, "NestedTensor"), (fields,), {}))
    parts = _components(t, False)  # views of the packed buffer, each contiguous
    sizes = np.array([tuple(p.shape) for p in parts], dtype=np.int64).reshape(len(parts), -1)
    strides = np.array([tuple(p.stride()) for p in parts], dtype=np.int64).reshape(len(parts), -1)
    starts = np.concatenate([[0], np.cumsum([p.numel() for p in parts])[:-1]]).astype(np.int64)
    return (torch_name("torch._utils", "_rebuild_nested_tensor"),
            (_plain(t), ops.from_numpy(sizes), ops.from_numpy(strides), ops.from_numpy(starts)))


def _plain(t: Tensor) -> Tensor:
    """`t`'s memory as a plain (not nested) tensor."""
    from .nested.nested_tensor import _alias  # nested loads on first use (keeps import light)
    return _alias(t, Tensor).detach()


def rebuild_njt(fields) -> Tensor:
    """torch's `_rebuild_njt`: the jagged nested tensor over values and offsets (and lengths, with holes)."""
    from .nested.nested_tensor import make_jagged  # nested loads on first use (keeps import light)
    if not isinstance(fields, dict) or not isinstance(fields.get("values"), Tensor) or \
            not isinstance(fields.get("offsets"), Tensor):
        raise pickle.UnpicklingError("_rebuild_njt: expected a dict holding the 'values' and 'offsets' tensors")
    lengths = fields.get("lengths")
    if lengths is not None and not isinstance(lengths, Tensor):
        raise pickle.UnpicklingError("_rebuild_njt: expected 'lengths' to be a tensor or None")
    ragged_idx = fields.get("_ragged_idx", 1)
    values = fields["values"]
    if not isinstance(ragged_idx, int) or not 1 <= ragged_idx <= values.dim():
        raise pickle.UnpicklingError(f"_rebuild_njt: _ragged_idx {ragged_idx!r} does not fit values of "
                                     f"{values.dim()} dims")
    nt = make_jagged(values.contiguous(), fields["offsets"], ragged_idx=ragged_idx, lengths=lengths)
    if fields.get("requires_grad"):
        nt.requires_grad_(True)
    return nt


def rebuild_nested_tensor(buffer, sizes, strides, storage_offsets) -> Tensor:
    """torch's `_rebuild_nested_tensor`: a strided nested tensor of the components `buffer` holds."""
    from .nested import nested_tensor  # nested loads on first use (keeps import light)
    if not all(isinstance(x, Tensor) for x in (buffer, sizes, strides, storage_offsets)):
        raise pickle.UnpicklingError("_rebuild_nested_tensor: expected four tensors")
    flat = buffer.reshape(-1)
    parts = [ops.as_strided(flat, tuple(size), tuple(stride), int(start)) for size, stride, start in
             zip(sizes.tolist(), strides.tolist(), storage_offsets.tolist())]
    return nested_tensor(parts)
