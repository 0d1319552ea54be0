"""tidal.perf: benchmarks against NumPy and PyTorch, and the report CLI (`python -m tidal.perf`)."""
