"""torch.testing: `assert_close` with PyTorch's semantics and messages, and `make_tensor`.

Inputs are matched pairwise: sequences element by element, mappings key by key, then each
leaf pair is compared as None, booleans, Python/NumPy numbers or tensor-likes (tidal tensors,
or two NumPy arrays). Structure errors are raised before any value is compared; the first
leaf that differs raises, naming its position ("The failure occurred for item [1]['w']").
Values are compared on the host in the tensors' own dtype arithmetic, so boundary cases and
the reported differences are those torch reports.
"""
from __future__ import annotations

import cmath
import collections.abc
from typing import Any, Callable

import numpy as np

from .. import ops
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["assert_close", "assert_allclose", "make_tensor"]

# {dtype: (rtol, atol)}; every other dtype compares exactly
_PRECISION = {dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5), dt.float32: (1.3e-6, 1e-5),
              dt.float64: (1e-7, 1e-7), dt.complex32: (1e-3, 1e-5), dt.complex64: (1.3e-6, 1e-5),
              dt.complex128: (1e-7, 1e-7)}
_NUMBER_DTYPE = {int: dt.int64, float: dt.float64, complex: dt.float64}  # complex has float64's tolerances


class _Failure(Exception):
    """A comparison failure: the exception type to raise, its message, and where in the inputs it is."""

    def __init__(self, kind: type, message: str, where: tuple = ()):
        super().__init__(message)
        self.kind, self.message, self.where = kind, message, where

    def to_error(self, msg: str | Callable[[str], str] | None = None) -> Exception:
        if isinstance(msg, str):
            return self.kind(msg)
        text = self.message
        if self.where:
            text += "\n\nThe failure occurred for item " + "".join(str([key]) for key in self.where)
        return self.kind(msg(text) if callable(msg) else text)


class _Unsupported(Exception):
    """This kind of leaf pair cannot handle the inputs; the next kind is tried."""


# -- tolerances and messages -------------------------------------------------------------------------
def _tolerances(dtypes, options: dict, where: tuple) -> tuple:
    rtol, atol = options["rtol"], options["atol"]
    if (rtol is None) != (atol is None):
        missing = "rtol" if rtol is None else "atol"
        raise _Failure(ValueError, f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                                   f"{missing}.", where)
    if rtol is not None:
        return rtol, atol
    pairs = [_PRECISION.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _mismatch_message(identifier: str, extra: str, abs_diff, abs_at, atol, rel_diff, rel_at, rtol) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{identifier} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, at, tol in (("absolute", abs_diff, abs_at, atol), ("relative", rel_diff, rel_at, rtol)):
        line = (f"{kind.title()} difference: {diff}" if at is None
                else f"Greatest {kind} difference: {diff} at index {at}")
        lines.append(line if equality else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


def _scalar_message(actual, expected, rtol, atol) -> str:
    abs_diff = abs(actual - expected)
    rel_diff = float("inf") if expected == 0 else abs_diff / abs(expected)
    return _mismatch_message("Scalars", f"Expected {expected} but got {actual}.", abs_diff, None, atol,
                             rel_diff, None, rtol)


# -- leaf pairs: each kind returns the comparison to run later, or raises _Unsupported ----------------
def _none_pair(actual, expected, where: tuple, options: dict) -> Callable[[], None]:
    if actual is not None and expected is not None:
        raise _Unsupported

    def compare() -> None:
        if not (actual is None and expected is None):
            raise _Failure(AssertionError, f"None mismatch: {actual} is not {expected}", where)
    return compare


def _bool_pair(actual, expected, where: tuple, options: dict) -> Callable[[], None]:
    if not all(isinstance(v, (bool, np.bool_)) for v in (actual, expected)):
        raise _Unsupported
    actual, expected = bool(actual), bool(expected)

    def compare() -> None:
        if actual is not expected:
            raise _Failure(AssertionError, f"Booleans mismatch: {actual} is not {expected}", where)
    return compare


def _number_pair(actual, expected, where: tuple, options: dict) -> Callable[[], None]:
    if not all(isinstance(v, (int, float, complex, np.number)) for v in (actual, expected)):
        raise _Unsupported
    actual, expected = (v.item() if isinstance(v, np.number) else v for v in (actual, expected))
    rtol, atol = _tolerances([_NUMBER_DTYPE[type(v)] for v in (actual, expected)], options, where)

    def compare() -> None:
        if options["check_dtype"] and type(actual) is not type(expected):
            raise _Failure(AssertionError, f"The (d)types do not match: {type(actual)} != {type(expected)}.",
                           where)
        if actual == expected or (options["equal_nan"] and cmath.isnan(actual) and cmath.isnan(expected)):
            return
        abs_diff = abs(actual - expected)
        if cmath.isfinite(abs_diff) and abs_diff <= atol + rtol * abs(expected):
            return
        raise _Failure(AssertionError, _scalar_message(actual, expected, rtol, atol), where)
    return compare


def _as_tensor(value) -> Tensor:
    if isinstance(value, Tensor):
        return value
    try:
        return ops.as_tensor(value)
    except Exception:
        raise _Unsupported from None


def _tensor_pair(actual, expected, where: tuple, options: dict) -> Callable[[], None]:
    related = isinstance(actual, type(expected)) or isinstance(expected, type(actual))
    if not related or (not options["allow_subclasses"] and type(actual) is not type(expected)):
        raise _Unsupported
    actual, expected = _as_tensor(actual), _as_tensor(expected)
    rtol, atol = _tolerances([actual.dtype, expected.dtype], options, where)

    def differ(attribute: str, a, e) -> _Failure:
        return _Failure(AssertionError, f"The values for attribute '{attribute}' do not match: {a} != {e}.", where)

    def compare() -> None:
        if actual.shape != expected.shape:
            raise differ("shape", actual.shape, expected.shape)
        if options["check_stride"] and actual.stride() != expected.stride():
            raise differ("stride()", actual.stride(), expected.stride())
        if options["check_device"] and actual.device != expected.device:
            raise differ("device", actual.device, expected.device)
        if options["check_dtype"] and actual.dtype is not expected.dtype:
            raise differ("dtype", actual.dtype, expected.dtype)
        common = dt.promote_types(actual.dtype, expected.dtype)
        a, e = (np.asarray(t.detach().to("cpu", common)._host_array()) for t in (actual, expected))
        matches = _isclose(a, e, common, rtol, atol, options["equal_nan"])
        if matches.all():
            return
        if a.ndim == 0:
            message = _scalar_message(_py_scalar(a, common), _py_scalar(e, common), rtol, atol)
        else:
            message = _tensor_message(a, e, common, matches, rtol, atol)
        raise _Failure(AssertionError, message, where)
    return compare


_PAIR_KINDS = (_none_pair, _bool_pair, _number_pair, _tensor_pair)


# -- tensor values, in the dtype's own arithmetic ----------------------------------------------------------
def _arithmetic(dtype: dt.dtype) -> tuple:
    """(working NumPy dtype, rounding after each op): 16-bit floats compute in float32 and round per op;
    integers and bools are measured against tolerances in the default float dtype, as torch does."""
    if dtype.category == dt.COMPLEX:  # |a - e| and |e| are real: measured in the parts' float dtype
        return np.dtype(np.float64 if dtype is dt.complex128 else np.float32), lambda x: x
    if dtype.category != dt.FLOAT:
        return dt.get_default_dtype().np, lambda x: x
    if dtype.compute is not dtype:
        return np.dtype(np.float32), lambda x: np.asarray(x).astype(dtype.np).astype(np.float32)
    return dtype.np, lambda x: x


def _abs_diff(a: np.ndarray, e: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """|a - e| as torch computes it: in the float dtype, or in int64 for integers and bools."""
    if dtype.category == dt.COMPLEX:
        parts = np.complex128 if dtype is dt.complex128 else np.complex64
        return np.abs(a.astype(parts) - e.astype(parts))
    if dtype.category != dt.FLOAT:
        return np.abs(a.astype(np.int64) - e.astype(np.int64))
    work, rnd = _arithmetic(dtype)
    return rnd(np.abs(rnd(a.astype(work) - e.astype(work))))


def _magnitude(e: np.ndarray, dtype: dt.dtype) -> np.ndarray:
    """The expected values in the working dtype; for complex values their modulus."""
    if dtype.category == dt.COMPLEX:
        return np.abs(e.astype(np.complex128 if dtype is dt.complex128 else np.complex64))
    return e.astype(_arithmetic(dtype)[0])


def _isclose(a: np.ndarray, e: np.ndarray, dtype: dt.dtype, rtol: float, atol: float,
             equal_nan: bool) -> np.ndarray:
    """|a - e| <= atol + rtol * |e| elementwise (equal values, infinities included, always match)."""
    with np.errstate(all="ignore"):
        close = a == e
        if rtol == 0 and atol == 0:
            return close
        work, rnd = _arithmetic(dtype)
        allowed = rnd(work.type(atol) + rnd(np.abs(rnd(work.type(rtol) * _magnitude(e, dtype)))))
        error = _abs_diff(a, e, dtype).astype(work)
        close |= np.isfinite(error) & (error <= allowed)
        if equal_nan and dtype.category == dt.FLOAT:
            close |= np.isnan(a.astype(work)) & np.isnan(e.astype(work))
        elif equal_nan and dtype.category == dt.COMPLEX:  # a NaN in either part, as torch.isnan
            close |= np.isnan(a.astype(np.complex128)) & np.isnan(e.astype(np.complex128))
    return close


def _tensor_message(a: np.ndarray, e: np.ndarray, dtype: dt.dtype, matches: np.ndarray, rtol: float,
                    atol: float) -> str:
    total = matches.size
    mismatched = total - int(matches.sum())
    extra = f"Mismatched elements: {mismatched} / {total} ({mismatched / total:.1%})"
    a, e, flat_match = a.reshape(-1), e.reshape(-1), matches.reshape(-1)
    work, rnd = _arithmetic(dtype)
    with np.errstate(all="ignore"):
        abs_diff = _abs_diff(a, e, dtype)
        rel_diff = rnd(abs_diff.astype(work) / np.abs(_magnitude(e, dtype)))
    abs_diff[flat_match] = 0
    rel_diff[flat_match] = 0
    abs_at, rel_at = int(np.argmax(abs_diff)), int(np.argmax(rel_diff))
    return _mismatch_message("Tensor-likes", extra, abs_diff[abs_at].item(), _index(abs_at, matches.shape), atol,
                             rel_diff[rel_at].item(), _index(rel_at, matches.shape), rtol)


def _index(flat: int, shape: tuple) -> tuple:
    return tuple(int(i) for i in np.unravel_index(flat, shape))


def _py_scalar(arr: np.ndarray, dtype: dt.dtype):
    """The Python number a 0-d array holds (bfloat16 arrays hold ml_dtypes scalars)."""
    return float(arr.astype(np.float32)) if dtype is dt.bfloat16 else arr.item()


# -- structure ------------------------------------------------------------------------------------------
def _is_sequence(x) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _leaf_pairs(actual, expected, where: tuple, options: dict) -> list:
    """Walk matching sequences and mappings down to their leaves; one comparison per leaf."""
    if _is_sequence(actual) and _is_sequence(expected):
        if len(actual) != len(expected):
            raise _Failure(AssertionError, f"The length of the sequences mismatch: {len(actual)} != "
                                           f"{len(expected)}", where)
        return [leaf for i in range(len(actual)) for leaf in _leaf_pairs(actual[i], expected[i], (*where, i), options)]
    if isinstance(actual, collections.abc.Mapping) and isinstance(expected, collections.abc.Mapping):
        actual_keys, expected_keys = set(actual.keys()), set(expected.keys())
        if actual_keys != expected_keys:
            missing, additional = sorted(expected_keys - actual_keys), sorted(actual_keys - expected_keys)
            raise _Failure(AssertionError, "The keys of the mappings do not match:\n"
                                           f"Missing keys in the actual mapping: {missing}\n"
                                           f"Additional keys in the actual mapping: {additional}", where)
        try:
            keys = sorted(actual_keys)
        except TypeError:
            keys = list(actual_keys)
        return [leaf for k in keys for leaf in _leaf_pairs(actual[k], expected[k], (*where, k), options)]
    for kind in _PAIR_KINDS:
        try:
            return [kind(actual, expected, where, options)]
        except _Unsupported:
            continue
    raise _Failure(TypeError, f"No comparison pair was able to handle inputs of type {type(actual)} and "
                              f"{type(expected)}.", where)


def assert_close(actual: Any, expected: Any, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg: str | Callable[[str], str] | None = None) -> None:
    """Raise AssertionError unless `actual` and `expected` are close, as torch.testing.assert_close."""
    __tracebackhide__ = True
    options = dict(allow_subclasses=allow_subclasses, rtol=rtol, atol=atol, equal_nan=equal_nan,
                   check_device=check_device, check_dtype=check_dtype, check_stride=check_stride)
    try:
        leaves = _leaf_pairs(actual, expected, (), options)
    except _Failure as failure:
        raise failure.to_error() from None
    for compare in leaves:
        try:
            compare()
        except _Failure as failure:
            raise failure.to_error(msg) from None


_ALLCLOSE_PRECISIONS = {dt.float16: (1e-3, 1e-3), dt.float32: (1e-4, 1e-5), dt.float64: (1e-5, 1e-8)}


def assert_allclose(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None,
                    equal_nan: bool = True, msg: str = "") -> None:
    """The deprecated torch.testing.assert_allclose: assert_close without the dtype check, NaNs equal, and its
    own default tolerances (the loosest of the two dtypes' among float16/32/64, else exact)."""
    import warnings
    warnings.warn("`torch.testing.assert_allclose()` is deprecated since 1.12 and will be removed in a future "
                  "release. Please use `torch.testing.assert_close()` instead. You can find detailed upgrade "
                  "instructions in https://github.com/pytorch/pytorch/issues/61844.", FutureWarning, stacklevel=2)
    __tracebackhide__ = True
    if not isinstance(actual, Tensor):
        actual = ops.tensor(actual)
    if not isinstance(expected, Tensor):
        expected = ops.tensor(expected, dtype=actual.dtype)
    if rtol is None and atol is None:
        pairs = [_ALLCLOSE_PRECISIONS.get(t.dtype, (0.0, 0.0)) for t in (actual, expected)]
        rtol, atol = max(p[0] for p in pairs), max(p[1] for p in pairs)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=True,
                 check_dtype=False, check_stride=False, msg=msg or None)


# -- make_tensor ------------------------------------------------------------------------------------------
def make_tensor(*shape, dtype: dt.dtype, device="cpu", low: float | None = None, high: float | None = None,
                requires_grad: bool = False, noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None) -> Tensor:
    """A tensor of random values in [low, high): floats default to [-9, 9), integers to [-9, 10)."""
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    if noncontiguous and shape and shape[-1] > 1:
        full = make_tensor(*shape[:-1], 2 * shape[-1], dtype=dtype, device=device, low=low, high=high,
                           exclude_zero=exclude_zero)
        out = full[..., ::2]
    elif dtype is dt.bool_:
        out = ops.randint(0, 2, shape, dtype=dt.int64, device=device).to(dt.bool_)
    elif dtype.category == dt.INT:
        lo = -9 if low is None else int(low)
        lo = max(lo, 0) if dtype is dt.uint8 else lo
        hi = 10 if high is None else int(high)
        if lo >= hi:
            raise ValueError(f"`low` must be less than `high`, but got {lo} >= {hi}")
        out = ops.randint(lo, hi, shape, dtype=dtype, device=device)
        if exclude_zero:
            out = ops.where(out == 0, ops.ones_like(out), out)
    else:
        lo, hi = -9.0 if low is None else float(low), 9.0 if high is None else float(high)
        if lo > hi:
            raise ValueError(f"`low` must be less than or equal to `high`, but got {lo} > {hi}")
        out = ops.empty(*shape, dtype=dtype, device=device).uniform_(lo, hi)
        if exclude_zero:
            out = ops.where(out == 0, ops.full_like(out, float(np.finfo(np.float16).eps)), out)
    if requires_grad:
        out.requires_grad_(True)
    return out
