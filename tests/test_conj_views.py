"""Lazy conjugate views (torch's conjugate bit) and the negative views they give (torch's negative bit), against
torch: memory sharing, writes both ways, views keeping the bit, ops reading the values, errors, printing and
gradients (ops/complex_numbers/lazy_views.py)."""
import numpy as np
import pytest
import torch

import tidal.compat as tc

RNG = np.random.default_rng(1619)
Z = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
LIBS = (tc, torch)


def values(t) -> np.ndarray:
    """The values as NumPy, bits resolved (the same call in both libraries)."""
    return t.detach().resolve_conj().resolve_neg().numpy()


def same(got, want, bits: bool = True) -> None:
    """Equal values and shapes, and (with `bits`) the same conjugate and negative bits."""
    if bits:
        assert (got.is_conj(), got.is_neg()) == (want.is_conj(), want.is_neg())
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(values(got), values(want), rtol=1e-5, atol=1e-6)


def pair(dtype="complex64"):
    return tc.tensor(Z, dtype=getattr(tc, dtype)), torch.tensor(Z, dtype=getattr(torch, dtype))


def test_conj_is_a_view_with_the_bit():
    for lib, x in zip(LIBS, pair()):
        y = x.conj()
        assert isinstance(y, lib.Tensor) and y.is_conj() and lib.is_conj(y) and not y.is_neg()
        assert y._base is x and y.data_ptr() == x.data_ptr()
        assert y.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert (y.stride(), y.storage_offset(), y.is_contiguous(), y.dim()) == (x.stride(), 0, True, 2)
        assert not x.is_conj() and lib.conj_physical(x).data_ptr() != x.data_ptr()
    same(pair()[0].conj(), pair()[1].conj())


@pytest.mark.parametrize("write", [
    lambda L, y: y.__setitem__(0, 1 + 2j), lambda L, y: y.__setitem__((slice(None), 1), L.tensor([1j, 2, 3 - 1j])),
    lambda L, y: y.add_(1 + 1j), lambda L, y: y.mul_(L.tensor(Z[0] * 1j, dtype=y.dtype)),
    lambda L, y: y.copy_(L.tensor(Z * 2, dtype=y.dtype)), lambda L, y: y.zero_(), lambda L, y: y.fill_(2 - 3j),
    lambda L, y: y.__iadd__(y), lambda L, y: y.sub_(y.conj()), lambda L, y: y.t().mul_(2j),
    lambda L, y: y[1:, ::2].add_(1j), lambda L, y: y.imag.add_(1), lambda L, y: y.imag.__setitem__(0, 5.0),
    lambda L, y: y.real.mul_(3), lambda L, y: setattr(y, "imag", L.ones(4)), lambda L, y: y.detach().add_(1j),
], ids=["setitem", "setitem_tensor", "add_", "mul_", "copy_", "zero_", "fill_", "iadd_self", "sub_conj", "t_mul_",
        "slice_add_", "imag_add_", "imag_setitem", "real_mul_", "imag_setter", "detach_add_"])
def test_writes_through_the_view_reach_the_source(write):
    got, want = [], []
    for lib, src, out in zip(LIBS, pair(), (got, want)):
        view = src.conj()
        write(lib, view)
        out += [src, view]
    same(got[0], want[0])
    same(got[1], want[1])


def test_writes_into_the_source_are_seen_through_the_view():
    got, want = [], []
    for lib, x, out in ((tc, *pair()[:1], got), (torch, pair()[1], want)):
        y = x.conj()
        before = y * 1
        x.mul_(1j)
        x[0, 0] = 7 - 1j
        out += [y, y.imag, before]
    for a, b in zip(got, want):
        same(a, b)


@pytest.mark.parametrize("view", [
    lambda L, y: y[1:], lambda L, y: y[0], lambda L, y: y[:, 2], lambda L, y: y.t(), lambda L, y: y.mT,
    lambda L, y: y.view(4, 3), lambda L, y: y.reshape(12), lambda L, y: y.unsqueeze(0), lambda L, y: y.detach(),
    lambda L, y: y.data, lambda L, y: y[None].expand(2, 3, 4), lambda L, y: y.transpose(0, 1)[::2],
    lambda L, y: y.narrow(1, 1, 2), lambda L, y: y.flatten(), lambda L, y: y.contiguous(),
    lambda L, y: y.conj(), lambda L, y: y.real, lambda L, y: y.imag, lambda L, y: y.imag[1:].t(),
    lambda L, y: L.conj(y.imag), lambda L, y: y.imag.detach(), lambda L, y: y.mH, lambda L, y: y.mH.conj(),
], ids=["slice", "select", "column", "t", "mT", "view", "reshape", "unsqueeze", "detach", "data", "expand",
        "transpose_step", "narrow", "flatten", "contiguous", "conj", "real", "imag", "imag_view", "imag_conj",
        "imag_detach", "mH", "mH_conj"])
def test_views_of_a_conj_view(view):
    (x, w) = pair()
    got, want = view(tc, x.conj()), view(torch, w.conj())
    same(got, want)
    assert (got.stride(), got.storage_offset()) == (want.stride(), want.storage_offset())
    assert got.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
    assert want.untyped_storage().data_ptr() == w.untyped_storage().data_ptr()
    x.add_(1 - 2j)  # later writes into the source are seen through the view
    w.add_(1 - 2j)
    same(got, want)


@pytest.mark.parametrize("op", [
    lambda L, y: y + 1, lambda L, y: y * y, lambda L, y: y.sum(), lambda L, y: y.abs(), lambda L, y: y.exp(),
    lambda L, y: y @ y.mT, lambda L, y: L.angle(y), lambda L, y: y.imag * 2, lambda L, y: y.clone(),
    lambda L, y: y.resolve_conj(), lambda L, y: L.resolve_conj(y), lambda L, y: y.conj_physical(),
    lambda L, y: L.conj_physical(y), lambda L, y: y.imag.resolve_neg(), lambda L, y: y.imag.clone(),
    lambda L, y: -y.imag, lambda L, y: y.to(L.complex128), lambda L, y: L.cat([y, y.conj()]),
    lambda L, y: y.eq(y.conj()), lambda L, y: y[[0, 2]], lambda L, y: L.view_as_real(y.resolve_conj()),
    lambda L, y: y.cumsum(0), lambda L, y: L.stack([y, y]),
], ids=["add", "mul_self", "sum", "abs", "exp", "matmul", "angle", "imag_mul", "clone", "resolve_conj",
        "torch_resolve_conj", "conj_physical", "torch_conj_physical", "resolve_neg", "imag_clone", "neg_imag", "to",
        "cat", "eq", "index", "view_as_real_resolved", "cumsum", "stack"])
def test_ops_read_the_conjugate_values(op):
    (x, w) = pair()
    got, want = op(tc, x.conj()), op(torch, w.conj())
    same(got, want)
    if want.is_complex() or want.is_floating_point():
        assert got.data_ptr() != x.data_ptr()


def test_item_tolist_and_printing():
    (x, w) = pair()
    y, yw = x.conj(), w.conj()
    assert y[0, 1].item() == pytest.approx(yw[0, 1].item())
    np.testing.assert_allclose(np.array(y.tolist()), np.array(yw.tolist()), rtol=1e-6)
    for got, want in ((y, yw), (y.imag, yw.imag), (y[0], yw[0])):
        assert repr(got).replace("tidal", "torch") == repr(want)


@pytest.mark.parametrize("call", [
    lambda L, y: L.view_as_real(y), lambda L, y: y.numpy(), lambda L, y: y.imag.numpy(), lambda L, y: np.asarray(y),
    lambda L, y: y.view(L.float32), lambda L, y: y.imag.view(L.int32), lambda L, y: y.imag.view(L.float16),
], ids=["view_as_real", "numpy", "imag_numpy", "asarray", "view_dtype", "imag_view_dtype", "imag_view_smaller"])
def test_refusals(call):
    (x, w) = pair()
    with pytest.raises(Exception) as want:
        call(torch, w.conj())
    with pytest.raises(type(want.value)) as got:
        call(tc, x.conj())
    assert str(got.value) == str(want.value)


def test_real_dtypes_conj_is_the_tensor():
    for lib in LIBS:
        x = lib.tensor(Z.real)
        assert x.conj() is x and lib.conj(x) is x and not x.conj().is_conj()
        assert x.resolve_conj() is x and x.resolve_neg() is x


@pytest.mark.parametrize("fn", [
    lambda L, y, c: (y * c).real.sum(), lambda L, y, c: (y.imag * c.real).sum(),
    lambda L, y, c: (y.t() @ c).abs().sum(),
    lambda L, y, c: (y.conj() * c).imag.sum(), lambda L, y, c: (y[1:] * c[1:]).real.sum() + y.real.sum(),
    lambda L, y, c: (y.resolve_conj() * c).real.sum(), lambda L, y, c: L.angle(y * c).sum(),
], ids=["mul", "imag", "matmul", "conj_conj", "slice_real", "resolve", "angle"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_gradients(fn, dtype):
    c = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    grads = []
    for lib in LIBS:
        x = lib.tensor(Z, dtype=getattr(lib, dtype), requires_grad=True)
        fn(lib, x.conj(), lib.tensor(c, dtype=x.dtype)).backward()
        grads.append(x.grad)
    same(*grads, bits=False)  # (torch's gradient may itself be a conj view)


@pytest.mark.parametrize("write", [
    lambda L, y, c: y.mul_(c), lambda L, y, c: y.__setitem__(0, c[0] * 2), lambda L, y, c: y.imag.mul_(c.real),
    lambda L, y, c: y.copy_(c * c),
], ids=["mul_", "setitem", "imag_mul_", "copy_"])
def test_gradients_through_writes(write):
    """A write through a conj view of a non-leaf tensor: the source's history takes it, as in torch."""
    c = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    grads, sources = [], []
    for lib in LIBS:
        leaf = lib.tensor(Z, requires_grad=True)
        cc = lib.tensor(c, dtype=leaf.dtype, requires_grad=True)
        x = leaf * 1
        y = x.conj()
        write(lib, y, cc)
        ((x * cc).real.sum() + (y * 2).imag.sum()).backward()
        grads += [(leaf.grad, cc.grad)]
        sources.append(x)
    same(*sources)
    same(grads[0][0], grads[1][0], bits=False)
    same(grads[0][1], grads[1][1], bits=False)


def test_write_into_a_conj_view_of_a_leaf_is_refused():
    errors = []
    for lib in LIBS:
        x = lib.tensor(Z, requires_grad=True)
        with pytest.raises(RuntimeError) as e:
            x.conj().add_(1)
        errors.append(str(e.value))
    assert errors[0] == errors[1]


@pytest.mark.parametrize("call", [
    lambda L, o: L.mean(L.tensor(Z, dtype=o.dtype) * 1j, 0, out=o[0]), lambda L, o: L.matmul(
        L.tensor(Z, dtype=o.dtype), L.tensor(Z.T, dtype=o.dtype), out=o[:, :3]),
    lambda L, o: L.cumsum(L.tensor(Z, dtype=o.dtype), 1, out=o), lambda L, o: L.sum(L.tensor(Z), 0, out=o[1]),
    lambda L, o: L.add(L.tensor(Z, dtype=o.dtype), 1j, out=o), lambda L, o: L.exp(L.tensor(Z, dtype=o.dtype), out=o),
], ids=["mean", "matmul", "cumsum", "sum", "add", "exp"])
def test_out_into_a_conj_view(call):
    """An op's out= a conj view: the result is stored conjugated into the source, as torch's."""
    got, want = [], []
    for lib, out in zip(LIBS, (got, want)):
        x = lib.zeros(3, 4, dtype=lib.complex128)
        call(lib, x.conj())
        out.append(x)
    same(got[0], want[0])


def test_gradient_after_a_write_into_the_source():
    """x.conj() taken before x changes in place: the view's node follows x's new history (as torch regenerates
    a view's grad_fn)."""
    c = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    grads = []
    for lib in LIBS:
        leaf = lib.tensor(Z, requires_grad=True)
        x = leaf * 1
        y, im = x.conj(), x.conj().imag
        x.mul_(lib.tensor(c))
        x[0, 0] = leaf[1, 1] * 3
        ((y * lib.tensor(c)).real.sum() + (im * 2).sum()).backward()
        grads.append(leaf.grad)
    same(*grads, bits=False)


def test_in_place_metadata_ops_keep_the_memory():
    got, strides = [], []
    for lib, x in zip(LIBS, pair()):
        y = x.conj()
        y.t_()
        y.unsqueeze_(0)
        assert y.is_conj() and y.data_ptr() == x.data_ptr()
        strides.append(y.stride())
        y[0, 1, 2] = 9j
        y.squeeze_()
        y.transpose_(0, 1)
        y[0, 1] = 1 - 1j
        got.append((x, y))
    assert strides[0] == strides[1]
    same(got[0][0], got[1][0])
    same(got[0][1], got[1][1])


def test_writes_through_numpy_are_seen():
    got = []
    for lib, x in zip(LIBS, pair()):
        y = x.conj()
        before = y.sum()
        x.numpy()[1, 2] = 4 + 4j
        got.append((y, before))
    same(got[0][0], got[1][0])
    same(got[0][1], got[1][1])


def test_forward_ad_vmap_and_double_backward():
    t = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    results = []
    for lib in LIBS:
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            dual = fwAD.make_dual(lib.tensor(Z), lib.tensor(t))
            tangents = [fwAD.unpack_dual(v).tangent for v in (dual.conj(), dual.conj().imag, dual.conj() * 2)]
        batched = lib.vmap(lambda r: r.conj() * r.conj().real)(lib.tensor(Z))
        x = lib.tensor(Z, requires_grad=True)
        (g,) = lib.autograd.grad((x.conj() * x * x).real.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad((g.conj() * g).real.sum(), x)
        results.append(tangents + [batched, g, h])
    for got, want in zip(*results):
        same(got, want, bits=False)


def test_a_write_gives_the_source_and_its_conj_view_a_history():
    """x has no history; a value that requires grad written through x.conj() gives both x and the view one."""
    c = RNG.standard_normal((3, 4)) + 1j * RNG.standard_normal((3, 4))
    results = []
    for lib, x in zip(LIBS, pair("complex128")):
        value = lib.tensor(c, requires_grad=True)
        y = x.conj()
        y[1:].copy_(value[1:] * 2)
        ((y * lib.tensor(c)).imag.sum() + x.abs().sum()).backward()
        results.append((x, value.grad, y.requires_grad))
    assert results[0][2] == results[1][2] is True
    same(results[0][0], results[1][0])
    same(results[0][1], results[1][1], bits=False)


def test_library_results_carry_torchs_bits():
    """Results torch returns as conj views (torch.svd's V, ifft and ihfft of real input, mH, adjoint) are conj
    views here too, with the same values; ihfft2/ihfftn are plain in both."""
    real = RNG.standard_normal((4, 6))
    results = []
    for lib, x in zip(LIBS, pair("complex128")):
        r = lib.tensor(real)
        u, s, v = lib.svd(x)
        results.append([v, u @ lib.diag(s).to(x.dtype) @ v.mH, lib.fft.ifft(r), lib.fft.ihfft(r), lib.fft.ihfft2(r),
                        lib.fft.ihfftn(r), lib.fft.ifft2(r), x.adjoint(), x.mH])
    assert results[0][0].is_conj() and results[1][0].is_conj()  # (V itself is unique only up to phases)
    for got, want in zip(results[0][1:], results[1][1:]):
        same(got, want)


def test_save_and_load_keep_the_bits():
    """A checkpoint holds a conj view as torch's does (its memory, and metadata {"conj": True}): each library loads
    the other's with the bits and the memory shared."""
    import io

    def round_trip(save, load, obj):
        buffer = io.BytesIO()
        save.save(obj, buffer)
        buffer.seek(0)
        return load.load(buffer)

    for save, load in ((tc, tc), (tc, torch), (torch, tc)):
        x = save.tensor(Z)
        got = round_trip(save, load, {"x": x, "y": x.conj()})
        assert got["y"].is_conj() and got["y"].data_ptr() == got["x"].data_ptr()
        np.testing.assert_allclose(values(got["y"]), Z.conj(), rtol=1e-6)
        got["y"][0, 0] = 1j
        assert complex(got["x"][0, 0].item()) == -1j
        imag = round_trip(save, load, x.conj().imag[1:])  # (torch saves no two dtypes of one memory together)
        assert imag.is_neg()
        np.testing.assert_allclose(values(imag), -Z.imag[1:], rtol=1e-6)


def test_deepcopy_is_a_plain_copy_of_the_values():
    import copy
    got = []
    for lib, x in zip(LIBS, pair()):
        y = x.conj()
        c = copy.deepcopy(y)
        assert c.data_ptr() != x.data_ptr()
        x.zero_()  # the copy has memory of its own
        got.append((c, copy.deepcopy(y.imag)))
    same(got[0][0], got[1][0])
    same(got[0][1], got[1][1])
