"""Layer norm over trailing dims as one kernel each way, as torch's native_layer_norm and its backward.

The composite in nn/functional_norm.py (mean/variance arithmetic on tidal ops) is a dozen instructions
forward and twice that backward; at a transformer's shapes its host cost alone was 3x torch's whole op.
These kernels take float32/float64 CPU tensors (nn/functional_norm.py picks them); the loops are
numba-compiled once numba is loaded (ops/rowwise/norm_kernels.py), NumPy before (a first small program does
not pay for numba's import). Statistics accumulate in float64.
"""
from __future__ import annotations

import math
import numpy as np

from ...tensor import Tensor
from ...vm import intra_op
from ...vm.codegen import kernel_module
from ..dispatch.primitive import Primitive

__all__ = ["layer_norm_rows", "layer_norm_rows_backward"]

def _compiled():
    return kernel_module('.norm_kernels', __package__)  # ops/rowwise/norm_kernels.py once compiled, else None


def layer_norm_rows(x: Tensor, k: int, eps: float, weight: Tensor | None, bias: Tensor | None) -> tuple:
    """(y, mean, rstd): `x` normalized over its last `k` dims, times weight plus bias (each None or of those
    dims' shape and x's dtype); mean and rstd keep the normalized dims as size 1."""
    ins = (x,) + tuple(t for t in (weight, bias) if t is not None)
    return NATIVE_LAYER_NORM(ins, (k, float(eps), weight is not None, bias is not None))


def layer_norm_rows_backward(g: Tensor, x: Tensor, mean: Tensor, rstd: Tensor, weight: Tensor | None,
                             k: int) -> tuple:
    """(grad_input, grad_weight, grad_bias) of layer_norm_rows for the output gradient `g` (not differentiable:
    a create_graph backward uses the composite)."""
    ins = (g, x, mean, rstd) + ((weight,) if weight is not None else ())
    return NATIVE_LAYER_NORM_BACKWARD(ins, (k, weight is not None))


def _rows(a: np.ndarray, k: int) -> np.ndarray:
    n = math.prod(a.shape[a.ndim - k:])
    return np.ascontiguousarray(a).reshape(-1, n)


def _param(ins: list, at: int, present: bool, n: int, dtype) -> np.ndarray:
    return np.ascontiguousarray(ins[at]).reshape(n) if present else np.empty(0, dtype)


def _forward_kernel(ins, outs, attrs) -> None:
    k, eps, has_weight, has_bias = attrs
    x = _rows(ins[0], k)
    rows, n = x.shape
    weight = _param(ins, 1, has_weight, n, x.dtype)
    bias = _param(ins, 1 + has_weight, has_bias, n, x.dtype)
    y, mean, rstd = outs[0].reshape(rows, n), outs[1].reshape(rows), outs[2].reshape(rows)
    compiled = _compiled()
    if compiled is not None:
        intra_op.pick(x.size, compiled.forward, compiled.forward_parallel)(x, weight, bias, eps, y, mean, rstd)
        return
    # (NumPy in x's dtype, the statistics accumulated in float64: float64 copies of x made this path 2x slower)
    m = x.mean(1, keepdims=True, dtype=np.float64)
    centered = x - m.astype(x.dtype)
    r = 1.0 / np.sqrt(np.square(centered).mean(1, keepdims=True, dtype=np.float64) + eps)
    v = np.multiply(centered, r.astype(x.dtype), out=centered)
    if has_weight:
        v *= weight
    if has_bias:
        v += bias
    y[...] = v
    mean[...], rstd[...] = m[:, 0], r[:, 0]


def _backward_kernel(ins, outs, attrs) -> None:
    k, has_weight = attrs
    g, x = _rows(ins[0], k), _rows(ins[1], k)
    rows, n = x.shape
    mean, rstd = ins[2].reshape(rows), ins[3].reshape(rows)
    weight = _param(ins, 4, has_weight, n, x.dtype)
    grad_input = outs[0].reshape(rows, n)
    compiled = _compiled()
    if compiled is not None:
        grad_weight, grad_bias = np.zeros(n), np.zeros(n)
        if intra_op.wide(x.size):  # (grad_weight/bias summed per block of rows: bits fixed by the thread count set)
            intra_op.enter()
            compiled.backward_parallel(g, x, mean, rstd, weight, np.empty((rows, n)), grad_input, grad_weight,
                                       grad_bias, intra_op.get_threads())
        else:
            compiled.backward(g, x, mean, rstd, weight, np.empty((rows, n)), grad_input, grad_weight, grad_bias)
    else:
        r = rstd[:, None]
        xhat = (x - mean[:, None]) * r
        dy = g * weight if has_weight else g
        a = dy.mean(1, keepdims=True, dtype=np.float64).astype(x.dtype)
        c = (dy * xhat).mean(1, keepdims=True, dtype=np.float64).astype(x.dtype)
        grad_input[...] = r * (dy - a - xhat * c)
        grad_weight, grad_bias = (g * xhat).sum(0, dtype=np.float64), g.sum(0, dtype=np.float64)
    outs[1].reshape(n)[...] = grad_weight
    outs[2].reshape(n)[...] = grad_bias


# the records: kernels only (the autograd node is nn/functional_norm.py's, whose backward calls the second or, for
# a create_graph backward, the composite)
def _forward_shapes(ins: tuple, attrs: tuple) -> list:
    x, k = ins[0], attrs[0]
    shape = x._v.shape
    stats = shape[:len(shape) - k] + (1,) * k
    return [(shape, x.dtype), (stats, x.dtype), (stats, x.dtype)]


def _backward_shapes(ins: tuple, attrs: tuple) -> list:
    x, k = ins[1], attrs[0]
    shape = x._v.shape
    params = shape[len(shape) - k:]
    return [(shape, x.dtype), (params, x.dtype), (params, x.dtype)]


NATIVE_LAYER_NORM = Primitive("native_layer_norm", _forward_shapes, cpu=_forward_kernel, cuda=None)
NATIVE_LAYER_NORM_BACKWARD = Primitive("native_layer_norm_backward", _backward_shapes, cpu=_backward_kernel, cuda=None)
