"""tidal.utils.data against torch.utils.data: datasets, samplers, collation, DataLoader with and without workers."""
import collections
import os
import random
import time
import warnings

import numpy as np
import pytest
import torch
import torch.utils.data as T

import tidal
import tidal.utils.data as D
import tidal.utils.data.dataloader as dataloader_module

WORKER_TIMEOUT = 20  # a DataLoader timeout for every worker test: a hang fails instead of blocking


# -- comparing tidal and torch structures ------------------------------------------------------------------------
def tree(x):
    """A canonical form of a (nested) batch from either library, for equality checks."""
    if isinstance(x, (tidal.Tensor, torch.Tensor)):
        name = str(x.dtype).split(".")[1]
        vals = x.detach().float() if str(x.dtype).endswith("bfloat16") else x.detach()
        vals = np.asarray(vals.numpy() if isinstance(vals, torch.Tensor) else vals.numpy())
        if vals.dtype.kind == "V":  # ml_dtypes bfloat16
            vals = vals.astype(np.float32)
        return ("tensor", name, tuple(x.shape), vals.tolist())
    if isinstance(x, np.ndarray):
        return ("ndarray", str(x.dtype), x.tolist())
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return (type(x).__name__, tuple(tree(v) for v in x))
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, [tree(v) for v in x])
    if isinstance(x, collections.abc.Mapping):
        return (type(x).__name__, {k: tree(v) for k, v in x.items()})
    return (type(x).__name__, x)


def same(ours, theirs):
    assert tree(ours) == tree(theirs)


def both(build):
    """build(lib) for tidal and for torch."""
    return build(tidal), build(torch)


# -- datasets --------------------------------------------------------------------------------------------------
def test_tensor_dataset_matches_torch(rng):
    x, y = rng.standard_normal((6, 3)).astype(np.float32), rng.integers(0, 5, 6)
    ours, theirs = D.TensorDataset(tidal.tensor(x), tidal.tensor(y)), T.TensorDataset(torch.tensor(x), torch.tensor(y))
    assert len(ours) == len(theirs) == 6
    for i in (0, 5, -1, slice(1, 4)):
        same(ours[i], theirs[i])
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):
        D.TensorDataset(tidal.zeros(2), tidal.zeros(3))


def test_concat_subset_chain_stack():
    a, b = list(range(3)), list(range(10, 15))
    ours, theirs = D.ConcatDataset([a, b]), T.ConcatDataset([a, b])
    assert ours.cumulative_sizes == theirs.cumulative_sizes == [3, 8]
    assert [ours[i] for i in range(-8, 8)] == [theirs[i] for i in range(-8, 8)]
    for idx, exc in ((-9, ValueError), (8, IndexError)):
        with pytest.raises(exc) as ours_err:
            ours[idx]
        with pytest.raises(exc) as theirs_err:
            theirs[idx]
        assert str(ours_err.value) == str(theirs_err.value)
    with pytest.raises(AssertionError, match="datasets should not be an empty iterable"):
        D.ConcatDataset([])
    with pytest.raises(AssertionError, match="ConcatDataset does not support IterableDataset"):
        D.ConcatDataset([Stream(3)])

    sub = D.Subset(b, [4, 0, 2])
    assert len(sub) == 3 and [sub[i] for i in range(3)] == [14, 10, 12] and sub.__getitems__([0, 1]) == [14, 10]
    assert isinstance(D.Subset(b, [0]) + D.Subset(a, [1]), D.ConcatDataset)
    chained = Stream(2) + Stream(3)
    assert isinstance(chained, D.ChainDataset) and list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    stacked = D.StackDataset(a, [7, 8, 9])
    assert stacked[1] == (1, 8) and len(stacked) == 3
    assert D.StackDataset(x=a, y=a)[2] == {"x": 2, "y": 2}
    with pytest.raises(ValueError, match="Size mismatch between datasets"):
        D.StackDataset(a, b)
    with pytest.raises(NotImplementedError, match="Subclasses of Dataset should implement __getitem__."):
        D.Dataset()[0]


@pytest.mark.parametrize("n,lengths", [(10, [3, 7]), (10, [0.33, 0.33, 0.34]), (7, [0.5, 0.5]), (3, [0.1, 0.1, 0.8]),
                                       (5, [1.0]), (4, [0, 4])])
def test_random_split_lengths_match_torch(n, lengths):
    with warnings.catch_warnings(record=True) as ours_warn:
        warnings.simplefilter("always")
        ours = D.random_split(range(n), lengths, generator=tidal.Generator().manual_seed(0))
    with warnings.catch_warnings(record=True) as theirs_warn:
        warnings.simplefilter("always")
        theirs = T.random_split(range(n), lengths, generator=torch.Generator().manual_seed(0))
    assert [len(s) for s in ours] == [len(s) for s in theirs]
    assert [str(w.message) for w in ours_warn] == [str(w.message) for w in theirs_warn]
    picked = [s[i] for s in ours for i in range(len(s))]
    assert sorted(picked) == list(range(n))


def test_random_split_reproducible_and_errors():
    def split(gen=None):
        return [list(s) for s in D.random_split(range(20), [5, 15], generator=gen)]

    assert split(tidal.Generator().manual_seed(1)) == split(tidal.Generator().manual_seed(1))
    assert split(tidal.Generator().manual_seed(1)) != split(tidal.Generator().manual_seed(2))
    tidal.manual_seed(3)
    first = split()
    tidal.manual_seed(3)
    assert split() == first
    for lengths in ([3, 3], [0.5, 1.5]):
        with pytest.raises(ValueError, match="Sum of input lengths does not equal the length of the input dataset!"):
            D.random_split(range(10), lengths)
    with pytest.raises(ValueError, match="Fraction at index 2 is not between 0 and 1"):
        D.random_split(range(10), [0.2, 1.0, -0.2])


# -- samplers --------------------------------------------------------------------------------------------------
def test_sequential_and_batch_sampler_match_torch():
    assert list(D.SequentialSampler(range(5))) == list(T.SequentialSampler(range(5)))
    for size in (1, 2, 3, 5, 6):
        for drop in (False, True):
            ours, theirs = D.BatchSampler(range(5), size, drop), T.BatchSampler(range(5), size, drop)
            assert list(ours) == list(theirs) and len(ours) == len(theirs)
    assert list(D.BatchSampler([4, 2, 0], 2, False)) == [[4, 2], [0]]


def test_random_sampler():
    gen = tidal.Generator().manual_seed(0)
    sampler = D.RandomSampler(range(10), generator=gen)
    epochs = [list(sampler) for _ in range(3)]
    assert all(sorted(e) == list(range(10)) for e in epochs) and epochs[0] != epochs[1]
    assert list(D.RandomSampler(range(10), generator=tidal.Generator().manual_seed(0))) == epochs[0]
    tidal.manual_seed(5)
    a = list(D.RandomSampler(range(10)))
    tidal.manual_seed(5)
    assert list(D.RandomSampler(range(10))) == a

    more = list(D.RandomSampler(range(4), num_samples=10, generator=gen))
    assert len(more) == 10 and sorted(more[:8]) == [0, 0, 1, 1, 2, 2, 3, 3]  # whole permutations, then a part
    drawn = D.RandomSampler(range(3), replacement=True, num_samples=70, generator=gen)
    values = list(drawn)
    assert len(drawn) == len(values) == 70 and set(values) == {0, 1, 2}


def test_subset_and_weighted_samplers():
    gen = tidal.Generator().manual_seed(0)
    assert sorted(D.SubsetRandomSampler([10, 20, 30, 40], generator=gen)) == [10, 20, 30, 40]
    assert len(D.SubsetRandomSampler([1, 2])) == 2
    weighted = D.WeightedRandomSampler([0.0, 1.0, 0.0, 3.0], 50, generator=gen)
    values = list(weighted)
    assert len(weighted) == 50 and set(values) == {1, 3} and values.count(3) > values.count(1)
    distinct = list(D.WeightedRandomSampler([1.0, 1.0, 1.0, 0.0], 3, replacement=False, generator=gen))
    assert sorted(distinct) == [0, 1, 2]
    assert isinstance(weighted.weights, tidal.Tensor) and weighted.weights.dtype == tidal.float64


@pytest.mark.parametrize("make", [
    lambda m: m.BatchSampler(range(3), 0, False), lambda m: m.BatchSampler(range(3), True, False),
    lambda m: m.BatchSampler(range(3), 2, 1), lambda m: m.RandomSampler(range(3), replacement=1),
    lambda m: m.RandomSampler(range(3), num_samples=0), lambda m: m.RandomSampler(range(3), num_samples=1.5),
    lambda m: m.RandomSampler([]), lambda m: m.WeightedRandomSampler([[1.0]], 2),
    lambda m: m.WeightedRandomSampler([1.0], 0), lambda m: m.WeightedRandomSampler([1.0], 2, replacement=0),
])
def test_sampler_errors_match_torch(make):
    with pytest.raises(Exception) as theirs:
        make(T)
    with pytest.raises(type(theirs.value)) as ours:
        make(D)
    assert str(ours.value) == str(theirs.value)


# -- collation -------------------------------------------------------------------------------------------------
Point = collections.namedtuple("Point", "x y")


def _np_batch(rng, dtype):
    return [(rng.standard_normal((2, 3)) * 10).astype(dtype) for _ in range(3)]


COLLATE_CASES = {
    "ints": lambda lib, rng: [1, 2, 3],
    "floats": lambda lib, rng: [1.5, 2.5],
    "bools": lambda lib, rng: [True, False],
    "int_then_float": lambda lib, rng: [1, 2.5],
    "float_then_int": lambda lib, rng: [2.5, 1],
    "strings": lambda lib, rng: ["a", "bc"],
    "bytes": lambda lib, rng: [b"a", b"b"],
    "np_float32": lambda lib, rng: _np_batch(rng, np.float32),
    "np_float16": lambda lib, rng: _np_batch(rng, np.float16),
    "np_int64": lambda lib, rng: _np_batch(rng, np.int64),
    "np_int32": lambda lib, rng: _np_batch(rng, np.int32),
    "np_uint8": lambda lib, rng: [np.arange(4, dtype=np.uint8), np.arange(4, 8, dtype=np.uint8)],
    "np_bool": lambda lib, rng: [np.array([True, False]), np.array([False, False])],
    "np_0d": lambda lib, rng: [np.array(1.5), np.array(2.0)],
    "np_scalars_f32": lambda lib, rng: [np.float32(1.5), np.float32(2)],
    "np_scalars_f64": lambda lib, rng: [np.float64(1.5), np.float64(2)],
    "np_scalars_i16": lambda lib, rng: [np.int16(3), np.int16(-4)],
    "np_scalars_bool": lambda lib, rng: [np.bool_(True), np.bool_(False)],
    "np_noncontiguous": lambda lib, rng: [np.arange(12.0).reshape(3, 4).T, np.ones((4, 3)).T.T],
    "tensors": lambda lib, rng: [lib.tensor([[1.0, 2.0]]), lib.tensor([[3.0, 4.0]])],
    "tensors_0d": lambda lib, rng: [lib.tensor(1), lib.tensor(2)],
    "tensors_bf16": lambda lib, rng: [lib.tensor([1.5, 2.0], dtype=lib.bfloat16), lib.tensor([3.0, 4.0],
                                                                                            dtype=lib.bfloat16)],
    "tensors_bool": lambda lib, rng: [lib.tensor([True]), lib.tensor([False])],
    "tensor_views": lambda lib, rng: [lib.arange(6.0).reshape(2, 3).t(), lib.arange(6.0, 12.0).reshape(2, 3).t()],
    "tuples": lambda lib, rng: [(1, "a", 2.0), (2, "b", 3.0)],
    "lists": lambda lib, rng: [[1, 2], [3, 4]],
    "namedtuples": lambda lib, rng: [Point(1, 2.0), Point(3, 4.0)],
    "dicts": lambda lib, rng: [{"x": lib.tensor([i, i + 1]), "meta": {"id": i, "tags": ["t", "u"]}, "name": f"s{i}"}
                               for i in range(3)],
    "ordered_dicts": lambda lib, rng: [collections.OrderedDict(b=1, a=np.ones(2)),
                                       collections.OrderedDict(b=2, a=np.zeros(2))],
    "ranges": lambda lib, rng: [range(2), range(2)],
    "deep": lambda lib, rng: [[{"p": Point(np.int32(i), [1.0, (2, "z")])}] for i in range(2)],
}


@pytest.mark.parametrize("case", sorted(COLLATE_CASES))
def test_default_collate_matches_torch(case):
    ours = D.default_collate(COLLATE_CASES[case](tidal, np.random.default_rng(0)))
    theirs = T.default_collate(COLLATE_CASES[case](torch, np.random.default_rng(0)))
    same(ours, theirs)


@pytest.mark.parametrize("bad", [
    lambda lib: [[1, 2], [3]], lambda lib: [None, None], lambda lib: [object(), object()],
    lambda lib: [np.array(["a"]), np.array(["b"])], lambda lib: [np.array([{}], dtype=object)] * 2,
    lambda lib: [lib.zeros(2), lib.zeros(3)],
])
def test_default_collate_errors_match_torch(bad):
    with pytest.raises(Exception) as theirs:
        T.default_collate(bad(torch))
    with pytest.raises(type(theirs.value)) as ours:
        D.default_collate(bad(tidal))
    assert str(ours.value) == str(theirs.value)


@pytest.mark.parametrize("data", [
    np.arange(3.0), np.float32(2.5), np.int64(3), (np.zeros(2), "a", 1), [np.ones(1), (1, 2)], {"k": np.ones(2)},
    Point(np.zeros(1), 2), np.array(["s"]), "text", 5, None,
])
def test_default_convert_matches_torch(data):
    same(D.default_convert(data), T.default_convert(data))


# -- DataLoader without workers, against torch ----------------------------------------------------------------------
class Samples:
    """A map-style dataset of plain data, usable by both libraries."""

    def __init__(self, n=10):
        self.n = n

    def __getitem__(self, i):
        return {"x": np.arange(3, dtype=np.float32) + i, "y": i, "name": f"s{i}", "pair": (i * 0.5, [i, -i])}

    def __len__(self):
        return self.n


class Stream(D.IterableDataset):
    """0..n-1, each worker taking every num_workers-th item (tidal's worker info)."""

    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = D.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


class TorchStream(T.IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        info = T.get_worker_info()
        start, step = (0, 1) if info is None else (info.id, info.num_workers)
        return iter(range(start, self.n, step))

    def __len__(self):
        return self.n


LOADER_CASES = [dict(), dict(batch_size=3), dict(batch_size=4, drop_last=True), dict(batch_size=10),
                dict(batch_size=11, drop_last=True), dict(batch_size=None), dict(sampler=[3, 1, 2], batch_size=2),
                dict(batch_sampler=[[0, 1], [5], [2, 3, 4]]), dict(batch_size=3, collate_fn=lambda b: b),
                dict(batch_size=None, collate_fn=lambda b: b["y"])]


@pytest.mark.parametrize("kwargs", LOADER_CASES)
def test_loader_matches_torch(kwargs):
    ours, theirs = D.DataLoader(Samples(), **kwargs), T.DataLoader(Samples(), **kwargs)
    assert len(ours) == len(theirs)
    got, want = list(ours), list(theirs)
    assert len(got) == len(want)
    for a, b in zip(got, want):
        same(a, b)


def test_tensor_dataset_loader_matches_torch(rng):
    x, y = rng.standard_normal((7, 2, 3)).astype(np.float32), rng.integers(0, 9, 7)
    ours = D.DataLoader(D.TensorDataset(tidal.tensor(x), tidal.tensor(y)), batch_size=3)
    theirs = T.DataLoader(T.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=3)
    for a, b in zip(ours, theirs, strict=True):
        same(a, b)


@pytest.mark.parametrize("kwargs", [dict(), dict(batch_size=2), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None)])
def test_iterable_loader_matches_torch(kwargs):
    ours, theirs = D.DataLoader(Stream(7), **kwargs), T.DataLoader(TorchStream(7), **kwargs)
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        same(a, b)


def _loader_error(lib, dataset_kind, kwargs):
    dataset = {"map": Samples(), "iter": Stream(3) if lib is D else TorchStream(3)}[dataset_kind]
    with pytest.raises(Exception) as err:
        lib.DataLoader(dataset, **kwargs)
    return err.value


@pytest.mark.parametrize("kind,kwargs", [
    ("map", dict(batch_sampler=[[0]], batch_size=2)), ("map", dict(batch_sampler=[[0]], shuffle=True)),
    ("map", dict(batch_sampler=[[0]], drop_last=True)), ("map", dict(sampler=[0], shuffle=True)),
    ("map", dict(batch_size=None, drop_last=True)), ("map", dict(num_workers=-1)), ("map", dict(timeout=-1)),
    ("map", dict(prefetch_factor=2)), ("map", dict(persistent_workers=True)),
    ("map", dict(num_workers=1, prefetch_factor=-1)), ("map", dict(batch_size=0)), ("map", dict(batch_size=-2)),
    ("map", dict(batch_size=2, drop_last="yes")), ("iter", dict(shuffle=True)), ("iter", dict(sampler=[0])),
    ("iter", dict(batch_sampler=[[0]])),
])
def test_loader_errors_match_torch(kind, kwargs):
    theirs = _loader_error(T, kind, kwargs)
    ours = _loader_error(D, kind, kwargs)
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def test_loader_attributes_and_len():
    loader = D.DataLoader(Samples(), batch_size=3, pin_memory=True)
    with pytest.raises(ValueError, match="batch_size attribute should not be set after DataLoader is initialized"):
        loader.batch_size = 4
    assert loader.pin_memory and isinstance(loader.sampler, D.SequentialSampler)
    assert isinstance(loader.batch_sampler, D.BatchSampler) and loader.collate_fn is D.default_collate
    assert D.DataLoader(Samples(), batch_size=None).collate_fn is D.default_convert
    assert isinstance(D.DataLoader(Samples(), shuffle=True).sampler, D.RandomSampler)

    class NoLen(D.IterableDataset):
        def __iter__(self):
            return iter(range(3))

    with pytest.raises(TypeError):
        len(D.DataLoader(NoLen()))
    assert dataloader_module.DataLoader is D.DataLoader and dataloader_module.default_collate is D.default_collate
    assert D.get_worker_info() is None


def _epochs(loader, n=2):
    return [[tree(b) for b in loader] for _ in range(n)]


def test_shuffle_is_reproducible():
    def run(seed):
        gen = tidal.Generator().manual_seed(seed)
        return _epochs(D.DataLoader(Samples(), batch_size=3, shuffle=True, generator=gen))

    first = run(0)
    assert first == run(0) and first != run(1) and first[0] != first[1]
    tidal.manual_seed(7)
    default = _epochs(D.DataLoader(Samples(), batch_size=3, shuffle=True))
    tidal.manual_seed(7)
    assert _epochs(D.DataLoader(Samples(), batch_size=3, shuffle=True)) == default


# -- DataLoader with workers -------------------------------------------------------------------------------------
@pytest.mark.timeout(60)
@pytest.mark.parametrize("kwargs", [dict(batch_size=3, shuffle=True), dict(batch_size=4, shuffle=True, drop_last=True),
                                    dict(batch_size=None, shuffle=True),
                                    dict(sampler=D.RandomSampler(range(10), replacement=True, num_samples=13),
                                         batch_size=2)])
def test_workers_give_the_same_batches(kwargs):
    def run(workers, **extra):
        loader = D.DataLoader(Samples(), num_workers=workers, generator=tidal.Generator().manual_seed(3), **kwargs,
                              **extra)
        return _epochs(loader)

    if "sampler" in kwargs:  # the sampler draws from the default generator: reseed it for each run
        tidal.manual_seed(11)
        expected = run(0)
        tidal.manual_seed(11)
        assert run(2, timeout=WORKER_TIMEOUT) == expected
        return
    expected = run(0)
    assert run(2, timeout=WORKER_TIMEOUT) == expected
    # persistent workers: a new epoch draws no new base seed from the generator (only a new iterator does), so from
    # the second epoch on the shuffle is not a fresh loader's; it is torch's
    theirs = _epochs(T.DataLoader(Samples(), num_workers=2, generator=torch.Generator().manual_seed(3),
                                  persistent_workers=True, **kwargs))
    assert theirs[0] == expected[0] and theirs != expected
    assert run(2, timeout=WORKER_TIMEOUT, persistent_workers=True, prefetch_factor=1) == theirs
    assert run(3, timeout=WORKER_TIMEOUT, persistent_workers=True) == theirs


@pytest.mark.timeout(60)
def test_workers_tensor_dataset_and_dtypes():
    data = [tidal.arange(8).to(getattr(tidal, name)) for name in ("float32", "bfloat16", "int64", "bool", "uint8")]
    data[0] = (data[0] * 2 + 1)  # pending VM work in the parent when the workers start
    dataset = D.TensorDataset(*data)
    for a, b in zip(D.DataLoader(dataset, batch_size=3, num_workers=2, timeout=WORKER_TIMEOUT),
                    D.DataLoader(dataset, batch_size=3), strict=True):
        assert all(isinstance(t, tidal.Tensor) for t in a)
        same(a, b)


class Computing(D.Dataset):
    """Runs tidal ops (fused elementwise, reductions) inside the worker."""

    def __init__(self):
        self.x = tidal.arange(20.0).reshape(5, 4)

    def __getitem__(self, i):
        return ((self.x[i] * 2 + 1).exp().log() - 1).sum()

    def __len__(self):
        return 5


@pytest.mark.timeout(60)
def test_workers_run_tidal_ops_after_fork():
    warm = (tidal.ones(3) * 3 + 2).exp().sum()  # the parent's VM and kernels are in use before the fork
    assert warm.item() > 0
    got = [b.tolist() for b in D.DataLoader(Computing(), batch_size=2, num_workers=2, timeout=WORKER_TIMEOUT)]
    assert got == [b.tolist() for b in D.DataLoader(Computing(), batch_size=2)]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kwargs", [dict(batch_size=2), dict(batch_size=2, drop_last=True), dict(batch_size=None),
                                    dict(batch_size=3)])
def test_iterable_workers_match_torch(kwargs):
    ours = list(D.DataLoader(Stream(7), num_workers=2, timeout=WORKER_TIMEOUT, **kwargs))
    theirs = list(T.DataLoader(TorchStream(7), num_workers=2, timeout=WORKER_TIMEOUT, **kwargs))
    assert [tree(b) for b in ours] == [tree(b) for b in theirs]


@pytest.mark.timeout(60)
def test_iterable_workers_persistent_epochs():
    loader = D.DataLoader(Stream(5), batch_size=2, num_workers=2, persistent_workers=True, timeout=WORKER_TIMEOUT)
    epochs = [[b.tolist() for b in loader] for _ in range(2)]
    assert epochs[0] == epochs[1] == [[0, 2], [1, 3], [4]]


class Seeds(D.Dataset):
    def __getitem__(self, i):
        info = D.get_worker_info()
        return [info.id, info.num_workers, info.seed, tidal.rand(()).item(), random.random(), float(np.random.rand()),
                INIT_MARK.get("id")]

    def __len__(self):
        return 4


INIT_MARK = {}


def _mark_init(worker_id):
    INIT_MARK["id"] = worker_id * 10


@pytest.mark.timeout(60)
def test_worker_info_seeds_and_init_fn():
    def run(seed):
        loader = D.DataLoader(Seeds(), batch_size=None, num_workers=2, worker_init_fn=_mark_init,
                              generator=tidal.Generator().manual_seed(seed), timeout=WORKER_TIMEOUT)
        return list(loader)

    rows = run(0)
    assert [r[0] for r in rows] == [0, 1, 0, 1] and all(r[1] == 2 for r in rows)
    assert [r[6] for r in rows] == [0, 10, 0, 10]
    assert rows[0][2] + 1 == rows[1][2]  # worker seeds are base_seed + id
    assert rows[0][3:6] != rows[1][3:6]  # each worker's RNGs differ
    assert run(0) == rows and run(1) != rows
    info = D.WorkerInfo(id=0, num_workers=1, seed=1, dataset=None)
    with pytest.raises(RuntimeError, match="Cannot assign attributes to WorkerInfo objects"):
        info.id = 3


class Failing(D.Dataset):
    def __init__(self, mode):
        self.mode = mode

    def __getitem__(self, i):
        if i == 3:
            if self.mode == "raise":
                raise ValueError("bad sample 3")
            if self.mode == "exit":
                os._exit(3)
            time.sleep(1.0)
        return i

    def __len__(self):
        return 6


@pytest.mark.timeout(60)
def test_worker_errors():
    with pytest.raises(ValueError, match=r"(?s)Caught ValueError in DataLoader worker process 1\..*bad sample 3"):
        list(D.DataLoader(Failing("raise"), batch_size=None, num_workers=2, timeout=WORKER_TIMEOUT))
    with pytest.raises(RuntimeError, match=r"DataLoader worker \(pid\(s\) \d+\) exited unexpectedly"):
        list(D.DataLoader(Failing("exit"), batch_size=None, num_workers=2, timeout=WORKER_TIMEOUT))
    with pytest.raises(RuntimeError, match="DataLoader timed out after 0.2 seconds"):
        list(D.DataLoader(Failing("sleep"), batch_size=None, num_workers=1, timeout=0.2))

    def bad_init(worker_id):
        raise KeyError("no init")

    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 0"):
        list(D.DataLoader(Samples(), num_workers=1, worker_init_fn=bad_init, timeout=WORKER_TIMEOUT))


@pytest.mark.timeout(60)
def test_workers_keep_numpy_and_abandoned_epochs():
    loader = D.DataLoader(Samples(), batch_size=2, num_workers=2, collate_fn=lambda b: b, timeout=WORKER_TIMEOUT)
    first = next(iter(loader))
    assert isinstance(first[0]["x"], np.ndarray) and first[0]["name"] == "s0"
    persistent = D.DataLoader(Samples(), batch_size=4, num_workers=2, persistent_workers=True, timeout=WORKER_TIMEOUT)
    it = iter(persistent)
    next(it)  # abandon this epoch with work still queued
    assert [b["y"].tolist() for b in persistent] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(iter(persistent)) == 3
    many = D.DataLoader(Samples(3), batch_size=2, num_workers=4, timeout=WORKER_TIMEOUT)
    assert [b["y"].tolist() for b in many] == [[0, 1], [2]]


@pytest.mark.timeout(60)
def test_spawned_workers():
    dataset = D.TensorDataset(tidal.arange(6.0), tidal.arange(6))
    loader = D.DataLoader(dataset, batch_size=4, num_workers=1, multiprocessing_context="spawn", timeout=WORKER_TIMEOUT)
    assert [b[1].tolist() for b in loader] == [[0, 1, 2, 3], [4, 5]]
