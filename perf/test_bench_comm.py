"""All-reduce bus bandwidth on 2 ranks (CPU data plane), as a ratio to raw ZeroMQ ipc throughput
measured in the same run between the same two processes.

    pytest perf/test_bench_comm.py --benchmark-only -s     (the table is printed and kept in extra_info)
    python perf/test_bench_comm.py [max_megabytes]

Raw ipc: rank 0 streams messages of the size to rank 1 over a PAIR socket (zero-copy on both
sides) and waits for an acknowledgement. All-reduce: float32 tensors of the size, `all_reduce`
then `tidal.sync()`, the slower rank's time. Bus bandwidth = size / time * 2 (n - 1) / n, the
NCCL-tests convention (for 2 ranks, size / time).
"""
from __future__ import annotations

import multiprocessing as mp
import os
import secrets
import socket
import sys
import tempfile
import time

import numpy as np

SIZES = [1 << k for k in range(10, 27, 2)]  # 1 KiB .. 64 MiB
WORLD = 2


def _reps(nbytes: int) -> int:
    return max(3, min(1000, (256 << 20) // max(nbytes, 1) // 8))


def _raw_ipc(control, rank: int, nbytes: int) -> float:
    """Seconds rank 0 takes to stream `_reps` messages of `nbytes` to rank 1 over ipc (best of 3)."""
    import zmq
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.PAIR)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.setsockopt(zmq.RCVHWM, 0)
    if rank == 0:
        path = tempfile.mkdtemp(prefix="tidal-bench-")
        sock.bind(f"ipc://{path}/raw")
    address = control.broadcast_object(f"ipc://{path}/raw" if rank == 0 else None, src=0)
    if rank == 1:
        sock.connect(address)
    buf = np.ones(nbytes, np.uint8)
    reps = _reps(nbytes)
    best = float("inf")
    for _ in range(4):  # the first round warms up
        control.barrier()
        start = time.perf_counter()
        if rank == 0:
            for _ in range(reps):
                sock.send(buf, copy=False)
            sock.recv()
        else:
            for _ in range(reps):
                sock.recv(copy=False)
            sock.send(b"k")
        best = min(best, time.perf_counter() - start)
    sock.close(linger=0)
    return best / reps


def _all_reduce(control, nbytes: int) -> float:
    """Seconds per all_reduce of `nbytes` of float32 (best of 3 rounds)."""
    import tidal
    from tidal.comm import collectives
    t = tidal.zeros(nbytes // 4)  # zeros: repeated in-place sums stay finite
    reps = _reps(nbytes)
    collectives.all_reduce(t)
    tidal.sync()
    best = float("inf")
    for _ in range(3):
        control.barrier()
        start = time.perf_counter()
        for _ in range(reps):
            collectives.all_reduce(t)
        tidal.sync()
        best = min(best, time.perf_counter() - start)
    return best / reps


def _rank_main(rank: int, port: int, secret: str, sizes: list, results) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(WORLD), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      TIDAL_JOB_SECRET=secret)
    from tidal import comm
    comm.init_process_group("gloo", timeout=120)
    control = comm.default_group().control
    rows = []
    for nbytes in sizes:
        raw = _raw_ipc(control, rank, nbytes)
        reduce_time = max(control.all_gather_object(_all_reduce(control, nbytes)))
        rows.append((nbytes, raw, reduce_time))
    if rank == 0:
        results.put(rows)
    comm.destroy_process_group()


def measure(sizes=SIZES, timeout: float = 300.0) -> list:
    """[(bytes, raw ipc seconds per message, all-reduce seconds)] from two spawned ranks."""
    ctx = mp.get_context("spawn")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    secret = secrets.token_hex(16)
    results = ctx.Queue()
    procs = [ctx.Process(target=_rank_main, args=(r, port, secret, list(sizes), results), daemon=True)
             for r in range(WORLD)]
    for p in procs:
        p.start()
    try:
        return results.get(timeout=timeout)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()


def table(rows: list) -> str:
    """The rows as a text table: bandwidths in GB/s and the ratio to raw ipc."""
    peak = max(n / raw for n, raw, _ in rows)
    lines = [f"{'size':>9} {'raw ipc GB/s':>13} {'all_reduce us':>14} {'busbw GB/s':>11} {'ratio':>6} "
             f"{'ratio to peak ipc':>18}"]
    for nbytes, raw, reduce_time in rows:
        busbw = nbytes / reduce_time * 2 * (WORLD - 1) / WORLD
        size = f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"
        lines.append(f"{size:>9} {nbytes / raw / 1e9:13.3f} {reduce_time * 1e6:14.1f} {busbw / 1e9:11.3f} "
                     f"{busbw / (nbytes / raw):6.2f} {busbw / peak:18.2f}")
    return "\n".join(lines)


def test_all_reduce_bus_bandwidth(benchmark):
    """One sweep over the sizes (timed as a whole); the table goes to stdout and extra_info."""
    rows = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info["rows"] = [{"bytes": n, "raw_ipc_s": raw, "all_reduce_s": t} for n, raw, t in rows]
    print("\n" + table(rows))


if __name__ == "__main__":
    limit = int(sys.argv[1]) << 20 if len(sys.argv) > 1 else SIZES[-1]
    print(table(measure([s for s in SIZES if s <= limit])))
