"""clamp with number bounds (torch's clamp_scalar kernels) writing into an out= tensor or in place: torch's
errors, word for word (in place the output is named by its C++ type, "long int")."""
import pytest
import torch

import tidal.compat as ttorch


INTS = ("int8", "uint8", "int16", "int32", "int64", "bool")


def _z(L, dtype="int64"):
    return L.zeros(2, dtype=getattr(L, dtype))


def _same(L):
    x = _z(L)
    return L.clamp(x, 0.5, out=x)


OUT = {
    "clamp(out=input)": _same,
    "clamp(out=same dtype, other tensor)": lambda L: L.clamp(_z(L), 0.5, out=_z(L)),
    "clamp(out=float) of an int result": lambda L: L.clamp(_z(L), 2, out=_z(L, "float32")),
    "clamp(out=int32) of an int64 result": lambda L: L.clamp(_z(L), 2, out=_z(L, "int32")),
    "clamp(out=float64) of a float32 result": lambda L: L.clamp(_z(L, "float32"), 2, out=_z(L, "float64")),
    "clamp both bounds, out=float": lambda L: L.clamp(_z(L), 2, 3, out=_z(L, "float32")),
}
INPLACE = {f"{dtype}.{fn}({', '.join(map(str, bound))})": (lambda L, d=dtype, f=fn, b=bound: getattr(_z(L, d), f)(*b))
           for dtype in INTS for fn in ("clamp_", "clamp_min_", "clamp_max_", "clip_")
           for bound in ((0.5,), (2,)) if not (dtype == "bool" and bound == (2,) and fn == "clip_")}
INPLACE.update({f"{dtype}.clamp_(0.5, 0.5)": (lambda L, d=dtype: _z(L, d).clamp_(0.5, 0.5)) for dtype in INTS})
# tensor bounds take the TensorIterator path: its message names the dtype ("Long"), as tidal's already did
OTHER_CASES = {
    "tensor bound in place": lambda L: _z(L).clamp_(L.tensor(0.5), None),
    "tensor bound, out=float": lambda L: L.clamp(_z(L), L.tensor(0.5), out=_z(L, "float32")),
    "clamp_min, no out": lambda L: L.clamp_min(_z(L), 0.5),
    "int64.clamp_(2)": lambda L: _z(L).clamp_(2),
    "clamp(out=result dtype)": lambda L: L.clamp(_z(L), 0.5, out=_z(L, "float32")),
}


def _outcome(fn):
    try:
        r = fn()
    except Exception as exc:  # noqa: BLE001 - the type and message are compared
        return type(exc).__name__, str(exc)
    return "ok", str(r.dtype).split(".")[-1], r.tolist()


CASES = {**OUT, **INPLACE, **OTHER_CASES}


@pytest.mark.parametrize("name", list(CASES))
def test_clamp_output_as_torch(name):
    assert _outcome(lambda: CASES[name](ttorch)) == _outcome(lambda: CASES[name](torch))
