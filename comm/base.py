"""What the coordinator and its clients share: errors, timings, liveness of local processes."""
from __future__ import annotations

import enum
import os
import socket

HEARTBEAT_INTERVAL = 1.0   # seconds between ZeroMQ (ZMTP) heartbeats on the control plane's connections
# A connection that hears nothing for longer is closed and its peer declared dead. The heartbeats are
# sent and answered by libzmq's I/O thread, not by Python, so a rank holding the GIL stays alive.
HEARTBEAT_TIMEOUT = float(os.environ.get("TIDAL_HEARTBEAT_TIMEOUT", "5.0"))
LIVENESS_CHECK = 0.25      # seconds between checks that peers on this host still run
EXIT_GRACE = 0.5           # a lost connection to a local process: time its pid gets to vanish ("died")
# The largest control-plane message a rank sends (an object exchanged, a stored value); the sockets
# refuse longer frames before reading them, so a peer cannot make a rank allocate what it announces.
MAX_CONTROL_BYTES = int(os.environ.get("TIDAL_COMM_MAX_CONTROL_BYTES", 64 << 20))
ENVELOPE_BYTES = 4096      # room for a message's signature and envelope around its payload


class CommError(RuntimeError):
    """A control-plane failure."""


class CommTimeoutError(CommError, TimeoutError):
    """A control-plane call did not complete in time."""


class JobAbortedError(CommError):
    """The job was aborted: a rank died, stopped answering, or called abort."""

    rank: int | None = None     # the rank that died or aborted, when known


class CollectiveMismatchError(CommError):
    """The ranks of a group issued different collectives at the same point of their programs."""


def heartbeats(sock, zmq, timeout: float = HEARTBEAT_TIMEOUT) -> None:
    """Turn on ZMTP heartbeats: libzmq pings the peer and drops a connection silent for `timeout` s."""
    sock.setsockopt(zmq.HEARTBEAT_IVL, int(min(HEARTBEAT_INTERVAL, timeout / 3) * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TIMEOUT, int(timeout * 1000))
    sock.setsockopt(zmq.HEARTBEAT_TTL, int(timeout * 1000))


def monitor_disconnects(sock):
    """A monitor socket that reports every connection of `sock` that closes (see `closed_connections`)."""
    zmq = zmq_module()
    return sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)


def closed_connections(monitor, zmq) -> list:
    """The file descriptors of the connections `monitor` reported closed since the last call."""
    from zmq.utils.monitor import parse_monitor_message
    fds = []
    while True:
        try:
            event = parse_monitor_message(monitor.recv_multipart(zmq.NOBLOCK))
        except zmq.Again:
            return fds
        if event["event"] == zmq.EVENT_DISCONNECTED:
            fds.append(int(event["value"]))


def stop_monitor(sock, monitor) -> None:
    """Detach and close a socket monitor (before the socket itself is closed)."""
    try:
        sock.disable_monitor()
    except Exception:  # noqa: BLE001 - the socket may already be closed
        pass
    monitor.close(0)


def zmq_module():
    """The zmq module, imported on first use (`import tidal` must not import zmq)."""
    import zmq
    return zmq


def process_identity() -> dict:
    """Who this process is, so that a peer on the same host can tell when it dies."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return {"pid": os.getpid(), "host": socket.gethostname(), "pidns": namespace}


def same_host(identity: dict) -> bool:
    """Whether `identity` (from `process_identity`) names a process whose pid this process can check."""
    mine = process_identity()
    return identity.get("host") == mine["host"] and identity.get("pidns") == mine["pidns"]


def process_alive(pid: int) -> bool:
    """Whether process `pid` on this host exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in (b"Z", b"X")


def tcp_endpoint(addr: str, port: int) -> str:
    """A ZeroMQ TCP endpoint; IPv6 literals get brackets."""
    host = f"[{addr}]" if ":" in addr and not addr.startswith("[") else addr
    return f"tcp://{host}:{port}"


def bind_address(master_addr: str) -> str:
    """The interface the coordinator binds: TIDAL_BIND_ADDR if set, loopback for a local master
    address, else the master address itself (never every interface unless asked)."""
    override = os.environ.get("TIDAL_BIND_ADDR")
    if override:
        return override
    if master_addr in ("localhost", "", "127.0.0.1") or master_addr.startswith("127."):
        return "127.0.0.1"
    if master_addr in ("::1", "[::1]"):
        return "::1"
    try:
        return socket.getaddrinfo(master_addr, None)[0][4][0]
    except socket.gaierror:
        return master_addr


class ReduceOp(enum.Enum):
    """How a collective combines the ranks' values (torch.distributed.ReduceOp)."""

    SUM = 0
    AVG = 1
    PRODUCT = 2
    MIN = 3
    MAX = 4
    BAND = 5
    BOR = 6
    BXOR = 7

    def __repr__(self) -> str:
        return f"<RedOpType.{self.name}: {self.value}>"

    def __str__(self) -> str:
        return f"RedOpType.{self.name}"


ReduceOp.RedOpType = ReduceOp  # torch spells the members ReduceOp.RedOpType.SUM as well
