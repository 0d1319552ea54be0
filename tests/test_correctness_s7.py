"""Issue 15, session 7: device equality and hashing, NumPy's view of a tensor that requires grad, and
binary_cross_entropy's range checks, each against real torch."""
import numpy as np
import pytest
import torch

import tidal
import tidal.nn.functional as F


def _outcome(fn):
    """('ok', value) or (exception type name, message) of calling fn."""
    try:
        return "ok", fn()
    except Exception as exc:  # noqa: BLE001 - the outcome itself is compared
        return type(exc).__name__, str(exc)


# ---- devices: a device equals only a device ------------------------------------------------------
_DEVICE_TEXTS = ("cpu", "cpu:0", "cuda", "cuda:0", "cuda:1", "meta")


@pytest.mark.parametrize("text", _DEVICE_TEXTS)
@pytest.mark.parametrize("other", _DEVICE_TEXTS + ("bad", "", "cpu:1"))
def test_device_never_equals_a_str(text, other):
    for lib in (torch, tidal):
        d = lib.device(text)
        assert (d == other, d != other, other == d, other != d) == (False, True, False, True)


@pytest.mark.parametrize("a", _DEVICE_TEXTS)
@pytest.mark.parametrize("b", _DEVICE_TEXTS)
def test_device_equality_and_hash_as_torch(a, b):
    ours, theirs = (tidal.device(a), tidal.device(b)), (torch.device(a), torch.device(b))
    assert (ours[0] == ours[1], ours[0] != ours[1]) == (theirs[0] == theirs[1], theirs[0] != theirs[1])
    assert hash(ours[0]) == hash(theirs[0])


def test_device_from_type_and_index_equals_parsed():
    for lib in (torch, tidal):
        assert lib.device("cuda", 0) == lib.device("cuda:0") and lib.device("cuda", 0) != lib.device("cuda")
        assert lib.device("cpu", 0) != lib.device("cpu")
        assert {lib.device("cpu"): 1}.get("cpu") is None and {lib.device("cpu"): 1}[lib.device("cpu")] == 1
        assert lib.device("cpu") not in ["cpu", "cuda"] and lib.device("cpu") in [lib.device("cpu")]
        assert (lib.device("cpu") == None) is False and (lib.device("cpu") == 0) is False  # noqa: E711


def test_tensor_device_is_not_its_string():
    for lib in (torch, tidal):
        t = lib.zeros(2)
        assert t.device != "cpu" and t.device.type == "cpu" and str(t.device) == "cpu"
        assert t.device == lib.device("cpu") and lib.tensor([1], device="cpu:0").device == lib.device("cpu")


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_device_order_comparisons_raise(op):
    for other in ("device", "'cpu'", "1"):
        got = []
        for lib in (torch, tidal):
            d = lib.device("cpu")
            kind, message = _outcome(lambda: eval(f"d {op} {'d' if other == 'device' else other}"))
            got.append((kind, message.replace("torch.device", "device")))
        assert got[0] == got[1], (op, other)


def test_device_ne_and_eq_dunders_return_notimplemented():
    for lib in (torch, tidal):
        d = lib.device("cpu")
        assert d.__eq__("cpu") is NotImplemented and d.__ne__("cpu") is NotImplemented
        assert d.__eq__(d) is True and d.__ne__(d) is False


# ---- NumPy's view of a tensor: __array__ is numpy() -----------------------------------------------
_ARRAY_CALLS = {
    "np.array": lambda t: np.array(t),
    "np.asarray": lambda t: np.asarray(t),
    "np.array(dtype)": lambda t: np.array(t, dtype=np.float64),
    "__array__": lambda t: t.__array__(),
    "numpy()": lambda t: t.numpy(),
    "np.add": lambda t: np.add(t, 1),
}


def _grad_leaf(lib, shape=(2, 3)):
    return lib.tensor(np.arange(6.0).reshape(shape).astype(np.float32), requires_grad=True)


@pytest.mark.parametrize("call", sorted(_ARRAY_CALLS))
def test_array_of_requires_grad_tensor_raises_as_torch(call):
    fn = _ARRAY_CALLS[call]
    outs = [_outcome(lambda: fn(_grad_leaf(lib))) for lib in (torch, tidal)]
    assert outs[0][0] == "RuntimeError" and outs[0] == outs[1]
    outs = [_outcome(lambda: fn(_grad_leaf(lib) * 2)) for lib in (torch, tidal)]  # a non-leaf too
    assert outs[0][0] == "RuntimeError" and outs[0] == outs[1]


def test_array_of_requires_grad_tensor_under_no_grad_reads_values():
    for call in ("np.array", "np.asarray", "numpy()"):
        got = []
        for lib in (torch, tidal):
            t = _grad_leaf(lib)
            with lib.no_grad():
                got.append(np.array(_ARRAY_CALLS[call](t)))
        np.testing.assert_array_equal(got[0], got[1])


@pytest.mark.parametrize("call", sorted(_ARRAY_CALLS))
def test_array_of_detached_tensor_reads_values(call):
    got = [np.asarray(_ARRAY_CALLS[call](_grad_leaf(lib).detach())) for lib in (torch, tidal)]
    assert got[0].dtype == got[1].dtype
    np.testing.assert_array_equal(got[0], got[1])


def test_array_of_list_of_detached_tensors():
    got = [np.array([_grad_leaf(lib).detach(), _grad_leaf(lib).detach()]) for lib in (torch, tidal)]
    np.testing.assert_array_equal(got[0], got[1])


# ---- binary_cross_entropy reads its input and target: both must lie in [0, 1] ---------------------
_NAN, _INF = float("nan"), float("inf")
_BCE_CASES = {
    "input above 1": ([0.2, 1.5], [0.0, 1.0]),
    "input below 0": ([-0.2, 0.5], [0.0, 1.0]),
    "input nan": ([_NAN, 0.5], [0.0, 1.0]),
    "input inf": ([_INF, 0.5], [0.0, 1.0]),
    "input at the bounds": ([0.0, 1.0], [0.0, 1.0]),
    "target above 1": ([0.2, 0.7], [0.0, 2.0]),
    "target below 0": ([0.2, 0.7], [-1.0, 1.0]),
    "target nan": ([0.2, 0.7], [_NAN, 1.0]),
    "both out": ([2.0, 0.5], [-1.0, 1.0]),
    "soft targets": ([0.2, 0.7], [0.3, 0.9]),
    "0-d out": (1.5, 1.0),
    "empty": ([], []),
}


def _bce_outcome(lib, x, y, dtype_name, **kwargs):
    dtype = getattr(lib, dtype_name)
    fn = lib.nn.functional.binary_cross_entropy
    kind, value = _outcome(lambda: fn(lib.tensor(x, dtype=dtype), lib.tensor(y, dtype=dtype), **kwargs))
    return (kind, value) if kind != "ok" else (kind, np.asarray(value.float().tolist()))


@pytest.mark.parametrize("case", sorted(_BCE_CASES))
@pytest.mark.parametrize("dtype_name", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_binary_cross_entropy_range_checks(case, dtype_name, reduction):
    x, y = _BCE_CASES[case]
    got = [_bce_outcome(lib, x, y, dtype_name, reduction=reduction) for lib in (torch, tidal)]
    assert got[0][0] == got[1][0], (got[0], got[1])
    if got[0][0] == "ok":
        np.testing.assert_allclose(got[1][1], got[0][1], rtol=1e-2 if dtype_name == "bfloat16" else 1e-6)
    else:
        assert got[0][1] == got[1][1]


def test_binary_cross_entropy_checks_the_reduction_first():
    got = [_bce_outcome(lib, [1.5], [1.0], "float32", reduction="foo") for lib in (torch, tidal)]
    assert got[0] == got[1] and got[0][0] == "ValueError"


def test_bce_loss_module_and_weight_refuse_as_torch():
    for make in (lambda lib: lib.nn.BCELoss(), lambda lib: lib.nn.BCELoss(weight=lib.tensor([-3.0, 2.0]))):
        got = [_outcome(lambda: make(lib)(lib.tensor([0.5, 1.5]), lib.tensor([1.0, 0.0]))) for lib in (torch, tidal)]
        assert got[0][0] == "RuntimeError" and got[0] == got[1]


def test_binary_cross_entropy_in_range_value_and_grad():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(0.01, 0.99, (4, 5)).astype(np.float32), rng.uniform(0, 1, (4, 5)).astype(np.float32)
    grads, losses = [], []
    for lib in (torch, tidal):
        xt = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.binary_cross_entropy(lib.sigmoid(xt * 3) * 0 + xt, lib.tensor(y))
        loss.backward()
        losses.append(loss.item())
        grads.append(xt.grad.numpy())
    assert losses[1] == pytest.approx(losses[0], rel=1e-5)
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5)
