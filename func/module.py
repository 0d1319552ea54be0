"""Modules as functions of their state: functional_call and stack_module_state."""
from __future__ import annotations

from typing import Any

from .. import ops
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.utils.stateless import _functional_call

__all__ = ["functional_call", "stack_module_state", "replace_all_batch_norm_modules_"]


def functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call `module(*args, **kwargs)` with its parameters and buffers replaced by the given tensors."""
    return _functional_call(module, parameter_and_buffer_dicts, args, kwargs, tie_weights=tie_weights, strict=strict)


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
    for module in root.modules():
        if isinstance(module, _BatchNorm) and module.track_running_stats:
            module.running_mean = None
            module.running_var = None
            module.num_batches_tracked = None
            module.track_running_stats = False
    return root
