"""The control plane: a client on every rank talking to the `Coordinator` on rank 0.

`ControlClient` does rendezvous, barriers, broadcast and all-gather of small objects, and a
key-value store; `client.scope(name, ranks)` gives the same calls for a sub-group. Objects
travel in the safe encoding of `tidal.comm.wire` (None, bool, int, float, str, bytes, list,
tuple, dict), signed with the job secret; nothing is unpickled.

One I/O thread per client owns the socket: it sends requests, matches replies to waiting calls,
and turns an abort from the coordinator (a rank died) or a silent or dead coordinator into a
`JobAbortedError` raised by every blocking call, pending or future. Silence is judged by libzmq's
ZMTP heartbeats (answered by its own I/O thread, so a rank holding the GIL is not silent) and a
socket monitor that reports the lost connection. Objects larger than `MAX_CONTROL_BYTES` are
refused at the call.
"""
from __future__ import annotations

import itertools
import os
import sys
import threading
import time
import uuid
from typing import Callable

from . import wire
from .base import (ENVELOPE_BYTES, EXIT_GRACE, HEARTBEAT_TIMEOUT, LIVENESS_CHECK, MAX_CONTROL_BYTES,
                   CollectiveMismatchError, CommError, CommTimeoutError, JobAbortedError, closed_connections,
                   heartbeats, monitor_disconnects, process_alive, process_identity, same_host, stop_monitor,
                   tcp_endpoint, zmq_module)
from .coordinator import Coordinator

__all__ = ["Coordinator", "ControlClient", "ControlScope", "CommError", "CommTimeoutError", "JobAbortedError"]

_REMOTE_ERRORS = {"KeyError": KeyError, "ValueError": ValueError, "timeout": CommTimeoutError,
                  "aborted": JobAbortedError, "mismatch": CollectiveMismatchError}


class _Pending:
    """A call waiting for its reply."""

    __slots__ = ("event", "reply", "error")

    def __init__(self):
        self.event = threading.Event()
        self.reply: dict | None = None
        self.error: Exception | None = None


def _as_bytes(key: str, value) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"set({key!r}): value must be bytes or str, got {type(value).__name__}")


class _ControlOps:
    """Barrier, broadcast/all-gather of objects and the key-value store, over a set of ranks."""

    _client: "ControlClient"
    _name: str
    ranks: tuple

    def _setup_ops(self, name: str, ranks) -> None:
        self._name, self.ranks = name, tuple(ranks)
        self._calls = itertools.count(1)

    @property
    def rank(self) -> int:
        """This process's rank within the group (-1 when it is not a member)."""
        return self.ranks.index(self._client.global_rank) if self._client.global_rank in self.ranks else -1

    @property
    def world_size(self) -> int:
        """The number of ranks in the group."""
        return len(self.ranks)

    def next_call(self) -> str:
        """The key of the group's next call ('group#7'): gathers and collectives share one count, so
        the coordinator can tell a rank stuck in collective #7 from one in barrier #7."""
        return f"{self._name}#{next(self._calls)}"

    def _gather(self, op: str, value, select: int | None = None, timeout: float | None = None):
        if self._client.global_rank not in self.ranks:
            raise CommError(f"{op}: rank {self._client.global_rank} is not in group {list(self.ranks)}")
        wire.encode(value)     # a value that cannot be sent fails here, before the call number advances
        key = self.next_call()
        reply = self._client._call("gather", {"key": key, "ranks": list(self.ranks), "op": op, "value": value,
                                              "select": select}, timeout, op)
        return reply["value"]

    def barrier(self, tag: str = "", timeout: float | None = None) -> None:
        """Wait until every rank of the group reaches a barrier with the same tag."""
        self._gather(f"barrier({tag!r})", None, self.ranks[0], timeout)

    def broadcast_object(self, obj=None, src: int = 0, timeout: float | None = None):
        """`obj` from global rank `src`, returned on every rank of the group."""
        if src not in self.ranks:
            raise ValueError(f"broadcast_object: src {src} is not in group {list(self.ranks)}")
        mine = obj if self._client.global_rank == src else None
        return self._gather(f"broadcast_object(src={src})", mine, src, timeout)

    def all_gather_object(self, obj, timeout: float | None = None) -> list:
        """Every rank's `obj`, in group rank order."""
        return self._gather("all_gather_object", obj, None, timeout)

    def _key(self, key: str) -> str:
        if not isinstance(key, str):
            raise TypeError(f"store keys must be str, got {type(key).__name__}")
        return f"{self._name}/{key}" if self._name else key

    def set(self, key: str, value: bytes) -> None:
        """Store `value` (bytes, or str stored as UTF-8) under `key`."""
        self._client._call("set", {"key": self._key(key), "value": _as_bytes(key, value)}, None, f"set({key!r})")

    def get(self, key: str, wait: bool = True, timeout: float | None = None, source: int | None = None,
            call: tuple | None = None) -> bytes:
        """The value under `key`; waits for it to be set (KeyError if absent and not `wait`). A wait
        for the value that global rank `source` sets fails when that rank leaves the group; one made
        for collective `call` (its `next_call` key, its description) fails when another rank makes
        a control call with that key (CollectiveMismatchError)."""
        payload = {"key": self._key(key), "wait": bool(wait), "source": source, "call": call and list(call)}
        return self._client._call("get", payload, timeout, f"get({key!r})")["value"]

    def add(self, key: str, n: int = 1) -> int:
        """Add `n` to the integer under `key` (0 when absent) and return the new value."""
        if type(n) is not int:
            raise TypeError(f"add({key!r}): n must be an int, got {type(n).__name__}")
        return self._client._call("add", {"key": self._key(key), "n": n}, None, f"add({key!r})")["value"]

    def delete(self, key: str) -> bool:
        """Remove `key`; whether it was there."""
        return self._client._call("delete", {"key": self._key(key)}, None, f"delete({key!r})")["deleted"]

    def check(self, keys: list) -> bool:
        """Whether every key in `keys` is set (never waits)."""
        return self._client._call("check", {"keys": [self._key(k) for k in keys]}, None, "check")["present"]

    def wait(self, keys: list, timeout: float | None = None) -> None:
        """Wait until every key in `keys` is set."""
        deadline = time.monotonic() + (self._client.timeout if timeout is None else timeout)
        for key in keys:
            self.get(key, True, max(0.0, deadline - time.monotonic()))


class ControlScope(_ControlOps):
    """The control calls of a sub-group: gathers among `ranks`, store keys under `name/`."""

    def __init__(self, client: "ControlClient", name: str, ranks):
        self._client = client
        self._setup_ops(name, ranks)


class ControlClient(_ControlOps):
    """A rank's connection to the coordinator at `addr:port`, authenticated with `secret`."""

    def __init__(self, rank: int, world_size: int, addr: str = "127.0.0.1", port: int = 0,
                 secret: str | bytes = b"", timeout: float = 1800.0, *, heartbeat_timeout: float = HEARTBEAT_TIMEOUT):
        if not 0 <= rank < world_size:
            raise ValueError(f"ControlClient: rank {rank} is out of range for world size {world_size}")
        self._client = self
        self.global_rank, self.timeout = rank, float(timeout)
        self.endpoint = tcp_endpoint(addr, port)
        self._setup_ops("", range(world_size))
        self.rejected = 0
        self._hmac_key = wire.secret_key(secret)
        self._heartbeat_timeout = heartbeat_timeout
        self.left: set = set()      # ranks that left the group (destroyed it), as the coordinator told
        self.mismatches: dict = {}  # call key -> why the collective this rank is stuck in cannot complete
        self.out_of_step: dict = {}  # group name -> why its data plane can no longer be trusted
        self._noted: str | None = None  # the call key `note_blocked` reported last
        self._lock = threading.Lock()
        self._seq = 0
        self._outbox: list = []
        self._pending: dict[int, _Pending] = {}
        self._error: CommError | None = None
        self._abort_callbacks: list = []
        self._hello_sent = self._welcomed = self._heard_from_coordinator = False
        self._coordinator: dict | None = None
        self._lost_at: float | None = None      # when the connection to the coordinator closed
        self._last_coordinator_seq = 0
        self._stopping = self._closed = False
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        zmq = zmq_module()
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.DEALER)
        self._sock.setsockopt(zmq.ROUTING_ID, f"rank{rank}-{uuid.uuid4().hex[:12]}".encode())
        self._sock.setsockopt(zmq.LINGER, 1000)
        self._sock.setsockopt(zmq.SNDHWM, 0)
        # replies carry at most one object per rank (an all-gather): refuse anything longer unread
        self._sock.setsockopt(zmq.MAXMSGSIZE, (MAX_CONTROL_BYTES + ENVELOPE_BYTES) * world_size + ENVELOPE_BYTES)
        heartbeats(self._sock, zmq, heartbeat_timeout)
        self._monitor = monitor_disconnects(self._sock)
        if ":" in addr:
            self._sock.setsockopt(zmq.IPV6, 1)
        try:
            self._sock.connect(self.endpoint)
        except zmq.ZMQError as exc:
            stop_monitor(self._sock, self._monitor)
            self._sock.close(0)
            self._ctx.term()
            os.close(self._wake_r)
            os.close(self._wake_w)
            raise CommError(f"tidal.comm: rank {rank} cannot connect to the coordinator at {self.endpoint}: {exc}")
        self._thread = threading.Thread(target=self._serve, name=f"tidal-control-{rank}", daemon=True)
        self._thread.start()

    # -- public state -------------------------------------------------------------------------
    @property
    def aborted(self) -> bool:
        """Whether the job was aborted (a rank died or called abort)."""
        return isinstance(self._error, JobAbortedError)

    @property
    def abort_error(self) -> CommError | None:
        """Why the client can no longer be used (aborted or shut down), or None."""
        return self._error

    def raise_if_aborted(self) -> None:
        """Raise the abort (or shutdown) error, if any: for loops that wait on other sockets."""
        if self._error is not None:
            raise self._copy_error(self._error)

    def add_abort_callback(self, callback: Callable[[JobAbortedError], None]) -> None:
        """Call `callback(error)` once, from the I/O thread, when the job is aborted."""
        with self._lock:
            if not self.aborted:
                self._abort_callbacks.append(callback)
                return
        callback(self._error)

    def scope(self, name: str, ranks) -> ControlScope:
        """The control calls of a sub-group named `name` (unique, the same on every rank)."""
        if not name or "/" in name or "#" in name:
            raise ValueError(f"scope: bad group name {name!r}")
        return ControlScope(self, name, ranks)

    # -- calls --------------------------------------------------------------------------------
    def rendezvous(self) -> None:
        """Wait until all `world_size` ranks have joined; names the missing ranks on timeout."""
        payload = {"world_size": self.world_size, **process_identity()}
        try:
            reply = self._call("hello", payload, self.timeout, "rendezvous")
        except CommTimeoutError:
            # Rank 0 may have started later than this rank, so its own deadline is not due yet: ask it.
            missing = None
            if self._heard_from_coordinator:
                try:
                    missing = self._call("status", {}, min(5.0, self.timeout), "rendezvous")["missing"]
                except CommTimeoutError:
                    pass
            if missing is None:
                missing = (f"rendezvous timed out after {self.timeout:g} s: the coordinator on rank 0 at "
                           f"{self.endpoint} did not answer in time" if self._heard_from_coordinator else
                           f"rendezvous timed out after {self.timeout:g} s: rank 0 never arrived (no coordinator "
                           f"answered at {self.endpoint})")
            raise CommTimeoutError(missing) from None
        self._coordinator = reply["coordinator"]
        self._welcomed = True

    def note_blocked(self, key: str, op: str) -> None:
        """Tell the coordinator (once) that this rank waits in collective `key` (from `next_call`); if
        other ranks made a control call with that key, both sides get a CollectiveMismatchError (this
        one through `mismatches[key]`)."""
        if key != self._noted:
            self._noted = key
            self._enqueue("blocked", {"key": key, "op": op})

    def abort(self, reason: str) -> None:
        """Abort the job: every rank's blocking calls raise `JobAbortedError` with `reason`."""
        self._enqueue("abort", {"reason": str(reason)})
        error = JobAbortedError(f"tidal.comm: the job was aborted: rank {self.global_rank} aborted the job: {reason}")
        error.rank = self.global_rank
        self._fail(error)

    def close(self) -> None:
        """Leave the group and stop the I/O thread; never raises."""
        if self._closed:
            return
        self._closed = True
        if self._hello_sent and self._error is None:
            self._enqueue("bye", {})
        self._fail(CommError(f"tidal.comm: the control client of rank {self.global_rank} was closed"))
        self._stopping = True
        self._wake()
        self._thread.join(5.0)
        if not self._thread.is_alive():
            with self._lock:
                os.close(self._wake_r)
                os.close(self._wake_w)
                self._wake_w = -1

    def _call(self, kind: str, payload: dict, timeout: float | None, what: str) -> dict:
        timeout = self.timeout if timeout is None else timeout
        body = wire.encode(payload)     # type errors surface here, on the caller's thread
        if len(body) > MAX_CONTROL_BYTES:
            raise ValueError(f"tidal.comm: {what}: the object takes {len(body)} bytes, more than the control plane "
                             f"carries ({MAX_CONTROL_BYTES}; set TIDAL_COMM_MAX_CONTROL_BYTES on every rank to raise "
                             "it, or send tensors with collectives)")
        pending = _Pending()
        with self._lock:
            if self._error is not None:
                raise self._copy_error(self._error)
            seq = self._enqueue_locked(kind, body)
            self._pending[seq] = pending
            if kind == "hello":
                self._hello_sent = True
        self._wake()
        if not pending.event.wait(timeout):
            with self._lock:
                self._pending.pop(seq, None)
            if not pending.event.is_set():
                raise CommTimeoutError(f"tidal.comm: {what} timed out after {timeout:g} s on rank "
                                       f"{self.global_rank}")
        if pending.error is not None:
            raise pending.error
        reply = pending.reply
        if "error" in reply:
            error_type = _REMOTE_ERRORS.get(reply.get("type"), CommError)
            message = reply["error"]
            if error_type is not KeyError:
                message = f"tidal.comm: {message}" if message.startswith(what) else f"tidal.comm: {what}: {message}"
            raise error_type(message)
        return reply.get("ok", {})

    # -- the I/O thread -----------------------------------------------------------------------
    def _enqueue(self, kind: str, payload: dict) -> None:
        with self._lock:
            self._enqueue_locked(kind, wire.encode(payload))
        self._wake()

    def _enqueue_locked(self, kind: str, payload_body: bytes) -> int:
        # Sequence numbers are taken and queued under one lock, so they reach the coordinator in
        # increasing order (it drops anything not newer than the last: replays).
        self._seq += 1
        self._outbox.append(wire.sign(self._hmac_key, wire.envelope(kind, self.global_rank, self._seq, payload_body)))
        return self._seq

    def _wake(self) -> None:
        with self._lock:    # the pipe is closed under this lock, so a stale descriptor is never written
            if self._wake_w >= 0:
                try:
                    os.write(self._wake_w, b"x")
                except BlockingIOError:
                    pass    # full: the I/O thread has wake-ups pending anyway

    def _serve(self) -> None:
        zmq = zmq_module()
        poller = zmq.Poller()
        poller.register(self._sock, zmq.POLLIN)
        poller.register(self._wake_r, zmq.POLLIN)
        poller.register(self._monitor, zmq.POLLIN)
        next_check = 0.0
        try:
            while True:
                ready = dict(poller.poll(int(LIVENESS_CHECK * 1000)))
                if self._wake_r in ready:
                    os.read(self._wake_r, 4096)
                self._drain(zmq)    # before the monitor: a shutdown or abort arrives before the disconnect
                if self._monitor in ready and closed_connections(self._monitor, zmq) and self._lost_at is None:
                    self._lost_at = time.monotonic()
                now = time.monotonic()
                with self._lock:
                    outbox, self._outbox = self._outbox, []
                for frames in outbox:
                    self._sock.send_multipart(frames)
                if self._stopping:
                    return
                if self._heard_from_coordinator and self._error is None and now >= next_check:
                    next_check = now + LIVENESS_CHECK
                    self._check_coordinator(now)
        except Exception as exc:  # noqa: BLE001 - never leave callers waiting on a dead thread
            self._fail(CommError(f"tidal.comm: the control client of rank {self.global_rank} failed: {exc!r}"))
        finally:
            stop_monitor(self._sock, self._monitor)
            self._sock.close()
            self._ctx.term()

    def _drain(self, zmq) -> None:
        for frames in wire.waiting(self._sock, zmq):
            msg = wire.unpack_message(self._hmac_key, frames)
            if msg is None or msg[1] != -1 or msg[2] <= self._last_coordinator_seq:
                self.rejected += 1
                continue
            kind, _, self._last_coordinator_seq, payload = msg
            self._heard_from_coordinator = True
            if kind == "reply":
                with self._lock:
                    pending = self._pending.pop(payload.get("re"), None)
                if pending is not None:
                    pending.reply = payload
                    pending.event.set()
            elif kind == "abort":
                error = JobAbortedError(f"tidal.comm: the job was aborted: {payload.get('reason')}")
                error.rank = payload.get("rank")
                self._fail(error)
            elif kind == "left":
                self.left.add(payload.get("rank"))
            elif kind == "mismatch":
                self.mismatches[payload.get("key")] = payload.get("reason")
            elif kind == "out_of_step":
                self.out_of_step.setdefault(payload.get("group"), payload.get("reason"))
            elif kind == "shutdown":
                self._fail(CommError("tidal.comm: rank 0 shut the process group down"))

    def _check_coordinator(self, now: float) -> None:
        coordinator = self._coordinator or {}
        local = same_host(coordinator)
        if local and not process_alive(coordinator.get("pid")):
            error = JobAbortedError(f"tidal.comm: the job was aborted: rank 0 (pid {coordinator.get('pid')} on "
                                    f"{coordinator.get('host')}), which hosts the coordinator, died")
        elif self._lost_at is not None and (not local or now - self._lost_at > EXIT_GRACE):
            error = JobAbortedError(f"tidal.comm: the job was aborted: rank 0 (the coordinator at {self.endpoint}) "
                                    f"stopped responding: the connection was lost (no heartbeat for "
                                    f"{self._heartbeat_timeout:g} s, or it broke)")
        else:
            return
        error.rank = 0
        self._fail(error)

    def _fail(self, error: CommError) -> None:
        """Make every pending and future call raise `error` (the first failure wins)."""
        with self._lock:
            if self._error is not None:
                return
            self._error = error
            pending, self._pending = self._pending, {}
            callbacks = self._abort_callbacks if isinstance(error, JobAbortedError) else []
            self._abort_callbacks = []
        # callbacks first: a woken caller may finish and exit the process before they would run
        for callback in callbacks:
            try:
                callback(error)
            except Exception as exc:  # noqa: BLE001 - a callback's bug must not stop the I/O thread
                print(f"tidal.comm: abort callback {callback!r} raised {exc!r}", file=sys.stderr)
        for waiter in pending.values():
            waiter.error = self._copy_error(error)
            waiter.event.set()

    @staticmethod
    def _copy_error(error: CommError) -> CommError:
        # A fresh exception per raise, so tracebacks of different calls do not pile up on one object.
        copy = type(error)(*error.args)
        copy.rank = getattr(error, "rank", None)
        return copy
