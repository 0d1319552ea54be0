"""Errors that must land at the call, as torch's do: out-of-range indices whose values are already known
(host-made index tensors), and allocations no machine can give. Compared with torch's type and message,
in whatever VM mode the suite runs (TIDAL_VM_MODE)."""
from __future__ import annotations

import pytest

import tidal
from tidal.vm import get_vm

torch = pytest.importorskip("torch")


def _i(lib, v):
    return lib.tensor(v)


CASES = {
    "gather": lambda L: L.gather(L.zeros(3, 4), 1, _i(L, [[0, 4]])),
    "gather_negative": lambda L: L.gather(L.zeros(3, 4), 1, _i(L, [[0, -1]])),
    "scatter_": lambda L: L.zeros(3, 4).scatter_(0, _i(L, [[5]]), 1.0),
    "scatter": lambda L: L.zeros(3, 4).scatter(0, _i(L, [[5]]), L.ones(1, 1)),
    "scatter_add": lambda L: L.zeros(3, 4).scatter_add(1, _i(L, [[7]]), L.ones(1, 1)),
    "scatter_reduce": lambda L: L.zeros(3, 4).scatter_reduce(1, _i(L, [[7]]), L.ones(1, 1), "amax"),
    "index_select": lambda L: L.index_select(L.zeros(3, 4), 0, _i(L, [3])),
    "index_select_negative": lambda L: L.index_select(L.zeros(3, 4), 0, _i(L, [-1])),
    "index_add_": lambda L: L.zeros(3, 4).index_add_(0, _i(L, [3]), L.ones(1, 4)),
    "index_copy_": lambda L: L.zeros(3, 4).index_copy_(0, _i(L, [3]), L.ones(1, 4)),
    "index_fill_": lambda L: L.zeros(3, 4).index_fill_(1, _i(L, [4]), 2.0),
    "index_put_": lambda L: L.zeros(3, 4).index_put_((_i(L, [3]),), L.ones(1)),
    "setitem": lambda L: L.zeros(3, 4).__setitem__(_i(L, [0, 5]), 1.0),
    "setitem_second_dim": lambda L: L.zeros(3, 4).__setitem__((slice(None), _i(L, [4])), 1.0),
    "getitem": lambda L: L.zeros(3, 4)[_i(L, [0, 5])],
    "getitem_negative": lambda L: L.zeros(3, 4)[:, _i(L, [-5])],
    "getitem_list": lambda L: L.zeros(3, 4)[[1, 3]],
    "embedding": lambda L: L.nn.functional.embedding(_i(L, [[1, 10]]), L.zeros(10, 3)),
    "embedding_module": lambda L: L.nn.Embedding(4, 2)(_i(L, [4])),
    "take": lambda L: L.take(L.zeros(2, 4), _i(L, [8])),
    "take_negative": lambda L: L.take(L.zeros(2, 4), _i(L, [-9])),
    "put_": lambda L: L.zeros(2, 4).put_(_i(L, [8]), L.ones(1)),
    "take_along_dim_flat": lambda L: L.take_along_dim(L.zeros(2, 4), _i(L, [8])),
}


def _error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return type(info.value).__name__, str(info.value)


@pytest.mark.parametrize("name", list(CASES))
def test_out_of_range_index_raises_at_the_call(name):
    assert _error(tidal, CASES[name]) == _error(torch, CASES[name])
    assert tidal.ones(3).sum().item() == 3.0  # nothing was queued: no error left for a later sync


def test_in_range_indices_still_work_and_wrap():
    x = tidal.arange(12.0).reshape(3, 4)
    assert x.gather(1, tidal.tensor([[3], [0], [1]])).flatten().tolist() == [3.0, 4.0, 9.0]
    assert x[tidal.tensor([-1, 0])][:, 0].tolist() == [8.0, 0.0]
    assert tidal.take(x, tidal.tensor([-1])).tolist() == [11.0]


def test_pending_index_does_not_force_a_sync():
    vm = get_vm(tidal.device("cpu"))
    x = tidal.zeros(3, 4)
    idx = tidal.tensor([[1, 2]]) * 2  # computed by a queued instruction (in async mode)
    syncs = vm.stats.syncs
    try:
        out = x.gather(1, idx)  # the kernel checks the values, and raises at the next sync point
    except RuntimeError as exc:  # sync mode: computed at once, checked at the call
        assert "index 4 is out of bounds for dimension 1 with size 4" in str(exc)
        return
    assert vm.stats.syncs == syncs
    with pytest.raises(RuntimeError, match="index 4 is out of bounds for dimension 1 with size 4"):
        out.tolist()


# -- allocations ----------------------------------------------------------------------------------------
ALLOC = {
    "empty": lambda L: L.empty(10 ** 12), "zeros": lambda L: L.zeros(10 ** 12),
    "ones": lambda L: L.ones(10 ** 6, 10 ** 6), "full": lambda L: L.full((10 ** 12,), 2.0),
    "bool": lambda L: L.empty(10 ** 13, dtype=L.bool), "overflow": lambda L: L.empty(2 ** 62),
    "overflow_numel": lambda L: L.empty(2 ** 40, 2 ** 40),
    "empty_strided": lambda L: L.empty_strided((10 ** 12,), (1,)),
    "new_zeros": lambda L: L.zeros(3).new_zeros(10 ** 12),
    "empty_like": lambda L: L.empty_like(L.zeros(1).expand(10 ** 12)),
}


@pytest.mark.parametrize("name", list(ALLOC))
def test_impossible_allocation_raises_at_the_call(name):
    kind, message = _error(tidal, ALLOC[name])
    want_kind, want = _error(torch, ALLOC[name])
    assert kind == want_kind == "RuntimeError"
    if "DefaultCPUAllocator" in want:
        assert message == want[:want.index(" bytes.") + 7] + " Error code 12 (Cannot allocate memory)"
    else:
        assert message == want


def test_ordinary_creation_stays_lazy():
    t = tidal.empty(1000)
    assert t._v.blob.data is None  # no memory taken until the first write


@pytest.mark.parametrize("call", [
    lambda L: L.gather(L.zeros(3, 4), 0, L.zeros(0, 4, dtype=L.int16)),
    lambda L: L.gather(L.zeros(3, 4), 1, L.zeros(3, 0, dtype=L.int8)),
    lambda L: L.gather(L.zeros(3, 4), 0, L.zeros(0, 4)),
    lambda L: L.zeros(3, 4).scatter(0, L.zeros(0, 4, dtype=L.int16), 1.0),
    lambda L: L.zeros(3, 4).scatter_add(0, L.zeros(0, 4, dtype=L.int16), L.ones(0, 4)),
    lambda L: L.zeros(3, 4).scatter_reduce(0, L.zeros(0, 4, dtype=L.uint8), L.ones(0, 4), "sum"),
], ids=lambda c: "")
def test_empty_index_of_any_dtype_is_taken(call):
    got, want = call(tidal), call(torch)
    assert tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist()
