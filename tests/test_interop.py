"""asarray, frombuffer and DLPack against torch: values, dtypes, memory sharing and torch's errors."""
import array

import numpy as np
import pytest
import torch

import tidal.compat as tc
from complex_helpers import raises_like


def _same(got, want):
    assert str(got.dtype)[6:] == str(want.dtype)[6:] and tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


@pytest.mark.parametrize("obj", [
    [1, 2], [1, 2.5], [[True], [False]], 3.0, 7, np.arange(3.0), np.arange(6, dtype=np.int16).reshape(2, 3),
    np.float64(2.0), np.int32(4), [np.float64(2.0)], (1.5, 2.5), np.arange(4.0)[::2],
], ids=["ints", "floats", "bools", "float", "int", "ndarray", "int16_2d", "np_scalar", "np_int", "np_list", "tuple",
        "strided"])
@pytest.mark.parametrize("dtype", [None, "float64", "int32"])
def test_asarray_values(obj, dtype):
    got = tc.asarray(obj, dtype=None if dtype is None else getattr(tc, dtype))
    want = torch.asarray(obj, dtype=None if dtype is None else getattr(torch, dtype))
    _same(got, want)


def test_asarray_sharing_and_copy():
    a = np.arange(4.0)
    ours, theirs = tc.asarray(a), torch.asarray(a)
    a[0] = 9.0
    assert float(ours[0]) == float(theirs[0]) == 9.0
    copied = tc.asarray(a, copy=True)
    a[1] = -1.0
    assert float(copied[1]) == 1.0
    t = tc.ones(3)
    assert tc.asarray(t) is t and torch.asarray(torch.ones(3)) is not None
    assert tc.asarray(t, copy=True) is not t
    assert tc.asarray(t, dtype=tc.float64).dtype is tc.float64
    raises_like(lambda: tc.asarray(tc.ones(3), dtype=tc.float64, copy=False),
                lambda: torch.asarray(torch.ones(3), dtype=torch.float64, copy=False))
    raises_like(lambda: tc.asarray(a, dtype=tc.float32, copy=False),
                lambda: torch.asarray(a, dtype=torch.float32, copy=False))
    raises_like(lambda: tc.asarray([1.0], copy=False), lambda: torch.asarray([1.0], copy=False))


def test_asarray_requires_grad_and_tensors():
    got = tc.asarray([1.0, 2.0], requires_grad=True)
    assert got.requires_grad and got.is_leaf
    raises_like(lambda: tc.asarray([1, 2], requires_grad=True), lambda: torch.asarray([1, 2], requires_grad=True))
    _same(tc.asarray([tc.tensor(1.0), tc.tensor(2.0)]), torch.asarray([torch.tensor(1.0), torch.tensor(2.0)]))
    _same(tc.asarray(torch.arange(3.0)), torch.arange(3.0))  # a DLPack producer


def test_asarray_buffers():
    data = np.arange(3, dtype=np.float32).tobytes()
    _same(tc.asarray(bytearray(data)), torch.asarray(bytearray(data)))
    _same(tc.asarray(bytearray(data), dtype=tc.uint8), torch.asarray(bytearray(data), dtype=torch.uint8))
    raises_like(lambda: tc.asarray(b"ab"), lambda: torch.asarray(bytearray(b"ab")))


@pytest.mark.parametrize("kwargs", [{}, {"count": 2, "offset": 4}, {"count": 1}, {"offset": 8}])
@pytest.mark.parametrize("dtype", ["float32", "int16", "uint8"])
def test_frombuffer(kwargs, dtype):
    raw = np.arange(12, dtype=np.float32).tobytes()
    got = tc.frombuffer(bytearray(raw), dtype=getattr(tc, dtype), **kwargs)
    want = torch.frombuffer(bytearray(raw), dtype=getattr(torch, dtype), **kwargs)
    _same(got, want)


def test_frombuffer_shares_and_errors():
    buf = bytearray(np.ones(3, np.float32).tobytes())
    t = tc.frombuffer(buf, dtype=tc.float32)
    buf[0:4] = np.float32(2).tobytes()
    assert float(t[0]) == 2.0
    _same(tc.frombuffer(array.array("i", [1, 2, 3]), dtype=tc.int32),
          torch.frombuffer(array.array("i", [1, 2, 3]), dtype=torch.int32))
    _same(tc.frombuffer(b"abcd", dtype=tc.uint8), torch.tensor(list(b"abcd"), dtype=torch.uint8))  # read-only
    for kwargs in ({"count": 5}, {"offset": 13}, {"offset": -1}, {"count": 0}, {}):
        buffer = bytearray(12) if kwargs else bytearray()
        raises_like(lambda: tc.frombuffer(buffer, dtype=tc.float32, **kwargs),
                    lambda: torch.frombuffer(buffer, dtype=torch.float32, **kwargs))
    raises_like(lambda: tc.frombuffer(bytearray(b"abcde"), dtype=tc.float32),
                lambda: torch.frombuffer(bytearray(b"abcde"), dtype=torch.float32))
    raises_like(lambda: tc.frombuffer(bytearray(b"abcd")), lambda: torch.frombuffer(bytearray(b"abcd")))
    raises_like(lambda: tc.frombuffer(bytearray(b"abcd"), dtype=tc.uint8, requires_grad=True),
                lambda: torch.frombuffer(bytearray(b"abcd"), dtype=torch.uint8, requires_grad=True))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool", "complex64"])
def test_dlpack_both_ways(dtype):
    ours = tc.arange(6).reshape(2, 3).to(getattr(tc, dtype))
    theirs = torch.from_dlpack(ours)  # torch consumes tidal's __dlpack__
    _same(ours, theirs)
    theirs.view(-1)[0] = 1
    assert bool(ours.reshape(-1)[0] == 1)  # the same memory
    back = tc.from_dlpack(theirs)
    _same(back, theirs)
    theirs.view(-1)[1] = 1
    assert bool(back.reshape(-1)[1] == 1)
    capsule = tc.to_dlpack(ours)
    _same(tc.from_dlpack(torch.utils.dlpack.to_dlpack(theirs)), theirs)
    _same(torch.from_dlpack(capsule), theirs)
    np.testing.assert_array_equal(np.from_dlpack(ours.t()), ours.t().numpy())
    assert ours.__dlpack_device__() == tuple(int(x) for x in theirs.__dlpack_device__())


def test_dlpack_refuses_grad():
    raises_like(lambda: tc.ones(2, requires_grad=True).__dlpack__(),
                lambda: torch.ones(2, requires_grad=True).__dlpack__())


def test_a_real_torch_tensor_beside_a_tidal_tensor_is_refused_not_looped():
    """torch asks tidal's __torch_function__, whose default runs torch's function, which asks again: tidal declines
    the second time, so torch's own TypeError (or its comparison fallback) ends it instead of a RecursionError."""
    a, b = torch.ones(3), tc.ones(3)
    with pytest.raises(TypeError, match="unsupported operand"):
        a + b
    with pytest.raises(TypeError, match="unsupported operand"):
        b + a
    with pytest.raises(TypeError, match="__torch_function__"):
        torch.add(a, b)
    assert (a == b) is False and (a != b) is True  # (Python's identity fallback, as for torch and a foreign object)
