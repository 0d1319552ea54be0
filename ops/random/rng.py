"""Random number generators, advanced at dispatch on the calling thread.

A CPU generator is torch's: an mt19937 engine seeded and laid out as ATen's CPUGeneratorImpl (mt19937.py),
so `manual_seed(s)` then any random op gives torch's numbers (random_transforms.py says how each op turns
the engine's words into values). Each op takes its words from the engine when it is called; its kernel
only transforms them, so the numbers are the same in sync and async VM mode, whatever the timing.

Another device's generator is, like torch's CUDA one, a counter-based Philox stream keyed by
(seed, offset): each op claims the next offset and its kernel draws from that stream.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from ...tensor import Tensor, device as _device
from ...tensor import dtype as dt
from .mt19937 import STATE_BYTES, MT19937Stream

_DEFAULT_SEED = 67280421310721  # PyTorch's seed for a new Generator
_MASK64 = (1 << 64) - 1
_STATE_BYTES = 16  # a Philox generator's state: seed and offset, little-endian uint64 each


class Generator:
    """A random number generator for one device type, as torch.Generator."""

    def __init__(self, device="cpu"):
        dev = _device(device)
        self.device = _device(dev.type) if dev.type == "cpu" else dev
        self._seed = _DEFAULT_SEED
        self._offset = 0  # Philox: the next stream; CPU: how many ops have drawn (func.vmap watches it)
        self._lock = threading.Lock()
        self._mt = MT19937Stream(_DEFAULT_SEED) if self.device.type == "cpu" else None

    def manual_seed(self, seed) -> "Generator":
        """Seed the generator (any int in [-2**63, 2**64); negatives wrap) and restart its stream."""
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise RuntimeError(f"manual_seed expected a long, but got {type(seed).__name__}")
        if not -2 ** 63 <= seed <= _MASK64:
            raise ValueError("Overflow when unpacking long long")
        with self._lock:
            self._seed, self._offset = seed & _MASK64, 0
            if self._mt is not None:
                self._mt.seed(self._seed)
        return self

    def clone_state(self) -> "Generator":
        """A new generator of the same device in this one's state (its stream continues from here)."""
        twin = Generator(self.device)
        with self._lock:
            twin._seed, twin._offset = self._seed, self._offset
            if self._mt is not None:
                twin._mt.copy_from(self._mt)
        return twin

    def get_offset(self) -> int:
        """Refused on the CPU, as torch's CPU generator (its offset is a Philox/CUDA notion)."""
        if self.device.type == "cpu":
            raise RuntimeError("CPU Generator does not use offset")
        return self._offset

    def set_offset(self, offset: int) -> "Generator":
        """Refused on the CPU, as torch's CPU generator."""
        if self.device.type == "cpu":
            raise RuntimeError("CPU Generator does not use offset")
        with self._lock:
            self._offset = int(offset)
        return self

    def graphsafe_get_state(self):
        """Refused: no CUDA-graph-safe generator state here, as torch's CPU generator."""
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state) -> None:
        """Refused: no CUDA-graph-safe generator state here, as torch's CPU generator."""
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def seed(self) -> int:
        """Seed from the operating system's entropy; returns the seed."""
        value = int.from_bytes(os.urandom(8), "little")
        self.manual_seed(value)
        return value

    def initial_seed(self) -> int:
        """The seed the generator was last seeded with."""
        return self._seed

    def get_state(self) -> Tensor:
        """The state as a uint8 tensor (for set_state): on the CPU torch's 5056 bytes, interchangeable with
        torch.Generator.get_state()."""
        with self._lock:
            if self._mt is not None:
                raw = self._mt.to_bytes()
            else:
                raw = self._seed.to_bytes(8, "little") + self._offset.to_bytes(8, "little")
        return Tensor._from_array(np.frombuffer(raw, np.uint8).copy(), dt.uint8)

    def set_state(self, new_state) -> "Generator":
        """Restore a state returned by get_state."""
        if not isinstance(new_state, Tensor):
            raise TypeError(f"expected a tidal.ByteTensor, but got {type(new_state).__name__}")
        if new_state.dtype is not dt.uint8:
            raise TypeError("RNG state must be a tidal.ByteTensor")
        size = STATE_BYTES if self._mt is not None else _STATE_BYTES
        if new_state.numel() != size:
            what = "a CPUGeneratorImplState" if self._mt is not None else "an RNG state"
            raise RuntimeError(f"Expected {what} of size {size} but found the input RNG state size "
                               f"to be {new_state.numel()}")
        raw = np.ascontiguousarray(new_state.detach()._host_array()).reshape(-1).tobytes()
        with self._lock:
            if self._mt is not None:
                self._mt.from_bytes(raw)
                self._seed, self._offset = self._mt.initial_seed, self._offset + 1
            else:
                self._seed = int.from_bytes(raw[:8], "little")
                self._offset = int.from_bytes(raw[8:], "little")
        return self

    def draw(self, plan):
        """Run `plan(engine)` under the generator's lock (a CPU generator): it takes the words an op needs from
        the mt19937 engine and returns what the op's kernel is given. Called at dispatch."""
        with self._lock:
            self._offset += 1
            return plan(self._mt)

    def next_stream(self) -> tuple:
        """Claim the next Philox stream (a non-CPU generator): returns (seed, offset) and advances the offset.
        Called at dispatch."""
        with self._lock:
            offset = self._offset
            self._offset = (offset + 1) & _MASK64
            return self._seed, offset

    def __repr__(self) -> str:
        return f"<tidal.Generator device={self.device} seed={self._seed}>"


default_generator = Generator()
default_generator.seed()  # as PyTorch: a fresh process starts from a nondeterministic seed
_defaults = {"cpu": default_generator}  # device type -> default generator


def default_for(device) -> Generator:
    """The default generator of a device's type (created, seeded like the CPU's, on first use)."""
    gen = _defaults.get(device.type)
    if gen is None:
        gen = _defaults[device.type] = Generator(device)
        gen.manual_seed(default_generator.initial_seed())
    return gen


def generator_for(fn: str, generator, device) -> Generator:
    """The generator an op on `device` uses; errors as PyTorch's for a wrong type or device."""
    if generator is None:
        return default_for(device)
    if not isinstance(generator, Generator):
        raise TypeError(f"{fn}(): argument 'generator' must be tidal.Generator, not {type(generator).__name__}")
    if generator.device.type != device.type:
        raise RuntimeError(f"Expected a '{device.type}' device type for generator but found "
                           f"'{generator.device.type}'")
    return generator


def manual_seed(seed) -> Generator:
    """Seed every device's default generator; returns the CPU one."""
    seed = int(seed)
    for gen in _defaults.values():
        gen.manual_seed(seed)
    return default_generator


def seed() -> int:
    """Seed the default generators from the operating system's entropy; returns the seed."""
    value = default_generator.seed()
    for gen in _defaults.values():
        if gen is not default_generator:
            gen.manual_seed(value)
    return value


def initial_seed() -> int:
    """The CPU default generator's seed."""
    return default_generator.initial_seed()


def get_rng_state() -> Tensor:
    """The CPU default generator's state, a uint8 tensor."""
    return default_generator.get_state()


def set_rng_state(new_state) -> None:
    """Restore the CPU default generator's state."""
    default_generator.set_state(new_state)


_local = threading.local()


def philox(seed: int, offset: int) -> np.random.Generator:
    """A NumPy generator on the Philox stream of (seed, offset); one reused instance per thread."""
    gen = getattr(_local, "gen", None)
    if gen is None:
        gen = _local.gen = np.random.Generator(np.random.Philox(0))
    gen.bit_generator.state = {
        "bit_generator": "Philox",
        "state": {"counter": np.array([0, 0, offset & _MASK64, offset >> 64], np.uint64),
                  "key": np.array([seed, 0], np.uint64)},
        "buffer": np.zeros(4, np.uint64), "buffer_pos": 4, "has_uint32": 0, "uinteger": 0}
    return gen
