"""View ops against torch: values, shapes, strides, offsets, storage sharing, errors."""
from __future__ import annotations

import numpy as np
import pytest

import tidal
from pairs import as_numpy as _as_numpy, to_torch as _to_torch, values as _values

torch = pytest.importorskip("torch")

DTYPES = [(tidal.bool, torch.bool), (tidal.uint8, torch.uint8), (tidal.int8, torch.int8),
          (tidal.int16, torch.int16), (tidal.int32, torch.int32), (tidal.int64, torch.int64),
          (tidal.float16, torch.float16), (tidal.bfloat16, torch.bfloat16), (tidal.float32, torch.float32),
          (tidal.float64, torch.float64)]
TORCH_OF = dict(DTYPES)


def _strides(shape) -> list:
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return out[::-1]


def pair(rng, shape, dtype=tidal.float32, layout="contiguous"):
    """The same values as a tidal and a torch tensor with the same strides and offset."""
    shape = tuple(shape)
    n = int(np.prod(shape, dtype=np.int64))
    if layout == "contiguous":
        arr = _values(rng, n, dtype).reshape(shape)
        return tidal.tensor(arr), _to_torch(arr, dtype)
    if layout == "transposed":  # memory in reversed dim order
        arr = _values(rng, n, dtype).reshape(shape[::-1])
        dims = tuple(range(len(shape)))[::-1]
        return tidal.tensor(arr).permute(dims), _to_torch(arr, dtype).permute(dims)
    # "strided": every other element, from offset 1
    arr = _values(rng, 2 * n + 1, dtype)
    strides = [2 * s for s in _strides(shape)]
    return (tidal.tensor(arr).as_strided(shape, strides, 1),
            _to_torch(arr, dtype).as_strided(shape, strides, 1))


def check_same(ours, ref, *, geometry: bool = True) -> None:
    """Same values, dtype and (unless told otherwise) shape, strides, offset and contiguity."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(ref)
        for a, b in zip(ours, ref):
            check_same(a, b, geometry=geometry)
        return
    assert tuple(ours.shape) == tuple(ref.shape)
    assert TORCH_OF[ours.dtype] == ref.dtype
    if geometry and ref.numel():
        assert ours.stride() == ref.stride()
        assert ours.storage_offset() == ref.storage_offset()
        assert ours.is_contiguous() == ref.is_contiguous()
    np.testing.assert_array_equal(_as_numpy(ours), _as_numpy(ref))


def check_error(fn, ours, ref, match: str | None = None) -> None:
    """`fn` raises the same exception type (and message) on tidal and torch."""
    with pytest.raises(Exception) as want:
        fn(ref)
    with pytest.raises(type(want.value)) as got:
        fn(ours)
    expected = str(want.value).splitlines()[0] if match is None else match
    if match is None:
        assert str(got.value) == expected
    else:
        assert match in str(got.value) and match in str(want.value)


# -- the ops, as (name, shape, fn) applied alike to tidal and torch -------------------------------
VIEW_CASES = [
    ("view", (2, 3, 4), lambda t: t.view(6, 4)),
    ("view_infer", (2, 3, 4), lambda t: t.view(-1, 2, 1)),
    ("view_tuple", (2, 3, 4), lambda t: t.view((4, 3, 2))),
    ("view_0d", (), lambda t: t.view(1, 1)),
    ("view_to_0d", (1,), lambda t: t.view(())),
    ("view_empty", (0, 3), lambda t: t.view(3, 0)),
    ("view_as", (2, 6), lambda t: t.view_as(t.t().reshape(3, 4))),
    ("reshape", (2, 3, 4), lambda t: t.reshape(4, -1)),
    ("reshape_as", (2, 3, 4), lambda t: t.reshape_as(t.permute(2, 1, 0))),
    ("transpose", (2, 3, 4), lambda t: t.transpose(0, 2)),
    ("transpose_neg", (2, 3, 4), lambda t: t.transpose(-1, -2)),
    ("swapaxes", (2, 3, 4), lambda t: t.swapaxes(0, 1)),
    ("swapdims", (2, 3, 4), lambda t: t.swapdims(2, 0)),
    ("permute", (2, 3, 4), lambda t: t.permute(2, 0, 1)),
    ("permute_list", (2, 3, 4), lambda t: t.permute([1, -1, 0])),
    ("t", (3, 5), lambda t: t.t()),
    ("t_1d", (3,), lambda t: t.t()),
    ("t_0d", (), lambda t: t.t()),
    ("mT", (2, 3, 4), lambda t: t.mT),
    ("T_2d", (3, 4), lambda t: t.T),
    ("H", (3, 4), lambda t: t.H),
    ("mH", (2, 3, 4), lambda t: t.mH),
    ("permute_kw", (2, 3, 4), lambda t: t.permute(dims=(2, 0, 1))),
    ("adjoint", (2, 3, 4), lambda t: t.adjoint()),
    ("narrow", (4, 5), lambda t: t.narrow(1, 1, 3)),
    ("narrow_neg", (4, 5), lambda t: t.narrow(0, -2, 2)),
    ("narrow_empty", (4, 5), lambda t: t.narrow(1, 5, 0)),
    ("expand", (3, 1), lambda t: t.expand(2, 3, 4)),
    ("expand_keep", (3, 1), lambda t: t.expand(-1, 5)),
    ("expand_lead1", (3, 1), lambda t: t.expand(1, 1, 3, 4)),
    ("expand_0d", (), lambda t: t.expand(2, 3)),
    ("expand_as", (1, 4), lambda t: t.expand_as(t.expand(3, 4))),
    ("squeeze", (1, 3, 1, 2), lambda t: t.squeeze()),
    ("squeeze_dim", (1, 3, 1, 2), lambda t: t.squeeze(2)),
    ("squeeze_noop", (1, 3, 1, 2), lambda t: t.squeeze(1)),
    ("squeeze_tuple", (1, 3, 1, 2), lambda t: t.squeeze((0, -2))),
    ("squeeze_0d", (), lambda t: t.squeeze(0)),
    ("unsqueeze", (2, 3), lambda t: t.unsqueeze(1)),
    ("unsqueeze_end", (2, 3), lambda t: t.unsqueeze(-1)),
    ("unsqueeze_0d", (), lambda t: t.unsqueeze(0)),
    ("flatten", (2, 3, 4), lambda t: t.flatten()),
    ("flatten_mid", (2, 3, 4, 5), lambda t: t.flatten(1, 2)),
    ("flatten_0d", (), lambda t: t.flatten()),
    ("ravel", (2, 3, 4), lambda t: t.ravel()),
    ("unflatten", (2, 12), lambda t: t.unflatten(1, (3, -1))),
    ("diagonal", (3, 4), lambda t: t.diagonal()),
    ("diagonal_off", (3, 4), lambda t: t.diagonal(1)),
    ("diagonal_neg", (2, 4, 3), lambda t: t.diagonal(-1, 2, 1)),
    ("diagonal_none", (3, 4), lambda t: t.diagonal(9)),
    ("unfold", (2, 7), lambda t: t.unfold(1, 3, 2)),
    ("unfold_0d", (), lambda t: t.unfold(0, 1, 1)),
    ("as_strided", (4, 5), lambda t: t.as_strided((3, 2), (1, 3), 2)),
    ("movedim", (2, 3, 4), lambda t: t.movedim(0, -1)),
    ("movedim_many", (2, 3, 4, 5), lambda t: t.movedim((0, 1), (3, 0))),
    ("moveaxis", (2, 3, 4), lambda t: t.moveaxis(-1, 0)),
    ("select", (2, 3, 4), lambda t: t.select(1, -1)),
    ("select_0", (2, 3, 4), lambda t: t.select(0, 1)),
    ("chain", (4, 6), lambda t: t.t().unsqueeze(0).narrow(2, 1, 2).select(1, 3).squeeze()),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("name,shape,fn", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_view_ops_match_torch(rng, name, shape, fn, layout):
    ours, ref = pair(rng, shape, layout=layout)
    try:
        want = fn(ref)
    except RuntimeError:  # a view the layout can't express: the same error
        check_error(fn, ours, ref)
        return
    got = fn(ours)
    check_same(got, want)
    shares = want.untyped_storage().data_ptr() == ref.untyped_storage().data_ptr()
    assert (got.untyped_storage_id() == ours.untyped_storage_id()) == shares
    dense, ref_dense = got.contiguous(), want.contiguous()
    check_same(dense, ref_dense)
    if want.numel():
        assert (dense is got) == (ref_dense is want)


WRITABLE = [c for c in VIEW_CASES if not c[0].startswith(("expand", "unfold", "as_strided"))
            and c[0] not in ("view_as", "reshape_as")]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "strided"])
@pytest.mark.parametrize("name,shape,fn", WRITABLE, ids=[c[0] for c in WRITABLE])
def test_writes_go_both_ways(rng, name, shape, fn, layout):
    ours, ref = pair(rng, shape, layout=layout)
    try:
        want = fn(ref)
    except RuntimeError:
        return  # covered by test_view_ops_match_torch
    got = fn(ours)
    src = _values(rng, max(want.numel(), 1), tidal.float32)[:want.numel()].reshape(tuple(want.shape))
    got.copy_(tidal.tensor(src))  # through the view: the base sees it
    want.copy_(torch.from_numpy(src))
    check_same(ours, ref)
    ours.fill_(-3.5)  # through the base: the view sees it
    ref.fill_(-3.5)
    check_same(got, want)


@pytest.mark.parametrize("dtype,torch_dtype", DTYPES, ids=[str(d) for d, _ in DTYPES])
def test_every_dtype(rng, dtype, torch_dtype):
    ours, ref = pair(rng, (3, 4, 2), dtype, layout="transposed")
    for fn in (lambda t: t.permute(1, 0, 2).reshape(8, 3), lambda t: t.diagonal(0, 0, 2),
               lambda t: t.unsqueeze(1).expand(2, 3, 5, 4, 2), lambda t: t.select(2, 1).t(),
               lambda t: t.flatten(), lambda t: t.unfold(0, 2, 1)):
        check_same(fn(ours), fn(ref))


def test_view_strides_fuzz(rng):
    """Random layouts and random target shapes: the view exists exactly when torch's does, same strides."""
    for _ in range(300):
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 4, ndim))
        ours, ref = pair(rng, shape, layout=str(rng.choice(["contiguous", "transposed", "strided"])))
        perm = tuple(int(p) for p in rng.permutation(ndim))
        ours, ref = ours.permute(perm), ref.permute(perm)
        if rng.random() < 0.5:
            d = int(rng.integers(ndim))
            ours, ref = ours.unsqueeze(d), ref.unsqueeze(d)
        numel = ref.numel()
        target = []
        while numel > 1 or rng.random() < 0.3:
            divs = [k for k in range(1, numel + 1) if numel % k == 0]
            k = int(rng.choice(divs))
            target.append(k)
            numel //= k
            if len(target) > 5:
                break
        target.append(numel)
        try:
            want = ref.view(target)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                ours.view(target)
            reshaped = ours.reshape(target)
            assert reshaped.is_contiguous()
            assert reshaped.untyped_storage_id() != ours.untyped_storage_id()
            check_same(reshaped, ref.reshape(target))
            continue
        check_same(ours.view(target), want)
        check_same(ours.reshape(target), ref.reshape(target))


@pytest.mark.parametrize("src,dst", [(s, d) for s in DTYPES for d in DTYPES], ids=lambda p: str(p[0]))
def test_view_dtype(rng, src, dst):
    arr = _values(rng, 24, src[0]).reshape(2, 3, 4)
    ours, ref = tidal.tensor(arr), _to_torch(arr, src[0])
    for fn in (lambda t: t.view(dst[1] if isinstance(t, torch.Tensor) else dst[0]),
               lambda t: t.narrow(2, 2, 2).view(dst[1] if isinstance(t, torch.Tensor) else dst[0])):
        try:
            want = fn(ref)
        except RuntimeError:
            check_error(fn, ours, ref)
            continue
        got = fn(ours)
        assert got.untyped_storage_id() == ours.untyped_storage_id()
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()
        assert got.storage_offset() == want.storage_offset() and got.dtype is dst[0]
        if dst[0].is_floating_point or dst[0] is tidal.bool:  # raw bits: compare the bytes
            bits = got.view(tidal.int16) if got.dtype is tidal.bfloat16 else got  # (bfloat16 has no numpy())
            assert bits.numpy().tobytes() == want.view(torch.uint8 if dst[0] is tidal.bool else
                                                      {1: torch.uint8, 2: torch.int16, 4: torch.int32,
                                                       8: torch.int64}[dst[0].itemsize]).numpy().tobytes()
        else:
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_view_dtype_errors(rng):
    ours, ref = pair(rng, (4, 6))
    for fn in (lambda t: t.view(_dt(t, "int8")),
               lambda t: t.narrow(1, 0, 3).view(_dt(t, "float64")),
               lambda t: t.narrow(1, 1, 2).view(_dt(t, "float64")),
               lambda t: t.t().view(_dt(t, "int16")),
               lambda t: t.narrow(1, 0, 2).t().t().as_strided((3, 2), (5, 1)).view(_dt(t, "float64")),
               lambda t: t.select(0, 0).select(0, 0).view(_dt(t, "float64"))):
        try:
            fn(ref)
        except RuntimeError:
            check_error(fn, ours, ref)
        else:
            check_same(fn(ours), fn(ref))


def _dt(t, name):
    return getattr(torch if isinstance(t, torch.Tensor) else tidal, name)


def test_base_and_metadata(rng):
    ours, _ = pair(rng, (2, 3, 4))
    v = ours.transpose(0, 1)
    w = v.narrow(0, 1, 2)
    assert v._base is ours and w._base is ours
    assert w.untyped_storage_id() == ours.untyped_storage_id()
    assert isinstance(ours.view(4, 6).shape, tidal.Size)
    c = v.contiguous()
    assert c.is_contiguous() and c.untyped_storage_id() != ours.untyped_storage_id()
    assert ours.contiguous() is ours
    np.testing.assert_array_equal(c.numpy(), v.numpy())


def test_flatten_same_dim_returns_self(rng):
    ours, _ = pair(rng, (2, 3))
    assert ours.flatten(1, 1) is ours


def test_inplace_metadata_ops(rng):
    ours, ref = pair(rng, (1, 3, 4))
    blob = ours.untyped_storage_id()
    for name, args in (("squeeze_", (0,)), ("unsqueeze_", (2,)), ("transpose_", (0, 2)), ("t_", ()),
                       ("swapaxes_", (0, 1)), ("as_strided_", ((2, 2), (1, 2), 1))):
        if name == "t_":
            ours.squeeze_()
            ref.squeeze_()
        assert getattr(ours, name)(*args) is ours
        getattr(ref, name)(*args)
        check_same(ours, ref)
    assert ours.untyped_storage_id() == blob


def test_module_functions(rng):
    ours, ref = pair(rng, (2, 3, 4))
    for name, args in (("reshape", ((4, 6),)), ("transpose", (0, 1)), ("swapaxes", (0, 2)),
                       ("swapdims", (1, 2)), ("permute", ((2, 0, 1),)), ("narrow", (1, 0, 2)),
                       ("squeeze", ()), ("unsqueeze", (0,)), ("flatten", (1,)), ("unflatten", (2, (2, 2))),
                       ("diagonal", (0, 0, 2)), ("as_strided", ((2,), (3,))), ("movedim", (0, 2)),
                       ("moveaxis", (2, 0)), ("select", (2, 3)), ("ravel", ()), ("adjoint", ())):
        check_same(getattr(tidal, name)(ours, *args), getattr(torch, name)(ref, *args))
    check_same(tidal.t(ours.select(0, 0)), torch.t(ref.select(0, 0)))
    check_same(ours.view(size=(6, 4)), ref.view(size=(6, 4)))
    check_same(ours.reshape(shape=(6, 4)), ref.reshape(shape=(6, 4)))
    check_same(ours.expand(size=(2, 2, 3, 4)), ref.expand(size=(2, 2, 3, 4)))
    check_same(tidal.reshape(ours, shape=(24,)), torch.reshape(ref, shape=(24,)))


def test_T_warnings(rng):
    ours, ref = pair(rng, (2, 3, 4))
    with pytest.warns(UserWarning, match="deprecated"):
        got = ours.T
    check_same(got, ref.permute(2, 1, 0))
    zero, _ = pair(rng, ())
    with pytest.warns(UserWarning, match="0-D"):
        assert zero.mT.shape == ()


@pytest.mark.parametrize("shape", [(0,), (0, 3), (2, 0, 3)])
def test_empty(rng, shape):
    ours, ref = pair(rng, shape)
    for fn in (lambda t: t.reshape(-1), lambda t: t.unsqueeze(0).transpose(0, -1), lambda t: t.flatten(),
               lambda t: t.view(tuple(t.shape)[::-1]), lambda t: t.squeeze(),
               lambda t: t.expand(2, *t.shape), lambda t: t.movedim(0, -1)):
        want = fn(ref)
        got = fn(ours)
        assert tuple(got.shape) == tuple(want.shape) and got.stride() == want.stride()


def test_is_contiguous_of_empty_views():
    assert tidal.zeros(0, 1).expand(0, 3).is_contiguous()


ERRORS = [
    lambda t: t.transpose(1, 2).view(24),
    lambda t: t.view(5, -1),
    lambda t: t.view(-1, -1),
    lambda t: t.view(-2, 12),
    lambda t: t.view(7),
    lambda t: t.reshape(5, 5),
    lambda t: t.permute(0, 1),
    lambda t: t.permute(0, 1, 1),
    lambda t: t.permute(0, 1, 5),
    lambda t: t.t(),
    lambda t: t.narrow(1, 2, 3),
    lambda t: t.narrow(1, 4, 0),
    lambda t: t.narrow(1, -4, 1),
    lambda t: t.narrow(1, 0, -1),
    lambda t: t.narrow(5, 0, 1),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).narrow(0, 0, 1),
    lambda t: t.expand(3, 4),
    lambda t: t.expand(2, 5, 4),
    lambda t: t.expand(-1, 2, 3, 4),
    lambda t: t.expand(2, -2, 4),
    lambda t: t.unsqueeze(4),
    lambda t: t.unsqueeze(-5),
    lambda t: t.squeeze(5),
    lambda t: t.squeeze((0, 0)),
    lambda t: t.flatten(2, 1),
    lambda t: t.flatten(0, 5),
    lambda t: t.unflatten(1, (2, 2)),
    lambda t: t.unflatten(1, ()),
    lambda t: t.diagonal(0, 1, 1),
    lambda t: t.diagonal(0, 1, 3),
    lambda t: t.unfold(2, 5, 1),
    lambda t: t.unfold(2, 2, 0),
    lambda t: t.unfold(2, -1, 1),
    lambda t: t.as_strided((2, 2), (1,)),
    lambda t: t.as_strided((2, 2), (1, -1)),
    lambda t: t.as_strided((2, 2), (1, 1), -1),
    lambda t: t.as_strided((100,), (1,)),
    lambda t: t.movedim((0, 1), (1,)),
    lambda t: t.movedim((0, 0), (1, 2)),
    lambda t: t.movedim((0, 1), (1, 1)),
    lambda t: t.select(1, 3),
    lambda t: t.select(1, -4),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).select(0, 0),
    lambda t: t.transpose(0, 3),
    lambda t: t.select(0, 0).select(0, 0).mT,
    lambda t: t.select(0, 0).select(0, 0).mH,
    lambda t: t.select(0, 0).select(0, 0).adjoint(),
    lambda t: t.H,
    lambda t: t.select(0, 0).select(0, 0).H,
    lambda t: t.narrow(2, 0, 3).view(_dt(t, "float64")),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).view(_dt(t, "int8")),
]


@pytest.mark.parametrize("fn", ERRORS)
def test_errors_match_torch(rng, fn):
    ours, ref = pair(rng, (2, 3, 4))
    check_error(fn, ours, ref)


def test_unflatten_infer_error(rng):
    ours, ref = pair(rng, (2, 3, 4))
    check_error(lambda t: t.unflatten(1, (-1, -1)), ours, ref, match="only one dimension can be inferred")


def test_reshape_ambiguous_empty(rng):
    ours, ref = pair(rng, (0, 3))
    check_error(lambda t: t.reshape(0, -1), ours, ref)


def test_tensor_arguments(rng):
    ours, ref = pair(rng, (6, 10))
    check_same(ours.narrow(0, tidal.tensor(2), 3), ref.narrow(0, torch.tensor(2), 3))
    check_same(ours.select(1, tidal.tensor(-3)), ref.select(1, torch.tensor(-3)))
    check_same(ours.view(np.int64(3), -1), ref.view(3, -1))


def test_type_errors(rng):
    ours, _ = pair(rng, (2, 3))
    with pytest.raises(TypeError, match="must be tuple of ints"):
        ours.view(2, 3.0)
    with pytest.raises(TypeError, match="must be int"):
        ours.transpose(0, 1.0)
