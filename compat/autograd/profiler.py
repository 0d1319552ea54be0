"""torch.autograd.profiler: the legacy profiler API (profile(use_cuda=...), record_function) over tidal's."""
from __future__ import annotations

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, record_function
from ..profiler import profile as _profile

__all__ = ["profile", "record_function", "EventList", "FunctionEvent", "FunctionEventAvg", "emit_nvtx", "emit_itt"]


class profile(_profile):
    """`with torch.autograd.profiler.profile() as prof:` ... `prof.key_averages().table(...)`; enabled=False
    records nothing."""

    def __init__(self, enabled: bool = True, *, use_cuda: bool = False, use_device: str | None = None,
                 record_shapes: bool = False, with_flops: bool = False, profile_memory: bool = False,
                 with_stack: bool = False, with_modules: bool = False, use_kineto: bool = False,
                 use_cpu: bool = True, experimental_config=None, acc_events: bool = False,
                 custom_trace_id_callback=None):
        super().__init__(record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack)
        self.enabled = enabled

    def start(self) -> None:
        if self.enabled:
            super().start()

    @property
    def function_events(self) -> EventList:
        return self.events()

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs) -> str:
        """The table of every event (not averaged), as torch's profile.table."""
        return self.events().table(sort_by=sort_by, row_limit=row_limit, **kwargs)

    def total_average(self) -> FunctionEventAvg:
        return self.events().total_average()

    def __str__(self) -> str:
        return str(self.function_events)  # print(prof): the table of every event, as torch's

    def __repr__(self) -> str:
        return repr(self.function_events)


class emit_nvtx:
    """Annotate ops as NVTX ranges for nsys (tidal's own trace is tidal.profiler's): a block that records nothing."""

    def __init__(self, enabled: bool = True, record_shapes: bool = False):
        self.enabled, self.record_shapes = enabled, record_shapes

    def __enter__(self) -> "emit_nvtx":
        return self

    def __exit__(self, *exc) -> bool:
        return False


class emit_itt(emit_nvtx):
    """Annotate ops as Intel ITT ranges (VTune): a block that records nothing here."""

