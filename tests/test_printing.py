"""Compare tidal's tensor repr with PyTorch's, character for character."""

from __future__ import annotations

import importlib.util
import math
import random
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")


def _load_printing():
    try:
        from tidal.tensor import printing  # type: ignore[import-not-found]

        return printing
    except Exception:  # the package may be mid-construction; fall back to the file
        path = Path(__file__).parent.parent / "tensor" / "printing.py"
        spec = importlib.util.spec_from_file_location("_tidal_printing_under_test", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module


printing = _load_printing()
format_tensor = printing.format_tensor
set_printoptions = printing.set_printoptions
get_printoptions = printing.get_printoptions

NAN, INF = math.nan, math.inf


@pytest.fixture(autouse=True)
def _restore_options():
    yield
    torch.set_printoptions(profile="default", sci_mode=None)
    set_printoptions(profile="default", sci_mode=None)


def _both(**opts) -> None:
    torch.set_printoptions(**opts)
    set_printoptions(**opts)


def _kind(t) -> str:
    if t.dtype == torch.bool:
        return "bool"
    return "float" if t.dtype.is_floating_point else "int"


def _ours(t, extras=()) -> str:
    # Torch's display rule for non-empty tensors; empties are the module's job.
    show = t.dtype not in (torch.get_default_dtype(), torch.int64, torch.bool)
    dtype_repr = str(t.dtype).replace("torch.", "tidal.")
    values = t.detach()
    if values.dtype in (torch.float16, torch.bfloat16):
        values = values.float()
    return format_tensor(
        values.numpy(), kind=_kind(t), dtype_repr=dtype_repr, show_dtype=show, extras=list(extras)
    )


def _check(t, extras=()) -> None:
    assert _ours(t, extras) == repr(t).replace("torch.", "tidal.")


T = torch.tensor
F64, I32 = torch.float64, torch.int32

CASES = {
    "0d_float": T(3.0),
    "0d_frac": T(0.5),
    "0d_neg_zero": T(-0.0),
    "0d_tiny": T(1e-5),
    "0d_nan": T(NAN),
    "0d_int": T(-7),
    "0d_bool": T(True),
    "0d_f64": T(3.0, dtype=F64),
    "1d_fixed": T([1.0, 2.5]),
    "1d_intvalued": T([1.0, 2.0]),
    "1d_mixed_sign": T([1.0, 2.5, -3.25]),
    "1d_ratio_1000": T([1.0, 1000.0]),
    "1d_ratio_1001": T([1.0, 1001.0]),
    "1d_small": T([1e-5, 1.0]),
    "1d_min_edge_f32": T([1e-4, 1.0]),
    "1d_min_edge_f64": T([1e-4, 1.0], dtype=F64),
    "1d_1e8": T([1e8]),
    "1d_above_1e8": T([100000001.0], dtype=F64),
    "1d_huge_tiny": T([1e-30, 1e30]),
    "1d_f32_digits": T([12345.678]),
    "1d_nan_int": T([NAN, 1.0]),
    "1d_nonfinite": T([INF, -INF, NAN]),
    "1d_inf_sci": T([INF, 1e-5]),
    "1d_nan_wide": T([NAN, 1.0, 1000.0]),
    "1d_neg_zero": T([0.0, -0.0]),
    "1d_neg_zero_fixed": T([0.5, -0.0]),
    "1d_neg_zero_sci": T([-0.0, 1e-5, 1e9]),
    "1d_zeros": torch.zeros(40),
    "1d_int_neg": T([-1, 100]),
    "1d_int64_extremes": T([2**63 - 1, -(2**63)]),
    "1d_int32": T([1, 2], dtype=I32),
    "1d_int8": T([-128, 5, 127], dtype=torch.int8),
    "1d_uint8": T([0, 255], dtype=torch.uint8),
    "1d_f64": T([1.0, 2.0], dtype=F64),
    "1d_f16": T([0.1, 65504.0], dtype=torch.float16),
    "1d_bf16": T([1.5, -2.25e10], dtype=torch.bfloat16),
    "1d_bool": T([True, True]),
    "1d_wrap_int": torch.arange(100),
    "1d_wrap_float": torch.arange(40.0) / 3,
    "1d_wrap_bool": torch.arange(100) > 50,
    "2d_bool": T([[True, False]]),
    "2d_float": T([[1.5, -2.0], [3.0, 40.0]]),
    "2d_wrap_rows": torch.arange(30.0).reshape(2, 15) * 1e5,
    "3d_float": torch.arange(24.0).reshape(2, 3, 4),
    "3d_int": torch.arange(24).reshape(2, 3, 4),
    "3d_bool": T([[[True]], [[False]]]),
    "4d_single": torch.ones(1, 1, 1, 1),
    "empty_1d": T([]),
    "empty_2d": torch.zeros(0, 3),
    "empty_3d_f64": torch.zeros(2, 0, 3, dtype=F64),
    "empty_int64": T([], dtype=torch.int64),
    "empty_int32": torch.zeros(0, 2, dtype=I32),
    "empty_bool": T([], dtype=torch.bool),
    "empty_f64": T([], dtype=F64),
    "big_int": torch.arange(1001),
    "big_float_hidden_values": torch.cat([torch.arange(500.0), T([1e10]), torch.arange(500.0)]),
    "big_2d_sci": torch.arange(2000.0).reshape(40, 50),
    "big_3d": torch.arange(3000.0).reshape(10, 6, 50) / 7,
    "big_int32": torch.arange(2000, dtype=I32).reshape(40, 50) - 1000,
    "big_bool": (torch.arange(1200) % 3 == 0).reshape(2, 600),
    "big_f64": torch.linspace(-1, 1, 1500, dtype=F64).reshape(3, 500),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_torch_repr(name):
    _check(CASES[name])


def test_known_literal_outputs():
    assert _ours(T([1.0, 2.5])) == "tensor([1.0000, 2.5000])"
    assert _ours(T([1, 2], dtype=I32)) == "tensor([1, 2], dtype=tidal.int32)"
    assert _ours(T(3.0)) == "tensor(3.)"
    assert _ours(torch.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert _ours(T([[True, False]])) == "tensor([[ True, False]])"


@pytest.mark.parametrize(
    "opts",
    [
        {"precision": 2},
        {"precision": 0},
        {"precision": 7},
        {"sci_mode": True},
        {"sci_mode": False},
        {"linewidth": 40},
        {"linewidth": 1},
        {"threshold": 5},
        {"threshold": 5, "edgeitems": 1},
        {"edgeitems": 0},
        {"edgeitems": 0, "threshold": 0},
        {"threshold": 0},
        {"profile": "short"},
        {"profile": "full"},
        {"profile": "default", "precision": 6, "linewidth": 120},
    ],
    ids=repr,
)
def test_printoptions(opts):
    _both(**opts)
    for name in sorted(CASES):
        _check(CASES[name])


def test_get_set_printoptions_semantics():
    defaults = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80, "sci_mode": None}
    assert get_printoptions() == defaults
    set_printoptions(sci_mode=True)
    assert get_printoptions()["sci_mode"] is True
    set_printoptions(precision=2)  # any call without sci_mode resets it, as in torch
    assert get_printoptions() == dict(defaults, precision=2)
    set_printoptions(profile="short")
    assert get_printoptions() == dict(defaults, precision=2, edgeitems=2)
    set_printoptions(profile="full", linewidth=100)
    assert get_printoptions() == dict(defaults, threshold=math.inf, linewidth=100)
    set_printoptions(profile="no-such-profile")
    assert get_printoptions() == dict(defaults, threshold=math.inf, linewidth=100)
    opts = get_printoptions()
    opts["precision"] = 99
    assert get_printoptions()["precision"] == 4


def test_grad_suffixes_and_wrapping():
    for lw in (20, 40, 50, 54, 78, 80):
        _both(linewidth=lw)
        for n in (0, 1, 3, 10):
            leaf = (torch.arange(n, dtype=F64) / 3).requires_grad_()
            _check(leaf, [("requires_grad", "True")])
            _check(leaf * 2, [("grad_fn", "<MulBackward0>")])
            _check(torch.zeros(n, 0, dtype=I32))
            _check(torch.arange(n, dtype=I32) + 100)
    _both(linewidth=80)
    _check(T(1.5, dtype=F64, requires_grad=True), [("requires_grad", "True")])
    _check(torch.zeros(0, 2, requires_grad=True) * 2, [("grad_fn", "<MulBackward0>")])


def test_device_precedes_dtype_and_size():
    # No CUDA here, so the expected strings are PyTorch's documented CUDA layout.
    got = format_tensor(
        np.array([1.0, 2.0]),
        kind="float",
        dtype_repr="tidal.float64",
        show_dtype=True,
        extras=[("requires_grad", "True"), ("device", "'cuda:0'")],
    )
    assert got == "tensor([1., 2.], device='cuda:0', dtype=tidal.float64, requires_grad=True)"
    got = format_tensor(
        np.zeros((0, 2), np.int32), kind="int", dtype_repr="tidal.int32", show_dtype=True,
        extras=[("device", "'cuda:0'")],
    )
    assert got == "tensor([], device='cuda:0', size=(0, 2), dtype=tidal.int32)"


def _random_tensor(rng: np.random.Generator, pick: random.Random):
    shape = tuple(int(s) for s in rng.integers(0, 9, rng.integers(0, 4)))
    if rng.random() < 0.05:
        shape = (int(rng.integers(900, 1300)),)
    n = int(np.prod(shape)) if shape else 1
    dtype = pick.choice(
        [torch.float32, F64, torch.float16, torch.bfloat16, torch.int64, I32, torch.int8, torch.bool]
    )
    style = int(rng.integers(0, 6))
    if style == 0:
        a = rng.standard_normal(n)
    elif style == 1:
        a = rng.standard_normal(n) * 10.0 ** rng.integers(-12, 12, n)
    elif style == 2:
        a = rng.integers(-2000, 2000, n).astype(float)
    elif style == 3:
        a = rng.choice([0.0, -0.0, 1.0, NAN, INF, -INF, 1e-5, 1234.5, 1e9], n)
    elif style == 4:
        a = np.round(rng.standard_normal(n) * 10, int(rng.integers(0, 6)))
    else:
        a = rng.uniform(0, 1, n) * 10.0 ** float(rng.uniform(-6, 9))
    if dtype == torch.bool:
        return torch.tensor(a > 0).reshape(shape)
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        lo, hi = max(info.min, -(2**62)), min(info.max, 2**62)  # stay exactly castable
        a = np.clip(np.round(np.nan_to_num(a, posinf=hi, neginf=lo)), lo, hi)
        return torch.tensor(a.astype(np.int64)).to(dtype).reshape(shape)
    return torch.tensor(a, dtype=F64).to(dtype).reshape(shape)


@pytest.mark.parametrize("seed", range(4))
def test_randomized_against_torch(seed):
    rng, pick = np.random.default_rng(seed), random.Random(seed)
    for _ in range(150):
        t = _random_tensor(rng, pick)
        opts = {}
        if rng.random() < 0.3:
            opts = {
                "precision": int(rng.integers(0, 8)),
                "linewidth": int(rng.integers(20, 140)),
                "edgeitems": int(rng.integers(1, 5)),
                "threshold": int(rng.integers(5, 1200)),
                "sci_mode": pick.choice([None, True, False]),
            }
        _both(**opts)
        _check(t)
        _both(profile="default")
