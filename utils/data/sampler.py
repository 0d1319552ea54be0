"""Samplers: the order in which a DataLoader visits dataset indices, and how it groups them into batches.

Random samplers draw with tidal's random ops from their `generator` (a tidal.Generator) or, without
one, from a generator seeded by the default one, so `tidal.manual_seed` makes every epoch's order
reproducible.
"""
from __future__ import annotations

from typing import Generic, Iterator, Sequence, Sized, TypeVar

from ...ops.random.sampling import Generator, multinomial, randint, randperm
from ...ops.factories.creation import empty
from ...ops.factories.from_data import as_tensor
from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["Sampler", "SequentialSampler", "RandomSampler", "SubsetRandomSampler", "WeightedRandomSampler",
           "BatchSampler"]

_T_co = TypeVar("_T_co", covariant=True)  # what the sampler yields (Sampler[int])
_CHUNK = 32  # indices drawn per random call when sampling with replacement


class Sampler(Generic[_T_co]):
    """Iterates over dataset indices (or anything the dataset's `__getitem__` takes)."""

    def __init__(self, data_source: Sized | None = None):
        pass

    def __iter__(self) -> Iterator:
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source: Sized):
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _positive_int(name: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name} should be a positive integer value, but got {name}={value}")
    return value


def _fresh_generator() -> Generator:
    # A sampler without a generator seeds a private one from the default generator, so each
    # epoch differs and `tidal.manual_seed` still fixes the whole sequence; drawn as torch's
    # RandomSampler draws it (random_() on an int64), so the order is torch's for the same seed.
    seed = int(empty((), dtype=dt.int64).random_().item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """A random permutation of the indices (each epoch a new one), or `num_samples` indices drawn
    with replacement."""

    def __init__(self, data_source: Sized, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={replacement}")
        _positive_int("num_samples", self.num_samples)

    @property
    def num_samples(self) -> int:
        """How many indices an epoch yields (the dataset's length unless given)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        n = len(self.data_source)
        gen = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            for _ in range(self.num_samples // _CHUNK):
                yield from randint(high=n, size=(_CHUNK,), generator=gen).tolist()
            yield from randint(high=n, size=(self.num_samples % _CHUNK,), generator=gen).tolist()
        else:
            for _ in range(self.num_samples // n):
                yield from randperm(n, generator=gen).tolist()
            yield from randperm(n, generator=gen).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence, generator: Generator | None = None):
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator:
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in [0, len(weights)) drawn with probabilities proportional to `weights`."""

    def __init__(self, weights: Sequence[float], num_samples: int, replacement: bool = True,
                 generator: Generator | None = None):
        _positive_int("num_samples", num_samples)
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=dt.float64)
        if weights_tensor.dim() != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights: Tensor = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        yield from multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator).tolist()

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler[list]):
    """Groups another sampler's indices into lists of `batch_size` (the last one shorter unless `drop_last`)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        _positive_int("batch_size", batch_size)
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list]:
        batch = []
        for idx in self.sampler:
            batch.append(idx)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
