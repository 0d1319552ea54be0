"""Process-wide knobs torch scripts set: threads, determinism, matmul precision, default device,
plus `compile` (tidal runs eagerly, so compiling returns what it was given)."""
from __future__ import annotations

import os
import sys
import warnings
from typing import Callable

from .. import vm
from ..autograd import is_inference_mode_enabled as enabled
from ..ops.factories import uninitialized
from ..tensor import Tensor, device as _device
from ..tensor import dtype as dt
from ..tensor.device import default_device
from ..vm import intra_op
from . import _legacy
from . import cuda
from ._dynamo import compiled
from .autograd import set_detect_anomaly
from .autograd import _anomaly

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads",
           "use_deterministic_algorithms", "are_deterministic_algorithms_enabled",
           "is_deterministic_algorithms_warn_only_enabled", "set_float32_matmul_precision",
           "get_float32_matmul_precision", "get_default_device", "set_default_device", "compile", "typename",
           "is_floating_point", "is_complex", "is_storage", "set_anomaly_enabled", "is_anomaly_enabled",
           "is_anomaly_check_nan_enabled", "set_warn_always", "is_warn_always_enabled", "set_deterministic_debug_mode",
           "get_deterministic_debug_mode", "set_default_tensor_type", "get_device", "is_inference_mode_enabled"]

def _cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


_state = {"threads": None, "interop_threads": None, "deterministic": False, "warn_only": False,
          "matmul_precision": "highest"}


def _check_thread_count(fn: str, n) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise RuntimeError(f"{fn} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{fn} expects a positive integer")
    return n


def set_num_threads(n: int) -> None:
    """Set how many threads tidal's parallel CPU kernels use (vm/intra_op.py)."""
    _state["threads"] = _check_thread_count("set_num_threads", n)
    vm.set_threads(n)


def get_num_threads() -> int:
    """The number of threads the parallel CPU kernels use."""
    return _state["threads"] or intra_op.get_threads(allowed_only=False)


def set_num_interop_threads(n: int) -> None:
    """Accepted for compatibility: tidal's VM runs one worker per stream."""
    _state["interop_threads"] = _check_thread_count("set_num_interop_threads", n)


def get_num_interop_threads() -> int:
    """The value last given to set_num_interop_threads (the CPU count by default)."""
    return _state["interop_threads"] or _cpu_count()


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Make results bitwise equal run to run: a fused group's kernel then changes from NumPy to
    compiled at a fixed sighting (compiled in the foreground), never when a background compile
    happens to finish. tidal's kernels themselves are deterministic."""
    if not isinstance(mode, bool):
        raise TypeError(f"use_deterministic_algorithms(): argument 'mode' (position 1) must be bool, not "
                        f"{type(mode).__name__}")
    if mode and not _state["deterministic"]:
        _state["background_compile"] = vm.get_fusion()["background_compile"]
        vm.set_fusion(background_compile=False)
    elif not mode and _state["deterministic"]:
        vm.set_fusion(background_compile=_state.pop("background_compile", True))
    _state["deterministic"], _state["warn_only"] = mode, bool(warn_only)
    uninitialized.STATE["deterministic"] = mode  # (factories fill uninitialized memory: utils.deterministic)


def are_deterministic_algorithms_enabled() -> bool:
    """Whether use_deterministic_algorithms(True) is in force."""
    return _state["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """Whether deterministic mode was set with warn_only=True."""
    return _state["warn_only"]


def set_float32_matmul_precision(precision: str) -> None:
    """Record the precision ('highest', 'high', 'medium'); tidal's CPU matmul always uses full float32."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "set_float32_matmul_precision call has no effect.", stacklevel=2)
        return
    _state["matmul_precision"] = precision


def get_float32_matmul_precision() -> str:
    """The value last given to set_float32_matmul_precision ('highest' by default)."""
    return _state["matmul_precision"]


def get_default_device() -> _device:
    """The device factory functions use: the innermost open `with device(d):` block's on this thread, else the CPU."""
    return default_device() or _device("cpu")


def set_default_device(device) -> None:
    """Accept the CPU (or None); tidal's factory functions cannot default to another device yet."""
    if device is not None and _device(device).type != "cpu":
        raise RuntimeError(f"set_default_device: tidal can only make the CPU the default device, not '{device}'")


def compile(model: Callable | None = None, *, fullgraph: bool = False, dynamic: bool | None = None,
            backend: str | Callable | None = None, mode: str | None = None, options: dict | None = None,
            name: str | None = None, disable: bool = False, **kwargs) -> Callable:
    """A module wrapped as torch's OptimizedModule (its forward runs eagerly: tidal fuses at run time), a
    function as it is; without `model`, a decorator that does so."""
    if model is None:
        return compiled
    if not callable(model):
        raise AssertionError(f"A callable function is expected, but {type(model)} is provided.")
    return compiled(model)


def typename(obj) -> str:
    """'torch.FloatTensor'-style names for tensors, the qualified class name otherwise."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    qualname = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", None) or type(obj).__qualname__
    return f"{module}.{qualname}" if module and module != "builtins" else qualname


def _tensor_arg(fn: str, input) -> Tensor:
    if not isinstance(input, Tensor):
        raise TypeError(f"{fn}(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input


def is_floating_point(input: Tensor) -> bool:
    """Whether the tensor's dtype is a floating type."""
    return _tensor_arg("is_floating_point", input).dtype.category == dt.FLOAT


def is_complex(input: Tensor) -> bool:
    """Whether the tensor's dtype is complex."""
    return _tensor_arg("is_complex", input).dtype.is_complex


def is_storage(obj) -> bool:
    """Always False: tidal has no storage objects."""
    return False


# -- debug switches: anomaly mode, warn-always, deterministic debug mode -----------------------------------
def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """torch.autograd.set_detect_anomaly under its torch.* name (the same switch)."""
    if not isinstance(enabled, bool):
        raise TypeError(f"set_anomaly_enabled(): argument 'enabled' (position 1) must be bool, not "
                        f"{type(enabled).__name__}")
    set_detect_anomaly(enabled, check_nan)


def is_anomaly_enabled() -> bool:
    """Whether anomaly mode is on (set_anomaly_enabled, autograd.set_detect_anomaly or detect_anomaly())."""
    return _anomaly["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly mode was turned on with check_nan."""
    return _anomaly["enabled"] and _anomaly["check_nan"]


def set_warn_always(b: bool) -> None:
    """Record torch's warn-always switch (its once-per-process warnings then repeat); tidal's warnings use
    Python's own filters, which this leaves alone."""
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _state["warn_always"] = b


def is_warn_always_enabled() -> bool:
    """The value last given to set_warn_always (False by default)."""
    return _state.get("warn_always", False)


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """0/'default': deterministic mode off; 1/'warn': on with warn_only; 2/'error': on."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, `error`, but got "
                               f"{debug_mode}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"debug_mode must be str or int, but got {type(debug_mode)}")
    if debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got {debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """2 when deterministic mode errors, 1 when it warns, 0 when it is off."""
    if not _state["deterministic"]:
        return 0
    return 1 if _state["warn_only"] else 2


# -- the legacy default tensor type, devices ------------------------------------------------------------------
def set_default_tensor_type(t) -> None:
    """Deprecated torch form of set_default_dtype: a legacy type (torch.DoubleTensor) or its name."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.", UserWarning,
                  stacklevel=2)
    name = t if isinstance(t, str) else getattr(t, "__name__", None)
    if isinstance(t, str):
        module, _, name = t.rpartition(".")
        if module == "torch.cuda":
            if not cuda.is_available():
                raise TypeError(f"type {t} not available. Torch not compiled with CUDA enabled.")
            set_default_device("cuda")
        elif module != "torch":
            raise ModuleNotFoundError(f"No module named '{module}'")
    elif not isinstance(t, _legacy.tensortype):
        raise TypeError("invalid type object: only floating-point types are supported as the default type")
    kind = getattr(_legacy, name or "", None)
    if not isinstance(kind, _legacy.tensortype):
        raise TypeError(f"invalid type: '{t}'")
    if not kind.dtype.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    dt.set_default_dtype(kind.dtype)


def get_device(input: Tensor) -> int:
    """input.get_device(): the CUDA device index, -1 on the CPU."""
    return _tensor_arg("get_device", input).get_device()


def is_inference_mode_enabled() -> bool:
    """Whether an inference_mode block is active."""
    return enabled()
