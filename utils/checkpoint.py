"""Activation checkpointing: keep a segment's inputs, drop its activations, recompute them in backward.

checkpoint(fn, *args) runs `fn` once recording the graph only to learn which tensors outside the
segment it differentiates into (its tensor arguments and the leaves it captures, such as a
module's parameters); then it drops the segment's graph, and with it every saved activation, and
stands one node in its place. That node's backward runs `fn` again, with the random generators
reset to their state at the first run (so dropout draws the same mask), and backpropagates
through the fresh graph.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterable

from ..autograd import enable_grad, is_grad_enabled, no_grad
from ..autograd.engine import run_backward
from ..autograd.graph import AccumulateGrad, record
from ..func._pytree import tree_flatten, tree_unflatten
from ..ops import rng as _rng
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn"]


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce the forward (torch.utils.checkpoint.CheckpointError)."""


def noop_context_fn() -> tuple:
    """The default context_fn: no context around the forward or the recomputation."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def _warn_reentrant(where: str) -> None:
    warnings.warn(f"{where}: the use_reentrant parameter should be passed explicitly. Starting in PyTorch 2.9, "
                  "calling checkpoint without use_reentrant will raise an exception. use_reentrant=False is "
                  "recommended, but if you need to preserve the current default behavior, you can pass "
                  "use_reentrant=True. Refer to docs for more details on the differences between the two "
                  "variants.", stacklevel=3)


def _rng_states() -> dict:
    return {kind: gen.get_state() for kind, gen in _rng._defaults.items()}


def _set_rng_states(states: dict) -> None:
    for kind, state in states.items():
        _rng._defaults[kind].set_state(state)


def _segment_leaves(outputs: list, inputs: list, start_seq: int) -> list:
    """Leaves outside the segment that its graph reaches (captured parameters), in first-seen order.

    The walk stops at nodes recorded before the segment began; reaching one means `fn` used a
    non-leaf tensor from outside without receiving it as an argument, which cannot be rewired."""
    own = {id(t) for t in inputs}
    seen: set = set()
    leaves: list = []
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in own:
                leaves.append(node.variable)
            continue
        if node.seq < start_seq:
            raise NotImplementedError(
                "checkpoint: the checkpointed function uses a tensor that requires grad and was computed "
                "outside of it without receiving it as an argument; tidal can only route gradients to such "
                "tensors when they are passed as arguments (or are leaves such as parameters)")
        stack.extend(nxt for nxt, _ in node.next_functions)
    return leaves


def _release_segment(outputs: list, start_seq: int) -> None:
    """Free the saved tensors of the segment's nodes now (saved outputs make cycles the GC frees late)."""
    seen: set = set()
    stack = [t.grad_fn for t in outputs if t.grad_fn is not None]
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen or isinstance(node, AccumulateGrad) or node.seq < start_seq:
            continue
        seen.add(id(node))
        stack.extend(nxt for nxt, _ in node.next_functions)
        node.release()


def _detached_inputs(args: tuple) -> tuple:
    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.detach()
            d.requires_grad_(a.requires_grad)
            out.append(d)
        else:
            out.append(a)
    return tuple(out)


def checkpoint(function: Callable, *args, use_reentrant: bool | None = None,
               context_fn: Callable[[], tuple] = noop_context_fn, determinism_check: str = "default",
               debug: bool = False, early_stop: bool = True, **kwargs) -> Any:
    """Run `function(*args, **kwargs)` without keeping its activations; recompute them in backward.

    Both variants recompute as described in the module docstring; unlike torch's reentrant one, this
    also routes gradients to captured parameters under autograd.grad and `inputs=`."""
    if use_reentrant is None:
        _warn_reentrant("torch.utils.checkpoint")
        use_reentrant = True
    preserve_rng_state = kwargs.pop("preserve_rng_state", True)
    if use_reentrant and kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if use_reentrant and (context_fn is not noop_context_fn or debug):
        raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
    if determinism_check not in ("default", "none"):
        raise ValueError("determinism_check should be one of ['default', 'none'], but got "
                         f"{determinism_check}")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    forward_context, recompute_context = context_fn()
    states = _rng_states() if preserve_rng_state else None
    from ..autograd.graph import _seq
    start_seq = next(_seq)
    inner = _detached_inputs(args)
    with forward_context:
        result = function(*inner, **kwargs)
    flat, spec = tree_flatten(result)
    grad_outs = [t for t in flat if isinstance(t, Tensor) and t.requires_grad]
    if not grad_outs:
        return result
    in_leaves = [a for a in inner if isinstance(a, Tensor) and a.requires_grad]
    captured = _segment_leaves(grad_outs, in_leaves, start_seq)
    _release_segment(grad_outs, start_seq)
    positions = [k for k, t in enumerate(flat) if isinstance(t, Tensor) and t.requires_grad]
    outputs = [flat[k].detach() for k in positions]
    metadata = [(t.shape, t.dtype) for t in outputs]
    arg_tensors = tuple(a for a in args if isinstance(a, Tensor))
    tensor_slots = {k for k, a in enumerate(args) if isinstance(a, Tensor)}
    args = tuple(None if isinstance(a, Tensor) else a for a in args)  # the node holds the tensors
    del result, grad_outs, inner, in_leaves

    def backward(node, *grads):
        create_graph = is_grad_enabled()
        if states is not None:
            current = _rng_states()
            _set_rng_states(states)
        try:
            saved = iter(node.saved_tensors)  # freed with the node after a backward without retain_graph
            redo = _detached_inputs(tuple(next(saved) if k in tensor_slots else a for k, a in enumerate(args)))
            with enable_grad(), recompute_context:
                again = tree_flatten(function(*redo, **kwargs))[0]
        finally:
            if states is not None:
                _set_rng_states(current)
        if determinism_check == "default":
            found_meta = [(again[k].shape, again[k].dtype) if k < len(again) and isinstance(again[k], Tensor)
                          else None for k in positions]
            if found_meta != metadata:
                raise CheckpointError("torch.utils.checkpoint: Recomputed values for the following tensors have "
                                      "different metadata than during the forward pass.\n"
                                      f"saved metadata: {metadata}\nrecomputed metadata: {found_meta}")
        roots, root_grads = [], []
        for k, g in zip(positions, grads):
            t = again[k] if k < len(again) else None
            if g is not None and isinstance(t, Tensor) and t.requires_grad:
                roots.append(t)
                root_grads.append(g)
        wanted = [r for r in redo if isinstance(r, Tensor)] + captured
        targets = [t for t in wanted if t.requires_grad]
        if not roots or not targets:
            return (None,) * len(wanted)
        found = iter(run_backward(roots, root_grads, create_graph, create_graph, inputs=targets,
                                  accumulate=False, allow_unused=True))
        return tuple(next(found) if t.requires_grad else None for t in wanted)

    record("checkpoint_function", backward, arg_tensors + tuple(captured), outputs, saved=arg_tensors)
    for k, out in zip(positions, outputs):
        flat[k] = out
    return tree_unflatten(flat, spec)


def checkpoint_sequential(functions, segments: int, input, use_reentrant: bool | None = None, **kwargs) -> Any:
    """Run a sequence of modules (or a Sequential) in `segments` checkpointed chunks; the last runs normally."""
    if use_reentrant is None:
        _warn_reentrant("torch.utils.checkpoint.checkpoint_sequential")
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    from ..nn import Sequential
    if isinstance(functions, Sequential):
        functions = list(functions.children())
    functions = list(functions) if isinstance(functions, Iterable) else functions

    def run(start: int, end: int) -> Callable:
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    size = len(functions) // segments if segments else 0
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(run(start, end), input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run(end + 1, len(functions) - 1)(input)
