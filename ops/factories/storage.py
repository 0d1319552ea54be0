"""Storages: `t.untyped_storage()` (the bytes under a tensor and every view of it) and the deprecated typed
`t.storage()`.

A tidal tensor is a view of a blob, so a storage is a window on the whole blob: its size, its address (the
same for every view of one memory: `a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()` tells
whether two tensors share memory, as scripts check), its values read through a flat view. Writing through a
storage, resizing it and sharing it are not provided.
"""
from __future__ import annotations

import warnings

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..movement.views import make_view

__all__ = ["UntypedStorage", "TypedStorage"]
METHODS: dict = {}


class UntypedStorage:
    """The bytes of a tensor's memory (every view of it shares one)."""

    def __init__(self, tensor: Tensor):
        self._tensor = tensor.detach()  # keeps the memory alive

    def _flat(self, dtype: dt.dtype) -> Tensor:
        t = self._tensor
        return make_view(t, (t._v.blob.nbytes // dtype.itemsize,), (1,), 0, dtype)

    @property
    def device(self):
        return self._tensor.device

    def nbytes(self) -> int:
        """The size in bytes."""
        return self._tensor._v.blob.nbytes

    def size(self) -> int:
        """The size in bytes."""
        return self.nbytes()

    def __len__(self) -> int:
        return self.nbytes()

    def element_size(self) -> int:
        return 1

    def data_ptr(self) -> int:
        """The address of the first byte (the same for every tensor viewing this memory)."""
        t = self._tensor
        if t.device.type == "meta":
            return 0
        return t.data_ptr() - t._v.offset * t.dtype.itemsize

    def tolist(self) -> list:
        """The bytes as ints."""
        return self._flat(dt.uint8).tolist()

    def __getitem__(self, index):
        return self._flat(dt.uint8)[index].tolist()

    def __iter__(self):
        return iter(self.tolist())

    def is_shared(self) -> bool:
        return bool(getattr(self._tensor, "is_shared", lambda: False)())

    def untyped(self) -> "UntypedStorage":
        return self

    def __repr__(self) -> str:
        values = "\n".join(f" {v}" for v in self.tolist())
        name = f"{dt.repr_namespace[0]}.storage.{type(self).__name__}"
        return f"{values}\n[{name}(device={self.device}) of size {self.nbytes()}]"


class TypedStorage(UntypedStorage):
    """The deprecated typed view of a storage: its elements in the tensor's dtype."""

    def __init__(self, tensor: Tensor):
        super().__init__(tensor)
        self.dtype = tensor.dtype

    def size(self) -> int:
        """The number of elements."""
        return self.nbytes() // self.dtype.itemsize

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return self.dtype.itemsize

    def tolist(self) -> list:
        return self._flat(self.dtype).tolist()

    def __getitem__(self, index):
        return self._flat(self.dtype)[index].tolist()

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._tensor)

    def _untyped_storage(self) -> UntypedStorage:
        return self.untyped()

    def __repr__(self) -> str:
        values = "\n".join(f" {v}" for v in self.tolist())
        return f"{values}\n[{dt.repr_namespace[0]}.storage.TypedStorage(dtype={self.dtype!r}, device=" \
               f"{self.device}) of size {self.size()}]"


def untyped_storage(self: Tensor) -> UntypedStorage:
    """The memory under this tensor (shared by all its views)."""
    return UntypedStorage(self)


def storage(self: Tensor) -> TypedStorage:
    """The deprecated typed storage (torch warns)."""
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
                  "storage class. This should only matter to you if you are using storages directly.  To access "
                  "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()", UserWarning,
                  stacklevel=2)
    return TypedStorage(self)


METHODS.update(untyped_storage=untyped_storage, storage=storage, _typed_storage=lambda self: TypedStorage(self))
