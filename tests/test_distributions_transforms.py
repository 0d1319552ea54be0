"""Transforms, constraints and the constraint registry against torch; torch.distributions' module paths; a
torch.distributions VAE run under tidal.compat against real torch."""
import os
import sys

import numpy as np
import pytest
import torch
from distribution_db import pos, rng

import tidal
import tidal.distributions as D


TRANSFORMS = {
    "exp": (lambda T: T.ExpTransform(), rng.normal(size=(3, 2))),
    "affine": (lambda T: T.AffineTransform(0.5, -2.0), rng.normal(size=(3, 2))),
    "affine event": (lambda T: T.AffineTransform(0.5, 3.0, event_dim=1), rng.normal(size=(3, 2))),
    "sigmoid": (lambda T: T.SigmoidTransform(), rng.normal(size=(3, 2))),
    "tanh": (lambda T: T.TanhTransform(), rng.normal(size=(3, 2))),
    "softplus": (lambda T: T.SoftplusTransform(), rng.normal(size=(3, 2))),
    "power": (lambda T: T.PowerTransform(2.5), pos(3, 2)),
    "abs": (lambda T: T.AbsTransform(), rng.normal(size=(3, 2))),
    "softmax": (lambda T: T.SoftmaxTransform(), rng.normal(size=(3, 4))),
    "stickbreaking": (lambda T: T.StickBreakingTransform(), rng.normal(size=(3, 4))),
    "lower cholesky": (lambda T: T.LowerCholeskyTransform(), rng.normal(size=(2, 3, 3))),
    "compose": (lambda T: T.ComposeTransform([T.AffineTransform(1.0, 2.0), T.ExpTransform(),
                                              T.PowerTransform(0.5)]), rng.normal(size=(3, 2))),
    "compose inverse": (lambda T: T.ComposeTransform([T.ExpTransform(), T.AffineTransform(1.0, 2.0)]).inv,
                        pos(3, 2)),
    "independent": (lambda T: T.IndependentTransform(T.SigmoidTransform(), 1), rng.normal(size=(3, 2))),
    "reshape": (lambda T: T.ReshapeTransform((2,), (2, 1)), rng.normal(size=(3, 2))),
    "cat": (lambda T: T.CatTransform([T.ExpTransform(), T.AffineTransform(1.0, 3.0)], dim=1, lengths=[1, 2]),
            rng.normal(size=(2, 3))),
    "cat event": (lambda T: T.CatTransform([T.IndependentTransform(T.SigmoidTransform(), 1),
                                            T.IndependentTransform(T.ExpTransform(), 1)], dim=-1, lengths=[3, 2]),
                  rng.normal(size=(2, 5))),
    "stack": (lambda T: T.StackTransform([T.ExpTransform(), T.TanhTransform(), T.SigmoidTransform()], dim=1),
              rng.normal(size=(2, 3))),
    "positive definite": (lambda T: T.PositiveDefiniteTransform(), rng.normal(size=(2, 3, 3))),
    "corr cholesky": (lambda T: T.CorrCholeskyTransform(), rng.normal(size=(2, 6))),
}


@pytest.mark.parametrize("case", list(TRANSFORMS))
def test_transforms_follow_torch(case):
    make, x = TRANSFORMS[case]
    outs = []
    for fw in (torch, tidal):
        t = make(fw.distributions.transforms)
        xt = fw.tensor(x, dtype=fw.float64, requires_grad=True)
        y = t(xt)
        row = [y, t.inv(y)]
        if t.bijective or case == "abs":
            try:
                row.append(t.log_abs_det_jacobian(xt, y))
            except NotImplementedError:
                pass
        grads = fw.autograd.grad(sum(r.sum() for r in row), [xt])
        outs.append(([r.detach().numpy() for r in row], grads[0].numpy(), t))
    (theirs, their_grad, tt), (ours, our_grad, ot) = outs
    assert len(ours) == len(theirs)
    for mine, ref in zip(ours, theirs):
        np.testing.assert_allclose(mine, ref, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-6, atol=1e-9)
    assert ot.bijective == tt.bijective
    assert ot.domain.event_dim == tt.domain.event_dim and ot.codomain.event_dim == tt.codomain.event_dim
    assert tuple(ot.forward_shape((5,) + x.shape)) == tuple(tt.forward_shape((5,) + x.shape))


def test_cdf_transform_and_tril_helpers():
    """CumulativeDistributionTransform is the base's cdf with its density as the Jacobian; the tril helpers
    round-trip as torch's."""
    from torch.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
    x = rng.normal(size=(4, 3))
    outs = []
    for fw in (torch, tidal):
        t = fw.distributions.transforms.CumulativeDistributionTransform(
            fw.distributions.Normal(fw.tensor([0.0, 1.0, -1.0], dtype=fw.float64), 2.0))
        xt = fw.tensor(x)
        y = t(xt)
        outs.append([y.numpy(), t.inv(y).numpy(), t.log_abs_det_jacobian(xt, y).numpy()])
    for mine, ref in zip(outs[1], outs[0]):
        np.testing.assert_allclose(mine, ref, rtol=1e-6)
    m = rng.normal(size=(2, 4, 4))
    for diag in (0, -1, -2):
        vec = tril_matrix_to_vec(torch.tensor(m), diag)
        np.testing.assert_array_equal(D.utils.tril_matrix_to_vec(tidal.tensor(m), diag).numpy(), vec.numpy())
        np.testing.assert_array_equal(D.utils.vec_to_tril_matrix(tidal.tensor(vec.numpy()), diag).numpy(),
                                      vec_to_tril_matrix(vec, diag).numpy())
    check = D.constraints.MixtureSameFamilyConstraint(D.constraints.positive)
    torch_check = torch.distributions.constraints.MixtureSameFamilyConstraint(torch.distributions.constraints.positive)
    value = rng.normal(size=(3, 2))
    np.testing.assert_array_equal(check.check(tidal.tensor(value)).numpy(), torch_check.check(torch.tensor(value)))
    assert repr(check) == repr(torch_check)


def test_transform_caching_inverse_and_registry():
    t = D.transforms.ExpTransform(cache_size=1)
    x = tidal.tensor([0.5, 1.0])
    y = t(x)
    assert t(x) is y and t.inv(y) is x and t.inv.inv is t
    assert D.transforms.ExpTransform() == D.transforms.ExpTransform()
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        D.transforms.ExpTransform(cache_size=2)
    for name in ("real", "positive", "unit_interval", "simplex", "lower_cholesky", "real_vector", "corr_cholesky",
                 "positive_definite"):
        constraint = getattr(D.constraints, name)
        torch_constraint = getattr(torch.distributions.constraints, name)
        for registry in ("biject_to", "transform_to"):
            if name in ("lower_cholesky", "positive_definite") and registry == "biject_to":
                continue
            ours = getattr(D, registry)(constraint)
            theirs = getattr(torch.distributions, registry)(torch_constraint)
            assert type(ours).__name__ == type(theirs).__name__
            z = np.random.default_rng(2).normal(size=(2, 3, 3) if name in ("lower_cholesky", "positive_definite")
                                                else (2, 3))
            np.testing.assert_allclose(ours(tidal.tensor(z)).numpy(), theirs(torch.tensor(z)).numpy(), rtol=1e-6)
            assert bool(constraint.check(ours(tidal.tensor(z))).all())


def test_every_torch_distributions_module_path():
    """`from torch.distributions.<module> import <name>` finds tidal's class for every module torch has."""
    import importlib
    import pkgutil
    for info in pkgutil.iter_modules(torch.distributions.__path__):
        theirs = importlib.import_module(f"torch.distributions.{info.name}")
        ours = importlib.import_module(f"tidal.distributions.{info.name}")
        for name in getattr(theirs, "__all__", ()):
            assert hasattr(ours, name), f"{info.name}.{name}"
    assert importlib.import_module("tidal.distributions.normal").Normal is D.Normal


def test_vae_script_with_distributions_follows_torch(tmp_path):
    """tests/scripts/vae_distributions.py (Normal rsample, Bernoulli log_prob, kl_divergence) runs unmodified under
    `python -m tidal.compat` and follows real torch's losses."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from script_runs import check_losses, run_both
    theirs, ours = run_both("vae_distributions", tmp_path)
    check_losses(theirs, ours)
    for key in ("kl", "sample_mean", "rsample_grad"):
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-3, atol=1e-4, err_msg=key)
    # rsample draws come from each framework's own RNG: compare their statistics, loosely
    np.testing.assert_allclose(ours["standardized"], [0.0, 1.0], atol=0.05)
    np.testing.assert_allclose(theirs["standardized"], [0.0, 1.0], atol=0.05)
