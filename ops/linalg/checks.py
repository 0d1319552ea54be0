"""What the linalg ops share below them all: torch's argument checks and their messages, torch.linalg.LinAlgError
and the batch element a failure names, and the copy of a result into `out=`."""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt

_LOW_PRECISION = {dt.float16: "Half", dt.bfloat16: "BFloat16"}


class LinAlgError(RuntimeError):
    """A matrix the routine cannot handle (singular, not positive-definite), as torch.linalg.LinAlgError."""


def _check_float(op: str, A: Tensor, arg: str = "A", half: bool = False) -> None:
    """A floating (or complex) tensor; float16 and bfloat16 only where `half` (torch's LAPACK ops refuse them)."""
    if not isinstance(A, Tensor):
        raise TypeError(f"linalg_{op}(): argument '{arg}' (position 1) must be Tensor, not {type(A).__name__}")
    if not A.dtype.is_floating_point:
        raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as input. "
                           f"Got {_type_name(A.dtype)}")
    if A.dtype in _LOW_PRECISION and not half:
        raise RuntimeError(f"linalg.{op}: Low precision dtypes not supported. Got {_LOW_PRECISION[A.dtype]}")


def _type_name(d: dt.dtype) -> str:
    return {dt.int64: "Long", dt.int32: "Int", dt.int16: "Short", dt.int8: "Char", dt.uint8: "Byte",
            dt.bool_: "Bool", dt.float32: "Float", dt.float64: "Double", dt.complex64: "ComplexFloat",
            dt.complex128: "ComplexDouble"}.get(d, _LOW_PRECISION.get(d, str(d)))


def _check_matrix(op: str, A: Tensor, square: bool = True, half: bool = False) -> None:
    _check_float(op, A, half=half)
    if A.ndim < 2:
        raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 dimensions.")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")


def _into(res: Tensor, out: Tensor | None) -> Tensor:
    if out is None:
        return res
    if tuple(out.shape) != tuple(res.shape):
        raise RuntimeError(f"out: expected shape {tuple(res.shape)}, got {tuple(out.shape)}")
    out.copy_(res)
    return out


def _first_error(info: Tensor) -> tuple:
    """(batch index, info) of the first failed matrix, or None; reads `info` on the host (a sync)."""
    flat = np.asarray(info.numpy()).reshape(-1)
    bad = np.flatnonzero(flat > 0)
    return (int(bad[0]), int(flat[bad[0]])) if bad.size else None


def _batch_prefix(A: Tensor, index: int) -> str:
    return f"(Batch element {index}): " if A.ndim > 2 else ""
