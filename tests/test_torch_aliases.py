"""torch's other spellings against torch: arc* names, top-level in-place forms, method aliases, ATen-signature functional names, legacy norms."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from tidal.ops.elementwise import aliases as _aliases
from torch_compare import both, check

RNG = np.random.default_rng(11)

# -- other spellings ---------------------------------------------------------------------------------

_ARGS = {"clamp_": (-0.3, 0.4), "clip_": (-0.3, 0.4), "clamp_max_": (0.2,), "clamp_min_": (-0.1,), "fill_": (2.5,),
         "xlogy_": (0.7,), "index_put_": ((torch.tensor([0, 2]),), torch.tensor(9.0, dtype=torch.float64)),
         "addmv_": (torch.ones(3, 2, dtype=torch.float64), torch.ones(2, dtype=torch.float64))}


@pytest.mark.parametrize("name", _aliases._TOP_INPLACE)
def test_top_level_inplace(name):
    data = RNG.uniform(0.1, 0.9, size=3)
    t, x = both(data)
    args = _ARGS.get(name, ())
    xargs = tuple(tidal.tensor(a.numpy()) if isinstance(a, torch.Tensor) else
                  tuple(tidal.tensor(v.numpy()) for v in a) if isinstance(a, tuple) else a for a in args)
    ref, mine = getattr(torch, name)(t, *args), getattr(tc, name)(x, *xargs)
    assert mine is x
    check(x, t)
    check(mine, ref)


@pytest.mark.parametrize("name", sorted(_aliases._ARC))
def test_arc_aliases(name):
    t, x = both(RNG.uniform(1.1, 1.9, size=4) if name == "arccosh" else RNG.uniform(-0.9, 0.9, size=4))
    check(getattr(tc, name)(x), getattr(torch, name)(t))
    check(getattr(x, name)(), getattr(t, name)())
    t.requires_grad_(True)
    x.requires_grad_(True)
    getattr(torch, name)(t).sum().backward()
    getattr(tc, name)(x).sum().backward()
    check(x.grad, t.grad)


@pytest.mark.parametrize("name", sorted(_aliases._INPLACE_METHOD_ALIASES))
def test_inplace_method_aliases(name):
    t, x = both(RNG.uniform(1.1, 1.9, size=4) if name == "arccosh_" else RNG.uniform(-0.9, 0.9, size=4))
    args = (0.1,) if name in ("subtract_", "greater_", "greater_equal_", "less_", "less_equal_",
                              "not_equal_", "clamp_min_", "clamp_max_") else ()
    if name == "arctan2_":
        ref = t.arctan2_(torch.tensor(0.3, dtype=torch.float64))
        mine = x.arctan2_(tidal.tensor(0.3, dtype=tidal.float64))
    else:
        ref, mine = getattr(t, name)(*args), getattr(x, name)(*args)
    assert mine is x
    check(x, t)


def test_trivial_predicates_and_copies():
    t, x = both([[1.5, -2.0], [0.0, 3.0]])
    for name in ("is_conj", "is_neg", "is_signed", "is_same_size"):
        args = (t,) if name == "is_same_size" else ()
        xargs = (x,) if name == "is_same_size" else ()
        assert getattr(tc, name)(x, *xargs) == getattr(torch, name)(t, *args)
        assert getattr(x, name)(*xargs) == getattr(t, name)(*args)
    assert tc.is_signed(tidal.tensor([1], dtype=tidal.uint8)) is torch.is_signed(torch.tensor([1], dtype=torch.uint8))
    assert tc.is_nonzero(tidal.tensor([0.5])) is torch.is_nonzero(torch.tensor([0.5])) is True
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        tc.is_nonzero(x)
    check(tc.isreal(x), torch.isreal(t))
    check(tc.resolve_conj(x), torch.resolve_conj(t))
    check(tc.resolve_neg(x), torch.resolve_neg(t))
    check(tc.fix(x), torch.fix(t))
    check(x.fix(), t.fix())
    check(tc.fill(x, 4.0), torch.fill(t, 4.0))
    check(tc.detach(x), torch.detach(t))


# -- torch.* spellings of nn.functional ops (ATen signatures) ----------------------------------------
def _pair(shape, positive=False):
    data = RNG.uniform(0.1, 1.0, size=shape) if positive else RNG.normal(size=shape)
    return both(data)


def _aten_cases():
    (tx, xx), (ty, xy) = _pair((4, 6)), _pair((4, 6))
    (tw, xw), (tb, xb) = _pair((6,)), _pair((6,))
    (ti, xi) = _pair((2, 4, 3, 3))
    (tp, xp) = _pair((4, 6), positive=True)
    tsgn, xsgn = both(np.sign(RNG.normal(size=4)))
    tlab, xlab = both(RNG.integers(0, 2, size=(4, 6)).astype(np.float64))
    (tbw, xbw) = _pair((3, 6, 6))
    tidx, xidx = both(np.array([[0, 2], [3, 1]]))
    return [
        ("layer_norm", (tx, [6], tw, tb, 1e-5, True), (xx, [6], xw, xb, 1e-5, True)),
        ("group_norm", (ti, 2), (xi, 2)),
        ("rms_norm", (tx, [6], tw), (xx, [6], xw)),
        ("batch_norm", (ti, None, None, torch.zeros(4, dtype=torch.float64), torch.ones(4, dtype=torch.float64),
                        False, 0.1, 1e-5, False),
         (xi, None, None, tidal.zeros(4, dtype=tidal.float64), tidal.ones(4, dtype=tidal.float64), False, 0.1, 1e-5,
          False)),
        ("instance_norm", (ti, None, None, None, None, True, 0.1, 1e-5, False),
         (xi, None, None, None, None, True, 0.1, 1e-5, False)),
        ("embedding", (tx, tidx), (xx, xidx)),
        ("embedding", (tx, tidx, 2), (xx, xidx, 2)),
        ("kl_div", (tx, tp, 1), (xx, xp, 1)),
        ("kl_div", (tx, tp), (xx, xp)),
        ("triplet_margin_loss", (tx, ty, tp, 1.0, 2, 1e-6, False, 1), (xx, xy, xp, 1.0, 2, 1e-6, False, 1)),
        ("binary_cross_entropy_with_logits", (tx, tlab, None, None, 2), (xx, xlab, None, None, 2)),
        ("kl_div", (tx, tp, 0), (xx, xp, 0)),
        ("kl_div", (tx, ty, 2), (xx, xy, 2), {"log_target": True}),
        ("pdist", (tx,), (xx,)),
        ("pixel_shuffle", (ti, 1), (xi, 1)),
        ("pixel_unshuffle", (ti, 3), (xi, 3)),
        ("channel_shuffle", (ti, 2), (xi, 2)),
        ("cosine_similarity", (tx, ty), (xx, xy)),
        ("pairwise_distance", (tx, ty), (xx, xy)),
        ("prelu", (tx, torch.tensor([0.25], dtype=torch.float64)), (xx, tidal.tensor([0.25], dtype=tidal.float64))),
        ("rrelu", (tx,), (xx,)),
        ("bilinear", (tx, ty, tbw), (xx, xy, xbw)),
        ("hinge_embedding_loss", (tx, tsgn.reshape(4, 1).expand(4, 6).contiguous()),
         (xx, xsgn.reshape(4, 1).expand(4, 6).contiguous())),
        ("margin_ranking_loss", (tx[:, 0], ty[:, 0], tsgn, 0.1, 2), (xx[:, 0], xy[:, 0], xsgn, 0.1, 2)),
        ("triplet_margin_loss", (tx, ty, tp), (xx, xy, xp)),
        ("poisson_nll_loss", (tx, tp, True, False, 1e-8, 1), (xx, xp, True, False, 1e-8, 1)),
        ("cosine_embedding_loss", (tx, ty, tsgn, 0.0, 0), (xx, xy, xsgn, 0.0, 0)),
        ("binary_cross_entropy_with_logits", (tx, tlab), (xx, xlab)),
        ("constant_pad_nd", (tx, [1, 2], 0.5), (xx, [1, 2], 0.5)),
        ("dropout", (tx, 0.3, False), (xx, 0.3, False)),
        ("alpha_dropout", (tx, 0.3, False), (xx, 0.3, False)),
        ("feature_dropout", (ti, 0.3, False), (xi, 0.3, False)),
        ("feature_alpha_dropout", (ti, 0.3, False), (xi, 0.3, False)),
    ]


@pytest.mark.parametrize("case", _aten_cases(), ids=lambda c: c[0])
def test_aten_functional_names(case):
    name, targs, xargs = case[:3]
    kwargs = case[3] if len(case) > 3 else {}
    ref, mine = getattr(torch, name)(*targs, **kwargs), getattr(tc, name)(*xargs, **kwargs)
    check(mine, ref, rtol=1e-9, atol=1e-12)
    first = next(a for a in xargs if isinstance(a, tidal.Tensor) and a.dtype.is_floating_point)
    tfirst = next(a for a in targs if isinstance(a, torch.Tensor) and a.dtype.is_floating_point)
    if name in ("dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout", "constant_pad_nd"):
        return
    first.requires_grad_(True)
    tfirst.requires_grad_(True)
    getattr(torch, name)(*targs, **kwargs).sum().backward()
    getattr(tc, name)(*xargs, **kwargs).sum().backward()
    check(first.grad, tfirst.grad, rtol=1e-8, atol=1e-10)


def test_aten_dropout_when_training():
    x = tidal.ones(50, 8, 3, dtype=tidal.float64)
    for name in ("dropout", "feature_dropout"):
        out = getattr(tc, name)(x, 0.25, True).numpy()
        assert set(np.unique(out)) <= {0.0, 1 / 0.75}
        assert 0 < (out == 0).mean() < 0.6
    channels = tc.feature_dropout(x, 0.5, True).numpy()
    assert (channels == channels[:, :, :1]).all()  # one draw per (batch, channel)
    y = tidal.ones(4, 4)
    assert tc.dropout_(y, 0.5, True) is y and set(np.unique(y.numpy())) <= {0.0, 2.0}
    with pytest.raises(ValueError, match="3 is not a valid value for reduction"):
        tc.kl_div(x, x, 3)


def test_embedding_renorm_():
    data = RNG.normal(size=(5, 3)) * 3
    t, x = both(data)
    ti, xi = both(np.array([0, 2, 2]))
    torch.embedding_renorm_(t, ti, 1.0, 2.0)
    assert tc.embedding_renorm_(x, xi, 1.0, 2.0) is x
    check(x, t, rtol=1e-9)


# -- index_reduce, nonzero_static, the legacy norms ----------------------------------------------------
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    (ti, xi), (ts, xs) = both(RNG.normal(size=(4, 3))), both(RNG.normal(size=(5, 3)))
    tidx, xidx = both(np.array([0, 2, 0, 3, 2]))
    with warnings.catch_warnings():  # both warn once per process that index_reduce is in beta
        warnings.simplefilter("ignore")
        mine = tc.index_reduce(xi, 0, xidx, xs, reduce, include_self=include_self)
        ref = torch.index_reduce(ti, 0, tidx, ts, reduce, include_self=include_self)
    check(mine, ref, rtol=1e-12)
    (tt, xt), (tu, xu) = both(RNG.normal(size=(3, 4))), both(RNG.normal(size=(3, 2)))
    tj, xj = both(np.array([3, 1]))
    check(xt.clone().index_reduce_(1, xj, xu, reduce, include_self=include_self),
          tt.clone().index_reduce_(1, tj, tu, reduce, include_self=include_self), rtol=1e-12)
    if reduce in ("mean", "prod"):
        ts.requires_grad_(True)
        xs.requires_grad_(True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.index_reduce(ti, 0, tidx, ts, reduce, include_self=include_self).sum().backward()
            tc.index_reduce(xi, 0, xidx, xs, reduce, include_self=include_self).sum().backward()
        check(xs.grad, ts.grad, rtol=1e-10)


def test_nonzero_static():
    t, x = both(np.array([[0, 1, 3], [2, 0, 0]]))
    for size, fill in ((0, -1), (2, -1), (3, -1), (6, 9)):
        check(tc.nonzero_static(x, size=size, fill_value=fill), torch.nonzero_static(t, size=size, fill_value=fill))
    check(x.nonzero_static(size=5), t.nonzero_static(size=5))


def test_legacy_norms():
    t, x = both(RNG.normal(size=(3, 4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(tc.frobenius_norm(x, (0, 1)), torch.frobenius_norm(t, (0, 1)), rtol=1e-12)
        check(tc.frobenius_norm(x, [1], True), torch.frobenius_norm(t, [1], True), rtol=1e-12)
        check(tc.nuclear_norm(x), torch.nuclear_norm(t), rtol=1e-10)
        check(tc.nuclear_norm(x, True), torch.nuclear_norm(t, True), rtol=1e-10)
    for dim in (0, 1, -1):
        check(tc.norm_except_dim(x, 2, dim), torch.norm_except_dim(t, 2, dim), rtol=1e-12)
    check(tc.norm_except_dim(x, 3, 1), torch.norm_except_dim(t, 3, 1), rtol=1e-12)
