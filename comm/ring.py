"""The CPU data plane: ZeroMQ PAIR sockets between every two ranks of a group, and the
pipelined algorithms the collectives run over them (ring reduce-scatter and all-gather,
chain broadcast and reduce, pairwise exchange, point-to-point).

Every algorithm works on flat C-contiguous NumPy arrays that view tensor memory. Large
pieces leave straight from that memory (`send(copy=False)`, tracked so the memory is not
reused before ZeroMQ is done with it) and arrive straight into their destination
(`recv_into`) or are reduced from ZeroMQ's own buffer, so no extra copy is made. A chunk
travels in a few pieces (`pieces`): a rank forwards a piece as soon as it is reduced, so
the hops of a ring overlap (pipelining).

Addresses are exchanged through the control plane's key-value store: ipc:// sockets in a
private directory when every rank of the group is on one host, TCP otherwise. Each
connection starts with a random token published through the (authenticated) store, so a
stranger that connects first is detected, not trusted. Frames longer than the longest piece
(`MAX_FRAME_BYTES`) are refused by ZeroMQ before they are read.

Every collective starts with a small header to each peer (`send_header`: op, dtype, element
counts), compared before any data moves (`tidal.comm.check.agree`), so ranks that issued
different calls get an error instead of garbage. A socket monitor reports a peer's closed
connection: a rank waiting for a peer that exited fails within seconds (the peer's messages
sent before it left are still read first), as gloo's "connection closed by peer".
"""
from __future__ import annotations

import collections
import hmac
import json
import os
import secrets
import shutil
import socket
import tempfile
import time

import numpy as np

from .base import (CollectiveMismatchError, CommError, CommTimeoutError, bind_address, closed_connections,
                   monitor_disconnects, process_identity, stop_monitor, tcp_endpoint, zmq_module)

# Pipelining unit: an eighth of a chunk, within [1, 4] MiB. Every zero-copy message costs a wake-up
# of pyzmq's reference-dropping thread, so smaller pieces cost more than they overlap.
# TIDAL_COMM_PIECE_BYTES fixes the size instead (the tests use tiny pieces).
PIECE_BYTES = int(os.environ.get("TIDAL_COMM_PIECE_BYTES", 0))
PIECE_RANGE = (1 << 20, 4 << 20)
COPY_BELOW = 1 << 16  # smaller pieces are copied into ZeroMQ: cheaper than a zero-copy message's release
# An all-reduce that sends fewer bytes than this to all peers together is one round (everyone
# sends everyone everything) instead of a ring's 2(n - 1) steps: latency matters more there.
DIRECT_BELOW = int(os.environ.get("TIDAL_COMM_DIRECT_BYTES", 32 << 10))
POLL_MS = 100         # how often a blocked rank checks for an aborted job
# The longest frame a peer may send: a pipelining piece or a one-round all-reduce's buffer (plus
# room for an element that does not divide the piece); anything longer is refused unread.
MAX_FRAME_BYTES = max(PIECE_RANGE[1], PIECE_BYTES, DIRECT_BELOW) + (64 << 10)
LINGER_MS = 2000      # at close, time ZeroMQ gets to deliver what is still queued for a live peer
LEFT_GRACE = 1.0      # a peer's connection closed: time the control plane gets to say why (abort, left)
STALL_NOTE = 0.5      # a collective waiting this long for a peer's header asks whether it is elsewhere
HEADER_MAGIC = 0x7464_6C68_6472_0001  # first value of every header ("tdlhdr", version 1)
HEADER_VALUES = 7     # values after the magic: see tidal.comm.check.agree and send_to
OP_SEND = 7           # the op code of a point-to-point send's header (tidal.comm.check numbers the rest)


def split_bounds(n: int, parts: int) -> list:
    """Boundaries of `parts` near-equal consecutive ranges of `n` items (the first ones longer)."""
    base, extra = divmod(n, parts)
    bounds = [0]
    for k in range(parts):
        bounds.append(bounds[-1] + base + (k < extra))
    return bounds


def pieces(length: int, itemsize: int) -> list:
    """(lo, hi) element ranges cutting `length` items into pipelining pieces (the same on every rank)."""
    nbytes = PIECE_BYTES or min(max(length * itemsize // 8, PIECE_RANGE[0]), PIECE_RANGE[1])
    step = max(1, nbytes // max(itemsize, 1))
    return [(lo, min(lo + step, length)) for lo in range(0, length, step)]


def flat(arr: np.ndarray) -> np.ndarray:
    """A 1-D view of a C-contiguous array (never a copy: data must land in the tensor's memory)."""
    if not arr.flags.c_contiguous:
        raise RuntimeError("tidal.comm data plane: got a non-contiguous array")
    return arr.reshape(-1)


def _as_bytes(arr: np.ndarray) -> memoryview:
    # bfloat16 has no buffer-protocol format: every array travels as raw bytes
    return memoryview(flat(arr).view(np.uint8))


class Mesh:
    """Connected PAIR sockets from this rank to every other rank of a group.

    `publish(key, bytes)` and `lookup(key, peer) -> bytes` (blocking; fails if `peer`, which sets
    the key, leaves) are the control plane's store; `check()` raises when the job was aborted (a
    rank died); `left(peer)` tells whether a peer left the group; `blocked(call key, description)`
    reports a collective stuck waiting for headers and returns why it cannot complete (another
    rank made a control call instead), or None; `broken()` says why the group's data plane is out
    of step (after such a mismatch), or None. Ranks are group-local.
    """

    def __init__(self, rank: int, size: int, key: str, publish, lookup, check, timeout: float = 1800.0,
                 left=None, blocked=None, broken=None):
        zmq = zmq_module()
        self.rank, self.size, self.key = rank, size, key
        self.next, self.prev = (rank + 1) % size, (rank - 1) % size
        self.timeout = timeout
        self.calls = 0   # collectives started on this mesh (for error messages)
        self.waiting_call = None  # (call key, description) while a collective waits for its headers
        self._check, self._left, self._blocked = check, left or (lambda peer: False), blocked
        self.broken = broken or (lambda: None)
        # its own context, so that closing can wait for queued sends (none for a group of one)
        self._ctx = zmq.Context(io_threads=1) if size > 1 else None
        self._has_recv_into = hasattr(zmq.Socket, "recv_into")  # pyzmq >= 26.4
        self._socks: dict = {}
        self._monitors: dict = {}  # peer -> monitor socket reporting its connection closed
        self._gone: dict = {}      # peer -> when its connection closed
        self._stash: dict = {}     # peer -> messages read ahead by `poll_any`, still to be taken
        self._trackers: dict = {}  # chunk tag -> ZeroMQ trackers of sends still reading our memory
        self._dir = None
        self._closed = False
        if size > 1:
            try:
                self._connect(publish, lookup)
            except BaseException:
                self.close()
                raise

    # -- setting up ----------------------------------------------------------------------
    def _connect(self, publish, lookup) -> None:
        me, n = self.rank, self.size
        ident = process_identity()
        publish(f"{self.key}/host/{me}", json.dumps([ident["host"], ident["pidns"]]).encode())
        hosts = {tuple(json.loads(lookup(f"{self.key}/host/{r}", r))) for r in range(n)}
        local = len(hosts) == 1
        if local:
            self._dir = tempfile.mkdtemp(prefix="tidal-ring-")  # mode 0700: only this user connects
        offers = {}
        for peer in range(me + 1, n):  # the lower rank of a pair binds, the higher one connects
            sock = self._socks[peer] = self._socket(peer)
            if local:
                address = f"ipc://{self._dir}/{me}-{peer}"
                sock.bind(address)
            else:
                sock.bind(tcp_endpoint(_tcp_host(), "*"))  # any free port
                address = sock.getsockopt_string(zmq_module().LAST_ENDPOINT)
            offers[str(peer)] = [address, secrets.token_hex(16)]
        publish(f"{self.key}/addr/{me}", json.dumps(offers).encode())
        for peer in range(me):
            address, token = json.loads(lookup(f"{self.key}/addr/{peer}", peer))[str(me)]
            sock = self._socks[peer] = self._socket(peer)
            sock.connect(address)
            self._push(peer, token.encode(), copy=True)
        for peer in range(me + 1, n):
            got = bytes(self._recv_frame(peer))
            if not hmac.compare_digest(got, offers[str(peer)][1].encode()):
                raise CommError(f"tidal.comm data plane: rank {me} got a connection for rank {peer} "
                                "that did not present the group's token (a stranger on the socket?)")
            self._push(peer, b"ok", copy=True)
        for peer in range(me):
            if bytes(self._recv_frame(peer)) != b"ok":
                raise CommError(f"tidal.comm data plane: rank {peer} refused rank {me}'s connection")
        self._remove_dir()  # every peer is connected: the socket files are no longer needed

    def _socket(self, peer: int):
        zmq = zmq_module()
        sock = self._ctx.socket(zmq.PAIR)
        sock.setsockopt(zmq.SNDHWM, 0)  # no limit: sends never block, messages wait in order
        sock.setsockopt(zmq.RCVHWM, 0)
        sock.setsockopt(zmq.LINGER, 0)
        sock.setsockopt(zmq.MAXMSGSIZE, MAX_FRAME_BYTES)
        self._monitors[peer] = monitor_disconnects(sock)
        return sock

    def close(self) -> None:
        """Close the sockets (giving what is still queued for live peers `LINGER_MS` to leave) and
        remove the ipc directory."""
        if self._closed:
            return
        self._closed = True
        try:
            self._check()
            aborted = False
        except CommError:
            aborted = True
        self._note_gone()
        for peer, sock in self._socks.items():
            stop_monitor(sock, self._monitors.pop(peer))
            sock.close(linger=0 if aborted or peer in self._gone else LINGER_MS)
        for monitor in self._monitors.values():
            monitor.close(0)
        self._socks.clear()
        self._monitors.clear()
        self._trackers.clear()
        if self._ctx is not None:
            self._ctx.term()   # returns once queued messages are delivered (or their linger ran out)
        self._remove_dir()

    def _remove_dir(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    # -- moving bytes ----------------------------------------------------------------------
    def send(self, peer: int, arr: np.ndarray, tag=None) -> None:
        """Queue a contiguous array for `peer`; large ones are sent from their own memory, and
        `settle(tag)` / `settle()` waits until ZeroMQ no longer reads it."""
        raw = _as_bytes(arr)
        if raw.nbytes < COPY_BELOW:
            self._push(peer, raw, copy=True)
        else:
            self._trackers.setdefault(tag, []).append(self._push(peer, raw, copy=False))

    def send_header(self, peer: int, values: tuple) -> None:
        """A header: `HEADER_VALUES` int64 values after the magic (a call's op, dtype, counts...)."""
        self._push(peer, np.array((HEADER_MAGIC, *values), np.int64).tobytes(), copy=True)

    def recv_header(self, peer: int) -> tuple | None:
        """The values of the next message from `peer` if it is a header, else None (it was data:
        the ranks are out of step)."""
        frame = self._recv_frame(peer)
        if len(frame) != (HEADER_VALUES + 1) * 8:
            return None
        values = np.frombuffer(frame, np.int64)
        return tuple(int(v) for v in values[1:]) if values[0] == HEADER_MAGIC else None

    def _push(self, peer: int, data, copy: bool):
        # Never block inside ZeroMQ: a PAIR socket whose peer went away would wait forever.
        zmq = zmq_module()
        sock = self._socks[peer]
        deadline = None
        while True:
            try:
                return sock.send(data, zmq.NOBLOCK, copy=copy, track=not copy)
            except zmq.Again:
                deadline = deadline or time.monotonic() + self.timeout
                if not sock.poll(POLL_MS, zmq.POLLOUT):
                    self._still_waiting(deadline, f"rank {peer} to take a message", peer)

    def recv_array(self, peer: int, dtype, count: int) -> np.ndarray:
        """The next message from `peer` as `count` items of `dtype`, viewing ZeroMQ's buffer."""
        frame = self._recv_frame(peer)
        nbytes = count * np.dtype(dtype).itemsize
        if len(frame) != nbytes:
            raise self._mismatch(peer, nbytes, len(frame))
        return np.frombuffer(frame, dtype, count)

    def recv_into(self, peer: int, arr: np.ndarray) -> None:
        """Receive the next message from `peer` straight into the contiguous array `arr`."""
        raw = _as_bytes(arr)
        if self._has_recv_into and not self._stash.get(peer):
            got = self._receive(peer, lambda sock, flags: sock.recv_into(raw, flags=flags))
        else:  # pyzmq < 26.4 (or a message read ahead): one copy out of ZeroMQ's buffer all the same
            frame = self._recv_frame(peer)
            got = len(frame)
            if got == raw.nbytes:
                raw[:] = frame
        if got != raw.nbytes:
            raise self._mismatch(peer, raw.nbytes, got)

    def poll_any(self, peers) -> int:
        """The first of `peers` whose next message is a point-to-point send's header (blocks,
        checking for an aborted job). A collective's header that arrives first is kept for that
        collective: its sender cannot send this rank anything else before it."""
        zmq = zmq_module()
        candidates = [p for p in peers if not self._stash.get(p)]
        deadline = time.monotonic() + self.timeout
        while candidates:
            poller = zmq.Poller()
            for peer in candidates:
                poller.register(self._socks[peer], zmq.POLLIN)
            ready = dict(poller.poll(POLL_MS))
            for peer in list(candidates):
                if self._socks[peer] in ready:
                    frame = self._recv_frame(peer)
                    self._stash.setdefault(peer, collections.deque()).append(frame)
                    values = np.frombuffer(frame, np.int64) if len(frame) == (HEADER_VALUES + 1) * 8 else ()
                    if len(values) and values[0] == HEADER_MAGIC and values[1] == OP_SEND:
                        return peer
                    candidates.remove(peer)
            if candidates:
                self._still_waiting(deadline, "any rank")
        raise CommError(f"tidal.comm data plane: rank {self.rank} waits in recv from any source, but every peer's "
                        "next message belongs to a collective this rank has not called (the ranks issued "
                        "different calls)")

    def settle(self, tag=None, everything: bool = False) -> None:
        """Wait until ZeroMQ has finished reading the memory of tracked sends (of `tag`, or all)."""
        tags = list(self._trackers) if everything else [tag]
        deadline = time.monotonic() + self.timeout
        for t in tags:
            for tracker in self._trackers.pop(t, ()):
                while not tracker.done:
                    try:
                        tracker.wait(POLL_MS / 1000)
                    except zmq_module().NotDone:
                        self._still_waiting(deadline, f"a send to complete (chunk {t})")

    def _recv_frame(self, peer: int) -> memoryview:
        stash = self._stash.get(peer)
        if stash:
            return stash.popleft()
        return self._receive(peer, lambda sock, flags: sock.recv(flags, copy=False).buffer)

    def _receive(self, peer: int, take):
        """`take(socket, flags)` once a message from `peer` is there (checking for an aborted job)."""
        zmq = zmq_module()
        sock = self._socks[peer]
        try:
            return take(sock, zmq.NOBLOCK)
        except zmq.Again:
            pass
        deadline = time.monotonic() + self.timeout
        while not sock.poll(POLL_MS, zmq.POLLIN):
            self._still_waiting(deadline, f"rank {peer}", peer)
        return take(sock, 0)

    def _still_waiting(self, deadline: float, what: str, peer: int | None = None) -> None:
        self._check()  # raises if the control plane saw a rank die or the job abort
        waited = time.monotonic() - (deadline - self.timeout)
        if self.waiting_call is not None and self._blocked is not None and waited > STALL_NOTE:
            reason = self._blocked(*self.waiting_call)
            if reason:  # the root cause, even if the peer has left since
                raise CollectiveMismatchError(f"tidal.comm: {self.waiting_call[1]}: {reason}")
        if peer is not None:
            self._check_peer(peer)
        if time.monotonic() > deadline:
            raise CommTimeoutError(f"tidal.comm data plane: rank {self.rank} of group '{self.key}' waited "
                                   f"{self.timeout:g} s for {what}")

    def _note_gone(self) -> None:
        zmq = zmq_module()
        now = time.monotonic()
        for peer, monitor in self._monitors.items():
            if peer not in self._gone and closed_connections(monitor, zmq):
                self._gone[peer] = now

    def _check_peer(self, peer: int) -> None:
        """Raise if `peer`'s connection closed and nothing it sent before is left to read."""
        self._note_gone()
        since = self._gone.get(peer)
        if since is None or self._socks[peer].poll(0, zmq_module().POLLIN):
            return
        if self._left(peer):
            raise CommError(f"tidal.comm data plane: rank {self.rank} of group '{self.key}' waited for rank {peer}, "
                            "which left the process group (it finished, or destroyed the group, without this "
                            "call): connection closed by peer")
        if time.monotonic() - since > LEFT_GRACE:  # the control plane had its chance to name an abort
            raise CommError(f"tidal.comm data plane: rank {self.rank} of group '{self.key}' waited for rank {peer}, "
                            "whose connection closed (it exited, or refused a message longer than "
                            f"{MAX_FRAME_BYTES} bytes): connection closed by peer")

    def _mismatch(self, peer: int, want: int, got: int) -> CommError:
        return CommError(f"tidal.comm data plane: rank {self.rank} expected {want} bytes from rank {peer} "
                         f"but got {got}: the ranks issued different collectives, or the same one with "
                         "different sizes")


# -- algorithms -------------------------------------------------------------------------------
# `src(c)` / `dst(c)` give chunk c's flat input / output array; `combine(a, b, out)` reduces two
# arrays into `out` (which may be `a`); `finish(x)` finalizes a fully reduced piece (AVG's divide).

def ring_reduce_scatter(mesh: Mesh, src, dst, last: int, combine, finish=None, forward: bool = False) -> None:
    """Reduce-scatter around the ring: chunk `last` ends reduced over every rank in `dst(last)`.
    With `forward`, its pieces are sent on the moment they are final (an all-gather's first step)."""
    n, nxt, prv = mesh.size, mesh.next, mesh.prev
    if n == 1:
        out = dst(last)
        if out is not src(last):
            np.copyto(out, src(last))
        if finish is not None:
            finish(out)
        return
    first = (last - 1) % n
    head = src(first)
    for lo, hi in pieces(head.shape[0], head.itemsize):
        mesh.send(nxt, head[lo:hi], first)
    for step in range(n - 1):
        c = (last - 2 - step) % n
        a, out = src(c), dst(c)
        final = step == n - 2
        for lo, hi in pieces(a.shape[0], a.itemsize):
            combine(a[lo:hi], mesh.recv_array(prv, a.dtype, hi - lo), out[lo:hi])
            if final and finish is not None:
                finish(out[lo:hi])
            if not final or forward:
                mesh.send(nxt, out[lo:hi], c)


def direct_all_reduce(mesh: Mesh, buf: np.ndarray, combine, finish=None) -> None:
    """All-reduce of a small buffer in one round: every rank sends it to every other rank, then
    reduces all of them in rank order (so every rank computes the same bits)."""
    n, me = mesh.size, mesh.rank
    for k in range(1, n):
        mesh.send((me + k) % n, buf)
    parts = [buf if p == me else mesh.recv_array(p, buf.dtype, buf.shape[0]) for p in range(n)]
    total = parts[0].copy()
    for part in parts[1:]:
        combine(total, part, total)
    if finish is not None:
        finish(total)
    mesh.settle()  # `buf` may still be leaving
    np.copyto(buf, total)


def ring_all_gather(mesh: Mesh, dst, own: int, own_sent: bool = False) -> None:
    """All-gather around the ring: every rank starts with chunk `own` in `dst(own)` (already sent
    on when `own_sent`) and ends with every chunk. Pieces are forwarded as they arrive."""
    n, nxt, prv = mesh.size, mesh.next, mesh.prev
    if n == 1:
        return
    if not own_sent:
        mine = dst(own)
        for lo, hi in pieces(mine.shape[0], mine.itemsize):
            mesh.send(nxt, mine[lo:hi], own)
    for step in range(n - 1):
        c = (own - 1 - step) % n
        out = dst(c)
        mesh.settle(c)  # this memory may still be leaving from an earlier phase
        for lo, hi in pieces(out.shape[0], out.itemsize):
            mesh.recv_into(prv, out[lo:hi])
            if step < n - 2:
                mesh.send(nxt, out[lo:hi], c)


def chain_broadcast(mesh: Mesh, buf: np.ndarray, root: int) -> None:
    """Broadcast from `root` along the ring, piece by piece (each rank forwards as it receives)."""
    n = mesh.size
    pos = (mesh.rank - root) % n
    for lo, hi in pieces(buf.shape[0], buf.itemsize):
        if pos:
            mesh.recv_into(mesh.prev, buf[lo:hi])
        if pos < n - 1:
            mesh.send(mesh.next, buf[lo:hi])


def chain_reduce(mesh: Mesh, buf: np.ndarray, root: int, combine, finish=None) -> None:
    """Reduce into `root` along the ring (starting after it), piece by piece; only the root's
    buffer changes."""
    n = mesh.size
    if n == 1:
        if finish is not None:
            finish(buf)
        return
    pos = (mesh.rank - root - 1) % n  # 0 starts the chain, n - 1 is the root
    partial = np.empty_like(buf) if 0 < pos < n - 1 else None
    for lo, hi in pieces(buf.shape[0], buf.itemsize):
        if pos == 0:
            mesh.send(mesh.next, buf[lo:hi])
            continue
        out = buf[lo:hi] if pos == n - 1 else partial[lo:hi]
        combine(buf[lo:hi], mesh.recv_array(mesh.prev, buf.dtype, hi - lo), out)
        if pos == n - 1:
            if finish is not None:
                finish(out)
        else:
            mesh.send(mesh.next, out)  # ZeroMQ holds a reference: `partial` outlives its sends


def exchange(mesh: Mesh, outgoing: list, incoming: list) -> None:
    """All-to-all: `outgoing[p]` goes to rank p and `incoming[p]` is filled from rank p."""
    n, me = mesh.size, mesh.rank
    for k in range(1, n):
        part = outgoing[(me + k) % n]
        for lo, hi in pieces(part.shape[0], part.itemsize):
            mesh.send((me + k) % n, part[lo:hi])
    np.copyto(incoming[me], outgoing[me])
    for k in range(1, n):
        part = incoming[(me - k) % n]
        for lo, hi in pieces(part.shape[0], part.itemsize):
            mesh.recv_into((me - k) % n, part[lo:hi])


def send_to(mesh: Mesh, buf: np.ndarray, peer: int, header: tuple) -> None:
    """Point-to-point send: a header (op `OP_SEND`, dtype, count, tag, -1, -1, itemsize) then the data
    in pieces."""
    mesh.send_header(peer, header)
    for lo, hi in pieces(buf.shape[0], buf.itemsize):
        mesh.send(peer, buf[lo:hi])


def recv_from(mesh: Mesh, buf: np.ndarray, peer: int | None, verify) -> int:
    """Point-to-point receive into `buf` from `peer` (None: whichever rank sends first); returns it.
    `verify(peer, header)` raises when the sender's header (None: not a header) does not match."""
    if peer is None:
        peer = mesh.poll_any([p for p in range(mesh.size) if p != mesh.rank])
    header = mesh.recv_header(peer)
    try:
        verify(peer, header)
    except CommError:
        if header is not None and header[0] == OP_SEND:  # skip the unwanted message: the pair stays in step
            for _ in pieces(header[2], header[6]):
                mesh._recv_frame(peer)
        raise
    for lo, hi in pieces(buf.shape[0], buf.itemsize):
        mesh.recv_into(peer, buf[lo:hi])
    return peer


def _tcp_host() -> str:
    """The interface for TCP data-plane sockets: TIDAL_BIND_ADDR, loopback for a local master, else
    the interface this host uses to reach the master."""
    master = os.environ.get("MASTER_ADDR", "127.0.0.1")
    host = bind_address(master)
    if os.environ.get("TIDAL_BIND_ADDR") or host in ("127.0.0.1", "::1"):
        return host
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((master, 9))  # no packet is sent: this only picks the route
            return probe.getsockname()[0]
    except OSError:
        return host
