"""Where a distributed checkpoint lives: a directory with one data file per rank and one metadata file.

`__<rank>_0.distcp` holds the chunks that rank wrote (tidal.save's zip format, so it loads with
weights_only); `.metadata` (JSON, written by the coordinator rank after the others reported their
chunks) lists every entry: a tensor's dtype, global shape and chunks (file, offsets, sizes), or a
plain value. This layout is tidal's own: torch's pickled .metadata is not read or written.
"""
from __future__ import annotations

import json
import os
import tempfile

__all__ = ["FileSystemWriter", "FileSystemReader", "StorageWriter", "StorageReader"]

METADATA = ".metadata"


class StorageWriter:
    """Where save() writes (the base of FileSystemWriter)."""


class StorageReader:
    """Where load() reads (the base of FileSystemReader)."""


def _atomic_write(path: str, write) -> None:
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class FileSystemWriter(StorageWriter):
    """Writes a checkpoint into directory `path` (created if missing)."""

    def __init__(self, path: str | os.PathLike, single_file_per_rank: bool = True, sync_files: bool = True,
                 thread_count: int = 1, per_thread_copy_ahead: int = 10_000_000,
                 cache_staged_state_dict: bool = False, overwrite: bool = True):
        self.path = os.fspath(path)
        self.overwrite = overwrite

    def data_file(self, rank: int) -> str:
        """The name of `rank`'s data file."""
        return f"__{rank}_0.distcp"

    def write_data(self, rank: int, chunks: dict) -> None:
        """Write `rank`'s chunks {key: tensor}."""
        from ...serialization import save  # serialization loads on first use (keeps import light)
        os.makedirs(self.path, exist_ok=True)
        target = os.path.join(self.path, self.data_file(rank))
        if not self.overwrite and os.path.exists(target):
            raise RuntimeError(f"Checkpoint already exists and overwrite is False: {target}")
        save(chunks, target)

    def write_metadata(self, metadata: dict) -> None:
        """Write the metadata (on the coordinator rank, after every rank wrote its data)."""
        os.makedirs(self.path, exist_ok=True)
        text = json.dumps(metadata, sort_keys=True).encode()
        _atomic_write(os.path.join(self.path, METADATA), lambda f: f.write(text))


class FileSystemReader(StorageReader):
    """Reads a checkpoint from directory `path`; each data file is read once per load."""

    def __init__(self, path: str | os.PathLike):
        self.path = os.fspath(path)
        self._files: dict = {}

    def read_metadata(self) -> dict:
        """The checkpoint's metadata."""
        target = os.path.join(self.path, METADATA)
        if not os.path.exists(target):
            raise FileNotFoundError(f"no distributed checkpoint at {self.path!r} (missing {METADATA})")
        with open(target, "rb") as f:
            return json.loads(f.read().decode())

    def read_chunk(self, file: str, key: str):
        """The tensor saved as `key` in data file `file`."""
        from ...serialization import load  # serialization loads on first use (keeps import light)
        chunks = self._files.get(file)
        if chunks is None:
            chunks = self._files[file] = load(os.path.join(self.path, file), weights_only=True)
        return chunks[key]

    def reset(self) -> None:
        """Forget the data files read so far."""
        self._files = {}
