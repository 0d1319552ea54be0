"""The backward engine: runs recorded nodes in reverse topological order."""
from __future__ import annotations

import heapq
import sys
from contextlib import nullcontext

from ..tensor import Tensor, numel_of
from ..tensor import dtype as dt
from . import backward_replay
from . import hooks
from .anomaly import is_anomaly_enabled
from .grad_mode import is_grad_enabled, no_grad, set_grad_enabled
from .grad_layout import clone_obey_contract, obeys_layout_contract
from .graph import _NO_EDGE, AccumulateGrad, gradient_edge, no_tangents
from .graph import FREED


def _ones_like(t: Tensor) -> Tensor:
    return hooks.ones_like(t)


def _zeros(shape, dtype, device) -> Tensor:
    return hooks.zeros(shape, dtype=dtype, device=device)


_sum_dims: dict = {}  # (gradient shape, input shape) -> the dims a broadcast gradient sums over


def _sum_to(grad: Tensor, shape: tuple) -> Tensor:
    """Reduce a broadcast gradient back to `shape`."""
    have = grad._v.shape
    if have == shape:
        return grad
    dims = _sum_dims.get((have, shape))
    if dims is None:
        lead = len(have) - len(shape)
        dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and have[lead + i] != 1]
        if len(_sum_dims) < 4096:
            _sum_dims[have, shape] = dims
    out = grad.sum(dim=dims, keepdim=True) if dims else grad
    return out if out._v.shape == shape else out.reshape(shape)  # (keepdim sums keep the shape when no lead goes)


def _fit(grad: Tensor, meta) -> Tensor:
    shape, dtype = meta
    if grad._v.shape != shape:
        grad = _sum_to(grad, shape)
    if grad.dtype is not dtype:
        if grad.dtype.is_complex and not dtype.is_complex:  # a real input of a complex op: its real part (torch's)
            grad = grad.real
        grad = grad if grad.dtype is dtype else grad.to(dtype)
    return grad


def _roots(tensors, grad_tensors, name: str) -> list:
    roots = []
    for k, (t, g) in enumerate(zip(tensors, grad_tensors)):
        if not t.requires_grad or (t.grad_fn is None and "_nograd_view" in t.__dict__):
            # (a view made under no_grad reports its base's requires_grad but has no edge to it, as in torch)
            raise RuntimeError(f"element {k} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if t.numel() != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            g = _ones_like(t)
        elif not isinstance(g, Tensor):
            g = hooks.tensor(g, dtype=t.dtype)
        elif g._v.shape != t._v.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{k}] has a shape of torch.Size({list(g.shape)}) "
                               f"and output[{k}] has a shape of torch.Size({list(t.shape)}).")
        roots.append((t, g))
    return roots


_final_callbacks: list = []  # one list per running backward (nested ones stack): queue_callback's
_tasks: list = []  # the nodes each running backward will run (dependency counts), innermost last


def will_run(node) -> bool:
    """Whether the innermost running backward runs (or captures at) `node` (torch's
    _will_engine_execute_node); False outside a backward."""
    return bool(_tasks) and node in _tasks[-1]


def queue_callback(callback) -> None:
    """Run `callback()` when the backward now running finishes (torch's
    Variable._execution_engine.queue_callback); callbacks may queue more callbacks."""
    if not _final_callbacks:
        raise RuntimeError("Final callbacks can only be installed during backward pass.")
    _final_callbacks[-1].append(callback)


def run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool, inputs=None,
                 accumulate: bool = True, allow_unused: bool = False, prune: bool = False):
    """Propagate gradients from `tensors`; accumulate into leaves' .grad or return grads of `inputs`.
    `prune` (with `inputs`): run only the nodes from which an input can be reached, as torch's
    autograd.grad does (hooks elsewhere do not run)."""
    callbacks: list = []
    _final_callbacks.append(callbacks)
    try:
        found = _run_backward(tensors, grad_tensors, retain_graph, create_graph, inputs, accumulate, allow_unused,
                              prune)
        while callbacks:  # after the graph ran, as torch's (not after a failed backward); may queue more
            callbacks.pop(0)()
    finally:
        _final_callbacks.pop()
    return found


def _run_backward(tensors, grad_tensors, retain_graph: bool, create_graph: bool, inputs, accumulate: bool,
                  allow_unused: bool, prune: bool):
    roots = _roots(tensors, grad_tensors, "backward")
    capture_nodes: dict = {}   # (node, output index) -> position in inputs, for non-leaf inputs
    capture_leaves: dict = {}  # id(leaf) -> position in inputs
    repeats: dict = {}  # position of an input given again -> its first position (it gets the same gradient)
    if inputs is not None:
        for k, t in enumerate(inputs):
            if not t.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            where, key = (capture_leaves, id(t)) if t.grad_fn is None else (capture_nodes, (t.grad_fn, t._output_nr))
            if key in where:
                repeats[k] = where[key]
            else:
                where[key] = k
    captured = [None] * (len(inputs) if inputs is not None else 0)
    starts = [gradient_edge(t) for t, _ in roots]  # each root's node (its grad_fn, or its leaf's accumulator)
    if (backward_replay.enabled and inputs is None and accumulate and not create_graph
            and not is_anomaly_enabled()):
        if backward_replay.run(roots, starts, retain_graph,
                               lambda: _run_graph(roots, starts, retain_graph, False, None, True, {}, {}, [], False)):
            return None
    _run_graph(roots, starts, retain_graph, create_graph, inputs, accumulate, capture_nodes, capture_leaves, captured,
               prune)
    if inputs is not None:
        for k, first in repeats.items():
            captured[k] = captured[first]
        for k, g in enumerate(captured):
            if g is None and not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {k} appears to not have been used in "
                                   "the graph. Set allow_unused=True if this is the desired behavior.")
        return tuple(captured)
    return None


def _run_graph(roots: list, starts: list, retain_graph: bool, create_graph: bool, inputs, accumulate: bool,
               capture_nodes: dict, capture_leaves: dict, captured: list, prune: bool) -> None:
    """Run the graph below `starts` (the roots' nodes) on the engine."""
    # dependency counts over the reachable graph
    deps: dict = {}
    stack = []
    for node in starts:
        if node not in deps:
            deps[node] = 0
            stack.append(node)
    get = deps.get
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is None:
                continue
            count = get(nxt)
            if count is None:
                deps[nxt] = 1
                stack.append(nxt)
            else:
                deps[nxt] = count + 1

    cut = None  # autograd.grad: node -> its edges with those that cannot reach an input cut (where some are)
    if prune and inputs is not None:
        deps, cut = _prune(deps, capture_nodes, capture_leaves)

    buffers: dict = {}
    for (t, g), node in zip(roots, starts):
        buf = buffers.setdefault(node, [None] * node.n_outputs)
        idx = t._output_nr if t.grad_fn is not None else 0
        buf[idx] = g if buf[idx] is None else buf[idx] + g
    # the nodes nothing reachable feeds are roots' nodes (pruning keeps every relevant node's parents)
    ready = [(-n.seq, id(n), n, buffers.pop(n, None)) for n in dict.fromkeys(starts) if deps.get(n) == 0]
    heapq.heapify(ready)
    _tasks.append(deps)  # its keys stay: run counts down the values only
    try:
        _run_nodes(ready, deps, buffers, cut, retain_graph, create_graph, accumulate, capture_nodes,
                   capture_leaves, captured)
    finally:
        _tasks.pop()


def _run_nodes(ready: list, deps: dict, buffers: dict, cut, retain_graph: bool, create_graph: bool,
               accumulate: bool, capture_nodes: dict, capture_leaves: dict, captured: list) -> None:
    """The run loop: pop the ready node of highest sequence number, run it, pass its gradients on.
    `ready` holds (-seq, id, node, its gradients or None); `buffers` the gradients of nodes still waiting
    for another producer (a node's last producer moves them into its ready entry: a chain's nodes never
    enter `buffers`)."""
    with set_grad_enabled(create_graph), (nullcontext() if create_graph else no_tangents()):
        pop, push = heapq.heappop, heapq.heappush
        while ready:
            _, _, node, grads = pop(ready)
            if grads is None:
                grads = [None] * node.n_outputs
            if isinstance(node, AccumulateGrad):
                if node._pre_hooks or node._hooks:
                    grads = _leaf_node_hooks(node, grads)
                grad, grads = grads[0], None  # the leaf may keep the only reference (see _stealable)
                _accumulate(node, grad, accumulate, capture_leaves, captured)
                grad = None
                continue
            nexts = node.next_functions if cut is None else cut.get(node, node.next_functions)
            if node._pre_hooks or capture_nodes:
                grads = _pre_hooks_and_capture(node, grads, capture_nodes, captured, nexts is not _CAPTURE_ONLY)
            if nexts is _CAPTURE_ONLY:
                continue  # an input's node with no other input below it: torch does not run it either
            for g in grads:
                if g is not None:
                    break
            else:  # no gradient reached this node: none flows on
                g = None
                in_grads = (None,) * len(nexts)
            if g is not None:
                if node._freed:
                    raise RuntimeError(FREED)
                in_grads = node.backward_fn(node, *grads) if nexts is node.next_functions else \
                    _call(node, grads, nexts)
                if not isinstance(in_grads, tuple):
                    in_grads = (in_grads,)
            if node._hooks:
                in_grads = _post_hooks(node, in_grads, grads)
            if not retain_graph:
                node.release()
            for (nxt, idx), g, meta in zip(nexts, in_grads, node._input_meta):
                if nxt is None:
                    continue
                if g is not None and (g._v.shape != meta[0] or g.dtype is not meta[1]):
                    g = _fit(g, meta)
                left = deps[nxt] - 1
                deps[nxt] = left
                if left:
                    if g is not None:
                        buf = buffers.get(nxt)
                        if buf is None:
                            buf = buffers[nxt] = [None] * nxt.n_outputs
                        buf[idx] = g if buf[idx] is None else buf[idx] + g
                    continue
                buf = buffers.pop(nxt, None)
                if g is not None:
                    if buf is None:
                        buf = [None] * nxt.n_outputs
                    buf[idx] = g if buf[idx] is None else buf[idx] + g
                push(ready, (-nxt.seq, id(nxt), nxt, buf))
            in_grads = grads = g = buf = None  # the buffers hold what is still needed


_CAPTURE_ONLY = object()  # cut's mark for a node whose gradient is captured but whose backward need not run


def _prune(deps: dict, capture_nodes: dict, capture_leaves: dict) -> tuple:
    """For autograd.grad: (dependency counts over the nodes from which an input can be reached, and for
    those with edges that cannot, the edges with those cut). Backward formulas that ask `next_functions`
    then skip the gradients nobody needs (torch's exec_info)."""
    parents: dict = {}
    for node in deps:
        for nxt, _ in node.next_functions:
            if nxt is not None:
                parents.setdefault(nxt, []).append(node)
    targets = {node for node, _ in capture_nodes}
    todo = [n for n in targets if n in deps]
    todo += [n for n in deps if isinstance(n, AccumulateGrad) and id(n.variable) in capture_leaves]
    relevant: set = set()
    while todo:
        node = todo.pop()
        if node not in relevant:
            relevant.add(node)
            todo.extend(parents.get(node, ()))
    counts = dict.fromkeys(relevant, 0)
    cut: dict = {}
    for node in relevant:
        nexts = node.next_functions
        kept = [e if e[0] in relevant else _NO_EDGE for e in nexts]
        live = 0
        for nxt, _ in kept:
            if nxt is not None:
                counts[nxt] += 1
                live += 1
        if not live and node in targets:
            cut[node] = _CAPTURE_ONLY
        elif live < sum(1 for nxt, _ in nexts if nxt is not None):
            cut[node] = tuple(kept)
    return counts, cut


def _call(node, grads: list, nexts: tuple) -> tuple:
    """Run `node`'s backward, showing it `nexts` (its edges, pruned) as next_functions while it runs."""
    full, node.next_functions = node.next_functions, nexts
    try:
        in_grads = node.backward_fn(node, *grads)
    finally:
        node.next_functions = full
    return in_grads


def _pre_hooks_and_capture(node, grads: list, capture_nodes: dict, captured: list, runs: bool = True) -> list:
    """Run the tensor pre-hooks on a node's output gradients; keep those autograd.grad asked for; then the
    node's own pre-hooks if it `runs`."""
    for k, g in enumerate(grads):
        for hook in node._pre_hooks.get(k, ()):
            res = hook(g)
            if res is not None:
                _check_hook_result(hook, g, res)
                g = grads[k] = res
        pos = capture_nodes.get((node, k))
        if pos is not None:
            captured[pos] = g
    if runs:
        for hook in tuple(node._pre_hooks.get(-1, ())):
            res = hook(tuple(grads))
            if res is not None:
                grads = list(_checked(hook, res, len(grads)))
    return grads


def _check_hook_result(hook, grad, res) -> None:
    """torch's errors when a tensor hook's replacement gradient changes its size or dtype."""
    name = getattr(hook, "__name__", "hook")
    if isinstance(grad, Tensor) and isinstance(res, Tensor):
        if res.dtype is not grad.dtype:
            raise RuntimeError(f"hook '{name}' has changed the type of value (was torch."
                               f"{dt.legacy_type_name(grad.dtype)} got torch.{dt.legacy_type_name(res.dtype)})")
        if res._v.shape != grad._v.shape:
            raise RuntimeError(f"hook '{name}' has changed the size of value")


def _checked(hook, res, n: int) -> tuple:
    """A node hook's returned replacement, checked as torch does."""
    if not isinstance(res, tuple):
        raise TypeError(f"expected tuple, but hook returned '{type(res).__name__}'")
    if len(res) != n:
        raise RuntimeError(f"hook '{getattr(hook, '__name__', 'hook')}' has returned an incorrect number of values "
                           f"(got {len(res)}, but expected {n})")
    return res


def _post_hooks(node, in_grads: tuple, grads: list) -> tuple:
    """Node.register_hook hooks: `hook(grad_inputs, grad_outputs)`; a returned tuple replaces grad_inputs."""
    for hook in tuple(node._hooks):
        res = hook(in_grads, tuple(grads))
        if res is not None:
            in_grads = _checked(hook, res, len(in_grads))
    return in_grads


def _leaf_node_hooks(node, grads: list) -> list:
    """A leaf accumulator's node hooks: pre-hooks see (grad,), post-hooks ((), (grad,)), as torch's."""
    for hook in tuple(node._pre_hooks.get(-1, ())):
        res = hook(tuple(grads))
        if res is not None:
            grads = list(_checked(hook, res, len(grads)))
    for hook in tuple(node._hooks):
        hook((), tuple(grads))
    return grads


# References to a gradient only the engine holds: the run loop's local, _accumulate's and _stolen's
# arguments, getrefcount's.
_ENGINE_REFS = 4


def _stolen(grad: Tensor, leaf: Tensor) -> Tensor | None:
    """`grad` as the leaf may keep it without a copy, or None: nothing else holds the gradient or its
    memory, and it has the leaf's layout, dtype and device (PyTorch's AccumulateGrad steals alike).
    A view that spans its whole base (the transposed weight gradient of a linear) counts too."""
    if (sys.getrefcount(grad) > _ENGINE_REFS or grad.requires_grad or not obeys_layout_contract(grad, leaf)
            or grad.dtype is not leaf.dtype or grad._vm is not leaf._vm):
        return None
    base = grad._base
    if base is None:
        return grad if sys.getrefcount(grad._v.blob) == 2 else None
    # 3: `base`, the view's _base slot, getrefcount's argument; the blob: both Views and the argument
    whole = grad._v.offset == 0 and numel_of(grad._v.shape) * grad.dtype.itemsize == grad._v.blob.nbytes
    if whole and sys.getrefcount(base) == 3 and sys.getrefcount(grad._v.blob) == 3:
        return grad.detach()
    return None


def _accumulate(node: AccumulateGrad, grad, accumulate: bool, capture_leaves: dict, captured: list) -> None:
    leaf = node.variable
    if grad is None:
        return
    want = leaf.__dict__.get("_grad_dtype", leaf.dtype)  # Tensor.grad_dtype (ops/grad_attrs); None: any
    if want is not None and grad.dtype is not want:
        grad = grad.to(want)
    for hook in leaf.__dict__.get("_hooks_list", ()):
        res = hook(grad)
        if res is not None:
            _check_hook_result(hook, grad, res)
            grad = res
    pos = capture_leaves.get(id(leaf))
    if pos is not None:
        captured[pos] = grad if captured[pos] is None else captured[pos] + grad
    if not accumulate:
        return
    if leaf.grad is None:
        # one gradient tensor may flow to several leaves (add passes it through): the leaf takes
        # it as it is only when nothing else holds it, else a copy (as PyTorch's AccumulateGrad)
        # (laid out as the leaf: its strides when it is dense, else row-major; torch's layout contract)
        if is_grad_enabled():  # torch copies under create_graph (CopyBackwards)
            leaf.grad = grad if grad.is_sparse else clone_obey_contract(grad, leaf)
        else:
            stolen = _stolen(grad, leaf)
            leaf.grad = stolen if stolen is not None else \
                grad.detach().clone() if grad.is_sparse else clone_obey_contract(grad, leaf)
    elif leaf.grad.is_sparse and not grad.is_sparse:  # torch: a dense gradient replaces a sparse one, summed
        leaf.grad = grad + leaf.grad
    else:
        if is_grad_enabled():
            leaf.grad = leaf.grad + grad
        else:
            with no_grad():
                leaf.grad.add_(grad)
    run_post_accumulate_hooks(leaf)


def run_post_accumulate_hooks(leaf: Tensor) -> None:
    """Call the leaf's register_post_accumulate_grad_hook hooks, once its .grad holds the new gradient."""
    for hook in tuple(leaf.__dict__.get("_post_accumulate_hooks", ())):
        res = hook(leaf)
        if isinstance(res, Tensor):
            raise RuntimeError("Tensor post accumulate grad hooks should return None.")
        if res is not None:
            raise TypeError(f"expected Variable, but hook returned '{type(res).__name__}'")
