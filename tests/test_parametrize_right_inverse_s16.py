"""register_parametrization treats a right_inverse that raises NotImplementedError as the identity, as torch does:
orthogonal(..., use_trivialization=False) with the Cayley or matrix-exponential map (whose right_inverse cannot be
computed) and a user parametrization of that kind registered in torch and failed in tidal. Values and gradients
compared with real torch; a later assignment still raises as in torch."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat



def _orth(lib, orthogonal_map, data, x):
    lin = lib.nn.Linear(4, 4)
    with lib.no_grad():
        lin.weight.copy_(lib.tensor(data))
        lin.bias.copy_(lib.tensor(data[0]))
    lib.nn.utils.parametrizations.orthogonal(lin, orthogonal_map=orthogonal_map, use_trivialization=False)
    out = lin(lib.tensor(x))
    out.pow(2).sum().backward()
    grad = lin.parametrizations.weight.original.grad
    with pytest.raises(NotImplementedError, match="It is not possible to assign to the matrix exponential or the "
                                                  "Cayley parametrizations when use_trivialization=False."):
        lin.weight = lib.eye(4)
    return out.detach().numpy(), grad.numpy(), lin.weight.detach().numpy()


@pytest.mark.parametrize("orthogonal_map", ["cayley", "matrix_exp"])
def test_orthogonal_without_trivialization_as_torch(orthogonal_map):
    rng = np.random.default_rng(3)
    data, x = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((2, 4)).astype(np.float32)
    want = _orth(torch, orthogonal_map, data, x)
    got = _orth(tidal.compat, orthogonal_map, data, x)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(got[2] @ got[2].T, np.eye(4), atol=1e-5)


def test_right_inverse_raising_not_implemented_is_the_identity_as_torch():
    for lib in (torch, tidal.compat):
        class Double(lib.nn.Module):
            def forward(self, w):
                return w * 2

            def right_inverse(self, w):
                raise NotImplementedError("no inverse")
        lin = lib.nn.Linear(2, 2)
        before = lin.weight.detach().clone()
        lib.nn.utils.parametrize.register_parametrization(lin, "weight", Double())
        assert lib.equal(lin.parametrizations.weight.original, before)
        assert lib.equal(lin.weight, before * 2)
