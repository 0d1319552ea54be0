"""Compiled (numba) mt19937 output: the same words as NumPy's MT19937 bit generator, several times faster
for long runs (NumPy's random_raw calls the engine through a pointer per word: about 3 ns a word; a dropout
on 256k elements takes 512k words).

Loaded by ops/random/mt19937.py through vm.codegen.kernel_module (`import tidal` never imports numba). Until it is
compiled the engine runs on NumPy: both give the same words, so the numbers never depend on which ran.
"""
from __future__ import annotations

import numpy as np
from numba import njit

_N, _M = 624, 397


@njit(cache=True, nogil=True, inline="always")
def _mix(upper, lower, far):
    y = (upper & np.uint32(0x80000000)) | (lower & np.uint32(0x7FFFFFFF))
    return far ^ (y >> np.uint32(1)) ^ ((np.uint32(0) - (y & np.uint32(1))) & np.uint32(0x9908B0DF))


@njit(cache=True, nogil=True)
def _twist(key):
    """The next block of 624 state words (mt19937's generation step), in place; three runs without wrap-around
    indexing, so LLVM vectorizes the first two."""
    for i in range(_N - _M):
        key[i] = _mix(key[i], key[i + 1], key[i + _M])
    for i in range(_N - _M, _N - 1):
        key[i] = _mix(key[i], key[i + 1], key[i + _M - _N])
    key[_N - 1] = _mix(key[_N - 1], key[0], key[_M - 1])


@njit(cache=True, nogil=True)
def fill(key, pos, out):
    """Write the next out.size tempered words from state (key, pos) into `out`; returns the new pos (key is
    advanced in place)."""
    n = out.size
    i = 0
    while i < n:
        if pos >= _N:
            _twist(key)
            pos = 0
        take = min(_N - pos, n - i)
        for j in range(take):
            y = key[pos + j]
            y ^= y >> np.uint32(11)
            y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
            y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
            y ^= y >> np.uint32(18)
            out[i + j] = y
        pos += take
        i += take
    return pos


def warm() -> None:
    """Compile (or load from numba's cache) the loop for the arrays ops/random/mt19937.py passes."""
    fill(np.arange(_N, dtype=np.uint32), _N, np.empty(700, np.uint32))
