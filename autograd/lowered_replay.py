"""Lowered backward replay: a recorded backward pass issued as the kernels the VM ran for it, not as its instructions.

A replayed pass (backward_replay) pushes its recorded instructions, and the VM lowers them again: each window's
signature, its template, its fused instructions, about as much Python as making the instructions. Once the pass's
windows lower from settled templates (every window a replay), the lowered batches depend on nothing but the
recording: the pass's temporaries are reachable only through its own instructions, so what the templates dropped is
dead again on every later pass. So a replay captures those batches in graph places (the VM's `capturer`), and later
replays build them directly and hand them to the compute stream (`VirtualMachine.lowered`): one instruction per
kernel rather than per op, with no window, signature or fusion pass. The pending window is flushed before the
capture and before each lowered replay, so the pass's windows start where the capture's did. The same captured
sequence is what a GPU backend can record as one graph.
"""
from __future__ import annotations

import threading
import weakref

from ..vm import machine
from ..vm.blob import View
from ..vm.failure import issuing_site
from ..vm.instruction import compute_instruction
from . import replay_places

MAX_TRIES = 4  # captures tried on consecutive replays; later ones at replay counts that are powers of two

_counts = {"captured": 0, "lowered": 0}


class Lowered:
    """A pass's lowered batches in graph places. `steps`: per kernel (name, kernel, attrs, expr, reduce, how many
    instructions it stands for, whether it has an issuing site, the views it names first, its inputs, its outputs),
    views as in backward_replay.Recording; the counters the VM adds when it runs them."""

    __slots__ = ("steps", "n_views", "instructions", "fused_away", "avoided", "windows")

    def __init__(self, steps: list, n_views: int, instructions: int, fused_away: int, avoided: int, windows: int):
        self.steps, self.n_views = steps, n_views
        self.instructions, self.fused_away, self.avoided, self.windows = instructions, fused_away, avoided, windows


def usable(vm, places: list) -> bool:
    """Whether a pass on `vm` over the graph tensors `places` may be captured or run lowered now: async mode, none of
    their memory lent to the program (an instruction touching it must run at its push; the pass's own temporaries
    never are), no other pass recording."""
    if machine.get_mode() != "async" or vm.recorder is not None or vm.capturer is not None:
        return False
    return not vm.lent or not any(t._v.blob.lent for t in places)


def worth_capturing(rec) -> bool:
    """Whether this replay of `rec` should try a capture (a few in a row, then ever more rarely)."""
    rec.replays += 1
    return rec.capture_tries < MAX_TRIES or rec.replays & (rec.replays - 1) == 0


class Capture:
    """Shown each batch the VM lowers while a replay runs (`vm.capturer`); turns them into a Lowered."""

    def __init__(self, vm):
        self.vm = vm
        self.thread = threading.get_ident()
        # id(view) -> (weak reference, (place, internal blob, nbytes, shape, strides, offset, dtype, layout)): weak, so
        # that the fusion pass sees the pass's temporaries die as in any replay (it counts references)
        self.made: dict = {}
        self.numbers: dict = {}  # id(view) -> (weak reference, its number in the lowered steps)
        self.n_views = 0
        self.steps: list = []
        self.written: set = set()  # internal blob numbers some kernel writes
        self.windows = 0
        self.failed: str | None = None
        stats = vm.stats
        self.before = (stats.instructions, stats.fused_away, stats.allocations_avoided)

    def view_made(self, view: View, entry: tuple) -> None:
        """The replay made `view` from its recorded entry (number, place, internal blob, nbytes, layout...)."""
        self.made[id(view)] = (weakref.ref(view), entry[1:])

    def __call__(self, batch: list, replayed: bool) -> None:
        if self.failed is not None:
            return
        if threading.get_ident() != self.thread:
            self.failed = "another thread flushed meanwhile"
        elif not replayed:
            self.failed = "a window lowered by the fusion pass (its kernels may still change)"
        else:
            self.windows += 1
            try:
                for ins in batch:
                    self._step(ins)
            except LookupError as exc:
                self.failed = str(exc)

    def _number(self, v: View, first: list) -> int:
        known = self.numbers.get(id(v))
        if known is not None and known[0]() is v:
            return known[1]
        hit = self.made.get(id(v))
        if hit is None or hit[0]() is not v:
            raise LookupError("a view the replay did not make")
        n = self.n_views
        self.n_views += 1
        self.numbers[id(v)] = (hit[0], n)
        first.append((n,) + hit[1])
        return n

    def _step(self, ins) -> None:
        if ins.stream != "compute" or ins.waits:
            raise LookupError("a kernel off the compute stream")
        first: list = []
        if all(v.__class__ is View for v in ins.ins):
            args = [self._number(v, first) for v in ins.ins]
        else:  # (scalars among the inputs: (view number, None) or (None, scalar) pairs)
            args = [(self._number(v, first), None) if v.__class__ is View else (None, v) for v in ins.ins]
        outs = []
        for v in ins.outs:
            n = self._number(v, first)
            outs.append(n)
            b = self.made[id(v)][1][1]
            if b >= 0:
                self.written.add(b)
        self.steps.append((ins.name, ins.kernel, ins.attrs, ins.expr, ins.reduce, ins.fused,
                           getattr(ins, "origin", None) is not None, tuple(first), tuple(args), tuple(outs)))

    def finish(self, grads: list) -> Lowered | None:
        """The Lowered form of what was captured, or None where the pass cannot run lowered."""
        if self.failed is not None or not self.windows:
            return None
        if any(g is not None and g[0] not in self.written for g in grads):
            return None  # (a leaf's new gradient that no kernel writes: nothing to run it from)
        stats = self.vm.stats
        instructions, fused_away, avoided = (stats.instructions - self.before[0], stats.fused_away - self.before[1],
                                             stats.allocations_avoided - self.before[2])
        return Lowered(self.steps, self.n_views, instructions, fused_away, avoided, self.windows)


def begin(vm) -> Capture:
    """Start capturing the batches `vm` lowers (its pending window is flushed first, on its own)."""
    vm.flush()
    capture = Capture(vm)
    vm.capturer = capture
    return capture


def end(capture: Capture, rec) -> None:
    """Stop capturing (the pass's last window is flushed) and keep the Lowered form on `rec` if there is one."""
    vm = capture.vm
    try:
        vm.flush()
    finally:
        vm.capturer = None
    rec.capture_tries += 1
    lowered = capture.finish(rec.grads)
    if lowered is not None:
        rec.lowered = lowered
        _counts["captured"] += 1


def replay(rec, walk, retain_graph: bool) -> None:
    """Run `rec`'s lowered form on the graph `walk` describes: its kernels in new views, the leaves' gradients."""
    low = rec.lowered
    vm = walk.vm
    n_blobs = rec.n_blobs
    blobs = replay_places.begin(n_blobs, walk, retain_graph)
    views: list = [None] * low.n_views
    batch = []
    origin = None
    for name, kernel, attrs, expr, reduce, fused, has_origin, first, args, outs in low.steps:
        replay_places.make_views(first, views, blobs, n_blobs, vm)
        instr = compute_instruction(name, kernel, replay_places.inputs(args, views), tuple([views[n] for n in outs]),
                                    attrs, expr, reduce, None)
        instr.fused = fused
        if has_origin:
            if origin is None:
                origin = issuing_site()
            instr.origin = origin
        batch.append(instr)
    views = instr = None
    replay_places.finish(rec, walk, blobs, vm)
    blobs = None  # (the batch alone keeps the temporaries: each is freed once its last kernel has run)
    _counts["lowered"] += 1
    vm.lowered(batch, low.instructions, low.fused_away, low.avoided, low.windows)
