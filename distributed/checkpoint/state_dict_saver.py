"""torch.distributed.checkpoint.save on tidal: every rank writes the shards it holds (one replica of
each), the coordinator writes the metadata that says where every chunk lies."""
from __future__ import annotations

import warnings
from concurrent.futures import Future

from ...autograd.grad_mode import no_grad
from ...comm.global_tensor import GlobalTensor
from ...comm.placement_sbp import broadcast
from ...tensor import Tensor
from ._layout import flatten, key_paths, plain, region, setup
from .filesystem import FileSystemWriter, StorageWriter
from .stateful import _expand

__all__ = ["save", "async_save", "save_state_dict", "Metadata"]

FORMAT_VERSION = 1


class Metadata:
    """What a checkpoint holds: `state_dict_metadata` maps each dotted key to its record (dtype, shape and
    chunks of a tensor, or a plain value)."""

    def __init__(self, entries: dict):
        self.state_dict_metadata = entries

    def __repr__(self) -> str:
        return f"Metadata({len(self.state_dict_metadata)} entries)"


def _chunk(t: Tensor) -> Tensor:
    t = t.detach()
    return t.contiguous().clone() if t.dim() else t.clone()   # its own storage: only the chunk is written


def save(state_dict: dict, *, checkpoint_id=None, storage_writer: StorageWriter | None = None, planner=None,
         process_group=None, no_dist: bool = False) -> Metadata:
    """Write `state_dict` (tensors, DTensors and plain values, nested; a top-level Stateful saved as its
    state_dict()) as a sharded checkpoint; collective over the process group (each rank writes its own shards)."""
    state_dict, _ = _expand(state_dict)
    writer, group, rank = setup("save", checkpoint_id, storage_writer, "storage_writer", FileSystemWriter, planner,
                                process_group, no_dist)
    entries, chunks, records = {}, {}, []
    paths = key_paths(state_dict)
    with no_grad():
        for order, (key, _, _, leaf) in enumerate(flatten(state_dict)):
            if isinstance(leaf, GlobalTensor):
                if any(s.is_partial for s in leaf.sbp):   # reduce the partial values first: a checkpoint holds values
                    leaf = leaf._relayout(tuple(broadcast if s.is_partial else s for s in leaf.sbp))
                offsets, sizes, writes = region(leaf, rank)
                entries[key] = {"kind": "tensor", "dtype": leaf.dtype.name, "shape": list(leaf._shape), "chunks": []}
                if writes:
                    chunks[key] = _chunk(leaf._local)
                    records.append([key, offsets, sizes])
            elif isinstance(leaf, Tensor):
                entries[key] = {"kind": "tensor", "dtype": leaf.dtype.name, "shape": list(leaf.shape), "chunks": []}
                if rank == (group.ranks[0] if group is not None else 0):
                    chunks[key] = _chunk(leaf)
                    records.append([key, [0] * leaf.dim(), list(leaf.shape)])
            else:
                entries[key] = {"kind": "value", "value": plain(leaf, key)}
            entries[key].update(path=paths[key], order=order)   # the nesting and order, for format_utils
    writer.write_data(rank, chunks)
    everyone = group.control.all_gather_object([rank, records]) if group is not None else [[rank, records]]
    if group is None or rank == group.ranks[0]:
        for who, done in everyone:
            for key, offsets, sizes in done:
                entries[key]["chunks"].append({"file": writer.data_file(who), "key": key, "offsets": offsets,
                                               "sizes": sizes})
        writer.write_metadata({"version": FORMAT_VERSION, "entries": entries})
    if group is not None:
        group.control.barrier()    # every rank returns once the checkpoint is complete
    return Metadata(entries)


def async_save(state_dict: dict, *, checkpoint_id=None, storage_writer: StorageWriter | None = None, planner=None,
               process_group=None, no_dist: bool = False, **kwargs) -> Future:
    """save(), returning a Future of its Metadata; tidal writes before returning, so the Future is done."""
    future: Future = Future()
    future.set_result(save(state_dict, checkpoint_id=checkpoint_id, storage_writer=storage_writer, planner=planner,
                           process_group=process_group, no_dist=no_dist))
    return future


def save_state_dict(state_dict: dict, storage_writer: StorageWriter, process_group=None, coordinator_rank: int = 0,
                    no_dist: bool = False, planner=None) -> Metadata:
    """The deprecated name of save() (torch warns the same way)."""
    warnings.warn("`save_state_dict` is deprecated and will be removed in future versions.Please use `save` "
                  "instead.", FutureWarning, stacklevel=2)
    return save(state_dict, storage_writer=storage_writer, process_group=process_group, no_dist=no_dist,
                planner=planner)
