"""In-place writes through real/imag/view_as_real/view_as_complex views of complex (or real-pair) tensors in
the graph: CopySlices and refreshed views move gradients between the two dtypes as torch does."""
import numpy as np
import pytest
import torch

import tidal.compat as tc

Z0 = np.array([1 + 2j, 3 - 1j, 0.5j], np.complex64)
R0 = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
W = np.array([0.3 - 1j, 2 + 0.5j, -1 + 1j], np.complex64)
B0 = np.array([1.0, 2.0, 3.0], np.float32)


CASES = {
    "real_copy_": lambda m, y, b, x: y.real.copy_(b),
    "imag_mul_": lambda m, y, b, x: y.imag.mul_(b),
    "imag_setitem": lambda m, y, b, x: y.imag.__setitem__(1, b[0] * 3),
    "real_property_set": lambda m, y, b, x: setattr(y, "real", b),
    "view_as_real_column_add_": lambda m, y, b, x: m.view_as_real(y)[:, 1].add_(b),
    "real_of_slice_mul_": lambda m, y, b, x: y[1:].real.mul_(b[1:]),
    "two_writes": lambda m, y, b, x: (y.real.mul_(b), y.imag.add_(b * b)),
}


def _run(m, case):
    a = m.tensor(Z0, requires_grad=True)
    b = m.tensor(B0, requires_grad=True)
    x = m.tensor(R0, requires_grad=True)
    y = a * 2
    if case in CASES:
        CASES[case](m, y, b, x)
        out = y
        loss = (y * m.tensor(W)).real.sum() + (y * m.tensor(W)).abs().sum()
    elif case == "complex_view_of_real_pairs":
        r = x * 1
        m.view_as_complex(r).mul_(m.tensor(W))
        out, loss = r, (r * m.tensor(R0)).sum()
    elif case == "refreshed_part_views":
        yr, yi = y.real, y.imag
        y.mul_(m.tensor(W))
        out, loss = y, (yr * b).sum() + (yi * b * b).sum()
    elif case == "refreshed_after_part_write":
        yi = y.imag
        y.real.mul_(b)
        out, loss = y, (yi * b).sum() + (y * m.tensor(W)).real.sum()
    else:  # "refreshed_complex_view"
        r = x * 1
        c = m.view_as_complex(r)
        r.mul_(3)
        out, loss = c, (c * m.tensor(W)).real.sum()
    loss.backward()
    return out.detach(), [t.grad for t in (a, b, x)]


@pytest.mark.parametrize("case", sorted(CASES) + ["complex_view_of_real_pairs", "refreshed_part_views",
                                                  "refreshed_after_part_write", "refreshed_complex_view"])
def test_write_through_parts_matches_torch(case):
    got_out, got = _run(tc, case)
    want_out, want = _run(torch, case)
    np.testing.assert_allclose(got_out.numpy(), want_out.numpy(), rtol=1e-6)
    for g, w in zip(got, want):
        assert (g is None) == (w is None)
        if w is not None:
            assert str(g.dtype).split(".")[-1] == str(w.dtype).split(".")[-1]
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)


def test_grad_fn_names():
    a = tc.tensor(Z0, requires_grad=True)
    y = a * 2
    y.imag.mul_(2)
    assert type(y.grad_fn).__name__ == "CopySlices"
