"""AdaptiveLogSoftmaxWithLoss: a softmax over many classes as a head of frequent classes plus cluster tails
(Grave et al., 2016)."""
from __future__ import annotations

from collections import namedtuple

import numpy as np

from ... import ops
from ...tensor import Tensor
from .. import functional as F
from ..containers import ModuleList, Sequential
from ..module import Module
from .linear import Linear

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of targets under an adaptive softmax, and their mean negative (the loss)."""

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self) -> None:
        """Re-initialize the head and every tail projection."""
        self.head.reset_parameters()
        for i2h, h2o in self.tail:
            i2h.reset_parameters()
            h2o.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> tuple:
        """(log-probability of each target, mean negative log-probability)."""
        if target_.dim() == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError("Input and target should have the same size in the batch dimension.")
            if input_.dim() != 2:
                raise RuntimeError("1D target tensor expects 2D input tensors, but found inputs with size",
                                   input_.shape)
        elif target_.dim() == 0:
            if input_.dim() != 1:
                raise RuntimeError("0D target tensor expects 1D input tensors, but found inputs with size",
                                   input_.shape)
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.dim() > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        labels = target.numpy()
        batch = len(labels)
        head_index = labels.copy()      # the head column each row reads: its class or its cluster
        output = ops.zeros(batch, dtype=input.dtype, device=input.device)
        used = int(((labels >= 0) & (labels < self.shortlist_size)).sum())
        for i in range(1, len(self.cutoffs)):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            rows = np.flatnonzero((labels >= low) & (labels < high))
            if rows.size == 0:
                continue
            used += rows.size
            head_index[rows] = self.shortlist_size + i - 1
            picked = ops.tensor(rows, device=input.device)
            cluster = F.log_softmax(self.tail[i - 1](input.index_select(0, picked)), dim=1)
            local = cluster.gather(1, ops.tensor(labels[rows] - low, device=input.device).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, picked, local)
        if used != batch:
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{labels.min()}, {labels.max()}] were found. ")
        head = F.log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, ops.tensor(head_index, device=input.device).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input: Tensor, head_output: Tensor) -> Tensor:
        """Log-probabilities of every class: head classes directly, tail classes through their cluster."""
        head = F.log_softmax(head_output, dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = F.log_softmax(self.tail[i](input), dim=1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return ops.cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """(N, n_classes) log-probabilities (or (n_classes,) for one unbatched input)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input: Tensor) -> Tensor:
        """The most likely class of each input (head classes decided without evaluating the tails)."""
        batched = input.dim() > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        output = ops.argmax(head_output, dim=1)
        outside = (output >= self.shortlist_size).numpy()
        if outside.any():
            rows = ops.tensor(np.flatnonzero(outside), device=x.device)
            full = self._get_full_log_prob(x.index_select(0, rows), head_output.index_select(0, rows))
            output = output.index_copy(0, rows, ops.argmax(full, dim=1))
        return output if batched else output.squeeze(0)
