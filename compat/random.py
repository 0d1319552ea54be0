"""torch.random: the default generator's seed and state, and fork_rng, over tidal's generators.

(It lives in compat rather than at tidal's root: a root `random.py` would shadow Python's own
`random` module whenever the repository root is on sys.path.)
"""
from __future__ import annotations

import contextlib
import warnings
from typing import Iterator

from ..ops.random import rng as _rng
from ..ops.random.rng import Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed, set_rng_state

__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "default_generator",
           "Generator", "thread_safe_generator"]


def thread_safe_generator() -> Generator | None:
    """None, as torch returns outside a DataLoader thread worker: tidal's DataLoader has process workers only,
    so random ops use the default generator."""
    return None


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng", _devices_kw: str = "devices",
             device_type: str = "cuda") -> Iterator[None]:
    """Within the block, random ops draw from forked generators: on exit every default generator
    (the CPU's and, with `devices` or by default, each device type's) is back to its state at entry."""
    if not enabled:
        yield
        return
    if device_type == "meta":
        yield
        return
    kinds = {"cpu"} | ({device_type} if devices is None or len(devices) else set())
    saved = {kind: gen.get_state() for kind, gen in _rng._defaults.items() if kind in kinds}
    if devices is not None and len(devices) > 1:
        warnings.warn(f"tidal keeps one generator per device type: {_caller} forks the '{device_type}' generator "
                      f"once for the {_devices_kw} {list(devices)}", stacklevel=3)
    try:
        yield
    finally:
        for kind, state in saved.items():
            _rng._defaults[kind].set_state(state)
