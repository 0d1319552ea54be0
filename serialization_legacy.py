"""torch.save's legacy checkpoint format (`_use_new_zipfile_serialization=False`), written and read without torch.

A legacy checkpoint is five pickles in a row followed by raw storage bytes: torch's magic number, the protocol
version (1001), a dict of system facts, the object itself (storages as persistent ids
`('storage', torch.<Type>Storage, key, location, numel, None)`), and the sorted list of storage keys; then, for
each key in that order, the storage's element count as a little-endian int64 and its bytes. The storages' bytes
come after the object that uses them, so a storage is made empty while unpickling and filled afterwards; this is
why a legacy checkpoint loads onto the CPU only.
"""
from __future__ import annotations

import pickle
import struct

import numpy as np

from .tensor import Tensor
from .tensor import dtype as dt

__all__ = ["MAGIC_NUMBER", "PROTOCOL_VERSION", "save_legacy", "LegacyStorages", "load_legacy"]

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
_SYS_INFO = {"protocol_version": PROTOCOL_VERSION, "little_endian": True,
             "type_sizes": {"short": 2, "int": 4, "long": 4}}  # (torch's values on Linux)


def save_legacy(fp, pickler_class, obj, protocol: int) -> None:
    """Write `obj` to the binary file `fp` in the legacy format; `pickler_class` is tidal's torch-naming pickler."""
    class LegacyPickler(pickler_class):
        def persistent_id(self, record):
            pid = super().persistent_id(record)
            return None if pid is None else pid + (None,)  # no view metadata, as torch writes it

    for header in (MAGIC_NUMBER, PROTOCOL_VERSION, _SYS_INFO):
        pickle.dump(header, fp, protocol=protocol)
    pickler = LegacyPickler(fp, protocol)
    pickler.dump(obj)
    records = sorted(pickler.storages.values(), key=lambda r: r.key)
    pickle.dump([r.key for r in records], fp, protocol=protocol)
    for record in records:
        fp.write(struct.pack("<q", record.numel))
        fp.write(memoryview(record.raw._host_array()))


class LegacyStorages:
    """The storages a legacy checkpoint names, made empty on the CPU while unpickling and filled afterwards."""

    def __init__(self, placement, loaded_storage_class):
        self.placement, self._loaded = placement, loaded_storage_class
        self.arrays: dict = {}  # key -> (uint8 array, element size, storage)
        # a sparse tensor computes from its values as it is built: before the storages are filled, its rebuild
        # is skipped (the unpickler asks `filled`) and the object is read a second time once they are
        self.filled, self.sparse_seen = False, False

    def storage(self, pid: tuple) -> object:
        """The storage (or, for a whole-module checkpoint, the class) a persistent id names."""
        if isinstance(pid, tuple) and len(pid) == 4 and pid[0] == "module":
            return pid[1]  # torch's record of an nn.Module class with its source: the class itself
        if not (isinstance(pid, tuple) and len(pid) == 6 and pid[0] == "storage"):
            raise RuntimeError(f"Unknown saved id type: {pid[0] if isinstance(pid, tuple) and pid else pid!r}")
        _, storage_type, key, location, numel, view = pid
        dtype_ = getattr(storage_type, "dtype", False)
        if dtype_ is False or not isinstance(key, str) or not isinstance(location, str) or \
                not isinstance(numel, int) or numel < 0 or view is not None:
            raise pickle.UnpicklingError(f"tidal.load: malformed storage id {pid!r}")
        found = self.arrays.get(key)
        if found is None:
            itemsize = dtype_.itemsize if dtype_ is not None else 1
            array = np.empty(numel * itemsize, np.uint8)
            raw = Tensor._from_array(array, dt.uint8, share=True)
            if self.placement._target(raw, dtype_, location).type != "cpu":
                self.placement.place(raw, dtype_, location)  # torch's error where that device is missing
                raise NotImplementedError("tidal.load: a checkpoint in the legacy format loads onto the CPU only; "
                                          "pass map_location='cpu'")
            found = self.arrays[key] = (array, itemsize, self._loaded(raw, dtype_))
        return found[2]


def load_legacy(fp, make_unpickler, storages: LegacyStorages, weights_only: bool, unsupported) -> object:
    """Read a legacy checkpoint from `fp` (at its start): `make_unpickler(file, header=False)` reads each pickle;
    `unsupported(byte)` makes the weights-only loader's error for a first opcode it does not take."""
    magic = _load_header(fp, make_unpickler, weights_only, unsupported)
    if magic != MAGIC_NUMBER:
        raise RuntimeError("Invalid magic number; corrupt file?")
    version = make_unpickler(fp, header=True).load()
    if version != PROTOCOL_VERSION:
        raise RuntimeError(f"Invalid protocol version: {version}")
    make_unpickler(fp, header=True).load()  # the system facts: torch reads and ignores them too
    start = fp.tell()
    result = make_unpickler(fp).load()
    keys = make_unpickler(fp, header=True).load()
    for key in keys:
        if key not in storages.arrays:
            raise AssertionError(f"storage key {key!r} not found in deserialized_objects")
        array, itemsize, _ = storages.arrays[key]
        head = fp.read(8)
        numel = struct.unpack("<q", head)[0] if len(head) == 8 else -1
        if numel * itemsize != array.nbytes:
            raise RuntimeError(f"storage has wrong size: expected {array.nbytes // itemsize} got {numel}")
        view, pos = memoryview(array), 0
        while pos < array.nbytes:
            got = fp.readinto(view[pos:])
            if not got:
                raise RuntimeError(f"tidal.load: the data of storage {key} ended early")
            pos += got
    storages.filled = True
    if storages.sparse_seen:  # (see LegacyStorages: the object again, its storages now holding their data)
        end = fp.tell()
        fp.seek(start)
        result = make_unpickler(fp).load()
        fp.seek(end)
    return result


def _load_header(fp, make_unpickler, weights_only: bool, unsupported):
    """The first pickle (the magic number), failing as torch's loaders fail on a file that is not a checkpoint;
    `unsupported(byte)` is the weights-only loader's error for an opcode it does not take."""
    if weights_only:
        start = fp.tell()
        head = fp.read(3)
        fp.seek(start)
        if head[:1] == pickle.PROTO and head[2:3] == pickle.FRAME:
            raise unsupported(head[2])  # torch's weights-only unpickler takes no frames (pickle protocol 4 and up)
    try:
        return make_unpickler(fp, header=True).load()
    except EOFError:
        if weights_only:
            raise EOFError("") from None  # (torch's weights-only unpickler says nothing more)
        raise
    except pickle.UnpicklingError as exc:
        if not weights_only or str(exc).startswith("Weights only load failed"):
            raise
        fp.seek(0)
        first = fp.read(1)
        raise unsupported(first[0] if first else 0) from None
