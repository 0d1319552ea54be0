"""Every op of PyTorch's op database that takes complex64, called with a conj view as its input (torch's and
tidal's, holding the same values): tidal's results equal torch's, conjugate and negative bits included."""
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


@pytest.mark.parametrize("op, fn", _complex_samples())
def test_conj_view_input(op, fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        samples = [s for s in db._samples(op, torch.complex64, 1) if isinstance(s.input, torch.Tensor)
                   and s.input.dtype == torch.complex64 and not db._is_random(op, s)]
    if not samples:
        pytest.skip("no complex64 tensor input")
    sample = samples[0]
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
