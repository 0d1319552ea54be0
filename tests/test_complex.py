"""Complex dtypes against torch: creation, promotion, printing, elementwise math, reductions, views,
constructors, and gradients under PyTorch's conjugate Wirtinger convention."""
import io
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like, to_numpy

RNG = np.random.default_rng(7)


def _c(shape, dtype=np.complex64):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _same(a, b, rtol=1e-5, atol=1e-6):
    assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), rtol=rtol, atol=atol)


# -- dtypes and promotion ---------------------------------------------------------------------------
def test_dtype_names_and_predicates():
    assert tidal.cfloat is tidal.complex64 and tidal.cdouble is tidal.complex128
    assert tc.complex64 is tidal.complex64 and tc.cfloat is tidal.complex64
    for name in ("complex64", "complex128", "float32", "int64"):
        d, w = getattr(tidal, name), getattr(torch, name)
        assert d.is_complex == w.is_complex
        assert d.to_real().name == str(w.to_real()).split(".")[-1]
    for name in ("float32", "float64", "complex64"):
        assert getattr(tidal, name).to_complex().name == str(getattr(torch, name).to_complex()).split(".")[-1]
    assert tidal.complex64.itemsize == 8 and tidal.complex128.itemsize == 16


PROMOTE = ["bool", "uint8", "int32", "int64", "float16", "float32", "float64", "complex64", "complex128"]


@pytest.mark.parametrize("a", PROMOTE)
@pytest.mark.parametrize("b", ["complex64", "complex128"])
def test_promote_types(a, b):
    got = tidal.promote_types(getattr(tidal, a), getattr(tidal, b))
    assert got.name == str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[-1]


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64", "complex64", "complex128", "bool"])
def test_promotion_with_complex_scalars_and_0d(dtype):
    x = np.ones(3).astype(getattr(np, dtype) if dtype != "bool" else np.bool_)
    a, w = tidal.tensor(x), torch.tensor(x)
    assert (a * tidal.tensor(1j)).dtype.name == str((w * torch.tensor(1j)).dtype).split(".")[-1]
    z = tidal.tensor(1j, dtype=tidal.complex128)
    assert (a + z).dtype.name == str((w + torch.tensor(1j, dtype=torch.complex128)).dtype).split(".")[-1]
    if dtype.startswith("complex"):
        assert (a + tidal.tensor(2.0, dtype=tidal.float64)).dtype.name == \
            str((w + torch.tensor(2.0, dtype=torch.float64)).dtype).split(".")[-1]


# -- creation -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [[1 + 2j, 3.5, -1j], [[1, 2j], [True, 0.5]], 2 - 3j, [np.complex128(1j), 2],
                                  [tidal.tensor(1j), 2]])
def test_tensor_from_python_complex(data):
    want_data = [torch.tensor(1j), 2] if isinstance(data, list) and isinstance(data[0], tidal.Tensor) else data
    _same(tidal.tensor(data), torch.tensor(want_data))


@pytest.mark.parametrize("np_dtype", [np.complex64, np.complex128])
def test_tensor_from_numpy_and_back(np_dtype):
    arr = _c((2, 3), np_dtype)
    t = tidal.from_numpy(arr)
    assert t.dtype.name == np.dtype(np_dtype).name
    np.testing.assert_array_equal(t.numpy(), arr)
    _same(tidal.tensor(arr), torch.tensor(arr))
    _same(tidal.as_tensor(arr), torch.as_tensor(arr))
    assert t.tolist() == arr.tolist() and tidal.tensor(1 + 2j).item() == 1 + 2j
    assert complex(tidal.tensor(1 - 2j)) == complex(torch.tensor(1 - 2j))


def test_tensor_rejects_complex_leaves_for_real_dtypes():
    for dtype in ("float32", "int64"):
        raises_like(lambda: tidal.tensor([1 + 2j], dtype=getattr(tidal, dtype)),
                     lambda: torch.tensor([1 + 2j], dtype=getattr(torch, dtype)))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_factories(dtype):
    d, w = getattr(tidal, dtype), getattr(torch, dtype)
    _same(tidal.zeros(2, 3, dtype=d), torch.zeros(2, 3, dtype=w))
    _same(tidal.ones(4, dtype=d), torch.ones(4, dtype=w))
    _same(tidal.full((2,), 1 - 2j, dtype=d), torch.full((2,), 1 - 2j, dtype=w))
    _same(tidal.full((2,), 3, dtype=d), torch.full((2,), 3, dtype=w))
    assert tidal.empty(3, dtype=d).dtype is d
    _same(tidal.zeros_like(tidal.ones(2), dtype=d), torch.zeros_like(torch.ones(2), dtype=w))
    assert tidal.full((2,), 1j).dtype.name == str(torch.full((2,), 1j).dtype).split(".")[-1]


def test_to_and_from_complex():
    x = np.array([1.5, -2.0], np.float32)
    _same(tidal.tensor(x).to(tidal.cfloat), torch.tensor(x).to(torch.cfloat))
    _same(tidal.tensor(x).to(tidal.cdouble), torch.tensor(x).to(torch.cdouble))
    z = _c(3)
    _same(tidal.tensor(z).to(tidal.complex128), torch.tensor(z).to(torch.complex128))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _same(tidal.tensor(z).to(tidal.float32), torch.tensor(z).to(torch.float32))
        _same(tidal.tensor(z).real.to(tidal.int64), torch.tensor(z).real.to(torch.int64))


# -- printing ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("data", [
    [1 + 2j, -3.5 - 0.25j, 0j, 100 + 1e-5j],
    [[1 + 1j, 2], [3, 4j]],
    [float("nan") + 1j, float("inf") - 2j, 1e10 + 1e-10j],
    3 - 4j,
    [],
])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_repr(data, dtype):
    assert repr(tidal.tensor(data, dtype=getattr(tidal, dtype))) == \
        repr(torch.tensor(data, dtype=getattr(torch, dtype))).replace("torch.", "tidal.")


def test_repr_summarized_and_grad():
    x = np.arange(2000, dtype=np.float32) * (1 + 1j)
    assert repr(tidal.tensor(x)) == repr(torch.tensor(x)).replace("torch.", "tidal.")
    a = tidal.tensor([1 + 2j], requires_grad=True)
    assert repr(a * 2) == repr(torch.tensor([1 + 2j], requires_grad=True) * 2)
    assert repr(a) == repr(torch.tensor([1 + 2j], requires_grad=True))


# -- elementwise ---------------------------------------------------------------------------------------------
UNARY = ["neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "abs", "reciprocal", "rsqrt",
         "sigmoid", "square", "expm1", "log1p", "log2", "log10", "asin", "acos", "atan", "asinh", "acosh", "atanh",
         "sgn", "isnan", "isinf", "isfinite", "conj_physical", "exp2", "positive", "sinc"]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_unary(name, dtype):
    z = _c((3, 4), dtype)
    tol = dict(rtol=2e-5, atol=1e-5) if dtype == np.complex64 else {}
    _same(getattr(tidal, name)(tidal.tensor(z)), getattr(torch, name)(torch.tensor(z)), **tol)


BINARY = ["add", "sub", "mul", "div", "pow", "eq", "ne"]


@pytest.mark.parametrize("name", BINARY)
def test_binary_with_tensors_and_mixed_dtypes(name):
    z, w, r = _c((2, 3)), _c((3,), np.complex128), RNG.standard_normal((2, 3)).astype(np.float32)
    f, g = getattr(tidal, name), getattr(torch, name)
    _same(f(tidal.tensor(z), tidal.tensor(z[::-1].copy())), g(torch.tensor(z), torch.tensor(z[::-1].copy())),
          rtol=1e-4, atol=1e-5)
    _same(f(tidal.tensor(z), tidal.tensor(w)), g(torch.tensor(z), torch.tensor(w)), rtol=1e-4, atol=1e-5)
    _same(f(tidal.tensor(r), tidal.tensor(z)), g(torch.tensor(r), torch.tensor(z)), rtol=1e-4, atol=1e-5)
    _same(f(tidal.tensor(z), 2), g(torch.tensor(z), 2), rtol=1e-4, atol=1e-5)
    _same(f(tidal.tensor(z), 0.5), g(torch.tensor(z), 0.5), rtol=1e-4, atol=1e-5)


def test_inplace_and_out_dtype_errors():
    z = tidal.tensor(_c(3))
    z.mul_(2)
    z.add_(tidal.ones(3))
    want = torch.tensor(z.numpy()) 
    _same(z, want)
    raises_like(lambda: tidal.ones(3).add_(z), lambda: torch.ones(3).add_(torch.tensor(z.numpy())))


REJECTED = [("lt", 2), ("gt", 2), ("le", 2), ("ge", 2), ("maximum", 2), ("minimum", 2), ("relu", 1), ("floor", 1),
            ("sign", 1), ("atan2", 2), ("remainder", 2), ("erf", 1), ("isposinf", 1), ("signbit", 1),
            ("deg2rad", 1), ("bitwise_not", 1), ("round", 1), ("trunc", 1)]


@pytest.mark.parametrize("name,nin", REJECTED)
def test_rejected_ops(name, nin):
    z = _c(3)
    raises_like(lambda: getattr(tidal, name)(*[tidal.tensor(z)] * nin),
                 lambda: getattr(torch, name)(*[torch.tensor(z)] * nin))


def test_rejected_clamp():
    z = _c(3)
    raises_like(lambda: tidal.clamp(tidal.tensor(z), 0, 1), lambda: torch.clamp(torch.tensor(z), 0, 1))


# -- reductions and products ------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_reductions(dtype):
    z = _c((3, 4), dtype)
    a, w = tidal.tensor(z), torch.tensor(z)
    for name in ("sum", "mean", "prod"):
        _same(getattr(a, name)(), getattr(w, name)(), rtol=1e-4, atol=1e-5)
        _same(getattr(a, name)(1), getattr(w, name)(1), rtol=1e-4, atol=1e-5)
    _same(a.sum(0, keepdim=True), w.sum(0, keepdim=True), rtol=1e-4, atol=1e-5)


def test_matmul_bmm():
    a, b = _c((2, 3, 4)), _c((2, 4, 5))
    _same(tidal.tensor(a) @ tidal.tensor(b), torch.tensor(a) @ torch.tensor(b), rtol=1e-4, atol=1e-5)
    _same(tidal.bmm(tidal.tensor(a), tidal.tensor(b)), torch.bmm(torch.tensor(a), torch.tensor(b)),
          rtol=1e-4, atol=1e-5)
    _same(tidal.matmul(tidal.tensor(a[0]), tidal.tensor(b[0, :, 0])),
          torch.matmul(torch.tensor(a[0]), torch.tensor(b[0, :, 0])), rtol=1e-4, atol=1e-5)


# -- views and constructors --------------------------------------------------------------------------------------
def test_real_imag_are_writable_views():
    z = _c((2, 3))
    a, w = tidal.tensor(z), torch.tensor(z)
    _same(a.real, w.real)
    _same(a.imag, w.imag)
    _same(tidal.real(a), torch.real(w))
    a.real.mul_(2)
    w.real.mul_(2)
    a.imag = tidal.zeros(2, 3)
    w.imag = torch.zeros(2, 3)
    _same(a, w)
    r = tidal.tensor([1.0, 2.0])
    assert tidal.real(r) is r
    raises_like(lambda: r.imag, lambda: torch.tensor([1.0, 2.0]).imag)
    _same(a[:, 1:].real, w[:, 1:].real)
    _same(a.t().imag, w.t().imag)


def test_view_as_real_and_complex():
    z = _c((2, 3))
    a, w = tidal.tensor(z), torch.tensor(z)
    _same(tidal.view_as_real(a), torch.view_as_real(w))
    r = tidal.view_as_real(a)
    r[0, 0, 1] = 5.0
    assert a.numpy()[0, 0] == z[0, 0].real + 5j
    x = RNG.standard_normal((3, 2)).astype(np.float64)
    _same(tidal.view_as_complex(tidal.tensor(x)), torch.view_as_complex(torch.tensor(x)))
    for bad in (np.ones((3, 3), np.float32), np.ones((3, 2), np.int64)):
        raises_like(lambda: tidal.view_as_complex(tidal.tensor(bad)),
                     lambda: torch.view_as_complex(torch.tensor(bad)))
    raises_like(lambda: tidal.view_as_complex(tidal.ones(4, 2).t()),
                 lambda: torch.view_as_complex(torch.ones(4, 2).t()))
    raises_like(lambda: tidal.view_as_real(tidal.ones(2)), lambda: torch.view_as_real(torch.ones(2)))


def test_conj_angle_complex_polar_isreal():
    z = _c((2, 3))
    a, w = tidal.tensor(z), torch.tensor(z)
    _same(a.conj(), w.conj())
    _same(tidal.conj(a), torch.conj(w))
    _same(a.angle(), w.angle())
    _same(tidal.angle(tidal.tensor([-1.0, 2.0, 0.0])), torch.angle(torch.tensor([-1.0, 2.0, 0.0])))
    re, im = RNG.standard_normal((2, 3)), RNG.standard_normal((3,))
    _same(tidal.complex(tidal.tensor(re), tidal.tensor(im)), torch.complex(torch.tensor(re), torch.tensor(im)))
    _same(tidal.polar(tidal.tensor(np.abs(re)), tidal.tensor(re)),
          torch.polar(torch.tensor(np.abs(re)), torch.tensor(re)))
    raises_like(lambda: tidal.complex(tidal.ones(2), tidal.ones(2, dtype=tidal.float64)),
                 lambda: torch.complex(torch.ones(2), torch.ones(2, dtype=torch.float64)))
    raises_like(lambda: tidal.complex(tidal.ones(2, dtype=tidal.int64), tidal.ones(2, dtype=tidal.int64)),
                 lambda: torch.complex(torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64)))
    m = np.array([1 + 0j, 1j, 0j])
    _same(tidal.isreal(tidal.tensor(m)), torch.isreal(torch.tensor(m)))
    assert tidal.is_complex(a) and a.is_complex() and not tidal.ones(1).is_complex()
    assert tc.is_complex(a) == torch.is_complex(w)
    assert not a.is_floating_point()


def test_save_load_roundtrip(tmp_path):
    z = _c((2, 2), np.complex128)
    buf = io.BytesIO()
    tidal.save({"z": tidal.tensor(z)}, buf)
    buf.seek(0)
    got = torch.load(buf)["z"]
    assert got.dtype == torch.complex128
    np.testing.assert_array_equal(got.numpy(), z)
    buf = io.BytesIO()
    torch.save({"z": torch.tensor(z).to(torch.complex64)}, buf)
    buf.seek(0)
    back = tidal.load(buf)["z"]
    assert back.dtype is tidal.complex64
    np.testing.assert_array_equal(back.numpy(), z.astype(np.complex64))


# -- gradients ---------------------------------------------------------------------------------------------------
def _grads(lib, fn, arrays):
    ins = [lib.tensor(x, requires_grad=True) for x in arrays]
    fn(lib, *ins).backward()
    return [x.grad for x in ins]


GRAD_CASES = {
    "mul": lambda L, a, b, r: (a * b).abs().sum(),
    "add_sub_real": lambda L, a, b, r: ((a + b) * (a - b)).real.sum(),
    "div_imag": lambda L, a, b, r: (a / b).imag.sum(),
    "exp": lambda L, a, b, r: L.exp(a).abs().sum(),
    "real_times_complex": lambda L, a, b, r: (a * r).abs().sum(),
    "conj": lambda L, a, b, r: (a.conj() * b).real.sum(),
    "view_as_real": lambda L, a, b, r: L.view_as_real(a * b).pow(2).sum(),
    "complex": lambda L, a, b, r: (L.complex(r, r * 2) * a).abs().sum(),
    "sum": lambda L, a, b, r: (a.sum() * b.sum()).abs(),
    "log_sqrt": lambda L, a, b, r: (L.log(a) + L.sqrt(b)).abs().sum(),
    "trig": lambda L, a, b, r: (L.sin(a) * L.cos(b) + L.tanh(a)).abs().sum(),
    "pow": lambda L, a, b, r: (a ** 2 + a ** b).abs().sum(),
    "angle": lambda L, a, b, r: a.angle().sum(),
    "sgn": lambda L, a, b, r: (a.sgn() * b).real.sum(),
    "mean": lambda L, a, b, r: (a.mean() * b).abs().sum(),
    "prod": lambda L, a, b, r: a.prod().abs(),
    "matmul": lambda L, a, b, r: (a.reshape(3, 1) @ b.reshape(1, 3)).abs().sum(),
    "polar": lambda L, a, b, r: (L.polar(r.abs() + 0.5, r) * a).abs().sum(),
    "view_as_complex": lambda L, a, b, r: (L.view_as_complex(L.stack([r, r * r], -1)) * a).abs().sum(),
    "neg_reciprocal": lambda L, a, b, r: (-a).reciprocal().abs().sum(),
    "to_complex": lambda L, a, b, r: (r.to(a.dtype) * a).imag.sum(),
}


@pytest.mark.parametrize("name", sorted(GRAD_CASES))
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_gradients_match_torch(name, dtype):
    arrays = [_c(3, dtype), _c(3, dtype), RNG.standard_normal(3).astype(np.dtype(dtype).char.lower())]
    got = _grads(tidal, GRAD_CASES[name], arrays)
    want = _grads(torch, GRAD_CASES[name], arrays)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if g is not None:
            _same(g, w, rtol=1e-4, atol=1e-5)


def test_requires_grad_on_complex():
    a = tidal.zeros(2, dtype=tidal.cfloat, requires_grad=True)
    assert a.requires_grad
    b = tidal.ones(2, dtype=tidal.cdouble).requires_grad_()
    assert b.requires_grad and (b * 2).grad_fn is not None


def test_angle_gradient_at_zero_and_numpy_complex_to_real():
    grads = []
    for lib in (tidal, torch):
        z = lib.tensor([0j, 1 + 2j, -3 - 1j], requires_grad=True)
        z.angle().sum().backward()
        grads.append(z.grad)
    _same(*grads)
    arr = np.array([1 + 2j, -3 - 0.5j])
    _same(tidal.tensor(arr, dtype=tidal.float32), torch.tensor(arr, dtype=torch.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy's ComplexWarning inside torch
        _same(tidal.tensor([np.complex64(1 + 2j)], dtype=tidal.float64),
              torch.tensor([np.complex64(1 + 2j)], dtype=torch.float64))


def test_finfo_of_complex_dtypes():
    for name in ("complex64", "complex128"):
        got, want = tc.finfo(getattr(tc, name)), torch.finfo(getattr(torch, name))
        assert (got.bits, got.eps, got.max, got.tiny, got.dtype) == (want.bits, want.eps, want.max, want.tiny,
                                                                      want.dtype)


GRAD_UNARY = ["neg", "exp", "log", "sqrt", "sin", "cos", "tan", "tanh", "sinh", "cosh", "abs", "reciprocal", "rsqrt",
              "sigmoid", "square", "expm1", "log1p", "log2", "log10", "asin", "acos", "atan", "asinh", "acosh",
              "atanh", "sgn", "conj_physical", "exp2", "sinc", "angle", "real", "imag", "conj", "positive"]


def _weighted_loss(lib, out):
    w = np.arange(1, 5) * (0.5 + 0.25j)
    return (out * lib.tensor(w)).real.sum() if out.dtype.is_complex else (out * lib.tensor(w.real)).sum()


@pytest.mark.parametrize("name", GRAD_UNARY)
def test_unary_gradients(name):
    z = (_c(4, np.complex128) * 0.7)
    grads = []
    for lib in (tidal, torch):
        a = lib.tensor(z, requires_grad=True)
        _weighted_loss(lib, getattr(lib, name)(a)).backward()
        grads.append(a.grad)
    _same(*grads, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "logaddexp", "lerp"])
def test_binary_gradients(name):
    z, w = _c(4, np.complex128), _c(4, np.complex128) * 1.3
    grads = []
    for lib in (tidal, torch):
        a, b = lib.tensor(z, requires_grad=True), lib.tensor(w, requires_grad=True)
        out = lib.lerp(a, b, 0.3) if name == "lerp" else getattr(lib, name)(a, b)
        _weighted_loss(lib, out).backward()
        grads.append((a.grad, b.grad))
    for got, want in zip(*grads):
        _same(got, want, rtol=1e-7, atol=1e-9)


def test_copy_variants_and_inplace_conj():
    z = _c((2, 3))
    _same(tidal.view_as_real_copy(tidal.tensor(z)), torch.view_as_real_copy(torch.tensor(z)))
    x = RNG.standard_normal((3, 2)).astype(np.float32)
    _same(tidal.view_as_complex_copy(tidal.tensor(x)), torch.view_as_complex_copy(torch.tensor(x)))
    a, w = tidal.tensor(z), torch.tensor(z)
    tidal.conj_physical_(a)
    torch.conj_physical_(w)
    _same(a, w)
    a.conj_physical_()
    w.conj_physical_()
    _same(a, w)
    r = tidal.ones(2)
    assert tidal.conj_physical_(r) is r


def test_default_complex_dtype_follows_default_float():
    tidal.set_default_dtype(tidal.float64)
    torch.set_default_dtype(torch.float64)
    try:
        a, w = tidal.tensor([1 + 2j]), torch.tensor([1 + 2j])
        assert a.dtype is tidal.complex128 and repr(a) == repr(w)
        assert repr(tidal.tensor([1j], dtype=tidal.complex64)) == \
            repr(torch.tensor([1j], dtype=torch.complex64)).replace("torch.", "tidal.")
        assert (tidal.ones(2, dtype=tidal.int64) * tidal.tensor(1j)).dtype is tidal.complex128
        assert tidal.full((1,), 1j).dtype is tidal.complex128
    finally:
        tidal.set_default_dtype(tidal.float32)
        torch.set_default_dtype(torch.float32)
    raises_like(lambda: tidal.set_default_dtype(tidal.complex64), lambda: torch.set_default_dtype(torch.complex64))
