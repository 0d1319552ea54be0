"""Jagged nested tensors with holes (nested_tensor_from_jagged(values, offsets, lengths), torch.nested.narrow) and
jagged_dim, against torch 2.13: components, the ops torch runs on the whole values() buffer, its refusals (error
types and words), contiguous()/reshape() packing, gradients into values and the narrowed base, and save/load both
ways (nested/holes.py, nested/__init__.py)."""
import io
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc

V = (np.arange(30.0, dtype=np.float32).reshape(10, 3) - 14) / 7
OFFSETS, LENGTHS = [0, 3, 6, 10], [2, 3, 1]
BASE = np.arange(30.0, dtype=np.float32).reshape(3, 5, 2)


def holed(L, grad: bool = False):
    """(values, a (3, j, 3) jagged tensor with holes over it, the same offsets without lengths)."""
    values = L.tensor(V, requires_grad=grad)
    offsets = L.tensor(OFFSETS)
    nt = L.nested.nested_tensor_from_jagged(values, offsets, L.tensor(LENGTHS))
    return values, nt, L.nested.nested_tensor_from_jagged(values, offsets)


def described(r):
    """A result field by field: nested (layout, contiguity, lengths, offsets, components) or dense values."""
    if isinstance(r, (tuple, list)):
        return [described(x) for x in r]
    if not isinstance(r, (torch.Tensor, tc.Tensor)):
        return r
    if r.is_nested:
        jagged = r.layout is (torch.jagged if isinstance(r, torch.Tensor) else tc.jagged)
        meta = (r.is_contiguous(), None if r.lengths() is None else r.lengths().tolist(), r.offsets().tolist(),
                r._ragged_idx) if jagged else ()
        return ("nested", jagged, r.dim(), meta, [np.asarray(u.detach().tolist()) for u in r.unbind()])
    return ("dense", tuple(r.shape), np.asarray(r.detach().tolist()))


def assert_same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
    elif isinstance(want, tuple) and want and want[0] == "nested":
        assert got[:4] == want[:4]
        assert_same(got[4], want[4])
    elif isinstance(want, tuple) and want and want[0] == "dense":
        assert got[1] == want[1]
        np.testing.assert_allclose(got[2], want[2], rtol=1e-5, atol=1e-5)
    elif isinstance(want, np.ndarray):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    else:
        assert got == want


def run(L, fn):
    """`fn(L, nt, contiguous_nt)` on a fresh tensor with holes: the described result or (error type, message)."""
    _, nt, packed = holed(L)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return described(fn(L, nt, packed))
    except (RuntimeError, ValueError, IndexError, AssertionError) as e:
        return type(e), str(e)


RUNS = {  # ops torch runs on the whole values() buffer, keeping offsets and lengths
    "unbind": lambda L, nt, p: list(nt.unbind()),
    "getitem": lambda L, nt, p: nt[1],
    "select0": lambda L, nt, p: nt.select(0, 2),
    "sin": lambda L, nt, p: nt.sin(),
    "add_scalar": lambda L, nt, p: nt * 2 + 1,
    "add_self": lambda L, nt, p: nt + nt,
    "dense_row": lambda L, nt, p: nt - L.ones(3),
    "where": lambda L, nt, p: L.where(nt > 0, nt, 0.0),
    "sum_all": lambda L, nt, p: nt.sum(),  # (torch sums values(), holes included)
    "mean_all": lambda L, nt, p: nt.mean(),
    "sum_dim2": lambda L, nt, p: nt.sum(dim=2),
    "mean_keepdim": lambda L, nt, p: nt.mean(2, keepdim=True),
    "argmax_dim2": lambda L, nt, p: nt.argmax(dim=2),
    "softmax_dim2": lambda L, nt, p: nt.softmax(dim=2),
    "log_softmax_dim2": lambda L, nt, p: nt.log_softmax(dim=-1),
    "layer_norm": lambda L, nt, p: L.nn.functional.layer_norm(nt, (3,)),
    "matmul": lambda L, nt, p: nt @ L.tensor(V[:3, :2]),
    "transpose": lambda L, nt, p: nt.transpose(1, 2),
    "unsqueeze": lambda L, nt, p: nt.unsqueeze(-1),
    "unflatten": lambda L, nt, p: nt.unflatten(2, (3, 1)),
    "view": lambda L, nt, p: nt.view(3, -1, 3),
    "expand": lambda L, nt, p: nt.unsqueeze(2).expand(3, -1, 2, 3),
    "cat": lambda L, nt, p: L.cat([nt, nt], dim=2),
    "stack": lambda L, nt, p: L.stack([nt, nt], 2),
    "clone": lambda L, nt, p: nt.clone(),
    "to_double": lambda L, nt, p: nt.to(L.float64),
    "zeros_like": lambda L, nt, p: L.zeros_like(nt),
    "fill_": lambda L, nt, p: nt.detach().clone().fill_(2.0),
    "is_same_size": lambda L, nt, p: [nt.is_same_size(nt), nt.is_same_size(p)],
    "contiguous": lambda L, nt, p: nt.contiguous(),  # packed: offsets from lengths, no holes
    "reshape": lambda L, nt, p: nt.reshape(3, -1, 3, 1),
    "packed_narrow_dim2": lambda L, nt, p: p.narrow(2, 0, 2),
    "numel_len": lambda L, nt, p: [nt.numel(), len(nt), nt.is_contiguous(), p.is_contiguous(), nt.values().shape[0]],
}

REFUSALS = {  # torch's refusals of tensors with holes, and of the ragged / batch dims
    "sum_ragged": lambda L, nt, p: nt.sum(dim=1),
    "sum_batch_ragged": lambda L, nt, p: nt.sum(dim=(0, 1)),
    "sum_ragged_dense": lambda L, nt, p: nt.sum(dim=(1, 2)),
    "sum_batch_dense": lambda L, nt, p: nt.sum(dim=(0, 2)),
    "amax_ragged": lambda L, nt, p: nt.amax(dim=1),
    "any_ragged": lambda L, nt, p: (nt > 0).any(dim=1),
    "softmax_ragged": lambda L, nt, p: nt.softmax(dim=1),
    "log_softmax_ragged": lambda L, nt, p: nt.log_softmax(dim=1),
    "to_padded": lambda L, nt, p: nt.to_padded_tensor(0.0),
    "to_padded_fn": lambda L, nt, p: L.nested.to_padded_tensor(nt, -1.0),
    "narrow": lambda L, nt, p: nt.narrow(2, 0, 2),
    "chunk": lambda L, nt, p: nt.chunk(3, dim=2),
    "split": lambda L, nt, p: nt.split(1, dim=2),
    "split_sizes": lambda L, nt, p: nt.split([1, 2], dim=2),
    "squeeze": lambda L, nt, p: nt.unsqueeze(3).squeeze(3),
    "select2": lambda L, nt, p: nt.select(2, 1),
    "slice": lambda L, nt, p: nt[:, :, 0],
    "permute": lambda L, nt, p: nt.permute(0, 2, 1),
    "bmm": lambda L, nt, p: nt.bmm(L.ones(3, 3, 4)),
    "masked_select": lambda L, nt, p: nt.masked_select(nt > 0),
    "sdpa": lambda L, nt, p: L.nn.functional.scaled_dot_product_attention(
        *(nt.unflatten(-1, (1, 3)).transpose(1, 2),) * 3),
    "embedding": lambda L, nt, p: L.nn.functional.embedding(L.nested.nested_tensor_from_jagged(
        L.tensor([1, 2, 3, 4]), L.tensor([0, 2, 4]), L.tensor([1, 2])), L.ones(5, 2)),
    "bad_lengths": lambda L, nt, p: L.nested.nested_tensor_from_jagged(
        L.tensor(V), L.tensor(OFFSETS), L.tensor([2, 3, 9])).unbind(),
    "packed_narrow_ragged": lambda L, nt, p: p.narrow(1, 0, 2),
    "packed_narrow_batch": lambda L, nt, p: p.narrow(0, 0, 2),
}


@pytest.mark.parametrize("name", list(RUNS))
def test_runs_like_torch(name):
    assert_same(run(tc, RUNS[name]), run(torch, RUNS[name]))


@pytest.mark.parametrize("name", list(REFUSALS))
def test_refuses_like_torch(name):
    want, got = run(torch, REFUSALS[name]), run(tc, REFUSALS[name])
    assert isinstance(want, tuple) and isinstance(want[0], type), want  # torch refuses it
    assert got == want


def test_dense_batch_operand_refused():
    """A (B, 1, D) dense operand: torch refuses it against a tensor with holes (it names a made-up ragged size)."""
    for L in (torch, tc):
        _, nt, packed = holed(L)
        with pytest.raises(RuntimeError, match="cannot call binary pointwise function add"):
            nt + L.ones(3, 1, 3)
    assert_same(described(holed(tc)[2] + tc.ones(3, 1, 3)), described(holed(torch)[2] + torch.ones(3, 1, 3)))


def test_ragged_size_follows_lengths():
    """Tensors made from the same lengths tensor share their ragged size; contiguous() makes a new one."""
    for L in (torch, tc):
        values, offsets, lengths = L.tensor(V), L.tensor(OFFSETS), L.tensor(LENGTHS)
        a = L.nested.nested_tensor_from_jagged(values, offsets, lengths)
        b = L.nested.nested_tensor_from_jagged(values * 2, offsets, lengths)
        c = L.nested.nested_tensor_from_jagged(values, offsets)
        assert a.shape[1] is b.shape[1] and a.shape[1] is not c.shape[1]
        assert (a + b).shape[1] is a.shape[1] and a.clone().shape[1] is a.shape[1]
        assert a.contiguous().shape[1] is not a.shape[1]
        with pytest.raises(RuntimeError, match="cannot call binary pointwise function"):
            a + c


def test_gradients_reach_values_with_zero_holes():
    grads = []
    for L in (torch, tc):
        values, nt, _ = holed(L, grad=True)
        parts = (nt.cos() * 3).unbind()
        (parts[0].sum() + (parts[2] ** 2).sum()).backward()
        grads.append(np.asarray(values.grad.tolist()))
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-6)
    assert not grads[1][2:6].any()  # rows 2 (a hole) and 3..5 (component 1, unused)


def test_contiguous_gradient():
    """contiguous() packs the components; the gradient reaches their rows of values() and not the holes (torch's
    own backward through this copy fails on the two ragged sizes, so NumPy is the reference)."""
    values, nt, _ = holed(tc, grad=True)
    (nt.contiguous().values() ** 2).sum().backward()
    rows = np.zeros(10, bool)
    for o, n in zip(OFFSETS, LENGTHS):
        rows[o:o + n] = True
    np.testing.assert_allclose(np.asarray(values.grad.tolist()), np.where(rows[:, None], 2 * V, 0), rtol=1e-6)


def test_jagged_dim():
    for lengths in (None, LENGTHS):
        got, want = [described(L.nested.nested_tensor_from_jagged(
            L.tensor(V.T.copy()), L.tensor(OFFSETS), None if lengths is None else L.tensor(lengths), jagged_dim=2))
            for L in (tc, torch)]
        assert_same(got, want)
    for L in (torch, tc):
        with pytest.raises(ValueError, match=r"^Expected jagged_dim >=1, but got 0.$"):
            L.nested.nested_tensor_from_jagged(L.tensor(V), L.tensor(OFFSETS), jagged_dim=0)
        with pytest.raises(RuntimeError, match="At least one of offsets or lengths is required"):
            L.nested.nested_tensor_from_jagged(L.tensor(V))
    only = [described(L.nested.nested_tensor_from_jagged(L.tensor(V), lengths=L.tensor([2, 3, 5]))) for L in (tc, torch)]
    assert_same(only[0], only[1])  # lengths alone: offsets from them, no holes


NARROWS = {
    "ints": lambda L, b: L.nested.narrow(b, 1, 1, 3, layout=L.jagged),
    "tensors": lambda L, b: L.nested.narrow(b, 1, L.tensor([0, 1, 2]), L.tensor([1, 2, 3]), layout=L.jagged),
    "full_rows": lambda L, b: L.nested.narrow(b, 1, 0, 5, layout=L.jagged),
    "last_short": lambda L, b: L.nested.narrow(b, 1, 0, L.tensor([5, 5, 3]), layout=L.jagged),
    "mean": lambda L, b: L.nested.narrow(b, 1, L.tensor([0, 1, 2]), 2, layout=L.jagged).mean(-1),
    "strided_batch": lambda L, b: L.nested.narrow(b, 0, 1, 2),
    "bad_broadcast": lambda L, b: L.nested.narrow(b, 1, L.tensor([0, 1]), 2, layout=L.jagged),
    "one_dim": lambda L, b: L.nested.narrow(L.arange(6.0), 1, 0, 2, layout=L.jagged),
    "jagged_dim2": lambda L, b: L.nested.narrow(b, 2, 0, 1, layout=L.jagged),
    "strided_dim1": lambda L, b: L.nested.narrow(b, 1, 0, 2),
    "strided_tensor": lambda L, b: L.nested.narrow(b, 1, L.tensor([0, 1, 2]), 2),
    "float_start": lambda L, b: L.nested.narrow(b, 1, 1.5, 2, layout=L.jagged),
    "float_length": lambda L, b: L.nested.narrow(b, 1, 1, 2.5, layout=L.jagged),
    "bad_layout": lambda L, b: L.nested.narrow(b, 1, 1, 2, layout=L.sparse_coo),
}


@pytest.mark.parametrize("name", list(NARROWS))
def test_nested_narrow(name):
    got, want = [run(L, lambda L, nt, p: NARROWS[name](L, L.tensor(BASE))) for L in (tc, torch)]
    if name == "strided_batch":  # (torch's strided narrow is a view, so not contiguous; tidal's copies)
        got, want = got[4], want[4]
    assert_same(got, want)


def test_narrow_views_base_and_gradient():
    grads = []
    for L in (torch, tc):
        base = L.tensor(BASE, requires_grad=True)
        nt = L.nested.narrow(base, 1, L.tensor([0, 1, 2]), L.tensor([1, 2, 3]), layout=L.jagged)
        (nt.sin() * 2).unbind()[1].sum().backward()
        grads.append(np.asarray(base.grad.tolist()))
        plain = L.tensor(BASE)
        view = L.nested.narrow(plain, 1, L.tensor([0, 1, 2]), 2, layout=L.jagged)
        view.values()[0, 0] = 100.0  # a view: the write reaches the base
        assert plain[0, 0, 0].item() == 100.0
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)


def test_save_load_with_lengths_both_ways():
    """torch.save of a tensor with holes loads in the other framework with its lengths."""
    for src, dst in ((torch, tc), (tc, torch), (tc, tc)):
        _, nt, _ = holed(src)
        buf = io.BytesIO()
        src.save(nt.detach(), buf)
        buf.seek(0)
        back = dst.load(buf, weights_only=False)
        assert_same(described(back), described(holed(dst)[1]))
