"""Every op of PyTorch's op database that takes complex numbers, called with a conj view as its input (torch's and
tidal's, holding the same values): tidal's results equal torch's, conjugate and negative bits included
(complex64), and so does the gradient of the leaf under the view (complex128)."""
import warnings

import pytest
import torch

import torch_op_db as db

# ops whose result carries another bit than torch's (values agree): torch copies where tidal keeps a view
# (unsafe_split/unsafe_chunk, pixel_(un)shuffle, diff), or returns its input where tidal computes (positive,
# masked.prod of one element)
KNOWN_BITS = {"unsafe_chunk", "unsafe_split", "positive", "diff", "nn.functional.pixel_shuffle",
              "nn.functional.pixel_unshuffle", "masked.prod"}


def _complex_samples():
    out = []
    for op, fn in db.PRESENT:
        if torch.complex64 not in op.supported_dtypes("cpu") or op.name in db.SIGN_FREE or op.name in db.TIES:
            continue
        marks = [pytest.mark.xfail(strict=True, reason="the result's bits differ from torch's")] \
            if db.op_id(op) in KNOWN_BITS else []
        out.append(pytest.param(op, fn, id=db.op_id(op), marks=marks))
    return out


def _first_sample(op, dtype):
    """The op's first op_db sample whose input is a `dtype` tensor and whose result is not random (else a skip)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = [s for s in db._samples(op, dtype, 1) if isinstance(s.input, torch.Tensor)
                   and s.input.dtype == dtype and not db._is_random(op, s)]
    if not samples:
        pytest.skip(f"no {str(dtype).replace('torch.', '')} tensor input")
    return samples[0]


@pytest.mark.parametrize("op, fn", _complex_samples())
def test_conj_view_input(op, fn):
    sample = _first_sample(op, torch.complex64)
    view = sample.input.detach().conj_physical().conj()  # a conj view holding the sample's values
    try:
        ref = op.op(view, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - torch refuses the sample itself
        pytest.skip("torch refuses the sample")
    memo = {"storage": False}
    try:
        mine_input = db.tidal_tensor(view.conj()).conj()  # tidal's memory holds the conjugates too
        args, kwargs = db.to_tidal(tuple(sample.args), memo), db.to_tidal(dict(sample.kwargs), memo)
    except db.Unconvertible:
        pytest.skip("an argument tidal cannot take")
    assert mine_input.is_conj()
    mine = fn(mine_input, *args, **kwargs)
    db.materialize(mine)
    db.compare(mine, ref)


def _outputs(value) -> list:
    if hasattr(value, "requires_grad") and hasattr(value, "dtype"):
        return [value] if value.requires_grad and (value.is_complex() or value.is_floating_point()) else []
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _outputs(v)]
    return []


# a difference of the op itself, not of conj views: torch's triangular_solve marks its cloned_coefficient output as
# requiring grad when only its first input does
KNOWN_GRAD = {"triangular_solve": "tidal's cloned_coefficient does not require grad when only the input does"}


def _differentiable_samples():
    out = []
    for op, fn in db.PRESENT:
        if torch.complex128 in op.supported_backward_dtypes("cpu") and db.differentiable(op) and \
                op.name not in db.SIGN_FREE and op.name not in db.TIES and op.name not in db.STORAGE:
            reason = KNOWN_GRAD.get(db.op_id(op))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(op, fn, id=db.op_id(op), marks=marks))
    return out


@pytest.mark.parametrize("op, fn", _differentiable_samples())
def test_gradient_through_a_conj_view_input(op, fn):
    """The gradient of a leaf whose conj view is the op's input (complex128, the first sample), against torch."""
    import numpy as np
    import tidal.compat as tc

    sample = _first_sample(op, torch.complex128)
    leaf = sample.input.detach().clone().requires_grad_()
    try:
        outs = _outputs(op.op(leaf.conj(), *sample.args, **sample.kwargs))
    except Exception:  # noqa: BLE001 - torch refuses the sample itself
        pytest.skip("torch refuses the sample")
    if not outs:
        pytest.skip("no differentiable output")
    torch.manual_seed(0)
    cotangents = [torch.randn(o.shape, dtype=o.dtype) for o in outs]
    torch.autograd.backward([(o * c).real.sum() if o.is_complex() else (o * c).sum() for o, c in zip(outs, cotangents)])
    memo = {"storage": False}
    try:
        mine_leaf = db.tidal_tensor(leaf.detach(), requires_grad=True)
        args, kwargs = db.to_tidal(tuple(sample.args), memo), db.to_tidal(dict(sample.kwargs), memo)
    except db.Unconvertible:
        pytest.skip("an argument tidal cannot take")
    mine = _outputs(fn(mine_leaf.conj(), *args, **kwargs))
    assert len(mine) == len(outs)
    tc.autograd.backward([(o * tc.tensor(c.numpy())).real.sum() if o.is_complex() else (o * tc.tensor(c.numpy())).sum()
                          for o, c in zip(mine, cotangents)])
    np.testing.assert_allclose(mine_leaf.grad.resolve_conj().numpy(), leaf.grad.resolve_conj().numpy(), rtol=1e-6,
                               atol=1e-8)
