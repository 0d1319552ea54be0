"""Benchmarks: run with `pytest perf/ --benchmark-only` (never part of the test suite)."""
