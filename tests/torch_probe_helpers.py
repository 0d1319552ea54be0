"""Shared by the test_torch_unit_probes_s10* files: run the same calls on torch and on tidal.compat and
compare values, dtypes, or the error's type and first line. tidal names itself where torch does
('tidal.float32'); messages are compared with that one spelling made torch's."""
import numpy as np
import torch

import tidal.compat as tc


def registry() -> tuple:
    """A list of cases and the decorator that adds `fn(framework)` to it."""
    cases = []

    def probe(fn):
        cases.append(fn)
        return fn
    return cases, probe


def norm(v):
    """A comparable form of a result: tensors as (dtype name, shape, values rounded to 4 places, NaN as None)."""
    if hasattr(v, "detach") and hasattr(v, "dtype"):
        a = v.detach()
        if a.dtype.is_floating_point and not a.dtype.is_complex:  # (tidal's dtype attribute counts complex)
            vals = np.round(np.asarray(a.float().numpy(), dtype=np.float64), 4)
            vals = np.where(np.isnan(vals), None, vals).tolist() if vals.size else vals.tolist()
        else:
            vals = np.asarray(a.numpy()).tolist()
        return (str(v.dtype).split(".")[-1], tuple(v.shape), vals)
    if isinstance(v, (list, tuple)):
        return tuple(norm(x) for x in v)
    if isinstance(v, dict):
        return {k: norm(x) for k, x in v.items()}
    if isinstance(v, str):
        return v.replace("tidal.", "torch.")
    if v is None or isinstance(v, (bool, int, float)):
        return v
    return str(v).split(".")[-1]


def run(fn, mod):
    """`fn(mod)`'s normalized result, or its error's type and message (seeds reset first)."""
    torch.manual_seed(0)
    tc.manual_seed(0)
    try:
        return ("ok", norm(fn(mod)))
    except Exception as e:  # compared: type and first line of the message
        return ("err", type(e).__name__, str(e).split("\n")[0].replace("tidal.", "torch."))


def errs(calls):
    """Each call's result, or its error's type and message."""
    out = []
    for call in calls:
        try:
            out.append(call())
        except Exception as e:  # compared by the caller
            out.append((type(e).__name__, str(e)))
    return out


def F(t):
    """The framework's nn.functional."""
    return t.nn.functional


def assert_same(fn) -> None:
    """One answer, or one error, from torch and from tidal.compat."""
    assert run(fn, tc) == run(fn, torch)

