"""The fusion pass: runs of elementwise instructions become one generated kernel.

The window holds every instruction pushed since the last flush, in program order.
Elementwise instructions join the current group while they have its output shape and
touch no memory the group reaches through a different view (so per-element order is
program order); any other instruction closes the group and runs after it. An
intermediate whose view only the group itself still references was dropped by the
program: it stays a local variable of the kernel and is never allocated.
"""
from __future__ import annotations

import os
import sys

from .blob import View
from .codegen import Program, is_compilable, run_compiled, run_numpy
from .instruction import Instruction


class FusionConfig:
    """Knobs: fusion on/off, group size limit, how often a group is seen before it is compiled."""

    __slots__ = ("enabled", "max_group", "compile_after", "max_compiled_outputs")

    def __init__(self):
        self.enabled = os.environ.get("TIDAL_FUSION", "1") != "0"
        self.max_group = 64
        self.compile_after = int(os.environ.get("TIDAL_FUSION_COMPILE_AFTER", "2"))
        self.max_compiled_outputs = 4


config = FusionConfig()  # one configuration for every device


def _same_layout(a: View, b: View) -> bool:
    return a is b or (a.shape == b.shape and a.strides == b.strides and a.offset == b.offset
                      and a.dtype == b.dtype)


class _Group:
    """A group being built: SSA lines, external inputs, produced views, touched memory."""

    __slots__ = ("shape", "members", "lines", "ext", "ext_ids", "produced", "touched", "uses")

    def __init__(self, shape):
        self.shape = shape
        self.members: list = []
        self.lines: list = []
        self.ext: list = []
        self.ext_ids: dict = {}
        self.produced: dict = {}  # id(blob) -> (view, temp name)
        self.touched: dict = {}   # id(blob) -> a view through which the group touches it
        self.uses: dict = {}      # id(produced view) -> references from the group's instructions

    def accepts(self, ins: Instruction) -> bool:
        """Whether `ins` can join without breaking per-element program order."""
        if len(self.members) >= config.max_group or ins.outs[0].shape != self.shape:
            return False
        touched, produced = self.touched, self.produced
        for v in ins.ins:
            if v.__class__ is View:
                hit = produced.get(id(v.blob))
                if hit is not None and not _same_layout(hit[0], v):
                    return False
        for v in ins.outs:
            seen = touched.get(id(v.blob))
            if seen is not None and not _same_layout(seen, v):
                return False
        return True

    def add(self, ins: Instruction) -> None:
        """Append `ins` as one SSA line."""
        args = []
        produced, ext_ids, ext, touched = self.produced, self.ext_ids, self.ext, self.touched
        for v in ins.ins:
            if v.__class__ is View:
                hit = produced.get(id(v.blob))
                if hit is not None:
                    if hit[0] is v:
                        self.uses[id(v)] += 1
                    args.append(hit[1])
                    continue
                if id(v.blob) not in touched:
                    touched[id(v.blob)] = v
                name = ext_ids.get(id(v))
                if name is None:
                    name = ext_ids[id(v)] = _IN[len(ext)]
                    ext.append(v)
                args.append(name)
            else:
                args.append(_IN[len(ext)])
                ext.append(v)
        out = ins.outs[0]
        self.uses[id(out)] = self.uses.get(id(out), 0) + 1
        var = _TMP[len(self.lines)]
        self.lines.append((ins.expr, tuple(args)))
        produced[id(out.blob)] = (out, var)
        touched[id(out.blob)] = out
        self.members.append(ins)


_IN = [f"i{k}" for k in range(4096)]
_TMP = [f"t{k}" for k in range(4096)]


def _is_dead(view: View, uses_in_group: int) -> bool:
    # The blob is dead to the program when its only View is this one and the View is
    # referenced only by the group's instructions. The constants count the references this
    # frame, the caller's local and getrefcount's argument add (tests/test_fusion.py pins them).
    blob = view.blob
    if blob.data is not None:
        return False
    return sys.getrefcount(blob) == 3 and sys.getrefcount(view) == uses_in_group + 3


def _lower(g: _Group, stats) -> Instruction | None:
    """One runnable instruction for a closed group (None when nothing it computes is wanted)."""
    outs, out_vars = [], []
    dead = 0
    final = {id(view) for view, _ in g.produced.values()}  # last writes of each blob
    g.produced = g.touched = None  # drop our own references before counting the program's
    for k, ins in enumerate(g.members):
        out = ins.outs[0]
        if id(out) in final and _is_dead(out, g.uses[id(out)]):
            dead += 1
        else:
            outs.append(out)
            out_vars.append(f"t{k}")
    del out
    n = len(g.members)
    stats.fused_away += n - 1
    stats.allocations_avoided += dead
    if not outs:
        return None
    key = (tuple(g.lines), len(g.ext), tuple(out_vars))
    entry = _programs.get(key)
    if entry is None:
        entry = _programs[key] = [Program(*key), 0, None, False]
    entry[1] += 1
    # wide groups (many independent outputs, e.g. a burst of fills) compile slowly and gain
    # little over NumPy: only groups with few stored outputs are compiled
    if (not entry[3] and n > 1 and len(outs) <= config.max_compiled_outputs
            and entry[1] >= config.compile_after and is_compilable(entry[0])
            and all(_compilable_dtype(v.dtype) for v in g.ext if v.__class__ is View)):
        entry[2], entry[3] = _compiled_kernel(entry[0]), True
    elif entry[2] is None:
        entry[2] = _numpy_kernel(entry[0])
    kernel = entry[2]
    first = g.members[0]
    name = first.name if n == 1 else "fused[" + "+".join(i.name for i in g.members) + "]"
    fused = Instruction(name, kernel, tuple(g.ext), tuple(outs), stream=first.stream)
    fused.fused = n
    return fused


def _compilable_dtype(np_dtype) -> bool:
    # numba has no float16/bfloat16 scalars: groups touching them stay on the NumPy path
    return np_dtype.kind in "biuf" and not (np_dtype.kind == "f" and np_dtype.itemsize == 2)


_programs: dict = {}  # program key -> [Program, times seen, kernel, compiled?]


def _numpy_kernel(prog: Program):
    return lambda ins, outs, attrs: run_numpy(prog, ins, outs)


def _compiled_kernel(prog: Program):
    return lambda ins, outs, attrs: run_compiled(prog, ins, outs)


def fuse_window(window: list, stats) -> list:
    """The window's instructions with elementwise runs fused, in an order that keeps dependences."""
    batch = []
    group = None
    for ins in window:
        if ins.expr is None:
            if group is not None:
                lowered = _lower(group, stats)
                if lowered is not None:
                    batch.append(lowered)
                group = None
            batch.append(ins)
            continue
        if group is None or not (config.enabled and group.accepts(ins)):
            if group is not None:
                lowered = _lower(group, stats)
                if lowered is not None:
                    batch.append(lowered)
            group = _Group(ins.outs[0].shape)
        group.add(ins)
    if group is not None:
        lowered = _lower(group, stats)
        if lowered is not None:
            batch.append(lowered)
    return batch
