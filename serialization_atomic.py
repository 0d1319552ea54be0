"""Atomic checkpoint writes: a save goes to a temporary file beside the target, then replaces it in one step.

The temporary file's name carries the writer's host tag and pid, so that a later save of the same path removes
the files of writers that died mid-save (killed processes), and never those of a writer still running.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import socket
import tempfile

__all__ = ["atomic_write", "temp_prefix"]


def _new_file_mode(path: str) -> int:
    try:
        return os.stat(path).st_mode & 0o7777  # replacing a file keeps its permissions
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def _host_tag() -> str:
    """8 hex digits naming this host (and pid namespace): a pid in a temporary file's name is
    only checked where it means the same process."""
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        namespace = 0
    return hashlib.sha1(f"{socket.gethostname()}/{namespace}".encode()).hexdigest()[:8]


def temp_prefix(path: str, pid: int) -> str:
    """The start of the name of the temporary file process `pid` of this host writes `path` through."""
    return f".{os.path.basename(path)}.{_host_tag()}-{pid}."


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or a pid we cannot check: assume it runs
        return True
    return True


def _remove_stale_temps(path: str) -> None:
    """Delete temporary files left beside `path` by earlier saves whose process died (killed during
    a save): their names carry the writer's host tag and pid; a running writer's file is kept."""
    directory = os.path.dirname(path) or "."
    pattern = re.compile(re.escape(f".{os.path.basename(path)}.{_host_tag()}-") + r"(\d+)\.[^.]+\.tmp\Z")
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match and int(match.group(1)) != os.getpid() and not _pid_running(int(match.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(directory, name))


def atomic_write(path: str, write) -> None:
    """Call `write(fp)` on a temporary file beside `path`, then move it over `path` in one step.
    The temporary file's name carries this process's pid, so that a later save of the same path
    removes it if this process is killed in between."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        raise RuntimeError(f"Parent directory {directory} does not exist.")
    mode = _new_file_mode(path)
    _remove_stale_temps(path)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(path, os.getpid()), suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fp:
            write(fp)
            fp.flush()
            os.fsync(fp.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable where the OS allows it
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
