"""torch.distributed.checkpoint.save on tidal: every rank writes the shards it holds (one replica of
each), the coordinator writes the metadata that says where every chunk lies."""
from __future__ import annotations

from concurrent.futures import Future

from ...autograd.grad_mode import no_grad
from ...comm.global_tensor import GlobalTensor
from ...comm.placement_sbp import broadcast
from ...tensor import Tensor
from ._layout import flatten, plain, region, setup
from .filesystem import FileSystemWriter, StorageWriter

__all__ = ["save", "async_save", "Metadata"]

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
    """Write `state_dict` (tensors, DTensors and plain values, nested) as a sharded checkpoint; collective
    over the process group (each rank writes its own shards)."""
    writer, group, rank = setup("save", checkpoint_id, storage_writer, "storage_writer", FileSystemWriter, planner,
                                process_group, no_dist)
    entries, chunks, records = {}, {}, []
    with no_grad():
        for key, _, _, leaf in flatten(state_dict):
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
