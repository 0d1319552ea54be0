"""softmax, log_softmax and safe_softmax along one dim, with their gradients.

Composed of tidal ops (the elementwise part fuses), with a node of their own; the last dim of a C-contiguous
input runs as one row kernel each way (ops/rowwise/softmax_rows.py).
"""
from __future__ import annotations

import builtins
import math

from ...autograd.grad_mode import is_grad_enabled, no_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ..elementwise import arithmetic as M, copies
from ..movement import many_dims
from ..rowwise import softmax_rows
from ..elementwise.plans import torch_name
from ..dispatch.primitive import Primitive
from ..movement.memory_format import channels_last_like
from .extremes import amax
from .reduce import dtype_arg, one_axis, sum

__all__ = ["softmax", "log_softmax"]



# -- softmax: composed of tidal ops (the elementwise part fuses), with a node of its own ------
def _softmax_input(op: str, x: Tensor, dim, dtype) -> tuple:
    """(x in its compute dtype, the wrapped dim, the result dtype); errors as torch's."""
    if dim is None:
        raise TypeError(f"{op}(): argument 'dim' (position 2) must be int, not NoneType")
    if dtype_arg(dtype, op) is not None and dtype is not x.dtype:
        x = copies.convert(x, dtype)
    d = one_axis(x, dim, op)[0]
    if (not x.dtype.is_floating_point or x.dtype.is_complex) and x.numel():
        kernel = f"{op}_lastdim_kernel_impl" if d == builtins.max(x.ndim - 1, 0) else f"{op}_kernel_impl"
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(x.dtype)}'")
    if len(x._v.shape) in (4, 5) and channels_last_like(x) is not None:
        x = x.contiguous()  # torch's CPU softmax computes on a contiguous input: its result is row-major
    return (x if x.dtype.compute is x.dtype else copies.convert(x, x.dtype.compute)), d, x.dtype


def _softmax_family(op: str, input: Tensor, dim, dtype, body, record: Primitive) -> Tensor:
    """Run `body(x, d)` untracked and attach `record`'s node (named `op`), which saves only the output (as torch
    does): cheaper than the graph of its primitives, and its backward is differentiable again."""
    with no_grad():
        x, d, out = _softmax_input(op, input, dim, dtype)
        if x.numel() == 0:
            result = Tensor._empty(x._v.shape, out, x.device)
        else:
            result = body(x, d, out) if body is _log_softmax_body else body(x, d)
            result = result if result.dtype is out else copies.convert(result, out)
    record.attach((input,), (result,), dim if dim.__class__ is int else d, op)  # (the dim as given: torch's _saved_dim)
    return result


def softmax(input: Tensor, dim: int, dtype: dt.dtype | None = None) -> Tensor:
    """exp(x) / sum(exp(x)) along `dim`, shifted by the max for stability."""
    if input.ndim > many_dims.MAX_NDIM:  # on a view of 3 dims or fewer
        return many_dims.along_dim(softmax, input, dim, dtype)
    return _softmax_family("softmax", input, dim, dtype, _softmax_body, SOFTMAX)


def _softmax_body(x: Tensor, d: int) -> Tensor:
    if softmax_rows.takes(x, d):
        return softmax_rows.softmax_rows(x, False)
    e = M.exp(M.sub(x, amax(x, d, keepdim=True)))
    return M.div(e, sum(e, d, keepdim=True))


def safe_softmax(input: Tensor, dim: int, dtype: dt.dtype | None = None) -> Tensor:
    """softmax where a slice that is all -inf gives zeros rather than NaN (torch's _safe_softmax, which
    attention uses for fully masked rows); one node saving only the output, as softmax."""
    return _softmax_family("_safe_softmax", input, dim, dtype, _safe_softmax_body, SOFTMAX)


def _safe_softmax_body(x: Tensor, d: int) -> Tensor:
    if softmax_rows.takes(x, d):
        return softmax_rows.softmax_rows(x, False, safe=True)
    top = amax(x, d, keepdim=True)
    e = M.exp(M.sub(x, M.where(M.eq(top, -math.inf), 0.0, top)))  # an all -inf slice: exp(-inf) = 0 throughout
    total = sum(e, d, keepdim=True)  # 0 only for such a slice: elsewhere its largest element gives 1
    return M.where(M.eq(total, 0.0), 0.0, M.div(e, total))


def _softmax_backward(node, g):
    (y,) = node.saved_tensors
    d = node.attrs % builtins.max(y.ndim, 1)
    if not is_grad_enabled() and g.dtype is y.dtype and softmax_rows.takes(y, d):  # (not create_graph)
        return softmax_rows.softmax_rows_backward(g, y, False)
    g, y, half = _widened(g, y)  # (16-bit: computed in float32 and rounded once, as torch's kernel)
    grad = y * (g - sum(g * y, d, keepdim=True))
    return grad if half is None else copies.convert(grad, half)


def _widened(g: Tensor, y: Tensor) -> tuple:
    """(g, y) in float32 and their 16-bit dtype when y is float16/bfloat16, else (g, y, None)."""
    if y.dtype not in (dt.float16, dt.bfloat16):
        return g, y, None
    return copies.convert(g, dt.float32), copies.convert(y, dt.float32), y.dtype


def log_softmax(input: Tensor, dim: int, dtype: dt.dtype | None = None) -> Tensor:
    """x - logsumexp(x) along `dim`, shifted by the max for stability."""
    if input.ndim > many_dims.MAX_NDIM:  # on a view of 3 dims or fewer
        return many_dims.along_dim(log_softmax, input, dim, dtype)
    return _softmax_family("log_softmax", input, dim, dtype, _log_softmax_body, LOG_SOFTMAX)


def _log_softmax_body(x: Tensor, d: int, out: dt.dtype | None = None) -> Tensor:
    last = d == builtins.max(x.ndim - 1, 0)
    if out in (dt.float16, dt.bfloat16) and last:
        # torch's last-dim kernel keeps each row's sum, and then its log, in the 16-bit dtype
        shifted = M.sub(x, amax(x, d, keepdim=True))
        total = copies.convert(copies.convert(sum(M.exp(shifted), d, keepdim=True), out), x.dtype)
        return M.sub(shifted, copies.convert(copies.convert(M.log(total), out), x.dtype))
    if softmax_rows.takes(x, d):
        return softmax_rows.softmax_rows(x, True)
    shifted = M.sub(x, amax(x, d, keepdim=True))
    return M.sub(shifted, M.log(sum(M.exp(shifted), d, keepdim=True)))


def _log_softmax_backward(node, g):
    (y,) = node.saved_tensors
    d = node.attrs % builtins.max(y.ndim, 1)
    if not is_grad_enabled() and g.dtype is y.dtype and softmax_rows.takes(y, d):  # (not create_graph)
        return softmax_rows.softmax_rows_backward(g, y, True)
    g, y, half = _widened(g, y)
    grad = g - M.exp(y) * sum(g, d, keepdim=True)
    return grad if half is None else copies.convert(grad, half)


# the composites' nodes (torch's SoftmaxBackward0, SafeSoftmaxBackward0 through node=, LogSoftmaxBackward0): their
# attrs the dim as given (negative too), each saving only its output
SOFTMAX = Primitive("softmax", None, cpu=None, backward=_softmax_backward, saved=("output0",), sbp="along_dim")
LOG_SOFTMAX = Primitive("log_softmax", None, cpu=None, backward=_log_softmax_backward, saved=("output0",),
                        sbp="along_dim")

METHODS = {name: globals()[name] for name in __all__}
