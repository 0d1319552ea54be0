"""Measurement: the times a Timer took, with torch.utils.benchmark's statistics and repr, plus tidal's split
of each run into host time (enqueueing instructions) and device time (running kernels)."""
from __future__ import annotations

import dataclasses
import math
import textwrap
from collections import defaultdict
from typing import Iterable

import numpy as np

from ...tensor.dtype import repr_namespace

__all__ = ["TaskSpec", "Measurement", "select_unit", "trim_sigfig", "unit_to_english"]

_IQR_WARN_THRESHOLD = 0.1
_IQR_GROSS_WARN_THRESHOLD = 0.25
_MIN_CONFIDENCE_INTERVAL = 25e-9  # 25 ns
_MAX_SIGNIFICANT_FIGURES = 4


def select_unit(t: float) -> tuple:
    """The unit ('ns', 'us', 'ms', 's') that shows `t` seconds with O(1) magnitude, and its scale."""
    unit = {-3: "ns", -2: "us", -1: "ms"}.get(int(math.log10(t) // 3) if t > 0 else -3, "s")
    return unit, {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[unit]


def unit_to_english(u: str) -> str:
    """'us' -> 'microsecond'."""
    return {"ns": "nanosecond", "us": "microsecond", "ms": "millisecond", "s": "second"}[u]


def trim_sigfig(x: float, n: int) -> float:
    """`x` rounded to `n` significant figures."""
    if n != int(n):
        raise AssertionError("Number of significant figures must be an integer")
    magnitude = int(math.ceil(math.log10(abs(x)))) if x else 0
    scale = 10 ** (magnitude - n)
    return float(np.round(x / scale) * scale)


@dataclasses.dataclass(init=True, repr=False, eq=True, frozen=True)
class TaskSpec:
    """What a Timer measures (everything but its globals)."""

    stmt: str
    setup: str
    global_setup: str = ""
    label: str | None = None
    sub_label: str | None = None
    description: str | None = None
    env: str | None = None
    num_threads: int = 1

    @property
    def title(self) -> str:
        """The label (or statement) and sub-label."""
        if self.label is not None:
            return self.label + (f": {self.sub_label}" if self.sub_label else "")
        if "\n" not in self.stmt:
            return self.stmt + (f": {self.sub_label}" if self.sub_label else "")
        return f"stmt:{f' ({self.sub_label})' if self.sub_label else ''}\n{textwrap.indent(self.stmt, '  ')}"

    def setup_str(self) -> str:
        """The setup as shown in a summary ('' for none)."""
        if self.setup == "pass" or not self.setup:
            return ""
        return f"setup:\n{textwrap.indent(self.setup, '  ')}" if "\n" in self.setup else f"setup: {self.setup}"

    def summarize(self) -> str:
        """Title, description and setup, one per line."""
        sections = [self.title, self.description or "", self.setup_str()]
        return "\n".join(f"{s}\n" if "\n" in s else s for s in sections if s)


_FIELDS = tuple(f.name for f in dataclasses.fields(TaskSpec))


@dataclasses.dataclass(init=True, repr=False)
class Measurement:
    """The result of a Timer: `raw_times[i]` seconds for `number_per_run` runs of the statement.

    `raw_host_times` and `raw_kernel_times` (same shape) split each block into the time spent on the
    host enqueueing instructions and the time the devices spent in kernels (empty when not recorded)."""

    number_per_run: int
    raw_times: list
    task_spec: TaskSpec
    metadata: dict | None = None
    raw_host_times: list = dataclasses.field(default_factory=list)
    raw_kernel_times: list = dataclasses.field(default_factory=list)

    def __post_init__(self) -> None:
        self._sorted_times: tuple = ()
        self._warnings: tuple = ()
        self._median = self._mean = self._p25 = self._p75 = -1.0

    def __getattr__(self, name: str):
        if name in _FIELDS:  # label, sub_label, stmt, ... come from the task spec
            return getattr(self.task_spec, name)
        raise AttributeError(f"'Measurement' object has no attribute '{name}'")

    @property
    def times(self) -> list:
        """Seconds per run of the statement, one entry per block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def host_times(self) -> list:
        """Seconds per run spent on the host enqueueing work (the call returning), per block."""
        return [t / self.number_per_run for t in self.raw_host_times]

    @property
    def kernel_times(self) -> list:
        """Seconds per run the devices spent running kernels, per block."""
        return [t / self.number_per_run for t in self.raw_kernel_times]

    @property
    def title(self) -> str:
        """The task's title."""
        return self.task_spec.title

    @property
    def env(self) -> str | None:
        """The environment label."""
        return self.task_spec.env

    @property
    def as_row_name(self) -> str:
        """The name of this measurement's row in a Compare table."""
        return self.sub_label or self.stmt or "[Unknown]"

    def _lazy_init(self) -> None:
        if self.raw_times and not self._sorted_times:
            self._sorted_times = tuple(sorted(self.times))
            arr = np.array(self._sorted_times, dtype=np.float64)
            self._median, self._mean = float(np.quantile(arr, 0.5)), float(arr.mean())
            self._p25, self._p75 = float(np.quantile(arr, 0.25)), float(np.quantile(arr, 0.75))
            if not self.meets_confidence(_IQR_GROSS_WARN_THRESHOLD):
                self._add_warning("This suggests significant environmental influence.")
            elif not self.meets_confidence(_IQR_WARN_THRESHOLD):
                self._add_warning("This could indicate system fluctuation.")

    def _add_warning(self, msg: str) -> None:
        rel_iqr = self.iqr / self.median * 100
        self._warnings += (f"  WARNING: Interquartile range is {rel_iqr:.1f}% of the median measurement.\n"
                           f"           {msg}",)

    @property
    def median(self) -> float:
        """Median seconds per run."""
        self._lazy_init()
        return self._median

    @property
    def mean(self) -> float:
        """Mean seconds per run."""
        self._lazy_init()
        return self._mean

    @property
    def iqr(self) -> float:
        """Interquartile range of the seconds per run."""
        self._lazy_init()
        return self._p75 - self._p25

    @property
    def host_median(self) -> float:
        """Median host (enqueue) seconds per run; nan when not recorded."""
        return float(np.median(self.host_times)) if self.raw_host_times else math.nan

    @property
    def kernel_median(self) -> float:
        """Median device (kernel) seconds per run; nan when not recorded."""
        return float(np.median(self.kernel_times)) if self.raw_kernel_times else math.nan

    @property
    def significant_figures(self) -> int:
        """A rough count of trustworthy significant figures, from the interquartile points."""
        self._lazy_init()
        n = len(self._sorted_times)
        points = self._sorted_times[n // 4:int(math.ceil(3 * n / 4))]
        std = float(np.std(points)) if points else 0.0
        ci = max(1.645 * std / math.sqrt(max(len(points), 1)), _MIN_CONFIDENCE_INTERVAL)
        return min(max(int(math.floor(math.log10(self._median / ci))), 1), _MAX_SIGNIFICANT_FIGURES)

    @property
    def has_warnings(self) -> bool:
        """Whether the spread of the times is large."""
        self._lazy_init()
        return bool(self._warnings)

    def meets_confidence(self, threshold: float = _IQR_WARN_THRESHOLD) -> bool:
        """Whether IQR / median is below `threshold`."""
        return self.iqr / self.median < threshold

    def to_array(self) -> np.ndarray:
        """The per-run times as a NumPy array."""
        return np.array(self.times, dtype=np.float64)

    def __repr__(self) -> str:
        self._lazy_init()
        n = len(self._sorted_times)
        unit, scale = select_unit(self._median)
        lines = [f"<{_class_path(type(self))} object at {hex(id(self))}>",
                 self.task_spec.summarize(),
                 f"  {'Median: ' if n > 1 else ''}{self._median / scale:.2f} {unit}"]
        if n >= 4:
            lines.append(f"  IQR:    {self.iqr / scale:.2f} {unit} ({self._p25 / scale:.2f} to "
                         f"{self._p75 / scale:.2f})")
        lines.append(f"  {n} measurement{'s' if n > 1 else ''}, {self.number_per_run} runs "
                     f"{'per measurement,' if n > 1 else ','} {self.num_threads} thread"
                     f"{'s' if self.num_threads > 1 else ''}")
        if self.raw_host_times and self.raw_kernel_times:
            lines.append(f"  host (enqueue): {self.host_median / scale:.2f} {unit}, device (kernels): "
                         f"{self.kernel_median / scale:.2f} {unit}")
        lines.extend(self._warnings)
        return "\n".join(lines).strip()

    @staticmethod
    def merge(measurements: Iterable["Measurement"]) -> list:
        """Replicates of one task joined into one Measurement per task (times per run, number_per_run=1)."""
        groups: defaultdict = defaultdict(list)
        for m in measurements:
            groups[m.task_spec].append(m)
        return [Measurement(1, [t for m in group for t in m.times], spec, None,
                            [t for m in group for t in m.host_times], [t for m in group for t in m.kernel_times])
                for spec, group in groups.items()]


def _class_path(cls: type) -> str:
    """The class's dotted path; under `import torch` (the compat runner) torch's own path for Measurement."""
    if repr_namespace[0] == "torch" and cls is Measurement:
        return "torch.utils.benchmark.utils.common.Measurement"
    return f"{cls.__module__}.{cls.__name__}"
