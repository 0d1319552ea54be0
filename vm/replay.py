"""Window replay: a window seen before is lowered from its recorded template, not fused again.

A training step pushes the same instructions every iteration. The fusion pass's result
(which instructions join which group, which results the program dropped, which kernel runs
each group) depends only on the window's *signature*: each instruction's expression or kernel,
its reduction data and stream, and the shape, strides, offset and dtype of every view it
touches, with views and blobs numbered by first appearance (the data-flow edges). The first
lowerings record a template in window places (fusion.fuse_window's `rec`); once every group
of the window has reached its final kernel (compiled or NumPy for good), the template is kept
and later windows with the same signature are built from it directly. The one thing a
signature cannot promise is liveness: a result the template drops must still be dead to the
program (nothing else references it), which is checked before replaying; otherwise the window
goes through the fusion pass as usual. Nothing here is CPU-specific: a CUDA backend can
capture a replayed window as a graph.
"""
from __future__ import annotations

import os

from .blob import View
from .codegen import compiler, ready_kernel
from .fusion_reduce import ready_reduce_kernel
from .fusion import _DEAD, _FUSED, _ORIG, _SINGLE, _is_dead, config, fuse_window, fused_instruction

MAX_TEMPLATES = 1024  # distinct windows kept; past that, the ones not replayed lately go (memory stays bounded)
enabled = os.environ.get("TIDAL_REPLAY", "1") != "0"


_layouts: dict = {}  # (shape, strides, offset, dtype number) -> a small id, for cheap signatures
_MAX_LAYOUTS = 1 << 20


def _layout_id(v: View) -> int:
    return layout_id(v.shape, v.strides, v.offset, v.dtype)


def layout_id(shape: tuple, strides: tuple, offset: int, np_dtype) -> int:
    """The small id replay signatures use for a view of this layout (an op that makes many views of
    one layout computes it once and stores it in `View.layout`)."""
    key = (shape, strides, offset, np_dtype.num)
    lid = _layouts.get(key)
    if lid is None:
        if len(_layouts) >= _MAX_LAYOUTS:  # never reuse an id: a fresh one only matches itself
            _layouts[None] = lid = _layouts.get(None, _MAX_LAYOUTS) + 1
            return lid
        lid = _layouts[key] = len(_layouts)
    return lid


def head(code, reduce, stream: str, n_ins: int, n_outs: int) -> tuple:
    """What a signature records of an instruction besides its views: its expression (else its kernel),
    reduction data, stream and arity. An issuer of many alike (an op plan) makes it once and passes
    it as `Instruction(head=...)`."""
    return (code, reduce, stream, n_ins, n_outs)


def signature(window: list) -> tuple:
    """A hashable description of everything the fusion pass decides on, except liveness: one flat
    tuple (cheap to hash) of each instruction's head, and per view its blob's
    number and layout id at first sight, else its view number."""
    blobs: dict = {}
    views: dict = {}
    sig = []
    add = sig.append
    for ins in window:
        made = ins.head
        if made is None:  # an op launched without a plan's head
            made = head(ins.expr if ins.expr is not None else ins.kernel, ins.reduce, ins.stream, len(ins.ins),
                        len(ins.outs))
        add(made)
        for v in ins.ins + ins.outs:  # (one concatenated tuple: cheaper than a loop over the two)
            if v.__class__ is View:
                n = views.get(v)
                if n is None:
                    views[v] = -len(views) - 1
                    b = blobs.get(v.blob)
                    if b is None:
                        b = blobs[v.blob] = len(blobs)
                    lid = v.layout
                    if lid is None:
                        lid = v.layout = _layout_id(v)
                    add(b)
                    add(lid)
                else:
                    add(n)
            else:
                add(v.__class__)
    return tuple(sig)


class Template:
    """A lowered window in window places; `build` makes the batch for a new window."""

    __slots__ = ("steps", "dead", "fused_away", "ready", "used")

    def __init__(self, steps: list):
        self.steps = steps
        self.used = False  # replayed since the cache's last sweep
        self.ready: dict = {}  # step number -> its compiled kernel bound for the step's array types
        self.dead = tuple(d for step in steps if step[0] in (_FUSED, _DEAD) for d in step[5])
        self.fused_away = sum(step[6] for step in steps if step[0] in (_FUSED, _DEAD))

    def live(self, window: list) -> bool:
        """Whether every result the template drops is still dead to the program."""
        for pos, uses in self.dead:
            out = window[pos].outs[0]
            if not _is_dead(out, uses):
                return False
        return True

    def build(self, window: list) -> list:
        """The batch for `window` (which has this template's signature and is `live`)."""
        batch = []
        ready = self.ready
        for k, step in enumerate(self.steps):
            kind = step[0]
            if kind is _ORIG:
                batch.append(window[step[2]])
            elif kind is _SINGLE:
                ins = window[step[2]]
                if step[1] is not None:
                    ins.kernel = step[1][2]
                batch.append(ins)
            elif kind is _FUSED:
                _, entry, ext_src, kept, red_pos, _, n, stream, shape = step
                ext = tuple([window[p].ins[k] for p, k in ext_src])
                outs = tuple([window[p].outs[0] for p in kept])
                red = window[red_pos] if red_pos >= 0 else None
                fused = fused_instruction(entry, ext, outs, red, stream, shape, n + 1)
                kernel = ready.get(k)
                if kernel is not None:
                    fused.kernel = kernel
                elif entry[3]:  # compiled: bind the call on its first run
                    fused.kernel = self._binding(k, entry[0], fused.kernel)
                batch.append(fused)
        return batch

    def _binding(self, k: int, prog, kernel):
        # the signature fixes every array's type and layout, so the compiled call found for the
        # step's first run serves all its replays
        ready = self.ready
        tried = [-1, None]  # the compiler's generation at the last look (nothing new became ready since), the call

        def bind(ins, outs, attrs):
            bound = tried[1]
            if bound is not None:  # (a batch built before the call was found holds this binding: see lowered_replay)
                return bound(ins, outs, attrs)
            generation = compiler.generation
            if generation == tried[0]:
                return kernel(ins, outs, attrs)
            bound = ready_kernel(prog, ins, outs) if attrs is None else ready_reduce_kernel(prog, ins, outs, attrs)
            if bound is None:
                tried[0] = generation
                kernel(ins, outs, attrs)
            else:
                ready[k] = tried[1] = bound
                bound(ins, outs, attrs)
        return bind


def _final(steps: list) -> bool:
    # a group's kernel may still change from NumPy to compiled: replay only settled windows
    for step in steps:
        if (step[0] is _FUSED or step[0] is _SINGLE and step[1] is not None) and not step[1][3] \
                and step[1][1] <= config.compile_after:
            return False
    return True


class WindowCache:
    """Templates of windows seen before, by signature (one cache per VM). Bounded: when MAX_TEMPLATES are kept,
    those not replayed since the last sweep go (one-off windows: a batch collated from rows at new offsets, a shape
    seen once), so a program's working set stays and its later phases (evaluation after training) still record."""

    __slots__ = ("templates",)

    def __init__(self):
        self.templates: dict = {}

    def lower(self, window: list, stats) -> list:
        """The window's batch: replayed from a template when one matches, else fused (and recorded)."""
        if not enabled or not config.enabled or len(window) < 2:  # a window of one fuses for less
            return fuse_window(window, stats)
        sig = signature(window)
        template = self.templates.get(sig)
        if template is not None and template.__class__ is Template:
            if template.live(window):
                template.used = True
                stats.fused_away += template.fused_away
                stats.allocations_avoided += len(template.dead)
                stats.replays += 1
                return template.build(window)
            return fuse_window(window, stats)
        rec: list = []
        batch = fuse_window(window, stats, rec)
        if _final(rec):
            if len(self.templates) >= MAX_TEMPLATES:
                self._sweep()
            self.templates[sig] = Template(rec)
        return batch

    def _sweep(self) -> None:
        # keep the templates replayed since the last sweep (at most half the bound: the newest), forget the rest
        kept = [(sig, t) for sig, t in self.templates.items() if t.used][-(MAX_TEMPLATES // 2):]
        self.templates = dict(kept)
        for _, t in kept:
            t.used = False

    def clear(self) -> None:
        """Forget every template (fusion knobs changed)."""
        self.templates.clear()
