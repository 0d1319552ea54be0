"""Gradient checks of PyTorch's op database against tidal.compat: first derivatives (float64 and complex128) and
second derivatives (what double backward reads), each against torch's own (tests/torch_op_db.py drives them)."""
import itertools

import torch

import tidal
from torch_op_db import (GRAD_SAMPLES, STORAGE, Unconvertible, _describe, _dtype_name, _is_random, _np, _record,
                         _samples, _torch_tensors, call, compare, differentiable, is_complex_op, op_id,
                         torch_expects_failure)


def _grad_outputs(out) -> list:
    if isinstance(out, (torch.Tensor, tidal.Tensor)):
        return [out]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _grad_outputs(o)]
    return []


def _loss(outs: list, cots: list):
    """sum(out * cotangent), its real part where an output is complex (the gradient of a real loss)."""
    total = 0
    for o, c in zip(outs, cots):
        prod = o * c
        total = total + (prod.real if prod.is_complex() else prod).sum()
    return total


def _torch_grads(loss, leaves: list) -> list:
    """torch's gradients of `loss` for `leaves` (None where unused), its zero tensors as plain zeros."""
    return [w if w is None or not w._is_zerotensor() else torch.zeros_like(w)
            for w in torch.autograd.grad(loss, leaves, allow_unused=True)]


def _compare_grads(got, want: list, values: bool, label: str) -> None:
    """tidal's gradients against torch's, leaf by leaf (a gradient torch gives and tidal leaves None is zeros)."""
    for k, (g, w) in enumerate(zip(got, want)):
        if w is None:
            continue
        if g is None:
            g = tidal.zeros(tuple(w.shape), dtype=getattr(tidal, _dtype_name(w.dtype)))
        compare(g, w, values, f"{label}[{k}]", bits=False)  # (a gradient's bits are autograd's detail)


def _grad_samples(op):
    yield from _samples(op, torch.float64, GRAD_SAMPLES, requires_grad=True)
    if torch.complex128 in op.supported_backward_dtypes("cpu"):
        yield from _samples(op, torch.complex128, GRAD_SAMPLES if is_complex_op(op) else 1, requires_grad=True)


def check_grad(op, fn) -> None:
    """Gradients of sum(out * cotangent) in float64 (and complex128 for complex ops) against torch's."""
    failures = []
    for sample in _grad_samples(op):
        torch.manual_seed(0)
        ref_out = op.op(sample.input, *sample.args, **sample.kwargs)
        ref_out = sample.output_process_fn_grad(ref_out)
        ref_outs = [o for o in _grad_outputs(ref_out) if o.requires_grad]
        leaves = [t for t in _torch_tensors([sample.input, sample.args, sample.kwargs]) if t.requires_grad]
        if not ref_outs or not leaves:
            continue
        gen = torch.Generator().manual_seed(1)
        cots = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in ref_outs]
        loss = _loss(ref_outs, cots)
        want = _torch_grads(loss, leaves)
        memo: dict = {"storage": op.name in STORAGE}
        try:
            out = sample.output_process_fn_grad(call(fn, sample, memo, grad=True))
            outs = [o for o in _grad_outputs(out) if o.requires_grad]
            assert len(outs) == len(ref_outs), f"{len(outs)} outputs require grad, torch {len(ref_outs)}"
            mloss = _loss(outs, [tidal.tensor(_np(c)) for c in cots])
            mine_leaves = [memo[id(t)] for t in leaves]
            got = tidal.autograd.grad(mloss, mine_leaves, allow_unused=True)
            _compare_grads(got, want, not _is_random(op, sample), "grad")
        except Unconvertible:
            continue
        except Exception as exc:  # noqa: BLE001 - any failure is a finding
            failures.append(f"{_describe(sample)}: {type(exc).__name__}: {exc}"[:600])
    _record("grad", op_id(op), failures)


def twice_differentiable(op) -> bool:
    """Whether torch's OpInfo trusts the op's second derivative on the CPU (gradgradcheck passes there)."""
    return (differentiable(op) and bool(op.supports_gradgrad)
            and not torch_expects_failure(op, "TestBwdGradients", "test_fn_gradgrad"))


def check_gradgrad(op, fn) -> None:
    """Second derivatives: the gradient, taken with create_graph, of sum(grad * v) against torch's (float64, the
    first sample): what double backward (gradient penalties, Hessian-vector products) reads."""
    failures = []
    for sample in itertools.islice(_samples(op, torch.float64, 1, requires_grad=True), 1):
        torch.manual_seed(0)
        ref_outs = [o for o in _grad_outputs(sample.output_process_fn_grad(
            op.op(sample.input, *sample.args, **sample.kwargs))) if o.requires_grad]
        leaves = [t for t in _torch_tensors([sample.input, sample.args, sample.kwargs]) if t.requires_grad]
        if not ref_outs or not leaves:
            continue
        gen = torch.Generator().manual_seed(1)
        cots = [torch.randn(o.shape, dtype=o.dtype, generator=gen) for o in ref_outs]
        firsts = torch.autograd.grad(_loss(ref_outs, cots), leaves, create_graph=True, allow_unused=True)
        used = [k for k, g in enumerate(firsts) if g is not None and g.requires_grad]
        if not used:
            continue  # (a gradient that does not depend on the inputs: nothing second to compare)
        vs = [torch.randn(firsts[k].shape, dtype=firsts[k].dtype, generator=gen) for k in used]
        want = _torch_grads(_loss([firsts[k] for k in used], vs), leaves)
        memo: dict = {"storage": op.name in STORAGE}
        try:
            outs = [o for o in _grad_outputs(sample.output_process_fn_grad(call(fn, sample, memo, grad=True)))
                    if o.requires_grad]
            mine_leaves = [memo[id(t)] for t in leaves]
            mfirsts = tidal.autograd.grad(_loss(outs, [tidal.tensor(_np(c)) for c in cots]), mine_leaves,
                                          create_graph=True, allow_unused=True)
            # (a first gradient that does not depend on the inputs has a zero second derivative: torch's may still
            # carry a graph, a piecewise-linear op's mask, whose derivative is then zero too)
            graphed = [(mfirsts[k], v) for k, v in zip(used, vs) if mfirsts[k] is not None and mfirsts[k].requires_grad]
            got = (tidal.autograd.grad(_loss([g for g, _ in graphed], [tidal.tensor(_np(v)) for _, v in graphed]),
                                       mine_leaves, allow_unused=True) if graphed else [None] * len(mine_leaves))
            _compare_grads(got, want, not _is_random(op, sample), "gradgrad")
        except Unconvertible:
            continue
        except Exception as exc:  # noqa: BLE001 - any failure is a finding
            failures.append(f"{_describe(sample)}: {type(exc).__name__}: {exc}"[:600])
    _record("gradgrad", op_id(op), failures)
