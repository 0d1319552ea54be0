"""Compare: measurements side by side in a text table, as torch.utils.benchmark.Compare prints them."""
from __future__ import annotations

import enum
import math
from collections import defaultdict

from .measurement import Measurement, select_unit, trim_sigfig, unit_to_english

__all__ = ["Compare", "Colorize"]

BEST, GOOD, BAD, VERY_BAD = "\033[92m", "\033[34m", "\033[2m\033[91m", "\033[31m"
BOLD, TERMINATE = "\033[1m", "\033[0m"


class Colorize(enum.Enum):
    """How Compare colors cells relative to the best time."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


def _unique(items) -> list:
    return list(dict.fromkeys(items))


def _color(text: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + text + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + text + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + text + TERMINATE * 2
    if value >= best * 2:
        return BAD + text + TERMINATE * 2
    return text


class _Table:
    """One label's measurements: rows by (threads, env, sub_label or stmt), columns by description."""

    def __init__(self, results: list, colorize: Colorize, trim: bool, highlight: bool) -> None:
        self.results, self.colorize, self.trim = results, colorize, trim
        self.highlight = highlight and any(r.has_warnings for r in results)
        self.label = results[0].label
        self.unit, self.scale = select_unit(min(r.median for r in results))
        self.rows = sorted(_unique((r.num_threads, r.env, r.as_row_name) for r in results),
                           key=lambda k: (k[0], k[1] or ""))
        self.columns = _unique(r.description for r in results)
        self.cell = {((r.num_threads, r.env, r.as_row_name), r.description): r for r in results}

    def _column_format(self, col) -> str:
        members = [self.cell.get((row, col)) for row in self.rows]
        members = [m for m in members if m is not None]
        leading = [int(math.ceil(math.log10(m.median / self.scale))) for m in members]
        decimals = min(max(m.significant_figures - d, 0) for m, d in zip(members, leading)) if self.trim else 1
        length = max(leading) + decimals + (1 if decimals else 0)
        return f"{{:>{length}.{decimals}f}}{{:>{7 if self.highlight else 0}}}"

    def render(self) -> str:
        formats = {c: self._column_format(c) for c in self.columns}
        envs = {r.env for r in self.results}
        show_env = len(envs) > 1
        env_len = max(len(e or "") for e in envs) if show_env else 0
        grid = [[""] + [str(c) if c is not None else "" for c in self.columns]]
        for row in self.rows:
            line = ["  " + (f"({row[1]})" if show_env else "").ljust(env_len + 4) + row[2]]
            for c in self.columns:
                m = self.cell.get((row, c))
                if m is None:
                    line.append("")
                    continue
                value = m.median / self.scale
                if self.trim:
                    value = trim_sigfig(value, m.significant_figures)
                spread = f" (! {m.iqr / m.median * 100:.0f}%)" if self.highlight and m.has_warnings else ""
                line.append(formats[c].format(value, spread))
            grid.append(line)
        widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
        out = ["  |  ".join(text.center(w) for text, w in zip(grid[0], widths))]
        width = len(out[0])
        last_threads = None
        for row, line in zip(self.rows, grid[1:]):
            if row[0] != last_threads:
                out.append(f"{row[0]} threads: ".ljust(width, "-"))
                last_threads = row[0]
            cells = [line[0].ljust(widths[0])]
            medians = [self.cell[(row, c)].median for c in self.columns if (row, c) in self.cell]
            for c, text, w in zip(self.columns, line[1:], widths[1:]):
                text = text.center(w)
                m = self.cell.get((row, c))
                if self.colorize is not Colorize.NONE and m is not None:
                    best = min(medians) if self.colorize is Colorize.ROWWISE else min(
                        self.cell[(r, c)].median for r in self.rows if (r, c) in self.cell and r[0] == row[0])
                    text = _color(text, m.median, best)
                cells.append(text)
            out.append("  |  ".join(cells))
        note = ("(! XX%) Measurement has high variance, where XX is the IQR / median * 100.\n"
                if self.highlight else "")
        title = (" " + (self.label or "") + " ").center(width - 2, "-")
        return f"[{title}]\n" + "\n".join(out) + \
            f"\n\nTimes are in {unit_to_english(self.unit)}s ({self.unit}).\n{note}"


class Compare:
    """Collects Measurements and prints them as one table per label."""

    def __init__(self, results: list) -> None:
        self._results: list = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def extend_results(self, results) -> None:
        """Add more measurements."""
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        """Show only the significant figures each measurement supports."""
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        """Color cells by how they compare with the best of their column (or row)."""
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        """Mark measurements with a large spread."""
        self._highlight_warnings = True

    def _render(self) -> list:
        groups: defaultdict = defaultdict(list)
        for r in Measurement.merge(self._results):
            groups[r.label].append(r)
        return [_Table(g, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
                for g in groups.values()]

    def __str__(self) -> str:
        return "\n".join(self._render())

    def print(self) -> None:
        """Print the tables."""
        print(str(self))
