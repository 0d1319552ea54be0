"""PyTorch's op database against tidal.compat: values, gradients, second gradients and errors per op (tests/torch_op_db.py, tests/torch_op_db_grads.py)."""
import pytest

import torch_op_db as db
import torch_op_db_grads as grads


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
    grads.check_grad(op, fn)


@pytest.mark.parametrize("op, fn", _params("gradgrad", grads.twice_differentiable))
def test_gradgrad(op, fn):
    grads.check_gradgrad(op, fn)


@pytest.mark.parametrize("op, fn", _params("errors", db.has_errors))
def test_errors(op, fn):
    db.check_errors(op, fn)
