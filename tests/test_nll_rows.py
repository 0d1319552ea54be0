"""nll_loss / cross_entropy with class-index targets through one kernel each way (ops/rowwise/nll_rows.py) against
torch: every reduction, ignore_index (some and all rows), unbatched input, label smoothing, double backward, and the
out-of-range target error with the runtime usable after it."""
import numpy as np
import pytest
import torch

import tidal


def _run(lib, fn, x, t, **kwargs):
    xt = lib.tensor(x, requires_grad=True)
    loss = getattr(lib.nn.functional, fn)(xt, lib.tensor(t), **kwargs)
    weights = np.linspace(0.5, 1.5, loss.numel()).reshape(tuple(loss.shape))
    (loss * lib.tensor(weights, dtype=loss.dtype)).sum().backward()
    return loss.detach().numpy(), xt.grad.numpy(), type(loss.grad_fn).__name__


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", ["none", "some", "all"])
def test_matches_torch(fn, dtype, reduction, ignore):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((64, 11)).astype(dtype)
    t = rng.integers(0, 11, 64)
    if ignore == "some":
        t[::3] = -100
    elif ignore == "all":
        t[:] = 4
    kwargs = dict(reduction=reduction, ignore_index=4 if ignore == "all" else -100)
    got, want = _run(tidal, fn, x, t, **kwargs), _run(torch, fn, x, t, **kwargs)
    tol = 2e-6 if dtype == np.float32 else 1e-13
    for a, e in zip(got[:2], want[:2]):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=tol, atol=tol)
    assert got[2] == want[2]


def test_unbatched_label_smoothing_and_double_backward():
    rng = np.random.default_rng(4)
    x, t = rng.standard_normal((16, 7)), rng.integers(0, 7, 16)
    results = []
    for lib in (tidal, torch):
        single = lib.nn.functional.nll_loss(lib.tensor(x[0]), lib.tensor(t[0]), reduction="none")
        smooth = lib.nn.functional.cross_entropy(lib.tensor(x), lib.tensor(t), label_smoothing=0.2)
        xt = lib.tensor(x, requires_grad=True)
        loss = lib.nn.functional.cross_entropy(xt, lib.tensor(t))
        (gx,) = lib.autograd.grad(loss, xt, create_graph=True)
        (gx * gx).sum().backward()
        results.append((single.numpy(), smooth.numpy(), gx.detach().numpy(), xt.grad.numpy()))
    for a, e in zip(*results):
        assert a.shape == e.shape
        np.testing.assert_allclose(a, e, rtol=1e-12, atol=1e-14)


def test_target_out_of_range_raises_and_runtime_stays_usable():
    x = tidal.randn(4, 3)
    target = tidal.tensor([0, 1, 2, 0]) + tidal.tensor([0, 0, 5, 0])  # not yet computed: the kernel checks it
    with pytest.raises(IndexError, match="Target 7 is out of bounds"):  # at the call, or at the sync (async)
        tidal.nn.functional.cross_entropy(x, target).item()
    with pytest.raises(IndexError, match="^Target 3 is out of bounds.$"):
        torch.nn.functional.cross_entropy(torch.randn(4, 3), torch.tensor([0, 1, 3, 0]))
    ok = tidal.nn.functional.cross_entropy(tidal.zeros(4, 3), tidal.tensor([0, 1, 2, 0]))
    assert abs(ok.item() - np.log(3)) < 1e-6
