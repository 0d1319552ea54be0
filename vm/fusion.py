"""The fusion pass: runs of elementwise instructions become one generated kernel.

The window holds every instruction pushed since the last flush, in program order.
Elementwise instructions join the current group while they have its output shape and
touch no memory the group reaches through a different view (so per-element order is
program order); any other instruction closes the group and runs after it. An
intermediate whose view only the group itself still references was dropped by the
program: it stays a local variable of the kernel and is never allocated.

A reduction that declares itself fusable (Instruction.reduce) and reads the group's latest
result joins the group as its last step (vm/fusion_reduce.py): the result is reduced as it
is computed. A lone elementwise instruction gets its kernel without a group being built.
The pass runs for every instruction, so it avoids id() calls, double lookups and per-group
string building (a program's instruction name is made once, with its entry).
"""
from __future__ import annotations

import math
import os
import sys

from .blob import View
from .codegen import Program, is_compilable, run_compiled, run_numpy
from .fusion_reduce import ReduceAttrs, run_compiled_reduce, run_numpy_reduce
from .instruction import Instruction


class FusionConfig:
    """Knobs: fusion on/off, group size limit, how often a group is seen before it is compiled."""

    __slots__ = ("enabled", "max_group", "compile_after", "max_compiled_outputs", "reductions",
                 "reduce_min_numel")

    def __init__(self):
        self.enabled = os.environ.get("TIDAL_FUSION", "1") != "0"
        self.max_group = 64
        self.compile_after = int(os.environ.get("TIDAL_FUSION_COMPILE_AFTER", "2"))
        self.max_compiled_outputs = 4
        self.reductions = os.environ.get("TIDAL_FUSE_REDUCTIONS", "1") != "0"  # trailing reductions join
        self.reduce_min_numel = 1  # smallest reduced input worth a fused reduction (at least 1)


config = FusionConfig()  # one configuration for every device


def _same_layout(a: View, b: View) -> bool:
    return a is b or (a.shape == b.shape and a.strides == b.strides and a.offset == b.offset
                      and a.dtype == b.dtype)


class _Group:
    """A group being built: SSA lines, external inputs, produced views, touched memory.

    Dicts are keyed by the blobs and views themselves (identity hashing, no id() calls); _lower
    empties them before it counts references.
    """

    __slots__ = ("shape", "members", "lines", "ext", "ext_names", "produced", "touched")

    def __init__(self, shape):
        self.shape = shape
        self.members: list = []
        self.lines: list = []
        self.ext: list = []
        self.ext_names: dict = {}  # external view -> its input name
        self.produced: dict = {}   # blob -> [view, temp name, references to view from the group]
        self.touched: dict = {}    # blob -> a view through which the group touches it

    def join(self, ins: Instruction) -> bool:
        """Append `ins` as one SSA line, unless that would break per-element program order
        (it then returns False and leaves the group as it was)."""
        out = ins.outs[0]
        if out.shape != self.shape or len(self.lines) >= config.max_group:
            return False
        produced, touched = self.produced, self.touched
        seen = touched.get(out.blob)
        if seen is not None and seen is not out and not _same_layout(seen, out):
            return False
        views = ins.ins
        for v in views:  # check every input before changing anything
            if v.__class__ is View:
                hit = produced.get(v.blob)
                if hit is not None and hit[0] is not v and not _same_layout(hit[0], v):
                    return False
        args = []
        ext, ext_names = self.ext, self.ext_names
        for v in views:
            if v.__class__ is View:
                hit = produced.get(v.blob)
                if hit is not None:
                    if hit[0] is v:
                        hit[2] += 1
                    args.append(hit[1])
                    continue
                name = ext_names.get(v)
                if name is None:  # a new input (an input already named has its blob touched)
                    name = ext_names[v] = _IN[len(ext)]
                    ext.append(v)
                    if v.blob not in touched:
                        touched[v.blob] = v
                args.append(name)
            else:
                args.append(_IN[len(ext)])
                ext.append(v)
        var = _TMP[len(self.lines)]
        self.lines.append((ins.expr, tuple(args)))
        old = produced.get(out.blob) if seen is not None else None  # only a touched blob was produced
        produced[out.blob] = [out, var, old[2] + 1 if old is not None and old[0] is out else 1]
        touched[out.blob] = out
        self.members.append(ins)
        return True

    def feeds(self, red: Instruction) -> bool:
        """Whether reduction `red` reduces the group's latest result for a blob, whole."""
        v = red.ins[0]
        hit = self.produced.get(v.blob) if v.__class__ is View else None
        return (hit is not None and hit[0] is v and self.ext_names and len(red.ins) == 1
                and len(red.outs) == 1 and v.shape == self.shape and len(v.shape) > 0
                and math.prod(v.shape) >= config.reduce_min_numel and red.outs[0].blob not in self.touched)


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


def _lower(g: _Group, stats, red: Instruction | None = None) -> Instruction | None:
    """One runnable instruction for a closed group (None when nothing it computes is wanted);
    `red`, a reduction the group feeds (see _Group.feeds), becomes part of it."""
    produced = g.produced
    final = {}  # each blob's last write -> its uses
    for entry in produced.values():
        final[id(entry[0])] = entry[2]
    entry = None
    reduction = None
    if red is not None:
        view, var, _ = produced[red.ins[0].blob]
        final[id(view)] += 1  # the reduction's reference
        reduction = (var,) + red.reduce[1:]
        del view
    # drop our own references before counting the program's
    g.produced = g.touched = g.ext_names = produced = None
    outs, out_vars = [], []
    dead = 0
    for k, ins in enumerate(g.members):
        out = ins.outs[0]
        uses = final.get(id(out))
        if uses is not None and _is_dead(out, uses):
            dead += 1
            continue
        outs.append(out)
        out_vars.append(_TMP[k])
    del out
    n = len(g.members)
    stats.fused_away += n - 1 if red is None else n
    stats.allocations_avoided += dead
    if not outs and red is None:
        return None
    key = (tuple(g.lines), len(g.ext), tuple(out_vars)) if red is None else \
        (tuple(g.lines), len(g.ext), tuple(out_vars), reduction)
    entry = _programs.get(key)
    if entry is None:
        names = [i.name for i in g.members] + ([red.name] if red is not None else [])
        name = names[0] if len(names) == 1 else "fused[" + "+".join(names) + "]"
        entry = _programs[key] = [Program(*key), 0, None, False, name]
    entry[1] += 1
    # wide groups (many independent outputs, e.g. a burst of fills) compile slowly and gain
    # little over NumPy: only groups with few stored outputs are compiled. A lone op feeding a
    # reduction stays on NumPy too: its vectorized ufuncs (exp, maximum) beat a scalar loop as
    # often as not, and the fused NumPy path already skips storing the reduced temporary.
    if (not entry[3] and n > 1 and len(outs) <= config.max_compiled_outputs
            and entry[1] >= config.compile_after and is_compilable(entry[0])
            and all(_compilable_dtype(v.dtype) for v in g.ext if v.__class__ is View)):
        entry[2], entry[3] = _compiled_kernel(entry[0]), True
    elif entry[2] is None:
        entry[2] = _numpy_kernel(entry[0])
    stream = g.members[0].stream
    if red is None:
        fused = Instruction(entry[4], entry[2], tuple(g.ext), tuple(outs), stream=stream)
    else:
        attrs = ReduceAttrs(red.reduce[0], g.shape, red.ins[0].dtype, red.kernel, red.attrs)
        fused = Instruction(entry[4], entry[2], tuple(g.ext), tuple(outs) + red.outs, attrs, stream=stream)
    fused.fused = n + (red is not None)
    return fused


def _compilable_dtype(np_dtype) -> bool:
    # numba has no float16/bfloat16 scalars: groups touching them stay on the NumPy path
    return np_dtype.kind in "biuf" and not (np_dtype.kind == "f" and np_dtype.itemsize == 2)


_programs: dict = {}  # program key -> [Program, times seen, kernel, compiled?, instruction name]


def _numpy_kernel(prog: Program):
    if prog.reduction is not None:
        return lambda ins, outs, attrs: run_numpy_reduce(prog, ins, outs, attrs)
    return lambda ins, outs, attrs: run_numpy(prog, ins, outs)


def _compiled_kernel(prog: Program):
    if prog.reduction is not None:
        return lambda ins, outs, attrs: run_compiled_reduce(prog, ins, outs, attrs)
    return lambda ins, outs, attrs: run_compiled(prog, ins, outs)


def _lower_single(ins: Instruction, stats) -> Instruction | None:
    """A group of one, the common case between differently shaped ops: the instruction itself
    gets its NumPy kernel (None when its result is dead), with no group built."""
    out = ins.outs[0]
    if _is_dead(out, 1):
        stats.allocations_avoided += 1
        return None
    del out
    entry = _singles.get((ins.expr, len(ins.ins)))
    if entry is None:
        key = (((ins.expr, tuple(_IN[:len(ins.ins)])),), len(ins.ins), ("t0",))
        entry = _programs.get(key)
        if entry is None:
            entry = _programs[key] = [Program(*key), 0, None, False, ins.name]
            entry[2] = _numpy_kernel(entry[0])
        _singles[ins.expr, len(ins.ins)] = entry
    ins.kernel = entry[2]
    return ins


_singles: dict = {}  # (expression, inputs) -> the _programs entry of that one-op group


def fuse_window(window: list, stats) -> list:
    """The window's instructions with elementwise runs fused, in an order that keeps dependences."""
    batch = []
    group = None   # the group being built, or
    single = None  # the elementwise instruction that may start one
    enabled = config.enabled
    reductions = enabled and config.reductions
    for ins in window:
        if ins.expr is None:
            if single is not None:
                if reductions and ins.reduce is not None:
                    group = _Group(single.outs[0].shape)
                    group.join(single)
                else:
                    lowered = _lower_single(single, stats)
                    if lowered is not None:
                        batch.append(lowered)
                single = None
            if group is not None:
                if reductions and ins.reduce is not None and group.feeds(ins):
                    batch.append(_lower(group, stats, ins))
                    group = None
                    continue
                lowered = _lower(group, stats)
                if lowered is not None:
                    batch.append(lowered)
                group = None
            batch.append(ins)
            continue
        if single is not None:
            if enabled and ins.outs[0].shape == single.outs[0].shape:
                group = _Group(single.outs[0].shape)
                group.join(single)
            else:
                lowered = _lower_single(single, stats)
                if lowered is not None:
                    batch.append(lowered)
            single = None
        if group is not None:
            if enabled and group.join(ins):
                continue
            lowered = _lower(group, stats)
            if lowered is not None:
                batch.append(lowered)
            group = None
        single = ins
    if single is not None:
        lowered = _lower_single(single, stats)
        if lowered is not None:
            batch.append(lowered)
    elif group is not None:
        lowered = _lower(group, stats)
        if lowered is not None:
            batch.append(lowered)
    return batch
