"""Edge-input variants of torch's op database against tidal.compat, one test per (kind, op) (tests/op_edges.py)."""
import pytest

import op_edges as edges
import torch_op_db as db


def _params():
    out = []
    for op, fn in db.PRESENT:  # op by op: an op's kinds share its samples
        for kind in edges.KINDS:
            name = db.op_id(op)
            reason = edges.KNOWN.get((kind, name))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(kind, op, fn, id=f"{kind}-{name}", marks=marks))
    return out


class _Summary:
    """Prints the edge summary at the end of the run."""

    def pytest_terminal_summary(self, terminalreporter):
        if any(edges.RESULTS.values()):
            terminalreporter.write_sep("=", "op edges")
            terminalreporter.write_line(edges.summary())


@pytest.fixture(scope="module", autouse=True)
def _summary(request):
    """Registers the summary printer once this file's tests run (a test module can't declare hooks)."""
    manager = request.config.pluginmanager
    if manager.get_plugin("op_edges_summary") is None:
        manager.register(_Summary(), "op_edges_summary")
    yield


@pytest.mark.parametrize("kind, op, fn", _params())
def test_edges(kind, op, fn):
    edges.check(op, fn, kind)
