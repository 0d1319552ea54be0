"""Jagged nested tensors against torch's (values, gradients, errors): reductions over any dims torch reduces
(before the ragged dim, over the ragged dim with keepdim, over batch and ragged together), softmax over the ragged
dim, and the shape ops view/reshape, unsqueeze/squeeze, select/narrow, expand, permute, split, is_same_size
(nested/reductions.py, nested/shape_ops.py, which nested/dispatch.py routes to)."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc

def cases(table: dict) -> list:
    """pytest params (name, fn) of a table."""
    return [pytest.param(name, fn, id=name) for name, fn in table.items()]
A = np.arange(6.0, dtype=np.float32).reshape(2, 3) / 4
B = (np.arange(12.0, dtype=np.float32).reshape(4, 3) - 5) / 3


def jt(L, transposed: bool = False, grad: bool = False):
    """A (2, j, 3) jagged tensor (or its (2, 3, j) transpose), a leaf when `grad`."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        nt = L.nested.nested_tensor([L.tensor(A), L.tensor(B)], layout=L.jagged, requires_grad=grad)
    return (nt.transpose(1, 2) if transposed else nt), nt


def described(r):
    """What a result is: nested (dims, ragged dim, components) or dense (shape, values), field by field."""
    if isinstance(r, (tuple, list)):
        return [described(x) for x in r]
    if isinstance(r, bool):
        return r
    if r.is_nested:
        return ("nested", r.dim(), r._ragged_idx, [np.asarray(u.detach().tolist()) for u in r.unbind()])
    return ("dense", tuple(r.shape), np.asarray(r.detach().tolist()))


def assert_same(got, want):
    if isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w)
        return
    if isinstance(want, bool):
        assert got is want
        return
    assert got[:-1] == want[:-1]
    g, w = got[-1], want[-1]
    if isinstance(w, list):
        assert len(g) == len(w)
        for x, y in zip(g, w):
            np.testing.assert_allclose(x, y, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-6)


def _scalar(L, r):
    """A weighted sum of a result's floating values (so every element's gradient differs)."""
    parts = r if isinstance(r, (tuple, list)) else [r]
    total = 0
    for p in parts:
        if not p.dtype.is_floating_point:
            continue
        flat = p.values() if p.is_nested else p
        total = total + (flat * L.linspace(-1.0, 2.0, flat.numel()).reshape(flat.shape)).sum()
    return total


def _tidal_scalar(fn, values, transposed: bool):
    """The weighted sum of fn's result for a jagged tensor over `values` (a (6, 3) float64 tensor)."""
    nt = tc.nested.nested_tensor_from_jagged(values, tc.tensor([0, 2, 6]))
    return _scalar(tc, fn(tc, nt.transpose(1, 2) if transposed else nt))


def check(fn, transposed: bool = False, grads: bool = True):
    """fn(L, nt) on torch and tidal: the same result; tidal's gradient equal to central differences of its
    forward in float64 (torch's own jagged backward lacks most of these: _nested_sum_backward, select's, narrow's...,
    and crashes on some)."""
    results = []
    for L in (torch, tc):
        results.append(described(fn(L, jt(L, transposed)[0])))
    assert_same(results[1], results[0])
    if not grads:
        return
    start = np.concatenate([A, B]).astype(np.float64)
    leaf = tc.tensor(start, requires_grad=True)
    _tidal_scalar(fn, leaf, transposed).backward()
    numeric, eps = np.zeros_like(start), 1e-6
    for index in np.ndindex(*start.shape):
        up, down = start.copy(), start.copy()
        up[index] += eps
        down[index] -= eps
        numeric[index] = (_tidal_scalar(fn, tc.tensor(up), transposed).item()
                          - _tidal_scalar(fn, tc.tensor(down), transposed).item()) / (2 * eps)
    np.testing.assert_allclose(leaf.grad.numpy(), numeric, rtol=1e-5, atol=1e-6)


def check_error(fn, transposed: bool = False):
    """fn(L, nt) raises the same error type and message on torch and tidal (the ragged size's name aside)."""
    errors = []
    for L in (torch, tc):
        nt, _ = jt(L, transposed)
        with pytest.raises(Exception) as info:
            fn(L, nt)
        errors.append(info)
    want, got = errors
    assert got.type is want.type
    strip = lambda s: " ".join("j" if w.startswith("j") and w[1:].strip(",)]").isdigit() else w  # noqa: E731
                               for w in str(s).replace("(", " ( ").replace(",", " , ").split())
    assert strip(got.value) == strip(want.value)


REDUCTIONS = {
    "sum_ragged_keepdim": lambda L, x: x.sum(1, keepdim=True),
    "mean_ragged_keepdim": lambda L, x: x.mean(1, keepdim=True),
    "amax_ragged_keepdim": lambda L, x: x.amax(1, keepdim=True),
    "amin_ragged": lambda L, x: x.amin(1),
    "prod_ragged": lambda L, x: x.prod(1),
    "sum_batch_and_ragged": lambda L, x: x.sum((0, 1)),
    "sum_batch_and_ragged_keepdim": lambda L, x: x.sum((0, 1), keepdim=True),
    "mean_batch_ragged_dense": lambda L, x: x.mean((0, 1, 2)),
    "sum_dense_list_keepdim": lambda L, x: x.sum([2], keepdim=True),
    "prod_dense": lambda L, x: x.prod(2),
    "max_dense": lambda L, x: x.max(2),
    "max_ragged": lambda L, x: x.max(1),
    "min_ragged_keepdim": lambda L, x: x.min(1, keepdim=True),
    "min_all": lambda L, x: x.min(),
    "max_all": lambda L, x: x.max(),
    "sum_all": lambda L, x: x.sum(),
}


@pytest.mark.parametrize("name, fn", cases(REDUCTIONS))
def test_reductions(name, fn):
    check(fn)


@pytest.mark.parametrize("name, fn", cases({
    "argmax_ragged": lambda L, x: x.argmax(1), "argmin_dense": lambda L, x: x.argmin(2),
    "any_dense": lambda L, x: (x > 0).any(2), "all_ragged": lambda L, x: (x > -1).all(1),
    "any_batch_and_ragged": lambda L, x: (x > 1).any((0, 1)),
}))
def test_reductions_without_gradients(name, fn):
    check(fn, grads=False)


@pytest.mark.parametrize("name, fn", cases({
    "sum_before_ragged": lambda L, x: x.sum(1), "mean_before_ragged_keepdim": lambda L, x: x.mean(1, keepdim=True),
    "amax_ragged_of_transposed": lambda L, x: x.amax(-1), "sum_ragged_keepdim": lambda L, x: x.sum(2, keepdim=True),
    "max_before_ragged": lambda L, x: x.max(1),
}))
def test_reductions_of_a_transposed_jagged_tensor(name, fn):
    check(fn, transposed=True)


@pytest.mark.parametrize("fn", [lambda L, x: x.sum(0), lambda L, x: x.sum((1, 2)), lambda L, x: x.amax((0, 2))],
                         ids=["batch", "ragged_and_dense", "batch_and_dense"])
def test_reductions_torch_refuses(fn):
    check_error(fn)


@pytest.mark.parametrize("name, fn", cases({
    "softmax": lambda L, x: x.softmax(1), "softmax_function": lambda L, x: L.nn.functional.softmax(x, dim=-2),
    "softmax_dense": lambda L, x: x.softmax(-1), "log_softmax_dense": lambda L, x: x.log_softmax(2),
}))
def test_softmax_over_the_ragged_dim(name, fn):
    check(fn)


def test_log_softmax_over_the_ragged_dim_is_refused_as_torch():
    check_error(lambda L, x: L.nn.functional.log_softmax(x, dim=1))


SHAPES = {
    "view_split_dense": lambda L, x: x.view(2, -1, 3, 1),
    "view_minus_ones": lambda L, x: x.view(-1, -1, 3),
    "view_own_shape": lambda L, x: x.view(2, -1, 3, 1).view(x.shape),
    "reshape": lambda L, x: x.reshape(2, -1, 1, 3),
    "reshape_tuple": lambda L, x: x.reshape((2, -1, 3, 1)),
    "unsqueeze_last": lambda L, x: x.unsqueeze(-1),
    "unsqueeze_after_ragged": lambda L, x: x.unsqueeze(2),
    "unsqueeze_before_ragged": lambda L, x: x.unsqueeze(1),
    "squeeze": lambda L, x: x.unsqueeze(-1).squeeze(-1),
    "select_dense": lambda L, x: x.select(2, 1),
    "select_component": lambda L, x: x.select(0, 1),
    "narrow_dense": lambda L, x: x.narrow(2, 1, 2),
    "expand": lambda L, x: x.unsqueeze(-1).expand(2, -1, 3, 2),
    "permute": lambda L, x: x.permute(0, 2, 1),
    "split_sizes": lambda L, x: x.split([1, 2], -1),
    "split_size": lambda L, x: x.split(2, 2),
    "torch_split": lambda L, x: L.split(x, 1, dim=-1),
    "flatten_after_unsqueeze": lambda L, x: x.unsqueeze(-1).flatten(-2),
}


@pytest.mark.parametrize("name, fn", cases(SHAPES))
def test_shape_ops(name, fn):
    check(fn)


def test_shape_ops_of_a_transposed_jagged_tensor():
    check(lambda L, x: x.view(x.shape), transposed=True)
    check(lambda L, x: x.permute(0, 2, 1), transposed=True)
    check(lambda L, x: x.select(1, 0), transposed=True)
    check(lambda L, x: x.unsqueeze(1), transposed=True)


def test_is_same_size():
    for L in (torch, tc):
        x, _ = jt(L)
        y, _ = jt(L)
        assert x.is_same_size(x * 2) and not x.is_same_size(y)  # another ragged size: other offsets


@pytest.mark.parametrize("fn", [
    lambda L, x: x.view(2, -1), lambda L, x: x.view(2, -1, 4), lambda L, x: x.view(3, -1, 3),
    lambda L, x: x.squeeze(1), lambda L, x: x.select(1, 0), lambda L, x: x.permute(1, 0, 2),
    lambda L, x: x.permute(0, 1), lambda L, x: x.permute(0, 1, 1), lambda L, x: x.expand(3, -1, 3),
    lambda L, x: x.unsqueeze(0), lambda L, x: x.split(1, 1),
], ids=["view_dims", "view_numel", "view_batch", "squeeze_ragged", "select_ragged", "permute_batch",
        "permute_count", "permute_duplicate", "expand_batch", "unsqueeze_batch", "split_ragged"])
def test_shape_ops_torch_refuses(fn):
    check_error(fn)


def test_view_of_a_transposed_jagged_tensor_is_refused_as_torch():
    check_error(lambda L, x: x.view(2, 3, -1), transposed=True)


def test_attention_with_a_mask_is_refused_as_torch():
    def attend(L, x):
        q = L.nested.nested_tensor([L.ones(2, 4, 8), L.ones(3, 4, 8)], layout=L.jagged).transpose(1, 2)
        return L.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=L.ones(2, 4, 3, 3, dtype=L.bool))

    check_error(attend)


def test_embedding_of_nested_token_ids():
    """F.embedding / nn.Embedding of jagged ids: a jagged (B, j, D) result; the weight's gradient as torch's."""
    got = {}
    for L in (torch, tc):
        ids = L.nested.nested_tensor([L.tensor([1, 2]), L.tensor([0, 3, 3])], layout=L.jagged)
        weight = L.tensor(np.arange(12.0, dtype=np.float32).reshape(4, 3) / 7, requires_grad=True)
        out = L.nn.functional.embedding(ids, weight)
        module = L.nn.Embedding.from_pretrained(weight.detach())(ids)
        (out.values() * L.tensor(np.arange(15.0, dtype=np.float32).reshape(5, 3))).sum().backward()
        got[L] = (described(out), described(module), weight.grad.numpy())
    assert_same(got[tc][0], got[torch][0])
    assert_same(got[tc][1], got[torch][1])
    np.testing.assert_allclose(got[tc][2], got[torch][2], rtol=1e-6)
