"""Tensor repr formatting that reproduces PyTorch's printed layout.

Only numpy and the standard library are used so the module stays independent
of the rest of the runtime; callers map their dtypes to a ``kind`` and pass
the values as a numpy array.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

from . import dtype as dt
from .dtype import get_default_dtype

__all__ = ["set_printoptions", "get_printoptions", "format_tensor"]

_PROFILES: dict[str, dict[str, Any]] = {
    "default": {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80},
    "short": {"precision": 2, "threshold": 1000, "edgeitems": 2, "linewidth": 80},
    "full": {"precision": 4, "threshold": math.inf, "edgeitems": 3, "linewidth": 80},
}

_OPTS: dict[str, Any] = dict(_PROFILES["default"], sci_mode=None)

_PREFIX = "tensor("


def set_printoptions(
    precision: int | None = None,
    threshold: float | None = None,
    edgeitems: int | None = None,
    linewidth: int | None = None,
    profile: str | None = None,
    sci_mode: bool | None = None,
) -> None:
    """Set global print options; a profile is applied first, explicit values override it."""
    if profile is not None and profile in _PROFILES:
        _OPTS.update(_PROFILES[profile])
    for key, value in (
        ("precision", precision),
        ("threshold", threshold),
        ("edgeitems", edgeitems),
        ("linewidth", linewidth),
    ):
        if value is not None:
            _OPTS[key] = value
    # PyTorch always assigns sci_mode, so any call without it resets to auto.
    _OPTS["sci_mode"] = sci_mode


def get_printoptions() -> dict[str, Any]:
    """Return a copy of the current print options."""
    return dict(_OPTS)


class _Formatter:
    """Chooses one notation and column width for every element that will be shown."""

    def __init__(self, kind: str, data: np.ndarray) -> None:
        self.kind = kind
        self.mode = kind
        self.precision = int(_OPTS["precision"])
        measured = data.ravel()
        if kind == "float":
            # torch's isfinite counts float8_e8m0fnu's NaN as finite: there it takes part in the choice below
            nan_counts = data.dtype.name == "float8_e8m0fnu"
            flat = np.asarray(measured, dtype=np.float64)
            with np.errstate(invalid="ignore"):
                # Like PyTorch, only finite nonzero values set the column width,
                # so nan/inf/-0. may stick out past it.
                measured = flat[(np.isfinite(flat) | nan_counts & np.isnan(flat)) & (flat != 0)]
            self.mode = self._choose_float_mode(measured)
        self.width = max([1] + [len(self.format(v)) for v in measured.tolist()])

    def _choose_float_mode(self, finite: np.ndarray) -> str:
        """Pick 'int', 'fixed' or 'sci' notation from the finite nonzero values."""
        if finite.size == 0:
            # Nothing to measure: PyTorch ignores sci_mode here too.
            return "int"
        mag = np.abs(finite)
        hi, lo = float(mag.max()), float(mag.min())
        int_mode = bool(np.all(finite == np.ceil(finite)))
        sci = hi / lo > 1000.0 or hi > 1.0e8 or (not int_mode and lo < 1.0e-4)
        if _OPTS["sci_mode"] is not None:
            sci = bool(_OPTS["sci_mode"])
        if sci:
            return "sci"
        return "int" if int_mode else "fixed"

    def format(self, value: Any) -> str:
        """Format one element without padding."""
        if self.kind == "bool":
            return "True" if value else "False"
        if self.kind == "int":
            return str(int(value))
        value = float(value)
        if not math.isfinite(value):
            return str(value)
        if self.mode == "sci":
            return f"{value:.{self.precision}e}"
        if self.mode == "int":
            return f"{value:.0f}."
        return f"{value:.{self.precision}f}"

    def cell(self, value: Any) -> str:
        """Format one element padded to the common column width."""
        return self.format(value).rjust(self.width)


def _edge_indices(size: int, edge: int) -> list[int]:
    return list(range(edge)) + list(range(size - edge, size))


def _summarize(values: np.ndarray, edge: int) -> tuple[np.ndarray, list[bool]]:
    """Keep only the leading/trailing edge items of every over-long axis."""
    cut = []
    data = values
    for axis, size in enumerate(values.shape):
        trimmed = size > 2 * edge
        cut.append(trimmed)
        if trimmed:
            data = np.take(data, _edge_indices(size, edge), axis=axis)
    return data, cut


class _ComplexFormatter:
    """PyTorch's complex layout: the real parts padded to one width, the imaginary parts formatted
    on their own (their own notation) and joined with their sign and a 'j'."""

    def __init__(self, data: np.ndarray) -> None:
        self.real = _Formatter("float", np.ascontiguousarray(data.real))
        self.imag = _Formatter("float", np.ascontiguousarray(data.imag))
        self.width = self.real.width + 2 + self.imag.width + 1 - 2  # _render adds the ", " back

    def format(self, value: Any) -> str:
        """Format one element, e.g. ``1.0000-2.5000j``."""
        value = complex(value)
        imag = (self.imag.cell(value.imag) + "j").lstrip()
        return self.real.cell(value.real) + (imag if imag[0] in "+-" else "+" + imag)

    cell = format


def _render(
    data: np.ndarray,
    cut: Sequence[bool],
    fmt: _Formatter,
    column: int,
    edge: int,
    linewidth: int,
    units: Sequence[bool] | None = None,
) -> str:
    """Render nested brackets; ``column`` is where this level's '[' sits. ``units`` marks the dims of
    extent 1 that ``data`` lacks (a tensor of more than 64 dims, which NumPy can't hold)."""
    units = (False,) * data.ndim if units is None else units
    if units[0]:  # a dim of extent 1 that data lacks
        inner = fmt.cell(data.item()) if len(units) == 1 else \
            _render(data, cut[1:], fmt, column + 1, edge, linewidth, units[1:])
        return "[" + inner + "]"
    if len(units) == 1:
        items = [fmt.cell(v) for v in data.tolist()]
        if cut[0]:
            items = items[:edge] + [" ..."] + items[edge:]
        per_line = max(1, (linewidth - column) // (fmt.width + 2))
        lines = [", ".join(items[i : i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (column + 1)).join(lines) + "]"
    parts = [
        _render(data[i], cut[1:], fmt, column + 1, edge, linewidth, units[1:])
        for i in range(data.shape[0])
    ]
    if cut[0]:
        parts = parts[:edge] + ["..."] + parts[edge:]
    sep = "," + "\n" * (len(units) - 1) + " " * (column + 1)
    return "[" + sep.join(parts) + "]"


def _make_formatter(kind: str, data: np.ndarray):
    return _ComplexFormatter(data) if kind == "complex" else _Formatter(kind, data)


def _size_repr(shape: tuple[int, ...]) -> str:
    return "size=" + repr(tuple(int(s) for s in shape))


def meta_repr(t) -> str:
    """torch's repr of a tensor without data (meta): its device, size, a dtype other than the default, autograd."""
    suffixes = [f"device='{t.device}'", _size_repr(t.shape)]
    if t.dtype is not get_default_dtype():
        suffixes.append(f"dtype={t.dtype!r}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{type(t.grad_fn).__name__}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    return f"tensor(..., {', '.join(suffixes)})"


def _missing_units(full: tuple, kept: tuple) -> list[bool]:
    """Which dims of ``full`` are the extent-1 dims that ``kept`` (its other dims, in order) leaves out."""
    units, j = [], 0
    for n in full:
        if j < len(kept) and kept[j] == n:
            units.append(False)
            j += 1
        else:
            units.append(True)  # (only extent-1 dims are ever left out)
    return units


def host_values(t) -> tuple:
    """(NumPy array of ``t``'s values, None), or for more than 64 dims, which NumPy can't hold, (the values
    without their dims of extent 1, ``t``'s shape) for format_tensor's ``shape``."""
    src = t.detach() if t.requires_grad else t
    if src.ndim <= 64:
        values, shape = src._host_array(), None
    else:
        values, shape = src.reshape(tuple(n for n in src.shape if n != 1))._host_array(), tuple(src.shape)
    if t.dtype is dt.complex32:  # (float16 pairs: printed as the complex64 values they are, as torch)
        values = dt.complex32_values(values)
    return values, shape


def format_tensor(
    values: np.ndarray,
    *,
    kind: str,
    dtype_repr: str,
    show_dtype: bool,
    extras: Iterable[tuple[str, str]] = (),
    shape: tuple[int, ...] | None = None,
) -> str:
    """Return the PyTorch-style repr of ``values``, e.g. ``tensor([1., 2.], dtype=tidal.float64)``.
    ``shape``: the tensor's own shape where ``values`` lacks its dims of extent 1 (see host_values)."""
    if kind not in ("bool", "int", "float", "complex"):
        raise ValueError(f"unsupported kind {kind!r}")
    values = np.asarray(values)
    full = tuple(values.shape) if shape is None else tuple(shape)
    units = None if shape is None else _missing_units(full, values.shape)
    linewidth = int(_OPTS["linewidth"])
    edge = int(_OPTS["edgeitems"])
    extras = list(extras)
    # PyTorch lists the device before size/dtype, and everything else after.
    suffixes = [f"{k}={v}" for k, v in extras if k == "device"]
    dtype_suffix = f"dtype={dtype_repr}"

    if values.size == 0:
        body = "[]"
        if full != (0,):
            suffixes.append(_size_repr(full))
        # Empty tensors name every dtype except the default float one.
        if show_dtype or kind != "float":
            suffixes.append(dtype_suffix)
    else:
        summarize = len(full) > 0 and values.size > _OPTS["threshold"]
        if len(full) == 0:
            body = _make_formatter(kind, values).format(values.item())
        elif summarize and edge <= 0:
            body = "[...]"
        else:
            if summarize:
                data, cut = _summarize(values, edge)
            else:
                data, cut = values, [False] * values.ndim
            if units is not None:  # a cut flag for every dim, False for the missing ones
                kept = iter(cut)
                cut = [False if u else next(kept) for u in units]
            fmt = _make_formatter(kind, data)
            body = _render(data, cut, fmt, len(_PREFIX), edge, linewidth, units)
        # PyTorch names the size of every non-empty tensor once edgeitems is 0,
        # summarized or not.
        if edge <= 0:
            suffixes.append(_size_repr(full))
        if show_dtype:
            suffixes.append(dtype_suffix)

    suffixes += [f"{k}={v}" for k, v in extras if k != "device"]
    text = _PREFIX + body
    # PyTorch over-counts the body's last line by two columns but measures
    # wrapped suffix lines exactly; reproduce both to wrap where it does.
    line_len = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line_len + len(suffix) + 2 > linewidth:
            text += ",\n" + " " * len(_PREFIX) + suffix
            line_len = len(_PREFIX) + len(suffix)
        else:
            text += ", " + suffix
            line_len += len(suffix) + 2
    return text + ")"
