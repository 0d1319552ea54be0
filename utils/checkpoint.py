"""Activation checkpointing: keep a segment's inputs, drop its activations, recompute them in backward.

checkpoint(fn, *args) runs `fn` once recording the graph only to learn which tensors outside the
segment it differentiates into (its tensor arguments, the leaves it captures, such as a module's
parameters, and any captured tensor computed earlier); then it drops the segment's graph, and with
it every saved activation, and stands one node in its place. That node's backward runs `fn`
again, with the random generators reset to their state at the first run (so dropout draws the
same mask), and backpropagates through the fresh graph, cut where it leaves the segment.
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Callable, Iterable

from ..autograd import enable_grad, is_grad_enabled
from ..autograd.engine import run_backward
from ..autograd.graph import AccumulateGrad, _seq, node_class, record
from ..autograd.graph_walk import roots_of, walk
from ..func._pytree import tree_flatten, tree_unflatten
from ..nn import Sequential
from ..ops.dispatch import autocast as _autocast
from ..ops.random import rng as _rng
from ..tensor import Tensor

from .checkpoint_reentrant import (DefaultDeviceType, check_backward_validity, detach_variable, get_device_states,
                                   set_device_states)
from .checkpoint_selective import (SAC_IGNORED_OPS, CheckpointPolicy, SelectiveCheckpointContext,
                                   create_selective_checkpoint_contexts)

__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointError", "noop_context_fn", "CheckpointFunction",
           "check_backward_validity", "detach_variable", "get_device_states", "set_device_states",
           "set_checkpoint_early_stop", "DefaultDeviceType", "set_checkpoint_debug_enabled", "CheckpointPolicy",
           "SelectiveCheckpointContext", "create_selective_checkpoint_contexts", "SAC_IGNORED_OPS", "GraphExecGroup"]

_modes = {"debug": None, "early_stop": True, "group": None}

# Hooks of the layers above (FSDP): each is called when a checkpointed segment runs forward and returns None or
# a context-manager factory that checkpoint enters around the segment's recomputation (FSDP registers its
# gathered parameters again there, as torch's FSDP unshards before a checkpointed module's backward).
RECOMPUTE_HOOKS: list = []


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled: bool | None):
    """Within the block, checkpoint's `debug` flag is `enabled` (None: each call's own). tidal's checkpoint has
    no debug trace to print, so the flag is only recorded."""
    prev, _modes["debug"] = _modes["debug"], enabled
    try:
        yield
    finally:
        _modes["debug"] = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Within the block, whether recomputation may stop once it has what backward needs (tidal always
    recomputes the whole segment, which is what enable=False asks; the result is the same either way)."""
    prev, _modes["early_stop"] = _modes["early_stop"], enable
    try:
        yield
    finally:
        _modes["early_stop"] = prev


class GraphExecGroup:
    """Backward calls under one instance recompute each checkpointed region at most once in torch; tidal
    recomputes a region per backward through it (same gradients), so this only enforces torch's nesting rule."""

    def __enter__(self) -> "GraphExecGroup":
        if _modes["group"] is not None:
            raise RuntimeError(f"GraphExecGroup contexts cannot be nested. Already inside group {_modes['group']}")
        _modes["group"] = self
        return self

    def __exit__(self, *args) -> None:
        _modes["group"] = None


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


def _autocast_states() -> dict:
    """Each device type's autocast dtype (None: off) now: the recomputation runs under the forward's, as torch's."""
    return {device: _autocast.enabled_dtype(device) for device in ("cpu", "cuda")}


@contextlib.contextmanager
def _autocast_as(states: dict):
    tokens = [(device, _autocast.enter(device, dtype, dtype is not None)) for device, dtype in states.items()]
    try:
        yield
    finally:
        for device, token in reversed(tokens):
            _autocast.leave(device, token)


def _rng_states() -> dict:
    return {kind: gen.get_state() for kind, gen in _rng._defaults.items()}


def _set_rng_states(states: dict) -> None:
    for kind, state in states.items():
        _rng._defaults[kind].set_state(state)


def _outside(start_seq: int, leaves: bool) -> Callable:
    """A walk's prune rule: stop at nodes recorded before the segment began, and at leaf accumulators
    unless `leaves`."""
    return lambda node: (not leaves) if isinstance(node, AccumulateGrad) else node.seq < start_seq


def _boundary(outputs: list, inputs: list, start_seq: int) -> tuple:
    """What the segment's graph reaches outside itself: the leaves (captured parameters) other than its
    own inputs, and the edges into nodes recorded before it began (captured non-leaf tensors), each
    with the shape and dtype its gradient has; in first-seen order."""
    own = {id(t) for t in inputs}
    leaves: list = []
    outer: dict = {}  # (id(node), output index) -> ((node, output index), gradient meta)
    for node in walk(roots_of(outputs), _outside(start_seq, leaves=True)):
        if isinstance(node, AccumulateGrad):
            if id(node.variable) not in own:
                leaves.append(node.variable)
            continue
        for (nxt, idx), meta in zip(node.next_functions, node._input_meta):
            if nxt is not None and not isinstance(nxt, AccumulateGrad) and nxt.seq < start_seq:
                outer.setdefault((id(nxt), idx), ((nxt, idx), meta))
    return leaves, list(outer.values())


def _cut_at(outputs: list, start_seq: int, edges: list) -> list:
    """Redirect the recomputed graph's edges into `edges` (outer nodes) to stand-in nodes that keep the
    gradient arriving there and stop, so backward through the recomputation never runs the outer graph.
    Returns one cell per edge, filled with its gradient by the backward."""
    index = {(id(node), idx): k for k, ((node, idx), _) in enumerate(edges)}
    cells: list = [[None] for _ in edges]
    stand_ins: dict = {}
    for node in walk(roots_of(outputs), _outside(start_seq, leaves=False)):
        nexts = list(node.next_functions)
        for j, (nxt, idx) in enumerate(nexts):
            if nxt is None or isinstance(nxt, AccumulateGrad) or nxt.seq >= start_seq:
                continue
            stand_in = stand_ins.get(id(nxt))
            if stand_in is None:
                stand_in = stand_ins[id(nxt)] = node_class("checkpoint_boundary")(
                    lambda _node, *grads: (), (), (), None, nxt.n_outputs)
            k = index.get((id(nxt), idx))
            if k is not None and idx not in stand_in._pre_hooks:
                stand_in.pre_hooks(idx).append(lambda g, cell=cells[k]: cell.__setitem__(0, g))
            nexts[j] = (stand_in, idx)
        node.next_functions = tuple(nexts)
    return cells


def _release_segment(outputs: list, start_seq: int) -> None:
    """Free the saved tensors of the segment's nodes now (saved outputs make cycles the GC frees late)."""
    for node in walk(roots_of(outputs), _outside(start_seq, leaves=False)):
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
    if not use_reentrant and context_fn is not noop_context_fn and \
            (_modes["debug"] if _modes["debug"] is not None else debug):
        raise ValueError("debug=True is incompatible with non-default context_fn")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    forward_context, recompute_context = context_fn()
    around = [r for r in (hook() for hook in RECOMPUTE_HOOKS) if r is not None]
    amp = _autocast_states()
    states = _rng_states() if preserve_rng_state else None
    start_seq = next(_seq)
    inner = _detached_inputs(args)
    with forward_context:
        result = function(*inner, **kwargs)
    flat, spec = tree_flatten(result)
    grad_outs = [t for t in flat if isinstance(t, Tensor) and t.requires_grad]
    if not grad_outs:
        return result
    in_leaves = [a for a in inner if isinstance(a, Tensor) and a.requires_grad]
    captured, outer = _boundary(grad_outs, in_leaves, start_seq)
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
            redo_start = next(_seq)
            with enable_grad(), _autocast_as(amp), recompute_context, contextlib.ExitStack() as stack:
                for make in around:
                    stack.enter_context(make())
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
        if not roots:
            return (None,) * (len(wanted) + len(outer))
        cells = _cut_at(roots, redo_start, outer)
        found = iter(run_backward(roots, root_grads, create_graph, create_graph, inputs=targets,
                                  accumulate=False, allow_unused=True))
        return tuple(next(found) if t.requires_grad else None for t in wanted) + tuple(c[0] for c in cells)

    node = record("checkpoint_function", backward, arg_tensors + tuple(captured), outputs, saved=arg_tensors)
    node.next_functions += tuple(edge for edge, _ in outer)  # captured non-leaf tensors: their producers
    node._input_meta = list(node._input_meta) + [meta for _, meta in outer]
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


class CheckpointFunction:
    """The reentrant checkpoint as torch exposes it: CheckpointFunction.apply(function, preserve_rng_state, *args)."""

    @staticmethod
    def apply(run_function: Callable, preserve_rng_state: bool, *args) -> Any:
        """checkpoint(run_function, *args, use_reentrant=True, preserve_rng_state=preserve_rng_state)."""
        check_backward_validity(args)
        return checkpoint(run_function, *args, use_reentrant=True, preserve_rng_state=preserve_rng_state)
