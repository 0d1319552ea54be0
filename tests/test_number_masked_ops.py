"""Number-structure and small vector ops, and torch.masked, against torch (values, dtypes, gradients)."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from torch_compare import both, check

RNG = np.random.default_rng(11)

# -- number structure and small vector ops -------------------------------------------------------------
def test_gcd_lcm():
    (ta, xa), (tb, xb) = both(RNG.integers(-30, 30, size=(3, 4))), both(RNG.integers(-30, 30, size=4))
    for name in ("gcd", "lcm"):
        check(getattr(tc, name)(xa, xb), getattr(torch, name)(ta, tb))
        check(getattr(xa, name)(xb), getattr(ta, name)(tb))
        xc, tcopy = xa.clone(), ta.clone()
        getattr(xc, name + "_")(xb)
        getattr(tcopy, name + "_")(tb)
        check(xc, tcopy)
        with pytest.raises(NotImplementedError, match=f'"{name}_cpu" not implemented for \'Float\''):
            getattr(tc, name)(tidal.tensor([1.0]), tidal.tensor([2.0]))


def test_frexp_ldexp():
    t, x = both(np.concatenate([RNG.normal(size=8) * 100, [0.0, -0.0, 1.0, 0.5]]))
    for dtype in (torch.float32, torch.float64):
        tt, xx = t.to(dtype), x.to(getattr(tidal, str(dtype)[6:]))
        ref, mine = torch.frexp(tt), tc.frexp(xx)
        check(mine.mantissa, ref.mantissa)
        check(mine.exponent, ref.exponent)
        check(xx.frexp()[1], tt.frexp()[1])
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes"):
        tc.frexp(tidal.tensor([1, 2]))
    (te, xe) = both(RNG.integers(-4, 4, size=12))
    check(tc.ldexp(x, xe), torch.ldexp(t, te))
    check(tc.ldexp(xe, xe), torch.ldexp(te, te))
    # gradients with exponents >= 0: torch 2.13's backward takes 2 ** other in integers (0 for negative other)
    te, xe = te.abs(), xe.abs()
    t.requires_grad_(True)
    x.requires_grad_(True)
    torch.ldexp(t, te).sum().backward()
    tc.ldexp(x, xe).sum().backward()
    check(x.grad, t.grad)


def test_angle_rsub_result_type_can_cast():
    t, x = both([-1.5, 0.0, 2.0, np.nan, -np.inf])
    check(tc.angle(x), torch.angle(t))
    check(x.angle(), t.angle())
    ti, xi = both([-2, 0, 3])
    check(tc.angle(xi), torch.angle(ti), rtol=1e-6)
    check(tc.rsub(x, 5, alpha=2), torch.rsub(t, 5, alpha=2))
    check(tc.rsub(x, x * 3), torch.rsub(t, t * 3))
    for a, b in ((xi, 1.0), (xi, x), (x.float(), 2), (xi, True)):
        ta = torch.tensor(a.numpy()) if isinstance(a, tidal.Tensor) else a
        tb = torch.tensor(b.numpy()) if isinstance(b, tidal.Tensor) else b
        assert str(tc.result_type(a, b)).split(".")[-1] == str(torch.result_type(ta, tb)).split(".")[-1]
    names = ("bool", "uint8", "int8", "int32", "int64", "float16", "float32", "float64")
    for f in names:
        for to in names:
            assert tc.can_cast(getattr(tidal, f), getattr(tidal, to)) == torch.can_cast(getattr(torch, f),
                                                                                     getattr(torch, to)), (f, to)


def test_dist_addr_renorm():
    (ta, xa), (tb, xb) = both(RNG.normal(size=(3, 4))), both(RNG.normal(size=(3, 4)))
    for p in (1, 2, 3.5, float("inf"), 0):
        check(tc.dist(xa, xb, p), torch.dist(ta, tb, p), rtol=1e-10)
    (t1, x1), (t2, x2) = both(RNG.normal(size=3)), both(RNG.normal(size=4))
    check(tc.addr(xa, x1, x2), torch.addr(ta, t1, t2), rtol=1e-12)
    check(tc.addr(xa, x1, x2, beta=0.5, alpha=2), torch.addr(ta, t1, t2, beta=0.5, alpha=2), rtol=1e-12)
    check(tc.addr(xa * np.nan, x1, x2, beta=0), torch.addr(ta * np.nan, t1, t2, beta=0), rtol=1e-12)
    check(xa.addr(x1, x2), ta.addr(t1, t2), rtol=1e-12)
    for p, dim, maxnorm in ((2, 0, 1.0), (1, 1, 0.5), (3, -1, 10.0)):
        check(tc.renorm(xa, p, dim, maxnorm), torch.renorm(ta, p, dim, maxnorm), rtol=1e-10)
    ta.requires_grad_(True)
    xa.requires_grad_(True)
    (torch.dist(ta, tb) + torch.addr(ta, t1, t2).sum()).backward()
    (tc.dist(xa, xb) + tc.addr(xa, x1, x2).sum()).backward()
    check(xa.grad, ta.grad, rtol=1e-10)


def test_combinations_and_range():
    t, x = both([1.0, 2.0, 3.0, 4.0])
    for r in (0, 1, 2, 3, 5):
        for rep in (False, True):
            check(tc.combinations(x, r, rep), torch.combinations(t, r, rep))
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        mine = tc.range(0, 2, 0.5)
    with pytest.warns(UserWarning):
        check(mine, torch.range(0, 2, 0.5))
        check(tc.range(1, 4, dtype=tidal.int64), torch.range(1, 4, dtype=torch.int64))


# -- torch.masked ------------------------------------------------------------------------------------
_MASKED_ARGS = {"norm": (2.0, 1), "normalize": (2.0, 1), "median": (1,), "cumsum": (1,), "cumprod": (1,),
                "softmax": (1,), "log_softmax": (1,), "softmin": (1,), "argmax": (1,), "argmin": (1,)}


@pytest.mark.parametrize("name", [n for n in tc.masked.__all__ if n not in ("logaddexp", "is_masked_tensor")])
def test_masked(name):
    data = RNG.normal(size=(3, 4))
    keep = RNG.uniform(size=(3, 4)) < 0.6
    keep[2] = False  # a fully masked row
    keep[:2, 0] = True  # and rows with something kept
    (t, x), (tm, xm) = both(data), both(keep)
    calls = [(_MASKED_ARGS.get(name, (1,)), {})]
    if name not in _MASKED_ARGS:
        calls += [((), {}), (((0, 1),), {"keepdim": True}), ((0,), {})]
    if name in ("var", "std"):
        calls += [((1,), {"unbiased": False}), ((1,), {"correction": 0})]
    for args, kwargs in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(torch.masked, name)(t, *args, mask=tm, **kwargs)
            mine = getattr(tc.masked, name)(x, *args, mask=xm, **kwargs)
        check(mine, ref, rtol=1e-10, atol=1e-12)
    if name in ("sum", "mean", "softmax", "log_softmax", "norm", "var", "logsumexp", "normalize", "cumsum"):
        t, x = both(data[:2])  # the rows with something kept
        t.requires_grad_(True)
        x.requires_grad_(True)
        args = _MASKED_ARGS.get(name, (1,))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = getattr(torch.masked, name)(t, *args, mask=tm[:2])
            mine = getattr(tc.masked, name)(x, *args, mask=xm[:2])
        finite = torch.isfinite(ref)
        (ref * finite).nan_to_num(0.0, 0.0, 0.0).sum().backward()
        (mine * tidal.tensor(finite.numpy())).nan_to_num(0.0, 0.0, 0.0).sum().backward()
        check(x.grad, t.grad, rtol=1e-9, atol=1e-12)


def test_masked_logaddexp_and_predicate():
    (ta, xa), (tb, xb) = both(RNG.normal(size=5)), both(RNG.normal(size=5))
    (tm, xm), (tn, xn) = both(np.array([1, 0, 1, 0, 1], bool)), both(np.array([1, 1, 0, 0, 1], bool))
    check(tc.masked.logaddexp(xa, xb, input_mask=xm, other_mask=xn),
          torch.masked.logaddexp(ta, tb, input_mask=tm, other_mask=tn))
    assert tc.masked.is_masked_tensor(xa) is torch.masked.is_masked_tensor(ta) is False
