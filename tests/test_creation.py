"""Creation functions against PyTorch: values, dtypes, shapes, strides, requires_grad, errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import tidal
from pairs import assert_raises_like

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _name(d) -> str:
    return str(d).split(".")[-1]


def _np(t) -> np.ndarray:
    """Values as float64/int64/bool NumPy (bfloat16 has no NumPy dtype in torch)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.numpy()
    arr = np.asarray(t.detach()._host_array())
    return arr.astype(np.float32) if _name(t.dtype) == "bfloat16" else arr


def assert_same(ours, ref, exact: bool = True) -> None:
    """Same dtype, shape, requires_grad flag and values as the PyTorch result."""
    assert _name(ours.dtype) == _name(ref.dtype), (ours.dtype, ref.dtype)
    assert tuple(ours.shape) == tuple(ref.shape)
    assert ours.requires_grad == ref.requires_grad
    a, b = _np(ours), _np(ref)
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        tol = {"float16": 1e-3, "bfloat16": 1e-2, "float32": 1e-6}.get(_name(ref.dtype), 1e-12)
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


def dtype_of(lib, name: str):
    return getattr(lib, name)


# -- tensor(): dtype inference and values ----------------------------------------------------------------------
INFERENCE_CASES = [
    lambda lib: [True, 1], lambda lib: [1, 2.0], lambda lib: [True, 2.5], lambda lib: [[True], [False]],
    lambda lib: 3, lambda lib: 2.5, lambda lib: True, lambda lib: -7, lambda lib: 2 ** 63 - 1,
    lambda lib: np.float64(1.5), lambda lib: np.int32(3), lambda lib: np.bool_(True), lambda lib: np.float16(2),
    lambda lib: [np.float64(1.0), 2.0], lambda lib: [np.int32(1), 2], lambda lib: [np.int32(1), np.int32(2)],
    lambda lib: [np.float16(1), 1], lambda lib: [np.float16(1), 1.5], lambda lib: [np.int8(1), np.uint8(1)],
    lambda lib: [np.int8(1), True], lambda lib: [np.float32(1.5), np.float64(1)],
    lambda lib: [], lambda lib: [[], []], lambda lib: [[1, 2], [3, 4]], lambda lib: ((1, 2), (3, 4)),
    lambda lib: range(4), lambda lib: [[[1.5, -2], [3, 4]], [[5, 6], [7, 8.25]]], lambda lib: [-1.5, 2 ** 40],
    lambda lib: np.arange(6, dtype=np.int16).reshape(2, 3), lambda lib: np.arange(6.0).reshape(2, 3).T,
    lambda lib: np.array([True, False]), lambda lib: np.array(2.5, dtype=np.float32),
    lambda lib: [np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)],
    lambda lib: [[1, 2], np.array([3, 4])], lambda lib: [np.array([1.5, 2]), [3, 4]],
    lambda lib: [lib.tensor(1.), lib.tensor(2)], lambda lib: [lib.tensor(1), lib.tensor(2)],
    lambda lib: [lib.tensor(1, dtype=lib.int32), 2], lambda lib: [lib.ones(1), lib.ones(1)],
    lambda lib: [[1, 2], lib.tensor([3.5, 4])], lambda lib: [[lib.tensor(1), 2], [3, 4]],
    lambda lib: [lib.tensor([1]), lib.tensor([2])], lambda lib: [lib.tensor(2.5, dtype=lib.float16), 1],
]


@pytest.mark.parametrize("case", range(len(INFERENCE_CASES)))
@pytest.mark.filterwarnings("ignore:Creating a tensor from a list of numpy.ndarrays")
def test_tensor_infers_dtype_and_shape(case):
    make = INFERENCE_CASES[case]
    assert_same(tidal.tensor(make(tidal)), torch.tensor(make(torch)))


@pytest.mark.parametrize("default", ["float64", "float16"])
def test_tensor_follows_default_dtype(default):
    old = tidal.get_default_dtype()
    tidal.set_default_dtype(getattr(tidal, default))
    torch_old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64 if default == "float64" else torch.float32)
    try:
        assert _name(tidal.tensor([1, 2.5]).dtype) == default
        assert _name(tidal.tensor([]).dtype) == default
        assert _name(tidal.tensor([1, 2]).dtype) == "int64"
    finally:
        tidal.set_default_dtype(old)
        torch.set_default_dtype(torch_old)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("data", [[1.7, -1.2, 0.0], [[True, False]], [[-1, 2], [3, 100]], 5, 0.5])
def test_tensor_with_dtype(dtype, data):
    try:
        ref = torch.tensor(data, dtype=getattr(torch, dtype))
    except RuntimeError:  # a value out of range: tidal must refuse it the same way
        assert_raises_like(lambda lib: lib.tensor(data, dtype=getattr(lib, dtype)))
        return
    assert_same(tidal.tensor(data, dtype=getattr(tidal, dtype)), ref)


def test_tensor_python_types_as_dtype():
    assert tidal.tensor([1, 2], dtype=float).dtype is tidal.float64
    assert tidal.zeros(2, dtype=int).dtype is tidal.int64
    assert tidal.ones(2, dtype=bool).dtype is tidal.bool


def test_tensor_from_ndarray_copies():
    arr = np.arange(6.0).reshape(2, 3)
    t = tidal.tensor(arr)
    arr[0, 0] = 100
    assert t.tolist()[0][0] == 0.0
    assert t.is_contiguous()
    for layout in (arr.T, arr[:, ::2], np.arange(24).reshape(2, 3, 4).transpose(1, 2, 0)):
        assert tidal.tensor(layout).stride() == torch.tensor(layout).stride()


def test_tensor_of_tensor_copies_and_warns():
    src = tidal.tensor([1.5, 2.5])
    with pytest.warns(UserWarning, match="recommended to use sourceTensor"):
        copy = tidal.tensor(src)
    src.fill_(0)
    assert copy.tolist() == [1.5, 2.5]
    with pytest.warns(UserWarning):
        as_int = tidal.tensor(tidal.tensor(2.7), dtype=tidal.int64)
    assert as_int.dtype is tidal.int64 and as_int.item() == 2
    with pytest.warns(UserWarning):
        flagged = tidal.tensor(src, requires_grad=True)
    assert flagged.requires_grad and not src.requires_grad


def test_tensor_requires_grad_and_device():
    t = tidal.tensor([1.0, 2.0], requires_grad=True, device="cpu")
    assert t.requires_grad and t.device == tidal.device("cpu") and t.is_leaf
    assert tidal.tensor([1], device="cpu:0").device == tidal.device("cpu")


TENSOR_ERRORS = [
    (lambda lib: lib.tensor([[1, 2], [3]]), None),
    (lambda lib: lib.tensor([[1, 2], [3, 4, 5]]), None),
    (lambda lib: lib.tensor([[[1], [2]], [[3], [4], [5]]]), None),
    (lambda lib: lib.tensor([[1, 2], 3]), r"sequence"),
    (lambda lib: lib.tensor("a"), None),
    (lambda lib: lib.tensor([1, "a"]), None),
    (lambda lib: lib.tensor(None), None),
    (lambda lib: lib.tensor([None]), None),
    (lambda lib: lib.tensor([300], dtype=lib.uint8), None),
    (lambda lib: lib.tensor([1e300], dtype=lib.int16), None),
    (lambda lib: lib.tensor([float("nan")], dtype=lib.int32), None),
    (lambda lib: lib.tensor(float("inf"), dtype=lib.int64), None),
    (lambda lib: lib.tensor(2 ** 63), None),
    (lambda lib: lib.tensor([2 ** 64]), None),
    (lambda lib: lib.tensor([lib.ones(2), lib.ones(2)]), None),
    (lambda lib: lib.tensor([1], requires_grad=True), None),
    (lambda lib: lib.tensor([1, 2], dtype="float32"), r"argument 'dtype' must be"),
    (lambda lib: lib.tensor([1, [2, 3]]), r"object cannot be interpreted as"),
]


@pytest.mark.parametrize("case", range(len(TENSOR_ERRORS)))
def test_tensor_errors(case):
    fn, match = TENSOR_ERRORS[case]
    assert_raises_like(fn, match)


def test_tensor_unsigned_wraps_negative_like_torch():
    assert_same(tidal.tensor([-1, -255], dtype=tidal.uint8), torch.tensor([-1, -255], dtype=torch.uint8))
    assert_same(tidal.full((2,), -1, dtype=tidal.uint8), torch.full((2,), -1, dtype=torch.uint8))


# -- from_numpy / as_tensor ------------------------------------------------------------------------------------
@pytest.mark.parametrize("np_dtype", [np.float64, np.float32, np.float16, np.int64, np.int32, np.int16, np.int8,
                                      np.uint8, np.bool_])
def test_from_numpy_shares_memory_both_ways(np_dtype):
    arr = (np.arange(12) % 3).astype(np_dtype).reshape(3, 4)
    t = tidal.from_numpy(arr)
    assert _name(t.dtype) == _name(torch.from_numpy(arr).dtype)
    arr[1, 2] = 1
    np.testing.assert_array_equal(_np(t + 0 if np_dtype is not np.bool_ else t | False), arr)
    t.fill_(0)
    tidal.sync()
    assert not arr.any()


def test_from_numpy_keeps_strides_and_views():
    base = np.arange(24.0).reshape(4, 6)
    for arr in (base[:, ::2], base.T, base[1:3, 2:], np.array(5.0), base[:0]):
        t = tidal.from_numpy(arr)
        ref = torch.from_numpy(arr)
        assert t.stride() == ref.stride() and tuple(t.shape) == tuple(ref.shape)
        np.testing.assert_array_equal(t.numpy(), arr)
    view = base[:, 1::2]
    t = tidal.from_numpy(view)
    t.fill_(-1)
    tidal.sync()
    assert (base[:, 1::2] == -1).all() and (base[:, ::2] != -1).all()


def test_from_numpy_errors():
    assert_raises_like(lambda lib: lib.from_numpy([1]))
    assert_raises_like(lambda lib: lib.from_numpy(np.ones(3)[::-1]))
    assert_raises_like(lambda lib: lib.from_numpy(np.ones(1)[::-1]))  # (contiguous, yet a negative stride)
    assert_raises_like(lambda lib: lib.from_numpy(np.array(["a"])), r"can't convert np.ndarray of type")
    arr = np.ones(3)
    arr.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        tidal.from_numpy(arr)


def test_as_tensor_shares_only_when_it_can():
    arr = np.arange(4.0)
    shared = tidal.as_tensor(arr)
    arr[0] = 9
    assert (shared + 0).tolist()[0] == 9
    copied = tidal.as_tensor(arr, dtype=tidal.float32)
    arr[1] = 9
    assert copied.dtype is tidal.float32 and copied.tolist()[1] == 1
    t = tidal.ones(3)
    assert tidal.as_tensor(t) is t
    assert tidal.as_tensor(t, dtype=tidal.float32, device="cpu") is t
    assert tidal.as_tensor(t, dtype=tidal.int64).dtype is tidal.int64
    assert_same(tidal.as_tensor([1, 2]), torch.as_tensor([1, 2]))
    assert_same(tidal.as_tensor(np.float64(1.5)), torch.as_tensor(np.float64(1.5)))
    assert_same(tidal.as_tensor([tidal.tensor(1), tidal.tensor(2)]), torch.as_tensor([torch.tensor(1),
                                                                                       torch.tensor(2)]))


# -- zeros / ones / full / empty ---------------------------------------------------------------------------------
SIZES = [lambda lib: (2, 3), lambda lib: ((2, 3),), lambda lib: ([2, 3],), lambda lib: (lib.Size([2, 3]),),
         lambda lib: ((),), lambda lib: (0,), lambda lib: (3, 0, 2), lambda lib: (np.int64(3),),
         lambda lib: (lib.tensor(3),), lambda lib: (lib.tensor([4]),), lambda lib: (1, 1, 1, 5)]


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("size", range(len(SIZES)))
def test_size_forms(fn, size):
    ours = getattr(tidal, fn)(*SIZES[size](tidal))
    ref = getattr(torch, fn)(*SIZES[size](torch))
    assert tuple(ours.shape) == tuple(ref.shape) and ours.stride() == ref.stride()
    assert _name(ours.dtype) == _name(ref.dtype)
    if fn != "empty":
        assert_same(ours, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_zeros_ones_full_dtypes(dtype):
    td, rd = getattr(tidal, dtype), getattr(torch, dtype)
    assert_same(tidal.zeros(2, 3, dtype=td), torch.zeros(2, 3, dtype=rd))
    assert_same(tidal.ones((4,), dtype=td), torch.ones((4,), dtype=rd))
    assert_same(tidal.full((2, 2), 3.7, dtype=td), torch.full((2, 2), 3.7, dtype=rd))
    assert_same(tidal.full([3], True, dtype=td), torch.full([3], True, dtype=rd))
    assert _name(tidal.empty(3, dtype=td).dtype) == dtype


@pytest.mark.parametrize("value", [True, 3, -2, 2.5, np.float64(2.5), np.int32(4), 2 ** 63 - 1, float("inf")])
def test_full_infers_dtype_from_value(value):
    assert_same(tidal.full((2,), value), torch.full((2,), value))
    assert_same(tidal.full([], value), torch.full([], value))


def test_full_tensor_value_and_keywords():
    assert_same(tidal.full((2,), tidal.tensor(2)), torch.full((2,), torch.tensor(2)))
    assert_same(tidal.full(size=(2,), fill_value=3), torch.full(size=(2,), fill_value=3))
    assert_same(tidal.ones(size=(2, 3)), torch.ones(size=(2, 3)))
    assert_same(tidal.empty(size=[2, 3]).zero_(), torch.empty(size=[2, 3]).zero_())


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty", "full"])
def test_requires_grad_flag(fn):
    args = (((2,), 1.5) if fn == "full" else (2,))
    t = getattr(tidal, fn)(*args, requires_grad=True)
    assert t.requires_grad and t.is_leaf
    assert not getattr(tidal, fn)(*args).requires_grad
    assert_raises_like(lambda lib: getattr(lib, fn)(*args, dtype=lib.int64, requires_grad=True))


SIZE_ERRORS = [
    lambda lib: lib.zeros(-1), lambda lib: lib.zeros((2, -3)), lambda lib: lib.ones(-1), lambda lib: lib.empty(-1),
    lambda lib: lib.full((-1,), 2.0), lambda lib: lib.zeros(2.0), lambda lib: lib.zeros(True),
    lambda lib: lib.zeros(2, (3,)), lambda lib: lib.zeros(), lambda lib: lib.full(2, 3.0),
    lambda lib: lib.full((2,), "a"), lambda lib: lib.full((2,), 1e10, dtype=lib.int32),
    lambda lib: lib.full((2,), 300, dtype=lib.uint8), lambda lib: lib.full((2,), 1e40),
    lambda lib: lib.full((2,), float("nan"), dtype=lib.int64), lambda lib: lib.full((2,), 1e5, dtype=lib.float16),
    lambda lib: lib.zeros(size=2), lambda lib: lib.zeros(2, names=None), lambda lib: lib.ones((2, 2.5)),
    lambda lib: lib.zeros(2, dtype="float32"),
]


@pytest.mark.parametrize("case", range(len(SIZE_ERRORS)))
def test_factory_errors(case):
    fn = SIZE_ERRORS[case]
    if case == len(SIZE_ERRORS) - 1:
        assert_raises_like(fn, r"argument 'dtype' must be")
    else:
        assert_raises_like(fn)


def test_fills_are_instructions_not_host_arrays():
    tidal.vm.reset_stats()
    before = tidal.vm.stats()["instructions"]
    t = tidal.zeros(1000, 1000)
    assert tidal.vm.stats()["instructions"] == before + 1
    assert t._version == 0
    assert not t.numpy().any()


# -- *_like ------------------------------------------------------------------------------------------------------
def _layouts():
    base = np.arange(48.0).reshape(4, 12)
    return [base, base.T, base[:, ::2], base.T[::2], np.broadcast_to(base[:1], (3, 12)),
            np.arange(12.0).reshape(3, 1, 4).transpose(2, 1, 0), np.array(3.0), base[:0]]


@pytest.mark.parametrize("layout", range(8))
@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"])
def test_like_preserves_layout(fn, layout):
    arr = _layouts()[layout]
    args = (2.5,) if fn == "full_like" else ()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = getattr(tidal, fn)(tidal.from_numpy(arr), *args)
        ref = getattr(torch, fn)(torch.from_numpy(arr), *args)
    assert tuple(ours.shape) == tuple(ref.shape) and ours.stride() == ref.stride()
    assert _name(ours.dtype) == _name(ref.dtype)
    if fn in ("zeros_like", "ones_like", "full_like"):
        assert_same(ours, ref)


@pytest.mark.parametrize("dtype", DTYPES)
def test_like_dtypes(dtype):
    td, rd = getattr(tidal, dtype), getattr(torch, dtype)
    src_t, src_r = tidal.ones(2, 3, dtype=td), torch.ones(2, 3, dtype=rd)
    assert_same(tidal.zeros_like(src_t), torch.zeros_like(src_r))
    assert_same(tidal.ones_like(src_t), torch.ones_like(src_r))
    assert_same(tidal.full_like(src_t, 2.7), torch.full_like(src_r, 2.7))
    assert_same(tidal.full_like(src_t, True), torch.full_like(src_r, True))
    assert_same(tidal.zeros_like(src_t, dtype=tidal.float64), torch.zeros_like(src_r, dtype=torch.float64))
    assert tidal.empty_like(src_t).dtype is td


def test_like_keywords_and_errors():
    x = tidal.ones(2)
    assert tidal.zeros_like(x, requires_grad=True).requires_grad
    assert tidal.ones_like(x, device="cpu").device == tidal.device("cpu")
    transposed = tidal.from_numpy(np.ones((2, 3)).T)
    assert not tidal.zeros_like(transposed).is_contiguous()
    from tidal.compat import contiguous_format  # (a str is refused with torch's TypeError)
    assert tidal.zeros_like(transposed, memory_format=contiguous_format).is_contiguous()
    assert_raises_like(lambda lib: lib.zeros_like([1, 2]))
    assert_raises_like(lambda lib: lib.zeros_like(lib.ones(2, dtype=lib.int64), requires_grad=True))
    assert_raises_like(lambda lib: lib.full_like(lib.ones(2), "a"))
    assert_raises_like(lambda lib: lib.full_like(lib.ones(2), 1e40))
    assert_raises_like(lambda lib: lib.full_like(lib.ones(2, dtype=lib.int32), 1e40))


# -- new_* ------------------------------------------------------------------------------------------------------
NEW_CASES = [
    lambda x, lib: x.new_zeros(2), lambda x, lib: x.new_zeros((2, 3)), lambda x, lib: x.new_zeros([2, 3],
                                                                                                  dtype=lib.float64),
    lambda x, lib: x.new_ones(2, 3), lambda x, lib: x.new_full((2,), 1.7), lambda x, lib: x.new_full([2], True),
    lambda x, lib: x.new_tensor([1.5, 2.5]), lambda x, lib: x.new_tensor([1.5, 2.5], dtype=lib.float64),
    lambda x, lib: x.new_tensor(np.array([1, 2])), lambda x, lib: x.new_tensor(3), lambda x, lib: x.new_zeros(()),
    lambda x, lib: x.new_ones(0),
]


@pytest.mark.parametrize("dtype", ["int32", "float32", "bool", "float16"])
@pytest.mark.parametrize("case", range(len(NEW_CASES)))
def test_new_methods(case, dtype):
    ours = NEW_CASES[case](tidal.ones(2, 3, dtype=getattr(tidal, dtype)), tidal)
    ref = NEW_CASES[case](torch.ones(2, 3, dtype=getattr(torch, dtype)), torch)
    assert_same(ours, ref)


def test_new_methods_flags_and_errors():
    x = tidal.ones(2)
    assert x.new_zeros(2, requires_grad=True).requires_grad
    assert x.new_empty(2, 3).shape == (2, 3) and x.new_empty(2).dtype is tidal.float32
    assert x.new_empty_strided((2, 2), (1, 2)).stride() == (1, 2)
    with pytest.warns(UserWarning):
        assert_same(x.new_tensor(tidal.tensor([1, 2])), torch.ones(2).new_tensor(torch.tensor([1, 2])))
    for fn in (lambda t: t.new_zeros(-1), lambda t: t.new_empty(-1), lambda t: t.new_full((-1,), 1),
               lambda t: t.new_full(2, 1.7), lambda t: t.new_zeros()):
        assert_raises_like(lambda lib: fn(lib.ones(2)))


# -- arange / linspace / logspace ----------------------------------------------------------------------------------
ARANGE_CASES = [
    ((5,), {}), ((5.,), {}), ((1, 4), {}), ((1, 4, 0.5), {}), ((0, 1, 0.1), {}), ((10, 0, -3), {}),
    ((-5, 5, 3), {}), ((0, 10 ** 18, 10 ** 17), {}), ((0.1, 0.35, 0.05), {}), ((0.1, 0.35, 0.05), {"dtype": "float64"}),
    ((0, 1, 1 / 3), {}), ((0, 2.5, 0.5), {"dtype": "int32"}), ((0, 5, 1.5), {"dtype": "int32"}),
    ((0.5, 5, 1), {"dtype": "int64"}), ((1, 2.5), {"dtype": "int64"}), ((5, 0, -1), {}), ((3,), {"dtype": "float16"}),
    ((0, 300), {"dtype": "uint8"}), ((-3, 100, 7), {"dtype": "int8"}), ((0, 2, 0.25), {"dtype": "bfloat16"}),
    ((2 ** 53, 2 ** 53 + 5), {}), ((2 ** 53, 2 ** 53 + 5), {"dtype": "float64"}), ((0, 0), {}), ((True,), {}),
    ((np.int64(3),), {}), ((np.float32(3),), {}), ((-1.5, 7.25, 0.75), {"dtype": "float16"}),
    ((1, 1000, 3), {"dtype": "float32"}), ((0, -2, -0.25), {"dtype": "float64"}),
]


@pytest.mark.parametrize("case", range(len(ARANGE_CASES)))
def test_arange(case):
    args, kwargs = ARANGE_CASES[case]
    ours = tidal.arange(*args, **{k: getattr(tidal, v) for k, v in kwargs.items()})
    ref = torch.arange(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert_same(ours, ref, exact=_name(ref.dtype) not in ("float32", "float16", "bfloat16"))


def test_arange_keywords_and_tensors():
    assert_same(tidal.arange(start=1, end=3), torch.arange(start=1, end=3))
    assert_same(tidal.arange(end=3), torch.arange(end=3))
    assert_same(tidal.arange(tidal.tensor(3)), torch.arange(torch.tensor(3)))
    assert_same(tidal.arange(tidal.tensor(3.)), torch.arange(torch.tensor(3.)))
    assert_same(tidal.arange(0, 5, tidal.tensor(2)), torch.arange(0, 5, torch.tensor(2)))
    assert_same(tidal.arange(3., requires_grad=True), torch.arange(3., requires_grad=True))


ARANGE_ERRORS = [
    lambda lib: lib.arange(0, 5, 0), lambda lib: lib.arange(0, 5, -1), lambda lib: lib.arange(-3),
    lambda lib: lib.arange(0, float("inf")), lambda lib: lib.arange(0, float("nan")),
    lambda lib: lib.arange(0.5, float("-inf"), -1), lambda lib: lib.arange(3, dtype=lib.bool),
    lambda lib: lib.arange(lib.tensor([3.])), lambda lib: lib.arange("a"), lambda lib: lib.arange(1e20),
    lambda lib: lib.arange(0, 1, 1e-19), lambda lib: lib.arange(0, -2.5, -0.5, dtype=lib.int64),
    lambda lib: lib.arange(3, requires_grad=True),
]


@pytest.mark.parametrize("case", range(len(ARANGE_ERRORS)))
def test_arange_errors(case):
    assert_raises_like(ARANGE_ERRORS[case])


SPACE_CASES = [
    (0, 10, 5, None), (0, 10, 5, "int64"), (0, 10, 1, None), (0, 10, 0, None), (3, 3, 4, None),
    (10, 0, 6, "uint8"), (-1.5, 7, 6, "int32"), (0, 1, 4, "float16"), (-2, 5, 7, "bfloat16"), (-1, 1, 101, "float64"),
    (0.1, 0.7, 50, None), (5, -5, 11, "int8"), (0, 1, 2, None), (1e-3, 1e3, 33, "float32"),
]


@pytest.mark.parametrize("case", range(len(SPACE_CASES)))
def test_linspace(case):
    start, end, steps, dtype = SPACE_CASES[case]
    kw_t = {} if dtype is None else {"dtype": getattr(tidal, dtype)}
    kw_r = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    ref = torch.linspace(start, end, steps, **kw_r)
    assert_same(tidal.linspace(start, end, steps, **kw_t), ref,
                exact=_name(ref.dtype) not in ("float32", "float64", "bfloat16"))


@pytest.mark.parametrize("base", [10.0, 2, 0.5, -2])
@pytest.mark.parametrize("case", range(len(SPACE_CASES)))
def test_logspace(case, base):
    start, end, steps, dtype = SPACE_CASES[case]
    if dtype in ("uint8", "int8") or abs(start) > 100:
        return
    kw_t = {} if dtype is None else {"dtype": getattr(tidal, dtype)}
    kw_r = {} if dtype is None else {"dtype": getattr(torch, dtype)}
    ref = torch.logspace(start, end, steps, base=base, **kw_r)
    ours = tidal.logspace(start, end, steps, base=base, **kw_t)
    if ref.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        assert_same(ours, ref, exact=False)
    else:
        assert_same(ours, ref)


def test_spaced_keywords_tensors_and_flags():
    assert_same(tidal.linspace(tidal.tensor(0.), tidal.tensor(1.), 3), torch.linspace(torch.tensor(0.),
                                                                                      torch.tensor(1.), 3))
    assert_same(tidal.linspace(tidal.tensor(0), 1, steps=3), torch.linspace(torch.tensor(0), 1, steps=3))
    assert_same(tidal.linspace(0, 1, 3, requires_grad=True), torch.linspace(0, 1, 3, requires_grad=True))
    assert_same(tidal.logspace(tidal.tensor(0), 2, 3), torch.logspace(torch.tensor(0), 2, 3))
    assert_same(tidal.logspace(0.5, 2, 4, base=2, dtype=tidal.int64),
                torch.logspace(0.5, 2, 4, base=2, dtype=torch.int64))


SPACE_ERRORS = [
    (lambda lib: lib.linspace(0, 10, -1), None), (lambda lib: lib.logspace(0, 2, -2), None),
    (lambda lib: lib.linspace(0, 10, 4, dtype=lib.bool), None),
    (lambda lib: lib.logspace(0, 1, 3, dtype=lib.bool), None),
    (lambda lib: lib.linspace(lib.tensor([0.]), 1, 3), None), (lambda lib: lib.linspace(0, 1, 2.5), r"linspace\(\)"),
    (lambda lib: lib.linspace(0, 1, 3, dtype=lib.int64, requires_grad=True), None),
]


@pytest.mark.parametrize("case", range(len(SPACE_ERRORS)))
def test_spaced_errors(case):
    fn, match = SPACE_ERRORS[case]
    assert_raises_like(fn, match)


# -- eye / empty_strided / scalar_tensor ------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("nm", [(3,), (2, 3), (4, 2), (0,), (1,), (3, 0), (5, 5)])
def test_eye(nm, dtype):
    assert_same(tidal.eye(*nm, dtype=getattr(tidal, dtype)), torch.eye(*nm, dtype=getattr(torch, dtype)))


def test_eye_keywords_flags_errors():
    assert_same(tidal.eye(n=2, m=3), torch.eye(n=2, m=3))
    assert_same(tidal.eye(np.int64(2)), torch.eye(np.int64(2)))
    assert_same(tidal.eye(2, requires_grad=True), torch.eye(2, requires_grad=True))
    for fn in (lambda lib: lib.eye(-1), lambda lib: lib.eye(2, -1), lambda lib: lib.eye(2.5),
               lambda lib: lib.eye(True), lambda lib: lib.eye(2, dtype=lib.int32, requires_grad=True)):
        assert_raises_like(fn)


def test_empty_strided():
    for size, stride in [((2, 3), (1, 2)), ((2, 3), (3, 1)), ((2, 3), (0, 0)), ((0, 4), (4, 1)), ((), ())]:
        ours, ref = tidal.empty_strided(size, stride), torch.empty_strided(size, stride)
        assert ours.stride() == ref.stride() and tuple(ours.shape) == tuple(ref.shape)
        assert ours.dtype is tidal.float32
    t = tidal.empty_strided((2, 3), (1, 2), dtype=tidal.int32).fill_(7)
    assert t.tolist() == [[7] * 3] * 2
    assert tidal.empty_strided((2,), (1,), requires_grad=True).requires_grad
    for fn in (lambda lib: lib.empty_strided((2, 3), (1,)), lambda lib: lib.empty_strided((2, 3), (1, -2)),
               lambda lib: lib.empty_strided((-1,), (1,))):
        assert_raises_like(fn)


@pytest.mark.parametrize("value", [1, True, 1.5, -3, np.float32(2.5)])
def test_scalar_tensor(value):
    assert_same(tidal.scalar_tensor(value), torch.scalar_tensor(value))
    assert_same(tidal.scalar_tensor(value, dtype=tidal.int64), torch.scalar_tensor(value, dtype=torch.int64))


def test_scalar_tensor_tensor_flags_errors():
    assert_same(tidal.scalar_tensor(tidal.tensor(2)), torch.scalar_tensor(torch.tensor(2)))
    assert tidal.scalar_tensor(1, requires_grad=True).requires_grad
    assert_raises_like(lambda lib: lib.scalar_tensor("a"))


def test_results_identical_in_sync_mode():
    results = {}
    for mode in ("sync", "async"):
        old = tidal.vm.get_mode()
        tidal.vm.set_mode(mode)
        try:
            results[mode] = [t.tolist() for t in (tidal.eye(3, 4), tidal.full((2, 2), 7), tidal.arange(0, 1, 0.125),
                                                  tidal.linspace(-1, 1, 9), tidal.zeros(3, dtype=tidal.int8),
                                                  tidal.tensor([[1, 2.5]]))]
        finally:
            tidal.vm.set_mode(old)
    assert results["sync"] == results["async"]


def test_out_argument():
    buf = tidal.empty(3, dtype=tidal.int64)
    assert tidal.zeros(3, out=buf) is buf and buf.tolist() == [0, 0, 0]  # out's dtype is the result's
    assert tidal.arange(3., out=buf) is buf and buf.tolist() == [0, 1, 2]
    assert tidal.full((3,), 7, out=buf).tolist() == [7, 7, 7]
    square = tidal.empty(2, 2)
    assert tidal.eye(2, out=square).tolist() == [[1, 0], [0, 1]]
    assert tidal.linspace(0, 1, 3, out=tidal.empty(3)).tolist() == [0, 0.5, 1]
    assert_raises_like(lambda lib: lib.zeros(3, out=lib.empty(3, dtype=lib.int64), dtype=lib.float32))
    longer = tidal.empty(5, dtype=tidal.int64)  # of another size: resized, as torch (with its warning)
    with pytest.warns(UserWarning, match="does not match the computed number of elements 3"):
        assert tidal.arange(3, out=longer) is longer and longer.tolist() == [0, 1, 2]
    assert tidal.eye(2, out=tidal.empty(1)).tolist() == [[1, 0], [0, 1]]
