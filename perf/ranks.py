"""Benchmarks on several processes: spawn ranks joined by tidal's control plane, run one function on
each, and bring back what rank 0 returns."""
from __future__ import annotations

import multiprocessing as mp
import os
import secrets
import socket


def _rank_main(body, rank: int, world: int, port: int, secret: str, args: tuple, results) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      TIDAL_JOB_SECRET=secret)
    from tidal import comm
    comm.init_process_group("gloo", timeout=120)
    result = body(rank, *args)
    if rank == 0:
        results.put(result)
    comm.destroy_process_group()


def run_on_ranks(body, args: tuple = (), world: int = 2, timeout: float = 300.0):
    """`body(rank, *args)` on `world` spawned ranks with the default process group up; rank 0's result."""
    ctx = mp.get_context("spawn")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    secret = secrets.token_hex(16)
    results = ctx.Queue()
    procs = [ctx.Process(target=_rank_main, args=(body, r, world, port, secret, args, results), daemon=True)
             for r in range(world)]
    for p in procs:
        p.start()
    try:
        return results.get(timeout=timeout)
    finally:
        for p in procs:
            p.join(10)
            if p.is_alive():
                p.kill()
