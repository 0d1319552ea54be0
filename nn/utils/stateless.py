"""torch.nn.utils.stateless: calling a module with its parameters and buffers swapped (torch.func.functional_call
is this; stateless.functional_call is its deprecated spelling)."""
from __future__ import annotations

import contextlib
import warnings
from typing import Any, Iterator, Mapping

from .parametrize import is_parametrized

__all__ = ["functional_call"]


def functional_call(module, parameters_and_buffers: dict, args: Any = None, kwargs: dict | None = None, *,
                    tie_weights: bool = True, strict: bool = False) -> Any:
    """Call `module` with its parameters and buffers replaced (deprecated: use torch.func.functional_call)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 and will be removed "
                  "in a future version of PyTorch. Please use `torch.func.functional_call` instead which is a "
                  "drop-in replacement.", FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs, tie_weights=tie_weights, strict=strict)


def _owner(module, name: str) -> tuple:
    path, _, attr = name.rpartition(".")
    return (module.get_submodule(path) if path else module), attr


@contextlib.contextmanager
def _swapped(module, tensors: dict) -> Iterator[None]:
    """Within the block, the named parameters and buffers of `module` are the given tensors."""
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


def _functional_call(module, parameter_and_buffer_dicts, args: Any = None, kwargs: dict | None = None, *,
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
