"""Attention's core, softmax(q @ k^T * scale + bias) @ v, as one kernel each way (torch's fused CPU attention,
_scaled_dot_product_flash_attention_for_cpu, and its backward).

As a graph of tidal ops the core is a scale, two products with their transposing copies, the bias, a softmax, and
twice as many instructions backward: at a small transformer's shapes each of them costs more host and VM time
than its arithmetic. These kernels take float32/float64 CPU tensors of three or four dims ((batch,) heads, length,
head dim; nn/functional_attention.py picks them); the forward keeps the probabilities for the backward. The loops are
numba-compiled once numba is loaded (ops/attention_kernels.py), NumPy before (a first small program does not pay
for numba's import). A create_graph backward differentiates the composite instead.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..vm import intra_op
from ..vm.codegen import kernel_module
from .dispatch import launch, register_kernel

__all__ = ["takes", "attention_rows", "attention_rows_backward"]
FORWARD = "_scaled_dot_product_flash_attention_for_cpu"
BACKWARD = FORWARD + "_backward"


def _compiled():
    return kernel_module(".attention_kernels", __package__)  # ops/attention_kernels.py once compiled, else None


def takes(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None) -> bool:
    """Whether these kernels run attention of q (*B, L, D), k (*B, S, D), v (*B, S, D) with one or two batch dims
    *B and an additive bias broadcasting to (*B, L, S) (or None): non-empty float32/float64 CPU tensors of one
    dtype. (The kernels take any v head dim; torch's flash attention, whose node name these keep, does not.)"""
    if not (isinstance(q, Tensor) and q.dtype in (dt.float32, dt.float64) and q.device.type == "cpu"
            and q.ndim in (3, 4)):
        return False
    if not all(isinstance(t, Tensor) and t.dtype is q.dtype and t.device == q.device and t.ndim == q.ndim
               for t in (k, v)) or q.numel() == 0 or k.numel() == 0 or v.numel() == 0:
        return False
    (*batch, length, depth), (*k_batch, keys, k_depth), (*v_batch, v_keys, _) = q._v.shape, k._v.shape, v._v.shape
    if k_batch != batch or v_batch != batch or k_depth != depth or v_keys != keys or v._v.shape[-1] != depth:
        return False  # (torch's flash attention too wants one head dim for q, k and v)
    if bias is None:
        return True
    return (isinstance(bias, Tensor) and bias.dtype is q.dtype and bias.device == q.device and bias.ndim <= q.ndim
            and all(n in (1, m) for n, m in zip(bias._v.shape[::-1], (keys, length, *batch[::-1]))))


def attention_rows(q: Tensor, k: Tensor, v: Tensor, bias: Tensor | None, scale: float) -> tuple:
    """(out (*B, L, E), probabilities (*B, L, S)) of softmax(q k^T * scale + bias) v; a row whose scores are all
    -inf gives zeros (torch's _safe_softmax)."""
    lead = q._v.shape[:-1]
    ins = (q, k, v) if bias is None else (q, k, v, bias)
    return tuple(launch(FORWARD, ins, [(lead + v._v.shape[-1:], q.dtype), (lead + k._v.shape[-2:-1], q.dtype)],
                        float(scale)))


def attention_rows_backward(g: Tensor, q: Tensor, k: Tensor, v: Tensor, probs: Tensor, scale: float) -> tuple:
    """(grad_q, grad_k, grad_v) of attention_rows for the output gradient `g` (not differentiable)."""
    return tuple(launch(BACKWARD, (g, q, k, v, probs), [(q._v.shape, q.dtype), (k._v.shape, q.dtype),
                                                        (v._v.shape, q.dtype)], float(scale)))


def _four(a: np.ndarray) -> np.ndarray:
    """`a` with size-1 dims in front up to 4 (a view), writeable (the compiled signatures take writeable arrays)."""
    a = a.reshape((1,) * (4 - a.ndim) + a.shape)
    return a if a.flags.writeable else a.copy()


def _bias_rows(bias: np.ndarray, length: int, keys: int) -> np.ndarray:
    """A 4-D bias with full (length, keys) rows, C-contiguous (the kernels' layout); its first two dims stay 1
    where they broadcast."""
    if bias.shape[2:] == (length, keys) and bias.flags.c_contiguous:
        return bias
    return np.ascontiguousarray(np.broadcast_to(bias, bias.shape[:2] + (length, keys)))


@register_kernel(FORWARD, "cpu")
def _forward_kernel(ins, outs, scale) -> None:
    q, k, v = _four(ins[0]), _four(ins[1]), _four(ins[2])
    bias = _bias_rows(_four(ins[3]), q.shape[2], k.shape[2]) if len(ins) > 3 else np.empty((0, 0, 0, 0), q.dtype)
    out, probs = _four(outs[0]), _four(outs[1])
    compiled = _compiled()
    if compiled is not None:
        intra_op.pick(probs.size, compiled.forward, compiled.forward_parallel)(q, k, v, bias, q.dtype.type(scale), out,
                                                                               probs)
        return
    with np.errstate(all="ignore"):
        scores = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
        if bias.size:
            scores = scores + bias
        top = scores.max(-1, keepdims=True)
        masked = top == -np.inf
        e = np.exp(scores - np.where(masked, 0, top))
        total = e.sum(-1, keepdims=True)
        np.divide(e, np.where(masked, 1, total), out=probs)
        np.matmul(probs, v, out=out)


@register_kernel(BACKWARD, "cpu")
def _backward_kernel(ins, outs, scale) -> None:
    g, q, k, v, probs = (_four(a) for a in ins)
    grad_q, grad_k, grad_v = (_four(a) for a in outs)
    compiled = _compiled()
    if compiled is not None:
        intra_op.pick(probs.size, compiled.backward, compiled.backward_parallel)(g, q, k, v, probs, q.dtype.type(scale),
                                                                                 grad_q, grad_k, grad_v)
        return
    dp = np.matmul(g, np.swapaxes(v, -1, -2))
    ds = probs * (dp - (probs * dp).sum(-1, keepdims=True)) * scale
    np.matmul(ds, k, out=grad_q)
    np.matmul(np.swapaxes(ds, -1, -2), q, out=grad_k)
    np.matmul(np.swapaxes(probs, -1, -2), g, out=grad_v)
