"""Modules as functions of their state: functional_call and stack_module_state."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, Mapping

from .. import ops

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_"]


def _owner(module, name: str) -> tuple:
    path, _, attr = name.rpartition(".")
    return (module.get_submodule(path) if path else module), attr


@contextlib.contextmanager
def _swapped(module, tensors: dict) -> Iterator[None]:
    """Within the block, the named parameters and buffers of `module` are the given tensors."""
    from ..nn.utils.parametrize import is_parametrized
    saved = []
    try:
        for name, value in tensors.items():
            owner, attr = _owner(module, name)
            if is_parametrized(owner, attr):
                raise NotImplementedError(f"functional_call: '{name}' is parametrized; tidal swaps the stored "
                                          f"tensors only, so pass 'parametrizations.{attr}.original' instead")
            for store in (owner._parameters, owner._buffers):
                if attr in store:
                    saved.append((store, attr, store[attr]))
                    store[attr] = value  # bypasses the Parameter check: any tensor may stand in
                    break
            else:
                saved.append((owner.__dict__, attr, owner.__dict__.get(attr, _MISSING)))
                owner.__dict__[attr] = value
        yield
    finally:
        for store, attr, old in reversed(saved):
            if old is _MISSING:
                store.pop(attr, None)
            else:
                store[attr] = old


_MISSING = object()


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call `module(*args, **kwargs)` with its parameters and buffers replaced by the given tensors."""
    if isinstance(parameter_and_buffer_dicts, Mapping):
        tensors = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (tuple, list)):
        keys = [k for d in parameter_and_buffer_dicts for k in d]
        repeated = list(dict.fromkeys(k for k in keys if keys.count(k) > 1))  # torch lists them all, in order
        if repeated:
            raise ValueError(f"{repeated} appeared in multiple dictionaries; behavior of functional call is "
                             "ambiguous")
        tensors = {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    else:
        raise ValueError(f"Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(parameter_and_buffer_dicts)}")
    known = dict(module.named_parameters(remove_duplicate=False))
    known.update(module.named_buffers(remove_duplicate=False))
    if strict:
        missing = sorted(set(known) - set(tensors))
        unexpected = sorted(set(tensors) - set(known))
        if missing or unexpected:
            msgs = []
            if unexpected:
                msgs.append("Unexpected key(s): {}.".format(", ".join(map(repr, unexpected))))
            if missing:
                msgs.append("Missing key(s): {}.".format(", ".join(map(repr, missing))))
            raise RuntimeError("Error(s) in reparametrizing for {}:\n\t{}".format(module._get_name(),
                                                                                  "\n\t".join(msgs)))
    if tie_weights:  # a tensor registered under several names is replaced under all of them
        by_id: dict = {}
        for name, t in known.items():
            by_id.setdefault(id(t), []).append(name)
        for names in by_id.values():
            given = [n for n in names if n in tensors]
            if given:
                first = tensors[given[0]]
                for n in given[1:]:
                    if tensors[n] is not first:
                        raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. "
                                         "Consider using tie_weights=False")
                for n in names:
                    tensors.setdefault(n, first)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _swapped(module, tensors):
        return module(*args, **(kwargs or {}))


def stack_module_state(models) -> tuple:
    """(parameters, buffers) of identically shaped models, each stacked along a new first dimension."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    kind = type(models[0])
    if not all(type(m) is kind for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    all_params = [dict(m.named_parameters()) for m in models]
    params = {}
    for name in all_params[0]:
        tensors = [p[name] for p in all_params]
        flags = {t.requires_grad for t in tensors}
        if len(flags) != 1:
            raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
        params[name] = ops.stack([t.detach() for t in tensors]).requires_grad_(flags.pop())
    all_buffers = [dict(m.named_buffers()) for m in models]
    buffers = {name: ops.stack([b[name].detach() for b in all_buffers]) for name in all_buffers[0]}
    return params, buffers


def replace_all_batch_norm_modules_(root):
    """Make every batch norm in `root` normalize with batch statistics only (no running stats), in place."""
    from ..nn.modules.batchnorm import _BatchNorm
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
