"""torch 2.13's float8 dtypes (float8_e4m3fn, e5m2, e4m3fnuz, e5m2fnuz, e8m0fnu) against torch: dtype objects and
finfo, promotion (refused but with itself), construction and casts bit for bit (saturation, NaN codes and
payloads, e8m0's rounding), views as bytes, printing, NumPy refusals, save/load both ways, the ops torch runs on
them and its errors for the others, and torch._scaled_mm on the CPU.
"""
import io

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch

FLOAT8 = ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu")
CODES = np.arange(256, dtype=np.uint8)


def _grid() -> np.ndarray:
    """float32 values across every float8 range: specials, boundaries, ties, random magnitudes."""
    rng = np.random.default_rng(0)
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 448, 464, 465, 480, 500, -500, 240, 248, 57344, 61440,
               65536, 1e6, -1e6, 1e-10, 2.0 ** -10, 3 * 2.0 ** -11, 2.0 ** -127, 2.0 ** -128, 1.5, 3.0, 0.75, 1e38]
    rand = rng.standard_normal(400) * 10.0 ** rng.integers(-12, 8, 400)
    with np.errstate(over="ignore"):
        bits = rng.integers(0, 2 ** 32, 400, dtype=np.uint64).astype(np.uint32).view(np.float32)
    return np.concatenate([np.array(special, np.float32), rand.astype(np.float32), bits])


GRID = _grid()


def _bits(t) -> np.ndarray:
    """The bytes of a float8 tensor (torch's or tidal's) as uint8."""
    return t.view(torch.uint8 if isinstance(t, torch.Tensor) else ttorch.uint8).numpy()


def _outcome(fn):
    """('ok', dtype name, float32 values) or (exception type, message)."""
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return type(exc).__name__, str(exc)
    if isinstance(r, (torch.Tensor, ttorch.Tensor)):
        f32 = torch.float32 if isinstance(r, torch.Tensor) else ttorch.float32
        values = r.to(f32).tolist() if r.dtype.is_floating_point else r.tolist()
        return "ok", str(r.dtype).split(".")[-1], values
    if isinstance(r, (torch.dtype, ttorch.dtype)):
        return "ok", str(r).split(".")[-1]
    return "ok", r


def _same(fn):
    got, want = _outcome(lambda: fn(ttorch)), _outcome(lambda: fn(torch))
    if got[0] == want[0] == "ok" and got[1] == want[1] and len(got) == 3:  # NaN-aware value comparison
        np.testing.assert_array_equal(np.asarray(got[2], float), np.asarray(want[2], float))
        return
    assert got == want


# -- dtype objects -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT8)
def test_dtype_object_and_finfo(name):
    d, td = getattr(ttorch, name), getattr(torch, name)
    assert str(d).split(".")[-1] == str(td).split(".")[-1] == name
    assert (d.itemsize, d.is_floating_point, d.is_signed) == (td.itemsize, td.is_floating_point, td.is_signed)
    f, tf = ttorch.finfo(d), torch.finfo(td)
    assert repr(f) == repr(tf)
    for field in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution", "dtype"):
        assert getattr(f, field) == getattr(tf, field), field
    assert ttorch.ones(2, dtype=d).type() == torch.ones(2, dtype=td).type()


def test_promotion_refused_but_with_itself():
    names = FLOAT8 + ("float32", "bfloat16", "int64", "bool", "uint16")
    for a in names:
        for b in names:
            _same(lambda L, a=a, b=b: L.promote_types(getattr(L, a), getattr(L, b)))
    for other in (lambda L: 1.5, lambda L: 2, lambda L: L.tensor(1.0), lambda L: L.tensor([1.0]),
                  lambda L: L.tensor([1], dtype=L.float8_e5m2)):
        _same(lambda L, o=other: L.result_type(L.ones(2, dtype=L.float8_e4m3fn), o(L)))


# -- construction and casts ------------------------------------------------------------------------
@pytest.mark.parametrize("name", FLOAT8)
def test_tensor_constructor_rounds_as_torch(name):
    values = GRID[np.isfinite(GRID) | np.isnan(GRID) | np.isinf(GRID)]
    want = _bits(torch.tensor(values.tolist(), dtype=getattr(torch, name)))
    np.testing.assert_array_equal(_bits(ttorch.tensor(values.tolist(), dtype=getattr(ttorch, name))), want)
    np.testing.assert_array_equal(_bits(ttorch.tensor(values, dtype=getattr(ttorch, name))),
                                  _bits(torch.tensor(values, dtype=getattr(torch, name))))
    assert ttorch.tensor(3.0, dtype=getattr(ttorch, name)).shape == ()


# (ml_dtypes' own casts are torch's for the fnuz types only; the others saturate, code NaN or round differently:
# ops/elementwise/float8.py casts as torch)
@pytest.mark.parametrize("name", FLOAT8)
def test_to_float8_bits_as_torch(name):
    for src in (np.float32, np.float64, np.float16):
        with np.errstate(over="ignore"):
            x = GRID.astype(src)
        want = _bits(torch.from_numpy(x).to(getattr(torch, name)))
        np.testing.assert_array_equal(_bits(ttorch.from_numpy(x).to(getattr(ttorch, name))), want)
        out = ttorch.zeros(len(x), dtype=getattr(ttorch, name)).copy_(ttorch.from_numpy(x))
        np.testing.assert_array_equal(_bits(out), want)
    _same(lambda L: L.full((2,), float("nan"), dtype=getattr(L, name)).view(L.uint8))


@pytest.mark.parametrize("name", FLOAT8)
def test_from_float8_bits_as_torch(name):
    """All 256 codes into float32/64/16, bfloat16 and the other float8 types: NaN payloads included."""
    t, x = torch.from_numpy(CODES).view(getattr(torch, name)), ttorch.tensor(CODES).view(getattr(ttorch, name))
    for target, bits in (("float32", "int32"), ("float64", "int64"), ("float16", "int16"), ("bfloat16", "int16")):
        want = t.to(getattr(torch, target)).view(getattr(torch, bits)).numpy()
        np.testing.assert_array_equal(x.to(getattr(ttorch, target)).view(getattr(ttorch, bits)).numpy(), want)
    for other in FLOAT8:
        np.testing.assert_array_equal(_bits(x.to(getattr(ttorch, other))), _bits(t.to(getattr(torch, other))))


@pytest.mark.parametrize("name", FLOAT8)
def test_finite_codes_convert_exactly(name):
    t = torch.from_numpy(CODES).view(getattr(torch, name)).float().numpy()
    x = ttorch.tensor(CODES).view(getattr(ttorch, name)).float().numpy()
    finite = np.isfinite(t)
    np.testing.assert_array_equal(x[finite], t[finite])
    np.testing.assert_array_equal(np.isnan(x), np.isnan(t))


@pytest.mark.parametrize("name", FLOAT8)
def test_views_as_bytes(name):
    for raw in ("uint8", "int8"):
        t = torch.from_numpy(CODES).view(getattr(torch, raw)).view(getattr(torch, name))
        x = ttorch.tensor(CODES).view(getattr(ttorch, raw)).view(getattr(ttorch, name))
        np.testing.assert_array_equal(x.view(getattr(ttorch, raw)).numpy(), t.view(getattr(torch, raw)).numpy())
        assert x.dtype == getattr(ttorch, name) and x.shape == (256,)


@pytest.mark.parametrize("name", FLOAT8)
def test_fill_and_full_overflow_as_torch(name):
    # (torch leaves a one-element float8 fill unchecked: tidal checks it as any other)
    for value in (0.0, -3.0, 3.0, 500.0, 1e6, float("inf"), 6e-39, 5.8e-39, True, 2):
        _same(lambda L, v=value: L.full((2,), v, dtype=getattr(L, name)).view(L.uint8))
        _same(lambda L, v=value: L.zeros(2, dtype=getattr(L, name)).fill_(v).view(L.uint8))


@pytest.mark.parametrize("name", list(FLOAT8))
def test_one_element_fill_is_an_unchecked_cast(name):
    for value in (500.0, -3.0, 1e6, float("inf"), -1e9):
        _same(lambda L, v=value: L.full((1,), v, dtype=getattr(L, name)).view(L.uint8))
        _same(lambda L, v=value: L.scalar_tensor(v, dtype=getattr(L, name)).view(L.uint8))
        _same(lambda L, v=value: L.full_like(L.zeros(1, 1, dtype=getattr(L, name)), v).view(L.uint8))
        _same(lambda L, v=value: L.ones(1, dtype=getattr(L, name)).fill_(v).view(L.uint8))
        _same(lambda L, v=value: L.ones(2, dtype=getattr(L, name)).fill_(v).view(L.uint8))  # (checked: may raise)


def test_printing_as_torch():
    from tidal.tensor import dtype as dt
    old, dt.repr_namespace[0] = dt.repr_namespace[0], "torch"
    try:
        for name in FLOAT8:
            for part in (slice(0, 256), slice(56, 60), slice(0, 8), slice(120, 130), slice(60, 61), slice(0, 0),
                         slice(250, 256), slice(255, 256), slice(120, 127)):
                want = repr(torch.from_numpy(CODES[part].copy()).view(getattr(torch, name)))
                assert repr(ttorch.tensor(CODES[part].copy()).view(getattr(ttorch, name))) == want
    finally:
        dt.repr_namespace[0] = old


def test_numpy_refused_as_torch():
    for name in FLOAT8:
        _same(lambda L: L.ones(2, dtype=getattr(L, name)).numpy())
        _same(lambda L: L.ones(2, dtype=getattr(L, name)).numpy(force=True))
        _same(lambda L: np.asarray(L.ones(2, dtype=getattr(L, name))))


def test_from_numpy_refuses_ml_dtypes_arrays():
    import ml_dtypes
    arr = np.zeros(2, ml_dtypes.float8_e4m3fn)
    _same(lambda L: L.from_numpy(arr))
    _same(lambda L: L.tensor(arr))
    _same(lambda L: L.as_tensor(arr))
    _same(lambda L: L.tensor(arr, dtype=L.float32))
    _same(lambda L: L.tensor([arr, arr]))


@pytest.mark.parametrize("name", FLOAT8)
def test_save_load_both_ways(name):
    t = torch.from_numpy(CODES.copy()).view(getattr(torch, name))
    buf = io.BytesIO()
    torch.save({"x": t, "part": t[3:9]}, buf)
    buf.seek(0)
    got = tidal.load(buf)
    assert got["x"].dtype == getattr(ttorch, name)
    np.testing.assert_array_equal(_bits(got["x"]), CODES)
    np.testing.assert_array_equal(_bits(got["part"]), CODES[3:9])
    buf = io.BytesIO()
    tidal.save({"x": got["x"], "part": got["part"]}, buf)
    buf.seek(0)
    back = torch.load(buf)
    assert back["x"].dtype == t.dtype
    np.testing.assert_array_equal(_bits(back["x"]), CODES)
    np.testing.assert_array_equal(_bits(back["part"]), CODES[3:9])


# -- ops ---------------------------------------------------------------------------------------------
def _x(L, name="float8_e4m3fn"):
    return L.tensor([1.0, 2.5, -3.0, 4.0], dtype=getattr(L, name))


_I = lambda L: L.tensor([0, 1])  # noqa: E731
_M = lambda L: L.tensor([True, False, True, False])  # noqa: E731
OPS = {  # op -> fn(L) (values where torch runs it, its error where not)
    "add": lambda L: _x(L) + _x(L), "sub": lambda L: _x(L) - 1, "mul": lambda L: _x(L) * _x(L),
    "div": lambda L: _x(L) / _x(L), "neg": lambda L: -_x(L), "abs": lambda L: _x(L).abs(),
    "pow": lambda L: _x(L) ** _x(L), "eq": lambda L: _x(L) == _x(L), "ne": lambda L: _x(L) != 2.5,
    "lt": lambda L: _x(L) < _x(L), "ge": lambda L: _x(L) >= _x(L), "maximum": lambda L: L.maximum(_x(L), _x(L)),
    "fmax": lambda L: L.fmax(_x(L), _x(L)), "sign": lambda L: _x(L).sign(), "relu": lambda L: _x(L).relu(),
    "clamp": lambda L: _x(L).clamp(0, 1), "exp": lambda L: _x(L).exp(), "sqrt": lambda L: _x(L).sqrt(),
    "floor": lambda L: _x(L).floor(), "sigmoid": lambda L: _x(L).sigmoid(), "isnan": lambda L: _x(L).isnan(),
    "isinf": lambda L: _x(L).isinf(), "where": lambda L: L.where(_M(L), _x(L), _x(L)),
    "logical_not": lambda L: L.logical_not(_x(L)), "max": lambda L: _x(L).max(), "amax": lambda L: _x(L).amax(),
    "argmax": lambda L: _x(L).argmax(), "nonzero": lambda L: _x(L).nonzero(), "cummax": lambda L: _x(L).cummax(0),
    "topk": lambda L: _x(L).topk(1), "dot": lambda L: _x(L).dot(_x(L)), "cat": lambda L: L.cat([_x(L), _x(L)]),
    "stack": lambda L: L.stack([_x(L), _x(L)]), "clone": lambda L: _x(L).clone(),
    "contiguous": lambda L: _x(L).view(2, 2).t().contiguous(), "slice": lambda L: _x(L)[1:],
    "index": lambda L: _x(L)[_I(L)], "mask": lambda L: _x(L)[_M(L)], "index_select": lambda L: _x(L).index_select(0, _I(L)),
    "setitem": lambda L: _x(L).index_put_((_I(L),), L.tensor([7.0, 8.0], dtype=L.float8_e4m3fn)),
    "gather": lambda L: _x(L).gather(0, _I(L)), "scatter": lambda L: _x(L).scatter(0, _I(L), _x(L)),
    "masked_fill": lambda L: _x(L).masked_fill(_M(L), 0), "flip": lambda L: _x(L).flip(0),
    "roll": lambda L: _x(L).roll(1), "repeat": lambda L: _x(L).repeat(2), "tril": lambda L: _x(L).view(2, 2).tril(),
    "fill_": lambda L: _x(L).fill_(2), "zero_": lambda L: _x(L).zero_(), "zeros": lambda L: L.zeros(3, dtype=L.float8_e5m2),
    "ones": lambda L: L.ones(3, dtype=L.float8_e5m2), "full_like": lambda L: L.full_like(_x(L), 2),
    "empty": lambda L: L.empty(2, 3, dtype=L.float8_e4m3fn).shape, "eye": lambda L: L.eye(2, dtype=L.float8_e4m3fn),
    "arange": lambda L: L.arange(3, dtype=L.float8_e4m3fn), "copy_": lambda L: _x(L).copy_(L.tensor([1.0, 2, 3, 4])),
    "to_int": lambda L: _x(L).int(), "to_bool": lambda L: _x(L).bool(), "tolist": lambda L: _x(L).tolist(),
    "item": lambda L: _x(L)[1].item(), "bitwise_not": lambda L: ~_x(L), "expand": lambda L: _x(L).expand(2, 4),
    "pad": lambda L: L.nn.functional.pad(_x(L), (1, 1)), "isin": lambda L: L.isin(_x(L), _x(L)),
    "addcmul": lambda L: L.addcmul(_x(L), _x(L), _x(L)), "masked_select": lambda L: _x(L).masked_select(_M(L)),
    "e5m2 mul": lambda L: _x(L, "float8_e5m2") * _x(L, "float8_e5m2"),
    "mm": lambda L: _x(L).view(2, 2).mm(_x(L).view(2, 2).t()), "matmul": lambda L: _x(L)[:2] @ _x(L).view(2, 2),
    "mv": lambda L: _x(L).view(2, 2) @ _x(L)[:2], "addmm": lambda L: L.addmm(*[_x(L).view(2, 2)] * 3),
    "mm e5m2": lambda L: _x(L, "float8_e5m2").view(2, 2) @ _x(L, "float8_e5m2").view(2, 2),
    "mm rounds": lambda L: L.full((2, 3), 12.0, dtype=L.float8_e4m3fn) @ L.full((3, 2), 13.0, dtype=L.float8_e4m3fn),
    "batched @ 2-d": lambda L: L.ones(2, 2, 2, dtype=L.float8_e4m3fn) @ _x(L).view(2, 2),
    "2-d @ batched": lambda L: _x(L).view(2, 2) @ L.ones(2, 2, 2, dtype=L.float8_e4m3fn),
    "mm mixed": lambda L: _x(L).view(2, 2) @ _x(L, "float8_e5m2").view(2, 2),
    "mm float32": lambda L: _x(L).view(2, 2).float() @ _x(L).view(2, 2),
    "sort": lambda L: _x(L).sort(), "argsort": lambda L: _x(L).argsort(), "msort": lambda L: _x(L).view(2, 2).msort(),
    "unique": lambda L: _x(L).unique(), "unique dim": lambda L: _x(L).view(2, 2).unique(dim=0),
    "unique_consecutive": lambda L: L.unique_consecutive(_x(L)), "rand": lambda L: L.rand(2, dtype=L.float8_e4m3fn),
    "randn": lambda L: L.randn(2, dtype=L.float8_e5m2), "rand_like": lambda L: L.rand_like(_x(L)),
    "randn_like": lambda L: L.randn_like(_x(L)), "uniform_": lambda L: _x(L).uniform_(),
    "normal_": lambda L: _x(L).normal_(), "equal": lambda L: L.equal(_x(L), _x(L)),
    "equal itself": lambda L: (lambda x: L.equal(x, x))(_x(L)),
    "equal float32": lambda L: L.equal(_x(L), _x(L).float()), "std": lambda L: _x(L).std(),
    "var dim": lambda L: _x(L).view(2, 2).var(0), "std_mean": lambda L: L.std_mean(_x(L).view(2, 2), 1),
    "norm": lambda L: _x(L).norm(), "norm dim": lambda L: _x(L).view(2, 2).norm(p=1, dim=0),
    "vector_norm": lambda L: L.linalg.vector_norm(_x(L)),
    "einsum dot": lambda L: L.einsum("i,i->", _x(L), _x(L)), "einsum sum": lambda L: L.einsum("ij->j", _x(L).view(2, 2)),
    "einsum outer": lambda L: L.einsum("i,j->ij", _x(L), L.full((3,), 30.0, dtype=L.float8_e4m3fn)),
    "einsum transpose": lambda L: L.einsum("ij->ji", _x(L).view(2, 2)),
    "einsum diagonal": lambda L: L.einsum("ii->i", _x(L).view(2, 2)),
    "mixed": lambda L: _x(L) * _x(L, "float8_e5m2"), "with float32": lambda L: _x(L) * L.ones(4),
}


@pytest.mark.parametrize("op", OPS)
def test_op_as_torch(op):
    _same(OPS[op])


def test_mul_rounds_as_torch_casts():
    """A float8 product is a float32 one cast back: e4m3fn saturates, e5m2 writes NaN as 0x7f."""
    _same(lambda L: (lambda a: (a * a).view(L.uint8))(L.tensor([30.0, -30, 2.5, 0.5], dtype=L.float8_e4m3fn)))
    _same(lambda L: (lambda b: (b * b).view(L.uint8))(L.tensor([30.0, 30, float("nan"), 448], dtype=L.float8_e5m2)))


SCALAR_MUL = {  # torch's float8 mul has no loop for a second operand that is one number
    "a * 2": lambda L: _x(L) * 2, "2 * a": lambda L: 2 * _x(L), "mul 0-d": lambda L: _x(L) * L.tensor(2.0),
    "mul one element": lambda L: _x(L) * _x(L)[:1], "mul_": lambda L: _x(L).mul_(2.5),
}


@pytest.mark.parametrize("op", SCALAR_MUL)
def test_scalar_mul_refused_as_torch(op):
    _same(SCALAR_MUL[op])


def test_mul_by_a_broadcast_first_operand_runs():
    _same(lambda L: _x(L)[:1] * _x(L))
    _same(lambda L: _x(L).view(2, 2) * _x(L)[:2])


REDUCTIONS = {  # torch has no float8 sum/prod/scan kernels; a dtype= argument casts first
    "sum": lambda L: _x(L).sum(), "sum dim": lambda L: _x(L).sum(0), "mean": lambda L: _x(L).mean(),
    "prod": lambda L: _x(L).prod(), "nansum": lambda L: _x(L).nansum(), "nanmean": lambda L: _x(L).nanmean(),
    "cumsum": lambda L: _x(L).cumsum(0), "cumprod": lambda L: _x(L).cumprod(0),
}
CASTING_REDUCTIONS = {
    "sum(dtype=float32)": lambda L: _x(L).sum(dtype=L.float32), "mean(dtype=)": lambda L: _x(L).mean(dtype=L.float32),
    "prod(dtype=)": lambda L: _x(L).prod(dtype=L.float32), "cumsum(dtype=)": lambda L: _x(L).cumsum(0, dtype=L.float32),
    "into float8": lambda L: _x(L).float().sum(dtype=L.float8_e4m3fn),
}


@pytest.mark.parametrize("op", REDUCTIONS)
def test_reduction_refused_as_torch(op):
    _same(REDUCTIONS[op])


@pytest.mark.parametrize("op", CASTING_REDUCTIONS)
def test_reduction_with_dtype_as_torch(op):
    _same(CASTING_REDUCTIONS[op])


# -- torch._scaled_mm ----------------------------------------------------------------------------------
def _mats(L, name_a="float8_e4m3fn", name_b="float8_e4m3fn"):
    rng = np.random.default_rng(3)  # small halves: every product and sum is exact in float32
    a = (rng.integers(-8, 9, (6, 10)) / 2).astype(np.float32)
    b = (rng.integers(-8, 9, (10, 5)) / 2).astype(np.float32)
    return L.from_numpy(a).to(getattr(L, name_a)), L.from_numpy(b).to(getattr(L, name_b))


SCALED = {
    "tensorwise": lambda L, a, b: L._scaled_mm(a, b, L.tensor(0.5), L.tensor(0.25)),
    "float32 out": lambda L, a, b: L._scaled_mm(a, b, L.tensor(0.5), L.tensor(2.0), out_dtype=L.float32),
    "bfloat16 bias": lambda L, a, b: L._scaled_mm(a, b, L.tensor(0.5), L.tensor(0.5), out_dtype=L.bfloat16,
                                                   bias=L.ones(5, dtype=L.bfloat16)),
    "float16 out": lambda L, a, b: L._scaled_mm(a, b, L.ones(1), L.ones(1, 1), out_dtype=L.float16,
                                                 use_fast_accum=True),
    "e5m2 out": lambda L, a, b: L._scaled_mm(a, b, L.tensor(0.5), L.tensor(0.5), out_dtype=L.float8_e5m2),
    "int32 out": lambda L, a, b: L._scaled_mm(a, b, L.tensor(0.5), L.tensor(1.0), out_dtype=L.int32),
    # inexact scales on a one-term product (no summation order): torch scales the inputs, then multiplies
    "scaled inputs": lambda L, a, b: L._scaled_mm(a[:, :1].contiguous(), b[:1], L.tensor(0.3), L.tensor(0.7),
                                                  out_dtype=L.float32),
    "rowwise": lambda L, a, b: L._scaled_mm(a, b, L.arange(1.0, 7.0).view(6, 1) / 4, L.arange(1.0, 6.0).view(1, 5),
                                             out_dtype=L.float32),
    "transposed b": lambda L, a, b: L._scaled_mm(a, b.t().contiguous().t(), L.tensor(1.0), L.tensor(1.0),
                                                  out_dtype=L.float32),
    "scale_result": lambda L, a, b: L._scaled_mm(a, b, L.tensor(1.0), L.tensor(1.0), scale_result=L.tensor(4.0)),
    "float64 bias": lambda L, a, b: L._scaled_mm(a, b, L.tensor(1.0), L.tensor(1.0), out_dtype=L.float32,
                                                  bias=L.ones(1, 5, dtype=L.float64)),
    "float8 bias": lambda L, a, b: L._scaled_mm(a, b, L.tensor(1.0), L.tensor(1.0), bias=a[0, :5]),
    "bias size": lambda L, a, b: L._scaled_mm(a, b, L.tensor(1.0), L.tensor(1.0), bias=L.ones(6)),
    "double scale": lambda L, a, b: L._scaled_mm(a, b, L.tensor(1.0, dtype=L.float64), L.tensor(1.0)),
    "vector scale": lambda L, a, b: L._scaled_mm(a, b, L.ones(6), L.ones(5)),
    "strided rowwise": lambda L, a, b: L._scaled_mm(a, b, L.ones(6, 2)[:, :1], L.ones(1, 5)),
    "float32 input": lambda L, a, b: L._scaled_mm(a.float(), b, L.tensor(1.0), L.tensor(1.0)),
    "shapes": lambda L, a, b: L._scaled_mm(a, a, L.tensor(1.0), L.tensor(1.0)),
    "vector mat1": lambda L, a, b: L._scaled_mm(a[0], b, L.tensor(1.0), L.tensor(1.0)),
    "vector mat2": lambda L, a, b: L._scaled_mm(a, b[0], L.tensor(1.0), L.tensor(1.0)),
}


@pytest.mark.parametrize("case", SCALED)
def test_scaled_mm_as_torch(case):
    _same(lambda L: SCALED[case](L, *_mats(L)))


def test_scaled_mm_mixed_float8_inputs():
    _same(lambda L: L._scaled_mm(*_mats(L, "float8_e4m3fn", "float8_e5m2"), L.tensor(0.5), L.tensor(0.5)))
    _same(lambda L: L._scaled_mm(*_mats(L, "float8_e5m2", "float8_e5m2"), L.tensor(1.0), L.tensor(1.0),
                                 out_dtype=L.float32))
