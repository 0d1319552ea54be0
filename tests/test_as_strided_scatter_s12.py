"""as_strided_scatter against torch: the copy keeps the input's whole storage, strides and offset (torch's
clone_preserve_strides), so as_strided addresses the same storage positions in it; values, result strides and
storage offset, gradients for a contiguous input, and the size error."""
import numpy as np
import pytest
import torch

import tidal.compat as tc

RNG = np.random.default_rng(1217)
BASE = RNG.standard_normal(24).astype("float32")

INPUTS = {  # (how the input views a 24-element storage, as_strided_scatter's size, stride, storage_offset)
    "contiguous": (lambda t: t.reshape(4, 6), (2, 3), (6, 1), None),
    "transposed": (lambda t: t.reshape(4, 6).t(), (3, 2), (1, 6), 1),
    "sliced_offset": (lambda t: t[5:17].reshape(3, 4), (2, 2), (4, 1), None),
    "stepped": (lambda t: t.reshape(4, 6)[:, ::2], (2, 2), (1, 6), 7),
    "gaps_written": (lambda t: t[::3], (5,), (1,), 2),  # writes storage positions the input does not show
    "expanded": (lambda t: t[:3].reshape(3, 1).expand(3, 4), (2,), (1,), 0),
}


@pytest.mark.parametrize("case", list(INPUTS))
def test_as_strided_scatter_as_torch(case):
    make, size, stride, offset = INPUTS[case]
    src = RNG.standard_normal(size).astype("float32")
    out = {}
    for L in (tc, torch):
        x = make(L.tensor(BASE.copy()))
        r = L.as_strided_scatter(x, L.tensor(src), size, stride, offset)
        out[L] = (r, x)
    (got, x), (want, t) = out[tc], out[torch]
    assert got.shape == want.shape and got.stride() == want.stride()
    assert got.storage_offset() == want.storage_offset()
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_array_equal(x.numpy(), t.numpy())  # the input is untouched
    np.testing.assert_array_equal(tc.Tensor.as_strided_scatter(x, tc.tensor(src), size, stride, offset).numpy(),
                                  want.numpy())


def test_as_strided_scatter_gradients():
    """src's gradient as torch's; input's is the cotangent with the written region zeroed (torch's own OpInfo marks
    its input gradient an expected failure on the CPU: it gives the region's instead)."""
    a, b = BASE[:12].reshape(3, 4).copy(), RNG.standard_normal((2, 2)).astype("float32")
    cot = np.arange(12.0, dtype="float32").reshape(3, 4)
    grads = {}
    for L in (tc, torch):
        x, s = L.tensor(a, requires_grad=True), L.tensor(b, requires_grad=True)
        y = L.as_strided_scatter(x * 2, s * 3, (2, 2), (4, 1), 1)
        (y * L.tensor(cot)).sum().backward()
        grads[L] = (x.grad.numpy(), s.grad.numpy())
    np.testing.assert_allclose(grads[tc][1], grads[torch][1], rtol=1e-6)
    want = 2 * cot.copy().reshape(-1)
    want[[1, 2, 5, 6]] = 0.0
    np.testing.assert_allclose(grads[tc][0], want.reshape(3, 4), rtol=1e-6)


def test_as_strided_scatter_size_error():
    for L in (tc, torch):
        with pytest.raises(RuntimeError, match="expected src to have a size equal to the slice of self"):
            L.as_strided_scatter(L.zeros(3, 4), L.ones(3), (2, 2), (4, 1), 0)
