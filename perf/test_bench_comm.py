"""All-reduce bus bandwidth on 2 ranks (CPU data plane), as a ratio to raw ZeroMQ ipc throughput
measured in the same run between the same two processes.

    pytest perf/test_bench_comm.py --benchmark-only -s     (the table is printed and kept in extra_info)
    python perf/test_bench_comm.py [max_megabytes]

Raw ipc: rank 0 streams messages of the size to rank 1 over a PAIR socket (zero-copy on both
sides) and waits for an acknowledgement ("1-way"); then both ranks stream at once ("2-way", the
traffic of a 2-rank ring, and its bound when the CPUs are the bottleneck). All-reduce: float32 tensors of the size, `all_reduce`
then `tidal.sync()`, the slower rank's time. Bus bandwidth = size / time * 2 (n - 1) / n, the
NCCL-tests convention (for 2 ranks, size / time).
"""
from __future__ import annotations

import shutil
import sys
import tempfile
import time

import numpy as np
import pytest

from tidal.perf.ranks import run_on_ranks

SIZES = [1 << k for k in range(10, 29, 2)]  # 1 KiB .. 256 MiB
WORLD = 2


def _reps(nbytes: int) -> int:
    return max(3, min(1000, (256 << 20) // max(nbytes, 1) // 8))


def _raw_ipc(control, rank: int, nbytes: int) -> tuple:
    """Seconds per message of `nbytes` streamed over a PAIR ipc socket (best of 3 rounds): rank 0 to
    rank 1 only, then both ways at once (a 2-rank ring's traffic)."""
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
    times = []
    for both_ways in (False, True):
        best = float("inf")
        for _ in range(4):  # the first round warms up
            control.barrier()
            start = time.perf_counter()
            if rank == 0 or both_ways:
                for _ in range(reps):
                    sock.send(buf, copy=False)
            if rank == 1 or both_ways:
                for _ in range(reps):
                    sock.recv(copy=False)
            if not both_ways and rank == 1:  # the sender's time includes the receiver's
                sock.send(b"k")
            elif not both_ways:
                sock.recv()
            best = min(best, time.perf_counter() - start)
        times.append(best / reps)
    control.barrier()  # both ranks got everything: closing now drops nothing
    sock.close(linger=0)
    if rank == 0:
        shutil.rmtree(path, ignore_errors=True)
    return tuple(times)


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


def _sweep(rank: int, sizes: list) -> list:
    from tidal import comm
    control = comm.default_group().control
    rows = []
    for nbytes in sizes:
        one_way, both_ways = _raw_ipc(control, rank, nbytes)
        both_ways = max(control.all_gather_object(both_ways))
        reduce_time = max(control.all_gather_object(_all_reduce(control, nbytes)))
        rows.append((nbytes, one_way, both_ways, reduce_time))
    return rows


def measure(sizes=SIZES, timeout: float = 600.0) -> list:
    """[(bytes, raw ipc seconds per message one way, the same both ways at once, all-reduce seconds)]
    from two spawned ranks."""
    return run_on_ranks(_sweep, (list(sizes),), WORLD, timeout)


def table(rows: list) -> str:
    """The rows as a text table: bandwidths in GB/s, and bus bandwidth as a ratio to raw ipc one way at
    the same size, and to its peak over all sizes."""
    peak = max(n / one_way for n, one_way, _, _ in rows)
    lines = [f"{'size':>9} {'ipc 1-way GB/s':>15} {'ipc 2-way GB/s':>15} {'all_reduce us':>14} {'busbw GB/s':>11} "
             f"{'ratio':>6} {'ratio to peak':>14}"]
    for nbytes, one_way, both_ways, reduce_time in rows:
        busbw = nbytes / reduce_time * 2 * (WORLD - 1) / WORLD
        size = f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"
        lines.append(f"{size:>9} {nbytes / one_way / 1e9:15.3f} {nbytes / both_ways / 1e9:15.3f} "
                     f"{reduce_time * 1e6:14.1f} {busbw / 1e9:11.3f} {busbw / (nbytes / one_way):6.2f} "
                     f"{busbw / peak:14.2f}")
    return "\n".join(lines)


@pytest.mark.timeout(600)
def test_all_reduce_bus_bandwidth(benchmark):
    """One sweep over the sizes (timed as a whole); the table goes to stdout and extra_info."""
    rows = benchmark.pedantic(measure, rounds=1, iterations=1)
    benchmark.extra_info["rows"] = [{"bytes": n, "ipc_one_way_s": one, "ipc_both_ways_s": both, "all_reduce_s": t}
                                    for n, one, both, t in rows]
    print("\n" + table(rows))


if __name__ == "__main__":
    limit = int(sys.argv[1]) << 20 if len(sys.argv) > 1 else SIZES[-1]
    print(table(measure([s for s in SIZES if s <= limit])))
