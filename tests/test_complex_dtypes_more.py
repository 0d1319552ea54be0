"""Complex conversions torch scripts reach for (cfloat/cdouble) and tidal's clear refusal of complex32."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc


@pytest.mark.parametrize("method", ["cfloat", "cdouble"])
@pytest.mark.parametrize("src", ["float32", "float64", "int64", "bool", "complex64", "complex128"])
def test_cfloat_cdouble(method, src):
    data = np.array([1, 0, 3]) if src != "bool" else np.array([True, False, True])
    got = getattr(tc.tensor(data, dtype=getattr(tc, src)), method)()
    want = getattr(torch.tensor(data, dtype=getattr(torch, src)), method)()
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_cfloat_keeps_the_graph():
    x = tc.tensor([1.0, -2.0], requires_grad=True)
    w = torch.tensor([1.0, -2.0], requires_grad=True)
    (x.cfloat() * tc.tensor([1j, 2 + 1j])).real.sum().backward()
    (w.cfloat() * torch.tensor([1j, 2 + 1j])).real.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), w.grad.numpy())


REFUSALS = [lambda: tc.chalf, lambda: tc.complex32, lambda: tc.ones(2).chalf(),
            lambda: tc.view_as_complex(tc.ones(2, 2, dtype=tc.half)),
            lambda: tc.complex(tc.ones(2, dtype=tc.half), tc.ones(2, dtype=tc.half)),
            lambda: tidal.float16.to_complex()]


@pytest.mark.parametrize("k", range(len(REFUSALS)))
def test_complex32_is_refused_clearly(k):
    with pytest.raises((AttributeError, RuntimeError), match="ComplexHalf") as info:
        REFUSALS[k]()
    assert "complex32" in str(info.value)
    assert not hasattr(tc, "chalf") and hasattr(torch, "chalf")  # torch has it; tidal says why it does not
