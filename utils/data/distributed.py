"""DistributedSampler: each rank's share of a dataset, as torch.utils.data.distributed.

The shuffled order is torch's exactly: torch seeds a CPU generator (MT19937) with seed + epoch
and draws `randperm` by a Fisher-Yates pass taking one 32-bit output per position. NumPy's
MT19937 with its legacy seeding is the same generator, so the same pass here gives the same
indices on every rank without tidal's own random ops (whose stream differs from torch's).
"""
from __future__ import annotations

import math
from typing import Iterator, TypeVar

import numpy as np

from .sampler import Sampler

__all__ = ["DistributedSampler"]

_RANDOM64_FROM = (1 << 32) // 20  # torch draws 64-bit values for a permutation at least this long


def torch_randperm(n: int, seed: int) -> list:
    """torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist(), on the host."""
    bits = np.random.MT19937()
    bits._legacy_seeding(seed & 0xFFFFFFFF)  # torch seeds its mt19937 with the low 32 bits
    if n < _RANDOM64_FROM:  # checked against torch
        order = list(range(n))
        for i, draw in enumerate(bits.random_raw(max(n - 1, 0)).tolist()):
            j = i + draw % (n - i)
            order[i], order[j] = order[j], order[i]
        return order
    # torch's inside-out shuffle with random64() = (first << 32) | second (not checked: too long to run)
    pairs = bits.random_raw(2 * n).reshape(-1, 2).astype(np.uint64)
    draws = ((pairs[:, 0] << np.uint64(32)) | pairs[:, 1]).tolist()
    order = [0] * n
    for i, draw in enumerate(draws):
        j = draw % (i + 1)
        order[i] = order[j]
        order[j] = i
    return order


_T_co = TypeVar("_T_co", covariant=True)


class DistributedSampler(Sampler[_T_co]):
    """The indices of rank `rank` of `num_replicas` (default: the process group's): a shuffled
    (per `seed` and `set_epoch`) or in-order list, padded by repetition or cut (`drop_last`) to a
    multiple of `num_replicas`, then every `num_replicas`-th index from position `rank`."""

    def __init__(self, dataset, num_replicas: int | None = None, rank: int | None = None, shuffle: bool = True,
                 seed: int = 0, drop_last: bool = False):
        if num_replicas is None or rank is None:
            from ...comm import process_group as pg  # comm loads on first use (keeps import light)
            if num_replicas is None:
                num_replicas = pg.get_world_size()
            if rank is None:
                rank = pg.get_rank()
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            # the largest share that every rank can fill without repeating indices
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[int]:
        n = len(self.dataset)
        indices = torch_randperm(n, self.seed + self.epoch) if self.shuffle else list(range(n))
        if not self.drop_last:
            padding = self.total_size - len(indices)
            if padding <= len(indices):
                indices += indices[:padding]
            else:
                indices += (indices * math.ceil(padding / len(indices)))[:padding]
        else:
            indices = indices[:self.total_size]
        if len(indices) != self.total_size:
            raise AssertionError(f"Number of indices ({len(indices)}) does not match total_size ({self.total_size})")
        indices = indices[self.rank:self.total_size:self.num_replicas]
        if len(indices) != self.num_samples:
            raise AssertionError(f"Number of subsampled indices ({len(indices)}) does not match num_samples "
                                 f"({self.num_samples})")
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """Use `epoch` in the shuffle's seed, so each epoch has its own order (the same on every rank)."""
        self.epoch = epoch
