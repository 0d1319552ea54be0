"""Faults across processes: a rank that leaves early, a rank that raises but lives on, a rank that
holds the GIL, ranks that issue different collectives, oversized frames, and temporary files left
by a killed `tidal.save`. Each test reproduces the fault on real ranks (loopback) or sockets, with
short timeouts; every rank script arms `signal.alarm` so no process outlives a failed test."""
import ctypes
import os
import re
import socket
import struct
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import tidal
from tidal import serialization
from tidal.comm import ring
from tidal.comm.base import ENVELOPE_BYTES, MAX_CONTROL_BYTES, CommError
from tidal.comm.control import ControlClient, Coordinator

PREAMBLE = """\
import os, signal, sys, time
signal.alarm(40)
import tidal
import tidal.comm as dist
"""


def _launch(tmp_path, body: str, nproc: int = 2, env: dict | None = None, timeout: float = 40):
    """Run `body` on `nproc` ranks under the launcher; (result, seconds it took)."""
    script = tmp_path / "rank_script.py"
    script.write_text(PREAMBLE + textwrap.dedent(body))
    start = time.monotonic()
    result = subprocess.run([sys.executable, "-m", "tidal.comm.launch", "--nproc-per-node", str(nproc),
                             "--stop-grace", "1", str(script)], capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, **(env or {})})
    return result, time.monotonic() - start


def _raised(stdout: str, rank: int) -> tuple:
    """(seconds, message) of the 'RAISED <s> <message>' line rank `rank` printed."""
    line = next(line for line in stdout.splitlines() if line.startswith(f"[rank {rank}] RAISED "))
    _, _, seconds, message = line.split(" ", 4)[1:]
    return float(seconds), message


# -- 1. a rank that finishes early and exits normally -------------------------------------------------
@pytest.mark.timeout(45)
@pytest.mark.parametrize("skipped, leaver", [("second", 1), ("first", 1), ("second", 0)])
def test_a_rank_that_exits_early_fails_the_others_pending_collective(tmp_path, skipped, leaver):
    """A rank skips a collective and exits with 0 (its group destroyed at exit). The other's pending
    all-reduce fails within seconds, as gloo's 'connection closed by peer', whether the data plane
    was already connected ('second') or not yet ('first'), and also when the rank that left hosts
    the coordinator (rank 0); the launcher then exits non-zero."""
    waiter = 1 - leaver
    result, took = _launch(tmp_path, f"""
        dist.init_process_group()
        rank = dist.get_rank()
        t = tidal.ones(2000)
        if {skipped == "second"}:
            dist.all_reduce(t)
            t.numpy()
        if rank == {leaver}:
            sys.exit(0)
        start = time.monotonic()
        try:
            dist.all_reduce(t)
            t.numpy()
            print("NO ERROR", flush=True)
        except RuntimeError as exc:
            print(f"RAISED {{time.monotonic() - start:.2f}} {{exc}}", flush=True)
            sys.exit(5)
    """)
    assert result.returncode == 5, (result.stdout, result.stderr)
    seconds, message = _raised(result.stdout, waiter)
    assert seconds < 5, message
    assert f"rank {leaver}" in message and "left the process group" in message, message
    assert f"rank {waiter} (local rank {waiter}" in result.stderr and "exit code 5" in result.stderr, result.stderr
    if leaver == 1:  # the leaver is reported: exited with 0 first, or (still shutting down) stopped, or exiting with
        # 0 just after the others failed
        assert (f"before that, rank(s) {leaver} had exited with code 0" in result.stderr
                or f"stopped rank(s) {leaver}" in result.stderr
                or f"meanwhile, rank(s) {leaver} exited with code 0" in result.stderr), result.stderr
    assert took < 20


# -- 2. a rank that raises while a non-daemon thread keeps it alive -----------------------------------
@pytest.mark.timeout(45)
def test_a_rank_that_raises_but_lives_on_aborts_the_job(tmp_path):
    result, took = _launch(tmp_path, """
        import threading
        dist.init_process_group()
        dist.barrier()
        if dist.get_rank() == 1:
            threading.Thread(target=time.sleep, args=(35,)).start()   # non-daemon: the process lives on
            raise ValueError("boom while a thread lives")
        start = time.monotonic()
        try:
            dist.barrier()
            print("NO ERROR", flush=True)
        except RuntimeError as exc:
            print(f"RAISED {time.monotonic() - start:.2f} {type(exc).__name__}: {exc}", flush=True)
            raise
    """)
    assert result.returncode == 1, (result.stdout, result.stderr)
    seconds, message = _raised(result.stdout, 0)
    assert seconds < 5 and message.startswith("JobAbortedError"), message
    assert "rank 1 aborted the job: it raised an uncaught ValueError: boom while a thread lives" in message, message
    report = result.stderr[result.stderr.index("tidal.comm.launch: rank"):]
    assert report.startswith("tidal.comm.launch: rank 1 ") and "did not exit" in report, report
    assert "ValueError: boom while a thread lives" in report, report
    assert took < 20


# -- 3. a healthy rank holding the GIL -------------------------------------------------------------------
@pytest.mark.timeout(45)
@pytest.mark.parametrize("victim", [0, 1])
def test_a_rank_holding_the_gil_is_not_declared_dead(tmp_path, victim):
    """Heartbeats come from libzmq's I/O thread, not Python: a rank (rank 0 hosts the coordinator)
    stuck 4.5 s in one C call that keeps the GIL outlives a heartbeat timeout of 2 s."""
    result, _ = _launch(tmp_path, f"""
        import ctypes
        dist.init_process_group()
        dist.barrier()
        if dist.get_rank() == {victim}:
            start = time.monotonic()
            ctypes.PyDLL(None).usleep(4_500_000)   # one C call that never releases the GIL
            print(f"HELD {{time.monotonic() - start:.1f}}", flush=True)
        dist.barrier()
        t = tidal.ones(3)
        dist.all_reduce(t)
        print("SUM", t.tolist(), flush=True)
    """, env={"TIDAL_HEARTBEAT_TIMEOUT": "2"})
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert f"[rank {victim}] HELD 4.5" in result.stdout
    assert result.stdout.count("SUM [2.0, 2.0, 2.0]") == 2, result.stdout


def test_holding_the_gil_in_c_really_blocks_python_threads():
    """The premise of the test above: PyDLL keeps the GIL, so a Python thread cannot run meanwhile."""
    ticks = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.01)
    thread = threading.Thread(target=tick)
    thread.start()
    time.sleep(0.05)
    start = time.monotonic()
    ctypes.PyDLL(None).usleep(300_000)
    end = time.monotonic()
    stop.set()
    thread.join()
    assert not [t for t in ticks if start + 0.02 < t < end - 0.02]


# -- 4. different collectives without the debug mode --------------------------------------------------
@pytest.fixture(scope="module")
def unchecked():
    from comm_ranks import RankPool
    pool = RankPool(2, env={"TIDAL_COMM_CHECK": "0"})
    yield pool
    pool.close()


def mismatched(kind: str) -> dict:
    """Rank side: this rank's half of case `kind`; the error and whether the group still works after."""
    from tidal import comm
    from tidal.comm import collectives as C
    rank = comm.get_rank()
    cases = {   # what each rank calls (the first two: the same byte count on both ranks)
        "dtype_same_bytes": lambda: C.all_reduce(tidal.ones(4) if rank == 0 else tidal.ones(4, dtype=tidal.int32)),
        "count_same_bytes": lambda: C.all_reduce(tidal.ones(2, dtype=tidal.float64) if rank == 0
                                                 else tidal.ones(4)),
        "op": lambda: C.all_reduce(tidal.ones(4)) if rank == 0 else C.broadcast(tidal.ones(4), src=0),
        "gather_vs_reduce": lambda: (C.all_gather_into_tensor(tidal.ones(4), tidal.ones(2)) if rank == 0
                                     else C.reduce_scatter_tensor(tidal.ones(2), tidal.ones(4))),
        "reduce_op": lambda: C.all_reduce(tidal.ones(3), op=C.ReduceOp.SUM if rank == 0 else C.ReduceOp.MAX),
        "root": lambda: C.broadcast(tidal.ones(2), src=rank),
        "splits": lambda: C.all_to_all_single(tidal.ones(4), tidal.ones(4), [1, 3] if rank == 0 else [2, 2],
                                              [1, 3] if rank == 0 else [2, 2]),
        "send_vs_collective": lambda: (C.send(tidal.ones(4), 1) if rank == 0 else C.all_reduce(tidal.ones(4))),
        "recv_dtype": lambda: (C.send(tidal.ones(2), 1, tag=3) if rank == 0
                               else C.recv(tidal.ones(1, dtype=tidal.float64), 0, tag=3)),
        "barrier": lambda: comm.barrier() if rank == 0 else C.all_reduce(tidal.ones(4)),
    }
    outcome = {}
    try:
        cases[kind]()
        tidal.sync()
        outcome.update(type=None, message=None)
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        outcome.update(type=type(exc).__name__, message=str(exc))
    if kind == "send_vs_collective":
        return outcome  # the unread all-reduce header leaves the pair out of step: the pool is thrown away
    t = tidal.ones(3) * (rank + 1)
    try:
        C.all_reduce(t)
        outcome["after"] = t.tolist()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        outcome["after"] = f"{type(exc).__name__}: {exc}"
    return outcome


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind, calls", [
    ("dtype_same_bytes", ["all_reduce(float32, 4 elements, SUM)", "all_reduce(int32, 4 elements, SUM)"]),
    ("count_same_bytes", ["all_reduce(float64, 2 elements, SUM)", "all_reduce(float32, 4 elements, SUM)"]),
    ("op", ["all_reduce(float32, 4 elements, SUM)", "broadcast(float32, 4 elements, src=0)"]),
    ("gather_vs_reduce", ["all_gather(float32, 2 elements)", "reduce_scatter(float32, 2 elements, SUM)"]),
    ("reduce_op", ["all_reduce(float32, 3 elements, SUM)", "all_reduce(float32, 3 elements, MAX)"]),
    ("root", ["broadcast(float32, 2 elements, src=0)", "broadcast(float32, 2 elements, src=1)"]),
])
def test_different_collectives_raise_on_every_rank_without_the_debug_mode(unchecked, kind, calls):
    results = unchecked.run(mismatched, kind, timeout=30)
    assert {r["type"] for r in results} == {"CollectiveMismatchError"}, results
    messages = {r["message"][r["message"].find("collective mismatch"):] for r in results}  # less the op's name
    assert len(messages) == 1, messages   # every rank saw every header: the same message
    message = messages.pop()
    assert f"rank 0 called {calls[0]} but rank 1 called {calls[1]}" in message, message
    assert all(r["after"] == [3.0, 3.0, 3.0] for r in results), results  # the group still works


@pytest.mark.timeout(60)
def test_all_to_all_split_sizes_are_checked_pairwise(unchecked):
    results = unchecked.run(mismatched, "splits", timeout=30)
    assert {r["type"] for r in results} == {"CollectiveMismatchError"}, results
    assert all("rank 0 sends 3 elements to rank 1 but rank 1 expects 2 from rank 0" in r["message"]
               for r in results), results
    assert all(r["after"] == [3.0, 3.0, 3.0] for r in results), results


@pytest.mark.timeout(60)
def test_a_receive_that_does_not_match_the_send_raises_and_skips_it(unchecked):
    results = unchecked.run(mismatched, "recv_dtype", timeout=30)
    assert results[0]["type"] is None and results[1]["type"] == "CollectiveMismatchError", results
    assert ("rank 1 called recv(float64, 1 element, tag=3) from rank 0, which sent send(float32, 2 elements, "
            "tag=3)") in results[1]["message"], results
    assert all(r["after"] == [3.0, 3.0, 3.0] for r in results), results  # the message was skipped: still in step


@pytest.mark.timeout(30)
def test_a_send_against_a_collective_raises():
    from comm_ranks import RankPool
    pool = RankPool(2, env={"TIDAL_COMM_CHECK": "0"})   # its own: the unread message leaves it out of step
    try:
        results = pool.run(mismatched, "send_vs_collective", timeout=20)
    finally:
        pool.close(kill=True)
    assert results[0]["type"] is None and results[1]["type"] == "CollectiveMismatchError", results
    assert ("rank 0 called send(float32, 4 elements, tag=0) but rank 1 called all_reduce(float32, 4 elements, SUM)"
            in results[1]["message"]), results


@pytest.mark.timeout(60)
def test_a_collective_against_a_barrier_raises_on_both_ranks():
    """Gathers and collectives share a call count: rank 1 stuck in all-reduce #k while rank 0 waits in
    barrier #k is a mismatch, caught by the coordinator, whether rank 1 is still connecting the data
    plane (its first collective) or waits for rank 0's header (then the group's data plane is out of
    step: its later collectives raise too, never garbage)."""
    from comm_ranks import RankPool
    pool = RankPool(2, env={"TIDAL_COMM_CHECK": "0"})
    try:
        first = pool.run(mismatched, "barrier", timeout=20)
        later = pool.run(mismatched, "barrier", timeout=20)
    finally:
        pool.close(kill=True)
    for results in (first, later):
        assert {r["type"] for r in results} == {"CollectiveMismatchError"}, results
        for r in results:
            assert re.search(r"ranks disagree on call \d+ of group world: rank 0 called barrier\(''\); rank 1 "
                             r"called all_reduce\(float32, 4 elements, SUM\)", r["message"]), results
    assert all(r["after"] == [3.0, 3.0, 3.0] for r in first), first   # no header had left: still in step
    assert all("out of step since an earlier mismatch" in r["after"] for r in later), later


@pytest.mark.timeout(30)
def test_the_coordinator_matches_stuck_collectives_with_control_calls():
    from tidal.comm.base import CollectiveMismatchError
    coordinator = Coordinator(2, "127.0.0.1", 0, "secret", timeout=10).start()
    clients = [ControlClient(r, 2, "127.0.0.1", coordinator.port, "secret", timeout=10) for r in (0, 1)]
    try:
        threads = [threading.Thread(target=c.rendezvous) for c in clients]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        for k in range(1, 50):      # rank 1 stuck a while in many collectives: one record kept, not 49
            clients[1].note_blocked(f"#{k}", f"all_reduce #{k}")
        assert clients[0].next_call() == "#1"
        clients[1].note_blocked("#2", "all_reduce(float32, 4 elements, SUM)")
        deadline = time.monotonic() + 5
        while list(coordinator._blocked) != ["#2"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert list(coordinator._blocked) == ["#2"]
        with pytest.raises(CollectiveMismatchError, match=r"ranks disagree on call 2 of group world: rank 0 called "
                                                          r"barrier\('x'\); rank 1 called all_reduce\(float32"):
            clients[0].barrier("x")  # the group's call #2 on rank 0
        while "#2" not in clients[1].mismatches and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "rank 0 called barrier('x')" in clients[1].mismatches["#2"]
        assert clients[0].out_of_step[""] == clients[1].out_of_step[""] == clients[1].mismatches["#2"]
    finally:
        for c in clients:
            c.close()
        coordinator.close(0.5)


# -- 5. message size caps on every socket facing the network ------------------------------------------
def _zmtp_peer(port: int) -> socket.socket:
    """A raw TCP connection that completes ZeroMQ's NULL handshake as a DEALER."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    sock.sendall(b"\xff" + b"\x00" * 8 + b"\x7f" + b"\x03\x00" + b"NULL".ljust(20, b"\x00") + b"\x00" + b"\x00" * 31)
    props = b"\x0bSocket-Type" + struct.pack(">I", 6) + b"DEALER"
    ready = b"\x05READY" + props
    sock.sendall(b"\x04" + bytes([len(ready)]) + ready)
    return sock


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(0.2)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if sock.recv(65536) == b"":
                return True
        except socket.timeout:
            continue
        except ConnectionResetError:
            return True
    return False


@pytest.mark.timeout(30)
def test_the_coordinator_refuses_a_huge_frame_before_reading_it():
    coordinator = Coordinator(2, "127.0.0.1", 0, "secret", timeout=20).start()
    try:
        peer = _zmtp_peer(coordinator.port)
        peer.sendall(b"\x03" + struct.pack(">Q", 3 << 30) + b"\x00" * (1 << 16))  # a 3 GiB frame, announced
        assert _closed_within(peer, 3), "the coordinator kept reading a 3 GiB frame"
        peer.close()
        small = _zmtp_peer(coordinator.port)   # a frame within the cap is read (then dropped: unsigned)
        small.sendall(b"\x02" + struct.pack(">Q", MAX_CONTROL_BYTES) + b"\x00" * (1 << 16))
        assert not _closed_within(small, 1)
        small.close()
        assert coordinator.is_alive() and coordinator.aborted is None
    finally:
        coordinator.close(0.5)


@pytest.mark.timeout(30)
def test_control_objects_over_the_cap_are_refused_at_the_call():
    coordinator = Coordinator(1, "127.0.0.1", 0, "secret", timeout=10).start()
    client = ControlClient(0, 1, "127.0.0.1", coordinator.port, "secret", timeout=10)
    try:
        client.rendezvous()
        with pytest.raises(ValueError, match="more than the control plane carries"):
            client.set("big", b"x" * (MAX_CONTROL_BYTES + 1))
        client.set("small", b"x" * 1000)
        assert client.get("small") == b"x" * 1000
        assert client._sock.getsockopt(__import__("zmq").MAXMSGSIZE) >= MAX_CONTROL_BYTES + ENVELOPE_BYTES
    finally:
        client.close()
        coordinator.close(0.5)


def _two_meshes():
    """Two connected ring meshes in this process, sharing a dict as their store."""
    store, cond, meshes, errors = {}, threading.Condition(), [None, None], []

    def publish(key, value):
        with cond:
            store[key] = value
            cond.notify_all()

    def lookup(key, peer):
        with cond:
            cond.wait_for(lambda: key in store, 10)
            return store[key]

    def make(rank):
        try:
            meshes[rank] = ring.Mesh(rank, 2, "faults", publish, lookup, lambda: None, timeout=10)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=make, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    assert not errors, errors
    return meshes


@pytest.mark.timeout(30)
def test_ring_sockets_refuse_frames_longer_than_a_piece():
    import numpy as np
    import zmq
    a, b = _two_meshes()
    try:
        assert ring.MAX_FRAME_BYTES >= max(ring.PIECE_RANGE[1], ring.PIECE_BYTES, ring.DIRECT_BELOW)
        for mesh in (a, b):
            assert mesh._socks[1 - mesh.rank].getsockopt(zmq.MAXMSGSIZE) == ring.MAX_FRAME_BYTES
        piece = np.arange(ring.PIECE_RANGE[1] // 8, dtype=np.float64)   # the largest legitimate piece
        a.send(1, piece)
        got = np.empty_like(piece)
        b.recv_into(0, got)
        assert np.array_equal(got, piece)
        a.send(1, np.zeros(ring.MAX_FRAME_BYTES + 1, np.uint8))         # refused: b drops the connection
        start = time.monotonic()
        with pytest.raises(CommError, match="connection closed by peer"):
            b.recv_into(0, np.empty(16, np.uint8))
        assert time.monotonic() - start < 5
    finally:
        a.close()
        b.close()


# -- 6. temporary files of a killed tidal.save ------------------------------------------------------
def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


@pytest.mark.timeout(30)
def test_save_removes_temporary_files_left_by_a_killed_save(tmp_path):
    path = tmp_path / "ckpt.pt"
    tidal.save({"w": tidal.ones(3)}, path)
    dead = tmp_path / (serialization._temp_prefix(str(path), _dead_pid()) + "abc_123x.tmp")
    alive = tmp_path / (serialization._temp_prefix(str(path), os.getppid()) + "def_456y.tmp")
    other = tmp_path / (serialization._temp_prefix(str(tmp_path / "other.pt"), _dead_pid()) + "ghi_789z.tmp")
    for leftover in (dead, alive, other):
        leftover.write_bytes(b"\x00" * 4096)     # what a kill -9 in the middle of a save leaves
    tidal.save({"w": tidal.full((3,), 2.0)}, path)
    assert not dead.exists()                      # its writer is gone: removed
    assert alive.exists() and other.exists()      # a running writer's, and another file's: kept
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([path.name, alive.name, other.name])
    assert tidal.load(path)["w"].tolist() == [2.0, 2.0, 2.0]


@pytest.mark.timeout(60)
def test_kill_during_save_then_save_again_leaves_no_temporary_file(tmp_path):
    path = tmp_path / "big.pt"
    code = textwrap.dedent(f"""
        import os, sys, tidal
        from tidal import serialization
        real = serialization._write_archive
        def slow(fp, *args):
            real(fp, *args)
            fp.flush()
            print("WRITTEN", flush=True)
            sys.stdin.readline()                  # killed here, with the temporary file full
        serialization._write_archive = slow
        tidal.save(tidal.ones(100_000), {str(path)!r})
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "WRITTEN"
        leftovers = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
        assert len(leftovers) == 1 and leftovers[0].stat().st_size > 400_000
        proc.kill()
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    tidal.save(tidal.zeros(2), path)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    assert tidal.load(path).tolist() == [0.0, 0.0]
