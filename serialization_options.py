"""torch.serialization's settings and small helpers: the default pickle protocol, the byte order assumed for
checkpoints without a byteorder record, the mmap flags of `load(mmap=True)`, and the storage-location helpers
that scripts and libraries call (`location_tag`, `default_restore_location`, `register_package`)."""
from __future__ import annotations

import enum
import mmap as _mmap
from typing import Any, Callable

__all__ = ["DEFAULT_PROTOCOL", "LoadEndianness", "get_default_load_endianness", "set_default_load_endianness",
           "get_default_mmap_options", "set_default_mmap_options", "register_package", "location_tag",
           "default_restore_location", "normalize_storage_type", "check_module_version_greater_or_equal"]

DEFAULT_PROTOCOL = 2


class LoadEndianness(enum.Enum):
    """The byte order assumed for a checkpoint that has no byteorder record."""

    NATIVE = 1
    LITTLE = 2
    BIG = 3


_settings: dict = {"endianness": None, "mmap_flags": _mmap.MAP_PRIVATE}
_packages: list = []  # (priority, tagger, deserializer), as registered


def get_default_load_endianness() -> LoadEndianness | None:
    """The fallback byte order of `load` (None: native)."""
    return _settings["endianness"]


def set_default_load_endianness(endianness) -> None:
    """Set the fallback byte order of `load` (a LoadEndianness, or None)."""
    if not isinstance(endianness, LoadEndianness) and endianness is not None:
        raise TypeError("Invalid argument type in function set_default_load_endianness")
    _settings["endianness"] = endianness


def get_default_mmap_options() -> int:
    """The flags `load(mmap=True)` maps files with (mmap.MAP_PRIVATE by default)."""
    return _settings["mmap_flags"]


class set_default_mmap_options:  # noqa: N801 - torch's name; usable as a call or a `with` block
    """Map files of `load(mmap=True)` with `flags` (mmap.MAP_PRIVATE or mmap.MAP_SHARED)."""

    def __init__(self, flags: int) -> None:
        if flags not in (_mmap.MAP_PRIVATE, _mmap.MAP_SHARED):
            raise ValueError("Invalid argument in function set_default_mmap_options, expected mmap.MAP_PRIVATE or "
                             f"mmap.MAP_SHARED, but got {flags}")
        self.prev = _settings["mmap_flags"]
        _settings["mmap_flags"] = flags

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _settings["mmap_flags"] = self.prev


def register_package(priority: int, tagger: Callable, deserializer: Callable) -> None:
    """Record a (tagger, deserializer) pair for custom storage locations, as torch's registry takes it."""
    _packages.append((priority, tagger, deserializer))
    _packages.sort(key=lambda entry: entry[0])


def location_tag(storage) -> str:
    """The location string a checkpoint records for `storage` ('cpu', 'cuda:0'...)."""
    for _, tagger, _ in _packages:
        tag = tagger(storage)
        if tag:
            return tag
    dev = getattr(storage, "device", None)
    if dev is None or getattr(dev, "type", "cpu") == "cpu":
        return "cpu"
    return f"{dev.type}:{dev.index or 0}"


def default_restore_location(storage, location: str):
    """`storage` restored at `location` through the registered deserializers (CPU storages stay as they are)."""
    for _, _, deserializer in _packages:
        result = deserializer(storage, location)
        if result is not None:
            return result
    if location == "cpu" or location.startswith("cpu"):
        return storage
    raise RuntimeError(f"don't know how to restore data location of {type(storage).__name__} (tagged with "
                       f"{location})")


def normalize_storage_type(storage_type):
    """The storage type itself (torch maps legacy CUDA storage types to their CPU names here)."""
    return storage_type


def check_module_version_greater_or_equal(module, req_version_tuple: tuple, error_if_malformed: bool = True) -> bool:
    """Whether `module.__version__` is at least `req_version_tuple` (compared part by part, as torch does)."""
    version_strs = module.__version__.split(".")
    try:
        parts = [type(req_version_tuple[i])(version_strs[i]) for i in range(len(req_version_tuple))]
        return tuple(parts) >= tuple(req_version_tuple)
    except Exception as exc:  # noqa: BLE001 - torch's message for an unparsable version
        message = (f"'{module.__name__}' module version string is malformed '{module.__version__}' and cannot be "
                   f"compared with tuple {req_version_tuple}")
        if error_if_malformed:
            raise RuntimeError(message) from exc
        import warnings
        warnings.warn(message + ", but continuing assuming that requirement is met", stacklevel=2)
        return True
