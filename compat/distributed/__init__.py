"""torch.distributed before tidal's process groups exist: available, never initialised.

Scripts guard on `is_available() and is_initialized()`; the calls that need a process group
raise torch's ValueError until tidal.comm provides one.
"""
from __future__ import annotations

import os

__all__ = ["is_available", "is_initialized", "is_torchelastic_launched", "get_rank", "get_world_size",
           "init_process_group", "destroy_process_group", "barrier"]

_NO_GROUP = "Default process group has not been initialized, please make sure to call init_process_group."


def is_available() -> bool:
    """True: the distributed package can be imported."""
    return True


def is_initialized() -> bool:
    """Whether a default process group exists (never, for now)."""
    return False


def is_torchelastic_launched() -> bool:
    """Whether a torchrun-style launcher started this process."""
    return os.environ.get("TORCHELASTIC_RUN_ID") is not None


def get_rank(group=None) -> int:
    """Raise: there is no process group."""
    raise ValueError(_NO_GROUP)


def get_world_size(group=None) -> int:
    """Raise: there is no process group."""
    raise ValueError(_NO_GROUP)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Raise: there is no process group."""
    raise ValueError(_NO_GROUP)


def destroy_process_group(group=None) -> None:
    """Raise: there is no process group."""
    raise ValueError(_NO_GROUP)


def init_process_group(backend: str | None = None, init_method: str | None = None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Not available yet: tidal's process groups come with tidal.comm."""
    raise NotImplementedError("torch.distributed.init_process_group: tidal has no process groups yet")
