"""UnaryOpFuzzer: one tensor `x` of 1 to 3 dimensions, sometimes non-contiguous."""
from __future__ import annotations

from ..fuzzer import FuzzedTensor, Fuzzer
from ._shapes import dims_and_sizes, steps

__all__ = ["UnaryOpFuzzer"]


class UnaryOpFuzzer(Fuzzer):
    """Inputs for benchmarking a unary op: tensors named 'x'."""

    def __init__(self, seed: int, dtype=None, cuda: bool = False):
        x = FuzzedTensor("x", size=("k0", "k1", "k2"), steps=("x_step_0", "x_step_1", "x_step_2"),
                         probability_contiguous=0.75, min_elements=4 * 1024, max_elements=32 * 1024 ** 2,
                         max_allocation_bytes=2 * 1024 ** 3, dim_parameter="dim", dtype=dtype, cuda=cuda)
        super().__init__(parameters=[dims_and_sizes(), steps("x")], tensors=[x], seed=seed)
