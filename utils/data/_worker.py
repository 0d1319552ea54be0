"""What runs inside a DataLoader worker process, and the fetchers both the workers and the main process use.

A worker receives `((epoch, task), indices)` on its index queue, fetches and collates the batch,
and sends back `((epoch, task), pickled batch)`. Tensors cannot cross processes as they are (their
memory belongs to a VM): pickling a tidal tensor copies it into a NumPy array, and unpickling in the
parent wraps that array in a new tensor. Pickling happens here, in the worker's main thread, so a
batch that cannot be pickled becomes an error the parent re-raises rather than a silent hang.
"""
from __future__ import annotations

import os
import pickle
import queue
import random
import sys
import traceback

import numpy as np

from ... import vm
from ...ops.factories.from_data import tensor
from ...ops.random.sampling import manual_seed
from ...tensor.dtype import int64
from ._collate import default_collate
from .dataset import Subset, TensorDataset

__all__ = ["WorkerInfo", "get_worker_info"]

_POLL_S = 1.0  # how often an idle worker checks that its parent is still alive


class WorkerInfo:
    """Facts about the current DataLoader worker: id, num_workers, seed, dataset (its own copy)."""

    __initialized = False

    def __init__(self, **kwargs):
        for name, value in kwargs.items():
            setattr(self, name, value)
        self.__keys = tuple(kwargs)
        self.__initialized = True

    def __setattr__(self, name, value):
        if self.__initialized:
            raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")
        super().__setattr__(name, value)

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)}" for k in self.__keys)
        return f"{type(self).__name__}({fields})"


_worker_info: WorkerInfo | None = None


def get_worker_info() -> WorkerInfo | None:
    """In a DataLoader worker process, its WorkerInfo; in the main process, None."""
    return _worker_info


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main process with its traceback as text."""

    def __init__(self, exc_info=None, where: str = "in background"):
        exc_type, exc, tb = exc_info or sys.exc_info()
        self.exc_type = exc_type
        self.msg = "".join(traceback.format_exception(exc_type, exc, tb))
        self.where = where

    def reraise(self):
        """Raise the original exception type with the worker's traceback in its message."""
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.msg}"
        try:
            exc = self.exc_type(msg)
        except Exception:  # an exception type whose constructor wants other arguments
            raise RuntimeError(msg) from None
        raise exc


class IterableEnd:
    """A worker's reply once its copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id: int):
        self.worker_id = worker_id


class Reset:
    """Start a new epoch (persistent workers): iterable datasets restart their iterator."""

    def __init__(self, epoch: int):
        self.epoch = epoch


class MapFetcher:
    """Fetches `dataset[i]` for an index (no batching) or each index of a batch, then collates."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index):
        """The collated sample(s) at `index`."""
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        if self.collate_fn is default_collate:
            rows = _gathered_rows(self.dataset, index)
            if rows is not None:
                return rows
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if getitems else [self.dataset[i] for i in index]
        return self.collate_fn(data)


def _gathered_rows(dataset, index) -> list | None:
    """default_collate of the samples at `index` (a list of row numbers) of a TensorDataset, or of a Subset of one
    (random_split's), as one row gather per tensor rather than a view per row and sample stacked: the same list of
    tensors (values, dtypes, shapes, contiguous), at the cost of one op per tensor. None for other datasets, and
    where the rows are not plain in-range ints or a tensor requires grad (the sample-by-sample path then gives
    torch's results and errors)."""
    if type(dataset) is Subset and type(dataset.dataset) is TensorDataset:
        picked = dataset.indices
        if not isinstance(picked, (list, tuple, range)):
            return None
        try:
            index = [picked[i] for i in index]
        except (IndexError, TypeError):
            return None
        dataset = dataset.dataset
    if type(dataset) is not TensorDataset:
        return None
    tensors = dataset.tensors
    n = tensors[0].shape[0]
    for i in index:
        if i.__class__ is not int or not 0 <= i < n:
            return None
    for t in tensors:
        if t.requires_grad:
            return None
    rows = tensor(index, dtype=int64, device=tensors[0].device)
    return [t.index_select(0, rows) if t.device == rows.device else t.index_select(0, rows.to(t.device))
            for t in tensors]


class IterableFetcher:
    """Takes the next sample (or the next `len(index)` samples) from the dataset's iterator."""

    def __init__(self, dataset, auto_collation: bool, collate_fn, drop_last: bool):
        self.auto_collation, self.collate_fn, self.drop_last = auto_collation, collate_fn, drop_last
        self.iterator = iter(dataset)
        self.ended = False

    def fetch(self, index):
        """The next collated sample or batch; StopIteration when the stream is done."""
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in index:
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(iterable: bool, dataset, auto_collation: bool, collate_fn, drop_last: bool):
    """The fetcher for a dataset kind."""
    return (IterableFetcher if iterable else MapFetcher)(dataset, auto_collation, collate_fn, drop_last)


def _seed_everything(base_seed: int, worker_id: int) -> int:
    seed = base_seed + worker_id
    random.seed(seed)
    manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, base_seed]).generate_state(4))
    return seed


def _pickled(data, worker_id: int) -> bytes:
    try:
        return pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - reported to the parent like a fetch failure
        return pickle.dumps(ExceptionWrapper(where=f"in DataLoader worker process {worker_id} while sending "
                                                   "a batch to the main process"))


def worker_loop(iterable: bool, dataset, index_queue, result_queue, auto_collation: bool, collate_fn,
                drop_last: bool, base_seed: int, init_fn, worker_id: int, num_workers: int, parent_pid: int) -> None:
    """The body of a worker process: serve fetch requests until told to stop or orphaned."""
    global _worker_info
    # A forked worker inherits the VM but not its worker threads: run instructions inline.
    vm.set_mode("sync")
    seed = _seed_everything(base_seed, worker_id)
    _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    where = f"in DataLoader worker process {worker_id}"
    init_error = fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
    except Exception:  # noqa: BLE001 - sent back as the answer to the first request
        init_error = ExceptionWrapper(where=where)
    try:
        while True:
            try:
                message = index_queue.get(timeout=_POLL_S)
            except queue.Empty:
                if os.getppid() != parent_pid:
                    return  # the parent died without telling us
                continue
            if message is None:
                return
            if isinstance(message, Reset):
                if iterable and init_error is None:
                    try:
                        fetcher = make_fetcher(iterable, dataset, auto_collation, collate_fn, drop_last)
                    except Exception:  # noqa: BLE001
                        init_error = ExceptionWrapper(where=where)
                continue
            task, index = message
            if init_error is not None:
                data, init_error = init_error, None
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    data = IterableEnd(worker_id)
                except Exception:  # noqa: BLE001 - the parent re-raises it
                    data = ExceptionWrapper(where=where)
            result_queue.put((task, _pickled(data, worker_id)))
            del data
    except KeyboardInterrupt:
        pass  # the parent handles Ctrl-C
    finally:
        result_queue.cancel_join_thread()  # never block exiting on a parent that stopped reading
