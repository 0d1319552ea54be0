"""BinaryOpFuzzer: tensors `x` and `y` of one shape (1 to 3 dimensions), each sometimes non-contiguous."""
from __future__ import annotations

from ..fuzzer import FuzzedTensor, Fuzzer
from ._shapes import dims_and_sizes, steps

__all__ = ["BinaryOpFuzzer"]


class BinaryOpFuzzer(Fuzzer):
    """Inputs for benchmarking a binary op: tensors named 'x' and 'y'."""

    def __init__(self, seed: int, dtype=None, cuda: bool = False):
        tensors = [FuzzedTensor(name, size=("k0", "k1", "k2"),
                                steps=(f"{name}_step_0", f"{name}_step_1", f"{name}_step_2"),
                                probability_contiguous=0.75, min_elements=4 * 1024, max_elements=32 * 1024 ** 2,
                                max_allocation_bytes=2 * 1024 ** 3, dim_parameter="dim", dtype=dtype, cuda=cuda)
                   for name in ("x", "y")]
        super().__init__(parameters=[dims_and_sizes(), steps("x"), steps("y")], tensors=tensors, seed=seed)
