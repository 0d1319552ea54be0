"""torch.distributed on tidal.comm: process groups, collectives and point-to-point calls.

Most names are tidal.comm's own, looked up on first use, so `import tidal.compat` stays free of
the comm package. What differs from tidal.comm: backend names as torch spells them (a CPU torch
has no NCCL or MPI, and neither has tidal), `Backend`, `group.WORLD` / `GroupMember`, and the
object collectives, which carry plain data only (None, bool, int, float, str, bytes, and
lists, tuples and dicts of them: tidal never unpickles what comes over the wire).
`torch.distributed.tensor`, `.device_mesh`, `.fsdp`, `.checkpoint`, `.rpc`, `.pipelining`, `.autograd` (distributed
autograd) and `.optim` (DistributedOptimizer) are tidal.distributed's;
`.algorithms` (the join context manager) is compat's own subpackage.
"""
from __future__ import annotations

import importlib
import os

from ...tensor import device as _device

_FROM_COMM = ("ProcessGroup", "Work", "ReduceOp", "destroy_process_group", "get_rank", "get_world_size",
              "get_backend", "barrier", "new_group", "get_group_rank", "get_global_rank", "all_reduce", "broadcast",
              "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
              "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv")

__all__ = sorted(_FROM_COMM + ("init_process_group", "is_available", "is_initialized", "is_torchelastic_launched",
                               "is_gloo_available", "is_nccl_available", "is_mpi_available", "is_ucc_available",
                               "is_backend_available", "get_default_backend_for_device", "Backend", "GroupMember",
                               "group", "get_process_group_ranks", "all_gather_object", "broadcast_object_list",
                               "DeviceMesh", "init_device_mesh"))

_MISSING_BACKENDS = {"nccl": "NCCL built in", "ucc": "UCC built in", "xccl": "XCCL built in",
                     "mpi": "MPI built in. MPI is only included if you build PyTorch from source on a host that has "
                            "MPI installed."}


def _comm():
    return importlib.import_module("tidal.comm")  # comm loads on first use (keeps import light)


# torch.distributed's subsystems on global tensors (tidal.distributed), imported on first use
_SUBSYSTEMS = ("device_mesh", "tensor", "fsdp", "checkpoint", "rpc", "pipelining", "autograd", "optim")
_FROM_MESH = ("DeviceMesh", "init_device_mesh")


def __getattr__(name: str):
    if name in _SUBSYSTEMS:
        return importlib.import_module(f"tidal.distributed.{name}")
    if name in _FROM_MESH:
        # distributed loads on first use (keeps import light)
        value = getattr(importlib.import_module("tidal.distributed.device_mesh"), name)
        globals()[name] = value
        return value
    if name in _FROM_COMM:
        value = getattr(_comm(), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_FROM_COMM) | set(_SUBSYSTEMS) | set(_FROM_MESH))


class Backend(str):
    """A backend name, lowercased (torch.distributed.Backend)."""

    UNDEFINED, GLOO, NCCL, UCC, MPI = "undefined", "gloo", "nccl", "ucc", "mpi"
    default_device_backend_map = {"cpu": "gloo", "cuda": "nccl"}

    def __new__(cls, name: str) -> "Backend":
        if not isinstance(name, str):
            raise ValueError(f"Backend constructor parameter must be string-ish, but got: {type(name)}")
        return super().__new__(cls, name.lower())


def get_default_backend_for_device(device) -> str:
    """The backend torch pairs with a device type: 'gloo' for the CPU, 'nccl' for CUDA."""
    if device is None:
        raise TypeError("device() received an invalid combination of arguments - got (NoneType)")
    backend = Backend.default_device_backend_map.get(_device(device).type)
    if backend is None:
        raise ValueError(f"Default backend not registered for device : {device}")
    return backend


def is_available() -> bool:
    """True: the distributed package can be used."""
    return True


def is_initialized() -> bool:
    """Whether the default process group exists."""
    return _comm().is_initialized()


def is_torchelastic_launched() -> bool:
    """Whether a torchrun-style launcher (torchrun, tidal.comm.launch) started this process."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def is_backend_available(backend: str) -> bool:
    """Whether `backend` works here: only gloo (CPU tensors)."""
    return Backend(backend) == Backend.GLOO


def is_gloo_available() -> bool:
    """True: the CPU data plane."""
    return True


def is_nccl_available() -> bool:
    """False: tidal.comm has no GPU data plane yet."""
    return False


def is_mpi_available() -> bool:
    """False."""
    return False


def is_ucc_available() -> bool:
    """False."""
    return False


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job (env:// or tcp://host:port); backend None or "gloo", as on a CPU build of torch."""
    if backend is not None:
        for part in Backend(backend).split(","):  # "cpu:gloo,cuda:nccl" names one backend per device
            name = part.rpartition(":")[2]
            if name in _MISSING_BACKENDS:
                raise RuntimeError(f"Distributed package doesn't have {_MISSING_BACKENDS[name]}")
        backend = "gloo" if "gloo" in backend.lower() else backend
    _comm().init_process_group(backend, init_method, timeout, world_size, rank, store, group_name, pg_options,
                               device_id)


class _World(type):
    @property
    def WORLD(cls):
        """The default process group (None before init_process_group)."""
        comm = _comm()
        return comm.default_group() if comm.is_initialized() else None


class GroupMember(metaclass=_World):
    """`GroupMember.WORLD`: the default group."""

    NON_GROUP_MEMBER = -100


class group(metaclass=_World):  # noqa: N801 - torch's name
    """`group.WORLD`: the default group."""


def get_process_group_ranks(group) -> list:
    """The global ranks of `group`, in group rank order."""
    return list((group or _comm().default_group()).ranks)


def _member_control(name: str, group):
    group = group or _comm().default_group()
    if not group.is_member:
        import warnings
        warnings.warn(f"Running {name} on global rank {_comm().get_rank()} which does not belong to the given "
                      "group.", stacklevel=3)
        return None
    return group.control


def all_gather_object(object_list: list, obj, group=None) -> None:
    """Gather every rank's `obj` into `object_list` (one entry per rank, in rank order); plain data only."""
    control = _member_control("all_gather_object", group)
    if control is None:
        return
    gathered = control.all_gather_object(obj)
    if len(object_list) != len(gathered):
        raise ValueError(f"all_gather_object: object_list must have one entry per rank ({len(gathered)}), "
                         f"got {len(object_list)}")
    object_list[:] = gathered


def broadcast_object_list(object_list: list, src: int | None = None, group=None, device=None,
                          group_src: int | None = None) -> None:
    """Replace `object_list`'s entries with rank `src`'s (global; or `group_src`); plain data only."""
    control = _member_control("broadcast_object_list", group)
    if control is None:
        return
    ranks = control.ranks
    root = ranks[group_src] if group_src is not None else (0 if src is None else int(src))
    object_list[:] = control.broadcast_object(list(object_list), src=root)
