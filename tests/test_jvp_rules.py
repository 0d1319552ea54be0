"""Forward-mode AD of PyTorch's op database: for every op torch differentiates in forward mode
(`op.supports_forward_ad`), tidal's eager tangents (forward_ad dual tensors, autograd/jvp_rules.py) against
torch.func.jvp on the op's float64 samples (and complex128 for the ops about complex numbers); plus the
rule kinds one by one (elementwise, declared, view, transposed) and their reverse-over-forward."""
from __future__ import annotations

import numpy as np
import pytest
import torch
import torch._decomp.decompositions_for_jvp  # noqa: F401  (see tests/test_forward_ad.py)

import tidal
import torch_op_db as db
from tidal.autograd import forward_ad as fw
from nn_helpers import assert_close

# Known failures: op id -> reason (strict xfail: an op that passes must leave the list).
_OUTSIDE = ("torch's jvp formula differs from the transpose of its own vjp for tangents outside the op's domain "
            "({}); tidal transposes its backward, which agrees with torch on that domain "
            "(test_transposed_rule_agrees_with_torch_on_the_domain)")
KNOWN: dict[str, str] = {
    "linalg.cholesky": _OUTSIDE.format("non-symmetric"),
    "linalg.cholesky_ex": _OUTSIDE.format("non-symmetric"),
    "linalg.eigh": _OUTSIDE.format("non-symmetric, with UPLO='U'"),
    "triangular_solve": _OUTSIDE.format("A's tangent outside its triangle"),
    "native_batch_norm": "the saved mean and inverse std outputs get no node in tidal, so no tangent",
    "_native_batch_norm_legit": "the saved mean and inverse std outputs get no node in tidal, so no tangent",
    "nn.functional.max_unpool1d": "indices that repeat: torch's jvp keeps one write (the op on the tangent), the "
                                  "transposed backward sums them",
    "nn.functional.max_unpool2d": "as max_unpool1d",
    "nn.functional.max_unpool3d": "as max_unpool1d",
}
# Not strict: div with rounding is being changed in the tree (uncommitted work in ops/elementwise/arithmetic.py at
# the time of writing): its no_grad() recursion sees needs_grad true for dual inputs (forward AD keeps recording
# under no_grad, as torch's), and floor_divide's formula raises torch's "not implemented" (torch's div: zeros).
LOOSE: dict[str, str] = {"div.floor_rounding": "div's rounding modes are changing in the tree",
                         "div.trunc_rounding": "div's rounding modes are changing in the tree"}


def forward_differentiable(op) -> bool:
    """Whether torch computes the op's jvp in float64 on the CPU (and its OpInfo trusts it)."""
    return (bool(op.supports_forward_ad) and torch.float64 in op.supported_backward_dtypes("cpu")
            and not db.torch_expects_failure(op, "TestFwdGradients", "test_forward_mode_AD"))


def _float_outputs(out) -> list:
    """The floating (or complex) tensors of an output, flattened, None in other places."""
    if isinstance(out, (torch.Tensor, tidal.Tensor)):
        return [out if out.dtype.is_floating_point or out.is_complex() else None]
    if isinstance(out, (list, tuple)):
        return [t for o in out for t in _float_outputs(o)]
    return []


def _substituted(obj, values: dict):
    """A sample's (nested) arguments with the tensors whose ids `values` holds replaced."""
    if isinstance(obj, torch.Tensor):
        return values.get(id(obj), obj)
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_substituted(o, values) for o in obj)
    if isinstance(obj, dict):
        return {k: _substituted(v, values) for k, v in obj.items()}
    return obj


def _torch_jvp(op, sample, leaves: list, tangents: list) -> list:
    """torch.func.jvp of the op at the sample, along `tangents` of its floating tensors `leaves`."""
    def f(*primals):
        values = {id(x): p for x, p in zip(leaves, primals)}
        args = _substituted([sample.input, list(sample.args), dict(sample.kwargs)], values)
        torch.manual_seed(0)
        out = sample.output_process_fn_grad(op.op(args[0], *args[1], **args[2]))
        return tuple(o for o in _float_outputs(out) if o is not None)
    primals = tuple(x.detach() for x in leaves)
    found = torch.func.jvp(f, primals, tuple(tangents))[1]
    return [torch.zeros_like(t) if t._is_zerotensor() else t for t in found]  # (slogdet's sign: a ZeroTensor)


def _tidal_jvp(op, fn, sample, leaves: list, tangents: list) -> list:
    """tidal's tangents of the op's outputs at the sample: its leaves made dual with `tangents`."""
    memo: dict = {"storage": op.name in db.STORAGE}
    with fw.dual_level():
        for x, t in zip(leaves, tangents):
            memo[id(x)] = fw.make_dual(db.tidal_tensor(x.detach()), db.tidal_tensor(t))
        torch.manual_seed(0)
        out = sample.output_process_fn_grad(db.call(fn, sample, memo))
        outs = [o for o in _float_outputs(out) if o is not None]
        return [fw.unpack_dual(o).tangent for o in outs]


def _samples(op):
    yield from db._samples(op, torch.float64, db.GRAD_SAMPLES, requires_grad=True)
    if db.is_complex_op(op) and torch.complex128 in op.supported_backward_dtypes("cpu"):
        yield from db._samples(op, torch.complex128, db.GRAD_SAMPLES, requires_grad=True)


def check_jvp(op, fn) -> None:
    """tidal's jvp of `op` against torch.func.jvp on its samples (tangents drawn per floating input)."""
    failures = []
    compared = 0
    for sample in _samples(op):
        leaves = [t for t in db._torch_tensors([sample.input, sample.args, sample.kwargs])
                  if t.requires_grad and (t.dtype.is_floating_point or t.is_complex())]
        if not leaves or db._is_random(op, sample):
            continue
        gen = torch.Generator().manual_seed(2)
        tangents = [torch.randn(x.shape, dtype=x.dtype, generator=gen) for x in leaves]
        try:
            want = _torch_jvp(op, sample, leaves, tangents)
        except Exception:  # noqa: BLE001 - a sample torch.func.jvp itself refuses is no test of tidal
            continue
        compared += 1
        try:
            got = _tidal_jvp(op, fn, sample, leaves, tangents)
            assert len(got) == len(want), f"{len(got)} floating outputs, torch {len(want)}"
            for k, (g, w) in enumerate(zip(got, want)):
                assert g is not None, f"tangent[{k}]: None where torch gives one"
                db.compare(g, w, True, f"tangent[{k}]")
        except db.Unconvertible:
            continue
        except Exception as exc:  # noqa: BLE001 - any failure is a finding
            failures.append(f"{db._describe(sample)}: {type(exc).__name__}: {exc}"[:600])
    if not compared:
        pytest.skip("no sample to compare (random results, or torch.func.jvp refuses them all)")
    db._record("jvp", db.op_id(op), failures)


db.RESULTS.setdefault("jvp", {})


def _params():
    out = []
    for op, fn in db.PRESENT:
        if not forward_differentiable(op):
            continue
        name = db.op_id(op)
        marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else \
            [pytest.mark.xfail(strict=False, reason=LOOSE[name])] if name in LOOSE else []
        out.append(pytest.param(op, fn, id=name, marks=marks))
    return out


@pytest.mark.parametrize("op, fn", _params())
def test_jvp_matches_torch_func_jvp(op, fn):
    check_jvp(op, fn)
