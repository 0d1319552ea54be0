"""tidal.save / tidal.load: PyTorch's zip checkpoint format, written and read without torch.

A checkpoint is an uncompressed zip archive whose records sit in one folder (`<name>/`):
`data.pkl` (the object, pickled with protocol 2), one record `data/<key>` per storage (its raw
little-endian bytes, aligned to 64 bytes in the file so torch can mmap them) and small text
records (`version`, `byteorder`, `.format_version`, `.storage_alignment`). In the pickle a tensor
is a call `torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks)`
and a storage is a persistent id `('storage', torch.<Type>Storage, key, location, numel)` naming
its record. tidal writes these torch names as plain text (torch is never imported) and maps them
onto its own types when loading.

Loading is restricted unless `weights_only=False`: the unpickler resolves only an allow-list of
globals (tensor rebuilders, storage types, dtypes, devices, OrderedDict, a few builtins), so a
checkpoint cannot run code. Saving to a path is atomic (temporary file, then os.replace).
"""
from __future__ import annotations

import contextlib
import hashlib
import importlib
import io
import mmap
import os
import pickle
import pickletools
import struct
import types
import zipfile
from _compat_pickle import IMPORT_MAPPING, NAME_MAPPING
from collections import OrderedDict

import numpy as np

from .nn.parameter import Parameter
from .ops.complex_numbers.lazy_views import ConjView, NegView, memory_of
from .serialization_allowlist import (_SAFE_GLOBALS, _refusal, _user_safe_globals, _weights_only_failure,
                                      add_safe_globals, clear_safe_globals, get_safe_globals, safe_globals)
from .serialization_atomic import atomic_write as _atomic_write
from .serialization_atomic import temp_prefix as _temp_prefix  # noqa: F401 - (tests name it here)
from .serialization_legacy import LegacyStorages, load_legacy, save_legacy
from .serialization_nested import (NJT_MODULE, DimRange, nested_class, nested_reduction, rebuild_nested_tensor,
                                  rebuild_njt)
from .serialization_sparse import LayoutName, get_layout, rebuild_sparse_tensor, sparse_arguments
from .serialization_options import (DEFAULT_PROTOCOL, LoadEndianness, check_module_version_greater_or_equal,  # noqa: F401
                                    default_restore_location, get_default_load_endianness, get_default_mmap_options,
                                    location_tag, normalize_storage_type, register_package,
                                    set_default_load_endianness, set_default_mmap_options)
from .tensor import Size, Tensor, device
from .tensor import dtype as dt
from .vm import View
from .serialization_modules import module_reduction, torch_global

__all__ = ["save", "load", "add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals",
           "get_unsafe_globals_in_checkpoint", "DEFAULT_PROTOCOL", "LoadEndianness", "get_default_load_endianness",
           "set_default_load_endianness", "get_default_mmap_options", "set_default_mmap_options", "register_package",
           "location_tag", "default_restore_location", "normalize_storage_type",
           "check_module_version_greater_or_equal"]

_STORAGE_DTYPES = {"BoolStorage": dt.bool_, "ByteStorage": dt.uint8, "CharStorage": dt.int8,
                   "ShortStorage": dt.int16, "IntStorage": dt.int32, "LongStorage": dt.int64,
                   "HalfStorage": dt.float16, "BFloat16Storage": dt.bfloat16, "FloatStorage": dt.float32,
                   "DoubleStorage": dt.float64, "ComplexFloatStorage": dt.complex64,
                   "ComplexDoubleStorage": dt.complex128}
_STORAGE_NAMES = {d: name for name, d in _STORAGE_DTYPES.items()}
_ALIGNMENT = 64
_EPOCH = (1980, 1, 1, 0, 0, 0)  # fixed record dates: the same object gives the same bytes


# == saving ========================================================================================
class _TorchName:
    """A global of torch's (module, name), written into the pickle as text, never imported."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name

    def __call__(self, *args):  # pickle's save_reduce insists on a callable; this one is only ever written
        raise TypeError(f"{self.module}.{self.name} is a name in a checkpoint, not a function")


_torch_names: dict = {}


def _torch_name(module: str, name: str) -> _TorchName:
    # one object per name, so the pickler's memo writes each global once
    key = (module, name)
    found = _torch_names.get(key)
    if found is None:
        found = _torch_names[key] = _TorchName(module, name)
    return found


class _StorageRecord:
    """A storage to write: record key, torch type name, location, element count, bytes (uint8 tensor)."""

    __slots__ = ("key", "type_name", "location", "numel", "raw")

    def __init__(self, key: str, type_name: str, location: str, numel: int, raw: Tensor):
        self.key, self.type_name, self.location, self.numel, self.raw = key, type_name, location, numel, raw


def _location(dev: device) -> str:
    return "cpu" if dev.type == "cpu" else f"{dev.type}:{dev.index or 0}"


class _TorchPickler(pickle._Pickler):
    """The Python pickler (its `save_global` would import torch) writing tidal objects under torch's names."""

    dispatch = dict(pickle._Pickler.dispatch)

    def __init__(self, file, protocol: int):
        super().__init__(file, protocol)
        self.storages: dict = {}  # (id(blob), dtype) -> _StorageRecord; the record keeps the blob alive

    def persistent_id(self, obj):
        if type(obj) is _StorageRecord:
            module = "torch.storage" if obj.type_name == "UntypedStorage" else "torch"
            return ("storage", _torch_name(module, obj.type_name), obj.key, obj.location, obj.numel)
        return None

    def reducer_override(self, obj):
        if isinstance(obj, Tensor):
            return self._reduce_tensor(obj)
        return module_reduction(obj) or NotImplemented

    def _reduce_tensor(self, t: Tensor) -> tuple:
        from .nn.parameter import Parameter  # nn sits above this module's dependencies: import on use
        if isinstance(t, Parameter):
            plain = Tensor._make(t._v, t.dtype, t.device, t._vm)
            return _torch_name("torch._utils", "_rebuild_parameter"), (plain, t.requires_grad, OrderedDict())
        nested = nested_reduction(t, _torch_name)
        if nested is not None:  # torch's forms: torch and tidal load each other's nested tensors
            return nested
        sparse = sparse_arguments(t)
        if sparse is not None:  # torch's form (tidal's sparse tensor also holds its dense values: not saved)
            return _torch_name("torch._utils", "_rebuild_sparse_tensor"), sparse
        v = memory_of(t)  # (a conj view's memory, with its bit as torch's metadata: {"conj": True})
        args = (self._storage_of(t), v.offset, tuple(v.shape), tuple(v.strides), t.requires_grad, OrderedDict())
        bits = {"conj": True} if t.is_conj() else {"neg": True} if t.is_neg() else None
        if t.dtype not in _STORAGE_NAMES:  # no typed storage (uint16/32/64): an untyped one and the dtype, as torch
            return _torch_name("torch._utils", "_rebuild_tensor_v3"), args + (t.dtype,) + ((bits,) if bits else ())
        return _torch_name("torch._utils", "_rebuild_tensor_v2"), args + ((bits,) if bits else ())

    def _storage_of(self, t: Tensor) -> _StorageRecord:
        # Views of one blob share a record, as torch's views share a storage. A blob seen under
        # two dtypes gets a record per dtype (torch's storages are typed in the file).
        blob = memory_of(t).blob
        key = (id(blob), t.dtype)
        record = self.storages.get(key)
        if record is None:
            numel = blob.nbytes // t.dtype.itemsize
            raw = Tensor._make(View(blob, (numel * t.dtype.itemsize,), (1,), 0, np.dtype(np.uint8)), dt.uint8,
                               t.device, t._vm)
            type_name = _STORAGE_NAMES.get(t.dtype, "UntypedStorage")  # an untyped storage counts bytes
            record = self.storages[key] = _StorageRecord(str(len(self.storages)), type_name, _location(t.device),
                                                         numel if type_name != "UntypedStorage" else
                                                         numel * t.dtype.itemsize, raw)
        return record

    def save_global(self, obj, name=None) -> None:
        found = torch_global(obj) if name is None else None
        if found is not None:  # tidal's layers under torch's names: real torch loads them as its own modules
            self.save(_torch_name(*found))
            return
        try:
            super().save_global(obj, name)
        except pickle.PicklingError as exc:
            raise _c_pickler_error(obj, name) or exc from None

    def _save_torch_name(self, obj: _TorchName) -> None:
        if self.proto >= 4:
            self.save(obj.module)
            self.save(obj.name)
            self.write(pickle.STACK_GLOBAL)
        else:
            self.write(pickle.GLOBAL + obj.module.encode() + b"\n" + obj.name.encode() + b"\n")
        self.memoize(obj)

    def _save_dtype(self, obj: dt.dtype) -> None:
        self.save(_torch_name("torch", obj.name))

    def _save_device(self, obj: device) -> None:
        self.save_reduce(_torch_name("torch", "device"), (str(obj),), obj=obj)

    def _save_layout(self, obj: LayoutName) -> None:
        self.save_reduce(_torch_name("torch.serialization", "_get_layout"), (obj.name,), obj=obj)

    def _save_size(self, obj: Size) -> None:
        self.save_reduce(_torch_name("torch", "Size"), (tuple(obj),), obj=obj)

    dispatch[types.FunctionType] = save_global  # (the base table holds the base class's function)
    dispatch[_TorchName] = _save_torch_name
    dispatch[dt.dtype] = _save_dtype
    dispatch[device] = _save_device
    dispatch[Size] = _save_size
    dispatch[LayoutName] = _save_layout


def _c_pickler_error(obj, name) -> Exception | None:
    """The error the C pickler (which torch.save uses) gives for a global it cannot name, where the Python
    pickler's PicklingError words it otherwise; None to keep the Python pickler's."""
    qualname = name or getattr(obj, "__qualname__", None)
    module_name = getattr(obj, "__module__", None)
    if not isinstance(qualname, str) or not isinstance(module_name, str):
        return None
    if "<locals>" in qualname.split("."):
        return AttributeError(f"Can't pickle local object {qualname!r}")
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - any failure to import is reported the same way
        return pickle.PicklingError(f"Can't pickle {obj!r}: import of module {module_name!r} failed")
    found = module
    for part in qualname.split("."):
        found = getattr(found, part, _MISSING)
        if found is _MISSING:
            return pickle.PicklingError(f"Can't pickle {obj!r}: attribute lookup {qualname} on {module_name} failed")
    return None


_MISSING = object()


def _add_record(zf: zipfile.ZipFile, name: str, data) -> None:
    """Store `data` (bytes or a uint8 array) uncompressed, padding the header so the data is aligned."""
    view = memoryview(data)
    info = zipfile.ZipInfo(name, _EPOCH)
    info.compress_type = zipfile.ZIP_STORED
    info.file_size = view.nbytes
    zip64 = view.nbytes * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule; its header then grows by 20
    header = 30 + len(name.encode()) + 4 + (20 if zip64 else 0)
    pad = -(zf.fp.tell() + header) % _ALIGNMENT
    info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # an ignorable extra field, as torch's
    with zf.open(info, "w", force_zip64=zip64) as out:
        out.write(view)


def _write_archive(fp, folder: str, pickled: bytes, storages: list) -> None:
    """Write one checkpoint's zip records to the binary file `fp`."""
    with zipfile.ZipFile(fp, "w", zipfile.ZIP_STORED) as zf:
        _add_record(zf, f"{folder}/data.pkl", pickled)
        _add_record(zf, f"{folder}/.format_version", b"1")
        _add_record(zf, f"{folder}/.storage_alignment", str(_ALIGNMENT).encode())
        _add_record(zf, f"{folder}/byteorder", b"little")
        for record in storages:
            _add_record(zf, f"{folder}/data/{record.key}", record.raw._host_array())
        _add_record(zf, f"{folder}/version", b"3\n")
        _add_record(zf, f"{folder}/.data/serialization_id", _serialization_id(pickled, storages))


def _serialization_id(pickled: bytes, storages: list) -> bytes:
    """torch's record naming one save (40 digits, random there): here a digest of the pickle and the storages'
    sizes, cheap to compute and the same for the same object, so a checkpoint's bytes stay reproducible."""
    digest = hashlib.sha1(pickled)
    for record in storages:
        digest.update(f"{record.key}:{record.numel}".encode())
    return str(int.from_bytes(digest.digest(), "little")).zfill(40)[-40:].encode()


def save(obj, f, pickle_module=None, pickle_protocol: int = 2, _use_new_zipfile_serialization: bool = True,
         _disable_byteorder_record: bool = False) -> None:
    """Save `obj` to a path (atomically) or a binary file object, in the format torch.load reads."""
    if pickle_module not in (None, pickle):
        raise TypeError("tidal.save: pickle_module must be the standard pickle module")
    is_path = isinstance(f, (str, bytes, os.PathLike))
    if not is_path and not hasattr(f, "write"):
        raise AttributeError("expected 'f' to be string, path, or a file-like object with a 'write' attribute")
    buffer = io.BytesIO()
    if not _use_new_zipfile_serialization:
        save_legacy(buffer, _TorchPickler, obj, pickle_protocol)
        write = lambda fp, folder: fp.write(buffer.getvalue())  # noqa: E731
    else:
        pickler = _TorchPickler(buffer, pickle_protocol)
        pickler.dump(obj)  # before touching the destination: a pickling error leaves it as it was
        storages = list(pickler.storages.values())
        write = lambda fp, folder: _write_archive(fp, folder, buffer.getvalue(), storages)  # noqa: E731
    if is_path:
        path = os.path.realpath(os.fsdecode(f))  # through symlinks: the link stays, its target changes
        folder = os.path.splitext(os.path.basename(path))[0] or "archive"
        _atomic_write(path, lambda fp: write(fp, folder))
    else:
        write(f, "archive")


# == loading =======================================================================================
class _StorageType:
    """What `torch.<Type>Storage` (or `torch.storage.UntypedStorage`, dtype None) means on load."""

    __slots__ = ("dtype",)

    def __init__(self, dtype_: dt.dtype | None):
        self.dtype = dtype_


class _LoadedStorage:
    """A storage read from the archive: its bytes as a uint8 tensor on the target device, and its dtype."""

    __slots__ = ("raw", "dtype")

    def __init__(self, raw: Tensor, dtype_: dt.dtype | None):
        self.raw, self.dtype = raw, dtype_


def _check_ints(fn: str, name: str, values) -> tuple:
    if not isinstance(values, (tuple, list)) or not all(isinstance(v, int) and v >= 0 for v in values):
        raise pickle.UnpicklingError(f"{fn}: {name} must be a sequence of non-negative ints, got {values!r}")
    return tuple(values)


def _tensor_from(storage, storage_offset, size, stride, requires_grad, dtype_: dt.dtype | None, fn: str) -> Tensor:
    """A tensor viewing a loaded storage, after checking that the view stays inside it."""
    if not isinstance(storage, _LoadedStorage):
        raise pickle.UnpicklingError(f"{fn}: expected a storage, got {type(storage).__name__}")
    if not isinstance(dtype_, dt.dtype):
        raise pickle.UnpicklingError(f"{fn}: the tensor's dtype is unknown")
    shape, strides = _check_ints(fn, "size", size), _check_ints(fn, "stride", stride)
    (offset,) = _check_ints(fn, "storage_offset", (storage_offset,))
    if len(shape) != len(strides):
        raise pickle.UnpicklingError(f"{fn}: size {shape} and stride {strides} differ in length")
    capacity = storage.raw._v.blob.nbytes // dtype_.itemsize
    if 0 not in shape and offset + sum((n - 1) * s for n, s in zip(shape, strides)) >= capacity:
        raise RuntimeError(f"{fn}: a tensor of size {list(shape)}, stride {list(strides)} and offset {offset} "
                           f"does not fit in its storage of {capacity} elements")
    raw = storage.raw
    t = Tensor._make(View(raw._v.blob, shape, strides, offset, dtype_.np), dtype_, raw.device, raw._vm)
    t.requires_grad = bool(requires_grad)
    return t


def _with_bits(t: Tensor, metadata) -> Tensor:
    """`t` as a conj (or negative) view of its memory when torch's metadata says {"conj": True} ({"neg": True})."""
    if not isinstance(metadata, dict) or not (metadata.get("conj") or metadata.get("neg")):
        return t
    out = (ConjView if metadata.get("conj") else NegView)._make(t._v, t.dtype, t.device, t._vm)
    out.requires_grad = t.requires_grad
    return out


def _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad=False, backward_hooks=None,
                       metadata=None) -> Tensor:
    return _with_bits(_tensor_from(storage, storage_offset, size, stride, requires_grad, storage.dtype
                                   if isinstance(storage, _LoadedStorage) else None, "_rebuild_tensor_v2"), metadata)


def _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype_,
                       metadata=None) -> Tensor:
    return _with_bits(_tensor_from(storage, storage_offset, size, stride, requires_grad, dtype_, "_rebuild_tensor_v3"),
                      metadata)


def _rebuild_parameter(data, requires_grad, backward_hooks=None):
    if not isinstance(data, Tensor):
        raise pickle.UnpicklingError(f"_rebuild_parameter: expected a tensor, got {type(data).__name__}")
    return Parameter(data, bool(requires_grad))


def _set_tensor_state(t: Tensor, state) -> Tensor:
    # attributes a tensor carried (torch pickles `__dict__`, maybe with slots); never tidal's slots
    for part in (state if isinstance(state, tuple) else (state,)):
        if part is None:
            continue
        if not isinstance(part, dict) or any(not isinstance(k, str) or k in Tensor.__slots__ for k in part):
            raise pickle.UnpicklingError("a tensor's pickled state must be a dict of new attribute names")
        t.__dict__.update(part)
    return t


def _rebuild_parameter_with_state(data, requires_grad, backward_hooks, state):
    return _set_tensor_state(_rebuild_parameter(data, requires_grad), state)


def _rebuild_from_type_v2(func, new_type, args, state):
    if func is rebuild_njt and isinstance(args, tuple):  # a jagged nested tensor (torch's state: its internals)
        return rebuild_njt(*args)
    if func not in (_rebuild_tensor_v2, _rebuild_tensor_v3, _rebuild_parameter) or \
            new_type not in (Tensor, Parameter) or not isinstance(args, tuple):
        raise pickle.UnpicklingError("_rebuild_from_type_v2: only tensors and parameters can be rebuilt")
    t = func(*args)
    if new_type is Parameter and not isinstance(t, Parameter):
        t = Parameter(t, t.requires_grad)
    return _set_tensor_state(t, state)


def _parameter_class():
    return Parameter


# torch's globals that a checkpoint may name, and what they become in tidal
_TORCH_GLOBALS = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_parameter"): _rebuild_parameter,
    ("torch._utils", "_rebuild_parameter_with_state"): _rebuild_parameter_with_state,
    ("torch._tensor", "_rebuild_from_type_v2"): _rebuild_from_type_v2,
    ("torch._utils", "_rebuild_nested_tensor"): rebuild_nested_tensor, (NJT_MODULE, "_rebuild_njt"): rebuild_njt,
    ("torch._dynamo.decorators", "_DimRange"): DimRange,
    ("torch._utils", "_rebuild_sparse_tensor"): rebuild_sparse_tensor, ("torch.serialization", "_get_layout"): get_layout,
    ("torch", "Tensor"): Tensor, ("torch._tensor", "Tensor"): Tensor,
    ("torch", "device"): device, ("torch", "Size"): Size,
    ("torch.storage", "UntypedStorage"): _StorageType(None), ("torch", "UntypedStorage"): _StorageType(None),
}
_TORCH_GLOBALS.update({("torch", name): _StorageType(d) for name, d in _STORAGE_DTYPES.items()})
_TORCH_GLOBALS.update({("torch", d.name): d for d in dt.ALL})
_TORCH_GLOBALS.update({("torch", alias): dt.from_name(alias) for alias in ("half", "float", "double", "short",
                                                                            "int", "long")})
_LAZY_TORCH_GLOBALS = {("torch.nn.parameter", "Parameter"): _parameter_class,
                       ("torch.nn", "Parameter"): _parameter_class, (NJT_MODULE, "NestedTensor"): nested_class}

def get_unsafe_globals_in_checkpoint(f) -> list:
    """The globals ('module.name') a checkpoint's pickle names that a weights_only load would refuse (read
    statically: nothing is loaded)."""
    with _opened(f, False) as (fp, _):
        start = fp.tell()
        is_zip = fp.read(4) == b"PK\x03\x04"
        fp.seek(start)
        if not is_zip:
            raise ValueError("Expected input to be a checkpoint returned by torch.save")
        pickled = _Archive(fp, None, _Placement(None), False).pickled()
    allowed = {f"{m}.{n}" for m, n in (*_TORCH_GLOBALS, *_LAZY_TORCH_GLOBALS, *_SAFE_GLOBALS)}
    found = set()
    for op, arg, _ in pickletools.genops(pickled):
        if op.name == "GLOBAL":
            module, name = arg.split(" ", 1)
            module, name = NAME_MAPPING.get((module, name), (IMPORT_MAPPING.get(module, module), name))
            found.add(f"{module}.{name}")
    return sorted(found - allowed - set(_user_safe_globals))


class _Placement:
    """Where storages go: map_location applied to each storage's saved location."""

    def __init__(self, map_location):
        self.map_location = map_location

    def place(self, raw: Tensor, dtype_: dt.dtype | None, location: str) -> Tensor:
        """Move a CPU uint8 storage to its target device."""
        target = self._target(raw, dtype_, location)
        if target.type == "cpu":
            return raw
        try:
            return raw.to(target)
        except AssertionError:  # no CUDA here: torch's words
            raise RuntimeError("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                               "False. If you are running on a CPU-only machine, please use torch.load with "
                               "map_location=torch.device('cpu') to map your storages to the CPU.") from None
        except (RuntimeError, NotImplementedError) as exc:
            raise RuntimeError(f"Attempting to deserialize object on device '{target}', which tidal cannot use "
                               f"here ({exc}). Use tidal.load with map_location='cpu' to map your storages to "
                               "the CPU.") from None

    def _target(self, raw: Tensor, dtype_, location: str) -> device:
        where = self.map_location
        if where is None:
            return device(location)
        if isinstance(where, (str, device)):
            return device(str(where))
        if isinstance(where, dict):
            return device(str(where.get(location, location)))
        if callable(where):  # torch passes (storage, location); tidal passes the storage as a 1-D tensor
            typed = dtype_ or dt.uint8
            n = raw._v.blob.nbytes // typed.itemsize
            moved = where(Tensor._make(View(raw._v.blob, (n,), (1,), 0, typed.np), typed, raw.device, raw._vm),
                          location)
            return device(location) if moved is None else moved.device
        raise TypeError(f"tidal.load: map_location must be None, a str, a device, a dict or a callable, "
                        f"not {type(where).__name__}")


def _corrupt(step: str, why: str) -> RuntimeError:
    """torch's error for a checkpoint its zip reader cannot read."""
    return RuntimeError(f"PytorchStreamReader {step}: {why}. This is an internal miniz error. If you are seeing this "
                        "error, there is a high likelihood that your checkpoint file is corrupted. This can happen if "
                        "the checkpoint was not saved properly, was transferred incorrectly, or the file was modified "
                        "after saving.")


class _Archive:
    """An opened checkpoint: its zip, its folder, and the storages read so far."""

    def __init__(self, fp, path: str | None, placement: _Placement, mmap: bool):
        try:
            self.zip = zipfile.ZipFile(fp)
        except zipfile.BadZipFile:
            fp.seek(0, os.SEEK_END)
            # torch's zip reader (miniz): a file shorter than an end-of-archive record is not an archive at all
            raise _corrupt("failed reading zip archive", "not a ZIP archive" if fp.tell() < 22 else
                           "failed finding central directory") from None
        names = self.zip.namelist()  # torch's reader: every record sits in the folder of the first one
        folder = names[0][:names[0].index("/") + 1] if "/" in names[0] else None
        if folder is None:
            raise RuntimeError(f"[enforce fail at inline_container.cc:180] . file in archive is not in a "
                               f"subdirectory: {names[0]}")
        stray = next((n for n in names if not n.startswith(folder)), None)
        if stray is not None:
            raise RuntimeError(f"[enforce fail at inline_container.cc:340] . file in archive is not in a "
                               f"subdirectory {folder}: {stray}")
        if folder + "data.pkl" not in names:
            raise _corrupt("failed locating file data.pkl", "file not found")
        self.folder = folder
        order = self._optional("byteorder")
        if order not in (None, b"little"):
            raise NotImplementedError(f"tidal.load: checkpoints with byte order {order!r} are not supported")
        self.fp, self.path, self.placement, self.mmap = fp, path, placement, mmap
        self.storages: dict = {}  # key -> uint8 tensor on its device

    def _optional(self, name: str) -> bytes | None:
        try:
            return self.zip.read(self.folder + name).strip()
        except KeyError:
            return None

    def pickled(self) -> bytes:
        """The bytes of data.pkl."""
        return self.zip.read(self.folder + "data.pkl")

    def storage(self, pid) -> _LoadedStorage:
        """The storage a persistent id names, read from its record on first use."""
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"tidal.load: unsupported persistent id {pid!r}")
        _, storage_type, key, location, numel = pid
        if not isinstance(storage_type, _StorageType) or not isinstance(key, str) or \
                not isinstance(location, str) or not isinstance(numel, int) or numel < 0:
            raise pickle.UnpicklingError(f"tidal.load: malformed storage id {pid!r}")
        raw = self.storages.get(key)
        if raw is None:
            nbytes = numel * (storage_type.dtype.itemsize if storage_type.dtype else 1)
            raw = Tensor._from_array(self._read(f"{self.folder}data/{key}", nbytes), dt.uint8, share=True)
            raw = self.storages[key] = self.placement.place(raw, storage_type.dtype, location)
        return _LoadedStorage(raw, storage_type.dtype)

    def _read(self, name: str, nbytes: int) -> np.ndarray:
        """The whole record `name` (at least `nbytes` long: other references to it may ask for more)."""
        try:
            info = self.zip.getinfo(name)
        except KeyError:
            raise RuntimeError(f"tidal.load: the archive has no record {name}") from None
        if info.file_size < nbytes:
            raise RuntimeError(f"tidal.load: record {name} holds {info.file_size} bytes, expected {nbytes}")
        nbytes = info.file_size
        if self.mmap and info.compress_type == zipfile.ZIP_STORED and nbytes:
            self.fp.seek(info.header_offset)
            name_len, extra_len = struct.unpack("<HH", self.fp.read(30)[26:30])
            start = info.header_offset + 30 + name_len + extra_len
            mode = "c" if get_default_mmap_options() == mmap.MAP_PRIVATE else "r+"  # (MAP_PRIVATE: copy-on-write)
            return np.memmap(self.path, np.uint8, mode=mode, offset=start, shape=(nbytes,))
        out = np.empty(nbytes, np.uint8)
        view, pos = memoryview(out), 0
        with self.zip.open(info) as src:
            while pos < nbytes:
                got = src.readinto(view[pos:])
                if not got:
                    raise RuntimeError(f"tidal.load: record {name} ended early")
                pos += got
        return out


def _skipped_rebuild(*args) -> None:
    """A rebuild put off until the storages hold their data (legacy checkpoints with sparse tensors)."""


def _torch_equivalent(module: str, name: str):
    """What a torch checkpoint's global `module.name` (say torch.nn.modules.linear.Linear, from torch.save(model))
    stands for in tidal: the object `import torch` finds under tidal.compat; None where tidal has none."""
    from .compat._importer import target_name  # lazily: compat sits above serialization

    target = target_name(module)
    if target is None:
        return None
    obj = importlib.import_module(target)
    for part in name.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


class _Unpickler(pickle.Unpickler):
    """Resolves torch's names to tidal's; with weights_only, refuses every global not allowed."""

    def __init__(self, file, archive: _Archive, weights_only: bool, **kwargs):
        super().__init__(file, **kwargs)
        self.archive, self.weights_only = archive, weights_only

    def find_class(self, module: str, name: str):
        # Python 2's names (protocol 2 pickles say __builtin__.xrange) as torch's loader reads them
        module, name = NAME_MAPPING.get((module, name), (IMPORT_MAPPING.get(module, module), name))
        key = (module, name)
        if key == ("torch._utils", "_rebuild_sparse_tensor") and getattr(self.archive, "filled", True) is False:
            self.archive.sparse_seen = True  # a legacy checkpoint's storages are read after the object: see there
            return _skipped_rebuild
        if key in _TORCH_GLOBALS:
            return _TORCH_GLOBALS[key]
        if key in _LAZY_TORCH_GLOBALS:
            return _LAZY_TORCH_GLOBALS[key]()
        if key in _SAFE_GLOBALS:
            return _SAFE_GLOBALS[key]
        if f"{module}.{name}" in _user_safe_globals:
            return _user_safe_globals[f"{module}.{name}"]
        found = _torch_equivalent(module, name) if module == "torch" or module.startswith("torch.") else None
        if found is not None and (not self.weights_only or any(found is g for g in _user_safe_globals.values())):
            return found  # a class torch's checkpoint names (a whole nn.Module...) as `import torch` finds it here
        if found is None and (module == "torch" or module.startswith("torch.")):
            if self.weights_only:
                raise _refusal(module, name, "has no tidal equivalent (tidal.load never imports torch).")
            raise pickle.UnpicklingError(f"{dt.repr_namespace[0]}.load: the checkpoint names {module}.{name}, which "
                                         "has no tidal equivalent (tidal.load never imports torch)")
        if self.weights_only:
            ns, full = dt.repr_namespace[0], f"{module}.{name}"  # torch names the global by its full path
            if module == "builtins":
                full = module = name  # (and a builtin by its bare name)
            raise _refusal(module, name, "was not an allowed global by default. Please use "
                           f"`{ns}.serialization.add_safe_globals([{full}])` or the "
                           f"`{ns}.serialization.safe_globals([{full}])` context manager to allowlist this "
                           "global if you trust this class/function.")
        return super().find_class(module, name)

    def persistent_load(self, pid):
        return self.archive.storage(pid)


@contextlib.contextmanager
def _opened(f, mmap: bool):
    if isinstance(f, (str, bytes, os.PathLike)):
        path = os.fsdecode(f)
        with open(path, "rb") as fp:
            yield fp, path
        return
    if mmap:
        raise ValueError("f must be a file path in order to use the mmap argument")
    if not hasattr(f, "read") or not hasattr(f, "seek"):
        raise AttributeError(f"'{type(f).__name__}' object has no attribute 'seek'. You can only torch.load from a "
                             "file that is seekable. Please pre-load the data into a buffer like io.BytesIO and try "
                             "to load from it instead.")
    seekable = getattr(f, "seekable", None)
    yield (f if seekable is not None and seekable() else io.BytesIO(f.read())), None


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = True, mmap: bool | None = None,
         **pickle_load_args):
    """Load an object saved by tidal.save or torch.save (zip format); unless weights_only=False, only
    tensors, parameters and plain data (dicts, lists, tuples, numbers, strings...) may be rebuilt."""
    if pickle_module not in (None, pickle):
        raise TypeError("tidal.load: pickle_module must be the standard pickle module")
    weights_only = weights_only is not False
    with _opened(f, bool(mmap)) as (fp, path):
        start = fp.tell()
        is_zip = fp.read(4) == b"PK\x03\x04"  # torch's test: the first record's signature
        fp.seek(start)
        if not is_zip:
            if mmap:
                name = f"{f}, " if isinstance(f, str) else ""
                raise RuntimeError("mmap can only be used with files saved with "
                                   f"`torch.save({name}_use_new_zipfile_serialization=True), please torch.save your "
                                   "checkpoint with this option in order to use mmap.")
            storages = LegacyStorages(_Placement(map_location), _LoadedStorage)
            def unpickler(file, header: bool = False):
                if header and not weights_only:  # torch reads its headers with plain pickle.load
                    return pickle.Unpickler(file, **pickle_load_args)
                return _Unpickler(file, storages, weights_only, **pickle_load_args)
            return load_legacy(fp, unpickler, storages, weights_only,
                               lambda byte: _weights_only_failure(f"\n\nUnsupported operand {byte}", False))
        archive = _Archive(fp, path, _Placement(map_location), bool(mmap))
        unpickler = _Unpickler(io.BytesIO(archive.pickled()), archive, weights_only, **pickle_load_args)
        return unpickler.load()
