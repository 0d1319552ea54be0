"""torch.quasirandom: SobolEngine, the (optionally scrambled) Sobol low-discrepancy sequence.

The direction numbers are Joe and Kuo's (new-joe-kuo-6.21201), the table torch uses too; tidal reads
it from SciPy's copy when an engine is first made, so SciPy is needed for this module only. Points
come in Gray-code order, so an unscrambled engine gives torch's exact values; a scrambled one draws
its matrices and shift from tidal's generator (the same distribution as torch's, other values).
"""
from __future__ import annotations

import functools

import numpy as np

from .. import ops
from ..ops.random.rng import Generator
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["SobolEngine"]


@functools.lru_cache(1)
def _joe_kuo() -> tuple:
    """(primitive polynomials, initial direction numbers) for every dimension."""
    try:
        import importlib.resources
        with importlib.resources.as_file(importlib.resources.files("scipy.stats") /
                                         "_sobol_direction_numbers.npz") as path:
            table = np.load(path)
            return table["poly"].astype(np.int64), table["vinit"].astype(np.int64)
    except (ImportError, FileNotFoundError, ModuleNotFoundError) as e:
        raise ImportError("tidal's SobolEngine reads Joe and Kuo's direction numbers from SciPy: "
                          "install scipy to use torch.quasirandom") from e


def _direction_numbers(dimension: int, bits: int) -> np.ndarray:
    """The (dimension, bits) integer directions v[d, j] = m[d, j] * 2**(bits - 1 - j)."""
    poly, vinit = _joe_kuo()
    m = np.zeros((dimension, bits), np.int64)
    m[0] = 1
    for d in range(1, dimension):
        p = int(poly[d])
        degree = p.bit_length() - 1
        m[d, :degree] = vinit[d, :degree]
        for j in range(degree, bits):  # Bratley and Fox's recurrence over the polynomial's coefficients
            value = m[d, j - degree]
            for k in range(degree):
                if (p >> (degree - 1 - k)) & 1:
                    value ^= m[d, j - k - 1] << (k + 1)
            m[d, j] = value
    return m << np.arange(bits - 1, -1, -1, dtype=np.int64)


def _parity(x: np.ndarray) -> np.ndarray:
    """Bitwise parity of each (non-negative, < 2**32) integer."""
    x = x ^ (x >> 16)
    x = x ^ (x >> 8)
    x = x ^ (x >> 4)
    x = x ^ (x >> 2)
    x = x ^ (x >> 1)
    return x & 1


def _first_zero_bit(counts: np.ndarray) -> np.ndarray:
    """Position of the lowest 0 bit of each count (the Gray-code step's direction index)."""
    inverted = ~counts
    return np.log2(inverted & -inverted).astype(np.int64)


class SobolEngine:
    """Draws points of the `dimension`-dimensional Sobol sequence, optionally scrambled (Owen's LMS + shift)."""

    MAXBIT = 30
    MAXDIM = 21201

    def __init__(self, dimension: int, scramble: bool = False, seed: int | None = None):
        if dimension > self.MAXDIM or dimension < 1:
            raise ValueError(f"Supported range of dimensionality for SobolEngine is [1, {self.MAXDIM}]")
        self.seed, self.scramble, self.dimension = seed, scramble, dimension
        self._state = _direction_numbers(dimension, self.MAXBIT)
        self._shift = np.zeros(dimension, np.int64)
        if scramble:
            self._scramble()
        self._quasi = self._shift.copy()
        self.num_generated = 0

    def _scramble(self) -> None:
        gen = None
        if self.seed is not None:
            gen = Generator()
            gen.manual_seed(self.seed)
        bits = self.MAXBIT
        shift_bits = ops.randint(2, (self.dimension, bits), generator=gen).numpy()
        self._shift = shift_bits.astype(np.int64) @ (np.int64(1) << np.arange(bits, dtype=np.int64))
        ltm = np.tril(ops.randint(2, (self.dimension, bits, bits), generator=gen).numpy().astype(np.int64))
        ltm[:, np.arange(bits), np.arange(bits)] = 1
        rows = ltm @ (np.int64(1) << np.arange(bits - 1, -1, -1, dtype=np.int64))  # (dimension, bits)
        # new v[d, j]: bit (bits-1-p) is the parity of row p of the matrix ANDed with v[d, j]
        parity = _parity(rows[:, None, :] & self._state[:, :, None])  # (dimension, j, p)
        self._state = parity @ (np.int64(1) << np.arange(bits - 1, -1, -1, dtype=np.int64))

    @property
    def sobolstate(self) -> Tensor:
        """The direction numbers in use (after scrambling), (dimension, MAXBIT) int64."""
        return ops.tensor(self._state, dtype=dt.int64)

    @property
    def shift(self) -> Tensor:
        """The scrambling shift (zeros when unscrambled)."""
        return ops.tensor(self._shift, dtype=dt.int64)

    @property
    def quasi(self) -> Tensor:
        """The integer state of the last point drawn."""
        return ops.tensor(self._quasi, dtype=dt.int64)

    def _advance(self, n: int, start: int) -> np.ndarray:
        """The next n integer points after Gray-code step `start` (the state moves to the last)."""
        steps = _first_zero_bit(np.arange(start, start + n, dtype=np.int64))
        points = np.bitwise_xor.accumulate(self._state[:, steps].T, axis=0) ^ self._quasi
        if n:
            self._quasi = points[-1].copy()
        return points

    def draw(self, n: int = 1, out: Tensor | None = None, dtype: dt.dtype | None = None) -> Tensor:
        """The next `n` points, (n, dimension), in [0, 1)."""
        if dtype is None:
            dtype = dt.get_default_dtype()
        if self.num_generated == 0:
            points = np.concatenate([self._shift[None], self._advance(n - 1, 0)]) if n > 1 else self._shift[None]
        else:
            points = self._advance(n, self.num_generated - 1)
        self.num_generated += n
        result = ops.tensor(points.astype(np.float64) / 2.0 ** self.MAXBIT, dtype=dtype)
        if out is not None:
            out.resize_as_(result).copy_(result)
            return out
        return result

    def draw_base2(self, m: int, out: Tensor | None = None, dtype: dt.dtype | None = None) -> Tensor:
        """The next 2**m points, keeping the total a power of two (Sobol's balance)."""
        n = 2 ** m
        total = self.num_generated + n
        if total & (total - 1):
            raise ValueError("The balance properties of Sobol' points require n to be a power of 2. "
                             f"{self.num_generated} points have been previously generated, then: "
                             f"n={self.num_generated}+2**{m}={total}. If you still want to do this, please use "
                             "'SobolEngine.draw()' instead.")
        return self.draw(n=n, out=out, dtype=dtype)

    def reset(self) -> "SobolEngine":
        """Back to the first point."""
        self._quasi = self._shift.copy()
        self.num_generated = 0
        return self

    def fast_forward(self, n: int) -> "SobolEngine":
        """Skip the next `n` points."""
        if self.num_generated == 0:
            self._advance(n - 1, 0)
        else:
            self._advance(n, self.num_generated - 1)
        self.num_generated += n
        return self

    def __repr__(self) -> str:
        parts = [f"dimension={self.dimension}"] + (["scramble=True"] if self.scramble else []) + \
            ([f"seed={self.seed}"] if self.seed is not None else [])
        return f"{type(self).__name__}({', '.join(parts)})"
