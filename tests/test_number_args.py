"""Python numbers given to binary functions, against torch: where torch's schema takes a number (either
argument, or both as a 0-d tensor) tidal computes torch's value and dtype; where it wants a Tensor
tidal raises torch's TypeError at the call (ops/dispatch/number_args.py holds the one table, applied by
ops/__init__.py to the public functions and Tensor methods)."""
import numpy as np
import pytest
import torch

import tidal.compat as ttorch
from tidal.ops.elementwise import declarations, plans as ew
from tidal.ops.elementwise import arithmetic as M
from tidal.ops.dispatch import number_args as NA

NAMES = sorted(({n for n, op in declarations.OPS.items() if op.nin == 2 and hasattr(torch, n)} |
                {"subtract", "multiply", "divide", "true_divide", "arctan2", "float_power", "clamp_min", "clamp_max"})
               - {"polygamma"})  # polygamma(n, input): an int order first, not a binary elementwise schema
ARG_NAMES = {"clamp_min": ("input", "min"), "clamp_max": ("input", "max"), "pow": ("input", "exponent"),
             "float_power": ("input", "exponent")}
COMBOS = {"number, tensor": lambda L: (3, L.tensor([1, 2, 4])), "tensor, number": lambda L: (L.tensor([1, 2, 4]), 3),
          "int, int": lambda L: (5, 3), "float, int": lambda L: (2.5, 2),
          "float, tensor": lambda L: (1.5, L.tensor([1., 2.])), "tensor, bool": lambda L: (L.tensor([True, False]), True)}
# dtype refusals (not number handling) where tidal differed from torch: a float operand of a bitwise op (TypeError,
# torch NotImplementedError), a bool tensor in shifts, clamp_min/max, fmod, remainder, floor_divide (computed, or
# RuntimeError; torch NotImplementedError "..._cpu" not implemented for 'Bool') and pow of a bool tensor by a bool
# (refused; torch computes). Fixed by the issue 15 patches to ops/elementwise/declarations.py (REAL_REJECT) and, for
# clamp_min/max's number bounds, ops/elementwise/arithmetic.py (kernel_dtypes hooks); tests/test_kernel_dtypes.py covers
# the dtype rules themselves.
PLAN_PATCHED = hasattr(ew, "REAL_REJECT")
HOOKS_PATCHED = PLAN_PATCHED and hasattr(M, "kernel_dtypes")
DTYPE_REFUSALS = {
    **{n: {"float, tensor": PLAN_PATCHED} for n in ("bitwise_and", "bitwise_or", "bitwise_xor")},
    **{n: {"float, tensor": PLAN_PATCHED, "tensor, bool": PLAN_PATCHED}
       for n in ("bitwise_left_shift", "bitwise_right_shift")},
    **{n: {"tensor, bool": PLAN_PATCHED} for n in ("floor_divide", "fmod", "pow", "remainder")},
    **{n: {"tensor, bool": HOOKS_PATCHED} for n in ("clamp_max", "clamp_min")},
}


def _outcome(fn, a, b):
    try:
        return fn(a, b), None
    except Exception as exc:  # noqa: BLE001 - the outcome is compared
        return None, exc


@pytest.mark.parametrize("combo", list(COMBOS))
@pytest.mark.parametrize("name", NAMES)
def test_table_refuses_where_torch_does(name, combo):
    a, b = COMBOS[combo](torch)
    _, want = _outcome(getattr(torch, name), a, b)
    ta, tb = COMBOS[combo](ttorch)
    _, got = _outcome(lambda x, y: NA.binary(name, x, y, ARG_NAMES.get(name, ("input", "other"))), ta, tb)
    if isinstance(want, TypeError):
        assert isinstance(got, TypeError), f"torch refuses ({want}); the table takes it"
        assert f"{name}()" in str(got) and (str(got).split("(")[0] == str(want).split("(")[0])
    else:
        assert got is None, f"the table refuses what torch takes: {got}"


def _params():
    out = []
    for name in NAMES:
        for combo in COMBOS:
            marks = []
            if combo in DTYPE_REFUSALS.get(name, {}) and not DTYPE_REFUSALS[name][combo]:
                marks = [pytest.mark.xfail(strict=True, reason="awaits the issue 15 dtype patches")]
            out.append(pytest.param(name, combo, marks=marks, id=f"{name}-{combo}"))
    return out


@pytest.mark.parametrize("name, combo", _params())
def test_public_function_as_torch(name, combo):
    want, want_exc = _outcome(getattr(torch, name), *COMBOS[combo](torch))
    got, got_exc = _outcome(getattr(ttorch, name), *COMBOS[combo](ttorch))
    if want_exc is not None:
        assert got_exc is not None, f"tidal computes {got} where torch raises {want_exc!r}"
        assert type(got_exc) is type(want_exc), f"{got_exc!r} (torch: {want_exc!r})"
        return
    assert got_exc is None, f"tidal raises {got_exc!r}, torch gives {want}"
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(np.asarray(got.tolist(), dtype=float), np.asarray(want.tolist(), dtype=float))


# torch's C-level reflected operators (its Python ones, __rsub__ or __rpow__, take any `self`)
REVERSED = ["__radd__", "__rmul__", "__rand__", "__ror__", "__rxor__"]


@pytest.mark.parametrize("method", REVERSED)
def test_unbound_reflected_operator_refuses_a_number_self(method):
    with pytest.raises(TypeError):
        getattr(torch.Tensor, method)(2, torch.tensor([1, 2]))
    with pytest.raises(TypeError, match=method):
        getattr(ttorch.Tensor, method)(2, ttorch.tensor([1, 2]))


@pytest.mark.parametrize("call", ["maximum", "atan2_", "logical_and", "hypot"])
def test_tensor_only_methods_refuse_numbers(call):
    with pytest.raises(TypeError):
        getattr(torch.tensor([1., 2.]), call)(2)
    with pytest.raises(TypeError, match=call.rstrip("_")):
        getattr(ttorch.tensor([1., 2.]), call)(2)


def test_max_min_of_numbers_refuse():
    for name in ("max", "min"):
        for args in ((2, 3), (2, torch.tensor([1]))):
            with pytest.raises(TypeError):
                getattr(torch, name)(*args)
        for args in ((2, 3), (2, ttorch.tensor([1]))):
            with pytest.raises(TypeError, match=f"{name}\\(\\) received an invalid combination"):
                getattr(ttorch, name)(*args)


def test_keyword_arguments_checked():
    with pytest.raises(TypeError, match="argument 'other'"):
        ttorch.maximum(ttorch.tensor([1.]), other=2)
    with pytest.raises(TypeError, match="clamp_min"):
        ttorch.clamp_min(input=2, min=ttorch.tensor([1.]))
    assert ttorch.eq(ttorch.tensor([1, 2]), other=2).tolist() == [False, True]


@pytest.mark.parametrize("method", REVERSED + ["__rsub__", "__rpow__", "__rtruediv__", "__rfloordiv__", "__rmod__"])
def test_reflected_operator_as_torch(method):
    want = getattr(torch.tensor([1, 2, 3]), method)(2)
    got = getattr(ttorch.tensor([1, 2, 3]), method)(2)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()
