"""Start the ranks of a job on this node, like torchrun:

    python -m tidal.comm.launch --nproc-per-node N [--nnodes M --node-rank R
        --master-addr A --master-port P] [-m | --no-python] script.py args...

(`-m tidal.compat script.py` runs a PyTorch script on tidal.) Each child gets RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID and
TIDAL_JOB_SECRET (random per job; with several nodes, set it to the same value on every node).
Output is streamed with a "[rank N]" prefix. When a rank fails, the others are stopped (SIGTERM,
then SIGKILL after --stop-grace seconds) and the launcher reports the rank, its exit code or
signal and the last lines of its traceback; Ctrl-C stops every rank. A rank that exits with 0
while others still run is no failure (it may just have finished first); if the others wait for
it, their collectives fail within seconds (its connections closed) and they are stopped then.
A rank that raised but lives on (a non-daemon thread) aborts the job; it is stopped and named.
"""
from __future__ import annotations

import argparse
import collections
import os
import queue
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time

TAIL_LINES = 40       # stderr lines kept per rank for the failure report
REPORT_LINES = 20
ABORT_SETTLE = 2.0    # seconds the other ranks get to exit after a rank reports an aborted job


def free_port(addr: str = "127.0.0.1") -> int:
    """A TCP port that is free on `addr` right now."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((addr, 0))
        return sock.getsockname()[1]


def rank_environment(rank: int, local_rank: int, world_size: int, local_world_size: int, master_addr: str,
                     master_port: int, secret: str, node_rank: int = 0) -> dict:
    """The variables that tell a process which rank of which job it is."""
    return {"RANK": str(rank), "WORLD_SIZE": str(world_size), "LOCAL_RANK": str(local_rank),
            "LOCAL_WORLD_SIZE": str(local_world_size), "GROUP_RANK": str(node_rank), "NODE_RANK": str(node_rank),
            "MASTER_ADDR": master_addr, "MASTER_PORT": str(master_port), "TIDAL_JOB_SECRET": secret,
            "TORCHELASTIC_RUN_ID": "none", "PYTHONUNBUFFERED": "1"}  # torchrun's default run id


class _Rank:
    """One child process, its output pumps and the tail of its stderr."""

    def __init__(self, rank: int, command: list, env: dict, prefix: bool, lock: threading.Lock):
        self.rank = rank
        self.tail: collections.deque = collections.deque(maxlen=TAIL_LINES)
        # Its own session, so a signal reaches the whole process tree of the rank (data loader
        # workers...) and Ctrl-C at the terminal goes to the launcher, which stops ranks in order.
        self.process = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, start_new_session=True)
        tag = f"[rank {rank}] ".encode() if prefix else b""
        self.pumps = [threading.Thread(target=self._pump, args=(self.process.stdout, sys.stdout, tag, None, lock),
                                       daemon=True),
                      threading.Thread(target=self._pump, args=(self.process.stderr, sys.stderr, tag, self.tail, lock),
                                       daemon=True)]
        for pump in self.pumps:
            pump.start()

    @staticmethod
    def _pump(source, sink, tag: bytes, tail, lock: threading.Lock) -> None:
        out = sink.buffer if hasattr(sink, "buffer") else None
        for line in iter(source.readline, b""):
            if tail is not None:
                tail.append(line.decode("utf-8", "replace").rstrip("\n"))
            with lock:
                if out is not None:
                    out.write(tag + line)
                    out.flush()
                else:
                    sink.write((tag + line).decode("utf-8", "replace"))
        source.close()

    def signal(self, signum: int) -> None:
        """Send `signum` to the rank's process group (if it still runs)."""
        try:
            os.killpg(self.process.pid, signum)
        except (ProcessLookupError, PermissionError):
            pass

    def describe_exit(self) -> str:
        """'exit code 3' or 'signal SIGKILL'."""
        code = self.process.returncode
        if code is not None and code < 0:
            try:
                return f"signal {signal.Signals(-code).name}"
            except ValueError:
                return f"signal {-code}"
        return f"exit code {code}"

    def traceback_tail(self) -> list:
        """The last traceback in the rank's stderr (or its last lines)."""
        lines = list(self.tail)
        starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent call last)")]
        lines = lines[starts[-1]:] if starts else lines
        return lines[-REPORT_LINES:]


def _report_exit(rank: _Rank, exits: queue.Queue) -> None:
    rank.process.wait()
    exits.put(rank)


def _exit_status(code: int) -> int:
    return 128 - code if code < 0 else (code if 0 < code < 256 else 1)


def stop_all(ranks: list, grace: float) -> list:
    """SIGTERM every rank still running, then SIGKILL those still there after `grace` seconds;
    the ranks that were running."""
    running = [r for r in ranks if r.process.poll() is None]
    for rank in running:
        rank.signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for rank in running:
        try:
            rank.process.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    for rank in running:
        if rank.process.poll() is None:
            rank.signal(signal.SIGKILL)
            rank.process.wait()
    for rank in ranks:   # kill what a stopped or failed rank left behind in its process group
        if rank in running or rank.process.returncode != 0:
            rank.signal(signal.SIGKILL)
    return running


def run(args: argparse.Namespace) -> int:
    """Start the ranks, wait for them, stop all on the first failure; the exit status."""
    nproc, nnodes = args.nproc_per_node, args.nnodes
    if nproc < 1 or nnodes < 1 or not 0 <= args.node_rank < nnodes:
        raise SystemExit(f"tidal.comm.launch: bad sizes: --nproc-per-node {nproc} --nnodes {nnodes} "
                         f"--node-rank {args.node_rank}")
    secret = os.environ.get("TIDAL_JOB_SECRET")
    if nnodes > 1 and (not secret or not args.master_port):
        raise SystemExit("tidal.comm.launch: with several nodes, give --master-port and set TIDAL_JOB_SECRET to "
                         "the same random value on every node")
    secret = secret or secrets.token_hex(32)
    port = args.master_port or free_port(args.master_addr if args.master_addr not in ("localhost",) else "127.0.0.1")
    if args.no_python:
        command = [args.script] + args.script_args
    else:
        command = [sys.executable, "-u"] + (["-m", args.script] if args.module else [args.script]) + args.script_args
    world_size = nproc * nnodes
    lock = threading.Lock()
    exits: queue.Queue = queue.Queue()     # ranks in the order they exit; None for a signal
    interrupted: list = []

    def on_signal(signum, frame):
        interrupted.append(signum)
        exits.put(None)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    ranks: list[_Rank] = []
    exited: list[_Rank] = []
    stopped: list[_Rank] = []
    try:
        for local_rank in range(nproc):
            rank = args.node_rank * nproc + local_rank
            env = {**os.environ, **rank_environment(rank, local_rank, world_size, nproc, args.master_addr, port,
                                                    secret, args.node_rank)}
            ranks.append(_Rank(rank, command, env, not args.no_prefix, lock))
            threading.Thread(target=_report_exit, args=(ranks[-1], exits), daemon=True).start()
        while len(exited) < len(ranks) and not interrupted and all(r.process.returncode == 0 for r in exited):
            try:
                done = exits.get(timeout=0.5)
            except queue.Empty:
                continue
            if done is not None:
                exited.append(done)
        if exited and _learned_of_abort(exited[-1]):
            _collect_exits(exits, exited, len(ranks), ABORT_SETTLE)  # let the rank that caused it exit first
        if len(exited) < len(ranks):
            stopped = stop_all(ranks, args.stop_grace)
    except BaseException:
        stop_all(ranks, args.stop_grace)
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    for rank in ranks:
        for pump in rank.pumps:
            pump.join(2.0)
    if interrupted:
        print(f"tidal.comm.launch: got {signal.Signals(interrupted[0]).name}; stopped all {len(ranks)} ranks",
              file=sys.stderr)
        return 128 + interrupted[0]
    _collect_exits(exits, exited, len(ranks), None)
    failures = [r for r in exited if r.process.returncode != 0 and r not in stopped]
    if not failures:
        return 0
    first = exited.index(failures[0])
    finished = [r for r in exited[:first] if r.process.returncode == 0]
    # a rank whose leaving made the others fail may still be shutting down when they do: it exits after them
    meanwhile = [r for r in exited[first:] if r.process.returncode == 0]
    print(_failure_report(failures, stopped, ranks, finished, meanwhile), file=sys.stderr)
    return _exit_status(_root_cause(failures, []).process.returncode)


def _collect_exits(exits: queue.Queue, exited: list, count: int, timeout: float | None) -> None:
    """Add ranks to `exited` as they exit, until `count` have or `timeout` seconds pass."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while len(exited) < count:
        try:
            done = exits.get(timeout=None if deadline is None else max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            return
        if done is not None:
            exited.append(done)


def _learned_of_abort(rank: _Rank) -> bool:
    return rank.process.returncode != 0 and any("JobAbortedError" in line for line in rank.tail)


def _root_cause(failures: list, stopped: list) -> _Rank:
    """The first rank that failed on its own: not one that merely learned of another's failure;
    failing that, a rank that had to be stopped after printing a traceback of its own (it raised,
    aborting the job, but a thread kept its process alive)."""
    own = [r for r in failures if not _learned_of_abort(r)]
    raised = [r for r in stopped if any(line.startswith("Traceback (most recent call last)") for line in r.tail)
              and not _learned_of_abort(r)]
    return (own or raised or failures)[0]


def _failure_report(failures: list, stopped: list, ranks: list, finished: list = (), meanwhile: list = ()) -> str:
    failed = _root_cause(failures, stopped)
    report = [f"tidal.comm.launch: rank {failed.rank} (local rank {ranks.index(failed)}, pid {failed.process.pid}) "
              f"failed with {failed.describe_exit()}"]
    tail = failed.traceback_tail()
    if tail:
        report.append(f"  last lines of rank {failed.rank}'s stderr:")
        report += [f"    {line}" for line in tail]
    if failed in stopped:
        report[0] = (f"tidal.comm.launch: rank {failed.rank} (local rank {ranks.index(failed)}, pid "
                     f"{failed.process.pid}) raised and aborted the job but did not exit (a thread kept it alive); "
                     "it was stopped")
    others = [f"{r.rank} ({r.describe_exit()})" for r in failures if r is not failed]
    if others:
        report.append(f"tidal.comm.launch: then rank(s) {', '.join(others)} failed too")
    if finished:  # a rank that skipped a collective and finished makes the others' pending calls fail
        report.append(f"tidal.comm.launch: before that, rank(s) {', '.join(str(r.rank) for r in finished)} "
                      "had exited with code 0")
    if meanwhile:
        report.append(f"tidal.comm.launch: meanwhile, rank(s) {', '.join(str(r.rank) for r in meanwhile)} "
                      "exited with code 0")
    if stopped:
        report.append(f"tidal.comm.launch: stopped rank(s) {', '.join(str(r.rank) for r in stopped)}")
    return "\n".join(report)


def parse_args(argv: list | None = None) -> argparse.Namespace:
    """The launcher's command line."""
    parser = argparse.ArgumentParser(prog="python -m tidal.comm.launch", description=__doc__.split("\n\n")[0])
    parser.add_argument("--nproc-per-node", "--nproc_per_node", type=int, default=1, help="ranks on this node")
    parser.add_argument("--nnodes", type=int, default=1, help="number of nodes")
    parser.add_argument("--node-rank", "--node_rank", type=int, default=0, help="this node's index")
    parser.add_argument("--master-addr", "--master_addr", default="127.0.0.1", help="rank 0's address")
    parser.add_argument("--master-port", "--master_port", type=int, default=0, help="rank 0's port (0: a free one)")
    parser.add_argument("--stop-grace", type=float, default=5.0, help="seconds between SIGTERM and SIGKILL")
    parser.add_argument("--no-prefix", action="store_true", help="do not prefix output lines with the rank")
    parser.add_argument("-m", "--module", action="store_true", help="run the script as a module (python -m)")
    parser.add_argument("--standalone", action="store_true", help="torchrun's flag; one local node is the default")
    parser.add_argument("--no-python", "--no_python", action="store_true",
                        help="run the script as a command, not with python (e.g. a shell script)")
    parser.add_argument("script", help="the training script (or module with -m)")
    parser.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")
    return parser.parse_args(argv)


def main(argv: list | None = None) -> None:
    """Entry point of `python -m tidal.comm.launch`."""
    sys.exit(run(parse_args(argv)))


if __name__ == "__main__":
    main()
