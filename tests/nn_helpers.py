"""Shared helpers for the tidal.nn tests: moving data between tidal and torch, comparing values and
gradients, and skipping gradient checks whose underlying op has no backward formula yet.
"""
from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest
import torch

import tidal

TOL = {"float64": (1e-9, 1e-11), "float32": (1e-5, 1e-6), "float16": (1e-2, 1e-2), "bfloat16": (4e-2, 4e-2)}


def to_numpy(t) -> np.ndarray:
    """A host copy of a tidal or torch tensor (bfloat16 as float32)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.float() if t.dtype == torch.bfloat16 else t).numpy().copy()
    arr = np.array(t.detach()._host_array())
    return arr.astype(np.float32) if arr.dtype == ml_dtypes.bfloat16 else arr


def to_torch(t, requires_grad: bool = False) -> torch.Tensor:
    """A torch tensor with a tidal tensor's values and dtype."""
    arr = np.array(t.detach()._host_array())
    if arr.dtype == ml_dtypes.bfloat16:
        out = torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16)
    else:
        out = torch.from_numpy(arr)
    return out.requires_grad_(requires_grad)


def to_tidal(t, requires_grad: bool = False) -> tidal.Tensor:
    """A tidal tensor with a torch tensor's (or array's) values and dtype."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        if t.dtype == torch.bfloat16:
            out = tidal.tensor(t.float().numpy().astype(ml_dtypes.bfloat16))
        else:
            out = tidal.tensor(t.numpy())
    else:
        out = tidal.tensor(np.asarray(t))
    return out.requires_grad_(requires_grad) if requires_grad else out


def pair(rng, shape, dtype: str = "float64", requires_grad: bool = False, low=None, high=None):
    """The same random values as a tidal and a torch tensor."""
    arr = rng.uniform(low, high, shape) if low is not None else rng.standard_normal(shape)
    arr = np.asarray(arr).astype(ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype)
    t = tidal.tensor(arr)
    ref = torch.from_numpy(arr.astype(np.float32)).to(torch.bfloat16) if dtype == "bfloat16" else \
        torch.from_numpy(arr.copy())
    if requires_grad:
        t.requires_grad_(True)
        ref.requires_grad_(True)
    return t, ref


def load_from_torch(module, torch_module) -> None:
    """Copy a torch module's state (parameters and buffers) into the matching tidal module, strictly."""
    module.load_state_dict({k: to_tidal(v) for k, v in torch_module.state_dict().items()})


def assert_close(actual, expected, rtol: float | None = None, atol: float | None = None, dtype: str | None = None):
    """tidal value == torch value within tolerance (chosen by dtype when not given)."""
    got, want = to_numpy(actual), to_numpy(expected)
    assert got.shape == want.shape, f"shape {got.shape} != {want.shape}"
    if rtol is None:
        rtol, atol = TOL.get(dtype or str(want.dtype), (0, 0))  # integers and bools compare exactly
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def torch_repr(text: str) -> str:
    """A torch repr with torch's names replaced by tidal's, for comparison with tidal's repr."""
    return text.replace("torch.", "tidal.")


# -- gradient support ----------------------------------------------------------------------------
def _probe_input():
    data = np.random.default_rng(0).standard_normal((3, 4))
    return tidal.tensor(data).requires_grad_(True), torch.from_numpy(data.copy()).requires_grad_(True)


_IDX = [2, 0]
BACKWARD_PROBES = {
    "matmul": lambda m, x: x @ x.t(),
    "transpose": lambda m, x: x.transpose(0, 1) * 1.0,
    "permute": lambda m, x: x.permute(1, 0) * 1.0,
    "reshape": lambda m, x: x.reshape(2, 6) * 1.0,
    "unsqueeze": lambda m, x: x.unsqueeze(1).squeeze(1) * 1.0,
    "expand": lambda m, x: x.unsqueeze(0).expand(2, 3, 4) * 1.0,
    "sum": lambda m, x: x.sum(1),
    "mean": lambda m, x: x.mean((0, 1), keepdim=True),
    "norm": lambda m, x: x.norm(2, 1),
    "index_select": lambda m, x: x.index_select(0, m.tensor(_IDX)),
    "gather": lambda m, x: x.gather(1, m.tensor([[0], [3], [1]])),
    "cat": lambda m, x: m.cat([x, x * 2], 1),
    "split": lambda m, x: m.split(x, 2, 1)[1] * 1.0,
    "chunk": lambda m, x: x.chunk(2, 1)[0] * 1.0,
    "narrow": lambda m, x: x.narrow(1, 1, 2) * 1.0,
    "getitem": lambda m, x: x[1:, ::2] * 1.0,
    "repeat": lambda m, x: x.repeat(2, 1),
    "masked_fill": lambda m, x: x.masked_fill(x > 0, 0.0),
    "to": lambda m, x: x.to(m.float32).to(m.float64),
    "softmax": lambda m, x: m.softmax(x, 1),
    "log_softmax": lambda m, x: m.log_softmax(x, 1),
    "broadcast_tensors": lambda m, x: m.broadcast_tensors(x, x[:1] * 1.0)[1] * 1.0,
    "repeat_interleave": lambda m, x: x.repeat_interleave(2, 0),
}


@functools.lru_cache(maxsize=None)
def backward_works(name: str) -> bool:
    """Whether op `name` differentiates correctly in tidal (checked once against torch)."""
    x, xr = _probe_input()
    try:
        y, yr = BACKWARD_PROBES[name](tidal, x), BACKWARD_PROBES[name](torch, xr)
        w = np.random.default_rng(1).standard_normal(tuple(yr.shape))
        (y * tidal.tensor(w)).sum().backward()
        (yr * torch.from_numpy(w)).sum().backward()
        return x.grad is not None and np.allclose(to_numpy(x.grad), xr.grad.numpy(), rtol=1e-8, atol=1e-10)
    except Exception:  # noqa: BLE001 - any failure means the backward is not there yet
        return False


def require_backward(*names: str) -> None:
    """Skip the calling test unless every named op has a working backward in tidal."""
    missing = [n for n in names if not backward_works(n)]
    if missing:
        pytest.skip(f"backward formula missing in the op library for: {', '.join(missing)}")


def upstream(rng, shape, dtype: str = "float64"):
    """The same random upstream gradient for tidal and torch."""
    return pair(rng, shape, dtype)


def backward_both(out, ref_out, rng) -> None:
    """Backpropagate the same random upstream gradient through a tidal and a torch output."""
    g, gr = upstream(rng, tuple(ref_out.shape), str(ref_out.dtype).replace("torch.", ""))
    out.backward(g)
    ref_out.backward(gr)


def assert_grads_close(pairs, rtol: float | None = None, atol: float | None = None) -> None:
    """For (tidal leaf, torch leaf) pairs: the .grad values agree."""
    for k, (t, r) in enumerate(pairs):
        if r.grad is None:
            assert t.grad is None, f"pair {k}: tidal has a gradient where torch has none"
            continue
        assert t.grad is not None, f"pair {k}: tidal gradient missing"
        assert_close(t.grad, r.grad, rtol, atol)
