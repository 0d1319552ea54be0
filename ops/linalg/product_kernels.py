"""CPU kernels of the products (matmul and its BLAS family, trace, cross), on NumPy arrays.

Products go through BLAS whenever the result stays exact; float16/bfloat16 compute in float32.
"""
from __future__ import annotations

import math

import numpy as np

from ...tensor import dtype as dt
from ...vm import blas_threads, intra_op
from ...vm.codegen import kernel_module
from ..elementwise.float8 import to_float8

HALF_NP = (np.dtype(np.float16), dt.bfloat16.np)  # stored in 16 bits, computed in float32
FLOAT8_NP = frozenset(d.np for d in dt.FLOAT8)  # computed in float32 too, rounded once as torch's casts


def _blas_ready(x: np.ndarray) -> np.ndarray:
    """`x`, or a contiguous copy when its matrix layout would push NumPy off BLAS onto a slow loop."""
    if x.dtype.kind != "f" or x.ndim == 0:
        return x
    item = x.itemsize
    if x.ndim == 1:
        return x if x.strides[0] == item or x.shape[0] <= 1 else np.ascontiguousarray(x)
    (rows, cols), (s0, s1) = x.shape[-2:], x.strides[-2:]
    if (s1 == item and s0 >= cols * item) or (s0 == item and s1 >= rows * item):
        return x
    return np.ascontiguousarray(x)


def _exact_in_float64(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether an integer product of `a` and `b` fits float64's 53-bit mantissa (so BLAS is exact)."""
    if a.size == 0 or b.size == 0:
        return True
    bound_a = max(abs(int(a.max())), abs(int(a.min())))
    bound_b = max(abs(int(b.max())), abs(int(b.min())))
    depth = a.shape[-1] if a.ndim else 1
    return bound_a * bound_b * max(depth, 1) < 2 ** 53


def product_into(a: np.ndarray, b: np.ndarray, acc: np.ndarray) -> None:
    """acc[...] = a @ b (NumPy's matmul rules), through BLAS whenever the result stays exact."""
    kind = acc.dtype.kind
    if kind in "iu":
        if _exact_in_float64(a, b):
            exact = np.asarray(np.matmul(a.astype(np.float64), b.astype(np.float64))).astype(np.int64)
            acc[...] = exact.astype(acc.dtype, copy=False)  # through int64: narrow types wrap as in PyTorch
        else:  # integer overflow wraps, as in PyTorch
            np.matmul(a, b, out=acc)
    elif acc.dtype in HALF_NP:
        acc[...] = blas_matmul(a.astype(np.float32), b.astype(np.float32))
    else:
        if b.ndim == 2 and a.ndim > 2 and acc.flags.c_contiguous:
            # (..., k) @ (k, n) as one 2-D product: NumPy would call BLAS once per matrix of a's
            # batch, each call too small to use BLAS well (a transformer's linear layers)
            rows = math.prod(acc.shape[:-1])
            a, acc = a.reshape(rows, a.shape[-1]), acc.reshape(rows, acc.shape[-1])
        a, b = _blas_ready(a), _blas_ready(b)
        if not threaded_product(a, b, acc):
            blas_matmul(a, b, acc)


def blas_matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """np.matmul(a, b, out=out): split over the kernels' threads (vm/intra_op.py) where it can, else its BLAS on
    the threads vm/blas_threads.py leaves it (fewer beside the program's issuing thread or other busy processes)."""
    if out is None and a.dtype == b.dtype and a.dtype.kind == "f" and a.ndim >= 2 and b.ndim >= 2:
        out = np.empty(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1]), a.dtype)
    if out is not None and threaded_product(a, b, out):
        return out
    held = blas_threads.hold_for_product()
    try:
        return np.matmul(a, b, out=out)
    finally:
        if held is not None:
            blas_threads.release(held)


PARALLEL_MACS = 1 << 17  # multiply-adds from which a product splits over threads (below: one BLAS call)
_NO_TRANS, _TRANS = 111, 112


def _operand(x: np.ndarray) -> tuple | None:
    """(transpose flag, leading dimension) of a matrix (the last two dims of `x`) as row-major BLAS reads it,
    or None when neither its rows nor its columns are contiguous."""
    (rows, cols), (s0, s1), item = x.shape[-2:], x.strides[-2:], x.itemsize
    if (s1 == item or cols == 1) and s0 % item == 0 and (rows == 1 or s0 // item >= cols):
        return _NO_TRANS, max(s0 // item if rows > 1 else cols, cols, 1)
    if (s0 == item or rows == 1) and s1 % item == 0 and (cols == 1 or s1 // item >= rows):
        return _TRANS, max(s1 // item if cols > 1 else rows, rows, 1)
    return None


def _batch_step(x: np.ndarray, batch: tuple) -> int | None:
    """The byte step between consecutive matrices of `x` over the broadcast batch dims `batch` (0: one matrix
    for all), or None when its batch dims do not collapse into one step."""
    lead = x.ndim - 2
    shape, strides = (1,) * (len(batch) - lead) + x.shape[:lead], (0,) * (len(batch) - lead) + x.strides[:lead]
    step = None
    for n, full, st in zip(reversed(shape), reversed(batch), reversed(strides)):
        st = 0 if n == 1 else st
        if full == 1:
            continue
        if step is None:
            step, span = st, st * full
        elif st != span:
            return None
        else:
            span *= full
    return step or 0


def threaded_product(a: np.ndarray, b: np.ndarray, out: np.ndarray) -> bool:
    """out[...] = a @ b (float32/float64, one dtype, NumPy's matmul shapes) split over the kernels' threads, if
    they may run (vm/intra_op.py) and the product is large enough; whether it did."""
    dtype = out.dtype
    if (a.dtype != dtype or b.dtype != dtype or dtype.kind != "f" or dtype.itemsize not in (4, 8)
            or a.ndim < 2 or b.ndim < 2 or not intra_op.parallel()):
        return False
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = out.shape[:-2]
    count = math.prod(batch)
    if m * n * k * count < PARALLEL_MACS or out.strides[-1] != dtype.itemsize or k == 0 or out.size == 0:
        return False
    ta, tb = _operand(a), _operand(b)
    if ta is None or tb is None or out.strides[-2] % dtype.itemsize or (m > 1 and out.strides[-2] < n * dtype.itemsize):
        return False
    if np.may_share_memory(out, a) or np.may_share_memory(out, b):  # (BLAS would read what it wrote)
        return False
    kernels = kernel_module('.gemm_kernels', __package__)
    if kernels is None:
        return False
    ldc = max(out.strides[-2] // dtype.itemsize, n, 1)
    pa, pb, pc = a.ctypes.data, b.ctypes.data, out.ctypes.data
    intra_op.enter()  # (the slices are fixed by the thread count set, not by how many threads run now: same bits)
    parts = intra_op.get_threads()
    one = dtype.type(1)  # (the kernels' precision)
    if count == 1:
        if m >= n:  # slices of rows of a and the result, else of columns of b and the result
            kernels.split(one, m, n, k, ta[0], tb[0], pa, ta[1], pb, tb[1], pc, ldc, a.strides[-2], 0,
                          out.strides[-2], 0, parts)
        else:
            kernels.split(one, m, n, k, ta[0], tb[0], pa, ta[1], pb, tb[1], pc, ldc, 0, b.strides[-1], 0,
                          dtype.itemsize, parts)
        return True
    steps = (_batch_step(a, batch), _batch_step(b, batch), _batch_step(out, batch))
    if None in steps:
        return False
    kernels.batch(one, count, m, n, k, ta[0], tb[0], pa, ta[1], pb, tb[1], pc, ldc, *steps)
    return True


def _row_pitch(n: int, itemsize: int) -> int:
    # n, or a little more: a row length whose bytes stay 64 or more away from a multiple of 2 KiB
    step = max(64 // itemsize, 1)
    while not 64 <= (n * itemsize) % 2048 <= 2048 - 64:
        n += step
    return n


def blas_rows(lead: tuple, n: int, dtype, zeros: bool = False) -> np.ndarray:
    """An uninitialised (or zero) (*lead, n) array for a BLAS operand or result, its rows laid a little wider
    than n where n's bytes sit near a multiple of 2 KiB: OpenBLAS's packing of a wide, shallow operand with
    such rows thrashes one cache set (144 x 32 @ 32 x 14336 float32: 2.5 ms with rows 14336 wide, 1.5 ms
    with rows 14368 wide; one core of this machine's EPYC). A view of a wider array."""
    make = np.zeros if zeros else np.empty
    return make(lead + (_row_pitch(n, np.dtype(dtype).itemsize),), dtype)[..., :n]


# -- kernels ------------------------------------------------------------------------------------
def _fold_batches(a: np.ndarray, b: np.ndarray) -> tuple:
    """(B,n,k), (B,k,m) -> (n,B*k), (B*k,m): one product that sums the B products (addbmm)."""
    batches, n, k = a.shape
    return a.transpose(1, 0, 2).reshape(n, batches * k), b.reshape(batches * k, b.shape[2])


def matmul_kernel(ins, outs, attrs) -> None:
    """The products' CPU kernel (the "matmul" record): out = beta * addend + alpha * (a @ b)."""
    a, b = ins[0], ins[1]
    addend = ins[2] if len(ins) > 2 else None
    out = outs[0]
    alpha, beta, sum_batches = attrs[0], attrs[1], attrs[2]  # (then the output's shape and dtype)
    if sum_batches:
        a, b = _fold_batches(a, b)
    float8 = out.dtype in FLOAT8_NP
    widened = float8 or out.dtype in HALF_NP
    if widened:  # NumPy would multiply 16-bit operands in their own type: torch accumulates in float32
        a, b, addend = (x.astype(np.float32) if x is not None else None for x in (a, b, addend))
    compute = np.float32 if widened else out.dtype
    # write straight into `out` unless it must hold float32 or still has to be read as the addend
    direct = compute == out.dtype and (addend is None or beta == 0 or not np.may_share_memory(out, addend))
    acc = out if direct else np.empty(out.shape, compute)
    if alpha == 0:  # PyTorch skips the product: inf or nan in a or b don't leak through
        acc[...] = 0
    else:
        product_into(a, b, acc)
        if alpha != 1:
            acc *= alpha
    if addend is not None and beta != 0:
        acc += addend.astype(compute, copy=False) if beta == 1 else addend.astype(compute) * beta
    if acc is not out:
        out[...] = acc if not float8 else to_float8(acc, out.dtype)


def trace_kernel(ins, outs, attrs) -> None:
    """trace's CPU kernel."""
    x, out = ins[0], outs[0]
    out[...] = np.trace(x, dtype=np.float32 if out.dtype in HALF_NP else out.dtype)


def cross_kernel(ins, outs, attrs) -> None:
    """linalg.cross's CPU kernel (attrs: the axis)."""
    a, b = ins
    out = outs[0]
    if out.dtype in HALF_NP:
        a, b = a.astype(np.float32), b.astype(np.float32)
    out[...] = np.cross(a, b, axis=attrs)
