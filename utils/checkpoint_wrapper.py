"""torch.distributed.algorithms._checkpoint.checkpoint_wrapper: activation checkpointing as module wrappers.

checkpoint_wrapper(module) returns a CheckpointWrapper whose forward runs the module through
utils.checkpoint (non-reentrant by default); offload_wrapper(module) runs it under save_on_cpu;
apply_activation_checkpointing(model, check_fn=...) replaces, child first, every submodule (not the root)
that check_fn (or a functional auto_wrap_policy) picks. As in torch, a wrapper's state_dict and
named_parameters drop the `_checkpoint_wrapped_module.` prefix, and load_state_dict accepts keys with or
without it, so checkpoints move between wrapped and plain models.
"""
from __future__ import annotations

import enum
import functools
from typing import Any, Callable, Iterator

from ..autograd.saved_hooks import save_on_cpu
from ..nn import Module
from .checkpoint import checkpoint as _checkpoint

__all__ = ["CheckpointImpl", "ActivationWrapper", "CheckpointWrapper", "OffloadWrapper", "checkpoint_wrapper",
           "offload_wrapper", "apply_activation_checkpointing"]

_CHECKPOINT_WRAPPED_MODULE = "_checkpoint_wrapped_module"
_CHECKPOINT_PREFIX = _CHECKPOINT_WRAPPED_MODULE + "."


class CheckpointImpl(enum.Enum):
    """Which checkpoint variant a CheckpointWrapper runs."""

    REENTRANT = enum.auto()
    NO_REENTRANT = enum.auto()


def _replace_by_prefix(state_dict: dict, old_prefix: str, new_prefix: str) -> None:
    """Rename, in place, every key starting with `old_prefix` to start with `new_prefix`."""
    if old_prefix == new_prefix:
        raise ValueError("old_prefix and new_prefix must be distinct")
    for key in list(state_dict.keys()):
        if key.startswith(old_prefix):
            state_dict[new_prefix + key[len(old_prefix):]] = state_dict.pop(key)


class ActivationWrapper(Module):
    """The base of CheckpointWrapper and OffloadWrapper: holds the module, forwards attribute lookups and
    indexing to it, and keeps its state-dict keys and parameter names free of the wrapper's prefix."""

    def __init__(self, mod: Module) -> None:
        super().__init__()
        self._checkpoint_wrapped_module = mod
        self._register_state_dict_hook(self._post_state_dict_hook)
        self.register_load_state_dict_pre_hook(self._pre_load_state_dict_hook)

    def forward(self, *args, **kwargs):
        """Subclasses run the wrapped module."""
        raise ValueError("Subclasses should implement forward().")

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._checkpoint_wrapped_module, name)

    def __getitem__(self, key: int) -> Any:
        return self._checkpoint_wrapped_module.__getitem__(key)

    def named_parameters(self, *args, **kwargs) -> Iterator[tuple]:
        """The wrapped module's parameters, named without the wrapper's prefix."""
        for name, param in super().named_parameters(*args, **kwargs):
            yield name.replace(_CHECKPOINT_PREFIX, ""), param

    @staticmethod
    def _post_state_dict_hook(module, state_dict: dict, prefix: str, *args) -> dict:
        _replace_by_prefix(state_dict, f"{prefix}{_CHECKPOINT_PREFIX}", prefix)
        return state_dict

    @staticmethod
    def _pre_load_state_dict_hook(module, state_dict: dict, prefix: str, *args) -> None:
        _replace_by_prefix(state_dict, prefix, prefix + _CHECKPOINT_PREFIX)


class OffloadWrapper(ActivationWrapper):
    """Runs the module with its saved activations kept on the CPU (save_on_cpu)."""

    def forward(self, *args, **kwargs):
        """The wrapped module's forward under save_on_cpu."""
        with save_on_cpu(pin_memory=True):
            return self._checkpoint_wrapped_module(*args, **kwargs)


class CheckpointWrapper(ActivationWrapper):
    """Runs the module through activation checkpointing (utils.checkpoint, or `checkpoint_fn`)."""

    def __init__(self, mod: Module, checkpoint_impl: CheckpointImpl = CheckpointImpl.NO_REENTRANT,
                 checkpoint_fn: Callable | None = None, **checkpoint_fn_kwargs) -> None:
        super().__init__(mod)
        self.checkpoint_impl = checkpoint_impl
        if checkpoint_fn is None:
            reentrant = checkpoint_impl == CheckpointImpl.REENTRANT
            self.checkpoint_fn = functools.partial(_checkpoint, use_reentrant=reentrant, **checkpoint_fn_kwargs)
        else:
            self.checkpoint_fn = functools.partial(checkpoint_fn, **checkpoint_fn_kwargs)

    def forward(self, *args, **kwargs):
        """The wrapped module's forward, checkpointed (keyword arguments packed for the reentrant variant)."""
        if self.checkpoint_impl == CheckpointImpl.REENTRANT and kwargs:
            keys = tuple(kwargs)
            flat = args + tuple(kwargs.values())

            def run(*inputs):
                cut = len(inputs) - len(keys)
                return self._checkpoint_wrapped_module(*inputs[:cut], **dict(zip(keys, inputs[cut:])))
            return self.checkpoint_fn(run, *flat)
        return self.checkpoint_fn(self._checkpoint_wrapped_module, *args, **kwargs)


def offload_wrapper(module: Module) -> Module:
    """`module` wrapped so that its activations saved for backward live on the CPU."""
    return OffloadWrapper(module)


def checkpoint_wrapper(module: Module, checkpoint_impl: CheckpointImpl = CheckpointImpl.NO_REENTRANT,
                       checkpoint_fn: Callable | None = None, **checkpoint_fn_kwargs) -> Module:
    """`module` wrapped so that its forward is activation-checkpointed."""
    return CheckpointWrapper(module, checkpoint_impl, checkpoint_fn, **checkpoint_fn_kwargs)


def _numel(module: Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _recursive_wrap(module: Module, policy: Callable, wrap: Callable, only_children: bool) -> tuple:
    """(module, or its wrapper, the parameter count wrapped below it), children first, as torch's FSDP wrapping."""
    total = _numel(module)
    if not policy(module=module, recurse=True, nonwrapped_numel=total):
        return module, 0
    wrapped = 0
    for name, child in list(module.named_children()):
        new, count = _recursive_wrap(child, policy, wrap, False)
        setattr(module, name, new)
        wrapped += count
    if not only_children and policy(module=module, recurse=False, nonwrapped_numel=total - wrapped):
        return wrap(module), total
    return module, wrapped


def _lambda_policy(module: Module, recurse: bool, nonwrapped_numel: int, lambda_fn: Callable) -> bool:
    return True if recurse else bool(lambda_fn(module))


def apply_activation_checkpointing(model: Module, checkpoint_wrapper_fn: Callable = checkpoint_wrapper,
                                   check_fn: Callable = lambda _: True,
                                   auto_wrap_policy: Callable | None = None) -> None:
    """Wrap, in place, each submodule of `model` (children first, never the root) that `check_fn` (or the
    functional `auto_wrap_policy`, which takes precedence) picks, with `checkpoint_wrapper_fn`."""
    policy = auto_wrap_policy if auto_wrap_policy is not None else functools.partial(_lambda_policy,
                                                                                     lambda_fn=check_fn)
    if not callable(policy):
        raise ValueError(f"Expected {policy} to be callable or be a pre-defined wrap policy")
    _recursive_wrap(model, policy, checkpoint_wrapper_fn, True)
