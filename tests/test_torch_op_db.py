"""PyTorch's op database against tidal.compat: values, gradients and errors per op (tests/torch_op_db.py)."""
import pytest

import torch_op_db as db


def _params(kind, keep=lambda op: True):
    out = []
    for op, fn in db.PRESENT:
        if not keep(op):
            continue
        name = db.op_id(op)
        reason = db.KNOWN.get((kind, name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(op, fn, id=name, marks=marks))
    return out


@pytest.mark.parametrize("op, fn", _params("values"))
def test_values(op, fn):
    db.check_values(op, fn)


@pytest.mark.parametrize("op, fn", _params("grad", db.differentiable))
def test_grad(op, fn):
    db.check_grad(op, fn)


@pytest.mark.parametrize("op, fn", _params("errors", db.has_errors))
def test_errors(op, fn):
    db.check_errors(op, fn)
