"""The launcher and the control plane: real ranks on loopback, faults, forged messages.

Every rank script arms `signal.alarm` so that no process outlives a failed test, and every
test and subprocess call has a timeout."""
import os
import queue
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from tidal.comm import wire
from tidal.comm.base import CommTimeoutError
from tidal.comm.control import ControlClient, Coordinator
from tidal.comm.launch import free_port, rank_environment

# Prepended to every rank script: a hard deadline, then the process group.
PREAMBLE = """\
import os, signal, sys, time
signal.alarm(50)
import tidal.comm as dist
"""


def _script(tmp_path, body: str) -> str:
    path = tmp_path / "rank_script.py"
    path.write_text(PREAMBLE + textwrap.dedent(body))
    return str(path)


def _launch(script: str, nproc: int, *extra, timeout: float = 50) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tidal.comm.launch", "--nproc-per-node", str(nproc), *extra, script],
                          capture_output=True, text=True, timeout=timeout)


def _lines(stream, sink: queue.Queue) -> None:
    for line in iter(stream.readline, ""):
        sink.put(line.rstrip("\n"))
    stream.close()


def _wait_for(lines: queue.Queue, prefix: str, timeout: float = 30, seen: list | None = None) -> str:
    """The first line starting with `prefix`; the lines before it go to `seen`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
        except queue.Empty:
            raise AssertionError(f"no line starting with {prefix!r} within {timeout} s; got {seen}") from None
        if line.startswith(prefix):
            return line
        if seen is not None:
            seen.append(line)


class _Ranks:
    """Ranks started directly (no launcher), so a test can kill or stop one of them."""

    def __init__(self, script: str, world_size: int):
        port, secret = free_port(), os.urandom(16).hex()
        self.procs, self.lines = [], []
        for rank in range(world_size):
            env = {**os.environ, **rank_environment(rank, rank, world_size, world_size, "127.0.0.1", port, secret)}
            proc = subprocess.Popen([sys.executable, script], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, text=True)
            self.procs.append(proc)
            self.lines.append(queue.Queue())
            threading.Thread(target=_lines, args=(proc.stdout, self.lines[-1]), daemon=True).start()

    def output(self, rank: int) -> list:
        """Every line rank `rank` printed so far."""
        out = []
        while not self.lines[rank].empty():
            out.append(self.lines[rank].get())
        return out

    def kill_all(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait(10)


# -- in one process ------------------------------------------------------------------------------

@pytest.mark.timeout(30)
def test_wire_format_round_trips_and_rejects_malformed_input():
    values = [None, True, False, 0, -1, 2 ** 100, -2 ** 70, 1.5, float("inf"), "h\u00e9llo", b"\x00\xff", [],
              (), {}, [1, (2, 3), {"a": b"x", (1, 2): None}]]
    for value in values:
        decoded = wire.decode(wire.encode(value))
        assert decoded == value and type(decoded) is type(value)
    for bad in [b"", b"i", b"i\x00\x00\x00\x05ab", b"l\xff\xff\xff\xff", b"f\x00", b"Q", b"NN",
                b"d\x00\x00\x00\x01l\x00\x00\x00\x00N", b"l" + b"\x00\x00\x00\x01l" * 100 + b"\x00" * 4]:
        with pytest.raises(ValueError, match="malformed"):
            wire.decode(bad)
    with pytest.raises(TypeError, match="cannot send an object of type set"):
        wire.encode({1, 2})
    frames = wire.pack_message(b"key", "hb", 3, 7, {})
    assert wire.unpack_message(b"key", frames) == ("hb", 3, 7, {})
    assert wire.unpack_message(b"other", frames) is None


@pytest.mark.timeout(30)
def test_importing_tidal_does_not_import_zmq():
    code = "import sys, tidal, tidal.comm, tidal.comm.launch; assert 'zmq' not in sys.modules, 'zmq imported'"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=25)
    assert result.returncode == 0, result.stderr


@pytest.mark.timeout(30)
def test_single_process_group_and_api_errors():
    import tidal.comm as dist

    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_rank()
    with pytest.raises(ValueError, match="backend 'nccl' is not available"):
        dist.init_process_group("nccl", world_size=1, rank=0)
    dist.init_process_group("gloo", world_size=1, rank=0, timeout=10)
    try:
        assert dist.is_initialized() and (dist.get_rank(), dist.get_world_size()) == (0, 1)
        with pytest.raises(ValueError, match="twice"):
            dist.init_process_group(world_size=1, rank=0)
        assert dist.barrier(async_op=True).wait()
        group = dist.default_group()
        assert group.control.all_gather_object({"a": 1}) == [{"a": 1}]
        solo = dist.new_group([0])
        assert (solo.rank(), solo.size(), dist.get_global_rank(solo, 0)) == (0, 1, 0)
        closed = []
        solo.on_destroy(lambda: closed.append("solo"))
        group.on_destroy(lambda: closed.append("world"))
    finally:
        dist.destroy_process_group()
    assert not dist.is_initialized() and closed == ["solo", "world"]


# -- the calls, on 2 and 4 ranks -------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("nproc", [2, 4])
def test_control_calls_across_ranks(tmp_path, nproc):
    script = _script(tmp_path, """
        dist.init_process_group("gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
        assert (rank, world) == (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        assert dist.is_initialized() and dist.get_backend() == "gloo"
        c = dist.default_group().control
        c.barrier(); c.barrier("tagged")
        obj = {"from": rank, "blob": b"\\x00\\xff", "t": (1, 2.5, None, True), "big": 2 ** 80, "l": [[], {}]}
        got = c.broadcast_object(obj if rank == world - 1 else "ignored", src=world - 1)
        assert got == {**obj, "from": world - 1}, got
        assert c.all_gather_object([rank, f"r{rank}"]) == [[r, f"r{r}"] for r in range(world)]
        # key-value store: get waits for the set; add counts across ranks
        if rank == world - 1:
            time.sleep(0.2)
            c.set("ready", b"yes")
        assert c.get("ready") == b"yes"
        c.add("counter", rank + 1)
        c.barrier()
        assert int(c.get("counter")) == world * (world + 1) // 2
        try:
            c.get("missing", wait=False)
            raise AssertionError("no KeyError")
        except KeyError:
            pass
        try:
            c.get("never-set", timeout=0.3)
            raise AssertionError("no timeout")
        except TimeoutError as exc:
            assert "get('never-set') timed out" in str(exc)
        c.barrier()
        if rank == 1:
            assert c.delete("ready") is True and c.delete("ready") is False
        c.barrier()
        assert c.check(["counter"]) and not c.check(["ready"])
        # a sub-group: local ranks, its own gathers and key namespace
        evens = dist.new_group([r for r in range(world) if r % 2 == 0])
        assert evens.ranks == tuple(range(0, world, 2))
        if rank % 2 == 0:
            assert dist.get_rank(evens) == rank // 2 and dist.get_world_size(evens) == len(evens.ranks)
            assert evens.control.all_gather_object(rank) == list(range(0, world, 2))
            assert evens.control.broadcast_object("hi" if rank == 0 else None, src=0) == "hi"
            evens.control.set("counter", b"group")
            evens.control.barrier()
        else:
            assert dist.get_rank(evens) == -1 and evens.control is None
        c.barrier()
        assert c.get("counter") != b"group"
        # ranks that disagree on the call get an error naming both calls, not a hang
        try:
            c.barrier("a") if rank == 0 else c.all_gather_object(1)
            raise AssertionError("no mismatch error")
        except RuntimeError as exc:
            assert "rank 0 called barrier('a')" in str(exc) and "called all_gather_object" in str(exc), exc
        try:
            c.all_gather_object(object())
            raise AssertionError("no TypeError")
        except TypeError as exc:
            assert "cannot send an object of type object" in str(exc)
        assert c.all_gather_object(rank) == list(range(world))    # still in step after both errors
        print("DONE", rank)
        dist.destroy_process_group()
        assert not dist.is_initialized()
    """)
    result = _launch(script, nproc)
    assert result.returncode == 0, result.stderr
    assert sorted(line for line in result.stdout.splitlines() if "DONE" in line) == \
        [f"[rank {r}] DONE {r}" for r in range(nproc)]


# -- faults ------------------------------------------------------------------------------------

@pytest.mark.timeout(60)
@pytest.mark.parametrize("victim,how", [(2, signal.SIGKILL), (0, signal.SIGKILL), (2, signal.SIGSTOP),
                                        (0, signal.SIGSTOP)])
def test_dead_or_silent_rank_aborts_the_others(tmp_path, victim, how):
    """A killed rank (process gone) or a stopped one (silent: no heartbeats) makes every other
    rank's blocking call raise within 10 s, naming it; rank 0 is the coordinator's host."""
    script = _script(tmp_path, f"""
        dist.init_process_group()
        rank = dist.get_rank()
        c = dist.default_group().control
        c.add_abort_callback(lambda error: sys.stdout.write(f"CALLBACK {{error.rank}}\\n"))
        c.barrier()
        print("READY", flush=True)
        if rank == {victim}:
            time.sleep(60)
        start = time.monotonic()
        try:
            c.barrier()
            print("NO ERROR", flush=True)
        except RuntimeError as exc:
            print(f"RAISED {{time.monotonic() - start:.2f}} {{exc}}", flush=True)
    """)
    ranks = _Ranks(script, 3)
    try:
        for rank in range(3):   # every rank is past the first barrier
            _wait_for(ranks.lines[rank], "READY")
        os.kill(ranks.procs[victim].pid, how)
        for rank in set(range(3)) - {victim}:
            seen = []
            raised = _wait_for(ranks.lines[rank], "RAISED", 20, seen).split(" ", 2)
            assert float(raised[1]) < 10, raised
            assert f"rank {victim}" in raised[2], raised
            assert ("stopped responding" if how == signal.SIGSTOP else "died") in raised[2], raised
            assert ranks.procs[rank].wait(10) == 0
            assert f"CALLBACK {victim}" in seen + ranks.output(rank)
    finally:
        ranks.kill_all()


@pytest.mark.timeout(60)
def test_rendezvous_with_a_missing_rank_names_it(tmp_path):
    script = _script(tmp_path, """
        try:
            dist.init_process_group(timeout=2.0)
        except TimeoutError as exc:
            print("TIMEOUT", exc, flush=True)
    """)
    env = {**os.environ, **rank_environment(0, 0, 3, 3, "127.0.0.1", free_port(), "s3cret")}
    results = [subprocess.Popen([sys.executable, script], env={**env, "RANK": str(r), "LOCAL_RANK": str(r)},
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for r in (0, 2)]
    try:
        for proc in results:
            out = proc.communicate(timeout=30)[0]
            assert "TIMEOUT" in out and "rank 1 never arrived (2 of 3 ranks joined)" in out, out
    finally:
        for proc in results:
            proc.kill()


@pytest.mark.timeout(30)
def test_rendezvous_without_coordinator_names_rank_0():
    client = ControlClient(1, 2, "127.0.0.1", free_port(), "secret", timeout=0.5)
    try:
        with pytest.raises(CommTimeoutError, match=r"rank 0 never arrived"):
            client.rendezvous()
    finally:
        client.close()


def _signed(secret: bytes, kind: str, sender: int, seq: int, payload: dict) -> list:
    return wire.pack_message(secret, kind, sender, seq, payload)


@pytest.mark.timeout(30)
def test_messages_without_the_secret_are_rejected():
    import zmq

    coordinator = Coordinator(2, "127.0.0.1", 0, "right-secret", timeout=20).start()
    ctx = zmq.Context()
    forger = ctx.socket(zmq.DEALER)
    forger.setsockopt(zmq.LINGER, 0)
    forger.connect(f"tcp://127.0.0.1:{coordinator.port}")
    hello = {"world_size": 2, "pid": os.getpid(), "host": "x", "pidns": 0}
    forged = [
        [b"garbage"],                                                        # one frame
        [b"", b""],                                                          # empty frames
        [b"\x00" * 32, wire.encode(["hello", 1, 1, hello])],                 # a made-up tag
        _signed(b"wrong-secret", "hello", 1, 1, hello),                      # signed with another secret
        [*_signed(b"right-secret", "hello", 1, 1, hello)[:1], b"tampered"],  # a real tag on another body
        [b"a", b"b", b"c", b"d"],                                            # too many frames
        [os.urandom(32), os.urandom(5000)],
    ]
    clients = []
    try:
        for frames in forged:
            forger.send_multipart(frames)
        wrong = ControlClient(1, 2, "127.0.0.1", coordinator.port, "wrong-secret", timeout=0.5)
        clients.append(wrong)
        with pytest.raises(CommTimeoutError):
            wrong.rendezvous()
        # the coordinator is alive and the slot of rank 1 still free: the real ranks join
        clients += [ControlClient(r, 2, "127.0.0.1", coordinator.port, "right-secret", timeout=10) for r in (0, 1)]
        threads = [threading.Thread(target=c.rendezvous) for c in clients[1:]]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        gathered = {}
        threads = [threading.Thread(target=lambda c=c: gathered.update({c.rank: c.all_gather_object(c.rank)}))
                   for c in clients[1:]]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert gathered == {0: [0, 1], 1: [0, 1]}
        # a replay of a real rank's message from another connection is dropped too
        forger.send_multipart(_signed(b"right-secret", "gather", 0, 10 ** 6, {"key": "#9", "ranks": [0], "op": "x",
                                                                               "value": None, "select": None}))
        forger.send_multipart(_signed(b"right-secret", "hello", 0, 1, hello))
        assert forger.poll(300) == 0, "the coordinator answered a stranger"
        assert coordinator.is_alive()
        assert coordinator.rejected >= len(forged) + 2
        assert coordinator.aborted is None
    finally:
        for client in clients:
            client.close()
        coordinator.close(0.5)
        ctx.destroy(0)


# -- the launcher --------------------------------------------------------------------------------

@pytest.mark.timeout(60)
def test_launcher_reports_a_failing_rank_and_stops_the_others(tmp_path):
    script = _script(tmp_path, f"""
        import traceback
        dist.init_process_group()
        rank = dist.get_rank()
        (open(r"{tmp_path}/pid%d" % rank, "w")).write(str(os.getpid()))
        dist.barrier()
        if rank == 1:
            try:
                {{}}["missing-key-on-rank-1"]
            except KeyError:
                traceback.print_exc()
                sys.exit(7)
        time.sleep(45)      # not in a collective: only the launcher can stop these
    """)
    start = time.monotonic()
    result = _launch(script, 3, "--stop-grace", "2")
    assert time.monotonic() - start < 30
    assert result.returncode == 7, result.stderr
    assert "rank 1 (local rank 1" in result.stderr and "failed with exit code 7" in result.stderr, result.stderr
    assert "KeyError: 'missing-key-on-rank-1'" in result.stderr.split("last lines of rank 1's stderr:")[1]
    assert "stopped rank(s) 0, 2" in result.stderr
    for rank in (0, 2):
        with pytest.raises(ProcessLookupError):
            os.kill(int((tmp_path / f"pid{rank}").read_text()), 0)


@pytest.mark.timeout(60)
def test_launcher_names_the_rank_that_raised_not_those_it_aborted(tmp_path):
    script = _script(tmp_path, """
        dist.init_process_group()
        dist.barrier()
        if dist.get_rank() == 2:
            raise ValueError("boom on rank 2")
        dist.barrier()
    """)
    result = _launch(script, 3)
    assert result.returncode == 1, result.stderr
    report = result.stderr[result.stderr.index("tidal.comm.launch: rank"):]
    assert report.startswith("tidal.comm.launch: rank 2 ") and "ValueError: boom on rank 2" in report, report
    # the others were told why
    assert "[rank 0] tidal.comm.base.JobAbortedError" in result.stderr and "uncaught ValueError: boom on rank 2" \
        in result.stderr


@pytest.mark.timeout(60)
def test_sigint_to_the_launcher_stops_every_rank(tmp_path):
    script = _script(tmp_path, """
        dist.init_process_group()
        if dist.get_rank() == 1:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)     # needs the SIGKILL after the grace period
        dist.barrier()
        print("READY", os.getpid(), flush=True)
        time.sleep(45)
    """)
    launcher = subprocess.Popen([sys.executable, "-m", "tidal.comm.launch", "--nproc-per-node", "2", "--stop-grace",
                                 "1", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=_lines, args=(launcher.stdout, lines), daemon=True).start()
    try:
        pids = [int(_wait_for(lines, "[rank").split()[-1]) for _ in range(2)]
        launcher.send_signal(signal.SIGINT)
        assert launcher.wait(20) == 128 + signal.SIGINT
        assert "got SIGINT; stopped all 2 ranks" in launcher.stderr.read()
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
    finally:
        if launcher.poll() is None:
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
