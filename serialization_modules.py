"""The names torch gives tidal's layer classes and functions in a checkpoint: `torch.save(model)` of a tidal model
writes `torch.nn.modules.linear.Linear` (not `tidal.nn.modules.linear.Linear`), `torch.nn.functional.relu` for an
activation a layer holds, so real torch loads the file as its own modules (tidal's module state has torch's
attribute names) and tidal.load reads it back as tidal's. Found through tidal.compat, which lays tidal out as torch
does (tests/test_examples_programs.py checks that every class of torch's torch.nn.modules files is there)."""
from __future__ import annotations

from .nn.modules.rnn import RNNBase

__all__ = ["torch_global", "module_reduction"]

# torch 2.13's torch.nn.modules files that define classes (torch's own layout: a checkpoint names these)
TORCH_NN_FILES = ("activation", "adaptive", "batchnorm", "channelshuffle", "container", "conv", "distance", "dropout",
                  "flatten", "fold", "instancenorm", "lazy", "linear", "loss", "module", "normalization", "padding",
                  "pixelshuffle", "pooling", "rnn", "sparse", "transformer", "upsampling")
_found: dict = {}  # id(obj) -> (obj, (module, name) or None)


def torch_global(obj) -> tuple | None:
    """(module, name) under which torch holds tidal's class or function `obj` (a layer, a functional op), or None
    when `obj` is not tidal's or torch has no such name."""
    module = getattr(obj, "__module__", None)
    if not isinstance(module, str) or not (module == "tidal" or module.startswith("tidal.")):
        return None
    hit = _found.get(id(obj))
    if hit is not None and hit[0] is obj:
        return hit[1]
    result = _search(obj)
    _found[id(obj)] = (obj, result)
    return result


def _search(obj) -> tuple | None:
    import tidal.compat as compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
    name = getattr(obj, "__name__", None)
    if not isinstance(name, str) or name.startswith("_"):
        return None
    if isinstance(obj, type):
        from .compat.nn.modules import _TORCH_FILES  # torch's file -> names tidal keeps in another file of its own
        for file, names in _TORCH_FILES.items():
            if name in names and getattr(getattr(compat.nn.modules, file), name, None) is obj:
                return f"torch.nn.modules.{file}", name
        for file in TORCH_NN_FILES:  # (a file's own names are its __all__: the others it merely imports)
            module = getattr(compat.nn.modules, file, None)
            if name in getattr(module, "__all__", ()) and getattr(module, name) is obj:
                return f"torch.nn.modules.{file}", name
        if getattr(compat.nn, name, None) is obj:  # (a class torch.nn holds outside its modules files)
            return "torch.nn", name
        return None
    for namespace, path in ((compat.nn.functional, "torch.nn.functional"), (compat, "torch")):
        if getattr(namespace, name, None) is obj:
            return path, name
    return None


def module_reduction(obj) -> tuple | None:
    """The pickle reduction of tidal's recurrent layers with the `_flat_weights` list torch's own state holds (its
    RNNBase.__setstate__ reads it); None for every other object."""
    if not isinstance(obj, RNNBase):
        return None
    reduction = obj.__reduce_ex__(2)
    state = dict(reduction[2] or {})
    state["_flat_weights"] = [getattr(obj, name, None) for name in obj._flat_weights_names]
    return (reduction[0], reduction[1], state) + tuple(reduction[3:])
