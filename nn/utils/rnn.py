"""Variable-length sequences for the recurrent layers: PackedSequence, packing, padding and their inverses.

A PackedSequence stores the time steps of a batch sorted by decreasing length one after another:
`data` holds step 0 of every sequence, then step 1 of those still running, and so on; `batch_sizes[t]`
says how many sequences step t has. Everything is composed of tidal ops, so gradients flow through.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ... import ops
from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence", "pad_sequence",
           "unpad_sequence", "pack_sequence", "unpack_sequence"]


class PackedSequence_(NamedTuple):  # noqa: N801 - torch's name for PackedSequence's field tuple
    """The four fields of a PackedSequence."""

    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


_PackedFields = PackedSequence_


def bind(optional, fn):
    """fn(optional), or None when `optional` is None."""
    return None if optional is None else fn(optional)


def _host_ints(t) -> list:
    return [int(v) for v in (t.tolist() if isinstance(t, Tensor) else t)]


def _index_tensor(values) -> Tensor:
    return Tensor._from_array(np.asarray(values, dtype=np.int64), dt.int64)


class PackedSequence(_PackedFields):
    """The data and batch sizes of a packed batch of variable-length sequences (made by pack_* functions)."""

    def __new__(cls, data, batch_sizes: Tensor | None = None, sorted_indices: Tensor | None = None,
                unsorted_indices: Tensor | None = None) -> "PackedSequence":
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:  # PackedSequence((data, batch_sizes), ...)
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        elif batch_sizes.device.type != "cpu":
            raise ValueError("batch_sizes should always be on CPU. Instances of PackedSequence should never be "
                             "created manually. They should be instantiated by functions like pack_sequence and "
                             "pack_padded_sequences in nn.utils.rnn.")
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> "PackedSequence":
        """Convert `data` like Tensor.to; the permutations follow data's device, batch_sizes stays on the CPU."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = (lambda t: None if t is None else t.to(data.device))
        return type(self)(data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices))

    def cuda(self, *args, **kwargs) -> "PackedSequence":
        """The data on a CUDA device."""
        return self.to(self.data.cuda(*args, **kwargs).device)

    def cpu(self) -> "PackedSequence":
        """The data on the CPU."""
        return self.to("cpu")

    def double(self) -> "PackedSequence":
        """The data as float64."""
        return self.to(dtype=dt.float64)

    def float(self) -> "PackedSequence":
        """The data as float32."""
        return self.to(dtype=dt.float32)

    def half(self) -> "PackedSequence":
        """The data as float16."""
        return self.to(dtype=dt.float16)

    def long(self) -> "PackedSequence":
        """The data as int64."""
        return self.to(dtype=dt.int64)

    def int(self) -> "PackedSequence":
        """The data as int32."""
        return self.to(dtype=dt.int32)

    def short(self) -> "PackedSequence":
        """The data as int16."""
        return self.to(dtype=dt.int16)

    def char(self) -> "PackedSequence":
        """The data as int8."""
        return self.to(dtype=dt.int8)

    def byte(self) -> "PackedSequence":
        """The data as uint8."""
        return self.to(dtype=dt.uint8)

    def is_pinned(self) -> bool:
        """Whether the data is in pinned host memory."""
        return self.data.is_pinned()

    def pin_memory(self) -> "PackedSequence":
        """The sequence with its data in pinned host memory."""
        return type(self)(self.data.pin_memory(), self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        """Whether the data lives on a CUDA device."""
        return self.data.device.type == "cuda"


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The permutation that undoes `permutation` (None stays None)."""
    if permutation is None:
        return None
    inverse = np.empty(permutation.numel(), dtype=np.int64)
    inverse[_host_ints(permutation)] = np.arange(permutation.numel())
    return _index_tensor(inverse).to(permutation.device)


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded (T, B, *) (or (B, T, *)) batch whose sequence b has lengths[b] valid steps."""
    lengths = _host_ints(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lengths) != input.size(batch_dim):
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got {len(lengths)} "
                           f"(batch_size={input.size(batch_dim)})")
    sorted_indices = None
    if enforce_sorted:
        if any(a < b for a, b in zip(lengths, lengths[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
                               "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
                               "to sidestep this requirement if you do not need ONNX exportability.")
    else:
        order = np.argsort(-np.asarray(lengths, dtype=np.int64), kind="stable")  # torch's order for ties
        lengths = [lengths[i] for i in order]
        sorted_indices = _index_tensor(order).to(input.device)
        input = input.index_select(batch_dim, sorted_indices)
    if lengths and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an element in 'lengths' that "
                           "is <= 0")
    steps = input.transpose(0, 1) if batch_first else input
    if lengths and lengths[0] > steps.size(0):
        raise RuntimeError(f"pack_padded_sequence: a length of {lengths[0]} exceeds the {steps.size(0)} time steps "
                           "of the input")
    batch_sizes = [sum(1 for n in lengths if n > t) for t in range(lengths[0] if lengths else 0)]
    data = ops.cat([steps[t, :size] for t, size in enumerate(batch_sizes)], 0)
    return PackedSequence(data, _index_tensor(batch_sizes), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False, padding_value: float = 0.0,
                        total_length: int | None = None) -> tuple:
    """(padded batch, lengths): the inverse of pack_padded_sequence, in the original batch order."""
    batch_sizes = _host_ints(sequence.batch_sizes)
    max_length = len(batch_sizes)
    if total_length is not None:
        if total_length < max_length:
            raise ValueError("Expected total_length to be at least the length of the longest sequence in input, "
                             f"but got total_length={total_length} and max sequence length being {max_length}")
    else:
        total_length = max_length
    data = sequence.data
    batch = batch_sizes[0] if batch_sizes else 0
    trailing = tuple(data.shape[1:])
    steps = [_pad_rows(step, batch, padding_value) for step in data.split(batch_sizes, 0)]
    steps += [ops.full((batch,) + trailing, padding_value, dtype=data.dtype, device=data.device)] * \
        (total_length - max_length)
    padded = ops.stack(steps, 0)
    lengths = [sum(1 for size in batch_sizes if size > b) for b in range(batch)]
    if sequence.unsorted_indices is not None:
        padded = padded.index_select(1, sequence.unsorted_indices)
        lengths = [lengths[i] for i in _host_ints(sequence.unsorted_indices)]
    return (padded.transpose(0, 1) if batch_first else padded), _index_tensor(lengths)


def _pad_rows(rows: Tensor, count: int, padding_value: float) -> Tensor:
    """`rows` with padding rows appended up to `count` rows."""
    if rows.size(0) == count:
        return rows
    fill = ops.full((count - rows.size(0),) + tuple(rows.shape[1:]), padding_value, dtype=rows.dtype,
                    device=rows.device)
    return ops.cat([rows, fill], 0)


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Stack variable-length (L_i, *) tensors into a (T, B, *) (or (B, T, *)) batch padded with padding_value."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if not isinstance(padding_side, str):
        raise TypeError(f"pad_sequence(): argument 'padding_side' (position 4) must be str, not "
                        f"{type(padding_side).__name__}")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got {padding_side}.")
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    longest = max(s.size(0) for s in sequences)
    padded = []
    for s in sequences:
        fill = ops.full((longest - s.size(0),) + tuple(s.shape[1:]), padding_value, dtype=s.dtype, device=s.device)
        padded.append(ops.cat([s, fill] if padding_side == "right" else [fill, s], 0))
    return ops.stack(padded, 0 if batch_first else 1)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The list of unpadded sequences: padded_sequences[:lengths[b], b] for each b."""
    batch_major = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [batch_major[b, :length] for b, length in enumerate(_host_ints(lengths))]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Pack a list of variable-length (L_i, *) tensors."""
    lengths = [s.size(0) for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
