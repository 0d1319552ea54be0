"""Every case of perf/cases.py as a pytest-benchmark benchmark, one per competitor.

The benchmark group is the case, so pytest-benchmark's table puts tidal next to its
competitors; memory and cold-start cases store their figure in `extra_info`. TIDAL_PERF_QUICK=1 uses the
quick sizes. `python -m tidal.perf` runs the same cases and prints the ratios.
"""
import os

import pytest

from tidal.perf.cases import build_cases

QUICK = os.environ.get("TIDAL_PERF_QUICK", "") not in ("", "0")
PARAMS = [pytest.param(case, comp, id=f"{case.id} [{comp.column}]")
          for case in build_cases(quick=QUICK) for comp in case.competitors]


@pytest.mark.parametrize("case, comp", PARAMS)
def test_case(benchmark, case, comp):
    if case.skip is not None:
        pytest.skip(case.skip)
    benchmark.group = case.id
    with comp.configured(fusion_compile_now=case.compile_now):
        built = case.build(comp)
        if case.unit == "B" or case.probe:  # a figure measured in a fresh process
            benchmark.extra_info["bytes" if case.unit == "B" else "seconds"] = \
                benchmark.pedantic(built, rounds=1, iterations=1)
            return
        benchmark.extra_info["ops_per_call"] = built.per_call
        rounds = max(case.min_repeat, 3 if QUICK else 5)
        benchmark.pedantic(built.run, setup=built.after, rounds=rounds,
                           warmup_rounds=case.warmup)
