"""Process groups, the torch.distributed way: `init_process_group` reads torchrun's variables
(RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT) plus TIDAL_JOB_SECRET, starts the coordinator on
rank 0 and a control client everywhere. Collectives (tidal.comm.collectives) run on these
groups; each `ProcessGroup` carries its control calls as `group.control`.
"""
from __future__ import annotations

import atexit
import datetime
import os
import secrets
import sys
import threading
from typing import Callable

from . import check as _check
from .base import CommError

__all__ = ["ProcessGroup", "Work", "init_process_group", "destroy_process_group", "is_initialized", "is_available",
           "get_rank", "get_world_size", "get_backend", "barrier", "new_group", "default_group", "get_group_rank",
           "get_global_rank"]

_BACKENDS = {None: "gloo", "gloo": "gloo", "cpu": "gloo", "cpu:gloo": "gloo"}
DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)    # torch's default_pg_timeout
SHUTDOWN_GRACE = 5.0     # how long rank 0 waits for the other ranks to leave before closing the coordinator


class ProcessGroup:
    """A set of ranks: `rank()` and `size()` as in torch, the global `ranks`, and `control`
    (the control calls among them; None on a rank outside the group)."""

    def __init__(self, name: str, ranks, backend: str, control, global_rank: int):
        self.name, self.ranks, self.backend = name, tuple(ranks), backend
        self.is_member = global_rank in self.ranks
        self.control = control if self.is_member else None
        self._rank = self.ranks.index(global_rank) if self.is_member else -1
        self.state: dict = {}       # per-group state of the data plane (its ring sockets...)
        self._destroy_hooks: list = []

    def rank(self) -> int:
        """This process's rank in the group (-1 outside it)."""
        return self._rank

    def size(self) -> int:
        """The number of ranks in the group."""
        return len(self.ranks)

    def on_destroy(self, hook: Callable[[], None]) -> None:
        """Run `hook()` when the group is destroyed (the data plane closes its sockets there)."""
        self._destroy_hooks.append(hook)

    def _destroy(self) -> None:
        hooks, self._destroy_hooks = self._destroy_hooks, []
        for hook in reversed(hooks):
            try:
                hook()
            except Exception:  # noqa: BLE001 - one failing hook must not keep others from closing
                pass

    def __repr__(self) -> str:
        return f"ProcessGroup(name={self.name!r}, ranks={list(self.ranks)}, rank={self._rank})"


class Work:
    """A handle on an asynchronous operation: `wait()` blocks until it is done and re-raises its
    error. Producers call `_finish(result, error)` from any thread, or subclass and override
    `wait` / `is_completed` (e.g. to wait on a VM stream instead)."""

    def __init__(self):
        self._done = threading.Event()
        self._result = None
        self._error: BaseException | None = None

    @classmethod
    def completed(cls, result=None) -> "Work":
        """A Work that is already done."""
        work = cls()
        work._finish(result)
        return work

    def _finish(self, result=None, error: BaseException | None = None) -> None:
        self._result, self._error = result, error
        self._done.set()

    def is_completed(self) -> bool:
        """Whether the operation finished (successfully or not)."""
        return self._done.is_set()

    def is_success(self) -> bool:
        """Whether the operation finished without error."""
        return self.is_completed() and self._error is None

    def exception(self) -> BaseException | None:
        """The error the operation raised, if it finished with one."""
        return self._error

    def wait(self, timeout: datetime.timedelta | float | None = None) -> bool:
        """Block until the operation finishes; re-raise its error; True."""
        seconds = _seconds(timeout) if timeout is not None else None
        if not self._done.wait(seconds):
            raise CommError(f"tidal.comm: Work.wait timed out after {seconds:g} s")
        if self._error is not None:
            raise self._error
        return True

    def result(self):
        """The operation's result (waits for it)."""
        self.wait()
        return self._result


class _State:
    """The default group and what it owns."""

    def __init__(self):
        self.world: ProcessGroup | None = None
        self.client = None
        self.coordinator = None
        self.groups: list[ProcessGroup] = []
        self.group_count = 0
        self.previous_excepthook = None
        self.uncaught: str | None = None


_state = _State()


def _seconds(timeout) -> float:
    return timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)


def _env_int(name: str, given) -> int:
    if given is not None and given != -1:
        return int(given)
    value = os.environ.get(name)
    if value is None:
        raise ValueError(f"Error initializing torch.distributed using env:// rendezvous: environment variable "
                         f"{name} expected, but not set")
    return int(value)


def _parse_init_method(init_method: str | None) -> tuple[str | None, int | None]:
    if init_method in (None, "env://"):
        return None, None
    if init_method.startswith("tcp://"):
        host, _, port = init_method[len("tcp://"):].rpartition(":")
        return host.strip("[]"), int(port)
    raise ValueError(f"init_process_group: init_method {init_method!r} is not supported (use 'env://' or "
                     "'tcp://host:port')")


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | float | None = None, world_size: int | None = None,
                       rank: int | None = None, store=None, group_name: str = "", pg_options=None,
                       device_id=None) -> None:
    """Join the job: rank 0 starts the coordinator, every rank rendezvouses with it."""
    if _state.world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    if backend not in _BACKENDS:
        raise ValueError(f"init_process_group: backend {backend!r} is not available in tidal (CPU only for now); "
                         "use 'gloo'")
    if store is not None:
        raise ValueError("init_process_group: a store object is not supported; use env:// or tcp://")
    host, port = _parse_init_method(init_method)
    seconds = _seconds(timeout if timeout is not None else DEFAULT_TIMEOUT)
    single = world_size == 1 or (world_size in (None, -1) and os.environ.get("WORLD_SIZE") == "1")
    world_size = 1 if single else _env_int("WORLD_SIZE", world_size)
    rank = 0 if single and rank in (None, -1) else _env_int("RANK", rank)
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is out of range for world size {world_size}")
    host = host or os.environ.get("MASTER_ADDR") or ("127.0.0.1" if single else None)
    if host is None:
        raise ValueError("Error initializing torch.distributed using env:// rendezvous: environment variable "
                         "MASTER_ADDR expected, but not set")
    if port is None:
        port = int(os.environ.get("MASTER_PORT") or 0) if single else _env_int("MASTER_PORT", None)
    if port <= 0 and not single:
        raise ValueError(f"init_process_group: MASTER_PORT must be a port number, got {port}")
    secret = os.environ.get("TIDAL_JOB_SECRET") or (secrets.token_hex(32) if world_size == 1 else None)
    if secret is None:
        raise RuntimeError("init_process_group: TIDAL_JOB_SECRET is not set; start the job with "
                           "`python -m tidal.comm.launch` (or give every rank the same random TIDAL_JOB_SECRET)")
    from .control import ControlClient, Coordinator    # imports zmq: only once a group is made

    coordinator = Coordinator(world_size, host, port, secret, seconds).start() if rank == 0 else None
    client = None
    try:
        client = ControlClient(rank, world_size, host, coordinator.port if coordinator else port, secret, seconds)
        client.rendezvous()
    except BaseException:
        if client is not None:
            client.close()
        if coordinator is not None:
            coordinator.close(0.5)
        raise
    _state.client, _state.coordinator = client, coordinator
    _state.world = ProcessGroup("world", range(world_size), _BACKENDS[backend], client, rank)
    _state.groups = [_state.world]
    _state.previous_excepthook, sys.excepthook = sys.excepthook, _note_uncaught


def _note_uncaught(kind, value, traceback) -> None:
    """Abort the job on an uncaught exception, at once: the process may live on (a non-daemon
    thread keeps it), and the other ranks must not wait for an exit that never comes."""
    _state.uncaught = f"{kind.__name__}: {value}"
    (_state.previous_excepthook or sys.__excepthook__)(kind, value, traceback)
    interactive = hasattr(sys, "ps1")   # at a REPL's prompt an error does not end the program
    if _state.client is not None and _state.client.abort_error is None and not interactive:
        _state.client.abort(f"it raised an uncaught {_state.uncaught}")


def is_available() -> bool:
    """Whether distributed support is built in (always)."""
    return True


def is_initialized() -> bool:
    """Whether `init_process_group` was called (and not destroyed)."""
    return _state.world is not None


def default_group() -> ProcessGroup:
    """The default (world) group; raises ValueError before `init_process_group`."""
    if _state.world is None:
        raise ValueError("Default process group has not been initialized, please make sure to call "
                         "init_process_group.")
    return _state.world


def _group(group: ProcessGroup | None) -> ProcessGroup:
    return default_group() if group is None else group


def get_rank(group: ProcessGroup | None = None) -> int:
    """This process's rank in `group` (default: world); -1 outside the group."""
    return _group(group).rank()


def get_world_size(group: ProcessGroup | None = None) -> int:
    """The number of ranks in `group` (default: world); -1 outside the group."""
    group = _group(group)
    return group.size() if group.is_member else -1


def get_backend(group: ProcessGroup | None = None) -> str:
    """The group's backend name ('gloo' for the CPU data plane)."""
    return _group(group).backend


def get_group_rank(group: ProcessGroup, global_rank: int) -> int:
    """The rank in `group` of global rank `global_rank`."""
    if global_rank not in group.ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return group.ranks.index(global_rank)


def get_global_rank(group: ProcessGroup, group_rank: int) -> int:
    """The global rank of rank `group_rank` of `group`."""
    if not 0 <= group_rank < group.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return group.ranks[group_rank]


def barrier(group: ProcessGroup | None = None, async_op: bool = False, device_ids=None) -> Work | None:
    """Wait until every rank of `group` gets here."""
    group = _group(group)
    if group.is_member:
        if _check.ENABLED:
            _check.verify("barrier", group)
        group.control.barrier()
    return Work.completed() if async_op else None


def new_group(ranks=None, timeout=None, backend: str | None = None, pg_options=None,
              use_local_synchronization: bool = False, group_desc: str | None = None) -> ProcessGroup:
    """A group of `ranks` (sorted; default all). Every rank must call it, in the same order."""
    world = default_group()
    ranks = sorted(range(world.size()) if ranks is None else (int(r) for r in ranks))
    if len(set(ranks)) != len(ranks) or any(not 0 <= r < world.size() for r in ranks):
        raise ValueError(f"new_group: ranks {ranks} must be distinct and in [0, {world.size()})")
    if backend not in _BACKENDS:
        raise ValueError(f"new_group: backend {backend!r} is not available in tidal; use 'gloo'")
    _state.group_count += 1
    name = f"group{_state.group_count}"
    if not use_local_synchronization:
        # All ranks agree on which group this is, so call orders that differ fail here, not in a collective.
        calls = world.control.all_gather_object([name, ranks])
        if any(call != [name, ranks] for call in calls):
            raise ValueError("new_group: ranks called new_group differently: "
                             + "; ".join(f"rank {r}: {c[0]} with ranks {c[1]}" for r, c in enumerate(calls)))
    scope = _state.client.scope(name, ranks) if world.rank() in ranks else None
    group = ProcessGroup(name, ranks, _BACKENDS[backend] if backend else world.backend, scope, world.rank())
    _state.groups.append(group)
    return group


def destroy_process_group(group: ProcessGroup | None = None) -> None:
    """Destroy `group`, or everything (default); rank 0 waits briefly for the others to leave."""
    global _state
    if group is not None and group is not _state.world:
        group._destroy()
        if group in _state.groups:
            _state.groups.remove(group)
        return
    if _state.world is None:
        return
    state, _state = _state, _State()
    for each in reversed(state.groups):
        each._destroy()
    if sys.excepthook is _note_uncaught:
        sys.excepthook = state.previous_excepthook
    if state.uncaught is not None and state.client.abort_error is None:
        state.client.abort(f"it exited with an uncaught {state.uncaught}")
    state.client.close()
    if state.coordinator is not None:
        state.coordinator.close(SHUTDOWN_GRACE)


atexit.register(destroy_process_group)
