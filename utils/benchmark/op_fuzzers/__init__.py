"""Ready-made fuzzers for elementwise benchmarks (torch.utils.benchmark.op_fuzzers)."""
from . import binary, unary

__all__ = ["binary", "unary"]
