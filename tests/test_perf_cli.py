"""`python -m tidal.perf`: the report's structure (never its timings)."""
import re
import subprocess
import sys

import pytest

from tidal.perf import report
from tidal.perf.cases import GROUPS, TINY_OPS, Case, build_cases
from tidal.perf.competitors import cpu_competitors

pytest.importorskip("torch")

COLUMNS = ["tidal", "numpy", "torch", "torch 1 thread"]
HEADER = "| case | " + " | ".join(COLUMNS + [f"tidal/{c}" for c in COLUMNS[1:]]
                                 + [f"cpu tidal/{c}" for c in COLUMNS[1:]]) + " |"
VALUE = re.compile(r"^(\d+(\.\d+)?(e[+-]\d+)? (s|ms|µs|ns)|error)$")
RATIO = re.compile(r"^(\d+(\.\d+)?(e[+-]\d+)?|—)$")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("perf")
    done = subprocess.run([sys.executable, "-m", "tidal.perf", "--quick", "--only", "a", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, cwd=out)
    assert done.returncode == 0, done.stderr[-2000:]
    return done, out


def _table_rows(text: str) -> list[list[str]]:
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines()
            if line.startswith("| ") and line != HEADER]


def test_report_has_machine_and_group_a_table(quick_run):
    done, out = quick_run
    text = done.stdout
    assert text.startswith("# tidal perf report\n")
    for fact in ("- CPU: ", "- versions: Python ", "NumPy ", "torch ", "- load average", "- run: quick sizes"):
        assert fact in text
    assert f"## a. {GROUPS['a']}" in text
    assert "## b." not in text
    lines = text.splitlines()
    header_at = lines.index(HEADER)
    assert re.fullmatch(r"\|:--\|(--:\|){10}", lines[header_at + 1])


def test_every_case_has_a_row_of_figures_and_ratios(quick_run):
    rows = _table_rows(quick_run[0].stdout)
    expected = [case.name for case in build_cases(quick=True, only="a")]
    assert [row[0] for row in rows] == expected
    assert len(expected) == len(TINY_OPS) * 2 * 3  # ops x quick sizes x (enqueue, synced async, synced sync)
    for row in rows:
        assert len(row) == 1 + 4 + 3 + 3, row  # figures, wall-time ratios, CPU-time ratios
        assert all(VALUE.match(cell) for cell in row[1:5]), row
        assert all(RATIO.match(cell) for cell in row[5:]), row
        assert row[1] != "error", row


def test_report_is_saved_and_progress_goes_to_stderr(quick_run):
    done, out = quick_run
    assert (out / "perf.md").read_text(encoding="utf-8") == done.stdout
    total = sum(len(case.competitors) for case in build_cases(quick=True, only="a"))
    assert f"{total}/{total}" in done.stderr
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert not (out / "perf.png").exists()
    else:
        assert (out / "perf.png").stat().st_size > 0


def test_unknown_group_is_refused(capsys, tmp_path):
    assert report.main(["--only", "a,z", "--out", str(tmp_path)]) == 2
    assert "unknown case group(s) z" in capsys.readouterr().err
    assert not (tmp_path / "perf.md").exists()


def test_markdown_reports_failures_and_skips():
    comps = cpu_competitors("async")
    ran = report.Result(Case("c", "model step", comps, build=None), values={"tidal": 2e-3, "numpy": None,
                        "torch": 4e-3, "torch 1 thread": 1e-3}, errors={"numpy": "TypeError: no"},
                        cpu={"tidal": 3e-3, "torch": 6e-3, "torch 1 thread": 1e-3})
    skipped = report.Result(Case("c", "gpu step", comps, build=None, skip="no CUDA GPU"))
    text = report.markdown([ran, skipped], ["CPU: test"])
    rows = _table_rows(text)
    assert rows == [["model step", "2 ms", "error", "4 ms", "1 ms", "—", "0.5", "2", "—", "0.5", "3"]]
    assert "- skipped gpu step: no CUDA GPU" in text
    assert "- numpy failed on model step: TypeError: no" in text


@pytest.mark.parametrize("value, unit, text", [(1.5e-6, "s", "1.5 µs"), (2.0, "s", "2 s"), (3e-9, "s", "3 ns"),
                                               (5 << 20, "B", "5 MiB"), (512, "B", "512 B")])
def test_format_value(value, unit, text):
    assert report.format_value(value, unit) == text
