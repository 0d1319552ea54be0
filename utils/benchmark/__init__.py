"""tidal.utils.benchmark (torch.utils.benchmark): Timer, Measurement and Compare, with each measurement
split into host (enqueue) and device (kernel) time."""
from __future__ import annotations

from . import op_fuzzers
from .compare import Colorize, Compare
from .fuzzer import FuzzedParameter, FuzzedTensor, Fuzzer, ParameterAlias
from .measurement import Measurement, TaskSpec, select_unit, trim_sigfig
from .timer import Language, Timer, timer

__all__ = ["Timer", "Measurement", "Compare", "Colorize", "Language", "TaskSpec", "select_unit", "trim_sigfig",
           "timer", "Fuzzer", "FuzzedParameter", "FuzzedTensor", "ParameterAlias", "op_fuzzers"]
