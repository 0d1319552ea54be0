"""conj and its bits, against torch: values, dtypes and gradients of conj, conj_physical, resolve_conj/neg, mH and
adjoint; conj_physical returns real input itself, as torch; conj() is a view that writes through (the lazy views'
own tests: tests/test_conj_views.py)."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import to_numpy

RNG = np.random.default_rng(160)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
X = RNG.standard_normal((3, 4))


@pytest.mark.parametrize("fn", [
    lambda L, t: t.conj(), lambda L, t: L.conj(t), lambda L, t: t.conj_physical(), lambda L, t: L.conj_physical(t),
    lambda L, t: t.conj().resolve_conj(), lambda L, t: L.resolve_conj(t.conj()), lambda L, t: t.mH,
    lambda L, t: t.adjoint(), lambda L, t: t.conj().imag.resolve_neg(), lambda L, t: t.conj().conj(),
], ids=["conj", "torch.conj", "conj_physical", "torch.conj_physical", "resolve_conj", "torch.resolve_conj", "mH",
        "adjoint", "imag_resolve_neg", "conj_conj"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_values_and_grads(fn, dtype):
    a = tidal.tensor(Z, dtype=getattr(tidal, dtype), requires_grad=True)
    w = torch.tensor(Z, dtype=getattr(torch, dtype), requires_grad=True)
    got, want = fn(tc, a), fn(torch, w)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(got), to_numpy(want), rtol=1e-6)
    cot = RNG.standard_normal(tuple(want.shape)) + (1j * RNG.standard_normal(tuple(want.shape)) if want.is_complex()
                                                    else 0)
    (got * tc.tensor(cot, dtype=got.dtype)).real.sum().backward()
    (want * torch.tensor(cot, dtype=want.dtype)).real.sum().backward()
    np.testing.assert_allclose(to_numpy(a.grad), to_numpy(w.grad), rtol=1e-6)


@pytest.mark.parametrize("name", ["conj", "conj_physical", "resolve_conj", "resolve_neg"])
def test_real_input_is_returned_itself(name):
    x, t = tc.tensor(X), torch.tensor(X)
    assert (getattr(tc, name)(x) is x) == (getattr(torch, name)(t) is t) == True  # noqa: E712
    assert (getattr(x, name)() is x) == (getattr(t, name)() is t) == True  # noqa: E712
    for lib, v in ((tc, x), (torch, t)):
        assert not lib.is_conj(v) and not v.is_conj() and not lib.is_neg(v) and not v.is_neg()


def test_conj_physical_out_and_in_place():
    for lib in (tc, torch):
        z = lib.tensor(Z)
        out = lib.empty(3, 4, dtype=z.dtype)
        assert lib.conj_physical(z, out=out) is out
        np.testing.assert_allclose(to_numpy(out), np.conj(Z))
        assert z.conj_physical_() is z
        np.testing.assert_allclose(to_numpy(z), np.conj(Z))
        assert not lib.conj_physical(z).is_conj()


def test_resolved_tensors_are_plain_in_both():
    """What torch and tidal agree on: every resolved or physically conjugated tensor has no bits set."""
    for lib in (tc, torch):
        c = lib.tensor(Z).conj()
        for r in (c.resolve_conj(), lib.conj_physical(lib.tensor(Z)), c.imag.resolve_neg(), c + 0):
            assert not r.is_conj() and not r.is_neg()


def test_conj_writes_through_as_torch():
    """conj() and mH of a complex tensor are views with the conjugate bit: a write through them reaches the
    source conjugated, in both."""
    z, w = tc.tensor(Z), torch.tensor(Z)
    c, cw = z.conj(), w.conj()
    assert c.is_conj() and cw.is_conj()
    c[0, 0] = 5.0 + 1j
    cw[0, 0] = 5.0 + 1j
    assert complex(z[0, 0].item()) == complex(w[0, 0].item()) == 5.0 - 1j
    z.mH[0, 1] = 2j
    w.mH[0, 1] = 2j
    np.testing.assert_array_equal(z.numpy(), w.numpy())
    zm = tc.tensor(X)  # real dtypes: mH is mT, a view in both
    zm.mH[0, 1] = 7.0
    assert float(zm[1, 0].item()) == 7.0
