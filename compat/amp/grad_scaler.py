"""GradScaler: dynamic loss scaling, as torch.amp.GradScaler.

Disabled (`enabled=False`, or a CUDA scaler on a machine without CUDA) every method passes
through: `scale` returns its input, `step` calls `optimizer.step`, the rest do nothing.
Enabled (`GradScaler("cpu")`) it multiplies losses by the scale, unscales gradients before
the step, skips steps whose gradients hold inf/NaN, and grows or backs off the scale.
"""
from __future__ import annotations

import warnings
from collections import defaultdict

from ... import ops
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.device import accelerator_count

__all__ = ["GradScaler"]

_READY, _UNSCALED, _STEPPED = "ready", "unscaled", "stepped"


class GradScaler:
    """Scale losses so small gradients survive low precision; unscale before the optimizer step."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if enabled and device == "cuda":
            if accelerator_count() == 0:  # (torch.cuda.is_available: compat.cuda builds on amp)
                warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                              stacklevel=2)
                self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
        self._scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer = defaultdict(lambda: {"stage": _READY, "found_inf": None})
        self._scaled_once = False  # torch creates its scale tensor on the first scale(): step() needs one

    def _check_scaled(self, funcname: str) -> None:
        if not self._scaled_once:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def is_enabled(self) -> bool:
        """Whether scaling is on."""
        return self._enabled

    def scale(self, outputs):
        """Multiply a tensor (or every tensor in a nested list/tuple) by the scale."""
        if not self._enabled:
            return outputs
        self._scaled_once = True
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale, noting whether any is inf or NaN."""
        if not self._enabled:
            return
        self._check_scaled("unscale_")
        state = self._per_optimizer[id(optimizer)]
        if state["stage"] == _UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if state["stage"] == _STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = 1.0 / self._scale
        found_inf = None
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.dtype is dt.float16:
                    raise ValueError("Attempting to unscale FP16 gradients.")
                bad = ops.logical_not(ops.isfinite(p.grad)).any()
                found_inf = bad if found_inf is None else ops.logical_or(found_inf, bad)
                p.grad.mul_(inv_scale)
        state["found_inf"] = found_inf
        state["stage"] = _UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale if needed, then run `optimizer.step(...)` unless a gradient was inf or NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_scaled("step")
        state = self._per_optimizer[id(optimizer)]
        if state["stage"] == _STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] == _READY:
            self.unscale_(optimizer)
        if state["found_inf"] is None:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        result = None
        if not state["found_inf"].item():
            result = optimizer.step(*args, **kwargs)
        state["stage"] = _STEPPED
        return result

    def update(self, new_scale: float | Tensor | None = None) -> None:
        """Set the scale for the next iteration: back off after an inf/NaN, grow after a clean run."""
        if not self._enabled:
            return
        self._check_scaled("update")
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        else:
            checks = [s["found_inf"] for s in self._per_optimizer.values() if s["found_inf"] is not None]
            if not checks:
                raise AssertionError("No inf checks were recorded prior to update.")
            if any(bool(c.item()) for c in checks):
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by."""
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        """Set the factor the scale grows by."""
        self._growth_factor = float(new_factor)

    def get_backoff_factor(self) -> float:
        """The factor the scale shrinks by after an inf/NaN."""
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        """Set the factor the scale shrinks by."""
        self._backoff_factor = float(new_factor)

    def get_growth_interval(self) -> int:
        """How many clean steps before the scale grows."""
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        """Set how many clean steps before the scale grows."""
        self._growth_interval = int(new_interval)

    def state_dict(self) -> dict:
        """The scaler's state ({} when disabled), as torch's."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a state from state_dict() (ignored when disabled)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state["_per_optimizer"] = None  # per-iteration bookkeeping does not survive pickling
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._per_optimizer = defaultdict(lambda: {"stage": _READY, "found_inf": None})
