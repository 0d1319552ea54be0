"""tidal.compat.testing: assert_close against torch.testing.assert_close (outcomes and messages), make_tensor."""
import numpy as np
import pytest
import torch

import tidal.compat as tc


# -- torch.testing ---------------------------------------------------------------------------------------------
def T(values, dtype):
    return ("T", values, dtype)


def build(spec, lib):
    if isinstance(spec, tuple) and spec and spec[0] == "T":
        return lib.tensor(spec[1], dtype=getattr(lib, spec[2]))
    if isinstance(spec, list):
        return [build(s, lib) for s in spec]
    if isinstance(spec, dict):
        return {k: build(v, lib) for k, v in spec.items()}
    return spec


NAN, INF = float("nan"), float("inf")
CLOSE_CASES = [
    (T([1., 2., 3.], "float32"), T([1., 2., 3.], "float32"), {}),
    (T([1., 2.5, 3.], "float32"), T([1., 2., 3.], "float32"), {}),
    (T([1., 2.5, 3.], "float32"), T([1., 2., 3.], "float32"), {"msg": "custom"}),
    (T([1., 2.00001, 3.], "float32"), T([1., 2., 3.], "float32"), {}),
    (T([1., 2.0000001, 3.], "float32"), T([1., 2., 3.], "float32"), {}),
    (T([1., 2.01, 0.], "float16"), T([1., 2., 1e-3], "float16"), {}),
    (T([1., 2.01, 0.], "bfloat16"), T([1., 2., 1e-3], "bfloat16"), {}),
    (T([1., 2.01, 0.], "float64"), T([1., 2., 1e-3], "float64"), {}),
    (T([1, 5, 3], "int64"), T([1, 2, 0], "int64"), {}),
    (T([1, 5, 3], "int32"), T([1, 2, 3], "int32"), {"rtol": 0, "atol": 1}),
    (T([1, 5, 3], "int32"), T([1, 2, 3], "int32"), {"rtol": 0, "atol": 3}),
    (T([200, 3], "uint8"), T([2, 3], "uint8"), {}),
    (T([True, False], "bool"), T([True, True], "bool"), {}),
    (T([[1., 2.], [3., 4.]], "float32"), T([[1., 2.], [3., 5.]], "float32"), {}),
    (T([NAN, 1.], "float32"), T([NAN, 1.], "float32"), {}),
    (T([NAN, 1.], "float32"), T([NAN, 1.], "float32"), {"equal_nan": True}),
    (T([INF, 1.], "float32"), T([INF, 1.], "float32"), {}),
    (T([INF, 1.], "float32"), T([-INF, 1.], "float32"), {}),
    (T([1., 1.], "float32"), T([NAN, 1.], "float32"), {}),
    (T(1.5, "float32"), T(1.0, "float32"), {}),
    (T(NAN, "float32"), T(NAN, "float32"), {}),
    (T(3, "int64"), T(0, "int64"), {}),
    (T([1., 2.], "float32"), T([1., 2.], "float64"), {}),
    (T([1., 2.], "float32"), T([1., 2.1], "float64"), {"check_dtype": False}),
    (T([1., 2.], "float32"), T([1., 2., 3.], "float32"), {}),
    (T([1., 2.], "float32"), T([1., 2.], "float32"), {"rtol": 1e-3}),
    (T([1e-6, 1.0], "float32"), T([0.0, 1.0], "float32"), {}),
    (T([0.0, 1.0], "float32"), T([1e-6, 1.0], "float32"), {"rtol": 0.0, "atol": 0.0}),
    (T((np.arange(20.).reshape(4, 5)).tolist(), "float64"), T((np.arange(20.).reshape(4, 5) * 1.01).tolist(),
                                                              "float64"), {}),
    (T([], "float32"), T([], "float32"), {}),
    (1.0, 1.5, {}), (1, 1.0, {}), (1, 1.0, {"check_dtype": False}), (1, 2, {}), (0.0, 1e-9, {}),
    (1e-9, 1e-10, {"rtol": 0, "atol": 0}), (NAN, NAN, {}), (NAN, NAN, {"equal_nan": True}), (np.float32(1.0), 1.0, {}),
    (True, False, {}), (np.bool_(True), True, {}), (None, None, {}), (None, 1, {}), ("a", "a", {}),
    ([1, 2], (1, 2), {}), ([1, 2], [1, 2, 3], {}), ([1, [2, 3.0]], [1, [2, 3.5]], {}),
    ({"a": 1, "b": [1.0, 2.0]}, {"a": 1, "b": [1.0, 2.5]}, {}), ({"a": 1, "c": 2}, {"a": 1, "b": 1}, {}),
    ({"w": T([1., 2.], "float32")}, {"w": T([1., 3.], "float32")}, {}),
    ([T([1., 2.], "float32"), 2.0], [T([1., 2.], "float32"), 2.0], {}),
    (np.array([1., 2.]), np.array([1., 2.5]), {}), (np.array(3.0), np.array(3.5), {}),
    (np.array([1., 2.], dtype=np.float32), np.array([1., 2.]), {}),
    (1, "a", {}), ([1.0], [2.0], {"msg": "custom"}), ([1.0], [2.0, 3.0], {"msg": "custom"}),
]


def _outcome(fn, actual, expected, kwargs):
    try:
        fn(actual, expected, **kwargs)
    except Exception as exc:  # noqa: BLE001 - the exception is what is compared
        return type(exc).__name__, str(exc).replace("tidal.", "torch.")
    return None


@pytest.mark.parametrize("actual,expected,kwargs", CLOSE_CASES)
def test_assert_close_matches_torch(actual, expected, kwargs):
    ours = _outcome(tc.testing.assert_close, build(actual, tc), build(expected, tc), kwargs)
    theirs = _outcome(torch.testing.assert_close, build(actual, torch), build(expected, torch), kwargs)
    assert ours == theirs


def test_assert_close_callable_msg_and_tensor_kinds():
    with pytest.raises(AssertionError) as info:
        tc.testing.assert_close([tc.ones(2)], [tc.zeros(2)], msg=lambda m: f"Header\n\n{m}\n\nFooter")
    text = str(info.value)
    assert text.startswith("Header\n\nTensor-likes are not close!") and text.endswith("item [0]\n\nFooter")
    assert "Mismatched elements: 2 / 2 (100.0%)" in text
    param = tc.nn.Parameter(tc.ones(2))
    tc.testing.assert_close(param, tc.ones(2))
    with pytest.raises(TypeError, match="No comparison pair"):
        tc.testing.assert_close(param, tc.ones(2), allow_subclasses=False)
    with pytest.raises(TypeError, match="No comparison pair"):
        tc.testing.assert_close(np.ones(2), tc.ones(2))
    with pytest.raises(AssertionError, match="'stride\\(\\)' do not match"):
        tc.testing.assert_close(tc.ones(2, 3).t(), tc.ones(3, 2), check_stride=True)
    tc.testing.assert_close(tc.ones(2, requires_grad=True) * 1, tc.ones(2))


def test_make_tensor():
    x = tc.testing.make_tensor(3, 4, dtype=tc.float32, device="cpu", low=-1, high=1)
    assert tuple(x.shape) == (3, 4) and x.dtype is tc.float32
    assert bool((x >= -1).all()) and bool((x < 1).all())
    n = tc.testing.make_tensor((5, 6), dtype=tc.int64, device="cpu", exclude_zero=True)
    assert bool((n != 0).all()) and bool((n >= -9).all()) and bool((n < 10).all())
    u = tc.testing.make_tensor(100, dtype=tc.uint8, device="cpu")
    assert bool((u >= 0).all()) and u.dtype is tc.uint8
    nc = tc.testing.make_tensor(4, 5, dtype=tc.float64, device="cpu", noncontiguous=True, requires_grad=True)
    assert tuple(nc.shape) == (4, 5) and not nc.is_contiguous() and nc.requires_grad
    assert tc.testing.make_tensor(3, dtype=tc.bool, device="cpu").dtype is tc.bool
