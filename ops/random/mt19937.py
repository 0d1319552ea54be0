"""torch's CPU generator: an mt19937 engine (NumPy's MT19937 bit generator, the same engine) seeded as
ATen seeds it, the two cached Box-Muller normals ATen keeps beside it, and the 5056-byte state layout of
torch's CPUGeneratorImpl.get_state(), so a state saved by either library restores in the other.

ATen seeds mt19937 from a 64-bit seed with the classic init_genrand of its low 32 bits (MT19937RNGEngine.h)
and keeps the full seed for initial_seed(). Its engine state is (left, next, 624 words): `left` counts down
to the next twist, `next` indexes the next word. NumPy's MT19937 keeps (pos, 624 words) with pos == 624
meaning "twist before the next word", so for the states ATen produces (left + next == 625, or left == 1)
pos == next, or 624 when left == 1.
"""
from __future__ import annotations

import struct

import numpy as np

from ...vm.codegen import kernel_module

_N = 624
STATE_BYTES = 5056  # sizeof(CPUGeneratorImplState): the legacy POD (5048 bytes, padded) + float + bool, padded
_HEAD = struct.Struct("<QiiQ")  # the_initial_seed, left, seeded, next
_WORDS_AT = _HEAD.size  # 624 uint64 words (the 32-bit state zero-extended)
_NORMAL_AT = _WORDS_AT + 8 * _N  # normal_x, normal_y, normal_rho (double), normal_is_valid (int)
_FLOAT_AT = _NORMAL_AT + 8 * 3 + 8  # next_float_normal_sample (float), then its valid flag (bool)


_COMPILED_FROM = 4096  # words: below this NumPy's engine is as quick as moving its state in and out


def _compiled():
    return kernel_module('.mt19937_kernels', __package__)  # ops/random/mt19937_kernels.py once compiled, else None


def _init_genrand(seed32: int) -> np.ndarray:
    """The 624 words init_genrand makes from a 32-bit seed (as ATen's mt19937 constructor)."""
    key = np.empty(_N, np.uint32)
    value = seed32
    key[0] = value
    for j in range(1, _N):
        value = (1812433253 * (value ^ (value >> 30)) + j) & 0xFFFFFFFF
        key[j] = value
    return key


class MT19937Stream:
    """One CPU generator's engine and cached normals. Not thread-safe by itself: the Generator holds its lock."""

    def __init__(self, seed: int):
        self.bits = np.random.MT19937(0)
        # the compiled loop keeps the state in (key, pos) arrays; while `_key` is set they hold it, not `bits`
        # (moving it in and out of NumPy's bit generator costs about 70 us a time)
        self._key: np.ndarray | None = None
        self._pos = _N
        self.seed(seed)

    def seed(self, seed: int) -> None:
        """Restart from `seed` (a uint64): init_genrand of its low 32 bits; the cached normals are dropped."""
        self.initial_seed = seed
        self._key = None
        legacy = getattr(self.bits, "_legacy_seeding", None)
        if legacy is not None:  # NumPy's own init_genrand (RandomState's seeding), much faster than the loop
            legacy(seed & 0xFFFFFFFF)
        else:
            self._set_words(_init_genrand(seed & 0xFFFFFFFF), _N)
        self.regen_next = 0  # ATen's `next` while a twist is due: 0 right after seeding, 624 after a full block
        self.next_double_normal: float | None = None
        self.next_float_normal: float | None = None

    def _set_words(self, key: np.ndarray, pos: int) -> None:
        self._key = None
        self.bits.state = {"bit_generator": "MT19937", "state": {"key": key, "pos": pos}}

    def _engine(self) -> tuple:
        """(key, pos): the engine's words and position, wherever they are held now."""
        if self._key is not None:
            return self._key, self._pos
        state = self.bits.state["state"]
        return np.asarray(state["key"], np.uint32), int(state["pos"])

    def _in_numpy(self) -> None:
        if self._key is not None:
            self._set_words(self._key, self._pos)

    def snapshot(self) -> tuple:
        """The engine's state, to `restore` later (the cached normals are not part of it)."""
        key, pos = self._engine()
        return key.copy(), pos, self.regen_next

    def restore(self, snapshot: tuple) -> None:
        """Go back to a `snapshot`."""
        key, pos, self.regen_next = snapshot
        self._set_words(key.copy(), pos)

    def words(self, n: int) -> np.ndarray:
        """The next `n` 32-bit outputs of the engine (ATen's generator->random(), n times)."""
        if n <= 0:
            return np.empty(0, np.uint32)
        self.regen_next = _N
        compiled = _compiled() if n >= _COMPILED_FROM else None
        if compiled is None:
            self._in_numpy()
            return self.bits.random_raw(n).astype(np.uint32)  # (the engine's words: integers()'s, at half its cost)
        if self._key is None:  # (the same words either way: only the speed differs)
            self._key, self._pos = self._engine()
            self._key = self._key.copy()
        out = np.empty(n, np.uint32)
        self._pos = compiled.fill(self._key, self._pos, out)
        return out

    # -- torch's byte layout ----------------------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        """The state as torch.Generator.get_state() lays it out (5056 bytes)."""
        key, pos = self._engine()
        left, nxt = (1, self.regen_next) if pos >= _N else (_N + 1 - pos, pos)
        raw = bytearray(STATE_BYTES)
        _HEAD.pack_into(raw, 0, self.initial_seed, left, 1, nxt)
        raw[_WORDS_AT:_NORMAL_AT] = key.astype("<u8").tobytes()
        if self.next_double_normal is not None:
            struct.pack_into("<d", raw, _NORMAL_AT + 8, self.next_double_normal)
            struct.pack_into("<i", raw, _NORMAL_AT + 24, 1)
        if self.next_float_normal is not None:
            struct.pack_into("<f?", raw, _FLOAT_AT, self.next_float_normal, True)
        return bytes(raw)

    def from_bytes(self, raw: bytes) -> None:
        """Restore a state laid out as torch's (checked as ATen's mt19937::is_valid)."""
        seed, left, seeded, nxt = _HEAD.unpack_from(raw, 0)
        if not (seeded and 0 < left <= _N and nxt <= _N):
            raise RuntimeError("Invalid mt19937 state")
        key = np.frombuffer(raw, "<u8", _N, _WORDS_AT).astype(np.uint32)
        self._set_words(key, _N if left == 1 else nxt)
        self.initial_seed, self.regen_next = seed, nxt
        (normal_y,) = struct.unpack_from("<d", raw, _NORMAL_AT + 8)
        (normal_valid,) = struct.unpack_from("<i", raw, _NORMAL_AT + 24)
        next_float, float_valid = struct.unpack_from("<f?", raw, _FLOAT_AT)
        self.next_double_normal = normal_y if normal_valid else None
        self.next_float_normal = next_float if float_valid else None

    def copy_from(self, other: "MT19937Stream") -> None:
        """Take `other`'s whole state (engine, cached normals)."""
        self.from_bytes(other.to_bytes())

