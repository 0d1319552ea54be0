"""Global module hooks (torch.nn.modules.module.register_module_*): hooks every Module call or registration runs.

Forward pre/post hooks and backward hooks registered here run for every module, before the module's own;
registration hooks see (and may replace) each buffer, parameter or submodule as a module registers it.
The tables keep their identity, so Module.__call__ binds them once and a plain call only tests them.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from .hooks import RemovableHandle

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook", "register_module_backward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_buffer_registration_hook", "register_module_module_registration_hook",
           "register_module_parameter_registration_hook"]


class _Registry:
    """The global hook tables, and whether any call hook is registered."""

    def __init__(self) -> None:
        self.forward_pre: OrderedDict = OrderedDict()
        self.forward: OrderedDict = OrderedDict()
        self.forward_with_kwargs: OrderedDict = OrderedDict()  # (hook id -> True)
        self.forward_always_called: OrderedDict = OrderedDict()
        self.backward_pre: OrderedDict = OrderedDict()
        self.backward: OrderedDict = OrderedDict()
        self.full_backward: bool | None = None  # True: full hooks, False: legacy ones (never both)
        self.buffer_registration: OrderedDict = OrderedDict()
        self.module_registration: OrderedDict = OrderedDict()
        self.parameter_registration: OrderedDict = OrderedDict()


GLOBAL = _Registry()


def _add(table: OrderedDict, hook: Callable) -> RemovableHandle:
    handle = RemovableHandle(table)
    table[handle.id] = hook
    return handle


def register_module_forward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, args)` before every module's forward (and its own pre-hooks); it may replace args."""
    return _add(GLOBAL.forward_pre, hook)


def register_module_forward_hook(hook: Callable, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """Call `hook(module, args, output)` after every module's forward (before its own hooks)."""
    handle = RemovableHandle(GLOBAL.forward, extra_dict=[GLOBAL.forward_with_kwargs, GLOBAL.forward_always_called])
    GLOBAL.forward[handle.id] = hook
    if with_kwargs:
        GLOBAL.forward_with_kwargs[handle.id] = True
    if always_call:
        GLOBAL.forward_always_called[handle.id] = True
    return handle


_MIXED_BACKWARD_HOOKS = ("Cannot use both regular backward hooks and full backward hooks as a global Module hook. "
                         "Please use only one of them.")


def register_module_backward_hook(hook: Callable) -> RemovableHandle:
    """Deprecated: a legacy backward hook for every module (see Module.register_backward_hook)."""
    if GLOBAL.full_backward is True:
        raise RuntimeError(_MIXED_BACKWARD_HOOKS)
    GLOBAL.full_backward = False
    return _add(GLOBAL.backward, hook)


def register_module_full_backward_pre_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, grad_output)` for every module once its outputs' gradients are known."""
    return _add(GLOBAL.backward_pre, hook)


def register_module_full_backward_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, grad_input, grad_output)` for every module once its inputs' gradients are computed."""
    if GLOBAL.full_backward is False:
        raise RuntimeError(_MIXED_BACKWARD_HOOKS)
    GLOBAL.full_backward = True
    return _add(GLOBAL.backward, hook)


def register_module_buffer_registration_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, name, buffer)` as any module registers a buffer; it may return a replacement."""
    return _add(GLOBAL.buffer_registration, hook)


def register_module_module_registration_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, name, submodule)` as any module registers a submodule; it may return a replacement."""
    return _add(GLOBAL.module_registration, hook)


def register_module_parameter_registration_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(module, name, param)` as any module registers a parameter; it may return a replacement."""
    return _add(GLOBAL.parameter_registration, hook)


def registered(table: OrderedDict, module, name: str, value):
    """`value` after the registration hooks of `table` (each may replace it)."""
    for hook in table.values():
        output = hook(module, name, value)
        if output is not None:
            value = output
    return value
