"""state_dict and load_state_dict: a Module's parameters and persistent buffers by dotted name.

A mixin of Module, kept apart because saving and loading are a concern of their own; it relies
on Module's `_parameters`, `_buffers`, `_non_persistent_buffers_set` and `_modules` dicts.
"""
from __future__ import annotations

import itertools
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Callable

from ..autograd import no_grad
from ..tensor import Tensor
from .hooks import IncompatibleKeys, RemovableHandle
from .parameter import Parameter

__all__ = ["StateDictMixin"]


_EXTRA_STATE = "_extra_state"  # the key of a module's get_extra_state() in its state dict


class _WithoutModule:
    """A load pre-hook registered without its module: called with the hook arguments after the module."""

    def __init__(self, hook: Callable) -> None:
        self.hook = hook

    def __call__(self, module, *args):
        return self.hook(*args)


class StateDictMixin:
    """Saving to and loading from a state dict (mixed into Module)."""

    def _save_to_state_dict(self, destination: dict, prefix: str, keep_vars: bool) -> None:
        """Put this module's own parameters and persistent buffers into `destination`."""
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        if type(self).get_extra_state is not StateDictMixin.get_extra_state:
            destination[prefix + _EXTRA_STATE] = self.get_extra_state()

    def get_extra_state(self):
        """Extra (non-tensor) state for state_dict; a subclass that has some overrides this and set_extra_state."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                           "report this bug.")

    def set_extra_state(self, state) -> None:
        """Restore what get_extra_state returned (called by load_state_dict)."""
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to "
                           "report this bug.")

    def register_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, prefix, keep_vars)` before state_dict collects this module's entries."""
        hooks = self.__dict__.get("_state_dict_pre_hooks")
        if hooks is None:
            hooks = self.__dict__["_state_dict_pre_hooks"] = OrderedDict()
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False) -> dict:
        """An ordered dict of every parameter and persistent buffer, keyed by dotted name."""
        if args:  # PyTorch's deprecated positional form: (destination, prefix, keep_vars)
            warnings.warn("Positional args are being deprecated, use kwargs instead. Refer to "
                          "https://pytorch.org/docs/main/generated/torch.nn.Module.html#torch.nn.Module.state_dict"
                          " for details.", FutureWarning, stacklevel=2)
            destination = args[0] if destination is None else destination
            prefix = args[1] if len(args) > 1 and prefix == "" else prefix
            keep_vars = args[2] if len(args) > 2 and keep_vars is False else keep_vars
        if destination is None:
            destination = OrderedDict()
            destination._metadata = OrderedDict()
        for hook in self.__dict__.get("_state_dict_pre_hooks", {}).values():
            hook(self, prefix, keep_vars)
        metadata = getattr(destination, "_metadata", None)
        if metadata is not None:
            metadata[prefix[:-1]] = {"version": self._version}
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, module in self._modules.items():
            if module is not None:
                module.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in self._state_dict_hooks.values():
            result = hook(self, destination, prefix, {"version": self._version})
            if getattr(hook, "_from_public_api", False):
                if result is not None:
                    raise RuntimeError("state_dict post-hook must return None")
            elif result is not None:  # the private API's hooks may return a new dict (kept at the root)
                destination = result
        return destination

    def _register_state_dict_hook(self, hook: Callable) -> RemovableHandle:
        """torch's private post-hook API: `hook(module, state_dict, prefix, local_metadata)` may return a new dict."""
        if getattr(hook, "_from_public_api", False):
            raise RuntimeError("Cannot register the same function as the state dict post hook that was "
                               "previously registered via register_state_dict_post_hook")
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def register_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, state_dict, prefix, local_metadata)` after state_dict fills its entries (in place)."""
        hook._from_public_api = True  # as torch marks it: such a hook must return None
        handle = RemovableHandle(self._state_dict_hooks)
        self._state_dict_hooks[handle.id] = hook
        return handle

    def _register_load_state_dict_pre_hook(self, hook: Callable, with_module: bool = False) -> RemovableHandle:
        """torch's private pre-hook API: without `with_module` the hook is called without the module."""
        if with_module:
            return self.register_load_state_dict_pre_hook(hook)
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = _WithoutModule(hook)
        return handle

    def register_load_state_dict_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, state_dict, prefix, local_metadata, strict, missing, unexpected, errors)` first."""
        handle = RemovableHandle(self._load_state_dict_pre_hooks)
        self._load_state_dict_pre_hooks[handle.id] = hook
        return handle

    def register_load_state_dict_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(module, incompatible_keys)` after load_state_dict; it may edit the key lists."""
        handle = RemovableHandle(self._load_state_dict_post_hooks)
        self._load_state_dict_post_hooks[handle.id] = hook
        return handle

    def _load_from_state_dict(self, state_dict: dict, prefix: str, local_metadata: dict, strict: bool,
                              missing_keys: list, unexpected_keys: list, error_msgs: list) -> None:
        """Copy this module's own entries from `state_dict`, recording missing/unexpected keys and errors."""
        for hook in self._load_state_dict_pre_hooks.values():
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        local = {k: v for k, v in itertools.chain(
            self._parameters.items(),
            ((k, v) for k, v in self._buffers.items() if k not in self._non_persistent_buffers_set))
            if v is not None}
        assign = local_metadata.get("assign_to_params_buffers", False)
        for name, current in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            incoming = state_dict[key]
            if not isinstance(incoming, Tensor) and getattr(incoming, "is_global", False) is not True:  # DTensors load
                error_msgs.append(f'While copying the parameter named "{key}", expected tidal.Tensor or '
                                  f"Tensor-like object from checkpoint but received {type(incoming)}")
                continue
            if current.dim() == 0 and incoming.shape == (1,):  # checkpoints that stored scalars as [1]
                incoming = incoming[0]
            if incoming.shape != current.shape:
                error_msgs.append(f"size mismatch for {key}: copying a param with shape {incoming.shape} from "
                                  f"checkpoint, the shape in current model is {current.shape}.")
                continue
            try:
                with no_grad():
                    if assign:
                        if isinstance(current, Parameter) and not isinstance(incoming, Parameter):
                            incoming = Parameter(incoming, requires_grad=current.requires_grad)
                        elif isinstance(current, Parameter):
                            incoming.requires_grad_(current.requires_grad)
                        setattr(self, name, incoming)
                    else:
                        current.copy_(incoming)
            except Exception as exc:  # noqa: BLE001 - reported with the others, as PyTorch does
                error_msgs.append(f'While copying the parameter named "{key}", whose dimensions in the model are '
                                  f"{current.size()} and whose dimensions in the checkpoint are "
                                  f"{incoming.size()}, an exception occurred : {exc.args}.")
        extra_key = prefix + _EXTRA_STATE
        has_extra = type(self).set_extra_state is not StateDictMixin.set_extra_state
        if has_extra and extra_key in state_dict:
            self.set_extra_state(state_dict[extra_key])
        elif has_extra and strict:
            missing_keys.append(extra_key)
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                head = key[len(prefix):].split(".", 1)[0]
                if head not in self._modules and head not in local and not (has_extra and key == extra_key):
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict: Mapping, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy parameters and buffers from `state_dict`; with `strict`, keys must match exactly."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing: list = []
        unexpected: list = []
        errors: list = []
        metadata = getattr(state_dict, "_metadata", None)
        entries = OrderedDict(state_dict)

        def load(module: "StateDictMixin", local_state: dict, prefix: str = "") -> None:
            local_metadata = {} if metadata is None else dict(metadata.get(prefix[:-1], {}))
            if assign:
                local_metadata["assign_to_params_buffers"] = True
            module._load_from_state_dict(local_state, prefix, local_metadata, True, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    child_prefix = prefix + name + "."
                    load(child, {k: v for k, v in local_state.items() if k.startswith(child_prefix)}, child_prefix)
            keys = IncompatibleKeys(missing, unexpected)
            for hook in module._load_state_dict_post_hooks.values():
                if hook(module, keys) is not None:
                    raise AssertionError("Hooks registered with ``register_load_state_dict_post_hook`` are not "
                                         "expected to return new values, if incompatible_keys need to be "
                                         "modified, it should be done inplace.")

        load(self, entries)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: {}. ".format(
                    ", ".join(f'"{k}"' for k in unexpected)))
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: {}. ".format(", ".join(f'"{k}"' for k in missing)))
        if errors:
            raise RuntimeError("Error(s) in loading state_dict for {}:\n\t{}".format(
                type(self).__name__, "\n\t".join(errors)))
        return IncompatibleKeys(missing, unexpected)


def consume_prefix_in_state_dict_if_present(state_dict: dict, prefix: str) -> None:
    """Strip `prefix` from the keys (and `_metadata` keys) of `state_dict` in place, as torch's helper does for
    checkpoints saved from a DistributedDataParallel wrapper ('module.')."""
    for key in list(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            # (the wrapper's own entry, 'module', becomes the root's, as in torch)
            if key and (key == prefix.replace(".", "") or key.startswith(prefix)):
                metadata[key[len(prefix):]] = metadata.pop(key)
