"""The backward engine: runs recorded nodes in reverse topological order."""
from __future__ import annotations

import heapq

from ..tensor import Tensor
from .grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from .graph import AccumulateGrad, gradient_edge


def _ones_like(t: Tensor) -> Tensor:
    from .. import ops
    return ops.ones_like(t)


def _zeros(shape, dtype, device) -> Tensor:
    from .. import ops
    return ops.zeros(shape, dtype=dtype, device=device)


def _sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to `shape`."""
    if grad._v.shape == shape:
        return grad
    lead = grad.dim() - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and grad._v.shape[lead + i] != 1]
    out = grad.sum(dim=dims, keepdim=True) if dims else grad
    return out.reshape(shape)


def _fit(grad: Tensor, meta) -> Tensor:
    shape, dtype = meta
    if grad._v.shape != shape:
        grad = _sum_to(grad, shape)
    if grad.dtype is not dtype:
        grad = grad.to(dtype)
    return grad


def _roots(tensors, grad_tensors, name: str) -> list:
    roots = []
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad:
            raise RuntimeError(f"element {k} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _ones_like(t)
        elif not isinstance(g, Tensor):
            from .. import ops
            g = ops.tensor(g, dtype=t.dtype)
        elif g._v.shape != t._v.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of {list(g.shape)} and "
                               f"output[{k}] has a shape of {list(t.shape)}.")
        roots.append((t, g))
    return roots


def run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool, inputs=None,
                 accumulate: bool = True, allow_unused: bool = False):
    """Propagate gradients from `tensors`; accumulate into leaves' .grad or return grads of `inputs`."""
    roots = _roots(tensors, grad_tensors, "backward")
    capture_nodes: dict = {}   # (node, output index) -> position in inputs, for non-leaf inputs
    capture_leaves: dict = {}  # id(leaf) -> position in inputs
    if inputs is not None:
        for k, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            if t.grad_fn is None:
                capture_leaves[id(t)] = k
            else:
                capture_nodes[(t.grad_fn, t._output_nr)] = k
    captured = [None] * (len(inputs) if inputs is not None else 0)

    # dependency counts over the reachable graph
    deps: dict = {}
    stack = []
    for t, _ in roots:
        node = gradient_edge(t)
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            if nxt not in deps:
                deps[nxt] = 0
                stack.append(nxt)
            deps[nxt] += 1

    buffers: dict = {}
    for t, g in roots:
        node = gradient_edge(t)
        buf = buffers.setdefault(node, [None] * node.n_outputs)
        idx = t._output_nr if t.grad_fn is not None else 0
        buf[idx] = g if buf[idx] is None else buf[idx] + g
    ready = [(-n.seq, id(n), n) for n in deps if deps[n] == 0]
    heapq.heapify(ready)
    with set_grad_enabled(create_graph):
        while ready:
            _, _, node = heapq.heappop(ready)
            grads = buffers.pop(node, None) or [None] * node.n_outputs
            if isinstance(node, AccumulateGrad):
                _accumulate(node, grads[0], accumulate, capture_leaves, captured)
                continue
            for k, g in enumerate(grads):
                for hook in node._pre_hooks.get(k, ()):
                    res = hook(g)
                    if res is not None:
                        g = grads[k] = res
                pos = capture_nodes.get((node, k))
                if pos is not None:
                    captured[pos] = g
            for hook in node._pre_hooks.get(-1, ()):
                res = hook(tuple(grads))
                if res is not None:
                    grads = list(res)
            if all(g is None for g in grads):
                in_grads = (None,) * len(node.next_functions)
            else:
                if node._freed:
                    from .graph import FREED
                    raise RuntimeError(FREED)
                in_grads = node.backward_fn(node, *grads)
                if not isinstance(in_grads, tuple):
                    in_grads = (in_grads,)
            for hook in node._hooks:
                hook(in_grads, tuple(grads))
            if not retain_graph:
                node.release()
            for (nxt, idx), g, meta in zip(node.next_functions, in_grads, node._input_meta):
                if nxt is None:
                    continue
                if g is not None:
                    g = _fit(g, meta)
                    buf = buffers.setdefault(nxt, [None] * nxt.n_outputs)
                    buf[idx] = g if buf[idx] is None else buf[idx] + g
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    heapq.heappush(ready, (-nxt.seq, id(nxt), nxt))
    if inputs is not None:
        for k, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError("One of the differentiated Tensors appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(captured)
    return None


def _accumulate(node: AccumulateGrad, grad, accumulate: bool, capture_leaves: dict, captured: list) -> None:
    leaf = node.variable
    if grad is None:
        return
    for hook in leaf.__dict__.get("_hooks_list", ()):
        res = hook(grad)
        if res is not None:
            grad = res
    pos = capture_leaves.get(id(leaf))
    if pos is not None:
        captured[pos] = grad if captured[pos] is None else captured[pos] + grad
    if not accumulate:
        return
    if leaf.grad is None:
        # a copy, since one gradient tensor may flow to several leaves (add passes it through);
        # the copy fuses with the op that produced the gradient, so it costs no extra pass
        leaf.grad = grad if is_grad_enabled() else grad.detach().clone()
    else:
        if is_grad_enabled():
            leaf.grad = leaf.grad + grad
        else:
            with no_grad():
                leaf.grad.add_(grad)
