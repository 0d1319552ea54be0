"""Gradients of reductions, softmax and scans, compared with torch.

For each op, a sweep over shapes (0-d to 3-d), dims and keepdim in float32 and float64 (and
transposed layouts in float64) runs the same input and the same random upstream gradient
through tidal and torch and compares `.grad`. Then: double backward against
torch.autograd.grad(create_graph=True), finite differences in float64, zeros/ties/NaN
cases, in-place scans, dtype arguments and errors.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tidal

torch = pytest.importorskip("torch")

SHAPES = [(), (5,), (3, 4), (2, 3, 4)]
TOL = {"float32": (1e-4, 1e-5), "float64": (1e-9, 1e-12)}


# -- helpers ----------------------------------------------------------------------------------
def make_array(rng, shape, dtype: str, values: str = "normal", transposed: bool = False) -> np.ndarray:
    """Random data; 'ties' has few distinct values, 'zeros' some exact zeros, 'nan' some NaNs."""
    base = shape[::-1] if transposed else shape
    if values == "ties":
        data = rng.integers(-2, 3, base).astype(float)
    elif values == "positive":
        data = rng.uniform(0.5, 2.0, base)
    else:
        data = rng.normal(0, 1.5, base)
        if values == "zeros":
            data = np.where(rng.random(base) < 0.3, 0.0, data)
        elif values == "nan":
            data = np.where(rng.random(base) < 0.2, np.nan, data)
    arr = np.asarray(data, dtype=dtype)
    return arr.T if transposed else arr


def leaves(arr: np.ndarray):
    """The same leaf in tidal (keeping arr's strides) and torch."""
    return tidal.from_numpy(arr).requires_grad_(), torch.from_numpy(arr.copy()).requires_grad_()


def float_outputs(out) -> list:
    outs = list(out) if isinstance(out, tuple) else [out]
    return [o for o in outs if o.dtype.is_floating_point]


def run_backward(ours, theirs, rng, dtype: str) -> None:
    """Backward through every floating output of both with the same random upstream gradients."""
    ours, theirs = float_outputs(ours), float_outputs(theirs)
    grads = [rng.normal(0, 1, tuple(t.shape)).astype(dtype) for t in theirs]
    tidal.autograd.backward(ours, [tidal.tensor(g) for g in grads])
    torch.autograd.backward(theirs, [torch.from_numpy(g) for g in grads])


def assert_grad(x, tx, dtype: str, what: str = "") -> None:
    assert x.grad is not None, what
    assert tuple(x.grad.shape) == tuple(tx.grad.shape), what
    assert x.grad.dtype is x.dtype, what
    rtol, atol = TOL[dtype]
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol, equal_nan=True, err_msg=what)


def quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# -- the sweep ----------------------------------------------------------------------------------
class Op:
    """How to call an op in both libraries, which dims it takes, and what its inputs look like."""

    def __init__(self, name, call, dims, values="normal", keepdim=True, min_ndim=0):
        self.name, self.call, self.dims, self.values, self.keepdim = name, call, dims, values, keepdim
        self.min_ndim = min_ndim

    def __repr__(self):
        return self.name

    def variants(self, ndim: int) -> list:
        n = max(ndim, 1)
        ints = list(range(-n, n)) if n < 3 else [0, 1, -1]  # enough variety, in less time
        tuples = [(0, -1)] if ndim > 1 else []
        keeps = (False, True) if self.keepdim else (None,)
        if self.dims == "none":
            return [{}]
        if self.dims == "scan":
            return [{"dim": d} for d in ints]
        choices = ints + (tuples if self.dims in ("tuple", "tuple_required") else [])
        out = [] if self.dims.endswith("required") else [{}]
        for d in choices:
            for k in keeps:
                out.append({"dim": d} if k is None else {"dim": d, "keepdim": k})
        return out


def method(name: str, **fixed):
    return lambda lib, x, **kw: getattr(x, name)(**fixed, **kw)


def function(name: str, **fixed):
    return lambda lib, x, **kw: getattr(lib, name)(x, **fixed, **kw)


OPS = [
    Op("sum", method("sum"), "tuple"),
    Op("nansum", method("nansum"), "tuple", values="nan"),
    Op("mean", method("mean"), "tuple"),
    Op("nanmean", method("nanmean"), "tuple", values="nan"),
    Op("prod", method("prod"), "int"),
    Op("prod_zeros", method("prod"), "int", values="zeros"),
    Op("amax", method("amax"), "tuple", values="ties"),
    Op("amin", method("amin"), "tuple", values="ties"),
    Op("max", method("max"), "int", values="ties"),
    Op("min", method("min"), "int", values="ties"),
    Op("aminmax", function("aminmax"), "int", values="ties"),
    Op("var", method("var"), "tuple"),
    Op("var_correction0", method("var", correction=0), "tuple"),
    Op("std", method("std"), "tuple"),
    Op("var_mean", function("var_mean"), "tuple"),
    Op("std_mean", function("std_mean", correction=2), "tuple", min_ndim=2),
    Op("norm", method("norm"), "tuple"),
    Op("norm_1", method("norm", p=1), "tuple"),
    Op("norm_inf", method("norm", p=float("inf")), "tuple", values="ties", min_ndim=1),
    Op("norm_-inf", method("norm", p=-float("inf")), "tuple", min_ndim=1),
    Op("norm_3", method("norm", p=3), "tuple"),
    Op("norm_1.5", method("norm", p=1.5), "tuple"),
    Op("norm_0.5", method("norm", p=0.5), "tuple", values="positive"),
    Op("norm_fro", method("norm", p="fro"), "tuple"),
    Op("logsumexp", function("logsumexp"), "tuple_required"),
    Op("softmax", method("softmax"), "scan"),
    Op("log_softmax", method("log_softmax"), "scan"),
    Op("cumsum", method("cumsum"), "scan"),
    Op("cumprod", method("cumprod"), "scan"),
    Op("cumprod_zeros", method("cumprod"), "scan", values="zeros"),
    Op("logcumsumexp", method("logcumsumexp"), "scan"),
    Op("cummax", method("cummax"), "scan", values="ties"),
    Op("cummin", method("cummin"), "scan", values="ties"),
    Op("median", method("median"), "int"),
    Op("median_ties", method("median"), "none", values="ties"),
    Op("nanmedian", method("nanmedian"), "int"),
    Op("mode", method("mode"), "int_required", values="ties"),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", OPS, ids=repr)
def test_grad_matches_torch(op, dtype, rng):
    for shape in SHAPES:
        if len(shape) < op.min_ndim:
            continue
        for transposed in (False, True) if len(shape) > 1 and dtype == "float64" else (False,):
            arr = make_array(rng, shape, dtype, op.values, transposed)
            for kw in op.variants(len(shape)):
                what = f"{op.name}{shape} {'T ' if transposed else ''}{kw}"
                x, tx = leaves(arr)
                run_backward(quiet(op.call, tidal, x, **kw), quiet(op.call, torch, tx, **kw), rng, dtype)
                assert_grad(x, tx, dtype, what)


# -- double backward ---------------------------------------------------------------------------
DOUBLE = [
    ("sum", lambda lib, x: x.sum(1) ** 2),
    ("sum_all", lambda lib, x: x.sum() ** 2),
    ("mean_keepdim", lambda lib, x: x.mean(0, keepdim=True) ** 3),
    ("mean_tuple", lambda lib, x: x.mean((0, 2)).sin()),
    ("softmax", lambda lib, x: x.softmax(1)),
    ("softmax_dim0", lambda lib, x: x.softmax(0)),
    ("log_softmax", lambda lib, x: x.log_softmax(-1)),
    ("logsumexp", lambda lib, x: lib.logsumexp(x, 1)),
    ("logsumexp_keepdim", lambda lib, x: lib.logsumexp(x, (0, 1), keepdim=True)),
    ("var", lambda lib, x: x.var(1)),
    ("var_all", lambda lib, x: x.var()),
    ("std", lambda lib, x: x.std(0, keepdim=True)),
    ("var_mean", lambda lib, x: lib.var_mean(x, 2)[0] * lib.var_mean(x, 2)[1]),
    ("prod", lambda lib, x: x.prod(1)),
    ("norm", lambda lib, x: x.norm(dim=1)),
    ("norm_3", lambda lib, x: x.norm(3)),
    ("amax", lambda lib, x: x.amax(1) ** 2),
    ("max_dim", lambda lib, x: x.max(2).values ** 2),
    ("cumsum", lambda lib, x: x.cumsum(1) ** 2),
    ("cumprod", lambda lib, x: x.cumprod(2)),
    ("logcumsumexp", lambda lib, x: x.logcumsumexp(1)),
    ("cummax", lambda lib, x: x.cummax(2).values ** 2),
    ("median_dim", lambda lib, x: x.median(0).values.exp()),
]


@pytest.mark.parametrize("name,fn", DOUBLE, ids=[d[0] for d in DOUBLE])
def test_double_backward_matches_torch(name, fn, rng):
    arr = make_array(rng, (2, 3, 4), "float64")
    x, tx = leaves(arr)
    ty = fn(torch, tx)
    g_arr = rng.normal(0, 1, tuple(ty.shape))
    w_arr = rng.normal(0, 1, arr.shape)
    g, tg = tidal.tensor(g_arr, requires_grad=True), torch.tensor(g_arr, requires_grad=True)
    (gx,) = tidal.autograd.grad(fn(tidal, x), x, g, create_graph=True)
    (tgx,) = torch.autograd.grad(ty, tx, tg, create_graph=True)
    np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy(), rtol=1e-9, atol=1e-12)
    (gx * tidal.tensor(w_arr)).sum().backward()
    (tgx * torch.tensor(w_arr)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg="d/dx")
    np.testing.assert_allclose(g.grad.numpy(), tg.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg="d/dgrad")


def test_prod_second_derivative_with_zeros():
    arr = np.array([[1.5, 0.0, 3.0, 2.0], [2.0, 0.0, 3.0, 0.0], [0.5, 2.0, 3.0, 4.0]])
    for call in (lambda x: x.prod(1), lambda x: x.prod(0), lambda x: x.prod()):
        x, tx = leaves(arr)
        (gx,) = tidal.autograd.grad(call(x).sum(), x, create_graph=True)
        (tgx,) = torch.autograd.grad(call(tx).sum(), tx, create_graph=True)
        np.testing.assert_allclose(gx.detach().numpy(), tgx.detach().numpy())
        (gx * gx).sum().backward()
        (tgx * tgx).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


# -- finite differences --------------------------------------------------------------------------
FINITE = [
    ("prod", lambda x: x.prod(1)), ("var", lambda x: x.var(0)), ("std", lambda x: x.std(1, correction=0)),
    ("norm_2.5", lambda x: x.norm(2.5, 1)), ("logsumexp", lambda x: tidal.logsumexp(x, 1)),
    ("softmax", lambda x: x.softmax(0)), ("log_softmax", lambda x: x.log_softmax(1)),
    ("cumprod", lambda x: x.cumprod(1)), ("logcumsumexp", lambda x: x.logcumsumexp(0)),
    ("nanmean", lambda x: x.nanmean(1)),
]


@pytest.mark.parametrize("name,fn", FINITE, ids=[f[0] for f in FINITE])
def test_finite_differences(name, fn, rng):
    base = rng.normal(0, 1, (3, 4))
    g = rng.normal(0, 1, tuple(fn(tidal.tensor(base)).shape))
    x = tidal.tensor(base, requires_grad=True)
    fn(x).backward(tidal.tensor(g))
    eps = 1e-6
    numeric = np.zeros_like(base)
    for i in np.ndindex(base.shape):
        step = np.zeros_like(base)
        step[i] = eps
        numeric[i] = ((fn(tidal.tensor(base + step)).numpy() - fn(tidal.tensor(base - step)).numpy()) * g).sum() / (
            2 * eps)
    np.testing.assert_allclose(x.grad.numpy(), numeric, rtol=1e-5, atol=1e-7)


# -- special cases ---------------------------------------------------------------------------------
def test_sum_backward_on_non_contiguous_and_0d():
    arr = np.arange(24.0).reshape(4, 6)[:, ::2].T
    x = tidal.from_numpy(arr).requires_grad_()
    assert not x.is_contiguous()
    x.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((3, 4)))
    scalar = tidal.tensor(2.5, requires_grad=True)
    scalar.sum().backward()
    assert scalar.grad.shape == () and scalar.grad.item() == 1.0
    for call in (lambda t: t.mean(), lambda t: t.amax(), lambda t: t.max(0)[0], lambda t: t.cumsum(0),
                 lambda t: t.softmax(0), lambda t: t.prod()):
        s = tidal.tensor(1.5, requires_grad=True)
        ts = torch.tensor(1.5, requires_grad=True)
        call(s).backward()
        call(ts).backward()
        assert s.grad.shape == () and s.grad.item() == ts.grad.item()


def test_non_contiguous_upstream_gradient():
    x, tx = leaves(np.arange(12.0).reshape(3, 4))
    g = np.arange(6.0).reshape(2, 3).T
    x.softmax(1).cumsum(0).sum(1).backward(tidal.from_numpy(g[:, 0].copy()))
    tx.softmax(1).cumsum(0).sum(1).backward(torch.from_numpy(g[:, 0].copy()))
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10)
    y, ty = leaves(np.arange(12.0).reshape(3, 4))
    y.sum(0).backward(tidal.from_numpy(np.arange(8.0).reshape(4, 2))[:, 1])
    ty.sum(0).backward(torch.arange(8.0, dtype=torch.float64).reshape(4, 2)[:, 1])
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy())


def test_empty_inputs_get_empty_gradients():
    for call in (lambda t: t.sum(), lambda t: t.sum(0), lambda t: t.mean(1), lambda t: t.prod(1),
                 lambda t: t.softmax(1), lambda t: t.log_softmax(0), lambda t: t.cumprod(1), lambda t: t.cumsum(0),
                 lambda t: t.logcumsumexp(1), lambda t: t.norm(dim=1), lambda t: t.amax(0)):
        x = tidal.zeros(2, 0, requires_grad=True)
        call(x).sum().backward()
        assert x.grad.shape == (2, 0)


def test_nan_and_degenerate_cases_match_torch():
    cases = [
        ([1.0, np.nan, 3.0, 3.0], lambda t: t.amax()),
        ([1.0, np.nan, 3.0, 3.0], lambda t: t.max()),
        ([1.0, np.nan, 3.0], lambda t: t.median()),
        ([1.0, np.nan, 3.0], lambda t: t.nanmedian()),
        ([3.0], lambda t: t.var(0)),
        ([3.0, 3.0], lambda t: t.std()),
        ([0.0, 0.0], lambda t: t.norm()),
        ([0.0, 0.0], lambda t: t.norm(p=0.5)),
        ([0.0, 0.0], lambda t: t.norm(p=3)),
        ([-np.inf, -np.inf], lambda t: t.logsumexp(0)),
        ([1.0, -np.inf, 2.0], lambda t: t.logcumsumexp(0)),
        ([0.0, 0.0, 2.0], lambda t: t.prod()),
        ([2.0, 0.0, 3.0, 0.0, 5.0], lambda t: t.cumprod(0)),
        ([0.0, 2.0, 3.0], lambda t: t.cumprod(0)),
    ]
    for values, call in cases:
        x, tx = leaves(np.array(values))
        quiet(call, x).sum().backward()
        quiet(call, tx).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), equal_nan=True, err_msg=str(values))
    x, tx = leaves(np.array([0.0, 1.0]))
    x.norm(p=0).backward()
    tx.norm(p=0).backward()
    assert x.grad is None and tx.grad is None


def test_dtype_arguments_give_gradients_in_the_input_dtype():
    arr = np.random.default_rng(0).normal(0, 1, (3, 4)).astype(np.float32)
    for call in (lambda t, lib: t.sum(1, dtype=lib.float64), lambda t, lib: t.cumsum(0, dtype=lib.float64),
                 lambda t, lib: t.softmax(1, dtype=lib.float64), lambda t, lib: t.log_softmax(0, dtype=lib.float64),
                 lambda t, lib: t.norm(dim=1, dtype=lib.float64), lambda t, lib: t.prod(1, dtype=lib.float64)):
        x, tx = leaves(arr)
        run_backward(call(x, tidal), call(tx, torch), np.random.default_rng(1), "float64")
        assert_grad(x, tx, "float32")


def test_half_precision_softmax_gradients():
    arr = np.random.default_rng(0).normal(0, 1, (4, 5)).astype(np.float32)
    g = np.random.default_rng(1).normal(0, 1, (4, 5)).astype(np.float32)
    for name in ("float16", "bfloat16"):
        x = tidal.tensor(arr).to(getattr(tidal, name)).requires_grad_()
        tx = torch.tensor(arr).to(getattr(torch, name)).requires_grad_()
        x.softmax(1).backward(tidal.tensor(g).to(getattr(tidal, name)))
        tx.softmax(1).backward(torch.tensor(g).to(getattr(torch, name)))
        assert x.grad.dtype is getattr(tidal, name)
        np.testing.assert_allclose(x.grad.float().numpy(), tx.grad.float().numpy(), rtol=3e-2, atol=3e-2)


def test_in_place_scans_record_their_gradients():
    for name in ("cumsum_", "cumprod_"):
        arr = np.array([[1.0, 2.0, 0.5], [3.0, -1.0, 2.0]])
        x, tx = leaves(arr)
        y, ty = x * 1, tx * 1
        getattr(y, name)(1)
        getattr(ty, name)(1)
        assert type(y.grad_fn).__name__ == ty.grad_fn.name()
        (y * y).sum().backward()
        (ty * ty).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    leaf = tidal.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        leaf.cumsum_(0)


def test_node_names_and_saved_output_checks():
    x, tx = leaves(np.array([[1.0, 2.0], [3.0, 4.0]]))
    calls = [lambda t: t.sum(), lambda t: t.sum(1), lambda t: t.mean(1), lambda t: t.prod(), lambda t: t.prod(1),
             lambda t: t.amax(0), lambda t: t.max(), lambda t: t.max(1).values, lambda t: t.min(0).values,
             lambda t: t.median(), lambda t: t.median(0).values, lambda t: t.nanmedian(1).values,
             lambda t: t.softmax(1), lambda t: t.log_softmax(1), lambda t: t.norm(), lambda t: t.cumsum(0),
             lambda t: t.var(1), lambda t: t.std(), lambda t: t.logsumexp(1), lambda t: t.cummin(0).values,
             lambda t: t.cumprod(0), lambda t: t.logcumsumexp(1), lambda t: t.mode(1).values]
    for call in calls:
        assert type(call(x).grad_fn).__name__ == call(tx).grad_fn.name()
    assert type(tidal.var_mean(x, 1)[1].grad_fn).__name__ == "VarMeanBackward0"
    assert not x.max(1).indices.requires_grad and not x.argmax().requires_grad
    y = x.softmax(1)
    y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    with tidal.no_grad():
        assert x.sum().grad_fn is None and x.softmax(0).grad_fn is None


def test_nuclear_norm_backward():
    """norm(p='nuc') is linalg's matrix norm: its gradient (U Vh) comes from svdvals, as in torch."""
    values = [[1.0, 2.0], [3.0, 4.0]]
    x, tx = tidal.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    x.norm(p="nuc").backward()
    tx.norm(p="nuc").backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_softmax_saves_only_its_output():
    x = tidal.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x.softmax(1)
    saved = y.grad_fn.saved_tensors
    ref = torch.tensor([[1.0, 2.0, 3.0]], requires_grad=True).softmax(1)
    # as torch's _saved_result: the output's values and node, not the output object (no out -> node -> out cycle)
    assert len(saved) == 1 and saved[0] is not y and saved[0].grad_fn is y.grad_fn
    assert (ref.grad_fn._saved_result is ref, ref.grad_fn._saved_result.grad_fn is ref.grad_fn) == (False, True)
    np.testing.assert_array_equal(saved[0].detach().numpy(), y.detach().numpy())
    assert len(tidal.log_softmax(x, 1).grad_fn.saved_tensors) == 1
