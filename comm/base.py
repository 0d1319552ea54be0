"""What the coordinator and its clients share: errors, timings, liveness of local processes."""
from __future__ import annotations

import os
import socket

HEARTBEAT_INTERVAL = 1.0   # seconds between heartbeats (each way)
# A peer silent for longer is declared dead; raise it for ranks that hold the GIL for long stretches.
HEARTBEAT_TIMEOUT = float(os.environ.get("TIDAL_HEARTBEAT_TIMEOUT", "5.0"))
LIVENESS_CHECK = 0.25      # seconds between checks that peers on this host still run


class CommError(RuntimeError):
    """A control-plane failure."""


class CommTimeoutError(CommError, TimeoutError):
    """A control-plane call did not complete in time."""


class JobAbortedError(CommError):
    """The job was aborted: a rank died, stopped answering, or called abort."""

    rank: int | None = None     # the rank that died or aborted, when known


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
