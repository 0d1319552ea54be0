"""The parameters the op fuzzers share: a dimension count, sizes, and strides for non-contiguous layouts."""
from __future__ import annotations

from ..fuzzer import FuzzedParameter, ParameterAlias

_MIN_DIM_SIZE, _MAX_DIM_SIZE = 16, 8 * 1024
_STEPS = {1: 0.8, 2: 0.06, 4: 0.06, 8: 0.08}  # mostly unit strides


def dims_and_sizes(prefix: str = "k") -> list:
    """`dim` in 1..3 and sizes k0..k2: a power of two half the time, else loguniform."""
    params = [FuzzedParameter("dim", distribution={1: 0.3, 2: 0.4, 3: 0.3}, strict=True)]
    for i in range(3):
        params.append(FuzzedParameter(f"{prefix}_any_{i}", _MIN_DIM_SIZE, _MAX_DIM_SIZE, "loguniform"))
        params.append(FuzzedParameter(f"{prefix}_pow2_{i}", distribution={
            2 ** p: 1 / 10 for p in range(4, 14)}))
        params.append(FuzzedParameter(f"{prefix}{i}", distribution={ParameterAlias(f"{prefix}_any_{i}"): 0.5,
                                                                    ParameterAlias(f"{prefix}_pow2_{i}"): 0.5}))
    return params


def steps(name: str) -> list:
    """Strides per dimension for tensor `name`."""
    return [FuzzedParameter(f"{name}_step_{i}", distribution=_STEPS) for i in range(3)]
