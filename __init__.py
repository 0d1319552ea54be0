"""tidal: an eager deep-learning runtime where every op is an instruction on a per-device VM."""
from __future__ import annotations

from . import vm
from .ops import *  # noqa: F401,F403
from . import autograd
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .ops import __all__ as _ops_all
from .ops.dispatch import return_types
from .tensor import Size, Tensor, device
from .tensor import dtype as _dt
from .tensor.dtype import (bfloat16, cdouble, cfloat, chalf, complex32, complex64, complex128, dtype, float8_e4m3fn, float8_e4m3fnuz,
                           float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, float16, float32, float64, get_default_dtype,
                           int8, int16, int32, int64, promote_types, set_default_dtype, uint8, uint16, uint32, uint64)
from .tensor.printing import get_printoptions, set_printoptions

bool = _dt.bool_  # noqa: A001 - PyTorch's name
half, float, double = float16, float32, float64  # noqa: A001
short, int, long = int16, int32, int64  # noqa: A001

__version__ = "0.1.0"

for _name, _fn in autograd.api.METHODS.items():
    setattr(Tensor, _name, _fn)


def _to_global(self: Tensor, placement, sbp) -> Tensor:
    """This rank's part of a global tensor: its shard (split), the whole value (broadcast) or a summand."""
    from .comm.global_tensor import from_local  # comm loads on first use: it keeps `import tidal` light
    return from_local(self, placement, sbp)


Tensor.to_global = _to_global


# The PyTorch-shaped library above the runtime loads on first use, so `import tidal` stays fast.
_LAZY_MODULES = ("nn", "optim", "utils", "profiler", "serialization", "compat", "comm", "linalg",
                 "distributions", "accelerator", "func", "fft")


def __getattr__(name: str):
    if name in ("placement", "sbp"):  # global tensors: they live in comm, loaded on first use
        from . import comm  # comm loads on first use (keeps import light)
        globals().update(placement=comm.placement, sbp=comm.sbp)
        return globals()[name]
    if name in _LAZY_MODULES:
        import importlib
        path = {"linalg": ".ops.linalg.namespace", "accelerator": ".compat.accelerator",
                "fft": ".ops.spectral.fft"}.get(name, f".{name}")
        module = importlib.import_module(path, __name__)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'tidal' has no attribute '{name}'")


def save(obj, f, *args, **kwargs) -> None:
    """Save `obj` in PyTorch's zip format (see tidal.serialization.save)."""
    from .serialization import save as _save  # serialization loads on first use (keeps import light)
    return _save(obj, f, *args, **kwargs)


def load(f, *args, **kwargs):
    """Load what `save` (or PyTorch) wrote, with a weights-only allow-list by default."""
    from .serialization import load as _load  # serialization loads on first use (keeps import light)
    return _load(f, *args, **kwargs)


sync = synchronize = vm.sync


def is_tensor(obj) -> bool:
    """Whether `obj` is a tidal Tensor."""
    return isinstance(obj, Tensor)


def numel(input: Tensor) -> int:
    """The number of elements of `input`."""
    return input.numel()


__all__ = list(_ops_all) + ["Tensor", "Size", "device", "dtype", "sync", "synchronize", "is_tensor", "numel",
                            "get_default_dtype", "set_default_dtype", "promote_types", "set_printoptions",
                            "get_printoptions", "vm", "autograd", "profiler", "nn", "optim", "utils", "save", "load", "no_grad", "enable_grad", "set_grad_enabled",
                            "inference_mode", "is_grad_enabled"]
