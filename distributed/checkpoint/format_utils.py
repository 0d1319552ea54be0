"""torch.distributed.checkpoint.format_utils: convert between a distributed checkpoint and one torch.save file.

dcp_to_torch_save rebuilds the saved state dict whole (each tensor assembled from its chunks) with the nesting
and key order it was saved with, as torch's does: dict keys become str (torch's flattening spells them so) and
lists stay lists; a tuple among the plain values comes back as a list (the metadata is JSON). It needs the key
paths that save() records; a checkpoint written before tidal recorded them is refused with a RuntimeError. The
file it writes is tidal.save's, which torch.load reads. torch_save_to_dcp saves a torch.save file's state dict
as a checkpoint in one process.
"""
from __future__ import annotations

import os

from ... import ops
from ...autograd.grad_mode import no_grad
from ...tensor import dtype as dt
from .filesystem import FileSystemReader, FileSystemWriter
from .state_dict_loader import _fill
from .state_dict_saver import save

__all__ = ["dcp_to_torch_save", "torch_save_to_dcp"]


def _whole(entry: dict, reader: FileSystemReader):
    """A saved tensor assembled from its chunks."""
    out = ops.empty(tuple(entry["shape"]), dtype=dt.from_name(entry["dtype"]))
    _fill(out, [0] * len(entry["shape"]), list(entry["shape"]), entry, reader)
    return out


def _place(root: dict, path: list, value) -> None:
    """Put `value` at `path` ([kind, key] steps) under `root`, making the dicts and lists on the way."""
    node = root
    for (kind, key), (next_kind, _) in zip(path, path[1:] + [[None, None]]):
        key = str(key) if kind == "d" else int(key)
        if next_kind is None:
            child = value
        else:
            existing = node.get(key) if kind == "d" else (node[key] if key < len(node) else None)
            child = existing if existing is not None else ({} if next_kind == "d" else [])
        if kind == "d":
            node[key] = child
        else:
            node.extend([None] * (key + 1 - len(node)))
            node[key] = child
        node = child


def dcp_to_torch_save(dcp_checkpoint_dir: str | os.PathLike, torch_save_path: str | os.PathLike) -> None:
    """Write the whole state dict of the distributed checkpoint in `dcp_checkpoint_dir` to one torch.save file."""
    from ...serialization import save  # serialization loads on first use (keeps import light)
    reader = FileSystemReader(dcp_checkpoint_dir)
    entries = reader.read_metadata()["entries"]
    state_dict: dict = {}
    with no_grad():
        for key, entry in sorted(entries.items(), key=lambda item: item[1].get("order", 0)):
            if "path" not in entry:
                raise RuntimeError(f"dcp_to_torch_save: the checkpoint at {os.fspath(dcp_checkpoint_dir)!r} does not "
                                   f"record how its keys nest (it was written by an older tidal); load it with "
                                   f"dcp.load into a state dict of the saved structure instead (key {key!r})")
            value = _whole(entry, reader) if entry["kind"] == "tensor" else entry["value"]
            _place(state_dict, entry["path"], value)
    save(state_dict, torch_save_path)


def torch_save_to_dcp(torch_save_path: str | os.PathLike, dcp_checkpoint_dir: str | os.PathLike) -> None:
    """Save the state dict in a torch.save file as a distributed checkpoint (in this process alone)."""
    from ...serialization import load  # serialization loads on first use (keeps import light)
    state_dict = load(torch_save_path, weights_only=False)
    save(state_dict, storage_writer=FileSystemWriter(dcp_checkpoint_dir), no_dist=True)
