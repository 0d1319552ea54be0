"""torch.Stream and torch.Event: the device-generic stream and event (a CPU one does no event work)."""
from __future__ import annotations

from .. import sync
from ..tensor import device as _device
from . import cuda
from . import accelerator

__all__ = ["Stream", "Event"]
_NO_EVENTS = "cpu backend doesn't support events."


def _cpu_or_delegate(device, cuda_cls, *args, **kwargs):
    """The device a generic stream/event is for: 'cpu' stays here; an accelerator goes to torch.cuda's class."""
    if device is None:
        return _device("cpu"), None
    if isinstance(device, int):
        if not accelerator.is_available():
            raise RuntimeError("Cannot access accelerator device when none is available.")
        device = _device("cuda", device)
    dev = _device(device)
    if dev.type == "cpu":
        return dev, None
    if dev.type == "cuda" and not cuda.is_available():
        raise RuntimeError("PyTorch is not linked with support for cuda devices")
    return dev, cuda_cls(*args, **kwargs)


class Stream:
    """An ordered queue of work on a device; the CPU's runs in program order already."""

    def __init__(self, device=None, *, priority: int = 0, **kwargs):
        self.device, self._impl = _cpu_or_delegate(device, cuda.Stream, device, priority=priority)
        self.device_index, self.stream_id = (-1, 0) if self._impl is None else (self.device.index, id(self._impl))
        self.device_type = 0 if self._impl is None else 1

    def query(self) -> bool:
        """Whether all work queued on the stream is done."""
        if self._impl is not None:
            return self._impl.query()
        sync()
        return True

    def synchronize(self) -> None:
        """Wait for the work queued on the stream."""
        if self._impl is not None:
            return self._impl.synchronize()
        sync()

    def wait_event(self, event: "Event") -> None:
        """Make later work wait for `event` (nothing to wait for on the CPU)."""
        if self._impl is not None:
            self._impl.wait_event(event._impl)

    def wait_stream(self, stream: "Stream") -> None:
        """Make later work wait for `stream`'s (it takes an event, which the CPU has none of)."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        self._impl.wait_stream(stream._impl)

    def record_event(self, event: "Event | None" = None) -> "Event":
        """Record an event on the stream (the CPU has no events)."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        event = event or Event(self.device)
        event.record(self)
        return event

    def is_capturing(self) -> bool:
        """False: no graph capture runs."""
        return False

    @property
    def native_handle(self):
        """The backend's own stream handle (the CPU has none)."""
        if self._impl is None:
            raise RuntimeError("Backend doesn't support getting stream native handle.")
        return self._impl.cuda_stream

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def __eq__(self, other) -> bool:
        return isinstance(other, Stream) and (self.device, self.stream_id) == (other.device, other.stream_id)

    def __hash__(self) -> int:
        return hash((str(self.device), self.stream_id))

    def __repr__(self) -> str:
        return (f"torch.Stream device_type={self.device.type}, device_index={self.device_index}, "
                f"stream_id={self.stream_id}")


class Event:
    """A marker in a stream's work; CPU events are always complete."""

    def __init__(self, device=None, *, enable_timing: bool = False, blocking: bool = False,
                 interprocess: bool = False):
        self.device, self._impl = _cpu_or_delegate(device, cuda.Event, enable_timing=enable_timing,
                                                   blocking=blocking, interprocess=interprocess)
        self._flag, self.event_id = int(enable_timing), 0
        self._device_index = -1 if self._impl is None else self.device.index

    def record(self, stream: Stream | None = None) -> None:
        """Mark the point reached by `stream`'s work (the CPU has no events)."""
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        self._impl.record(None if stream is None else stream._impl)

    def query(self) -> bool:
        """Whether the work before the event is done."""
        return True if self._impl is None else self._impl.query()

    def synchronize(self) -> None:
        """Wait for the work before the event."""
        if self._impl is not None:
            self._impl.synchronize()

    def wait(self, stream: Stream | None = None) -> None:
        """Make `stream`'s later work wait for the event."""
        if self._impl is not None:
            self._impl.wait(None if stream is None else stream._impl)

    def elapsed_time(self, end: "Event") -> float:
        """Milliseconds between this event and `end` (both made with enable_timing=True)."""
        if not (self._flag and end._flag):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        if self._impl is None:
            raise RuntimeError(_NO_EVENTS)
        return self._impl.elapsed_time(end._impl)

    def ipc_handle(self):
        """Refused, as torch does."""
        raise NotImplementedError("torch.Event ipc is not supported yet, please open an issue if you need this!")

    def __repr__(self) -> str:
        return (f"torch.Event device_type={self.device.type}, device_index={self._device_index}, "
                f"event_flag={self._flag}, event_id={self.event_id}")
