"""Real ranks for the comm tests: `RankPool(n)` spawns n processes joined by the control plane, and
`pool.run(fn)` runs a module-level function of this file on every rank. The functions check their
results against NumPy on the ranks themselves and return a list of failures. This module does not
import pytest, so the ranks start quickly. Small pipelining pieces (TIDAL_COMM_PIECE_BYTES) make
modest tensors travel in many pieces, and a low TIDAL_COMM_DIRECT_BYTES sends them around the ring."""
import multiprocessing as mp
import os
import queue
import secrets
import socket
import time
import traceback
import warnings

import numpy as np

import tidal
from tidal.tensor import dtype as dt

PIECE_BYTES = "4096"
DIRECT_BYTES = "2048"  # all-reduces below this take the one-round path, above it the ring
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
OPS = ["SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR"]
SHAPES = [(), (0,), (1,), (7,), (3, 5), (1500,)]   # 1500 float64 = 3 pieces


# -- the rank pool --------------------------------------------------------------------------------
def _serve(rank: int, size: int, port: int, secret: str, inbox, outbox, env: dict | None = None) -> None:
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(size), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      TIDAL_JOB_SECRET=secret, TIDAL_COMM_PIECE_BYTES=PIECE_BYTES,
                      TIDAL_COMM_DIRECT_BYTES=DIRECT_BYTES)
    os.environ.update(env or {})
    from tidal import comm
    comm.init_process_group("gloo", timeout=60)
    outbox.put((rank, True, "ready"))
    while True:
        job = inbox.get()
        if job is None:
            break
        fn, args = job
        try:
            result = fn(*args)
            tidal.sync()
            outbox.put((rank, True, result))
        except BaseException:  # noqa: BLE001 - report everything to the test
            outbox.put((rank, False, traceback.format_exc()))
    comm.destroy_process_group()


class RankPool:
    """`size` rank processes that run module-level functions on request, each with a deadline;
    `env` adds environment variables, set in each rank before it imports tidal.comm."""

    def __init__(self, size: int, env: dict | None = None):
        ctx = mp.get_context("spawn")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        secret = secrets.token_hex(16)
        self.size = size
        self.outbox = ctx.Queue()
        self.inboxes = [ctx.Queue() for _ in range(size)]
        self.procs = [ctx.Process(target=_serve, args=(r, size, port, secret, self.inboxes[r], self.outbox, env),
                                  daemon=True) for r in range(size)]
        for p in self.procs:
            p.start()
        self._collect(60.0)

    def run(self, fn, *args, timeout: float = 30.0, ranks=None) -> list:
        """`fn(*args)` on every rank (or `ranks`); the per-rank results; fails on an error or a timeout."""
        ranks = range(self.size) if ranks is None else ranks
        for r in ranks:
            self.inboxes[r].put((fn, args))
        return self._collect(timeout, len(ranks))

    def _collect(self, timeout: float, count: int | None = None) -> list:
        results = [None] * self.size
        errors = []
        deadline = time.monotonic() + timeout
        for _ in range(self.size if count is None else count):
            try:
                rank, ok, value = self.outbox.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.close()
                raise AssertionError(f"ranks did not answer within {timeout} s") from None
            if ok:
                results[rank] = value
            else:
                errors.append(f"rank {rank}:\n{value}")
        if errors:
            raise AssertionError("\n".join(errors))
        return results

    def close(self, kill: bool = False) -> None:
        """Stop every rank (killing those that do not stop, or every one with `kill`)."""
        for inbox, p in zip(self.inboxes, self.procs):
            if p.is_alive():
                if kill:
                    p.kill()
                else:
                    inbox.put(None)
        for p in self.procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join(5)


# -- helpers that run on the ranks ------------------------------------------------------------------
def no_failures(results: list) -> None:
    """Fail (AssertionError) listing what every rank reported: rank functions return lists of failures."""
    problems = [f"rank {r}: {f}" for r, fs in enumerate(results) if fs for f in fs]
    assert not problems, "\n".join(problems[:40])


def expect_errors(failures: list, cases) -> None:
    """Run each (call, exception type, part of its message) and note every case that did not raise so."""
    for k, (call, exc, match) in enumerate(cases):
        try:
            call()
            failures.append(f"case {k}: no {exc.__name__} ({match})")
        except exc as e:
            if match not in str(e):
                failures.append(f"case {k}: message {e!s} lacks {match!r}")
        except Exception as e:  # noqa: BLE001
            failures.append(f"case {k}: {type(e).__name__} {e}")


def _C():
    from tidal.comm import collectives
    return collectives


def _me() -> tuple:
    from tidal import comm
    return comm.get_rank(), comm.get_world_size()


def _values(dtype_name: str, shape: tuple, rank: int, salt: int = 0, op: str = "SUM") -> np.ndarray:
    """Small integer-valued data (exact under any reduction order) for `rank`."""
    rng = np.random.default_rng(1000 * rank + salt)
    np_dtype = getattr(dt, dtype_name if dtype_name != "bool" else "bool_").np
    if dtype_name == "bool":
        return rng.random(shape) < 0.5
    if op == "PRODUCT":
        base = rng.choice([1, 2, -1] if dtype_name[0] != "u" else [1, 2, 3], size=shape)
    else:
        low = 0 if dtype_name[0] == "u" or op.startswith("B") else -8
        base = rng.integers(low, 9, size=shape)
    return np.asarray(base).astype(np.float32).astype(np_dtype)


def _reference(dtype_name: str, op: str, arrays: list) -> np.ndarray:
    """The reduction of `arrays` over ranks, computed in a wide type and cast back."""
    wide = [a.astype(np.float64) if a.dtype.kind == "f" or a.dtype.kind == "V" else a.astype(np.int64) for a in arrays]
    if arrays[0].dtype == np.bool_:
        stacked = np.stack(arrays)
        return {"SUM": stacked.any(0), "MAX": stacked.any(0), "BOR": stacked.any(0), "PRODUCT": stacked.all(0),
                "MIN": stacked.all(0), "BAND": stacked.all(0),
                "BXOR": np.logical_xor.reduce(stacked, 0)}[op]
    stacked = np.stack(wide)
    if op in ("SUM", "AVG"):
        out = stacked.sum(0)
        if op == "AVG":
            out = out / len(arrays) if stacked.dtype.kind == "f" else np.sign(out) * (np.abs(out) // len(arrays))
    else:
        ufunc = {"PRODUCT": np.multiply, "MIN": np.minimum, "MAX": np.maximum, "BAND": np.bitwise_and,
                 "BOR": np.bitwise_or, "BXOR": np.bitwise_xor}[op]
        out = ufunc.reduce(stacked, 0)
    return np.asarray(out).astype(np.float32).astype(arrays[0].dtype) if arrays[0].dtype.kind == "V" \
        else np.asarray(out).astype(arrays[0].dtype)


def _applicable(dtype_name: str, op: str) -> bool:
    return not ((op.startswith("B") and dtype_name.startswith(("float", "bfloat")))
                or (op == "AVG" and dtype_name == "bool"))


def _close(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return False
    if any(a.dtype.kind in "fV" and a.dtype.itemsize == 2 for a in (got, want)):  # (bfloat16 read as float32)
        return np.allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    return np.array_equal(got, want)


def _np(t) -> np.ndarray:
    """A tidal tensor's values (bfloat16 through float32: torch's numpy() refuses bfloat16, and so tidal's)."""
    return (t.float() if t.dtype is tidal.bfloat16 else t).numpy()


def _check(failures: list, what: str, got: np.ndarray, want: np.ndarray) -> None:
    if not _close(np.asarray(got), np.asarray(want)):
        failures.append(f"{what}: got {np.asarray(got).ravel()[:6]}, want {np.asarray(want).ravel()[:6]}")


# -- the functions the tests run on every rank ------------------------------------------------------
def all_reduce_everything() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    for name in DTYPES:
        for op in OPS:
            if not _applicable(name, op):
                continue
            for shape in SHAPES:
                t = tidal.tensor(_values(name, shape, rank, op=op))
                C.all_reduce(t, op=getattr(C.ReduceOp, op))
                want = _reference(name, op, [_values(name, shape, r, op=op) for r in range(size)])
                _check(failures, f"all_reduce {name} {op} {shape}", _np(t), want)
    return failures


def reduce_and_scatter_everything() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    for name in DTYPES:
        for op in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BXOR"):
            if not _applicable(name, op):
                continue
            shape = (size * 3, 2)
            full = [_values(name, shape, r, 1, op) for r in range(size)]
            want = _reference(name, op, full)
            rop = getattr(C.ReduceOp, op)
            out = tidal.empty((3, 2), dtype=getattr(tidal, name if name != "bool" else "bool"))
            C.reduce_scatter_tensor(out, tidal.tensor(full[rank]), op=rop)
            _check(failures, f"reduce_scatter_tensor {name} {op}", _np(out), want[rank * 3:(rank + 1) * 3])
            out2 = tidal.zeros(3, 2, dtype=out.dtype)
            C.reduce_scatter(out2, [tidal.tensor(part) for part in np.split(full[rank], size)], op=rop)
            _check(failures, f"reduce_scatter {name} {op}", _np(out2), want[rank * 3:(rank + 1) * 3])
            for root in range(size):
                mine = tidal.tensor(full[rank])
                C.reduce(mine, dst=root, op=rop)
                _check(failures, f"reduce {name} {op} dst={root}", _np(mine), want if rank == root else full[rank])
    return failures


def gather_broadcast_everything() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    for name in DTYPES:
        for shape in ((), (0,), (5,), (700, 3)):
            parts = [_values(name, shape, r, 2) for r in range(size)]
            tdt = tidal.tensor(parts[0]).dtype
            outs = [tidal.empty(shape, dtype=tdt) for _ in range(size)]
            C.all_gather(outs, tidal.tensor(parts[rank]))
            for r in range(size):
                _check(failures, f"all_gather {name} {shape} from {r}", _np(outs[r]), parts[r])
            stacked = tidal.empty((size,) + shape, dtype=tdt)
            C.all_gather_into_tensor(stacked, tidal.tensor(parts[rank]))
            _check(failures, f"all_gather_into_tensor {name} {shape}", _np(stacked), np.stack(parts))
            for root in range(size):
                t = tidal.tensor(parts[rank])
                C.broadcast(t, src=root)
                _check(failures, f"broadcast {name} {shape} src={root}", _np(t), parts[root])
    return failures


def all_to_all_everything() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    for name in ("bool", "int32", "bfloat16", "float64"):
        # every rank sends (rank + dst + 1) rows of 3 to rank dst
        sent = {(src, dst): _values(name, (src + dst + 1, 3), 10 * src + dst, 3) for src in range(size)
                for dst in range(size)}
        tdt = tidal.tensor(sent[0, 0]).dtype
        outs = [tidal.empty((r + rank + 1, 3), dtype=tdt) for r in range(size)]
        C.all_to_all(outs, [tidal.tensor(sent[rank, d]) for d in range(size)])
        for r in range(size):
            _check(failures, f"all_to_all {name} from {r}", _np(outs[r]), sent[r, rank])
        out = tidal.empty((sum(r + rank + 1 for r in range(size)), 3), dtype=tdt)
        C.all_to_all_single(out, tidal.tensor(np.concatenate([sent[rank, d] for d in range(size)])),
                            output_split_sizes=[r + rank + 1 for r in range(size)],
                            input_split_sizes=[rank + d + 1 for d in range(size)])
        _check(failures, f"all_to_all_single uneven {name}", _np(out),
               np.concatenate([sent[r, rank] for r in range(size)]))
        equal = _values(name, (2 * size, 4), rank, 4)
        out = tidal.empty((2 * size, 4), dtype=tdt)
        C.all_to_all_single(out, tidal.tensor(equal))
        _check(failures, f"all_to_all_single {name}", _np(out),
               np.concatenate([_values(name, (2 * size, 4), r, 4)[2 * rank:2 * rank + 2] for r in range(size)]))
    return failures


def point_to_point() -> list:
    from tidal import comm
    C = _C()
    rank, size = _me()
    failures = []
    nxt, prv = (rank + 1) % size, (rank - 1) % size
    data = np.arange(2000, dtype=np.float64) + rank
    C.send(tidal.tensor(data), nxt, tag=7)
    got = tidal.zeros(2000, dtype=tidal.float64)
    if C.recv(got, prv, tag=7) != prv:
        failures.append("recv did not return the source")
    _check(failures, "send/recv ring", got.numpy(), np.arange(2000) + prv)
    # any source: every rank sends one int to rank 0
    if rank:
        C.send(tidal.tensor([rank * 10]), 0)
    else:
        seen = set()
        for _ in range(size - 1):
            t = tidal.zeros(1, dtype=tidal.int64)
            src = C.recv(t)
            if t.item() != src * 10:
                failures.append(f"recv any: {t.item()} from {src}")
            seen.add(src)
        if seen != set(range(1, size)):
            failures.append(f"recv any got {seen}")
    comm.barrier()  # otherwise rank 0's any-source receives could take the isend below
    # isend / irecv
    outgoing = tidal.full((3,), float(rank))
    incoming = tidal.zeros(3)
    works = [C.isend(outgoing, nxt), C.irecv(incoming, prv)]
    for w in works:
        if w.wait() is not True:
            failures.append("Work.wait did not return True")
    _check(failures, "isend/irecv", incoming.numpy(), np.full(3, float(prv), np.float32))
    return failures


def async_handles() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    tensors = [tidal.full((50_000,), float(rank + k)) for k in range(4)]
    works = [C.all_reduce(t, async_op=True) for t in tensors]
    busy = (tidal.ones(300, 300) @ tidal.ones(300, 300)).sum()  # compute goes on meanwhile
    for k, w in reversed(list(enumerate(works))):
        w.wait()
        if not w.is_completed() or not w.is_success():
            failures.append(f"work {k} not completed after wait")
        _check(failures, f"async all_reduce {k}", tensors[k].numpy()[:5],
               np.full(5, sum(r + k for r in range(size)), np.float32))
    if busy.item() != 300.0 ** 3:
        failures.append("compute alongside the collectives was wrong")
    w = C.broadcast(tidal.full((10,), float(rank)), src=0, async_op=True)
    got = w.result()[0]
    _check(failures, "Work.result", got.numpy(), np.zeros(10, np.float32))
    return failures


def stream_ordering() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    for trial in range(5):
        x = tidal.full((200_000,), float(rank + 1))
        x = (x * 3 - 2) / 1  # produced by queued compute: the collective must wait for it
        before = x * 1         # queued before the in-place collective: must see the old values
        C.all_reduce(x)
        after = x + 0          # queued after: must see the reduced values
        x.add_(1)              # must not race with the collective's reads of x
        want = sum(3 * (r + 1) - 2 for r in range(size))
        _check(failures, f"before ({trial})", before.numpy()[-3:], np.full(3, 3 * (rank + 1) - 2, np.float32))
        _check(failures, f"after ({trial})", after.numpy()[-3:], np.full(3, want, np.float32))
        _check(failures, f"add_ ({trial})", x.numpy()[:3], np.full(3, want + 1, np.float32))
        ready = tidal.full((200_000,), float(rank + 1))
        ready.numpy()          # written long ago: only the queued reader below orders the collective
        busy = [tidal.ones(300, 300) @ tidal.ones(300, 300) for _ in range(3)]
        reader = ready * 1     # queued behind the busy compute, before the collective overwrites `ready`
        C.all_reduce(ready)
        _check(failures, f"read before all_reduce ({trial})", reader.numpy()[:3], np.full(3, rank + 1, np.float32))
        del busy
        source = tidal.full((200_000,), float(rank)) * 1
        gathered = [tidal.empty(200_000) for _ in range(size)]
        C.all_gather(gathered, source)
        source.fill_(-1.0)     # queued after: must not change what the collective sends
        _check(failures, f"all_gather then overwrite ({trial})", np.stack([g.numpy()[-2:] for g in gathered]),
               np.repeat(np.arange(size, dtype=np.float32)[:, None], 2, 1))
    return failures


def large_tensors() -> list:
    """Megabyte pieces: sent zero-copy from tensor memory, tracked until ZeroMQ is done with them."""
    from tidal.comm import ring
    C = _C()
    rank, size = _me()
    failures = []
    saved, ring.PIECE_BYTES = ring.PIECE_BYTES, 0  # the default piece sizes (1 MiB and up)
    try:
        n = 3_000_001  # chunks of unequal length
        base = np.arange(n, dtype=np.float32) % 1000
        x = tidal.tensor(base + rank)
        C.all_reduce(x)
        x.mul_(2)  # queued compute on the result
        _check(failures, "large all_reduce", x.numpy()[::997], (2 * (size * base + sum(range(size))))[::997])
        out = tidal.empty((size, n), dtype=tidal.float32)
        C.all_gather_into_tensor(out, tidal.tensor(base + rank))
        _check(failures, "large all_gather", out.numpy()[:, ::991], np.stack([base + r for r in range(size)])[:, ::991])
        y = tidal.tensor(base * (rank + 1))
        C.reduce(y, dst=size - 1, op=C.ReduceOp.MAX)
        _check(failures, "large reduce", y.numpy()[::983], base[::983] * (size if rank == size - 1 else rank + 1))
        z = tidal.tensor(base + rank)
        C.broadcast(z, src=0)
        _check(failures, "large broadcast", z.numpy()[::977], base[::977])
    finally:
        ring.PIECE_BYTES = saved
    return failures


def non_contiguous() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    base = np.arange(12, dtype=np.float32).reshape(3, 4) + rank
    t = tidal.tensor(base).t()
    C.all_reduce(t)
    _check(failures, "transposed all_reduce", t.numpy(), sum(np.arange(12).reshape(3, 4) + r for r in range(size)).T)
    big = tidal.tensor(np.zeros((4, 6), np.int64) + rank)
    C.broadcast(big[:, ::2], src=size - 1)
    want = np.zeros((4, 6), np.int64) + rank
    want[:, ::2] = size - 1
    _check(failures, "strided broadcast", big.numpy(), want)
    return failures


def subgroups() -> list:
    from tidal import comm
    C = _C()
    rank, size = _me()
    failures = []
    evens = comm.new_group([r for r in range(size) if r % 2 == 0])
    halves = [comm.new_group(list(range(size // 2))), comm.new_group(list(range(size // 2, size)))]
    mine = halves[rank >= size // 2]
    t = tidal.full((1000,), float(rank))
    C.all_reduce(t, group=mine)
    members = mine.ranks
    _check(failures, "half all_reduce", t.numpy()[:3], np.full(3, float(sum(members)), np.float32))
    t = tidal.full((5,), float(rank))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = C.all_reduce(t, op=C.ReduceOp.MAX, group=evens)
    if rank % 2 == 0:
        _check(failures, "evens all_reduce", t.numpy(), np.full(5, float(max(evens.ranks)), np.float32))
        b = tidal.full((4,), float(rank))
        C.broadcast(b, src=evens.ranks[-1], group=evens)  # a global rank
        _check(failures, "evens broadcast", b.numpy(), np.full(4, float(evens.ranks[-1]), np.float32))
        g = tidal.full((4,), float(rank))
        C.broadcast(g, group=evens, group_src=0)
        _check(failures, "evens broadcast group_src", g.numpy(), np.zeros(4, np.float32))
        outs = [tidal.empty(2) for _ in evens.ranks]
        C.all_gather(outs, tidal.full((2,), float(rank)), group=evens)
        _check(failures, "evens all_gather", np.stack([o.numpy() for o in outs])[:, 0], np.array(evens.ranks, np.float32))
    else:
        if result is not None:
            failures.append("a collective on a group without this rank should return None")
        _check(failures, "non-member untouched", t.numpy(), np.full(5, float(rank), np.float32))
    return failures


def validation_errors() -> list:
    C = _C()
    rank, size = _me()
    failures = []
    cases = [
        (lambda: C.all_reduce([1, 2]), TypeError, "Expected parameter `tensor` of type tidal.Tensor"),
        (lambda: C.all_reduce(tidal.ones(2), op="sum"), TypeError, "argument 'op' must be"),
        (lambda: C.all_reduce(tidal.ones(2), op=C.ReduceOp.BAND), RuntimeError,
         "Cannot use ReduceOp.BAND with non-integral dtype"),
        (lambda: C.all_reduce(tidal.ones(2, dtype=tidal.bool), op=C.ReduceOp.AVG), RuntimeError, "AVG"),
        (lambda: C.broadcast(tidal.ones(2), size + 1), RuntimeError, f"invalid root rank: {size + 1}"),
        (lambda: C.reduce(tidal.ones(2), -1), RuntimeError, "invalid root rank: -1"),
        (lambda: C.all_gather([tidal.ones(2)] * (size + 1), tidal.ones(2)), RuntimeError,
         f"expected length {size}, got {size + 1}"),
        (lambda: C.all_gather([tidal.ones(3)] * size, tidal.ones(2)), RuntimeError, r"invalid tensor size at index 0"),
        (lambda: C.all_gather([tidal.ones(2, dtype=tidal.int64)] * size, tidal.ones(2)), ValueError,
         "different dtypes"),
        (lambda: C.all_gather_into_tensor(tidal.ones(2 * size + 1), tidal.ones(2)), RuntimeError, "times the input"),
        (lambda: C.reduce_scatter_tensor(tidal.ones(2), tidal.ones(3)), RuntimeError, "times the output"),
        (lambda: C.all_to_all_single(tidal.ones(size), tidal.ones(size + 1)), RuntimeError, "divisible"),
        (lambda: C.all_to_all_single(tidal.ones(size), tidal.ones(size), input_split_sizes=[size] + [0] * size),
         RuntimeError, "split_sizes"),
        (lambda: C.send(tidal.ones(2), rank), ValueError, "Invalid destination rank"),
        (lambda: C.recv(tidal.ones(2), rank), ValueError, "Invalid source rank"),
        (lambda: C.send(tidal.ones(2)), ValueError, "dst"),
    ]
    expect_errors(failures, cases)
    # the ranks still agree after the errors
    t = tidal.ones(3)
    C.all_reduce(t)
    _check(failures, "after errors", t.numpy(), np.full(3, size, np.float32))
    return failures


def die_or_all_reduce(victim: int) -> str:
    C = _C()
    rank, _ = _me()
    C.all_reduce(tidal.ones(10))  # the data plane is connected
    tidal.sync()
    if rank == victim:
        time.sleep(0.5)  # the others are inside the next all_reduce by now
        os._exit(3)
    t = tidal.ones(1_000_000)
    start = time.monotonic()
    try:
        C.all_reduce(t)
        t.numpy()
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__} after {time.monotonic() - start:.1f} s: {exc}"
    return "no error"
