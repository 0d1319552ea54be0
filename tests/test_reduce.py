"""Reductions, scans and softmax compared with torch: values, dtypes, shapes and errors.

One record per op drives a sweep over dtypes, layouts (contiguous, transposed, strided),
shapes (0-d, empty, 1-3 dims), dims (None, ints, negative, tuples, ()) and keepdim.
Where torch raises, tidal must raise the same exception type with the same message.
"""
from __future__ import annotations

import math
import re
import warnings

import ml_dtypes
import numpy as np
import pytest

import tidal

torch = pytest.importorskip("torch")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
SHAPES = [(), (0,), (5,), (3, 4), (2, 0, 3), (2, 3, 4), (4, 1, 3)]
LAYOUTS = ["contiguous", "transposed", "strided"]
TOL = {"float16": (1e-2, 1e-2), "bfloat16": (3e-2, 3e-2), "float32": (1e-5, 1e-5), "float64": (1e-10, 1e-12)}


# -- conversions and comparison ------------------------------------------------------------
def _np_dtype(name: str):
    return ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype("bool" if name == "bool" else name)


def make_array(rng, shape, dtype: str, layout: str, values: str = "normal") -> np.ndarray:
    """Random values of `dtype` with the given memory layout (non-contiguous when possible)."""
    base_shape = {"transposed": shape[::-1], "strided": tuple(2 * s for s in shape)}.get(layout, shape)
    n = math.prod(base_shape)
    if dtype == "bool":
        data = rng.random(n) < 0.5
    elif dtype in FLOATS:
        data = rng.uniform(0.5, 1.5, n) if values == "near_one" else rng.normal(0, 3, n)
        if values == "nan" and n and rng.random() < 0.7:
            data[rng.random(n) < 0.2] = np.nan
    else:
        lo = 0 if dtype == "uint8" else -4
        data = rng.integers(lo, 3 if values == "near_one" else 5, n)
    arr = data.reshape(base_shape).astype(_np_dtype(dtype))
    if layout == "transposed":
        return arr.T
    if layout == "strided" and shape:
        return arr[tuple(slice(None, None, 2) for _ in shape)]
    return arr


def both(arr: np.ndarray):
    """The same data as a tidal tensor (sharing arr's layout) and a torch tensor."""
    t = tidal.from_numpy(arr)
    if arr.dtype == ml_dtypes.bfloat16:
        return t, torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    return t, torch.from_numpy(arr)


def to_torch_dtype(d):
    return getattr(torch, d.name) if d is not tidal.bool else torch.bool


def as_numpy(t) -> np.ndarray:
    if isinstance(t, tidal.Tensor):
        return (t.float() if t.dtype is tidal.bfloat16 else t).numpy()
    return (t.float() if t.dtype == torch.bfloat16 else t).numpy()


def assert_same(ours, theirs, what="") -> None:
    """Same dtype, shape and values (tolerance by dtype, NaN equal to NaN)."""
    if isinstance(theirs, tuple):
        assert isinstance(ours, tuple) and len(ours) == len(theirs), what
        if hasattr(theirs, "_fields"):
            assert ours._fields == theirs._fields, what
        for a, b in zip(ours, theirs):
            assert_same(a, b, what)
        return
    assert isinstance(ours, tidal.Tensor), what
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1], f"{what}: {ours.dtype} vs {theirs.dtype}"
    assert tuple(ours.shape) == tuple(theirs.shape), f"{what}: {tuple(ours.shape)} vs {tuple(theirs.shape)}"
    a, b = as_numpy(ours), as_numpy(theirs)
    if ours.dtype.is_floating_point:
        rtol, atol = TOL[ours.dtype.name]
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def outcome(fn, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs), None
    except Exception as exc:  # noqa: BLE001 - compared below
        return None, exc


def check_against_torch(ours_fn, theirs_fn, what: str, compare=assert_same) -> None:
    ours, our_err = outcome(ours_fn)
    theirs, their_err = outcome(theirs_fn)
    if their_err is not None:
        assert our_err is not None, f"{what}: torch raised {their_err!r}, tidal returned"
        assert type(our_err) is type(their_err), f"{what}: {our_err!r} vs {their_err!r}"
        assert str(our_err) == str(their_err).split("\n")[0].split(" (Triggered")[0], what
        return
    assert our_err is None, f"{what}: tidal raised {our_err!r}"
    compare(ours, theirs, what)


# -- the op database ------------------------------------------------------------------------
class Op:
    """One op of the sweep: how dims are given, which kwargs vary, what inputs look like."""

    def __init__(self, name, dims="tuple", keepdim=True, variants=({},), values="normal", dtypes=DTYPES,
                 compare=assert_same):
        self.name, self.dims, self.keepdim, self.variants = name, dims, keepdim, variants
        self.values, self.dtypes, self.compare = values, dtypes, compare

    def __repr__(self):
        return self.name


def dim_choices(kind: str, ndim: int) -> list:
    """None (meaning: not passed), ints incl. negative, and for 'tuple' ops tuples and ()."""
    n = max(ndim, 1)
    ints = sorted(set(range(-n, n)))
    out = ([] if kind.endswith("required") else [None]) + ints
    if kind in ("tuple", "tuple_required"):
        out += [(0, -1) if ndim > 1 else (0,), tuple(range(ndim))[::-1], (-1,)]
        if kind == "tuple":
            out.append(())
    return out


def gathered_indices_agree(ours, theirs, x_torch, dim, keepdim) -> None:
    """For (values, indices) results whose index may differ on ties: values equal, indices point at them."""
    assert_same(ours.values, theirs.values)
    idx = torch.from_numpy(ours.indices.numpy())
    assert tuple(idx.shape) == tuple(theirs.indices.shape)
    if x_torch.ndim == 0 or idx.numel() == 0:
        return
    picked = torch.gather(x_torch, dim, idx if keepdim else idx.unsqueeze(dim))
    picked = picked if keepdim else picked.squeeze(dim)
    np.testing.assert_array_equal(as_numpy(picked), as_numpy(theirs.values))


INT_DTYPE_VARIANTS = ({}, {"dtype": tidal.float64}, {"dtype": tidal.int32})
OPS = [
    Op("sum", variants=INT_DTYPE_VARIANTS),
    Op("nansum", values="nan", variants=({}, {"dtype": tidal.float64})),
    Op("mean", variants=({}, {"dtype": tidal.float64})),
    Op("nanmean", values="nan"),
    Op("prod", dims="int", values="near_one", variants=({}, {"dtype": tidal.float64})),
    Op("amax", values="nan"),
    Op("amin", values="nan"),
    Op("max", dims="int", values="nan"),
    Op("min", dims="int", values="nan"),
    Op("aminmax", dims="int", values="nan"),
    Op("argmax", dims="int", values="nan"),
    Op("argmin", dims="int", values="nan"),
    Op("var", variants=({}, {"correction": 0}, {"correction": 2}, {"unbiased": False})),
    Op("std", variants=({}, {"correction": 0})),
    Op("var_mean", variants=({}, {"correction": 0})),
    Op("std_mean", variants=({}, {"unbiased": True})),
    Op("norm", variants=tuple({"p": p} for p in (2, 1, math.inf, -math.inf, 0, 3, -1, 0.5, "fro")),
       dtypes=FLOATS + ["int64"]),
    Op("logsumexp", dims="tuple_required", dtypes=["bool", "int32", "float16", "bfloat16", "float32", "float64"]),
    Op("any", values="nan"),
    Op("all", values="nan"),
    Op("count_nonzero", keepdim=False),
    Op("median", dims="int", values="nan", compare=None),
    Op("nanmedian", dims="int", values="nan", compare=None),
    Op("mode", dims="required", compare=None),
    Op("cumsum", dims="required", keepdim=False, variants=INT_DTYPE_VARIANTS),
    Op("cumprod", dims="required", keepdim=False, values="near_one", variants=({}, {"dtype": tidal.float64})),
    Op("cummax", dims="required", keepdim=False, values="nan"),
    Op("cummin", dims="required", keepdim=False, values="nan"),
    Op("logcumsumexp", dims="required", keepdim=False),
    Op("softmax", dims="required", keepdim=False, variants=({}, {"dtype": tidal.float64})),
    Op("log_softmax", dims="required", keepdim=False, variants=({}, {"dtype": tidal.float32})),
]


def _kwargs_for_torch(kwargs: dict) -> dict:
    return {k: (to_torch_dtype(v) if isinstance(v, tidal.dtype) else v) for k, v in kwargs.items()}


VARIANT_DTYPES = ("int32", "float16", "float32")  # where the non-default kwargs are swept


def _compare_for(op: Op, x_torch, dim, keepdim):
    if op.compare is not None:
        return op.compare

    def compare(ours, theirs, what):  # indices may legitimately differ on ties
        if not isinstance(theirs, tuple):
            return assert_same(ours, theirs, what)
        return gathered_indices_agree(ours, theirs, x_torch, -1 if dim is None else dim, bool(keepdim))
    return compare


@pytest.mark.parametrize("op", OPS, ids=repr)
def test_matches_torch(op, rng):
    ours_fn, theirs_fn = getattr(tidal, op.name), getattr(torch, op.name)
    for i, dtype in enumerate(op.dtypes):
        variants = op.variants if dtype in VARIANT_DTYPES else op.variants[:1]
        for j, shape in enumerate(SHAPES):
            layout = LAYOUTS[(i + j) % len(LAYOUTS)]
            x, xt = both(make_array(rng, shape, dtype, layout, op.values))
            for dim in dim_choices(op.dims, len(shape)):
                for keepdim in ((False, True) if op.keepdim and dim is not None else (None,)):
                    for variant in variants:
                        kwargs = dict(variant)
                        if dim is not None:
                            kwargs["dim"] = dim
                        if keepdim is not None:
                            kwargs["keepdim"] = keepdim
                        check_against_torch(lambda: ours_fn(x, **kwargs),
                                            lambda: theirs_fn(xt, **_kwargs_for_torch(kwargs)),
                                            f"{op.name}({dtype} {shape} {layout}, {kwargs})",
                                            compare=_compare_for(op, xt, dim, keepdim))


METHOD_CALLS = [
    ("sum", (1,), {"keepdim": True}), ("sum", ((0, 1),), {}), ("mean", (), {}), ("prod", (0,), {}),
    ("max", (), {}), ("max", (1, True), {}), ("min", (0,), {}), ("amax", ((0, 1),), {}), ("argmin", (1,), {}),
    ("aminmax", (), {"dim": 0}), ("var", (1, False), {}), ("std", (), {"correction": 0}), ("norm", (1, 1), {}),
    ("logsumexp", (0,), {}), ("any", (1,), {}), ("all", (), {}), ("count_nonzero", (0,), {}),
    ("median", (1,), {}), ("nanmedian", (), {}), ("mode", (0,), {}), ("cumsum", (1,), {}), ("cumprod", (0,), {}),
    ("cummax", (1,), {}), ("cummin", (0,), {}), ("logcumsumexp", (1,), {}), ("softmax", (1,), {}),
    ("log_softmax", (0,), {}), ("nansum", (), {}), ("nanmean", (1,), {}), ("argmax", (), {"keepdim": True}),
]


@pytest.mark.parametrize("name,args,kwargs", METHOD_CALLS, ids=[f"{m[0]}{m[1]}" for m in METHOD_CALLS])
def test_methods(name, args, kwargs, rng):
    x, xt = both(make_array(rng, (3, 4), "float32", "transposed"))
    assert_same(getattr(x, name)(*args, **kwargs), getattr(xt, name)(*args, **kwargs))


# -- semantics one by one -----------------------------------------------------------------
def test_integer_and_bool_sums_give_int64():
    for d in (tidal.bool, tidal.uint8, tidal.int8, tidal.int16, tidal.int32):
        x = tidal.ones(3, 4, dtype=d)
        assert x.sum().dtype is tidal.int64 and x.sum(1).dtype is tidal.int64
        assert x.prod().dtype is tidal.int64 and tidal.cumsum(x, 0).dtype is tidal.int64
    assert tidal.sum(tidal.ones(3), dtype=tidal.int8).dtype is tidal.int8


def test_half_precision_accumulates_in_float32():
    assert tidal.ones(4096, dtype=tidal.float16).sum().item() == 4096  # float16 alone stalls at 2048
    assert tidal.ones(4096, dtype=tidal.float16).cumsum(0).numpy()[-1] == 4096
    assert tidal.full((100000,), 3.0, dtype=tidal.float16).mean().item() == 3
    assert tidal.ones(10000, dtype=tidal.bfloat16).sum().item() == torch.ones(10000, dtype=torch.bfloat16).sum().item()


def test_empty_dim_tuple_means_all_dims_except_for_any_all():
    x, xt = both(make_array(np.random.default_rng(0), (2, 3), "float32", "contiguous"))
    for name in ("sum", "mean", "nansum", "amax", "amin", "var", "std", "norm", "count_nonzero"):
        assert_same(getattr(tidal, name)(x, dim=()), getattr(torch, name)(xt, dim=()), name)
    for name in ("any", "all"):
        assert_same(getattr(tidal, name)(x, dim=()), getattr(torch, name)(xt, dim=()), name)


def test_dim_none_with_keepdim_keeps_every_dim():
    x, xt = both(make_array(np.random.default_rng(7), (2, 3, 4), "float32", "strided"))
    for name in ("sum", "nansum", "mean", "nanmean", "amax", "amin", "any", "all", "var", "std", "norm", "argmax",
                 "argmin"):
        assert_same(getattr(tidal, name)(x, dim=None, keepdim=True), getattr(torch, name)(xt, dim=None, keepdim=True),
                    name)


def test_chained_reductions_without_sync():
    arr = np.random.default_rng(8).normal(size=(6, 7)).astype(np.float32)
    x, xt = both(arr)
    ours = tidal.softmax(x - x.mean(1, keepdim=True), 1).cumsum(1).amax(0) * x.std(0)
    theirs = torch.softmax(xt - xt.mean(1, keepdim=True), 1).cumsum(1).amax(0) * xt.std(0)
    assert_same(ours, theirs)


def test_nan_propagation_and_first_occurrence():
    data = np.array([[1.0, np.nan, 3.0, np.nan], [2.0, 5.0, 5.0, -1.0]], np.float32)
    x, xt = both(data)
    for fn in ("amax", "amin"):
        assert_same(getattr(tidal, fn)(x, 1), getattr(torch, fn)(xt, 1))
    for fn in ("max", "min", "argmax", "argmin", "median", "cummax", "cummin"):
        assert_same(getattr(tidal, fn)(x, 1), getattr(torch, fn)(xt, 1), fn)
    assert tidal.max(x).item() != tidal.max(x).item()  # NaN
    assert tidal.argmax(tidal.tensor([1.0, 3.0, 3.0, 1.0])).item() == 1
    assert tidal.argmin(tidal.tensor([2, 0, 5, 0])).item() == 1


def test_binary_max_min_promote_and_broadcast():
    a, at = both(np.arange(6, dtype=np.int32).reshape(2, 3))
    b, bt = both(np.array([2.5, -1.0, 4.0], np.float32))
    assert_same(tidal.max(a, b), torch.max(at, bt))
    assert_same(tidal.min(a, b), torch.min(at, bt))
    assert_same(a.max(b), at.max(bt))
    assert_same(tidal.max(a, other=b), torch.max(at, other=bt))


def test_return_types():
    x = tidal.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]])
    res = tidal.max(x, 1)
    values, indices = res
    assert res.values is values and res.indices is indices
    assert res._fields == ("values", "indices")
    assert repr(res).startswith("tidal.return_types.max(\nvalues=tensor([5., 7.]),\nindices=tensor([1, 0]))")
    assert tidal.aminmax(x)._fields == ("min", "max")
    assert type(tidal.cummin(x, 0)).__name__ == "cummin"
    var, mean = tidal.var_mean(x, 1)
    assert isinstance(tidal.var_mean(x, 1), tuple) and mean.shape == (2,)


def test_median_is_the_lower_median():
    x, xt = both(np.array([4.0, 1.0, 3.0, 2.0], np.float32))
    assert_same(tidal.median(x), torch.median(xt))
    assert tidal.median(x).item() == 2.0
    assert tidal.median(tidal.empty(0)).item() != tidal.median(tidal.empty(0)).item()  # NaN, as torch


def test_mode_prefers_smallest_value_and_last_index():
    x, xt = both(np.array([[5.0, 1.0, 5.0, 1.0, 3.0, 1.0, 5.0], [2.0, 2.0, 7.0, 7.0, 7.0, 0.0, 2.0]], np.float32))
    assert_same(tidal.mode(x), torch.mode(xt))
    assert_same(tidal.mode(x, 0, keepdim=True), torch.mode(xt, 0, keepdim=True))


def test_var_degrees_of_freedom_warning():
    x = tidal.ones(1)
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        assert math.isnan(tidal.var(x).item())
    with pytest.warns(UserWarning, match=r"std_mean\(\): degrees of freedom"):
        tidal.std_mean(x)
    with pytest.warns(UserWarning, match="degrees of freedom"):
        assert tidal.var(tidal.tensor([1.0, 2.0, 3.0]), correction=3).item() == math.inf


def test_var_legacy_and_new_signatures():
    x, xt = both(make_array(np.random.default_rng(1), (3, 5), "float64", "contiguous"))
    assert_same(tidal.var(x, False), torch.var(xt, False))
    assert_same(tidal.var(x, 1, False, True), torch.var(xt, 1, False, True))
    assert_same(tidal.std(x, dim=(0, 1), correction=1.5), torch.std(xt, dim=(0, 1), correction=1.5))
    assert_same(tidal.var_mean(x, 0, keepdim=True), torch.var_mean(xt, 0, keepdim=True))
    with pytest.raises(TypeError):
        tidal.var(x, 1, unbiased=True, correction=1)


def test_norm_variants():
    x, xt = both(make_array(np.random.default_rng(2), (2, 3, 4), "float32", "transposed"))
    for p, dim in (("fro", (0, 1)), ("nuc", (0, 2)), ("nuc", (-1, 0)), (2, None), (math.inf, 1)):
        for keepdim in (False, True):
            assert_same(tidal.norm(x, p, dim, keepdim), torch.norm(xt, p, dim, keepdim), f"{p} {dim}")
    assert_same(tidal.norm(x, dtype=tidal.float64), torch.norm(xt, dtype=torch.float64))
    m, mt = both(make_array(np.random.default_rng(3), (3, 4), "float64", "contiguous"))
    assert_same(tidal.norm(m, "nuc"), torch.norm(mt, "nuc"))


def test_softmax_and_log_softmax():
    rng = np.random.default_rng(4)
    for dtype in FLOATS:
        x, xt = both(make_array(rng, (3, 5), dtype, "transposed"))
        for dim in (0, 1, -1):
            assert_same(tidal.softmax(x, dim), torch.softmax(xt, dim), dtype)
            assert_same(tidal.log_softmax(x, dim), torch.log_softmax(xt, dim), dtype)
            assert_same(tidal.softmax(x, dim, dtype=tidal.float64), torch.softmax(xt, dim, dtype=torch.float64))
    big, bigt = both(np.array([[1000.0, 1001.0, -1000.0], [-np.inf, 0.0, 1.0]], np.float32))
    assert_same(tidal.softmax(big, 1), torch.softmax(bigt, 1))
    assert_same(tidal.log_softmax(big, 1), torch.log_softmax(bigt, 1))
    ints, intst = both(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert_same(tidal.softmax(ints, 1, dtype=tidal.float32), torch.softmax(intst, 1, dtype=torch.float32))


def test_softmax_rows_sum_to_one_after_fusion():
    x = tidal.tensor(np.random.default_rng(5).normal(size=(64, 33)).astype(np.float32))
    np.testing.assert_allclose(tidal.softmax(x, 1).sum(1).numpy(), np.ones(64), rtol=1e-5)
    np.testing.assert_allclose(tidal.log_softmax(x, 0).exp().sum(0).numpy(), np.ones(33), rtol=1e-5)


def test_in_place_cumsum_and_cumprod():
    for dtype in ("int8", "int64", "float32", "bfloat16"):
        arr = make_array(np.random.default_rng(6), (3, 4), dtype, "strided", "near_one")
        x, xt = both(arr)
        assert x.cumsum_(1) is x
        assert_same(x, xt.cumsum_(1), dtype)
        x, xt = both(arr.copy())
        assert_same(x.cumprod_(0), xt.cumprod_(0), dtype)


def test_in_place_cumsum_writes_through_strided_memory():
    base = np.arange(12.0).reshape(3, 4)
    tidal.from_numpy(base[:, 1]).cumsum_(0)
    tidal.sync()
    np.testing.assert_array_equal(base[:, 1], [1.0, 6.0, 15.0])
    np.testing.assert_array_equal(base[:, 0], [0.0, 4.0, 8.0])


ERRORS = [
    (lambda x: tidal.mean(x.long()), RuntimeError,
     "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Long"),
    (lambda x: tidal.mean(x, dtype=tidal.int64), RuntimeError, "Optional dtype must be either a floating point"),
    (lambda x: tidal.max(x[:0]), RuntimeError,
     "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim"),
    (lambda x: tidal.max(x[:0], 0), IndexError, "max(): Expected reduction dim 0 to have non-zero size."),
    (lambda x: tidal.amin(x[:0], (1, 0)), IndexError, "amin(): Expected reduction dim 0 to have non-zero size."),
    (lambda x: tidal.argmax(x[:0]), IndexError, "argmax(): Expected reduction dim to be specified"),
    (lambda x: tidal.argmin(x > 0), RuntimeError, "argmin(): does not support bool input"),
    (lambda x: tidal.aminmax(x[:0]), RuntimeError, "cannot compute aminmax over an empty dimension"),
    (lambda x: tidal.aminmax(x, dim=(0,)), TypeError, "aminmax(): argument 'dim' must be int, not tuple"),
    (lambda x: tidal.sum(x, 2), IndexError, "Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
    (lambda x: tidal.sum(x, (0, -2)), RuntimeError, "dim 0 appears multiple times in the list of dims"),
    (lambda x: tidal.sum(x, 1.5), TypeError, "dim"),
    (lambda x: tidal.sum(x, dtype="float"), TypeError, "dtype"),
    (lambda x: tidal.prod(x, (0, 1)), TypeError, "prod"),
    (lambda x: tidal.var(x.int()), RuntimeError, "std and var only support floating point and complex dtypes"),
    (lambda x: tidal.var_mean(x.int()), RuntimeError, "var_mean only support floating point"),
    (lambda x: tidal.norm(x.long()), RuntimeError,
     "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"),
    (lambda x: tidal.norm(x, dtype=tidal.float16), RuntimeError, "convertible without narrowing"),
    (lambda x: tidal.norm(x, "foo"), RuntimeError, "linalg.matrix_norm: Order foo not supported."),
    (lambda x: tidal.norm(x[:0], math.inf), RuntimeError, "cannot compute the inf norm on an empty tenso"),
    (lambda x: tidal.norm(x, "nuc", dim=1), RuntimeError, "dim must be a 2-tuple. Got 1"),
    (lambda x: tidal.logsumexp(x, None), TypeError, "logsumexp"),
    (lambda x: tidal.softmax(x.long(), 1), NotImplementedError, "not implemented for 'Long'"),
    (lambda x: tidal.logcumsumexp(x > 0, 1), NotImplementedError, "not implemented for 'Bool'"),
    (lambda x: tidal.median(x > 0), NotImplementedError, "not implemented for 'Bool'"),
    (lambda x: tidal.cumsum(x, (0,)), TypeError, "cumsum(): argument 'dim' must be int, not tuple"),
    (lambda x: (x > 0).cumsum_(0), NotImplementedError, "not implemented for 'Bool'"),
    (lambda x: x.long().cumsum_(0, dtype=tidal.int32), RuntimeError, "Bad in-place call"),
    (lambda x: tidal.mode(x[:, :0], 1), IndexError, "mode(): Expected reduction dim 1 to have non-zero size."),
]


@pytest.mark.parametrize("call,exc,match", ERRORS, ids=[e[2][:40] for e in ERRORS])
def test_errors(call, exc, match):
    x = Sliceable(np.arange(6.0).reshape(2, 3) - 2)
    with pytest.raises(exc, match=re.escape(match)):
        call(x)


class Sliceable(tidal.Tensor):
    """A float tensor whose slices are built from NumPy, so these tests don't depend on indexing."""

    def __new__(cls, arr):
        t = tidal.tensor(arr)
        t.__class__ = cls
        t._arr = arr
        return t

    def __getitem__(self, item):
        return tidal.tensor(self._arr[item])
