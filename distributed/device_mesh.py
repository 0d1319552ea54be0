"""torch.distributed.device_mesh on tidal: a `DeviceMesh` is the torch face of a tidal placement
(a device type and an n-D grid of ranks); its per-dimension process groups are the placement's
line groups, the very groups boxing runs its collectives on."""
from __future__ import annotations

import math
import operator

import numpy as np

from .. import ops
from ..comm import boxing
from ..comm import process_group as _pg
from ..comm.placement_sbp import Placement
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["DeviceMesh", "init_device_mesh"]

_BY_PLACEMENT: dict = {}   # the mesh last used for a placement: a DTensor's device_mesh keeps its dim names
_ACTIVE: list = []         # meshes entered with `with mesh:`


def _ensure_process_group() -> None:
    """Join the job from the environment (RANK, WORLD_SIZE, ...) if no process group exists yet, as torch does."""
    if not _pg.is_initialized():
        _pg.init_process_group("gloo")


def _ranks_of(mesh) -> np.ndarray:
    value = mesh.tolist() if isinstance(mesh, Tensor) else mesh
    grid = np.array(value, dtype=object)
    if grid.ndim == 0 or grid.size == 0:
        raise ValueError(f"DeviceMesh: mesh must be a non-empty (nested) list or tensor of ranks, got {value!r}")
    return grid


class DeviceMesh:
    """An n-D grid of ranks (torch.distributed.device_mesh.DeviceMesh) over one tidal placement."""

    def __init__(self, device_type: str, mesh, *, mesh_dim_names: tuple | None = None, backend_override=None,
                 _init_backend: bool = True):
        if not isinstance(device_type, str):
            raise TypeError(f"DeviceMesh: device_type must be str, not {type(device_type).__name__}")
        if device_type != "cpu":
            raise RuntimeError(f"DeviceMesh: tidal's meshes are on 'cpu' only (global tensors run over the CPU ring "
                               f"between processes), got {device_type!r}")
        grid = _ranks_of(mesh)
        if mesh_dim_names is not None:
            mesh_dim_names = tuple(mesh_dim_names)
            if len(mesh_dim_names) != grid.ndim:
                raise RuntimeError(f"mesh_dim_names {mesh_dim_names} must name each of the mesh's {grid.ndim} dims")
            if len(set(mesh_dim_names)) != len(mesh_dim_names):
                raise RuntimeError(f"Each mesh_dim_name must be unique. Found repeated mesh_dim_name in "
                                   f"mesh_dim_names {mesh_dim_names}")
        if _init_backend:
            _ensure_process_group()
        self.device_type = device_type
        self._placement = Placement(device_type, grid.tolist())
        self._dim_names = mesh_dim_names
        _BY_PLACEMENT[self._placement] = self

    # -- what torch code reads --------------------------------------------------------------------
    @property
    def placement(self) -> Placement:
        """The tidal placement this mesh is the face of."""
        return self._placement

    @property
    def mesh(self):
        """The ranks, shaped as the mesh (an int32 tensor, as torch's)."""
        return ops.tensor(self._placement.ranks.tolist(), dtype=dt.int32)

    @property
    def mesh_dim_names(self) -> tuple | None:
        """The names of the mesh dimensions (None if unnamed)."""
        return self._dim_names

    @property
    def ndim(self) -> int:
        """The number of mesh dimensions."""
        return self._placement.ndim

    @property
    def shape(self) -> tuple:
        """The number of ranks along each mesh dimension."""
        return self._placement.hierarchy

    def size(self, mesh_dim: int | str | None = None) -> int:
        """The number of ranks in the mesh, or along `mesh_dim`."""
        if mesh_dim is None:
            return math.prod(self.shape)
        return self.shape[self._dim(mesh_dim)]

    def get_rank(self) -> int:
        """This process's global rank."""
        return _pg.get_rank()

    def get_coordinate(self) -> tuple | None:
        """This rank's coordinates in the mesh (None if it is not in the mesh)."""
        coords = self._placement.coords(_pg.get_rank())
        return coords

    def get_local_rank(self, mesh_dim: int | str | None = None) -> int:
        """This rank's index along `mesh_dim` (optional on a 1-D mesh)."""
        axis = self._one_dim(mesh_dim)
        coords = self._placement.coords(_pg.get_rank())
        if coords is None:
            raise RuntimeError(f"rank {_pg.get_rank()} is not in {self!r}")
        return coords[axis]

    def get_group(self, mesh_dim: int | str | None = None):
        """The process group of this rank's line of ranks along `mesh_dim` (optional on a 1-D mesh)."""
        axis = self._one_dim(mesh_dim)
        return boxing.line_group(self._placement.line(_pg.get_rank(), axis))

    def get_all_groups(self) -> list:
        """The process group of every mesh dimension, in order."""
        return [self.get_group(axis) for axis in range(self.ndim)]

    def __getitem__(self, mesh_dim_names) -> "DeviceMesh":
        """The sub-mesh through this rank along the named dimensions (`mesh['tp']`, `mesh['dp', 'tp']`)."""
        names = (mesh_dim_names,) if isinstance(mesh_dim_names, str) else tuple(mesh_dim_names)
        if not self._dim_names:
            raise RuntimeError("Cannot slice a DeviceMesh without mesh_dim_names!")
        axes = [self._dim(name) for name in names]
        if axes != sorted(axes):
            raise KeyError(f"Invalid mesh_dim_names {names} specified: they must be in the order of "
                           f"{self._dim_names}")
        if names == self._dim_names:
            return self
        coords = self._placement.coords(_pg.get_rank())
        if coords is None:
            raise RuntimeError(f"rank {_pg.get_rank()} is not in {self!r}")
        index = tuple(slice(None) if axis in axes else coords[axis] for axis in range(self.ndim))
        return DeviceMesh(self.device_type, self._placement.ranks[index].tolist(), mesh_dim_names=names)

    def __enter__(self) -> "DeviceMesh":
        _ACTIVE.append(self)
        return self

    def __exit__(self, *exc) -> None:
        _ACTIVE.pop()

    @staticmethod
    def from_group(group, device_type: str, mesh=None, *, mesh_dim_names: tuple | None = None) -> "DeviceMesh":
        """A 1-D mesh over the ranks of `group` (in group rank order)."""
        ranks = list(group.ranks) if mesh is None else mesh
        return DeviceMesh(device_type, ranks, mesh_dim_names=mesh_dim_names)

    # -- helpers -------------------------------------------------------------------------------------
    def _dim(self, mesh_dim: int | str) -> int:
        if isinstance(mesh_dim, str):
            if not self._dim_names or mesh_dim not in self._dim_names:
                raise KeyError(f"Mesh dimension '{mesh_dim}' does not exist. Available mesh dimensions are: "
                               f"mesh_dim_names={self._dim_names}")
            return self._dim_names.index(mesh_dim)
        axis = operator.index(mesh_dim)
        if not -self.ndim <= axis < self.ndim:
            raise IndexError(f"mesh_dim {axis} is out of range for a {self.ndim}-D mesh")
        return axis % self.ndim

    def _one_dim(self, mesh_dim) -> int:
        if mesh_dim is None:
            if self.ndim > 1:
                raise RuntimeError(f"Found the DeviceMesh have {self.ndim} dimensions. Optional kwarg `mesh_dim` "
                                   "needs to be specified when device_mesh.ndim > 1.")
            return 0
        return self._dim(mesh_dim)

    def __eq__(self, other) -> bool:
        return isinstance(other, DeviceMesh) and self._placement == other._placement and \
            self._dim_names == other._dim_names

    def __hash__(self) -> int:
        return hash((self._placement, self._dim_names))

    def __repr__(self) -> str:
        sizes = self.shape
        body = f"({', '.join(f'{k}={v}' for k, v in zip(self._dim_names, sizes))})" if self._dim_names else f"{sizes}"
        strides = tuple(math.prod(sizes[k + 1:]) for k in range(len(sizes)))
        return f"DeviceMesh({body}, '{self.device_type}', stride={strides})"


def current_mesh() -> DeviceMesh:
    """The innermost mesh entered with `with mesh:` (what DTensor functions use when given no mesh)."""
    if not _ACTIVE:
        raise RuntimeError("No device mesh is currently active!")
    return _ACTIVE[-1]


def remember(mesh: DeviceMesh) -> DeviceMesh:
    """Make `mesh` the one that DTensors on its placement report (the last mesh a DTensor was made with)."""
    _BY_PLACEMENT[mesh.placement] = mesh
    return mesh


def mesh_of(placement: Placement) -> DeviceMesh:
    """The mesh of a tidal placement (the one the program made for it, when there is one)."""
    mesh = _BY_PLACEMENT.get(placement)
    if mesh is None:
        mesh = DeviceMesh(placement.type, placement.ranks.tolist(), _init_backend=False)
    return mesh


def init_device_mesh(device_type: str, mesh_shape: tuple, *, mesh_dim_names: tuple | None = None,
                     backend_override=None) -> DeviceMesh:
    """A mesh of `mesh_shape` over ranks 0..n-1 in row-major order, joining the job first if needed."""
    mesh_shape = tuple(operator.index(n) for n in mesh_shape)
    if mesh_dim_names is not None and len(mesh_dim_names) != len(mesh_shape):
        raise RuntimeError(f"mesh_shape and mesh_dim_names should have same length! Found len(mesh_dim_names): "
                           f"{len(mesh_dim_names)} and len(mesh_shape):{len(mesh_shape)}.")
    if device_type != "cpu":
        raise RuntimeError(f"init_device_mesh: tidal's meshes are on 'cpu' only (global tensors run over the CPU "
                           f"ring between processes), got {device_type!r}")
    _ensure_process_group()
    world = _pg.get_world_size()
    if math.prod(mesh_shape) != world:
        raise RuntimeError(f"init_device_mesh: mesh_shape {mesh_shape} has {math.prod(mesh_shape)} ranks but the "
                           f"world has {world}")
    grid = np.arange(world).reshape(mesh_shape)
    return DeviceMesh(device_type, grid.tolist(), mesh_dim_names=mesh_dim_names)
