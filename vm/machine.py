"""The per-device virtual machine: a fusion window, streams, sync points, errors, counters.

Where kernels run: a batch runs on the calling thread when its stream's worker is idle and the
batch is small (its instructions touch at most `inline_bytes`), since handing a small kernel to
a worker costs two thread switches and a GIL hand-over that are worth more than the kernel; a
larger batch goes to the stream's worker thread so the program keeps issuing ops while kernels
that release the GIL (BLAS, NumPy loops, nogil numba) run. Streams other than the compute
stream (communication) always use their worker: their kernels block on other processes.
Back-pressure: at most `max_in_flight` instructions wait for a worker; past that the caller
waits, so a loop that never syncs runs in bounded memory.
"""
from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
import time
import weakref

from . import intra_op
from .intra_op import _thread
from .allocator import CachingAllocator
from .blob import Blob, View
from .codegen import quiet, quiet_thread, unquiet
from .failure import Failure
from .fusion import config as fusion_config, fuse_window, lower_one
from .instruction import Instruction
from .replay import WindowCache

_mode = os.environ.get("TIDAL_VM_MODE", "async")
if _mode not in ("sync", "async"):
    raise ValueError(f"TIDAL_VM_MODE must be 'sync' or 'async', got {_mode!r}")


class Limits:
    """Where kernels run and how much work may wait (see the module docstring)."""

    __slots__ = ("inline_bytes", "max_in_flight")

    def __init__(self):
        self.inline_bytes = int(os.environ.get("TIDAL_INLINE_BYTES", str(1 << 20)))
        self.max_in_flight = int(os.environ.get("TIDAL_MAX_IN_FLIGHT", "16384"))


limits = Limits()


class Stats:
    """Counters every VM keeps (see `tidal.vm.stats()`)."""

    __slots__ = ("instructions", "kernels", "fused_away", "allocations_avoided", "syncs",
                 "kernel_time_ns", "replays", "inline_batches", "worker_batches", "max_in_flight",
                 "waits_for_room", "small_allocations")

    def __init__(self):
        self.reset()

    def reset(self) -> None:
        """Zero every counter."""
        self.instructions = self.kernels = self.fused_away = 0
        self.allocations_avoided = self.syncs = self.kernel_time_ns = 0
        self.replays = self.inline_batches = self.worker_batches = self.max_in_flight = 0
        self.waits_for_room = self.small_allocations = 0


class Stream:
    """A FIFO of instructions, run by a worker thread (async mode) or inline (sync mode)."""

    def __init__(self, name: str, vm: "VirtualMachine"):
        self.name = name
        self.vm = vm
        self.pushed = 0          # sequence number of the last instruction pushed
        self.done = 0            # sequence number of the last instruction finished
        self._queue: queue.SimpleQueue | None = None
        self._cond = threading.Condition()
        self._waiters = 0
        self.small_inline = name == "compute"  # other streams' kernels block on other processes

    def submit(self, batch: list, inline: bool = False) -> None:
        """Number the instructions and run them now (sync mode; or the worker is idle and the
        caller is about to wait for them anyway, or the batch is small), else hand them to the
        worker, first waiting while the worker's queue has no room for them (back-pressure)."""
        idle = self.done == self.pushed
        if idle and not inline and self.small_inline and _mode != "sync":
            inline = _small(batch, limits.inline_bytes)
        run_here = _mode == "sync" or (inline and idle)
        stats = self.vm.stats
        if not run_here:
            room = limits.max_in_flight - len(batch)
            if self.pushed - self.done > room:  # let the worker catch up until the batch fits
                stats.waits_for_room += 1
                self.wait(self.pushed - max(room, 0))
        several = len(self.vm.streams) > 1
        for ins in batch:
            self.pushed += 1
            ins.seq = self.pushed
            if several:  # an event per cross-stream dependence: the other stream's writer
                waits = [w for w in (v.blob.writer for v in ins.ins + ins.outs if v.__class__ is View)
                         if w is not None and w[0] is not self and w[0].done < w[1]]
                ins.waits = waits or None
            for v in ins.outs:
                v.blob.writer = (self, self.pushed)
        if run_here:
            stats.inline_batches += 1
            execute = self.vm.execute
            token = quiet()  # kernels' NumPy error state, restored for the caller's code
            try:
                for k, ins in enumerate(batch):
                    batch[k] = None  # a finished instruction's inputs may be freed at once
                    execute(ins)
                    self.done = ins.seq
                ins = None
            finally:
                unquiet(token)
            if self._waiters:  # another thread may wait for what ran here
                with self._cond:
                    self._cond.notify_all()
            if _mode == "sync" and self.vm.error is not None:
                failure = self.vm.take_error()
                if failure is not None:  # sync mode is for debugging: fail at the call
                    raise failure.exception()
            return
        stats.worker_batches += 1
        waiting = self.pushed - self.done
        if waiting > stats.max_in_flight:
            stats.max_in_flight = waiting
        if self._queue is None:
            self._queue = queue.SimpleQueue()
            threading.Thread(target=self._work, name=f"tidal-{self.vm.device}-{self.name}",
                             daemon=True).start()
        self._queue.put(batch)

    def _work(self) -> None:
        get = self._queue.get
        execute = self.vm.execute
        quiet_thread()
        _thread.stream = self
        while True:
            batch = get()
            for k, ins in enumerate(batch):
                batch[k] = None  # a finished instruction's inputs may be freed at once
                execute(ins)
                self.done = ins.seq
            del batch, ins  # drop references so finished blobs can be freed
            if self._waiters:
                with self._cond:
                    self._cond.notify_all()

    def wait(self, seq: int) -> None:
        """Block until the instruction numbered `seq` has run."""
        if self.done >= seq:
            return
        with self._cond:
            self._waiters += 1
            try:
                while self.done < seq:
                    self._cond.wait(0.05)
            finally:
                self._waiters -= 1


def _small(batch: list, limit: int) -> bool:
    """Whether the batch's instructions touch at most `limit` bytes (outputs and first inputs)."""
    total = 0
    for ins in batch:
        for v in ins.outs:
            total += v.blob.nbytes
        if ins.ins:
            v = ins.ins[0]
            if v.__class__ is View:
                total += v.blob.nbytes
        if total > limit:
            return False
    return True


class VirtualMachine:
    """One per device: instructions in, kernels out, with fusion and dependence tracking."""

    recorder = None  # a callable shown every pushed instruction (autograd's backward replay records a pass)
    capturer = None  # a callable shown every lowered batch and whether its window was replayed (see `lowered`)

    def __init__(self, device, backend):
        self.device = device
        self.backend = backend
        self.allocator = CachingAllocator(backend.raw_alloc, backend.size_of)
        self.streams: dict[str, Stream] = {}
        self.window: list[Instruction] = []
        self.fusion = fusion_config
        self.stats = Stats()
        self.error: list | None = None  # Failures of kernels not yet reported, oldest first
        self._error_lock = threading.Lock()
        self.profiler = None
        self.windows = WindowCache()
        self._lock = threading.RLock()  # pushes may come from any thread
        self._acquire, self._release = self._lock.acquire, self._lock.release
        # blobs whose memory the program reaches without tidal (from_numpy, .numpy()) carry a count
        # (Blob.lent): an instruction that touches one runs before its push returns, as torch's op does, so
        # NumPy sees (and feeds) the values of that moment. `lent` counts them on this VM: while it is 0,
        # pushes check nothing more.
        self.lent = 0
        self._lend_lock = threading.Lock()

    def lend(self, blob: Blob, holder=None) -> None:
        """Mark `blob` as shared with the program's own arrays (see `lent`): for its whole life, or while
        `holder` (an exported array) lives; the holder keeps the blob, whose memory it shows, alive."""
        with self._lend_lock:
            blob.lent += 1
            self.lent += 1
        if holder is None:
            weakref.finalize(blob, self._forget_lent)
        else:
            weakref.finalize(holder, self._unlend, blob)

    def _unlend(self, blob: Blob) -> None:
        with self._lend_lock:
            blob.lent -= 1
            self.lent -= 1

    def _forget_lent(self) -> None:  # a blob lent for its whole life died
        with self._lend_lock:
            self.lent -= 1

    def in_flight(self) -> int:
        """Instructions pushed and not yet run: the window plus every stream's queue."""
        return len(self.window) + sum(s.pushed - s.done for s in list(self.streams.values()))

    def running(self) -> bool:
        """Whether a stream still has instructions to run (its worker then takes the GIL whenever this thread
        gives it up, for as long as its Python between kernels lasts)."""
        for s in list(self.streams.values()):
            if s.done < s.pushed:
                return True
        return False

    def stream(self, name: str) -> Stream:
        """The stream called `name`, created on first use."""
        s = self.streams.get(name)
        if s is None:
            s = self.streams[name] = Stream(name, self)
        return s

    # -- pushing -------------------------------------------------------------------------
    def push(self, ins: Instruction) -> None:
        """Queue an instruction. In async mode it waits in the window until the next flush."""
        # acquire/release rather than `with`: the statement's __enter__/__exit__ calls cost more than
        # the lock itself (0.5 vs 0.2 us on CPython 3.11), and every op pushes
        self._acquire()
        try:
            if self.recorder is not None:
                self.recorder(ins)
            self.stats.instructions += 1
            window = self.window
            if _mode == "sync" and not window and self._ran_alone(ins):
                return
            window.append(ins)
            if _mode == "sync":
                self.flush()
                return
            if not (self.lent and self._touches_lent(ins)):
                if len(window) >= self.fusion.max_group:
                    self._flush_settled()
                return
            self.flush(True)
        finally:
            self._release()
        for v in ins.outs:  # outside the lock: another thread's pushes go on meanwhile
            self.wait_blob(v.blob)

    def lowered(self, batch: list, instructions: int, fused_away: int, avoided: int, windows: int) -> None:
        """Run a batch lowered before (a window sequence seen before, captured through `capturer`, in new views):
        the pending window goes first, then the batch on the compute stream, counted as the `instructions` it
        stands for. Its issuer vouches that the captured windows were replayed from settled templates and that
        what they dropped is still dead (nothing outside the batch can reach its temporaries)."""
        self._acquire()
        try:
            if self.window:
                self.flush()
            stats = self.stats
            stats.instructions += instructions
            stats.fused_away += fused_away
            stats.allocations_avoided += avoided
            stats.replays += windows
            if batch:
                self.stream("compute").submit(batch)
        finally:
            self._release()

    def _ran_alone(self, ins: Instruction) -> bool:
        # A window of one instruction that runs on the calling thread anyway (sync mode, or a sync point
        # while its stream is idle) skips the fusion pass and the batch: run it here if this VM has no
        # other stream (whose writers it could need to wait for); whether it did.
        if len(self.streams) != 1:
            return False
        s = self.streams.get(ins.stream)
        if s is None or not s.small_inline or s.done != s.pushed:
            return False
        ins = lower_one(ins, self.stats)
        if ins is not None:
            s.submit([ins], True)  # (its stream idle: it runs here)
        return True

    @staticmethod
    def _touches_lent(ins: Instruction) -> bool:
        for v in ins.ins:
            if v.__class__ is View and v.blob.lent:
                return True
        for v in ins.outs:
            if v.blob.lent:
                return True
        return False

    def _flush_settled(self) -> None:
        # A full window is cut after its last non-elementwise instruction: the trailing run
        # of elementwise instructions stays, so a loop's groups do not drift with the cut
        # (each drifted cut would be a new program to compile).
        window = self.window
        cut = len(window)
        while cut and window[cut - 1].expr is not None:
            cut -= 1
        if cut == 0 or len(window) - cut >= self.fusion.max_group:
            self.flush()
            return
        self.window = window[:cut]
        self.flush()
        self.window = window[cut:]

    def flush(self, inline: bool = False) -> None:
        """Fuse the pending window and hand it to the streams (`inline`: a sync point follows)."""
        with self._lock:
            window, self.window = self.window, []
            if not window or inline and len(window) == 1 and self._ran_alone(window[0]):
                return
            if self.capturer is None:
                batch = self.windows.lower(window, self.stats)
            else:
                replays = self.stats.replays
                batch = self.windows.lower(window, self.stats)
                self.capturer(batch, self.stats.replays != replays)
            del window
            if not batch:
                return
            if len(batch) == 1:  # the common case at a sync point: no grouping by stream
                self.stream(batch[0].stream).submit(batch, inline)
                return
            first = batch[0].stream
            for ins in batch:
                if ins.stream != first:
                    break
            else:
                del ins
                self.stream(first).submit(batch, inline)
                return
            by_stream: dict = {}
            for ins in batch:
                by_stream.setdefault(ins.stream, []).append(ins)
            del ins, batch
            for name, part in by_stream.items():
                self.stream(name).submit(part, inline)

    # -- running (on the stream's thread) ---------------------------------------------------
    def execute(self, ins: Instruction) -> None:
        """Allocate outputs, wait on other streams' writers, run the kernel, record failures."""
        if ins.waits:
            for stream, seq in ins.waits:
                stream.wait(seq)
        fresh = None  # outputs this instruction brings into being (not in-place targets)
        try:
            ins_arrays = []
            for v in ins.ins:
                if v.__class__ is View:
                    blob = v.blob
                    if blob.error is not None:  # a failed writer: pass its failure on, unrun
                        for o in ins.outs:  # (an in-place target keeps its values, readable)
                            if o.blob.data is None:
                                o.blob.error = blob.error
                        return
                    arr = v.array  # the view's array, cached once built (its blob has memory then)
                    if arr is None:
                        if blob.data is None:  # read before any write: empty() memory
                            blob.hold(self.allocator.alloc(blob.nbytes))
                        arr = self.backend.array(v)
                    ins_arrays.append(arr)
                else:
                    ins_arrays.append(v)
            out_arrays = []
            for v in ins.outs:
                blob = v.blob
                blob.error = None
                arr = v.array
                if arr is None:
                    if blob.data is None:
                        fresh = [blob] if fresh is None else fresh + [blob]
                        if blob.nbytes <= self.backend.small_bytes:  # the backend's own memory (CpuBackend)
                            self.stats.small_allocations += 1
                            out_arrays.append(self.backend.own(v))
                            continue
                        blob.hold(self.allocator.alloc(blob.nbytes))
                    arr = self.backend.array(v)
                out_arrays.append(arr)
            if self.profiler is None:
                ins.kernel(ins_arrays, out_arrays, ins.attrs)
            else:
                t0 = time.perf_counter_ns()
                ins.kernel(ins_arrays, out_arrays, ins.attrs)
                self.profiler.record_kernel(ins, t0, time.perf_counter_ns())
            self.stats.kernels += 1
        except BaseException as exc:  # noqa: BLE001 - any kernel failure is reported at sync
            # New outputs hold garbage and say so when read; an in-place target keeps its data
            # (kernels validate before they write), so it stays readable.
            failure = Failure(ins.name, exc, getattr(ins, "origin", None))
            for v in ins.outs:
                if v.blob.data is None or (fresh is not None and v.blob in fresh):
                    v.blob.error = failure
            with self._error_lock:
                if self.error is None:
                    self.error = [failure]
                else:
                    self.error.append(failure)

    # -- sync points -----------------------------------------------------------------------
    def wait_blob(self, blob: Blob) -> None:
        """Block until every pending write of `blob` is done; re-raise a kernel failure."""
        self.stats.syncs += 1
        if self.window:
            self.flush(True)
        writer = blob.writer
        if writer is not None:
            writer[0].wait(writer[1])
        if self.error is not None or blob.error is not None:
            failure = self.take_error(blob)
            if failure is not None:
                raise failure.exception()  # raised here: the traceback starts at the sync point

    def synchronize(self, every_thread: bool = False) -> None:
        """Wait for everything pushed so far; re-raise a failure this thread issued (or, with
        `every_thread`, any thread: at exit)."""
        self.stats.syncs += 1
        if self.window:
            self.flush(True)
        for s in list(self.streams.values()):
            s.wait(s.pushed)
        if self.error is not None:
            failure = self.take_error(every_thread=every_thread)
            if failure is not None:
                raise failure.exception()

    def take_error(self, blob: Blob | None = None, every_thread: bool = False) -> Failure | None:
        """Remove and return the failure a sync point on this thread reports, or None: `blob`'s own
        (its writer failed), else the oldest failure of an op this thread issued, of a thread that
        ended, or of an unknown issuer. Another live thread's failures wait for that thread's sync
        points. Each failure is reported once, and with it the later failures of the same thread: in torch the
        failing call raises at once and no later op runs to fail (one op that issued several failing
        instructions, grid_sample's gathers, raised them at later, unrelated lines). The VM stays usable."""
        own = blob.error if blob is not None else None
        me = threading.get_ident()
        with self._error_lock:
            pending = self.error or []
            pick = own
            if pick is None:
                for f in pending:
                    if every_thread or f.visible_to(me):
                        pick = f
                        break
            if pick in pending:
                at = pending.index(pick)  # (failures are kept in the order their instructions ran)
                later = pending[at + 1:]
                if pick.origin is not None:
                    later = [f for f in later if f.origin is None or f.origin[2] != pick.origin[2]]
                pending[at:] = later
            if not pending:
                self.error = None
        return pick

    def forget_error(self, exc: BaseException) -> None:
        """Drop the pending failure whose kernel raised `exc` (its caller reported it already)."""
        with self._error_lock:
            if self.error:
                self.error = [f for f in self.error if f.exc is not exc] or None


def set_mode(mode: str) -> None:
    """Choose how instructions run: 'sync' (at the call, for debugging) or 'async' (workers)."""
    global _mode
    if mode not in ("sync", "async"):
        raise ValueError(f"set_mode: mode must be 'sync' or 'async', got {mode!r}")
    if mode != _mode:
        for vm in _vms.values():
            vm.synchronize()
    _mode = mode


def get_mode() -> str:
    """The current scheduling mode."""
    return _mode


_vms: dict = {}
_backends: dict = {}
_profiler_default = None  # the active tidal.profiler.profile, given to VMs created while it runs


def register_backend(device_type: str, factory) -> None:
    """Make `factory(device)` the way to build a device's memory backend."""
    _backends[device_type] = factory


def get_vm(device) -> VirtualMachine:
    """The VM of a device, created on first use."""
    vm = _vms.get(device)
    if vm is None:
        backend = _backends[device.type](device)
        # a backend may bring its own VM class (meta's runs nothing)
        vm = _vms[device] = getattr(backend, "machine", VirtualMachine)(device, backend)
        vm.profiler = _profiler_default
    return vm


def all_vms() -> list:
    """Every VM created so far."""
    return list(_vms.values())


def _after_fork_in_child() -> None:
    # Worker threads do not survive fork: a forked child (a DataLoader worker) starts its
    # streams afresh; work the parent had queued but not run is not the child's to finish.
    for vm in _vms.values():
        vm.window = []
        vm._lock = threading.RLock()  # a lock another thread held at fork stays held in the child
        vm._error_lock = threading.Lock()
        vm._lend_lock = threading.Lock()
        for stream in vm.streams.values():
            stream._queue = None
            stream._cond = threading.Condition()
            stream._waiters = 0
            stream.done = stream.pushed


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _forget_templates() -> None:
    # replayed windows bind their groups' kernels: after parallel kernels were switched on or off, bind afresh
    for vm in _vms.values():
        vm.windows.clear()


intra_op.on_change(_forget_templates)


def _drain_at_exit() -> None:
    # Work still queued at exit runs, and an error nobody synced on is not lost: it is printed
    # and the process exits non-zero, as it would have had the program synced.
    for vm in list(_vms.values()):
        try:
            vm.synchronize(every_thread=True)
        except BaseException as exc:  # noqa: BLE001 - reported, then the exit status says so
            notes = "".join(f"{note}\n" for note in getattr(exc, "__notes__", ()))
            sys.stderr.write(f"tidal: queued work failed before exit: {type(exc).__name__}: {exc}\n{notes}")
            sys.stderr.flush()
            sys.stdout.flush()
            os._exit(1)


atexit.register(_drain_at_exit)
