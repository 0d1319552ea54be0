"""The `meta` device: tensors with a shape, dtype and strides but no data, as torch's meta tensors.

Every op already computes its result's shape and dtype at the call (its plan) and raises user errors
there; what reaches the VM is only the work on values. The meta VM takes instructions and drops them:
it never allocates and never runs a kernel. Reading values (a sync point) has nothing to read and
raises torch's error.
"""
from __future__ import annotations

from .machine import VirtualMachine, register_backend

NO_DATA = "Cannot copy out of meta tensor; no data!"  # torch's words for every read of a meta tensor


class MetaMachine(VirtualMachine):
    """A VM with nothing to run: instructions are counted and dropped; sync points on a blob refuse."""

    def push(self, ins) -> None:
        """Count the instruction; meta tensors have no values to compute."""
        self.stats.instructions += 1

    def flush(self, inline: bool = False) -> None:
        """Nothing is ever pending."""

    def wait_blob(self, blob) -> None:
        """A read of a meta tensor's values: torch's NotImplementedError."""
        raise NotImplementedError(NO_DATA)

    def synchronize(self, every_thread: bool = False) -> None:
        """Nothing is ever pending."""


class MetaBackend:
    """Memory for `meta`: none. The VM never asks for any (it runs nothing); a request is a bug."""

    machine = MetaMachine  # the VM class get_vm builds for this device type
    small_bytes = 0

    def __init__(self, device):
        self.device = device

    @staticmethod
    def raw_alloc(nbytes: int):
        """Meta tensors have no memory."""
        raise NotImplementedError(NO_DATA)

    @staticmethod
    def size_of(buf) -> int:
        """No buffer exists."""
        raise NotImplementedError(NO_DATA)

    @staticmethod
    def array(v):
        """No array exists."""
        raise NotImplementedError(NO_DATA)

    own = array


register_backend("meta", MetaBackend)
