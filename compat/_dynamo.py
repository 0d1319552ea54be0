"""torch._dynamo as scripts touch it: OptimizedModule (what torch.compile returns for a module), reset, config,
disable, mark_dynamic... tidal compiles nothing ahead of time (its VM fuses at run time), so these keep torch's
interface and module layout (`_orig_mod`, its state_dict prefix) while running the eager code."""
from __future__ import annotations

import types
from typing import Callable

from ..nn.module import Module

__all__ = ["OptimizedModule", "reset", "config", "disable", "mark_dynamic", "maybe_mark_dynamic", "mark_static",
           "mark_static_address", "allow_in_graph", "disallow_in_graph", "is_compiling", "list_backends",
           "graph_break", "assume_constant_result", "optimize"]


class OptimizedModule(Module):
    """A compiled module: it holds the original as `_orig_mod` (so its state_dict keys start with '_orig_mod.'),
    runs its forward, and reads unknown attributes from it, as torch's does."""

    def __init__(self, mod: Module, dynamo_ctx=None):
        super().__init__()
        self._orig_mod = mod
        self.dynamo_ctx = dynamo_ctx
        self.training = mod.training

    def forward(self, *args, **kwargs):
        """The original module's call (its hooks included)."""
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name: str):
        if name == "_orig_mod":
            return self._modules["_orig_mod"]
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self._modules["_orig_mod"], name)

    def __reduce__(self):
        return (self.__class__, (self._orig_mod, self.dynamo_ctx))


def compiled(model: Callable) -> Callable:
    """What torch.compile(model) gives: an OptimizedModule around a module, the function itself otherwise."""
    return OptimizedModule(model) if isinstance(model, Module) else model


class _Config(types.SimpleNamespace):
    """torch._dynamo.config: the settings scripts write (suppress_errors, cache_size_limit...), kept, unused."""

    def patch(self, *args, **kwargs):
        """A no-op context manager / decorator, as config.patch is for eager code."""
        return _NoPatch()


class _NoPatch:
    def __enter__(self):
        return self

    def __exit__(self, *exc) -> bool:
        return False

    def __call__(self, fn):
        return fn


config = _Config(suppress_errors=False, cache_size_limit=8, accumulated_cache_size_limit=256, verbose=False,
                 capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False, automatic_dynamic_shapes=True,
                 assume_static_by_default=True, optimize_ddp=True, recompile_limit=8)


def reset() -> None:
    """Clear compiled caches: tidal keeps none per function (generated kernels stay cached on disk)."""


def disable(fn: Callable | None = None, recursive: bool = True, *, reason: str | None = None):
    """Mark `fn` to run eagerly (everything does here): returns it, or a decorator doing so."""
    if fn is None:
        return lambda f: f
    return fn


def optimize(*args, **kwargs) -> Callable:
    """The legacy torch._dynamo.optimize(backend): a decorator that returns what it wraps."""
    return lambda fn: compiled(fn)


def _mark(t, *args, **kwargs) -> None:
    """Shape hints for the tracer: nothing to record for eager code."""


mark_dynamic = maybe_mark_dynamic = mark_static = mark_static_address = _mark


def allow_in_graph(fn: Callable) -> Callable:
    """Returns `fn` (there is no graph to allow it in)."""
    return fn


disallow_in_graph = assume_constant_result = allow_in_graph


def graph_break() -> None:
    """A graph break in eager code: nothing happens."""


def is_compiling() -> bool:
    """False: tidal code never runs under a tracer."""
    return False


def list_backends(exclude_tags=("debug", "experimental")) -> list:
    """The backends torch.compile names: tidal accepts any and runs eagerly."""
    return ["cudagraphs", "inductor", "onnxrt", "openxla", "tvm"]
