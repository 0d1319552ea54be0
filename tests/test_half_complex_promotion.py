"""16-bit floats meeting complex numbers, against torch 2.13: bfloat16 promotes to complex64 (even beside
complex128 0-d tensors and Python complex numbers); float16 beside a dimensioned complex tensor gives its
dtype (beside a complex number or 0-d tensor torch gives complex32: tests/test_complex32.py). Complex fill
values into real dtypes: torch's checked conversion (only a zero imaginary part converts)."""
import pytest
import torch

import tidal.compat as ttorch


def _outcome(fn):
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return type(exc).__name__, str(exc)
    if isinstance(r, (torch.Tensor, ttorch.Tensor)):
        return "ok", str(r.dtype).split(".")[-1], [complex(v) for v in r.reshape(-1).tolist()]
    return "ok", str(r).split(".")[-1]


def _bf(L, n=2):
    return L.arange(1, n + 1, dtype=L.float32).to(L.bfloat16)


SAME = {
    "bfloat16 + 1j": lambda L: _bf(L) + 1j,
    "bfloat16 * complex64 0-d": lambda L: _bf(L) * L.tensor(2 + 1j),
    "bfloat16 * complex128 0-d": lambda L: _bf(L) * L.tensor(2 + 1j, dtype=L.complex128),
    "bfloat16 0-d + 1j": lambda L: _bf(L).sum() + 1j,
    "bfloat16 + complex64 tensor": lambda L: _bf(L) + L.ones(2, dtype=L.complex64),
    "result_type(bfloat16, 1j)": lambda L: L.result_type(_bf(L), 1j),
    "float16 + complex64 tensor": lambda L: L.ones(2, dtype=L.float16) + L.ones(2, dtype=L.complex64),
    "promote_types(float16, complex64)": lambda L: L.promote_types(L.float16, L.complex64),
    "float16 as complex64 + 1j": lambda L: L.ones(2, dtype=L.float16).to(L.complex64) + 1j,
}
for _dtype in ("float32", "int64", "bool", "float16"):
    for _v in (1j, 1 + 0j, 2 - 1j):
        SAME[f"full {_v} {_dtype}"] = lambda L, d=_dtype, v=_v: L.full((2,), v, dtype=getattr(L, d))
    SAME[f"fill_ 1j {_dtype}"] = lambda L, d=_dtype: L.zeros(2, dtype=getattr(L, d)).fill_(1j)
    SAME[f"fill_ 3+0j {_dtype}"] = lambda L, d=_dtype: L.zeros(2, dtype=getattr(L, d)).fill_(3 + 0j)

@pytest.mark.parametrize("name", list(SAME))
def test_as_torch(name):
    assert _outcome(lambda: SAME[name](ttorch)) == _outcome(lambda: SAME[name](torch))
