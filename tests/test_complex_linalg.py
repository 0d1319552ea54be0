"""Complex tensors in spread, norms and linear algebra, against torch: real results where torch's are
real (var, std, norms, singular values, Hermitian eigenvalues, log|det|), conjugate transposes (mH, H,
adjoint, vdot), and gradients under PyTorch's conjugate Wirtinger convention."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like, to_numpy

RNG = np.random.default_rng(16)


def _c(shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _name(d):
    return str(d).split(".")[-1]


def _check(fn, *arrays, rtol=1e-6, atol=1e-8, grad=True, loss=None):
    """fn(lib, *tensors) in tidal and torch: same dtypes and values; with `grad`, the gradients of a real loss
    (a random weighting of every output's real and imaginary parts, or `loss`) agree too."""
    ts = [tidal.tensor(a, requires_grad=grad) for a in arrays]
    ws = [torch.tensor(a, requires_grad=grad) for a in arrays]
    got, want = fn(tc, *ts), fn(torch, *ws)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert _name(g.dtype) == _name(w.dtype)
        np.testing.assert_allclose(to_numpy(g), to_numpy(w), rtol=rtol, atol=atol)
    if not grad:
        return
    if loss is None:
        weights = [RNG.standard_normal(tuple(w.shape)) + 1j * RNG.standard_normal(tuple(w.shape)) for w in want]

        def loss(lib, outs):
            total = 0
            for out, wgt in zip(outs, weights):
                if out.dtype.is_complex:
                    wt = lib.tensor(wgt, dtype=out.dtype)
                    total = total + (out * wt).real.sum()
                else:
                    total = total + (out * lib.tensor(wgt.real, dtype=out.dtype)).sum()
            return total
    loss(tc, got).backward()
    loss(torch, want).backward()
    for t, w in zip(ts, ws):
        if w.grad is None:  # torch gives no gradient (a norm of order 0)
            assert t.grad is None
            continue
        assert _name(t.grad.dtype) == _name(w.grad.dtype)
        np.testing.assert_allclose(to_numpy(t.grad), to_numpy(w.grad), rtol=1e-5, atol=1e-7)


# -- spread and norms: real results -----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op", ["var", "std"])
@pytest.mark.parametrize("kw", [{}, {"dim": 0}, {"dim": (0, 2), "keepdim": True}, {"correction": 0, "dim": 1}])
def test_var_std_real(dtype, op, kw):
    tol = dict(rtol=1e-4, atol=1e-5) if dtype is np.complex64 else {}
    _check(lambda lib, x: getattr(lib, op)(x, **kw), _c((3, 4, 2), dtype), **tol)


@pytest.mark.parametrize("op", ["var_mean", "std_mean"])
def test_var_mean_complex(op):
    _check(lambda lib, x: getattr(lib, op)(x, dim=1), _c((3, 4)))


def test_var_single_element_warns_and_nan_grad():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _check(lambda lib, x: lib.var(x), _c((1,)), grad=False)


@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, float("inf"), -float("inf"), 0])
def test_vector_norm(ord):
    x = _c((3, 5))
    _check(lambda lib, x: lib.linalg.vector_norm(x, ord, dim=1), x)
    _check(lambda lib, x: lib.linalg.vector_norm(x, ord), x)


@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, float("inf"), -float("inf")])
def test_matrix_norm(ord):
    _check(lambda lib, x: lib.linalg.matrix_norm(x, ord), _c((2, 3, 4)), rtol=1e-5)


def test_norm_functions_and_method():
    x = _c((3, 4))
    _check(lambda lib, x: x.norm(), x)
    _check(lambda lib, x: lib.norm(x, p=3, dim=0), x)
    _check(lambda lib, x: lib.linalg.norm(x), x)
    _check(lambda lib, x: lib.linalg.norm(x, "nuc"), x)
    _check(lambda lib, x: lib.linalg.vector_norm(x, dtype=lib.complex128), _c(5, np.complex64), rtol=1e-5)


def test_norm_dtype_kind_errors():
    z, x = _c(3, np.complex64), np.ones(3, np.float32)
    raises_like(lambda: tidal.linalg.vector_norm(tidal.tensor(z), dtype=tidal.float64),
                 lambda: torch.linalg.vector_norm(torch.tensor(z), dtype=torch.float64))
    raises_like(lambda: tidal.linalg.vector_norm(tidal.tensor(x), dtype=tidal.complex64),
                 lambda: torch.linalg.vector_norm(torch.tensor(x), dtype=torch.complex64))


# -- conjugate transposes and vdot ------------------------------------------------------------------
@pytest.mark.parametrize("name", ["mH", "H", "adjoint"])
def test_conjugate_transposes(name):
    x = _c((3, 4))

    def fn(lib, t):
        return t.adjoint() if name == "adjoint" else getattr(t, name)
    _check(fn, x)
    if name != "H":
        _check(fn, _c((2, 3, 4)))
    _check(fn, x.real.copy())  # real: the plain transpose
    assert tidal.tensor(x.real).mH._v.blob is not None


def test_vdot():
    a, b = _c(5), _c(5)
    _check(lambda lib, x, y: lib.vdot(x, y), a, b)
    _check(lambda lib, x, y: x.vdot(y), a, b)
    _check(lambda lib, x, y: lib.vdot(x, y), a.real.copy(), b.real.copy())


# -- linalg: values, dtypes, gradients --------------------------------------------------------------
def _well_conditioned(shape):
    a = _c(shape)
    return a + 3 * np.eye(shape[-1])


def _hermitian(shape):
    a = _c(shape)
    return a + np.swapaxes(a, -1, -2).conj()


@pytest.mark.parametrize("name", ["det", "inv"])
def test_det_inv(name):
    _check(lambda lib, x: getattr(lib.linalg, name)(x), _well_conditioned((2, 3, 3)))


def test_slogdet():
    _check(lambda lib, x: tuple(lib.linalg.slogdet(x)), _well_conditioned((2, 3, 3)))
    _check(lambda lib, x: lib.linalg.slogdet(x)[1], _well_conditioned((3, 3)))
    _check(lambda lib, x: lib.linalg.slogdet(x)[0], _well_conditioned((3, 3)))


@pytest.mark.parametrize("vector", [False, True])
def test_solve(vector):
    b = _c((2, 3)) if vector else _c((2, 3, 2))
    _check(lambda lib, a, b: lib.linalg.solve(a, b), _well_conditioned((2, 3, 3)), b)


def test_solve_dtype_mismatch():
    a, b = _well_conditioned((3, 3)), _c(3)
    raises_like(lambda: tidal.linalg.solve(tidal.tensor(a), tidal.tensor(b.real)),
                 lambda: torch.linalg.solve(torch.tensor(a), torch.tensor(b.real)))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_svdvals(shape):
    _check(lambda lib, x: lib.linalg.svdvals(x), _c((2,) + shape))


@pytest.mark.parametrize("shape", [(3, 3), (4, 2), (2, 4)])
def test_svd_gauge_invariant_grad(shape):
    """U and Vh are defined up to a phase per pair: compare |U|, S, |Vh| and a loss that ignores the phase."""
    x = _c(shape)

    def fn(lib, t):
        U, S, Vh = lib.linalg.svd(t, full_matrices=False)
        return U.abs(), S, Vh.abs()
    _check(fn, x)

    def product(lib, t):  # U diag(S) Vh with the phases cancelling
        U, S, Vh = lib.linalg.svd(t, full_matrices=False)
        return (U * S.to(U.dtype).unsqueeze(-2)) @ Vh
    _check(product, x)


def test_eigh_and_eigvalsh():
    a = _hermitian((2, 3, 3))
    _check(lambda lib, x: lib.linalg.eigvalsh(x), a)

    def fn(lib, t):
        L, V = lib.linalg.eigh(t)
        return L, V.abs()
    _check(fn, a)


def test_cholesky_qr_pinv():
    a = _c((3, 3))
    spd = a @ a.conj().T + 3 * np.eye(3)
    _check(lambda lib, x: lib.linalg.cholesky(x), spd)

    def qr(lib, t):  # Q and R are unique once R's diagonal is real and positive, as LAPACK gives them
        Q, R = lib.linalg.qr(t)
        return Q, R
    _check(qr, _c((4, 3)))
    _check(lambda lib, x: lib.linalg.pinv(x), _c((4, 3)))


def test_pinv_hermitian():
    _check(lambda lib, x: lib.linalg.pinv(x, hermitian=True), _hermitian((3, 3)) + 4 * np.eye(3))


# -- the rest of torch.linalg (and its torch.* spellings) on complex input ---------------------------
def _spd(n):
    a = _c((n, n))
    return a @ a.conj().T + n * np.eye(n)


@pytest.mark.parametrize("name", ["cholesky_ex", "cholesky_upper", "cholesky_inverse", "cholesky_solve"])
def test_cholesky_family(name):
    fns = {"cholesky_ex": lambda lib, x, b: lib.linalg.cholesky_ex(x)[0],
           "cholesky_upper": lambda lib, x, b: lib.linalg.cholesky(x, upper=True),
           "cholesky_inverse": lambda lib, x, b: lib.cholesky_inverse(lib.linalg.cholesky(x)),
           "cholesky_solve": lambda lib, x, b: lib.cholesky_solve(b, lib.linalg.cholesky(x))}
    _check(fns[name], _spd(3), _c((3, 2)))


@pytest.mark.parametrize("name", ["lu_factor", "lu", "lu_solve", "solve_triangular", "solve_triangular_right",
                                  "triangular_solve_t", "lstsq", "matrix_exp", "matrix_power", "inv_ex",
                                  "logdet", "trace", "vecdot", "householder_product", "multi_dot"])
def test_more_linalg(name):
    fns = {"lu_factor": lambda lib, a, b: lib.linalg.lu_factor(a)[0],
           "lu": lambda lib, a, b: tuple(lib.linalg.lu(a)),
           "lu_solve": lambda lib, a, b: lib.linalg.lu_solve(*lib.linalg.lu_factor(a), b, adjoint=True),
           "solve_triangular": lambda lib, a, b: lib.linalg.solve_triangular(a.triu(), b, upper=True),
           "solve_triangular_right": lambda lib, a, b: lib.linalg.solve_triangular(a.tril(), b.mT, upper=False,
                                                                                   left=False),
           "triangular_solve_t": lambda lib, a, b: lib.triangular_solve(b, a.triu(), transpose=True)[0],
           "lstsq": lambda lib, a, b: lib.linalg.lstsq(a, b).solution,
           "matrix_exp": lambda lib, a, b: lib.linalg.matrix_exp(a * 0.3),
           "matrix_power": lambda lib, a, b: lib.linalg.matrix_power(a, -2),
           "inv_ex": lambda lib, a, b: lib.linalg.inv_ex(a)[0],
           "logdet": lambda lib, a, b: lib.logdet(a),
           "trace": lambda lib, a, b: lib.trace(a),
           "vecdot": lambda lib, a, b: lib.linalg.vecdot(a, a.flip(0)),
           "householder_product": lambda lib, a, b: lib.linalg.householder_product(a, b[:, 0]),
           "multi_dot": lambda lib, a, b: lib.linalg.multi_dot([a, a, b])}
    grad = name not in ("lu_factor",)
    _check(fns[name], _well_conditioned((3, 3)), _c((3, 2)), grad=grad, rtol=1e-5)


def test_geqrf_and_addmm_coefficients():
    a = _c((4, 3))
    _check(lambda lib, x: tuple(lib.geqrf(x)), a, grad=False)
    _check(lambda lib, x, y: lib.addmm(y, x, x.mT, alpha=2j, beta=1 + 1j), a, _c((4, 4)))


@pytest.mark.parametrize("kind", ["complex", "real"])
def test_eig_and_eigvals(kind):
    a = _well_conditioned((2, 3, 3))
    a = a if kind == "complex" else a.real.copy()
    _check(lambda lib, x: lib.linalg.eigvals(x), a)

    def fn(lib, t):  # eigenvectors are unit columns up to a phase: compare |V| (largest entry real, as LAPACK)
        L, V = lib.linalg.eig(t)
        return L, V.abs()
    _check(fn, a)
    _check(lambda lib, x: lib.linalg.eigvals(x), a, grad=False)


def test_eig_errors():
    a = np.ones((2, 3))
    raises_like(lambda: tidal.linalg.eig(tidal.tensor(a)), lambda: torch.linalg.eig(torch.tensor(a)))
    raises_like(lambda: tidal.linalg.eigvals(tidal.tensor(np.ones((2, 2), np.int64))),
                 lambda: torch.linalg.eigvals(torch.tensor(np.ones((2, 2), np.int64))))
    for dtype in ("int32", "bool", "float16"):
        raises_like(lambda: tidal.linalg.eig(tidal.ones(2, 2, dtype=getattr(tidal, dtype))),
                     lambda: torch.linalg.eig(torch.ones(2, 2, dtype=getattr(torch, dtype))))


PHASE_DEPENDENT = {"svd_U": lambda m, x: m.linalg.svd(x)[0].real.sum(),
                   "svd_Vh": lambda m, x: m.linalg.svd(x, full_matrices=False)[2].real.sum(),
                   "eig": lambda m, x: m.linalg.eig(x)[1].real.sum(),
                   "eigh": lambda m, x: m.linalg.eigh(x + x.mH)[1].real.sum()}


@pytest.mark.parametrize("case", sorted(PHASE_DEPENDENT))
def test_phase_dependent_loss_is_refused(case):
    a = _c((3, 3))
    with pytest.raises(RuntimeError) as want:
        PHASE_DEPENDENT[case](torch, torch.tensor(a, requires_grad=True)).backward()
    with pytest.raises(RuntimeError) as got:
        PHASE_DEPENDENT[case](tc, tidal.tensor(a, requires_grad=True)).backward()
    assert str(got.value) == str(want.value)


@pytest.mark.parametrize("p", [None, "fro", "nuc", 1, -1, 2, -2, float("inf")])
def test_cond_is_real(p):
    a = _well_conditioned((2, 3, 3))
    _check(lambda lib, x: lib.linalg.cond(x, p), a, grad=p in (None, 2, -2))


def test_cond_empty_and_singular():
    for shape in ((0, 0), (2, 0, 0)):
        got, want = tc.linalg.cond(tc.zeros(shape, dtype=tc.complex64)), torch.linalg.cond(
            torch.zeros(shape, dtype=torch.complex64))
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] and tuple(got.shape) == tuple(want.shape)
    got = tc.linalg.cond(tc.zeros(2, 2, dtype=tc.complex64), 1)
    want = torch.linalg.cond(torch.zeros(2, 2, dtype=torch.complex64), 1)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1] and float(got) == float(want)


@pytest.mark.parametrize("driver", [None, "gelsd", "gelss", "gelsy", "gels"])
def test_lstsq_outputs(driver):
    a, b = _c((5, 3)), _c((5, 2))

    def fn(lib, x, y):
        return tuple(t for t in lib.linalg.lstsq(x, y, driver=driver) if t.dtype.is_floating_point or t.dtype.is_complex)
    _check(fn, a, b, rtol=1e-6)
    got, want = tc.linalg.lstsq(tc.tensor(a), tc.tensor(b), driver=driver), \
        torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver=driver)
    for g, w in zip(got, want):
        assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1] and tuple(g.shape) == tuple(w.shape)
