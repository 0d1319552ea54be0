"""Who runs a case: a framework in one configuration (VM mode, thread count, device).

Each competitor knows how to turn NumPy data into its own arrays, how to wait for its
pending work, and how to configure itself around a measurement (and restore afterwards),
so every case is written once for all of them.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Competitor:
    """A framework in one configuration; `column` is its column in the report's table."""

    column: str                     # "tidal", "tidal 1 thread", "numpy", "torch", "torch 1 thread", "cupy"
    lib: str                        # module name: "tidal", "numpy", "torch", "cupy"
    device: str = "cpu"
    vm_mode: str | None = None      # tidal only: "sync" or "async"
    threads: int | None = None      # torch.set_num_threads / tidal.vm.set_threads for the measurement

    @property
    def is_tidal(self) -> bool:
        """Whether this is the framework under test."""
        return self.lib == "tidal"

    @property
    def module(self):
        """The framework's top-level module (imported on first use)."""
        return importlib.import_module(self.lib)

    def array(self, host: np.ndarray):
        """`host` as this framework's array on this competitor's device (a copy)."""
        lib = self.module
        if self.lib == "numpy":
            return host.copy()
        if self.lib == "cupy":
            return lib.asarray(host)
        if self.lib == "torch":
            return lib.from_numpy(host.copy()).to(self.device)
        return lib.tensor(host, device=self.device)

    def sync(self) -> None:
        """Wait until every operation issued so far has finished."""
        if self.lib == "tidal":
            self.module.sync()
        elif self.lib == "torch" and self.device != "cpu":
            self.module.cuda.synchronize()
        elif self.lib == "cupy":
            self.module.cuda.Stream.null.synchronize()

    @contextlib.contextmanager
    def configured(self, *, fusion_compile_now: bool = False):
        """Apply this competitor's settings for the duration of a measurement.

        `fusion_compile_now` makes tidal compile fused kernels in the foreground, so a case
        measures the compiled kernel after warmup instead of NumPy running meanwhile."""
        with contextlib.ExitStack() as stack:
            if self.lib == "tidal":
                stack.enter_context(_tidal_settings(self.vm_mode, fusion_compile_now))
            if self.lib == "torch" and self.threads is not None:
                stack.enter_context(_torch_threads(self.threads))
            if self.lib == "tidal" and self.threads is not None:
                stack.enter_context(_tidal_threads(self.threads))
            yield self


@contextlib.contextmanager
def _tidal_settings(mode: str | None, compile_now: bool):
    import tidal

    saved_mode, saved_fusion = tidal.vm.get_mode(), tidal.vm.get_fusion()
    if mode is not None:
        tidal.vm.set_mode(mode)
    if compile_now:
        tidal.vm.set_fusion(background_compile=False)
    try:
        yield
    finally:
        tidal.sync()
        tidal.vm.set_mode(saved_mode)
        tidal.vm.set_fusion(background_compile=saved_fusion["background_compile"])


@contextlib.contextmanager
def _torch_threads(threads: int):
    import torch

    saved = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(saved)


@contextlib.contextmanager
def _tidal_threads(threads: int):
    import tidal
    from tidal.vm import intra_op

    saved = intra_op.get_threads(allowed_only=False)  # the count set (get_threads() says 1 where none may run)
    tidal.vm.set_threads(threads)
    try:
        yield
    finally:
        tidal.vm.set_threads(saved)


@functools.lru_cache(maxsize=None)
def available(lib: str) -> bool:
    """Whether a framework can be imported here."""
    try:
        importlib.import_module(lib)
    except Exception:  # noqa: BLE001 - a broken install counts as missing
        return False
    return True


@functools.lru_cache(maxsize=None)
def cuda_skip_reason() -> str | None:
    """None when tidal, and at least one competitor, can run on a CUDA GPU; else why not."""
    if available("torch") and importlib.import_module("torch").cuda.is_available():
        gpu_competitor = True
    else:
        gpu_competitor = available("cupy") and _cupy_has_gpu()
    if not gpu_competitor:
        return "no CUDA GPU"
    try:
        import tidal

        tidal.ones(1, device="cuda").cpu().numpy()
    except Exception as exc:  # noqa: BLE001 - any failure means tidal cannot run the case
        return f"tidal cannot run on cuda ({type(exc).__name__}: {exc})"
    return None


def _cupy_has_gpu() -> bool:
    try:
        return importlib.import_module("cupy").cuda.runtime.getDeviceCount() > 0
    except Exception:  # noqa: BLE001
        return False


def cpu_competitors(tidal_mode: str = "async", numpy: bool = True) -> tuple[Competitor, ...]:
    """tidal in `tidal_mode` against NumPy (optional) and torch eager at default and 1 thread."""
    comps = [Competitor("tidal", "tidal", vm_mode=tidal_mode)]
    if numpy:
        comps.append(Competitor("numpy", "numpy"))
    if available("torch"):
        comps += [Competitor("torch", "torch"), Competitor("torch 1 thread", "torch", threads=1)]
    return tuple(comps)


def gpu_competitors() -> tuple[Competitor, ...]:
    """tidal on cuda against CuPy and torch CUDA, where installed."""
    comps = [Competitor("tidal", "tidal", device="cuda", vm_mode="async")]
    if available("cupy"):
        comps.append(Competitor("cupy", "cupy", device="cuda"))
    if available("torch"):
        comps.append(Competitor("torch", "torch", device="cuda"))
    return tuple(comps)
