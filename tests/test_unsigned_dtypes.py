"""uint16, uint32 and uint64 against torch 2.13, which gives them "limited support": promotion with floats only,
a few kernels (copies, creation, views, mul, eq/ne, bitwise and/or/xor, the floating functions, sum/prod/cumsum,
sort/unique...), every other op refused with its kernel's NotImplementedError. Values, dtypes, errors (type and
message), printing, NumPy interop and save/load are compared with torch.
"""
import io

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch

UNSIGNED = ("uint16", "uint32", "uint64")
ALL_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
              "complex64", "complex128", "uint16", "uint32", "uint64")


def _outcome(fn):
    """('ok', dtype name, values) or (exception type, first line of its message)."""
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return type(exc).__name__, str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(r, tuple):
        return ("ok",) + tuple(_outcome(lambda v=v: v) for v in r)
    if isinstance(r, (torch.Tensor, ttorch.Tensor)):
        values = r.detach().to(ttorch.float32 if isinstance(r, ttorch.Tensor) else torch.float32).tolist() \
            if r.dtype in (torch.bfloat16, ttorch.bfloat16) else r.tolist()
        return "ok", str(r.dtype).split(".")[-1], values
    return "ok", str(r).split(".")[-1] if isinstance(r, (torch.dtype, ttorch.dtype)) else r


def _same(fn):
    """fn(torch-like module) gives the same outcome under tidal as under torch (floats to 6 digits)."""
    got, want = _outcome(lambda: fn(ttorch)), _outcome(lambda: fn(torch))
    if got != want and got[0] == want[0] == "ok" and len(got) == len(want) == 3 and got[1] == want[1]:
        np.testing.assert_allclose(np.asarray(got[2], dtype=float), np.asarray(want[2], dtype=float), rtol=1e-6)
        return
    assert got == want


def _x(L, d, values=(1, 2, 3)):
    return L.tensor(list(values), dtype=getattr(L, d))


def _top(d) -> int:
    return 2 ** (8 * np.dtype(d).itemsize) - 1


# -- the dtypes themselves -----------------------------------------------------------------
@pytest.mark.parametrize("d", UNSIGNED)
def test_dtype_attributes(d):
    ours, theirs = getattr(ttorch, d), getattr(torch, d)
    assert ours is getattr(tidal, d)
    for attr in ("is_signed", "itemsize", "is_floating_point", "is_complex"):
        assert getattr(ours, attr) == getattr(theirs, attr), attr
    assert repr(ours) == "tidal." + d and str(theirs) == "torch." + d
    assert _outcome(lambda: ours.to_complex()) == _outcome(lambda: theirs.to_complex())
    info, want = ttorch.iinfo(ours), torch.iinfo(theirs)
    assert (info.bits, info.min, info.max, info.dtype, repr(info)) == \
        (want.bits, want.min, want.max, want.dtype, repr(want))
    assert _outcome(lambda: ttorch.finfo(ours)) == _outcome(lambda: torch.finfo(theirs))
    assert _x(ttorch, d).is_signed() is False and _x(ttorch, d).element_size() == theirs.itemsize
    assert _x(ttorch, d).type() == _x(torch, d).type()
    _same(lambda L: L.tensor([1, 2]).type(f"torch.{d[0].upper()}Int{d[4:]}Tensor"))


@pytest.mark.parametrize("d", UNSIGNED)
def test_promote_types(d):
    for other in ALL_DTYPES:
        for a, b in ((d, other), (other, d)):
            _same(lambda L: L.promote_types(getattr(L, a), getattr(L, b)))


RESULT_TYPES = {
    "dim, int": lambda L, d: L.result_type(_x(L, d), 1),
    "dim, float": lambda L, d: L.result_type(_x(L, d), 1.5),
    "dim, bool": lambda L, d: L.result_type(_x(L, d), True),
    "dim, complex": lambda L, d: L.result_type(_x(L, d), 1j),
    "dim, 0-d int64": lambda L, d: L.result_type(_x(L, d), L.tensor(1)),
    "dim, 0-d bool": lambda L, d: L.result_type(_x(L, d), L.tensor(True)),
    "dim, 0-d complex": lambda L, d: L.result_type(_x(L, d), L.tensor(1j)),
    "dim, dim complex": lambda L, d: L.result_type(_x(L, d), L.tensor([1j])),
    "0-d, dim int64": lambda L, d: L.result_type(L.tensor(1, dtype=getattr(L, d)), L.tensor([1, 2])),
    "0-d, dim bool": lambda L, d: L.result_type(L.tensor(1, dtype=getattr(L, d)), L.tensor([True])),
    "0-d, dim uint8": lambda L, d: L.result_type(L.tensor(1, dtype=getattr(L, d)), L.tensor([1], dtype=L.uint8)),
    "0-d, dim float16": lambda L, d: L.result_type(L.tensor(1, dtype=getattr(L, d)), L.tensor([1.], dtype=L.float16)),
    "0-d, 0-d int64": lambda L, d: L.result_type(L.tensor(1, dtype=getattr(L, d)), L.tensor(1)),
    "0-d, float": lambda L, d: L.result_type(L.tensor(1, dtype=getattr(L, d)), 1.5),
    "dim int64, 0-d": lambda L, d: L.result_type(L.tensor([1, 2]), L.tensor(1, dtype=getattr(L, d))),
    "can_cast to int64": lambda L, d: L.can_cast(getattr(L, d), L.int64),
    "can_cast from float": lambda L, d: L.can_cast(L.float32, getattr(L, d)),
}


@pytest.mark.parametrize("case", list(RESULT_TYPES))
def test_result_type(case):
    for d in UNSIGNED:
        _same(lambda L: RESULT_TYPES[case](L, d))


# -- creation, conversion, interop ---------------------------------------------------------
CREATION = {
    "tensor": lambda L, d: _x(L, d),
    "tensor max": lambda L, d: _x(L, d, (_top(d), 0)),
    "tensor past max": lambda L, d: _x(L, d, (_top(d) + 1,)),
    "tensor -1": lambda L, d: _x(L, d, (-1, 5)),
    "tensor very negative": lambda L, d: _x(L, d, (-(_top(d) + 1) // 2 - 1,)),
    "tensor floats": lambda L, d: _x(L, d, (1.7, 2.2)),
    "tensor negative float": lambda L, d: _x(L, d, (-1.5,)),
    "tensor bools": lambda L, d: _x(L, d, (True, False)),
    "tensor nested": lambda L, d: L.tensor([[1, 2], [3, 4]], dtype=getattr(L, d)),
    "tensor 0-d max": lambda L, d: L.tensor(_top(d), dtype=getattr(L, d)),
    "tensor of numpy int64": lambda L, d: L.tensor(np.array([-1, 70000]), dtype=getattr(L, d)),
    "as_tensor list": lambda L, d: L.as_tensor([1, 2], dtype=getattr(L, d)),
    "scalar_tensor": lambda L, d: L.scalar_tensor(3, dtype=getattr(L, d)),
    "zeros": lambda L, d: L.zeros(2, 2, dtype=getattr(L, d)),
    "ones": lambda L, d: L.ones(3, dtype=getattr(L, d)),
    "empty shape": lambda L, d: L.empty(2, 3, dtype=getattr(L, d)).shape,
    "full": lambda L, d: L.full((2,), 7, dtype=getattr(L, d)),
    "full -1": lambda L, d: L.full((2,), -1, dtype=getattr(L, d)),
    "full float": lambda L, d: L.full((2,), 1.5, dtype=getattr(L, d)),
    "full past max": lambda L, d: L.full((2,), _top(d) + 1, dtype=getattr(L, d)),
    "full very negative": lambda L, d: L.full((2,), -_top(d) - 1, dtype=getattr(L, d)),
    "fill_ -1": lambda L, d: _x(L, d).fill_(-1),
    "fill_ past max": lambda L, d: _x(L, d).fill_(_top(d) + 1),
    "zeros_like": lambda L, d: L.zeros_like(_x(L, d)),
    "full_like float": lambda L, d: L.full_like(_x(L, d), 2.7),
    "new_full": lambda L, d: _x(L, d).new_full((2,), 5),
    "randint dtype": lambda L, d: L.randint(0, 5, (3,), dtype=getattr(L, d)).dtype,
    "random_ dtype": lambda L, d: _x(L, d).random_(0, 5).dtype,
    "tolist max": lambda L, d: _x(L, d, (_top(d),)).tolist(),
    "item max": lambda L, d: _x(L, d, (_top(d),)).item(),
    "float()": lambda L, d: float(_x(L, d, (7,))),
    "bool()": lambda L, d: bool(_x(L, d, (7,))),
}
CONVERSIONS = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64", "complex64")


@pytest.mark.parametrize("case", list(CREATION))
def test_creation(case):
    for d in UNSIGNED:
        _same(lambda L: CREATION[case](L, d))


@pytest.mark.parametrize("d", UNSIGNED)
def test_conversions(d):
    for other in CONVERSIONS + UNSIGNED:
        # to the unsigned dtype: wrapped integers, truncated floats; and back
        src = {"bool": [True, False], "float16": [3.5, 70000.0], "float32": [1.7, 2.0], "float64": [1e9, 3.9],
               "complex64": [1 + 2j, 3 + 0j]}.get(other, [-1, 300])
        if not (other.startswith("float") or other == "complex64" or other == "bool"):
            src = [v % (_top(other) + 1) if other.startswith("uint") else v for v in src]
        _same(lambda L: L.tensor(src, dtype=getattr(L, other)).to(getattr(L, d)))
        _same(lambda L: _x(L, d, (0, 5, _top(d))).to(getattr(L, other)))


@pytest.mark.parametrize("d", UNSIGNED)
def test_numpy_interop(d):
    a = np.array([0, 1, _top(d)], dtype=d)
    t = ttorch.from_numpy(a)
    assert t.dtype is getattr(ttorch, d) and t.tolist() == torch.from_numpy(a).tolist()
    a[0] = 9  # from_numpy shares memory
    assert t[0].item() == 9
    back = _x(ttorch, d, (3, _top(d))).numpy()
    assert back.dtype == np.dtype(d) and back.tolist() == [3, _top(d)]
    assert ttorch.as_tensor(a).dtype is getattr(ttorch, d) and ttorch.tensor(a).tolist() == a.tolist()


@pytest.mark.parametrize("d", UNSIGNED)
def test_printing(d):
    for make in (lambda L: _x(L, d, (_top(d), 0)), lambda L: L.tensor(5, dtype=getattr(L, d)),
                 lambda L: L.tensor([], dtype=getattr(L, d)), lambda L: L.tensor([[1, 200], [3, 4]], dtype=getattr(L, d))):
        assert repr(make(ttorch)).replace("tidal.", "torch.") == repr(make(torch))
        assert str(make(ttorch)).replace("tidal.", "torch.") == str(make(torch))


@pytest.mark.parametrize("d", UNSIGNED)
def test_save_load(d):
    values = [1, _top(d), 7]
    buf = io.BytesIO()
    torch.save({"a": torch.tensor(values, dtype=getattr(torch, d))[1:]}, buf)
    buf.seek(0)
    got = tidal.load(buf)["a"]
    assert got.dtype is getattr(tidal, d) and got.tolist() == values[1:]
    x = tidal.tensor(values, dtype=getattr(tidal, d))
    buf = io.BytesIO()
    tidal.save({"view": x[1:], "whole": x}, buf)
    for reader in (torch.load, tidal.load):
        buf.seek(0)
        back = reader(buf)
        assert str(back["view"].dtype).endswith(d) and back["view"].tolist() == values[1:]
        assert back["whole"].tolist() == values
        back["whole"][1] = 0  # the view and the whole tensor share their storage, as saved
        assert back["view"].tolist()[0] == 0


# -- ops torch runs on them ----------------------------------------------------------------
SUPPORTED = {
    "mul": lambda L, d: _x(L, d) * _x(L, d, (3, 1, 2)),
    "mul wraps": lambda L, d: _x(L, d, (_top(d),)) * _x(L, d, (2,)),
    "mul by -1": lambda L, d: _x(L, d) * -1,
    "mul by 0-d int64": lambda L, d: _x(L, d) * L.tensor(2),
    "mul by float": lambda L, d: _x(L, d) * 1.5,
    "mul by float16 tensor": lambda L, d: _x(L, d) * L.tensor([1., 2., 3.], dtype=L.float16),
    "mul_": lambda L, d: _x(L, d).mul_(2),
    "0-d times int64": lambda L, d: L.tensor(2, dtype=getattr(L, d)) * L.tensor([1, 2]),
    "div": lambda L, d: _x(L, d) / _x(L, d, (3, 1, 2)),
    "div max": lambda L, d: _x(L, d, (_top(d),)) / 2,
    "pow 0.5": lambda L, d: _x(L, d) ** 0.5,
    "pow float tensor": lambda L, d: L.pow(_x(L, d), L.tensor([1., 2., 3.])),
    "eq": lambda L, d: _x(L, d) == _x(L, d, (3, 2, 1)),
    "ne": lambda L, d: _x(L, d) != _x(L, d, (3, 2, 1)),
    "eq -1": lambda L, d: _x(L, d, (_top(d), 1)) == -1,
    "eq max": lambda L, d: _x(L, d, (_top(d), 1)) == _top(d),
    "bitwise and": lambda L, d: _x(L, d, (_top(d), 6)) & _x(L, d, (2 ** 15 + 1, 3)),
    "bitwise or": lambda L, d: _x(L, d) | _x(L, d, (4, 4, 4)),
    "bitwise xor": lambda L, d: _x(L, d) ^ 1,
    "bitwise and -1": lambda L, d: _x(L, d) & -1,
    "floor": lambda L, d: _x(L, d).floor(),
    "ceil": lambda L, d: _x(L, d).ceil(),
    "round": lambda L, d: _x(L, d).round(),
    "trunc": lambda L, d: _x(L, d).trunc(),
    "positive": lambda L, d: +_x(L, d),
    "conj": lambda L, d: _x(L, d).conj(),
    "sqrt": lambda L, d: _x(L, d).sqrt(),
    "exp": lambda L, d: _x(L, d).exp(),
    "sin": lambda L, d: _x(L, d).sin(),
    "sigmoid": lambda L, d: _x(L, d).sigmoid(),
    "atan2": lambda L, d: L.atan2(_x(L, d), _x(L, d, (2, 2, 2))),
    "isnan": lambda L, d: _x(L, d).isnan(),
    "isfinite": lambda L, d: _x(L, d).isfinite(),
    "signbit": lambda L, d: _x(L, d).signbit(),
    "where": lambda L, d: L.where(L.tensor([True, False, True]), _x(L, d), _x(L, d, (9, 9, 9))),
    "where number": lambda L, d: L.where(L.tensor([True, False, True]), _x(L, d), 0),
    "searchsorted float values": lambda L, d: L.searchsorted(_x(L, d), L.tensor([1.5])),
    "searchsorted in floats": lambda L, d: L.searchsorted(L.tensor([1., 2.]), _x(L, d)),
    "sum": lambda L, d: _x(L, d, (_top(d), 2)).sum(),
    "sum dim": lambda L, d: L.tensor([[1, 2], [3, 4]], dtype=getattr(L, d)).sum(0),
    "sum dtype int64": lambda L, d: _x(L, d).sum(dtype=L.int64),
    "prod": lambda L, d: _x(L, d, (300, 300)).prod(),
    "nansum": lambda L, d: _x(L, d).nansum(),
    "cumsum": lambda L, d: _x(L, d, (_top(d) // 2 + 1, 2)).cumsum(0),
    "cumprod": lambda L, d: _x(L, d).cumprod(0),
    "count_nonzero dim": lambda L, d: L.tensor([[0, 2], [3, 4]], dtype=getattr(L, d)).count_nonzero(1),
    "any": lambda L, d: _x(L, d).any(),
    "all": lambda L, d: _x(L, d, (0, 1)).all(),
    "sort": lambda L, d: tuple(_x(L, d, (_top(d), 1, _top(d) // 2 + 1)).sort(descending=True)),
    "sort stable": lambda L, d: tuple(_x(L, d, (3, 1, 3)).sort(stable=True)),
    "argsort": lambda L, d: _x(L, d, (3, 1, 2)).argsort(),
    "unique": lambda L, d: tuple(L.unique(_x(L, d, (_top(d), 1, _top(d))), return_counts=True)),
    "cat": lambda L, d: L.cat([_x(L, d), _x(L, d, (_top(d),))]),
    "stack": lambda L, d: L.stack([_x(L, d), _x(L, d)]),
    "roll": lambda L, d: L.tensor([[1, 2], [3, 4]], dtype=getattr(L, d)).roll(1, 0),
    "repeat": lambda L, d: _x(L, d).repeat(2),
    "diag": lambda L, d: _x(L, d).diag(),
    "t contiguous": lambda L, d: L.tensor([[1, 2], [3, 4]], dtype=getattr(L, d)).t().contiguous(),
    "expand clone": lambda L, d: _x(L, d).reshape(3, 1).expand(3, 2).clone(),
    "index by list": lambda L, d: _x(L, d)[[0, 2]],
    "index by mask": lambda L, d: _x(L, d)[L.tensor([True, False, True])],
    "setitem slice": lambda L, d: _setitem(_x(L, d), slice(0, 2), 7),
    "setitem int": lambda L, d: _setitem(_x(L, d), 1, 7),
    "copy_ from int64": lambda L, d: _x(L, d).copy_(L.tensor([-1, 2, 3])),
    "view as int32 bytes": lambda L, d: _x(L, d, (1, 2, 3, 4)).view(L.uint8),
    "view as uint16": lambda L, d: _x(L, d, (1, 2)).view(L.uint16),
    "float result in place into float": lambda L, d: L.tensor([1., 2, 3]).mul_(_x(L, d)),
    "equal": lambda L, d: L.equal(_x(L, d), _x(L, d)),
    "allclose": lambda L, d: L.allclose(_x(L, d), _x(L, d, (1, 2, 4))),
    "clamp with float bounds": lambda L, d: _x(L, d).clamp(0.5, 2.5),
}


def _setitem(t, index, value):
    t[index] = value
    return t


@pytest.mark.parametrize("case", list(SUPPORTED))
def test_supported(case):
    for d in UNSIGNED:
        _same(lambda L: SUPPORTED[case](L, d))


# -- ops torch refuses: the same error type and message --------------------------------------
def _m(L, d):
    return L.tensor([[1, 2], [3, 4]], dtype=getattr(L, d))


REFUSED = {
    # promotion with anything but a float
    "add int64 tensor": lambda L, d: _x(L, d) + L.tensor([1, 2, 3]),
    "mul bool tensor": lambda L, d: _x(L, d) * L.tensor([True, False, True]),
    "mul uint8 tensor": lambda L, d: _x(L, d) * L.tensor([1, 2, 3], dtype=L.uint8),
    "eq int64 tensor": lambda L, d: L.tensor([1, 2, 3]) == _x(L, d),
    "cat with int64": lambda L, d: L.cat([_x(L, d), L.tensor([1])]),
    "tensor of numpy scalar and int": lambda L, d: L.tensor([np.dtype(d).type(5), 7]),
    "tensor of int and numpy scalar": lambda L, d: L.tensor([7, np.dtype(d).type(5)]),
    "where with another unsigned": lambda L, d: L.where(L.tensor([True, False, True]), _x(L, d),
                                                        _x(L, "uint32" if d == "uint16" else "uint16")),
    # ops with their own dtype checks (tidal files)
    "clamp numbers": lambda L, d: _x(L, d).clamp(1, 2),
    "clamp_min number": lambda L, d: _x(L, d).clamp_min(2),
    "clamp_max past max": lambda L, d: _x(L, d).clamp(max=2 ** 40),
    "topk": lambda L, d: _x(L, d).topk(2),
    "kthvalue": lambda L, d: _x(L, d).kthvalue(1),
    "searchsorted": lambda L, d: L.searchsorted(_x(L, d), _x(L, d)),
    "bucketize": lambda L, d: L.bucketize(_x(L, d), _x(L, d)),
    "isin": lambda L, d: L.isin(_x(L, d), _x(L, d)),
    "gather": lambda L, d: _x(L, d).gather(0, L.tensor([1, 0])),
    "take_along_dim": lambda L, d: _m(L, d).take_along_dim(L.tensor([[1], [0]]), 1),
    "scatter": lambda L, d: _x(L, d).scatter(0, L.tensor([1]), _x(L, d)[:1]),
    "scatter value": lambda L, d: _x(L, d).scatter(0, L.tensor([1]), 5),
    "scatter_add": lambda L, d: _x(L, d).scatter_add(0, L.tensor([1]), _x(L, d)[:1]),
    **{f"scatter_reduce {r}": (lambda L, d, r=r: _x(L, d).scatter_reduce(0, L.tensor([1]), _x(L, d)[:1], r))
       for r in ("sum", "prod", "mean", "amax", "amin")},
    "scatter_reduce exclude self": lambda L, d: _x(L, d).scatter_reduce(0, L.tensor([1]), _x(L, d)[:1], "sum",
                                                                         include_self=False),
    "index_select": lambda L, d: _x(L, d).index_select(0, L.tensor([2])),
    "index_add": lambda L, d: _x(L, d).index_add(0, L.tensor([1, 0]), _x(L, d)[:2]),
    "index_fill": lambda L, d: _x(L, d).index_fill(0, L.tensor([1, 0]), 7),
    "index_copy": lambda L, d: _x(L, d).index_copy(0, L.tensor([1, 0]), _x(L, d)[:2]),
    "take": lambda L, d: _x(L, d).take(L.tensor([1, 0])),
    "flip": lambda L, d: _x(L, d).flip(0),
    "fliplr": lambda L, d: _m(L, d).fliplr(),
    "tril": lambda L, d: _m(L, d).tril(),
    "triu": lambda L, d: _m(L, d).triu(),
    "nonzero": lambda L, d: _x(L, d).nonzero(),
    "argwhere": lambda L, d: _x(L, d).argwhere(),
    "masked_fill": lambda L, d: _x(L, d).masked_fill(L.tensor([True, False, True]), 0),
    "masked_scatter": lambda L, d: _x(L, d).masked_scatter(L.tensor([True, False, True]), _x(L, d)),
    "setitem mask": lambda L, d: _setitem(_x(L, d), L.tensor([True, False, True]), 5),
    "setitem index tensor": lambda L, d: _setitem(_x(L, d), L.tensor([1, 0]), 7),
    "setitem list": lambda L, d: _setitem(_x(L, d), [0, 1], 7),
    "index_put": lambda L, d: _x(L, d).index_put((L.tensor([0]),), _x(L, d)[:1]),
    "put_": lambda L, d: _x(L, d).put_(L.tensor([0]), _x(L, d)[:1]),
    "scatter float src": lambda L, d: _x(L, d).scatter(0, L.tensor([1]), L.tensor([1.5])),
    "mm with float": lambda L, d: L.ones(1, 2).mm(_m(L, d)),
    "index_reduce": lambda L, d: _x(L, d).index_reduce(0, L.tensor([0]), _x(L, d)[:1], "amax"),
    "triu_indices": lambda L, d: L.triu_indices(2, 2, dtype=getattr(L, d)),
    "tril_indices float": lambda L, d: L.tril_indices(2, 2, dtype=L.float32),
    "hardtanh": lambda L, d: L.nn.functional.hardtanh(_x(L, d), 0, 1),
    "relu6": lambda L, d: L.nn.functional.relu6(_x(L, d)),
    "threshold": lambda L, d: L.nn.functional.threshold(_x(L, d), 1, 0),
    "embedding indices": lambda L, d: L.nn.functional.embedding(_x(L, d), L.ones(4, 2)),
    "gather into an unsigned out": lambda L, d: L.gather(L.ones(2), 0, L.tensor([1, 0]),
                                                         out=L.empty(2, dtype=getattr(L, d))),
    "index_put mask, 0-d value": lambda L, d: _x(L, d).index_put((L.tensor([True, False, True]),),
                                                                 L.tensor(9, dtype=getattr(L, d))),
    "masked_select": lambda L, d: _x(L, d).masked_select(L.tensor([True, False, True])),
    "arange": lambda L, d: L.arange(3, dtype=getattr(L, d)),
    "linspace": lambda L, d: L.linspace(0, 3, 4, dtype=getattr(L, d)),
    "logspace": lambda L, d: L.logspace(0, 1, 3, dtype=getattr(L, d)),
    "eye": lambda L, d: L.eye(2, 3, dtype=getattr(L, d)),
    "randperm": lambda L, d: L.randperm(3, dtype=getattr(L, d)),
    "uniform_": lambda L, d: _x(L, d).uniform_(),
    "normal_": lambda L, d: _x(L, d).normal_(),
    "bernoulli_": lambda L, d: _x(L, d).bernoulli_(0.5),
    "bernoulli_ tensor p": lambda L, d: _x(L, d).bernoulli_(L.tensor([0.5, 0.5, 0.5])),
    "cummax": lambda L, d: _x(L, d).cummax(0),
    "cummin": lambda L, d: _x(L, d).cummin(0),
    "cumsum_": lambda L, d: _x(L, d).cumsum_(0),
    "median": lambda L, d: _x(L, d).median(),
    "median dim": lambda L, d: _x(L, d).median(0),
    "mode": lambda L, d: _x(L, d).mode(),
    "bincount": lambda L, d: _x(L, d).bincount(),
    "histc": lambda L, d: _x(L, d).histc(),
    "histc range": lambda L, d: _x(L, d).histc(3, 0, 3),
    "gcd": lambda L, d: _x(L, d).gcd(_x(L, d)),
    "lcm": lambda L, d: _x(L, d).lcm(_x(L, d)),
    "heaviside": lambda L, d: _x(L, d).heaviside(_x(L, d)),
    "matmul": lambda L, d: _m(L, d) @ _m(L, d),
    "mm": lambda L, d: _m(L, d).mm(_m(L, d)),
    "bmm": lambda L, d: _m(L, d)[None].bmm(_m(L, d)[None]),
    "mv": lambda L, d: _m(L, d).mv(_x(L, d, (1, 2))),
    "dot": lambda L, d: _x(L, d).dot(_x(L, d)),
    "einsum": lambda L, d: L.einsum("ij,jk->ik", _m(L, d), _m(L, d)),
    "trace": lambda L, d: _m(L, d).trace(),
    # elementwise ops (ops/elementwise/plans.py)
    "add": lambda L, d: _x(L, d) + _x(L, d),
    "add number": lambda L, d: _x(L, d) + 1,
    "add 0-d int64": lambda L, d: _x(L, d) + L.tensor(1),
    "sub": lambda L, d: _x(L, d) - _x(L, d),
    "rsub": lambda L, d: 5 - _x(L, d),
    "floor_divide": lambda L, d: _x(L, d) // 2,
    "remainder": lambda L, d: _x(L, d) % _x(L, d),
    "fmod": lambda L, d: _x(L, d).fmod(_x(L, d)),
    "pow 2": lambda L, d: _x(L, d) ** 2,
    "rpow": lambda L, d: 2 ** _x(L, d),
    "square": lambda L, d: _x(L, d).square(),
    "neg": lambda L, d: -_x(L, d),
    "abs": lambda L, d: _x(L, d).abs(),
    "sign": lambda L, d: _x(L, d).sign(),
    "sgn": lambda L, d: _x(L, d).sgn(),
    "lt": lambda L, d: _x(L, d) < _x(L, d),
    "le number": lambda L, d: _x(L, d) <= 2,
    "gt": lambda L, d: _x(L, d) > 1,
    "ge": lambda L, d: _x(L, d) >= _x(L, d),
    "maximum": lambda L, d: L.maximum(_x(L, d), _x(L, d)),
    "minimum": lambda L, d: L.minimum(_x(L, d), _x(L, d)),
    "max of two": lambda L, d: L.max(_x(L, d), _x(L, d)),
    "fmax": lambda L, d: L.fmax(_x(L, d), _x(L, d)),
    "clamp tensors": lambda L, d: L.clamp(_x(L, d), _x(L, d), _x(L, d)),
    "relu": lambda L, d: L.relu(_x(L, d)),
    "logical_and": lambda L, d: _x(L, d).logical_and(_x(L, d)),
    "logical_not": lambda L, d: _x(L, d).logical_not(),
    "bitwise_not": lambda L, d: ~_x(L, d),
    "lshift": lambda L, d: _x(L, d) << 1,
    "rshift": lambda L, d: _x(L, d) >> _x(L, d),
    "frac": lambda L, d: _x(L, d).frac(),
    "hypot": lambda L, d: _x(L, d).hypot(_x(L, d)),
    "logaddexp": lambda L, d: _x(L, d).logaddexp(_x(L, d)),
    "nextafter": lambda L, d: _x(L, d).nextafter(_x(L, d)),
    "lerp": lambda L, d: _x(L, d).lerp(_x(L, d), 0.5),
    "diff": lambda L, d: _x(L, d).diff(),
    "addcmul": lambda L, d: _x(L, d).addcmul(_x(L, d), _x(L, d)),
    "mul_ by float": lambda L, d: _x(L, d).mul_(1.5),
    "div_": lambda L, d: _x(L, d).div_(2),
    "mean": lambda L, d: _x(L, d).mean(),
    "nanmean": lambda L, d: _x(L, d).nanmean(),
    "var": lambda L, d: _x(L, d).var(),
    "norm": lambda L, d: _x(L, d).norm(),
    "softmax": lambda L, d: _m(L, d).softmax(0),
    "log_softmax last dim": lambda L, d: _x(L, d).log_softmax(0),
    "logcumsumexp": lambda L, d: _x(L, d).logcumsumexp(0),
    # reductions (ops/reductions/reduce.py)
    "max": lambda L, d: _x(L, d).max(),
    "min": lambda L, d: _x(L, d).min(),
    "max dim": lambda L, d: _m(L, d).max(1),
    "min dim": lambda L, d: _m(L, d).min(0),
    "amax": lambda L, d: _x(L, d).amax(),
    "amin dim": lambda L, d: _m(L, d).amin(1),
    "argmax": lambda L, d: _x(L, d).argmax(),
    "argmin dim": lambda L, d: _m(L, d).argmin(0),
    "aminmax": lambda L, d: _x(L, d).aminmax(),
    "count_nonzero": lambda L, d: _x(L, d).count_nonzero(),
    "sum dtype": lambda L, d: L.tensor([1, 2]).sum(dtype=getattr(L, d)),
    "prod dtype": lambda L, d: _x(L, d).prod(dtype=getattr(L, d)),
    "cumsum dtype": lambda L, d: _x(L, d).cumsum(0, dtype=getattr(L, d)),
    "empty max": lambda L, d: _x(L, d)[:0].max(),
    "empty argmax": lambda L, d: _x(L, d)[:0].argmax(),
    # div's rounding modes (ops/elementwise/arithmetic.py)
    "div trunc": lambda L, d: L.div(_x(L, d), 2, rounding_mode="trunc"),
    "div floor": lambda L, d: L.div(_x(L, d), 2, rounding_mode="floor"),
}


def _refused_alike(case: str) -> None:
    fn = REFUSED[case]
    for d in UNSIGNED:
        want = _outcome(lambda: fn(torch, d))
        assert want[0] != "ok", f"torch ran {case}"  # (the table lists refusals only)
        assert _outcome(lambda: fn(ttorch, d)) == want, (case, d)


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused(case):
    _refused_alike(case)


@pytest.mark.parametrize("d", UNSIGNED)
def test_uint64_reads_python_ints_as_unsigned(d):
    # torch reads Python ints for uint64 as C unsigned longs: negative ones and floats are errors there, while
    # uint16/uint32 wrap negatives like the other integer types
    for values in ([-1], [2 ** 63, -1], [1.5], [2 ** 64], [2 ** 63, 7], [True, 3]) + \
            (([2 ** 63, 1.5],) if d == "uint64" else ()):
        _same(lambda L: L.tensor(values, dtype=getattr(L, d)))


def test_compiled_kernel():
    """Fused elementwise groups compile their expressions with numba: the casts to the unsigned dtypes exist
    in the compiled vocabulary (else such groups could only run as NumPy)."""
    from tidal.ops.elementwise import plans as ew, declarations
    from tidal.vm import codegen
    lines = []
    for k, (name, d) in enumerate((("mul", tidal.uint64), ("bitwise_xor", tidal.uint16), ("eq", tidal.uint32))):
        plan = ew.plan_for(declarations.OPS[name], (tidal.ones(2, dtype=d),) * 2)
        lines.append((plan.expr, (f"i{2 * k}", f"i{2 * k + 1}")))
    prog = codegen.Program(tuple(lines), 6, ("t0", "t1", "t2"))
    ins = [np.array(v, dtype=d) for v, d in (([2 ** 63 + 1, 3], "uint64"), ([3, 2], "uint64"), ([65535, 7], "uint16"),
                                             ([1, 7], "uint16"), ([2 ** 32 - 1, 1], "uint32"), ([2 ** 32 - 1, 2], "uint32"))]
    outs = [np.empty(2, "uint64"), np.empty(2, "uint16"), np.empty(2, np.bool_)]
    codegen.compiled_kernel(prog, ("flat", (True,) * 6, ()))(*outs, *ins)  # (no input aliases an output)
    assert outs[0].tolist() == (torch.tensor(ins[0]) * torch.tensor(ins[1])).tolist()
    assert outs[1].tolist() == (torch.tensor(ins[2]) ^ torch.tensor(ins[3])).tolist()
    assert outs[2].tolist() == (torch.tensor(ins[4]) == torch.tensor(ins[5])).tolist()


def test_uint64_past_int64_as_python_number():
    # int(), bool() and index use torch's conversion through int64_t; item() and float() take any uint64
    for convert in (int, bool, lambda t: [0, 1][t], lambda t: t.item(), float):
        for value in (2 ** 63, 5):
            _same(lambda L: convert(L.tensor(value, dtype=L.uint64)))
