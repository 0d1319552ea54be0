"""Anomaly mode: `detect_anomaly` / `set_detect_anomaly` and the NaN check custom Functions run under it.

tidal's engine keeps no forward tracebacks; what anomaly mode adds here is torch's check that a backward
function returned no NaN (autograd/function.py calls `check_nan` for custom Functions; `nan_checks` hooks
every other node a backward reaches).
"""
from __future__ import annotations

import functools
import warnings

from ..tensor import Tensor
from .graph import AccumulateGrad
from .graph_walk import roots_of, walk

_anomaly = {"enabled": False, "check_nan": True}


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on."""
    return _anomaly["enabled"]


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN."""
    return _anomaly["check_nan"]


class _AnomalyMode:
    """Set the anomaly flags for a block (restoring them after); usable as a decorator."""

    def __init__(self, mode: bool, check_nan: bool) -> None:
        self._prev = dict(_anomaly)
        self._mode = (bool(mode), bool(check_nan))

    def __enter__(self) -> None:
        self._prev = dict(_anomaly)
        _anomaly.update(enabled=self._mode[0], check_nan=self._mode[1])

    def __exit__(self, *exc) -> bool:
        _anomaly.update(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper


class detect_anomaly(_AnomalyMode):
    """`with detect_anomaly():` turns anomaly detection on for the block."""

    def __init__(self, check_nan: bool = True) -> None:
        super().__init__(True, check_nan)
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def _args(self) -> tuple:
        return (self._mode[1],)


class set_detect_anomaly(_AnomalyMode):
    """Turn anomaly detection on or off: at once as a call, or for a block as a context manager."""

    def __init__(self, mode: bool, check_nan: bool = True) -> None:
        super().__init__(mode, check_nan)
        _anomaly.update(enabled=self._mode[0], check_nan=self._mode[1])

    def __enter__(self) -> None:
        pass  # already set by the constructor, as in torch

    def _args(self) -> tuple:
        return self._mode


def nan_checks(tensors: tuple) -> list:
    """In anomaly mode, a post-hook on every node a backward from `tensors` reaches, checking what it returns for
    NaN as torch checks every backward function; the hooks' handles (removed when the backward ends)."""
    if not (_anomaly["enabled"] and _anomaly["check_nan"]):
        return []
    handles = []
    for node in walk(roots_of(tensors)):
        if not isinstance(node, AccumulateGrad):
            handles.append(node.register_hook(lambda grads, _, name=node.name(): check_nan(name, grads)))
    return handles


def check_nan(node_name: str, grads: tuple) -> None:
    """torch's anomaly-mode error when a backward function returned NaN."""
    if not (_anomaly["enabled"] and _anomaly["check_nan"]):
        return
    for k, g in enumerate(grads):
        if isinstance(g, Tensor) and bool(g.isnan().any()):
            raise RuntimeError(f"Function '{node_name}' returned nan values in its {k}th output.")
