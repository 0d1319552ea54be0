"""Module backward hooks: register_full_backward_hook / _pre_hook, and the legacy register_backward_hook.

A module call with full backward hooks passes its tensor arguments, and then its tensor outputs,
through an identity Function. The outputs' identity node captures the gradients of the outputs
(and lets the pre-hooks replace them); the inputs' identity node sees the gradients of the inputs
once the module's own backward is done, and runs the user's hooks on (grad_input, grad_output).
"""
from __future__ import annotations

import warnings

from typing import Callable

from .. import ops
from ..ops.dispatch.user_frame import user_stacklevel
from ..autograd import is_grad_enabled
from ..autograd.function import Function
from ..tensor import Tensor
from .hooks import RemovableHandle
from .module_hooks import GLOBAL as _G

__all__ = ["BackwardHookFunction", "BackwardHook", "BackwardHooksMixin", "legacy_backward_hooks"]

_NO_INPUT_GRAD = ("Full backward hook is firing when gradients are computed with respect to module outputs since "
                  "no inputs require gradients. See https://docs.pytorch.org/docs/main/generated/torch.nn.Module."
                  "html#torch.nn.Module.register_full_backward_hook for more details.")


class BackwardHookFunction(Function):
    """Identity on its tensors; the node it records is where a module's backward hooks attach."""

    @staticmethod
    def forward(ctx, *tensors):
        ctx.mark_non_differentiable(*[t for t in tensors if not t._requires_grad])
        return tensors

    @staticmethod
    def backward(ctx, *grads):
        return grads


def _zeros(shape: tuple, dtype, device) -> Tensor:
    """The gradient torch materializes for an argument that needs none."""
    return ops.zeros(shape, dtype=dtype, device=device)


def _spread(positions: list, values, size: int) -> tuple:
    """`values` placed at `positions` of a tuple of `size` Nones."""
    out = [None] * size
    for at, value in zip(positions, values):
        out[at] = value
    return tuple(out)


class BackwardHook:
    """One module call's full backward hooks: links the outputs' gradients to the inputs' ones."""

    def __init__(self, module, hooks: list, pre_hooks: list) -> None:
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.n_inputs = self.n_outputs = -1
        self.input_positions = self.output_positions = None
        self._moving_inputs, self._moving_outputs, self._still = [], [], {}

    def _wrap(self, values: tuple, on_node) -> tuple:
        """`values` with the tensors that require grad passed through the identity node (when grad flows),
        and the positions of all its tensors (None when no gradient flows)."""
        positions = [k for k, v in enumerate(values) if isinstance(v, Tensor)]
        moving = [k for k in positions if values[k]._requires_grad]
        if not (is_grad_enabled() and moving):
            return values, None
        # only tensors that require grad go through (as torch's, the rest get no gradient: zeros or None)
        wrapped = BackwardHookFunction.apply(*[values[k] for k in moving])
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        on_node(wrapped[0].grad_fn, moving)
        out = list(values)
        for k, t in zip(moving, wrapped):
            out[k] = t
        return (tuple(out) if type(values) is tuple else type(values)(*out)), positions

    def setup_input_hook(self, args: tuple) -> tuple:
        """Pass the call's arguments through the node that runs the user's hooks."""
        def attach(node, moving: list) -> None:
            self._moving_inputs = moving
            node.register_hook(self._input_gradients)
        out, self.input_positions = self._wrap(args, attach)
        self.n_inputs = len(args)
        self._still = {k: (tuple(args[k].shape), args[k].dtype, args[k].device) for k in self.input_positions or ()
                       if k not in self._moving_inputs}  # only their metadata: no reference kept to the tensors
        return out

    def _input_gradients(self, grad_inputs: tuple, _grad_outputs: tuple):
        if self.grad_outputs is None:  # the outputs' gradients never came through: nothing to report
            return None
        grads = dict(zip(self._moving_inputs, grad_inputs))
        result = tuple(grads[k] if k in grads else _zeros(*self._still[k]) if k in self._still else None
                       for k in range(self.n_inputs))
        for hook in self.hooks:
            new = hook(self.module, result, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(result):
                raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(new)}, but "
                                   f"expected {len(result)}")
            result = new
        self.grad_outputs = None
        return tuple(result[k] for k in self._moving_inputs)

    def setup_output_hook(self, result):
        """Pass the call's result (a tensor or a tuple) through the node that captures its gradients."""
        single = not isinstance(result, tuple)
        values = (result,) if single else result

        def attach(node, moving: list) -> None:
            self._moving_outputs = moving
            node.register_hook(self._output_gradients)
        out, self.output_positions = self._wrap(values, attach)
        self.n_outputs = len(values)
        return out[0] if single else out

    def _output_gradients(self, _grad_inputs: tuple, grad_outputs: tuple):
        self.grad_outputs = _spread(self._moving_outputs, grad_outputs, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got {len(new)}, "
                                   f"but expected {len(self.grad_outputs)}")
            self.grad_outputs = new
        grads = self.grad_outputs
        if self.input_positions is None:  # no input needs a gradient: the hooks fire now, with grad_input all None
            warnings.warn(_NO_INPUT_GRAD, stacklevel=user_stacklevel())
            nothing = (None,) * self.n_inputs
            for hook in self.hooks:
                res = hook(self.module, nothing, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple) and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires gradient should always "
                                       "return None or None for all gradients.")
            self.grad_outputs = None
        return tuple(grads[k] for k in self._moving_outputs)


def legacy_backward_hooks(module, hooks: list, args: tuple, result) -> None:
    """register_backward_hook's hooks: on the node that made the (first) output, with its own gradients."""
    first = result
    while not isinstance(first, Tensor):
        first = next(v for v in first.values() if isinstance(v, Tensor)) if isinstance(first, dict) else first[0]
    node = first.grad_fn
    if node is None:
        return
    for hook in hooks:
        node.register_hook(lambda grad_inputs, grad_outputs, hook=hook: hook(module, grad_inputs, grad_outputs))
    _warn_partial(args, result, node)


def _warn_partial(inputs, result, node) -> None:
    """torch's deprecation warnings where a legacy hook sees only part of the module's gradients."""
    def tensors(value, what: str):
        if isinstance(value, Tensor):
            return (value,)
        if isinstance(value, tuple) and all(isinstance(v, Tensor) for v in value):
            return value
        warnings.warn(f"Using non-full backward hooks on a Module that {what} is deprecated and will be removed in "
                      "future versions. This hook will be missing some of the grad_"
                      f"{'output' if 'return' in what else 'input'}. Please use register_full_backward_hook to get "
                      "the documented behavior.", FutureWarning, stacklevel=4)
        return None
    outs = tensors(result, "does not return a single Tensor or a tuple of Tensors")
    if outs is None:
        return
    ins = tensors(inputs, "does not take as input a single Tensor or a tuple of Tensors")
    if ins is None:
        return
    out_nodes = {o.grad_fn for o in outs if o.grad_fn is not None}
    if not out_nodes or (len(out_nodes) == 1 and node not in out_nodes):
        warnings.warn("Using a non-full backward hook when outputs are nested in python data structure is "
                      "deprecated and will be removed in future versions. This hook will be missing some "
                      "grad_output.", FutureWarning, stacklevel=3)
    elif len(out_nodes) > 1:
        warnings.warn("Using a non-full backward hook when outputs are generated by different autograd Nodes is "
                      "deprecated and will be removed in future versions. This hook will be missing some "
                      "grad_output. Please use register_full_backward_hook to get the documented behavior.",
                      FutureWarning, stacklevel=3)
    elif {i.grad_fn for i in ins if i.grad_fn is not None} != {n[0] for n in node.next_functions}:
        warnings.warn("Using a non-full backward hook when the forward contains multiple autograd Nodes is "
                      "deprecated and will be removed in future versions. This hook will be missing some "
                      "grad_input. Please use register_full_backward_hook to get the documented behavior.",
                      FutureWarning, stacklevel=3)


class BackwardHooksMixin:
    """Module's backward-hook registration (mixed into Module; the call itself runs BackwardHook)."""

    def _backward_hook_lists(self) -> tuple:
        """(full, legacy) backward hooks for a call: the global ones, then the module's own."""
        full, legacy = [], []
        if _G.backward:
            (full if _G.full_backward else legacy).extend(_G.backward.values())
        if self._backward_hooks:
            (full if self._is_full_backward_hook else legacy).extend(self._backward_hooks.values())
        return full, legacy

    def register_full_backward_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call `hook(module, grad_output)` when the outputs' gradients are known; it may replace them."""
        handle = RemovableHandle(self._backward_pre_hooks)
        self._backward_pre_hooks[handle.id] = hook
        if prepend:
            self._backward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_full_backward_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call `hook(module, grad_input, grad_output)` once the inputs' gradients are computed; it may
        replace grad_input."""
        if self._is_full_backward_hook is False:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = True
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        if prepend:
            self._backward_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_backward_hook(self, hook: Callable) -> RemovableHandle:
        """Deprecated: `hook(module, grad_input, grad_output)` on the node that made the output (its own
        gradients, which are the module's only for one-node modules)."""
        if self._is_full_backward_hook is True:
            raise RuntimeError("Cannot use both regular backward hooks and full backward hooks on a single Module. "
                               "Please use only one of them.")
        self._is_full_backward_hook = False
        handle = RemovableHandle(self._backward_hooks)
        self._backward_hooks[handle.id] = hook
        return handle
