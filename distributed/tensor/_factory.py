"""DTensor factory functions (torch.distributed.tensor.zeros/ones/empty/full/rand/randn): a DTensor of a global
`size` laid out as `placements`, each rank making only its own part (torch.chunk's parts for an uneven Shard)
with the local tensor filled as torch's (so a Partial placement holds the fill on every rank, as torch's).

rand/randn give the parts of the one global tensor that the default generator draws on every rank (torch's
DTensor asks every rank to seed alike, and its own random DTensors on a CPU mesh are not supported): every
rank draws the whole tensor and keeps its part, so Replicate ranks agree and Shard parts tile it.
"""
from __future__ import annotations

import operator
from typing import Callable, Sequence

from ... import ops
from ...comm import boxing
from ...comm.global_tensor import GlobalTensor
from ...comm.placement_sbp import broadcast
from ..device_mesh import DeviceMesh
from ._api import _mesh, _sbps
from .placement_types import Placement

__all__ = ["empty", "zeros", "ones", "full", "rand", "randn"]


def _size(size: tuple) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    return tuple(operator.index(s) for s in size)


def _make(size: tuple, local_op: Callable, dtype, layout, requires_grad: bool,
          device_mesh: DeviceMesh | None, placements: Sequence[Placement] | None, whole: bool = False):
    if layout is not None and str(layout).rsplit(".", 1)[-1] != "strided":   # torch.strided (compat's) only
        raise AssertionError("layout value not supported!")
    mesh = _mesh(device_mesh)
    sbps = _sbps(mesh, placements, len(size))
    if whole:   # random: the same global draw on every rank, then this rank's part of it
        full = GlobalTensor(local_op(size, dtype), mesh.placement, (broadcast,) * mesh.ndim, size)
        local = boxing.box(full._local, mesh.placement, full.sbp, sbps, size)
    else:
        local = local_op(tuple(boxing.shard_shape(size, mesh.placement, sbps, mesh.get_rank())), dtype)
    if requires_grad:
        local.requires_grad_(True)
    return GlobalTensor(local, mesh.placement, sbps, size)


def empty(*size, dtype=None, layout=None, requires_grad: bool = False, device_mesh: DeviceMesh | None = None,
          placements: Sequence[Placement] | None = None) -> GlobalTensor:
    """An uninitialized DTensor of global `size`."""
    return _make(_size(size), lambda s, d: ops.empty(s, dtype=d), dtype, layout, requires_grad,
                 device_mesh, placements)


def zeros(*size, requires_grad: bool = False, dtype=None, layout=None, device_mesh: DeviceMesh | None = None,
          placements: Sequence[Placement] | None = None) -> GlobalTensor:
    """A DTensor of zeros of global `size`."""
    return _make(_size(size), lambda s, d: ops.zeros(s, dtype=d), dtype, layout, requires_grad,
                 device_mesh, placements)


def ones(*size, dtype=None, layout=None, requires_grad: bool = False, device_mesh: DeviceMesh | None = None,
         placements: Sequence[Placement] | None = None) -> GlobalTensor:
    """A DTensor of ones of global `size` (every rank's local tensor is ones, Partial too, as torch's)."""
    return _make(_size(size), lambda s, d: ops.ones(s, dtype=d), dtype, layout, requires_grad,
                 device_mesh, placements)


def full(size, fill_value, *, dtype=None, layout=None, requires_grad: bool = False,
         device_mesh: DeviceMesh | None = None, placements: Sequence[Placement] | None = None) -> GlobalTensor:
    """A DTensor of global `size` filled with `fill_value` (on every rank's local tensor, as torch's)."""
    return _make(_size((size,)), lambda s, d: ops.full(s, fill_value, dtype=d), dtype, layout,
                 requires_grad, device_mesh, placements)


def rand(*size, requires_grad: bool = False, dtype=None, layout=None, device_mesh: DeviceMesh | None = None,
         placements: Sequence[Placement] | None = None) -> GlobalTensor:
    """A DTensor of global `size`, uniform on [0, 1): this rank's part of one global draw."""
    return _make(_size(size), lambda s, d: ops.rand(s, dtype=d), dtype, layout, requires_grad,
                 device_mesh, placements, whole=True)


def randn(*size, requires_grad: bool = False, dtype=None, layout=None, device_mesh: DeviceMesh | None = None,
          placements: Sequence[Placement] | None = None) -> GlobalTensor:
    """A DTensor of global `size`, standard normal: this rank's part of one global draw."""
    return _make(_size(size), lambda s, d: ops.randn(s, dtype=d), dtype, layout, requires_grad,
                 device_mesh, placements, whole=True)
