"""Layer norm's one-kernel forward and backward (ops/rowwise/norm_rows.py) against torch: values, gradients of input,
weight and bias, double backward through the composite, both the compiled and the NumPy loops."""
import numba  # noqa: F401  (loaded, so the compiled loops run; `loops` also takes the NumPy path)
import numpy as np
import pytest
import torch

import tidal
from tidal.ops.rowwise import norm_rows

from kernel_loops import compile_here, loops_of  # noqa: F401  (fixtures)

pytestmark = pytest.mark.usefixtures("compile_here")
loops = loops_of(norm_rows)


def _run(lib, x, w, b, g, shape, eps):
    xt = lib.tensor(x, requires_grad=True)
    wt = None if w is None else lib.tensor(w, requires_grad=True)
    bt = None if b is None else lib.tensor(b, requires_grad=True)
    y = lib.nn.functional.layer_norm(xt, shape, wt, bt, eps)
    (y * lib.tensor(g)).sum().backward()
    return [y.detach().numpy(), xt.grad.numpy()] + [t.grad.numpy() for t in (wt, bt) if t is not None]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape,normalized", [((32, 32, 64), (64,)), ((6, 5, 4), (5, 4)), ((7, 65), (65,)),
                                              ((3,), (3,))])
@pytest.mark.parametrize("affine", ["both", "weight", "bias", "none"])
def test_layer_norm_matches_torch(loops, dtype, shape, normalized, affine):
    rng = np.random.default_rng(len(shape) * 7 + len(normalized))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    w = rng.standard_normal(normalized).astype(dtype) if affine in ("both", "weight") else None
    b = rng.standard_normal(normalized).astype(dtype) if affine in ("both", "bias") else None
    g = rng.standard_normal(shape).astype(dtype)
    got, want = _run(tidal, x, w, b, g, normalized, 1e-5), _run(torch, x, w, b, g, normalized, 1e-5)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    assert len(got) == len(want)
    for a, e in zip(got, want):
        assert a.dtype == e.dtype
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol * 10)


def test_layer_norm_node_and_double_backward(loops):
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((4, 6)), rng.standard_normal(6)
    results = []
    for lib in (tidal, torch):
        xt, wt = lib.tensor(x, requires_grad=True), lib.tensor(w, requires_grad=True)
        y = lib.nn.functional.layer_norm(xt, (6,), wt, None, 1e-3)
        assert type(y.grad_fn).__name__ == "NativeLayerNormBackward0"
        (gx,) = lib.autograd.grad((y * y.detach().exp()).sum(), xt, create_graph=True)
        (gx * gx).sum().backward()
        results.append((gx.detach().numpy(), xt.grad.numpy(), wt.grad.numpy()))
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-10, atol=1e-12)


def test_layer_norm_strided_input_expanded_gradient_and_constant_rows(loops):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 8)).astype(np.float32)
    x[3] = 2.5  # a constant row: variance 0, rstd 1/sqrt(eps)
    results = []
    for lib in (tidal, torch):
        xt = lib.tensor(x).t().contiguous().t().requires_grad_()  # a transposed (non-contiguous) leaf
        ln = lib.nn.LayerNorm(8)
        y = ln(xt)
        y.sum().backward()  # an expanded (stride 0) output gradient
        (h,) = lib.autograd.grad(ln(xt)[:, 2].sum(), ln.weight)
        results.append((y.detach().numpy(), xt.grad.numpy(), ln.weight.grad.numpy(), ln.bias.grad.numpy(),
                        h.numpy()))
    for a, e in zip(*results):
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


def test_half_inputs_and_errors_keep_torch_behaviour():
    x = np.random.default_rng(1).standard_normal((4, 8)).astype(np.float32)
    for dtype in ("bfloat16", "float16"):
        got = tidal.nn.functional.layer_norm(tidal.tensor(x).to(getattr(tidal, dtype)), (8,))
        want = torch.nn.functional.layer_norm(torch.tensor(x).to(getattr(torch, dtype)), (8,))
        assert str(got.dtype) == str(want.dtype).replace("torch", "tidal")
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=1e-2, atol=1e-2)
    for lib in (tidal, torch):
        with pytest.raises(RuntimeError, match="Given normalized_shape=\\[5\\], expected input with shape"):
            lib.nn.functional.layer_norm(lib.ones(4, 8), (5,))
        with pytest.raises(RuntimeError, match="Expected weight to be of same shape as normalized_shape"):
            lib.nn.functional.layer_norm(lib.ones(4, 8), (8,), lib.ones(7))
    assert tidal.nn.functional.layer_norm(tidal.ones(2, 8), (8,)).sum().item() == 0.0  # still usable
