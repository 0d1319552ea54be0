"""Calls torch takes that tidal refused: copy_ of a number, out= of sort, topk, cummax and cummin; compared with
torch 2.13 (values, dtypes, gradient nodes, and torch's errors for bad `out` tensors)."""
import numpy as np
import pytest
import torch

import tidal.compat as T


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "float16"])
@pytest.mark.parametrize("number", [2.7, -3, True, 0.1])
def test_copy_of_a_number_as_torch(dtype, number):
    ours, theirs = T.zeros(3, dtype=getattr(T, dtype)), torch.zeros(3, dtype=getattr(torch, dtype))
    assert ours.copy_(number) is ours
    theirs.copy_(number)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())


def test_copy_of_a_number_keeps_the_graph_and_refuses_other_types():
    ours = T.zeros(3, requires_grad=True).clone()
    theirs = torch.zeros(3, requires_grad=True).clone()
    assert type(ours.copy_(2.5).grad_fn).__name__ == type(theirs.copy_(2.5).grad_fn).__name__ == "CopyBackwards"
    for bad in ("x", [1, 2, 3]):
        with pytest.raises(TypeError) as info:
            theirs.copy_(bad)
        with pytest.raises(TypeError, match=r"copy_\(\): argument 'other' \(position 1\) must be Tensor, not "):
            ours.copy_(bad)
        assert str(info.value).endswith(type(bad).__name__)


def _out(lib, n, value_dtype="float32"):
    return lib.empty(n, dtype=getattr(lib, value_dtype)), lib.empty(n, dtype=lib.long)


CALLS = {
    "sort": lambda L, x, out: L.sort(x, out=out),
    "sort descending": lambda L, x, out: L.sort(x, dim=0, descending=True, stable=True, out=out),
    "topk": lambda L, x, out: L.topk(x, 2, out=out),
    "cummax": lambda L, x, out: L.cummax(x, 0, out=out),
    "cummin": lambda L, x, out: L.cummin(x, 0, out=out),
}


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize("size", [4, 0])  # 0: out is resized
def test_selection_and_running_extremes_into_out(name, size):
    data = np.array([3.0, 1.0, 3.0, 2.0], np.float32)
    results = []
    for lib in (torch, T):
        out = _out(lib, size)
        result = CALLS[name](lib, lib.tensor(data), out)
        assert result[0] is out[0] and result[1] is out[1] and result.values is out[0]
        results.append([r.numpy() for r in out])
    for ours, theirs in zip(results[1], results[0]):
        np.testing.assert_array_equal(ours, theirs)


@pytest.mark.parametrize("name", list(CALLS))
def test_out_refusals_as_torch(name):
    data = np.array([3.0, 1.0, 2.0], np.float32)
    for kwargs in ({"value_dtype": "int64"}, {"grad": True}):
        errors = []
        for lib in (torch, T):
            x = lib.tensor(data, requires_grad=kwargs.get("grad", False))
            out = _out(lib, 3, kwargs.get("value_dtype", "float32"))
            with pytest.raises(RuntimeError) as info:
                CALLS[name](lib, x, out)
            errors.append(str(info.value))
        assert errors[1] == errors[0]
