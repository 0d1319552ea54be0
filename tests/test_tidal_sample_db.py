"""Ops torch's op_db lacks, from tidal's own sample database (tests/tidal_sample_db.py): values (float32,
and float64 where gradients are compared) and gradients against torch."""
import numpy as np
import pytest
import torch

import tidal
from tidal_sample_db import RECORDS, Record, call_op, as_numpy, assert_same, build

pytestmark = pytest.mark.filterwarnings("ignore:.*deprecated")  # both libraries warn alike for the old names


def _ids(records):
    return [r.name for r in records]


@pytest.mark.parametrize("record", RECORDS, ids=_ids(RECORDS))
def test_values(record: Record):
    dtypes = (torch.float32, torch.float64) if record.grad else (torch.float32,)
    for dtype in dtypes:
        for k, sample in enumerate(record.samples):
            targs, tkw = build(torch, sample, k, dtype)
            margs, mkw = build(tidal.compat, sample, k, dtype)
            want = as_numpy(call_op(record, torch, targs, tkw))
            got = as_numpy(call_op(record, tidal.compat, margs, mkw))
            assert_same(got, want, record.rtol, record.atol, f"{record.name} sample {k} {dtype}")
            if record.inplace:
                assert_same(as_numpy(margs[0]), as_numpy(targs[0]), record.rtol, record.atol, "modified input")


GRAD = [r for r in RECORDS if r.grad]


def _float_outputs(out) -> list:
    if isinstance(out, (torch.Tensor, tidal.Tensor)):
        return [out] if out.dtype in (torch.float64, tidal.float64) else []
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _float_outputs(o)]
    return []


@pytest.mark.parametrize("record", GRAD, ids=_ids(GRAD))
def test_grad(record: Record):
    for k, sample in enumerate(record.samples):
        targs, tkw = build(torch, sample, k, torch.float64, requires_grad=True)
        margs, mkw = build(tidal.compat, sample, k, torch.float64, requires_grad=True)
        touts = _float_outputs(call_op(record, torch, targs, tkw))
        mouts = _float_outputs(call_op(record, tidal.compat, margs, mkw))
        assert len(mouts) == len(touts)
        rng = np.random.default_rng(100 + k)
        cots = [rng.standard_normal(tuple(o.shape)) for o in touts]
        tleaves = [a for a in targs if isinstance(a, torch.Tensor)]
        mleaves = [a for a in margs if isinstance(a, tidal.Tensor)]
        want = torch.autograd.grad(sum((o * torch.tensor(c)).sum() for o, c in zip(touts, cots)), tleaves,
                                   allow_unused=True)
        got = tidal.autograd.grad(sum((o * tidal.tensor(c)).sum() for o, c in zip(mouts, cots)), mleaves,
                                  allow_unused=True)
        for i, (g, w) in enumerate(zip(got, want)):
            if w is None:
                assert g is None or not g.numpy().any(), f"grad[{i}]: torch has none"
                continue
            assert g is not None, f"grad[{i}] missing"
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6, atol=1e-8,
                                       err_msg=f"{record.name} sample {k} grad[{i}]")
