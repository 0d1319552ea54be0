"""Tensor methods about memory, against torch: nbytes/itemsize/layout/output_nr, dim_order, set_/is_set_to,
resize_ (and resize_as_, resize, resize_as), the legacy `new`, pin_memory, apply_/map_/map2_."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from complex_helpers import raises_like

X = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _pair(a=X):
    return tc.tensor(a), torch.tensor(a)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int16", "bool", "complex64", "bfloat16"])
def test_sizes_and_layout(dtype):
    a, b = tc.zeros(2, 3, dtype=getattr(tc, dtype)), torch.zeros(2, 3, dtype=getattr(torch, dtype))
    assert (a.nbytes, a.itemsize) == (b.nbytes, b.itemsize)
    assert (a.t().nbytes, a[:, :1].nbytes) == (b.t().nbytes, b[:, :1].nbytes)
    assert a.layout == tc.strided and b.layout == torch.strided
    assert a.const_data_ptr() == a.data_ptr()


def test_output_nr():
    x, w = tc.tensor(X[0], requires_grad=True), torch.tensor(X[0], requires_grad=True)
    assert x.output_nr == w.output_nr == 0
    ours, theirs = x.max(dim=0), w.max(dim=0)
    assert [o.output_nr for o in ours] == [t.output_nr for t in theirs]
    got, want = x.unbind(1), w.unbind(1)
    assert [o.output_nr for o in got] == [t.output_nr for t in want]


@pytest.mark.parametrize("fn", [
    lambda t: t, lambda t: t.permute(2, 0, 1), lambda t: t.transpose(0, 2), lambda t: t[:, :1],
    lambda t: t.unsqueeze(1).expand(2, 5, 3, 4), lambda t: t[:, :, :1].permute(2, 1, 0), lambda t: t[0, 0],
    lambda t: t.reshape(24)[::2], lambda t: t.sum(), lambda t: t.permute(1, 2, 0).contiguous().permute(2, 0, 1),
], ids=["contiguous", "permute", "transpose", "slice", "expand", "slice_permute", "1d", "strided_1d", "0d",
        "channels_last_like"])
@pytest.mark.parametrize("check", [False, True])
def test_dim_order(fn, check):
    a, b = _pair()
    raises_or_equal = None
    try:
        raises_or_equal = fn(b).dim_order(ambiguity_check=check)
    except RuntimeError:
        raises_like(lambda: fn(a).dim_order(ambiguity_check=check), lambda: fn(b).dim_order(ambiguity_check=check))
        return
    assert fn(a).dim_order(ambiguity_check=check) == raises_or_equal


def test_dim_order_with_memory_formats():
    a, b = tc.zeros(2, 1, 3, 4), torch.zeros(2, 1, 3, 4)
    for formats in ([tc.contiguous_format], [tc.channels_last], [tc.contiguous_format, tc.channels_last]):
        want = [getattr(torch, f.name if hasattr(f, "name") else str(f).split(".")[-1]) for f in formats]
        try:
            expected = b.dim_order(ambiguity_check=want)
        except RuntimeError:
            with pytest.raises(RuntimeError, match="unique dim order"):
                a.dim_order(ambiguity_check=formats)
            continue
        assert a.dim_order(ambiguity_check=formats) == expected


def test_set_and_is_set_to():
    for lib in (tc, torch):
        z = lib.tensor(X.copy())
        w = lib.empty(0)
        assert w.set_(z) is w
        assert w.is_set_to(z) and z.is_set_to(w) and w[0].is_set_to(z[0]) and not z[:1].is_set_to(z)
        w[0, 0, 0] = 100.0
        assert float(z[0, 0, 0]) == 100.0  # shared memory
        v = lib.empty(0).set_(z, 2, (3, 2), (4, 1))
        np.testing.assert_array_equal(v.numpy(), z.numpy().reshape(-1)[2:14].reshape(3, 4)[:, :2])
        e = lib.ones(3).set_()
        assert tuple(e.shape) == (0,)
    raises_like(lambda: tc.empty(1).set_(tc.empty(1, dtype=tc.int64)),
                lambda: torch.empty(1).set_(torch.empty(1, dtype=torch.int64)))


def test_set_keeps_autograd_identity():
    x = tc.zeros(2, requires_grad=True)
    with tc.no_grad():
        x.set_(tc.ones(3))
    (x * 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])


@pytest.mark.parametrize("size", [(3, 2), (2,), (4, 4), (0,), (2, 0, 3), ()])
def test_resize_keeps_leading_values(size):
    ours, theirs = tc.tensor(X[0].copy()), torch.tensor(X[0].copy())
    args = size if size else (size,)  # a 0-d size only as a tuple, in both
    assert ours.resize_(*args) is ours and theirs.resize_(*args) is theirs
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.stride() == theirs.stride()
    n = min(12, ours.numel())  # beyond the old elements the values are uninitialized in both
    np.testing.assert_array_equal(ours.reshape(-1)[:n].numpy(), theirs.reshape(-1)[:n].numpy())


def test_resize_variants():
    a, b = _pair(X[0])
    raises_like(lambda: a.clone().resize_(), lambda: b.clone().resize_())
    for lib, t in ((tc, a), (torch, b)):
        with pytest.raises(RuntimeError):  # torch's message here is its numel overflow check's
            t.clone().resize_(2, -1)
    assert a.t().resize_(2, 3).stride() == b.t().resize_(2, 3).stride()
    assert a.clone().resize_(1, 2, 3, 2, memory_format=tc.channels_last).stride() == \
        b.clone().resize_(1, 2, 3, 2, memory_format=torch.channels_last).stride()
    raises_like(lambda: a.clone().resize_(3, 2, memory_format=tc.channels_last),
                lambda: b.clone().resize_(3, 2, memory_format=torch.channels_last))
    raises_like(lambda: a.clone().requires_grad_().resize_(3), lambda: b.clone().requires_grad_().resize_(3))
    t_ours, t_theirs = tc.empty(5), torch.empty(5)
    assert tuple(tc.resize_as_(t_ours, a).shape) == tuple(torch.resize_as_(t_theirs, b).shape) == (3, 4)
    assert tuple(tc.empty(1).resize_as_(a).shape) == (3, 4)
    for lib, t in ((tc, a), (torch, b)):
        with pytest.warns(UserWarning, match="non-inplace resize is deprecated"):
            r = t.resize(4, 3)
        np.testing.assert_array_equal(r.numpy(), X[0].reshape(4, 3))
        assert tuple(t.shape) == (3, 4)
        with pytest.warns(UserWarning, match="non-inplace resize_as is deprecated"):
            assert tuple(t.resize_as(lib.empty(2, 6)).shape) == (2, 6)


def test_resize_grows_into_new_memory():
    ours, theirs = tc.tensor(X[0].copy()), torch.tensor(X[0].copy())
    ours.resize_(20)
    theirs.resize_(20)
    ours[12:] = 1.0
    theirs[12:] = 1.0
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    (ours * 2).sum()  # the regrown tensor takes part in ops


@pytest.mark.parametrize("args", [(), (2, 3), (tc.Size([2, 2]),), ([[1, 2], [3, 4]],), ((2, 3),), ([],)],
                         ids=["empty", "sizes", "Size", "nested_list", "tuple_is_data", "empty_list"])
def test_new(args):
    def conv(a):
        return torch.Size(a) if isinstance(a, tidal.Size) else a
    for dtype in ("float32", "int64"):
        a, b = tc.zeros(1, dtype=getattr(tc, dtype)), torch.zeros(1, dtype=getattr(torch, dtype))
        got, want = a.new(*args), b.new(*[conv(x) for x in args])
        assert tuple(got.shape) == tuple(want.shape) and str(got.dtype)[6:] == str(want.dtype)[6:]
        if args and isinstance(args[0], (list, tuple)) and not isinstance(args[0], tidal.Size):
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_new_from_tensor_and_errors():
    a, b = _pair(X[0])
    src, tsrc = tc.ones(2), torch.ones(2)
    alias = a.new(src)
    assert alias.data_ptr() == src.data_ptr() and b.new(tsrc).data_ptr() == tsrc.data_ptr()
    with pytest.raises(TypeError):
        b.new(torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError):
        a.new(tc.ones(2, dtype=tc.int64))
    raises_like(lambda: a.new(2.5), lambda: b.new(2.5))


def test_pin_memory():
    a, b = _pair(X[0])
    assert a.is_pinned() == b.is_pinned() == False  # noqa: E712
    if tc.accelerator.is_available() == torch.accelerator.is_available() == False:  # noqa: E712
        raises_like(lambda: a.pin_memory(), lambda: b.pin_memory())


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_apply_(dtype):
    fns = {"float32": lambda v: v * 2 + 1, "int64": lambda v: v / 2, "bool": lambda v: not v}
    a, b = tc.tensor(X[0] > 5 if dtype == "bool" else X[0]).to(getattr(tc, dtype)), \
        torch.tensor(X[0] > 5 if dtype == "bool" else X[0]).to(getattr(torch, dtype))
    assert a.apply_(fns[dtype]) is a
    b.apply_(fns[dtype])
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    seen = []
    tc.tensor([1, 2]).apply_(lambda v: seen.append(type(v)) or v)
    torch.tensor([1, 2]).apply_(lambda v: seen.append(type(v)) or v)
    assert seen[:2] == seen[2:]


def test_map_and_map2():
    a, b = _pair(X[0])
    a.map_(tc.arange(4.0), lambda u, v: u * v - 1)
    b.map_(torch.arange(4.0), lambda u, v: u * v - 1)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    a.map2_(tc.ones(3, 1), tc.arange(4.0), lambda u, v, w: u + v * w)
    b.map2_(torch.ones(3, 1), torch.arange(4.0), lambda u, v, w: u + v * w)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    raises_like(lambda: a.map_(tc.ones(4, dtype=tc.int64), lambda u, v: u),
                lambda: b.map_(torch.ones(4, dtype=torch.int64), lambda u, v: u))
    raises_like(lambda: a.clone().requires_grad_().map_(tc.ones(4), lambda u, v: u),
                lambda: b.clone().requires_grad_().map_(torch.ones(4), lambda u, v: u))
    raises_like(lambda: a.clone().requires_grad_().apply_(lambda u: u),
                lambda: b.clone().requires_grad_().apply_(lambda u: u))


def test_set_in_a_graph():
    raises_like(lambda: tc.ones(2, requires_grad=True).set_(tc.zeros(3)),
                lambda: torch.ones(2, requires_grad=True).set_(torch.zeros(3)))
    for make in (lambda lib: (lib.ones(2, requires_grad=True) * 2, lib.zeros(3)),
                 lambda lib: (lib.ones(2), lib.zeros(3, requires_grad=True))):
        ours, theirs = make(tc), make(torch)
        ours[0].set_(ours[1])
        theirs[0].set_(theirs[1])
        assert ours[0].requires_grad and theirs[0].requires_grad
        assert type(ours[0].grad_fn).__name__ == type(theirs[0].grad_fn).__name__
        raises_like(lambda: ours[0].sum().backward(), lambda: theirs[0].sum().backward())


@pytest.mark.parametrize("shape,perm", [((2, 3, 4, 5), (0, 2, 3, 1)), ((2, 3, 4, 5), (0, 1, 2, 3)),
                                        ((2, 1, 4, 5), (0, 2, 3, 1)), ((2, 3, 4, 5, 6), (0, 2, 3, 4, 1)),
                                        ((3, 4), (1, 0)), ((2, 0, 3, 4), (0, 2, 3, 1))])
def test_is_contiguous_in_each_memory_format_as_torch(shape, perm):
    back = [perm.index(i) for i in range(len(perm))]
    ours = tc.zeros(*[shape[p] for p in perm]).permute(*back)
    ref = torch.zeros(*[shape[p] for p in perm]).permute(*back)
    for fmt in ("contiguous_format", "channels_last", "channels_last_3d", "preserve_format"):
        if fmt == "preserve_format":
            continue  # torch refuses it here
        assert ours.is_contiguous(memory_format=getattr(tc, fmt)) == \
            ref.is_contiguous(memory_format=getattr(torch, fmt)), fmt
    assert ours.is_contiguous() == ref.is_contiguous()
