"""Complex conversions torch scripts reach for (cfloat/cdouble); complex32 has its own file (test_complex32.py)."""
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


FILLS = {"masked_fill": lambda m, x, v: x.masked_fill(m.tensor([True, False, True]), v),
         "scatter": lambda m, x, v: x.scatter(0, m.tensor([1]), v),
         "index_fill_complex_self": lambda m, x, v: x.index_fill(0, m.tensor([2]), v) if x.dtype.is_complex else None}


@pytest.mark.parametrize("fill", sorted(FILLS))
@pytest.mark.parametrize("dtype", ["complex64", "float32", "float64", "int64"])
@pytest.mark.parametrize("value", [2j, 1 - 3j, 2 + 0j, 3])
def test_fill_with_complex_scalars(fill, dtype, value):
    results = []
    for m in (tc, torch):
        x = m.ones(3, dtype=getattr(m, dtype))
        try:
            out = FILLS[fill](m, x, value)
            results.append(None if out is None else (str(out.dtype).split(".")[-1], out.numpy().tolist()))
        except RuntimeError as exc:
            results.append(str(exc))
    assert results[0] == results[1]


ADDC = {"addcmul_complex": lambda m, x, f: m.addcmul(x, x, x, value=2),
        "addcdiv_complex_value": lambda m, x, f: m.addcdiv(x, x, x + 3, value=0.5j),
        "addcmul_mixed": lambda m, x, f: m.addcmul(f, f, x),
        "addcmul_real_complex_value": lambda m, x, f: m.addcmul(f, x, f, value=1j),
        "addcdiv_real_complex_value": lambda m, x, f: m.addcdiv(f, f, f, value=1j),
        "addcdiv_real_value_2+0j": lambda m, x, f: m.addcdiv(f, f, f + 1, value=2 + 0j)}


@pytest.mark.parametrize("case", sorted(ADDC))
def test_addcmul_addcdiv_complex(case):
    results = []
    for m in (tc, torch):
        x = m.tensor([1 + 1j, 2 - 1j], requires_grad=True)
        f = m.tensor([1.0, 2.0], requires_grad=True)
        try:
            out = ADDC[case](m, x, f)
        except RuntimeError as exc:
            results.append(str(exc))
            continue
        (out * m.tensor([1 - 2j, 0.5j])).real.sum().backward()
        results.append((str(out.dtype).split(".")[-1], out.detach().numpy(),
                        [None if t.grad is None else t.grad.numpy() for t in (x, f)]))
    got, want = results
    if isinstance(want, str):
        assert got == want
        return
    assert got[0] == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-6)
    for g, w in zip(got[2], want[2]):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-6)
