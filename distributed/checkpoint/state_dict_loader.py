"""torch.distributed.checkpoint.load on tidal: fill a state dict in place from a sharded checkpoint,
each rank reading the parts of the saved chunks that its own layout needs (resharding on load)."""
from __future__ import annotations

import warnings

from ...autograd.grad_mode import no_grad
from ...comm.global_tensor import GlobalTensor
from ...comm.placement_sbp import partial_sum
from ...tensor import Tensor
from ._layout import flatten, region, restore, setup
from .filesystem import FileSystemReader, StorageReader
from .stateful import _expand, _hand_back

__all__ = ["load", "load_state_dict"]


def _fill(target: Tensor, offsets: list, sizes: list, entry: dict, reader: StorageReader) -> None:
    """Copy into `target` (the region offsets/sizes of the saved tensor) every overlapping saved chunk."""
    if not sizes:
        for chunk in entry["chunks"]:
            target.copy_(reader.read_chunk(chunk["file"], chunk["key"]))
        return
    for chunk in entry["chunks"]:
        lo = [max(a, b) for a, b in zip(offsets, chunk["offsets"])]
        hi = [min(a + n, b + m) for a, n, b, m in zip(offsets, sizes, chunk["offsets"], chunk["sizes"])]
        if any(h <= l for l, h in zip(lo, hi)):
            continue
        src = reader.read_chunk(chunk["file"], chunk["key"])
        piece = src[tuple(slice(l - b, h - b) for l, h, b in zip(lo, hi, chunk["offsets"]))]
        target[tuple(slice(l - a, h - a) for l, h, a in zip(lo, hi, offsets))].copy_(piece)


def load(state_dict: dict, *, checkpoint_id=None, storage_reader: StorageReader | None = None, planner=None,
         process_group=None, no_dist: bool = False) -> None:
    """Load a checkpoint into `state_dict` in place: its tensors and DTensors (any layout: each rank reads
    what its shards cover) and plain values; a top-level Stateful gets its part through load_state_dict."""
    reader, _, rank = setup("load", checkpoint_id, storage_reader, "storage_reader", FileSystemReader, planner,
                            process_group, no_dist)
    entries = reader.read_metadata()["entries"]
    given, (state_dict, objects) = state_dict, _expand(state_dict)
    partial = getattr(planner, "allow_partial_load", False)
    with no_grad():
        for key, container, index, leaf in flatten(state_dict):
            entry = entries.get(key)
            if entry is None and partial:
                continue
            if entry is None:
                raise RuntimeError(f"Missing key in checkpoint state_dict: {key}.")
            if not isinstance(leaf, (Tensor, GlobalTensor)):
                if entry["kind"] != "value":
                    raise RuntimeError(f"load(): {key} is a tensor in the checkpoint but a "
                                       f"{type(leaf).__name__} in the state dict")
                container[index] = restore(entry["value"], leaf)
                continue
            if entry["kind"] != "tensor":
                raise RuntimeError(f"load(): {key} is a plain value in the checkpoint but a tensor in the state dict")
            shape = tuple(leaf.shape)
            if tuple(entry["shape"]) != shape:
                raise RuntimeError(f"Size mismatch between saved {tuple(entry['shape'])} and current: {shape} "
                                   f"for {key}")
            if isinstance(leaf, GlobalTensor):
                for s in leaf.sbp:   # the saved value is whole: partial values must be made from it
                    if s.is_partial and s.op not in ("sum", "avg", "max", "min"):
                        raise ValueError(f"Replicate to Partial({s.op}) conversion is not supported.")
                offsets, sizes, _ = region(leaf, rank)
                _fill(leaf._local, offsets, sizes, entry, reader)
                coords = leaf.placement.coords(rank)
                if any(s is partial_sum and c != 0 for s, c in zip(leaf.sbp, coords)):
                    leaf._local.zero_()    # a partial sum: the first rank of the axis holds it, the others 0
                                           # (avg/max/min: every rank holds the value)
            else:
                _fill(leaf, [0] * leaf.dim(), list(shape), entry, reader)
    reader_reset = getattr(reader, "reset", None)
    if reader_reset is not None:
        reader_reset()
    _hand_back(given, state_dict, objects)


def load_state_dict(state_dict: dict, storage_reader: StorageReader, process_group=None, coordinator_rank: int = 0,
                    no_dist: bool = False, planner=None) -> None:
    """The deprecated name of load() (torch warns the same way)."""
    warnings.warn("`load_state_dict` is deprecated and will be removed in future versions. Please use `load` "
                  "instead.", FutureWarning, stacklevel=2)
    load(state_dict, storage_reader=storage_reader, process_group=process_group, no_dist=no_dist, planner=planner)
