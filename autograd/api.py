"""`backward`, `grad`, and the Tensor methods of autograd (backward, retain_grad, hooks)."""
from __future__ import annotations

import warnings
import weakref

from ..tensor import Tensor
from .anomaly import nan_checks
from . import hooks
from .engine import run_backward, run_post_accumulate_hooks
from .graph import AccumulateGrad, GradientEdge, RemovableHandle


_warned = {"create_graph": False}


def _as_tuple(x) -> tuple:
    if x is None:
        return ()
    return (x,) if isinstance(x, Tensor) else tuple(x)


def backward(tensors, grad_tensors=None, retain_graph: bool | None = None, create_graph: bool = False,
             inputs=None) -> None:
    """Accumulate gradients of `tensors` into the .grad of the leaves they depend on."""
    tensors = _as_tuple(tensors)
    grads = _as_tuple(grad_tensors) or (None,) * len(tensors)
    create_graph = bool(create_graph)  # the engine's set_grad_enabled takes a bool only
    if _retaining:
        follow_retained()
    if retain_graph is None:
        retain_graph = create_graph
    if create_graph and not _warned["create_graph"]:  # torch warns once per process
        _warned["create_graph"] = True
        warnings.warn("Using backward() with create_graph=True will create a reference cycle between the parameter "
                      "and its gradient which can cause a memory leak. We recommend using autograd.grad when "
                      "creating the graph to avoid this. If you have to use this function, make sure to reset the "
                      ".grad fields of your parameters to None after use to break the cycle and avoid the leak.",
                      UserWarning, stacklevel=3)
    checks = nan_checks(tensors)
    try:
        _backward(tensors, grads, retain_graph, create_graph, inputs)
    finally:
        for handle in checks:
            handle.remove()


def _backward(tensors: tuple, grads: tuple, retain_graph: bool, create_graph: bool, inputs) -> None:
    if inputs is not None:
        inputs = _as_tuple(inputs)
        if not inputs:
            raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
        for t in inputs:  # (torch retains the gradient of each input: its refusal)
            if not t.requires_grad:
                raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        found = run_backward(tensors, grads, retain_graph, create_graph, inputs=inputs, accumulate=False,
                             allow_unused=True, prune=True)
        done: set = set()
        for t, g in zip(inputs, found):
            # an input listed twice accumulates once, and a retained one has had its gradient from its hook
            if g is not None and id(t) not in done and not (t.grad_fn is not None and "_retains_grad" in t.__dict__):
                done.add(id(t))
                old = t.__dict__.get("grad")  # not t.grad: no non-leaf warning for an internal read
                t.grad = g.detach().clone() if old is None else old + g
                if t.grad_fn is None:
                    run_post_accumulate_hooks(t)
        return
    run_backward(tensors, grads, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph: bool | None = None, create_graph: bool = False,
         only_inputs: bool = True, allow_unused: bool | None = None, is_grads_batched: bool = False,
         materialize_grads: bool = False) -> tuple:
    """The gradients of `outputs` with respect to `inputs`, without touching any .grad."""
    if not only_inputs:
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      UserWarning, stacklevel=2)
    outputs = _as_tuple(outputs)
    inputs = tuple(_edge_input(x) for x in ((inputs,) if isinstance(inputs, GradientEdge) else _as_tuple(inputs)))
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grads = _as_tuple(grad_outputs) or (None,) * len(outputs)
    if is_grads_batched:
        return _batched_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused, materialize_grads)
    create_graph = bool(create_graph)  # the engine's set_grad_enabled takes a bool only
    if retain_graph is None:
        retain_graph = create_graph
    if _retaining:
        follow_retained()
    checks = nan_checks(outputs)
    try:
        found = run_backward(outputs, grads, retain_graph, create_graph, inputs=inputs, accumulate=False,
                             allow_unused=bool(allow_unused) or materialize_grads, prune=True)
    finally:
        for handle in checks:
            handle.remove()
    if materialize_grads:
        found = tuple(hooks.zeros_like(t) if g is None else g for t, g in zip(inputs, found))
    return found


def _edge_input(x):
    """An input of autograd.grad: a tensor, or a GradientEdge as a stand-in tensor on that edge."""
    if not isinstance(x, GradientEdge):
        return x
    if isinstance(x.node, AccumulateGrad):
        return x.node.variable
    standin = object.__new__(Tensor)  # the engine reads only requires_grad, grad_fn and _output_nr of it
    standin._requires_grad, standin.grad_fn, standin._output_nr = True, x.node, x.output_nr
    return standin


def _batched_grad(outputs, inputs, grads, retain_graph, create_graph, allow_unused, materialize_grads) -> tuple:
    """autograd.grad with `is_grads_batched`: one backward per row of the grad_outputs, results stacked."""
    if any(g is None for g in grads):
        raise RuntimeError("If is_grads_batched=True, we interpret the first dimension of each grad_output as "
                           "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                           "shape of corresponding output, but a mismatch was detected")
    rows = [grad(outputs, inputs, tuple(g[k] for g in grads), True if k < len(grads[0]) - 1 else retain_graph,
                 create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
            for k in range(len(grads[0]))]
    return tuple(None if any(r[i] is None for r in rows) else hooks.stack([r[i] for r in rows])
                 for i in range(len(inputs)))


def tensor_backward(self: Tensor, gradient=None, retain_graph: bool | None = None, create_graph: bool = False,
                    inputs=None) -> None:
    """Compute the gradient of this tensor with respect to graph leaves."""
    backward(self, gradient, retain_graph, create_graph, inputs)


def retain_grad(self: Tensor) -> None:
    """Keep this non-leaf tensor's gradient in .grad after backward."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self.__dict__.get("_retains_grad"):
        return
    _retain_on(self)
    key = id(self)
    _retaining[key] = weakref.ref(self, lambda _: _retaining.pop(key, None))


def _retain_on(t: Tensor) -> None:
    """Put the hook that keeps `t`'s gradient in .grad on t's grad_fn, and remember where it is."""
    ref = weakref.ref(t)

    def hook(g):
        t = ref()
        if t is not None and g is not None:
            t.grad = g.detach().clone() if t.grad is None else t.grad + g.detach()
    hook.retains_grad = True  # register_hook keeps it last: .grad holds the gradient after every hook
    t.__dict__["_retains_grad"] = (t.grad_fn, t._output_nr, hook)
    t.grad_fn.pre_hooks(t._output_nr).append(hook)


# tensors that called retain_grad, by id: torch moves the hook to a tensor's new grad_fn when an in-place op
# (or a write into its base) gives it one; tidal moves it when a backward starts (the graph is the same then)
_retaining: dict = {}


def follow_retained() -> None:
    """Move the retain_grad hook of every tensor whose grad_fn changed since to its current grad_fn."""
    for ref in tuple(_retaining.values()):
        t = ref()
        if t is None:
            continue
        fn, nr, hook = t.__dict__["_retains_grad"]
        if t.grad_fn is fn and t._output_nr == nr:
            continue
        hooks = fn.pre_hooks(nr)
        if hook in hooks:
            hooks.remove(hook)
        if t.grad_fn is None:  # detach_() made it a leaf: nothing left to retain
            t.__dict__.pop("_retains_grad")
            _retaining.pop(id(t), None)
        else:
            _retain_on(t)


def register_hook(self: Tensor, hook) -> RemovableHandle:
    """Call `hook(grad)` when this tensor's gradient is computed; a returned tensor replaces it."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        hooks = self.__dict__.setdefault("_hooks_list", [])
    else:
        hooks = self.grad_fn.pre_hooks(self._output_nr)
    if hooks and getattr(hooks[-1], "retains_grad", False):
        hooks.insert(len(hooks) - 1, hook)
    else:
        hooks.append(hook)
    return RemovableHandle(hooks, hook)


def register_post_accumulate_grad_hook(self: Tensor, hook) -> RemovableHandle:
    """Call `hook(tensor)` after a backward accumulates into this leaf's .grad (hook returns None)."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    hooks = self.__dict__.setdefault("_post_accumulate_hooks", [])
    hooks.append(hook)
    return RemovableHandle(hooks, hook)


def _retains_grad(self: Tensor) -> bool:
    return bool(self.__dict__.get("_retains_grad"))


METHODS = {"backward": tensor_backward, "retain_grad": retain_grad, "register_hook": register_hook,
           "register_post_accumulate_grad_hook": register_post_accumulate_grad_hook,
           "retains_grad": property(_retains_grad)}
