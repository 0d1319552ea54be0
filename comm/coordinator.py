"""The coordinator: the control plane's hub, a ZeroMQ ROUTER socket served by a thread on rank 0.

It keeps the rendezvous, the pending gathers (barrier, broadcast and all-gather of small
objects are all one "gather" keyed by group and call number), a key-value store, and the
liveness of every rank. Each message is checked against the job secret before it is decoded;
anything else is counted in `rejected` and dropped; frames longer than a control message may
be (`MAX_CONTROL_BYTES`) are refused by ZeroMQ before they are read.

Liveness is judged without needing Python to run on the ranks: libzmq's I/O threads exchange
ZMTP heartbeats, and a connection silent for `heartbeat_timeout` seconds (or broken) is reported
by a socket monitor; a rank on this host is also dead when its process is gone. A rank that
holds the GIL in a long C call is therefore alive. When a rank dies, every other rank gets an
abort message; when one leaves (it destroyed its process group), the others are told, and
calls waiting for it fail.

Gathers and collectives of a group share one call count (`ControlClient.next_call`). A rank
stuck in collective 'group#7' says so ("blocked", or a store wait made for that call); when
other ranks make control call 'group#7' (a barrier...), neither side can complete, and both
get a CollectiveMismatchError naming the two calls.
"""
from __future__ import annotations

import os
import threading
import time

from . import wire
from .base import (ENVELOPE_BYTES, EXIT_GRACE, HEARTBEAT_TIMEOUT, LIVENESS_CHECK, MAX_CONTROL_BYTES, CommError,
                   bind_address, closed_connections, heartbeats, monitor_disconnects, process_alive, process_identity,
                   same_host, stop_monitor, tcp_endpoint, zmq_module)

_ALIVE, _LEFT, _DEAD = "alive", "left", "dead"


class _Member:
    """One rank that said hello."""

    __slots__ = ("rank", "identity", "pid", "host", "local", "fd", "lost_at", "last_seq", "hello_seq", "state")

    def __init__(self, rank: int, identity: bytes, seq: int, process: dict, fd: int):
        self.rank, self.identity, self.hello_seq, self.last_seq = rank, identity, seq, seq
        self.pid, self.host = process.get("pid"), process.get("host")
        self.local = type(self.pid) is int and same_host(process)
        self.fd = fd                # the connection it spoke on, as the socket monitor names it
        self.lost_at: float | None = None
        self.state = _ALIVE

    def describe(self) -> str:
        """'rank 2 (pid 123 on host)'."""
        return f"rank {self.rank} (pid {self.pid} on {self.host})"


class _Gather:
    """A barrier / broadcast / all-gather waiting for its ranks."""

    __slots__ = ("ranks", "contributions")

    def __init__(self, ranks: tuple):
        self.ranks = ranks
        self.contributions: dict[int, tuple] = {}   # rank -> (op, value, select, identity, seq)


def _rank_list(ranks) -> str:
    ranks = sorted(ranks)
    shown = ", ".join(map(str, ranks[:16])) + (", ..." if len(ranks) > 16 else "")
    return f"rank {shown}" if len(ranks) == 1 else f"ranks {shown}"


def _call_number(key) -> int | None:
    """7 for the call key 'group#7' (None if `key` is not one)."""
    if not isinstance(key, str):
        return None
    number = key.rpartition("#")[2]
    return int(number) if number.isdigit() and "#" in key else None


class Coordinator:
    """The control-plane hub for `world_size` ranks, bound to `addr:port` (port 0: any free port)."""

    def __init__(self, world_size: int, addr: str = "127.0.0.1", port: int = 0, secret: str | bytes = b"",
                 timeout: float = 1800.0, heartbeat_timeout: float = HEARTBEAT_TIMEOUT):
        if world_size < 1:
            raise ValueError(f"Coordinator: world_size must be at least 1, got {world_size}")
        self.world_size = world_size
        self.addr, self.port = addr, port
        self.timeout, self.heartbeat_timeout = float(timeout), float(heartbeat_timeout)
        self.rejected = 0              # messages dropped: bad tag, malformed, replayed or from a stranger
        self.aborted: str | None = None
        self._hmac_key = wire.secret_key(secret)
        self._members: dict[int, _Member] = {}
        self._gathers: dict[str, _Gather] = {}
        self._store: dict[str, bytes] = {}
        self._waiters: dict[str, list] = {}
        self._blocked: dict[str, tuple] = {}   # call key -> (rank, its collective, its store wait or None)
        self._collided: dict[str, str] = {}    # call key -> why (for ranks still to report being stuck in it)
        self._stuck_at: dict[tuple, str] = {}  # (rank, group) -> the call key it last reported being stuck in
        self._seq = 0
        self._fd: int | None = None    # the connection of the message being handled
        self._rendezvous_done = False
        self._rendezvous_failed: str | None = None
        self._closing_deadline: float | None = None
        self._sock = self._ctx = self._thread = self._monitor = None
        self._wake_r = self._wake_w = -1

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> "Coordinator":
        """Bind the socket and start serving in a daemon thread; returns self."""
        zmq = zmq_module()
        self._ctx = zmq.Context()
        self._sock = self._ctx.socket(zmq.ROUTER)
        host = bind_address(self.addr)
        if ":" in host:
            self._sock.setsockopt(zmq.IPV6, 1)
        self._sock.setsockopt(zmq.LINGER, 500)
        self._sock.setsockopt(zmq.MAXMSGSIZE, MAX_CONTROL_BYTES + ENVELOPE_BYTES)
        heartbeats(self._sock, zmq, self.heartbeat_timeout)
        self._monitor = monitor_disconnects(self._sock)
        try:
            if self.port:
                self._sock.bind(tcp_endpoint(host, self.port))
            else:
                self.port = self._sock.bind_to_random_port(tcp_endpoint(host, 0).rsplit(":", 1)[0])
        except zmq.ZMQError as exc:
            stop_monitor(self._sock, self._monitor)
            self._sock.close(0)
            self._ctx.term()
            raise CommError(f"tidal.comm: cannot bind the coordinator to {tcp_endpoint(host, self.port)}: {exc}")
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._serve, name="tidal-coordinator", daemon=True)
        self._thread.start()
        return self

    def is_alive(self) -> bool:
        """Whether the serving thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def close(self, grace: float = 5.0) -> None:
        """Stop serving once every rank has left or `grace` seconds have passed; ranks still
        connected are told the group was shut down."""
        if self._thread is None:
            return
        self._closing_deadline = time.monotonic() + grace
        self._wake()
        self._thread.join(grace + 5.0)
        if not self._thread.is_alive():
            os.close(self._wake_r)
            os.close(self._wake_w)
        self._thread = None

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except BlockingIOError:
            pass

    # -- the serving loop ---------------------------------------------------------------------
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
                self._drain(zmq)    # before the monitor: a rank's last words come before its disconnect
                if self._monitor in ready:
                    self._lost(closed_connections(self._monitor, zmq))
                now = time.monotonic()
                if self._closing_deadline is not None and (now >= self._closing_deadline or self.aborted
                                                           or all(m.state != _ALIVE for m in self._members.values())):
                    break
                if now >= next_check:
                    next_check = now + LIVENESS_CHECK
                    self._check_rendezvous(now)
                    self._check_liveness(now)
            for member in self._alive():
                self._send(member.identity, "shutdown", {})
        finally:
            stop_monitor(self._sock, self._monitor)
            self._sock.close()
            self._ctx.term()

    def _drain(self, zmq) -> None:
        for frames in wire.waiting(self._sock, zmq, copy=False):
            msg = wire.unpack_message(self._hmac_key, [f.bytes for f in frames[1:]]) if len(frames) == 3 else None
            if msg is None:
                self.rejected += 1
                continue
            self._fd = frames[1].get(zmq.SRCFD)     # the connection it came on (for the hello)
            try:
                self._handle(frames[0].bytes, *msg)
            except Exception as exc:  # noqa: BLE001 - a bad request must never stop the coordinator
                kind, sender, seq, _ = msg
                self._reply_error(frames[0].bytes, seq, "RuntimeError", f"the coordinator failed on {kind!r} from "
                                  f"rank {sender}: {type(exc).__name__}: {exc}")

    def _handle(self, identity: bytes, kind: str, sender: int, seq: int, payload: dict) -> None:
        if kind == "hello":
            self._hello(identity, sender, seq, payload)
            return
        member = self._members.get(sender)
        if member is None or member.identity != identity or seq <= member.last_seq:
            self.rejected += 1      # a stranger, another connection claiming the rank, or a replay
            return
        member.last_seq = seq
        if member.state != _ALIVE:
            return
        if kind == "bye":
            self._leave(member)
        elif kind == "abort":
            self._abort(f"rank {sender} aborted the job: {payload.get('reason')}", sender)
        elif self.aborted is not None:
            self._reply_error(identity, seq, "aborted", self.aborted)
        elif kind == "gather":
            self._gather(identity, sender, seq, payload)
        elif kind == "status":
            missing = set(range(self.world_size)) - set(self._members)
            self._reply(identity, seq, {"missing": self._missing_message(missing) if missing else None})
        elif kind == "blocked":
            self._stuck(sender, payload.get("key"), payload.get("op"), None)
        elif kind == "get":
            self._kv_get(identity, seq, payload, sender)
        elif kind in ("set", "add", "delete", "check"):
            getattr(self, "_kv_" + kind)(identity, seq, payload)
        else:
            self._reply_error(identity, seq, "ValueError", f"unknown request {kind!r}")

    # -- replies ------------------------------------------------------------------------------
    def _send(self, identity: bytes, kind: str, payload: dict) -> None:
        zmq = zmq_module()
        self._seq += 1
        try:
            self._sock.send_multipart([identity, *wire.pack_message(self._hmac_key, kind, -1, self._seq, payload)],
                                      zmq.NOBLOCK)
        except zmq.Again:
            pass    # that peer stopped reading; its liveness check will tell

    def _reply(self, identity: bytes, seq: int, result: dict) -> None:
        self._send(identity, "reply", {"re": seq, "ok": result})

    def _reply_error(self, identity: bytes, seq: int, kind: str, message: str) -> None:
        self._send(identity, "reply", {"re": seq, "error": message, "type": kind})

    def _alive(self) -> list:
        return [m for m in self._members.values() if m.state == _ALIVE]

    # -- rendezvous and liveness --------------------------------------------------------------
    def _hello(self, identity: bytes, rank: int, seq: int, payload: dict) -> None:
        existing = self._members.get(rank)
        if existing is not None and seq <= existing.last_seq:
            self.rejected += 1      # a replayed hello
            return
        if not 0 <= rank < self.world_size:
            return self._reply_error(identity, seq, "ValueError", f"rank {rank} is out of range for world "
                                     f"size {self.world_size}")
        if payload.get("world_size") != self.world_size:
            return self._reply_error(identity, seq, "ValueError", f"rank {rank} was started with world size "
                                     f"{payload.get('world_size')} but rank 0 with {self.world_size}")
        if existing is not None:
            return self._reply_error(identity, seq, "ValueError", f"rank {rank} joined twice (pids "
                                     f"{existing.pid} and {payload.get('pid')})")
        if self._rendezvous_failed or self.aborted:
            return self._reply_error(identity, seq, "timeout", self._rendezvous_failed or self.aborted)
        self._members[rank] = _Member(rank, identity, seq, payload, self._fd)
        self._send(identity, "joined", {})     # the rank knows a coordinator is there, if rendezvous times out
        if len(self._members) == self.world_size:
            self._rendezvous_done = True
            for member in self._members.values():
                self._reply(member.identity, member.hello_seq, {"coordinator": process_identity()})

    def _check_rendezvous(self, now: float) -> None:
        if self._rendezvous_done or self._rendezvous_failed or now - self._started < self.timeout:
            return
        self._rendezvous_failed = self._missing_message(set(range(self.world_size)) - set(self._members))
        for member in self._alive():
            self._reply_error(member.identity, member.hello_seq, "timeout", self._rendezvous_failed)

    def _missing_message(self, missing: set) -> str:
        return (f"rendezvous timed out after {self.timeout:g} s: {_rank_list(missing)} never arrived "
                f"({len(self._members)} of {self.world_size} ranks joined)")

    def _lost(self, fds: list) -> None:
        """Note the members whose connection closed; `_check_liveness` judges them."""
        now = time.monotonic()
        for member in self._alive():
            if member.fd in fds and member.lost_at is None:
                member.lost_at = now

    def _check_liveness(self, now: float) -> None:
        if self.aborted is not None:
            return
        for member in self._alive():
            if member.local and not process_alive(member.pid):
                self._dead(member, f"{member.describe()} died")
            elif member.lost_at is not None and (not member.local or now - member.lost_at > EXIT_GRACE):
                self._dead(member, f"{member.describe()} stopped responding: its connection to the coordinator "
                                   f"was lost (no heartbeat for {self.heartbeat_timeout:g} s, or it broke)")

    def _dead(self, member: _Member, reason: str) -> None:
        member.state = _DEAD
        self._abort(reason, member.rank)

    def _abort(self, reason: str, rank: int) -> None:
        if self.aborted is not None:
            return
        self.aborted = reason
        for member in self._alive():
            self._send(member.identity, "abort", {"reason": reason, "rank": rank})
        self._gathers.clear()
        self._waiters.clear()
        self._blocked.clear()

    def _leave(self, member: _Member) -> None:
        member.state = _LEFT
        for other in self._alive():
            self._send(other.identity, "left", {"rank": member.rank})
        for key, waiters in list(self._waiters.items()):
            keep = [w for w in waiters if w[2] != member.rank]
            for identity, seq, _ in set(waiters) - set(keep):
                self._reply_error(identity, seq, "RuntimeError", f"rank {member.rank} left the process group "
                                  f"before setting {key!r}")
            self._waiters[key] = keep
        for key, gather in list(self._gathers.items()):
            if member.rank in gather.ranks and member.rank not in gather.contributions:
                del self._gathers[key]
                for _, _, _, identity, seq in gather.contributions.values():
                    self._reply_error(identity, seq, "RuntimeError", f"rank {member.rank} left the process "
                                      "group before joining this call")

    # -- gathers: barrier, broadcast_object, all_gather_object --------------------------------
    def _gather(self, identity: bytes, rank: int, seq: int, payload: dict) -> None:
        key, ranks, select = payload.get("key"), tuple(payload.get("ranks") or ()), payload.get("select")
        if rank not in ranks or (select is not None and select not in ranks):
            return self._reply_error(identity, seq, "ValueError", f"rank {rank}: bad group {list(ranks)} or "
                                     f"source {select} for {payload.get('op')}")
        gone = [r for r in ranks if r not in self._members or self._members[r].state != _ALIVE]
        gather = self._gathers.get(key)
        if gather is None:
            if gone:
                return self._reply_error(identity, seq, "RuntimeError", f"{_rank_list(gone)} left the process "
                                         f"group; {payload.get('op')} cannot complete")
            gather = self._gathers[key] = _Gather(ranks)
        if gather.ranks != ranks or rank in gather.contributions:
            return self._reply_error(identity, seq, "RuntimeError", f"rank {rank} called {payload.get('op')} "
                                     f"with ranks {list(ranks)}, others with {list(gather.ranks)}")
        gather.contributions[rank] = (payload.get("op"), payload.get("value"), select, identity, seq)
        if key in self._blocked:
            self._collide(key)
        elif len(gather.contributions) == len(ranks):
            del self._gathers[key]
            self._finish_gather(key, gather)
            self._forget_blocked(key)

    # -- a collective against a control call ------------------------------------------------
    def _stuck(self, rank: int, key, op, waiter) -> None:
        """Rank `rank` waits in collective `key`: a gather with the same key is a mismatch."""
        if _call_number(key) is None or not isinstance(op, str):
            return
        if key in self._collided:   # another rank stuck in the same collective was told already
            return self._tell_stuck(key, rank, waiter, self._collided[key])
        self._blocked[key] = (rank, op, waiter)
        earlier = self._stuck_at.get((rank, key.rpartition("#")[0]))
        if earlier not in (None, key) and self._blocked.get(earlier, (None,))[0] == rank:
            del self._blocked[earlier]     # the rank has moved past that call: keep one record per rank
        self._stuck_at[rank, key.rpartition("#")[0]] = key
        if key in self._gathers:
            self._collide(key)

    def _collide(self, key: str) -> None:
        """Fail gather `key` and the collective a rank is stuck in under the same key."""
        gather, (rank, op, waiter) = self._gathers.pop(key), self._blocked.pop(key)
        ops: dict = {}
        for r, contribution in sorted(gather.contributions.items()):
            ops.setdefault(contribution[0], []).append(r)
        group, _, number = key.rpartition("#")
        reason = (f"ranks disagree on call {number} of group {group or 'world'}: "
                  + "; ".join(f"{_rank_list(rs)} called {call}" for call, rs in ops.items())
                  + f"; rank {rank} called {op}")
        if waiter is None:  # its headers went out and will never be read: the group's data plane is out of step
            for member in self._alive():    # told before the replies, so no rank's next collective misses it
                if member.rank in gather.ranks:
                    self._send(member.identity, "out_of_step", {"group": group, "reason": reason})
        for _, _, _, identity, seq in gather.contributions.values():
            self._reply_error(identity, seq, "mismatch", reason)
        self._collided[key] = reason
        while len(self._collided) > 1000:
            del self._collided[next(iter(self._collided))]
        self._tell_stuck(key, rank, waiter, reason)

    def _tell_stuck(self, key: str, rank: int, waiter, reason: str) -> None:
        if waiter is not None:   # stuck connecting the data plane: a store wait
            for waiting in self._waiters.values():
                waiting[:] = [w for w in waiting if w[:2] != waiter]
            self._reply_error(*waiter, "mismatch", reason)
        elif rank in self._members:
            self._send(self._members[rank].identity, "mismatch", {"key": key, "reason": reason})

    def _forget_blocked(self, key: str) -> None:
        """Gather `key` completed: every rank of its group is past the calls numbered before it, so
        none will make a control call with their keys any more."""
        number = _call_number(key)
        if number is None:
            return
        group = key.rpartition("#")[0]
        for old in [k for k in self._blocked if k.rpartition("#")[0] == group and _call_number(k) < number]:
            del self._blocked[old]

    def _finish_gather(self, key: str, gather: _Gather) -> None:
        contributions = gather.contributions
        ops = {r: c[0] for r, c in contributions.items()}
        if len(set(ops.values())) > 1:
            calls = "; ".join(f"{_rank_list([r for r in ops if ops[r] == op])} called {op}"
                              for op in dict.fromkeys(ops[r] for r in gather.ranks))
            group, _, number = key.rpartition("#")
            for _, _, _, identity, seq in contributions.values():
                self._reply_error(identity, seq, "RuntimeError", f"ranks disagree on control call {number} of "
                                  f"group {group or 'world'}: {calls}")
            return
        values = [contributions[r][1] for r in gather.ranks]
        for _, _, select, identity, seq in contributions.values():
            self._reply(identity, seq, {"value": values if select is None else contributions[select][1]})

    # -- key-value store ----------------------------------------------------------------------
    def _kv_set(self, identity: bytes, seq: int, payload: dict) -> None:
        key, value = payload["key"], payload["value"]
        if not isinstance(value, bytes):
            return self._reply_error(identity, seq, "ValueError", f"set({key!r}): the value must be bytes")
        self._store[key] = value
        self._reply(identity, seq, {})
        self._notify(key)

    def _kv_get(self, identity: bytes, seq: int, payload: dict, sender: int) -> None:
        key, source, call = payload["key"], payload.get("source"), payload.get("call")
        if key in self._store:
            self._reply(identity, seq, {"value": self._store[key]})
        elif payload.get("wait"):
            member = self._members.get(source)
            if member is not None and member.state != _ALIVE:    # the rank that would set it has gone
                return self._reply_error(identity, seq, "RuntimeError", f"rank {source} left the process group "
                                         f"before setting {key!r}")
            self._waiters.setdefault(key, []).append((identity, seq, source))
            if isinstance(call, list) and len(call) == 2:    # made for a collective: see `_stuck`
                self._stuck(sender, call[0], call[1], (identity, seq))
        else:
            self._reply_error(identity, seq, "KeyError", key)

    def _kv_add(self, identity: bytes, seq: int, payload: dict) -> None:
        key, amount = payload["key"], payload["n"]
        try:
            total = int(self._store.get(key, b"0")) + amount
        except ValueError:
            return self._reply_error(identity, seq, "ValueError", f"add({key!r}): the stored value "
                                     f"{self._store[key][:32]!r} is not an integer")
        self._store[key] = str(total).encode()
        self._reply(identity, seq, {"value": total})
        self._notify(key)

    def _kv_delete(self, identity: bytes, seq: int, payload: dict) -> None:
        self._reply(identity, seq, {"deleted": self._store.pop(payload["key"], None) is not None})

    def _kv_check(self, identity: bytes, seq: int, payload: dict) -> None:
        self._reply(identity, seq, {"present": all(k in self._store for k in payload["keys"])})

    def _notify(self, key: str) -> None:
        for identity, seq, _ in self._waiters.pop(key, ()):
            self._reply(identity, seq, {"value": self._store[key]})
