"""Attention's core, softmax(q @ k^T * scale + bias) @ v, as one kernel each way (torch's fused CPU attention,
_scaled_dot_product_flash_attention_for_cpu, and its backward).

As a graph of tidal ops the core is a scale, two products with their transposing copies, the bias, a softmax, and
twice as many instructions backward: at a small transformer's shapes each of them costs more host and VM time
than its arithmetic. These kernels take float32/float64 CPU tensors of three or four dims ((batch,) heads, length,
head dim; nn/functional_attention.py picks them); the forward keeps the probabilities for the backward. The packed
pair (nn.MultiheadAttention's self-attention) reads q, k and v from one projection and writes the result, and the
projection's gradient, in the caller's layout, so no head is copied (the tiny GPT's step lost four copies, two cats
and four transposing copies a layer). The loops are
numba-compiled once numba is loaded (ops/rowwise/attention_kernels.py), NumPy before (a first small program does not pay
for numba's import). A create_graph backward differentiates the composite instead.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm import intra_op
from ...vm.codegen import kernel_module
from ..dispatch.primitive import Primitive

__all__ = ["takes", "attention_rows", "attention_rows_backward", "takes_packed", "packed_attention",
           "packed_attention_backward", "HEADS_FIRST"]
FORWARD = "_scaled_dot_product_flash_attention_for_cpu"
BACKWARD = FORWARD + "_backward"
# self-attention over q, k, v packed in one projection's last dim (nn.MultiheadAttention): the kernels read each
# head straight from the projection and write the result, and the projection's gradient, in its layout, where the
# unpacked op needs the heads split into copies and the gradients gathered back with a cat
PACKED = "_packed_attention"
PACKED_BACKWARD = PACKED + "_backward"


def _compiled():
    return kernel_module('.attention_kernels', __package__)  # ops/rowwise/attention_kernels.py once compiled, else None


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
    return _ATTENTION((q, k, v) if bias is None else (q, k, v, bias), float(scale))


def attention_rows_backward(g: Tensor, q: Tensor, k: Tensor, v: Tensor, probs: Tensor, scale: float) -> tuple:
    """(grad_q, grad_k, grad_v) of attention_rows for the output gradient `g` (not differentiable)."""
    return _ATTENTION_BACKWARD((g, q, k, v, probs), float(scale))


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


def _forward_kernel(ins, outs, scale) -> None:
    q, k, v = _four(ins[0]), _four(ins[1]), _four(ins[2])
    _forward(q, k, v, ins[3] if len(ins) > 3 else None, scale, _four(outs[0]), _four(outs[1]))


def _forward(q, k, v, bias, scale: float, out, probs) -> None:
    # the forward on 4-D (batch, heads, length, head dim) arrays; `out` may be a strided view (its head rows contiguous)
    bias = _bias_rows(_four(bias), q.shape[2], k.shape[2]) if bias is not None else np.empty((0, 0, 0, 0), q.dtype)
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


def _backward_kernel(ins, outs, scale) -> None:
    g, q, k, v, probs = (_four(a) for a in ins)
    _backward(g, q, k, v, probs, scale, *(_four(a) for a in outs))


def _backward(g, q, k, v, probs, scale: float, grad_q, grad_k, grad_v) -> None:
    # the backward on 4-D arrays; the gradients may be strided views (their head rows contiguous)
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


# -- q, k, v packed in one projection ------------------------------------------------------------------------------
def takes_packed(proj: Tensor, heads: int, batch_first: bool, bias: Tensor | None) -> bool:
    """Whether the packed kernels run attention over `proj` ((N, L, 3E) or (L, N, 3E), E a multiple of `heads`) with
    an additive 4-D bias broadcasting to (N, heads, L, L) (or None): a non-empty float32/float64 CPU tensor whose
    head dim is contiguous."""
    if not (isinstance(proj, Tensor) and proj.dtype in (dt.float32, dt.float64) and proj.device.type == "cpu"
            and proj.ndim == 3 and proj.numel() > 0 and proj._v.shape[2] % (3 * heads) == 0
            and proj._v.strides[2] == 1):
        return False
    if bias is None:
        return True
    n, length = proj._v.shape[:2] if batch_first else proj._v.shape[1::-1]
    return (isinstance(bias, Tensor) and bias.dtype is proj.dtype and bias.device == proj.device and bias.ndim == 4
            and all(b in (1, m) for b, m in zip(bias._v.shape, (n, heads, length, length))))


# a packed (N, L, parts, heads, head dim) projection's dims as (parts, N, heads, L, head dim), by batch_first (else
# the projection is (L, N, ...)): the head views of the kernels here, and of the create_graph composite
HEADS_FIRST = {True: (2, 0, 3, 1, 4), False: (2, 1, 3, 0, 4)}


def _head_views(a: np.ndarray, parts: int, heads: int, batch_first: bool) -> tuple:
    """The `parts` (N, heads, L, head dim) views of a packed (N, L, parts * E) array ((L, N, ...) unless
    `batch_first`)."""
    b0, b1, width = a.shape
    x = a.reshape(b0, b1, parts, heads, width // (parts * heads))  # (a view of a result: results are contiguous)
    return tuple(x.transpose(HEADS_FIRST[batch_first]))


def packed_attention(proj: Tensor, heads: int, batch_first: bool, bias: Tensor | None, scale: float) -> tuple:
    """(out, probabilities (N, heads, L, L)) of softmax(q k^T * scale + bias) v for the q, k, v packed in `proj`'s
    last dim (see takes_packed); `out` has `proj`'s leading dims and E = width / 3."""
    return _PACKED((proj,) if bias is None else (proj, bias), (heads, batch_first, float(scale)))


def packed_attention_backward(g: Tensor, proj: Tensor, probs: Tensor, heads: int, batch_first: bool,
                              scale: float) -> Tensor:
    """The gradient of `proj` (in its layout) for packed_attention's output gradient `g` (not differentiable)."""
    return _PACKED_BACKWARD((g, proj, probs), (heads, batch_first, float(scale)))


def _packed_forward_kernel(ins, outs, attrs) -> None:
    heads, batch_first, scale = attrs
    q, k, v = (_four(x) for x in _head_views(ins[0], 3, heads, batch_first))
    (out,) = _head_views(outs[0], 1, heads, batch_first)
    _forward(q, k, v, ins[1] if len(ins) > 1 else None, scale, out, outs[1])


def _packed_backward_kernel(ins, outs, attrs) -> None:
    heads, batch_first, scale = attrs
    (g,) = (_four(x) for x in _head_views(ins[0], 1, heads, batch_first))
    q, k, v = (_four(x) for x in _head_views(ins[1], 3, heads, batch_first))
    _backward(g, q, k, v, _four(ins[2]), scale, *_head_views(outs[0], 3, heads, batch_first))


# the records: kernels only (the autograd nodes are nn/functional_attention.py's, whose backwards call the
# backward records or, for a create_graph backward, the composite)
def _attention_shapes(ins: tuple, scale: float) -> list:
    q, k, v = ins[:3]
    lead = q._v.shape[:-1]
    return [(lead + v._v.shape[-1:], q.dtype), (lead + k._v.shape[-2:-1], q.dtype)]


def _packed_shapes(ins: tuple, attrs: tuple) -> list:
    proj, (heads, batch_first, _) = ins[0], attrs
    b0, b1, width = proj._v.shape
    n, length = (b0, b1) if batch_first else (b1, b0)
    return [((b0, b1, width // 3), proj.dtype), ((n, heads, length, length), proj.dtype)]


_ATTENTION = Primitive(FORWARD, _attention_shapes, cpu=_forward_kernel, cuda=None)
_ATTENTION_BACKWARD = Primitive(BACKWARD, lambda ins, scale: [(t._v.shape, ins[1].dtype) for t in ins[1:4]],
                                cpu=_backward_kernel, cuda=None)
_PACKED = Primitive(PACKED, _packed_shapes, cpu=_packed_forward_kernel, cuda=None)
_PACKED_BACKWARD = Primitive(PACKED_BACKWARD, lambda ins, attrs: [(ins[1]._v.shape, ins[1].dtype)],
                             cpu=_packed_backward_kernel, cuda=None)
