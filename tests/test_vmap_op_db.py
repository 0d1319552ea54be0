"""vmap's batching rules against tidal's own per-sample results, for every op in PyTorch's op database.

For each op (float32, its first samples), the sample's input is mapped over a batch of three different tensors
(the others stay unmapped): `vmap(op)` must equal the stack of the op run on each of them. The single-sample
results are checked against torch by tests/test_torch_op_db.py, so a difference here is a batching rule's bug
(a dim not shifted, a positional argument misread, a storage offset not made per-sample).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as ttorch
import torch_op_db as db
from tidal.func import grad, vmap
from tidal.func.batching import TENSORS

SAMPLES = 2
# ops whose per-sample results have data-dependent shapes (torch's vmap refuses them too), or draw random numbers
SKIP = {"nonzero", "argwhere", "svd_lowrank", "pca_lowrank", "nn.functional.scaled_dot_product_attention",
        "nn.functional.multi_head_attention_forward", "nonzero_static"}
# (test, op id) -> reason (strict xfail: remove once it passes)
KNOWN: dict[tuple[str, str], str] = {}


def _flat(out) -> list:
    if isinstance(out, TENSORS):  # (inside vmap the function sees batched values)
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _flat(o)]
    return []


def _host(t: tidal.Tensor) -> np.ndarray:
    t = t.detach()
    return (t.float() if t.dtype.is_floating_point else t).numpy()  # (bfloat16 has no numpy())


def _mapped_input(sample):
    """(three different batch elements made from the sample's float32 input, its other args, its kwargs) as tidal
    values, or None for a sample without such an input or one tidal cannot take."""
    if not isinstance(sample.input, torch.Tensor) or sample.input.dtype != torch.float32:
        return None
    try:
        memo: dict = {}
        x = db.to_tidal(sample.input, memo)
        args, kwargs = db.to_tidal(tuple(sample.args), memo), db.to_tidal(dict(sample.kwargs), memo)
    except db.Unconvertible:
        return None
    return [x, x * 0.5 + 0.25, x * 1.5 - 0.125], args, kwargs


def _compare_batched(got: list, each: list, sample) -> None:
    """vmap's outputs `got` against the stack of the per-sample outputs `each` (one list per batch element)."""
    assert len(got) == len(each[0]), f"{len(got)} outputs, per sample {len(each[0])}"
    for k, g in enumerate(got):
        want = np.stack([_host(e[k]) for e in each])
        have = _host(g)
        assert have.shape == want.shape, f"output {k}: {have.shape} vs {want.shape} ({db._describe(sample)})"
        np.testing.assert_allclose(have, want, rtol=1e-4, atol=1e-5, equal_nan=True,
                                   err_msg=f"output {k} ({db._describe(sample)})")


def _params(test: str, keep=lambda op: True) -> list:
    out = []
    for op, fn in db.PRESENT:
        name = db.op_id(op)
        if name in SKIP or db.op_id(op) in db.RANDOM or op.name in db.RANDOM:
            continue
        if torch.float32 not in op.supported_dtypes("cpu") or not keep(op):
            continue
        reason = KNOWN.get((test, name))
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        out.append(pytest.param(op, fn, id=name, marks=marks))
    return out


@pytest.mark.parametrize("op, fn", _params("values"))
def test_vmap_matches_per_sample(op, fn):
    judged = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (one-time warnings of ops that run per sample without a rule)
        for sample in db._samples(op, torch.float32, SAMPLES):
            mapped = _mapped_input(sample)
            if mapped is None:
                continue
            xs, args, kwargs = mapped

            def f(t):
                return fn(t, *args, **kwargs)
            try:
                each = [_flat(f(t)) for t in xs]
            except Exception:  # noqa: BLE001 - a sample the op refuses once scaled (a domain): not judged
                continue
            if not each[0] or any(len(e) != len(each[0]) for e in each):
                continue
            _compare_batched(_flat(vmap(f)(ttorch.stack(xs))), each, sample)
            judged += 1
    if not judged:
        pytest.skip(f"{db.op_id(op)}: no float32 sample with a tensor input to map")


def _substitute(obj, feed):
    """`obj` (args nested in lists, tuples, dicts) with each tidal tensor replaced by the next of `feed`."""
    if isinstance(obj, tidal.Tensor):
        return next(feed)
    if isinstance(obj, list):
        return [_substitute(o, feed) for o in obj]
    if isinstance(obj, tuple):
        return tuple(_substitute(o, feed) for o in obj)
    if isinstance(obj, dict):
        return {k: _substitute(v, feed) for k, v in obj.items()}
    return obj


def _scaled(t: tidal.Tensor, b: int) -> tidal.Tensor:
    # floating tensors differ per batch element; indices, masks and integers stay valid as they are
    return (t * (0.5 * b + 1.0) - 0.125 * b) if t.dtype.is_floating_point else t.clone()


@pytest.mark.parametrize("op, fn", _params("every_tensor"))
def test_vmap_with_every_tensor_mapped(op, fn):
    """Every tensor argument mapped (binary ops' `other`, weights, indices), each batch element its own values."""
    judged = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample in db._samples(op, torch.float32, 1):
            try:
                memo: dict = {}
                call = db.to_tidal((sample.input, tuple(sample.args), dict(sample.kwargs)), memo)
            except db.Unconvertible:
                continue
            tensors = _flat(call)
            if len(tensors) < 2 or len({id(t) for t in tensors}) != len(tensors):
                continue  # (one tensor: the test above; a tensor passed twice: not mapped independently)

            def f(*ts):
                inp, args, kwargs = _substitute(call, iter(ts))
                return fn(inp, *args, **kwargs)
            batches = [[_scaled(t, b) for t in tensors] for b in range(3)]
            try:
                each = [_flat(f(*ts)) for ts in batches]
            except Exception:  # noqa: BLE001 - a sample the op refuses once scaled: not judged
                continue
            if not each[0] or any(len(e) != len(each[0]) for e in each):
                continue
            stacked = [ttorch.stack([batch[k] for batch in batches]) for k in range(len(tensors))]
            _compare_batched(_flat(vmap(f)(*stacked)), each, sample)
            judged += 1
    if not judged:
        pytest.skip(f"{db.op_id(op)}: no sample with two or more tensors to map")


@pytest.mark.parametrize("op, fn", _params("grad", db.differentiable))
def test_vmap_of_grad_matches_per_sample(op, fn):
    """Per-sample gradients, vmap(grad(op(x).sum())), against the gradient of each sample on its own."""
    judged = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sample in db._samples(op, torch.float32, 1):
            mapped = _mapped_input(sample)
            if mapped is None:
                continue
            xs, args, kwargs = mapped

            def loss(t):
                outs = [o for o in _flat(fn(t, *args, **kwargs)) if o.dtype.is_floating_point]
                return sum((o * (k + 1)).sum() for k, o in enumerate(outs)) if outs else None
            try:
                if loss(xs[0]) is None:
                    continue
                each = [grad(loss)(t) for t in xs]
            except Exception:  # noqa: BLE001 - no gradient for this sample (an integer output, a refusal)
                continue
            got = vmap(grad(loss))(ttorch.stack(xs))
            want = np.stack([_host(e) for e in each])
            np.testing.assert_allclose(_host(got), want, rtol=1e-3, atol=1e-4, equal_nan=True,
                                       err_msg=db._describe(sample))
            judged += 1
    if not judged:
        pytest.skip(f"{db.op_id(op)}: no float32 sample with a gradient")
