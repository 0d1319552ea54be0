"""DataLoader: batches from a dataset, in the main process or in worker processes.

The main process owns the sampler, so the batches (which indices, in which order) depend only on
the sampler and its generator, never on the number of workers. With workers, index batches go
round-robin to per-worker queues, at most `prefetch_factor * num_workers` ahead; results come
back on one queue and are re-ordered by task number. Each iterator start draws a base seed from
the loader's generator (workers seed their RNGs from it), with or without workers, so both
consume the generator alike.
"""
from __future__ import annotations

import itertools
import math
import multiprocessing
import os
import pickle
import queue
import time
import warnings
from typing import Generic, TypeVar

from ... import vm
from ...ops.factories.creation import empty
from ...tensor import dtype as dt
from . import _worker
from ._collate import default_collate, default_convert
from ._worker import ExceptionWrapper, IterableEnd, Reset, get_worker_info, make_fetcher
from .dataset import IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from ...tensor.device import accelerator_count

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

_T_co = TypeVar("_T_co", covariant=True)  # the batch type (DataLoader[dict] in annotations)
_POLL_S = 0.1         # how often a waiting main process checks its workers are alive
_JOIN_TIMEOUT_S = 5.0  # how long shutdown waits for a worker before terminating it


class _InfiniteConstantSampler(Sampler):
    """None forever: an IterableDataset's loader only counts requests."""

    def __iter__(self):
        while True:
            yield None


def _base_seed(generator) -> int:
    return int(empty((), dtype=dt.int64).random_(generator=generator).item())


class DataLoader(Generic[_T_co]):
    """Iterates over batches of `dataset`, as torch.utils.data.DataLoader."""

    _FROZEN = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset", "persistent_workers")

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None, sampler=None,
                 batch_sampler=None, num_workers: int = 0, collate_fn=None, pin_memory: bool = False,
                 drop_last: bool = False, timeout: float = 0, worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to disable "
                             "multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError("prefetch_factor option could only be specified in multiprocessing.let num_workers > 0 "
                             "to enable multiprocessing, otherwise set prefetch_factor to None.")
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        elif prefetch_factor is not None and prefetch_factor < 0:
            raise ValueError("prefetch_factor option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler), ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError(f"DataLoader with IterableDataset: expected unspecified {name} option, but got "
                                     f"{name}={value}")
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, and "
                                 "drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually exclusive with drop_last")
        if sampler is None:
            if iterable:
                sampler = _InfiniteConstantSampler()
            else:
                sampler = RandomSampler(dataset, generator=generator) if shuffle else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory  # accepted for compatibility: host memory needs no pinning here
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _checked_context(multiprocessing_context, num_workers)
        self.in_order = in_order
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = collate_fn if collate_fn is not None else \
            (default_collate if batch_sampler is not None else default_convert)
        self.persistent_workers = persistent_workers
        self._iterable = iterable
        self._iterator = None
        self._initialized = True
        self.check_worker_number_rationality()

    def check_worker_number_rationality(self) -> None:
        """torch's warning when this loader would start more worker processes than the CPUs it may use."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        advice = ("DataLoader is not able to compute a suggested max number of worker in current system."
                  if suggest is None else
                  f"Our suggested max number of worker in current system is {suggest}"
                  f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}, which is smaller than what "
                  "this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in total. {advice} Please be "
                      "aware that excessive worker creation might get DataLoader running slow or even freeze, lower "
                      "the worker number to avoid potential slowness/freeze if necessary.", stacklevel=2)

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in self._FROZEN:
            raise ValueError(f"{name} attribute should not be set after {type(self).__name__} is initialized")
        super().__setattr__(name, value)

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def _context(self):
        ctx = self.multiprocessing_context
        return multiprocessing.get_context() if ctx is None else ctx

    def _get_iterator(self):
        if self.num_workers == 0:
            return _SingleProcessDataLoaderIter(self)
        self.check_worker_number_rationality()
        return _MultiProcessingDataLoaderIter(self)

    def __iter__(self):
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:
                self._iterator._reset(self)
            return self._iterator
        return self._get_iterator()

    def __len__(self) -> int:
        if self._iterable:
            length = len(self.dataset)  # a TypeError when the dataset has no length, as in torch
            if self.batch_size is not None:
                length = length // self.batch_size if self.drop_last else math.ceil(length / self.batch_size)
            return length
        return len(self._index_sampler)


def _checked_context(context, num_workers: int):
    """The multiprocessing context torch's DataLoader keeps: a start method's name becomes its context; torch's
    errors for an unknown name, another object, or a context without workers."""
    if context is None:
        return None
    if num_workers <= 0:
        raise ValueError("multiprocessing_context can only be used with multi-process loading (num_workers > 0), "
                         f"but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError(f"multiprocessing_context option should specify a valid start method in {methods!r}, "
                             f"but got multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or a string specifying the "
                        f"start method, but got multiprocessing_context={context}")
    return context


def _warn_pin_memory(device: str) -> None:
    """torch's warnings for pin_memory=True, given as each iterator starts: a pin_memory_device is ignored, and
    without an accelerator nothing is pinned."""
    if device:
        warnings.warn("pin_memory_device is deprecated, the current accelerator will be used as the device,"
                      f"ignore pin_memory_device='{device}'.", stacklevel=4)
    if accelerator_count() == 0:
        warnings.warn("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory "
                      "won't be used.", stacklevel=4)


class _BaseDataLoaderIter:
    def __init__(self, loader: DataLoader):
        self._index_sampler = loader._index_sampler
        if loader.pin_memory:
            _warn_pin_memory(loader.pin_memory_device)
        self._reset(loader)

    def _reset(self, loader: DataLoader) -> None:
        self._base_seed = _base_seed(loader.generator)
        self._sampler_iter = iter(loader._index_sampler)

    def __iter__(self):
        return self

    def __len__(self) -> int:
        return len(self._index_sampler)


class _SingleProcessDataLoaderIter(_BaseDataLoaderIter):
    """Fetches each batch in the calling process."""

    def __init__(self, loader: DataLoader):
        super().__init__(loader)
        self._fetcher = make_fetcher(loader._iterable, loader.dataset, loader._auto_collation, loader.collate_fn,
                                     loader.drop_last)

    def __next__(self):
        index = next(self._sampler_iter)  # StopIteration ends the epoch
        return self._fetcher.fetch(index)


def _sync_all() -> None:
    for machine in vm.all_vms():
        machine.synchronize()


class _MultiProcessingDataLoaderIter(_BaseDataLoaderIter):
    """Hands index batches to worker processes and yields their results in order."""

    def __init__(self, loader: DataLoader):
        # the loader's settings are copied: holding the loader would make a cycle through loader._iterator
        n = self._num_workers = loader.num_workers
        self._prefetch = max(1, loader.prefetch_factor) * n
        self._timeout, self._persistent = loader.timeout, loader.persistent_workers
        self._index_sampler = loader._index_sampler
        if loader.pin_memory:
            _warn_pin_memory(loader.pin_memory_device)
        ctx = loader._context()
        self._workers, self._index_queues, self._shut = [], [], False
        self._epoch = 0
        self._result_queue = ctx.Queue()
        self._base_seed = _base_seed(loader.generator)
        _sync_all()  # a forked worker must not inherit half-run instructions
        for worker_id in range(n):
            index_queue = ctx.Queue()
            index_queue.cancel_join_thread()
            proc = ctx.Process(target=_worker.worker_loop, daemon=True, args=(
                loader._iterable, loader.dataset, index_queue, self._result_queue, loader._auto_collation,
                loader.collate_fn, loader.drop_last, self._base_seed, loader.worker_init_fn, worker_id, n,
                os.getpid()))
            proc.start()
            self._index_queues.append(index_queue)
            self._workers.append(proc)
        self._start_epoch(loader)

    def _reset(self, loader: DataLoader) -> None:
        # a new epoch of the same workers: torch draws no new base seed (only a new iterator does), so the
        # generator's next draw is the sampler's, and the epoch's shuffle is torch's
        self._epoch += 1
        for index_queue in self._index_queues:
            index_queue.put(Reset(self._epoch))
        self._start_epoch(loader)

    def _start_epoch(self, loader: DataLoader) -> None:
        self._sampler_iter = iter(loader._index_sampler)
        self._send_idx = self._rcvd_idx = self._outstanding = 0
        self._task_info: dict = {}  # task -> (worker,) or (worker, data) once it has arrived early
        self._active = [True] * self._num_workers
        self._cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch):
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._outstanding >= self._prefetch:
            return
        try:
            index = next(self._sampler_iter)
        except StopIteration:
            return
        for _ in range(self._num_workers):
            worker = next(self._cycle)
            if self._active[worker]:
                break
        else:
            return  # every worker's iterable is exhausted
        self._index_queues[worker].put(((self._epoch, self._send_idx), index))
        self._task_info[self._send_idx] = (worker,)
        self._outstanding += 1
        self._send_idx += 1

    def _get_data(self) -> tuple:
        timeout = self._timeout
        start = time.monotonic()
        while True:
            try:
                (epoch, task), payload = self._result_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if timeout and time.monotonic() - start >= timeout:
                    raise RuntimeError(f"DataLoader timed out after {timeout} seconds") from None
                dead = [str(w.pid) for w in self._workers if not w.is_alive()]
                if dead:
                    self._shutdown()
                    raise RuntimeError(f"DataLoader worker (pid(s) {', '.join(dead)}) exited unexpectedly") from None
                continue
            if epoch == self._epoch:  # results of an abandoned epoch are dropped
                return task, pickle.loads(payload)

    def __next__(self):
        if self._shut:
            raise StopIteration
        while True:
            while self._rcvd_idx < self._send_idx:  # skip tasks sent to workers whose stream ended
                info = self._task_info[self._rcvd_idx]
                if len(info) == 2 or self._active[info[0]]:
                    break
                del self._task_info[self._rcvd_idx]
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                return self._deliver(info[1])
            task, data = self._get_data()
            self._outstanding -= 1
            if isinstance(data, IterableEnd):
                self._active[data.worker_id] = False
                self._try_put_index()
                continue
            if task != self._rcvd_idx:
                if task in self._task_info:
                    self._task_info[task] += (data,)  # early: keep it until its turn
                continue
            del self._task_info[task]
            return self._deliver(data)

    def _deliver(self, data):
        self._rcvd_idx += 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown(self) -> None:
        if self._shut:
            return
        self._shut = True
        for index_queue in self._index_queues:
            try:
                index_queue.put(None)
            except (OSError, ValueError):
                pass
        for proc in self._workers:
            proc.join(timeout=_JOIN_TIMEOUT_S)
            if proc.is_alive():
                proc.terminate()
                proc.join(timeout=_JOIN_TIMEOUT_S)
        for q in self._index_queues + [self._result_queue]:
            q.cancel_join_thread()
            q.close()

    def __del__(self):
        try:
            self._shutdown()
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass
