"""Connectionist temporal classification: the negative log likelihood of each target under (T, N, C) log
probabilities, by the forward (alpha) recursion, and its gradient by the backward (beta) recursion.

Both kernels run in log space over the extended target l' (a blank before, between and after the labels),
vectorized over the batch; time steps are a Python loop. The gradient is PyTorch's: for t < T_n,
exp(log_probs) - exp(log(sum of alpha * beta over the positions of class c) + nll - log_probs), which is
the gradient in the logits of a log_softmax feeding the loss (so it equals torch's on log_probs leaves too).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch.primitive import Primitive
from ..windowed.windows import compute_array

__all__: list = []


class CTCGeometry(NamedTuple):
    """Host-side lengths of a CTC loss: the kernels read the (padded or concatenated) targets with them."""
    input_lengths: tuple
    target_lengths: tuple
    blank: int
    zero_infinity: bool
    padded_targets: bool     # targets as (N, S) rather than concatenated


def _extended(targets: np.ndarray, geo: CTCGeometry) -> tuple:
    """(N, 2S+1) extended labels, their valid length per sample, and whether the skip transition s-2 -> s
    is allowed at each position."""
    n = len(geo.target_lengths)
    longest = max(geo.target_lengths, default=0)
    labels = np.full((n, 2 * longest + 1), geo.blank, np.int64)
    start = 0
    for b, length in enumerate(geo.target_lengths):
        row = targets[b, :length] if geo.padded_targets else targets[start:start + length]
        start += length
        labels[b, 1:2 * length:2] = row
    skip = np.zeros(labels.shape, bool)
    skip[:, 2:] = (labels[:, 2:] != geo.blank) & (labels[:, 2:] != labels[:, :-2])
    return labels, 2 * np.asarray(geo.target_lengths, np.int64) + 1, skip


def _logsumexp3(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    top = np.maximum(np.maximum(a, b), c)
    safe = np.where(np.isneginf(top), 0.0, top)
    with np.errstate(divide="ignore"):
        return safe + np.log(np.exp(a - safe) + np.exp(b - safe) + np.exp(c - safe))


def _shift(x: np.ndarray, k: int) -> np.ndarray:
    """x moved k positions right along the last axis (k < 0: left), filled with -inf."""
    out = np.full_like(x, -np.inf)
    if k > 0:
        out[:, k:] = x[:, :-k]
    else:
        out[:, :k] = x[:, -k:]
    return out


def _ctc_loss_kernel(ins, outs, geo: CTCGeometry) -> None:
    lp = compute_array(ins[0]).astype(np.float64)               # (T, N, C)
    labels, lengths, skip = _extended(ins[1], geo)
    n, width = labels.shape
    rows = np.arange(n)[:, None]
    inside = np.arange(width)[None, :] < lengths[:, None]
    alpha = np.full((lp.shape[0], n, width), -np.inf)
    alpha[0, :, :2] = lp[0][rows, labels[:, :2]]
    alpha[0] = np.where(inside, alpha[0], -np.inf)
    for t in range(1, lp.shape[0]):
        prev = alpha[t - 1]
        two = np.where(skip, _shift(prev, 2), -np.inf)
        alpha[t] = np.where(inside, lp[t][rows, labels] + _logsumexp3(prev, _shift(prev, 1), two), -np.inf)
    last = np.asarray(geo.input_lengths, np.int64) - 1
    final = alpha[last, np.arange(n)]                            # (N, width)
    end = final[np.arange(n), lengths - 1]
    before = np.where(lengths > 1, final[np.arange(n), np.maximum(lengths - 2, 0)], -np.inf)
    nll = -np.logaddexp(end, before)
    outs[2][...] = nll
    if geo.zero_infinity:
        nll = np.where(np.isinf(nll), 0.0, nll)
    outs[0][...] = nll
    outs[1][...] = alpha


def _ctc_loss_backward_kernel(ins, outs, geo: CTCGeometry) -> None:
    grad_out, lp = compute_array(ins[0]).astype(np.float64), compute_array(ins[1]).astype(np.float64)
    nll, alpha = ins[3].astype(np.float64), ins[4]
    labels, lengths, skip = _extended(ins[2], geo)
    steps, n, classes = lp.shape
    width = labels.shape[1]
    rows = np.arange(n)[:, None]
    inside = np.arange(width)[None, :] < lengths[:, None]
    last = np.asarray(geo.input_lengths, np.int64) - 1
    ends = (np.arange(width)[None, :] >= lengths[:, None] - 2) & inside
    # skip into s+2 from s is allowed where the skip s -> s+2 is, i.e. skip[s+2]
    skip_from = np.zeros_like(skip)
    skip_from[:, :-2] = skip[:, 2:]
    beta = np.full((steps, n, width), -np.inf)
    after = np.full((n, width), -np.inf)
    for t in range(steps - 1, -1, -1):
        emit = lp[t][rows, labels]
        two = np.where(skip_from, _shift(after, -2), -np.inf)
        step = emit + _logsumexp3(after, _shift(after, -1), two)
        start = np.where(ends, emit, -np.inf)
        after = beta[t] = np.where((t == last)[:, None], start, np.where((t < last)[:, None] & inside, step, -np.inf))
    # log-sum of alpha * beta over the positions of each class
    lcab = np.full((steps, n, classes), -np.inf)
    index = np.broadcast_arrays(np.arange(steps)[:, None, None], rows[None], labels[None])
    np.logaddexp.at(lcab, tuple(index), alpha + beta)
    with np.errstate(over="ignore", invalid="ignore"):
        grad = np.exp(lp) - np.exp(lcab + nll[None, :, None] - lp)
    valid = np.arange(steps)[:, None] <= last[None, :]
    grad = np.where(valid[:, :, None], grad, 0.0)
    if geo.zero_infinity:
        grad = np.where(np.isinf(nll)[None, :, None], 0.0, grad)
    outs[0][...] = grad * grad_out[None, :, None]


def ctc_nll(log_probs: Tensor, targets: Tensor, geo: CTCGeometry) -> Tensor:
    """Per-sample CTC negative log likelihood of (T, N, C) `log_probs`, recorded for autograd."""
    return CTC_LOSS((log_probs, targets), geo)[0]


def _ctc_shapes(ins: tuple, geo: CTCGeometry) -> list:
    """(nll, alpha, the likelihoods before zero_infinity zeroed them: the backward reads them)."""
    log_probs = ins[0]
    steps, n, _ = log_probs._v.shape
    width = 2 * max(geo.target_lengths, default=0) + 1
    return [((n,), log_probs.dtype), ((steps, n, width), dt.float64), ((n,), dt.float64)]


def _ctc_backward(node, g: Tensor) -> tuple:
    log_probs, targets, raw, alpha = node.saved_tensors
    return CTC_LOSS_BACKWARD((g, log_probs, targets, raw, alpha), node.attrs), None


# the node sits on the nll only; ctc_loss_backward has no backward of its own (no double gradient, as before)
CTC_LOSS = Primitive("ctc_loss", _ctc_shapes, cpu=_ctc_loss_kernel, cuda=None, backward=_ctc_backward,
                     saved=("input0", "input1", "output2", "output1"), grad_outputs=(0,))
CTC_LOSS_BACKWARD = Primitive("ctc_loss_backward", lambda ins, geo: [(ins[1]._v.shape, ins[1].dtype)],
                              cpu=_ctc_loss_backward_kernel, cuda=None)
