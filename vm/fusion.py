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
from . import intra_op
from .codegen import Program, is_compilable, run_compiled, run_numpy
from .fusion_reduce import ReduceAttrs, run_compiled_reduce, run_numpy_reduce
from .instruction import Instruction


class FusionConfig:
    """Knobs: fusion on/off, group size limit, how often a group is seen before it is compiled."""

    __slots__ = ("enabled", "max_group", "compile_after", "max_compiled_outputs", "reductions",
                 "reduce_min_numel", "single_compile_bytes")

    def __init__(self):
        self.enabled = os.environ.get("TIDAL_FUSION", "1") != "0"
        self.max_group = 64
        self.compile_after = int(os.environ.get("TIDAL_FUSION_COMPILE_AFTER", "2"))
        self.max_compiled_outputs = 4
        self.reductions = os.environ.get("TIDAL_FUSE_REDUCTIONS", "1") != "0"  # trailing reductions join
        self.reduce_min_numel = 1  # smallest reduced input worth a fused reduction (at least 1)
        self.single_compile_bytes = 1 << 18  # a lone multi-call op compiles from this result size (see _lower_single)


config = FusionConfig()  # one configuration for every device


def _same_layout(a: View, b: View) -> bool:
    return a is b or (a.shape == b.shape and a.strides == b.strides and a.offset == b.offset
                      and a.dtype == b.dtype)


class _Group:
    """A group being built: SSA lines, external inputs, produced views, touched memory.

    Dicts are keyed by the blobs and views themselves (identity hashing, no id() calls); _lower
    empties them before it counts references.
    """

    __slots__ = ("shape", "members", "positions", "lines", "ext", "ext_src", "ext_names", "produced",
                 "touched")

    def __init__(self, shape):
        self.shape = shape
        self.members: list = []
        self.positions: list = []  # each member's place in the window (for replay templates)
        self.ext_src: list = []    # each external input's (window place, input slot)
        self.lines: list = []
        self.ext: list = []
        self.ext_names: dict = {}  # external view -> its input name
        self.produced: dict = {}   # blob -> [view, temp name, references to view from the group]
        self.touched: dict = {}    # blob -> a view through which the group touches it

    def join(self, ins: Instruction, pos: int) -> bool:
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
        ext, ext_names, ext_src = self.ext, self.ext_names, self.ext_src
        for k, v in enumerate(views):
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
                    ext_src.append((pos, k))
                    if v.blob not in touched:
                        touched[v.blob] = v
                args.append(name)
            else:
                args.append(_IN[len(ext)])
                ext.append(v)
                ext_src.append((pos, k))
        var = _TMP[len(self.lines)]
        self.lines.append((ins.expr, tuple(args)))
        old = produced.get(out.blob) if seen is not None else None  # only a touched blob was produced
        produced[out.blob] = [out, var, old[2] + 1 if old is not None and old[0] is out else 1]
        touched[out.blob] = out
        self.members.append(ins)
        self.positions.append(pos)
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


def _lower(g: _Group, stats, red: Instruction | None = None, red_pos: int = -1,
           rec: list | None = None) -> Instruction | None:
    """One runnable instruction for a closed group (None when nothing it computes is wanted);
    `red`, a reduction the group feeds (see _Group.feeds), becomes part of it. With `rec`, the
    step is also recorded in window places for replay (vm/replay.py)."""
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
    dead = []  # (window place, uses) of each result the program dropped
    kept = []  # window places of the results written out
    positions = g.positions
    for k, ins in enumerate(g.members):
        out = ins.outs[0]
        uses = final.get(id(out))
        if uses is not None and _is_dead(out, uses):
            dead.append((positions[k], uses))
            continue
        outs.append(out)
        out_vars.append(_TMP[k])
        kept.append(positions[k])
    del out
    n = len(g.members)
    stats.fused_away += n - 1 if red is None else n
    stats.allocations_avoided += len(dead)
    if not outs and red is None:
        if rec is not None:
            rec.append((_DEAD, None, None, None, -1, tuple(dead), n - 1))
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
    # little over NumPy: only groups with few stored outputs, or with several lines of work per
    # stored output (a backward chain that keeps each step's gradient), are compiled. A lone op
    # compiles when it feeds a reduction (the NumPy path stores the whole temporary, then reduces
    # it apart: `(x + y).sum()` ran 1.7x slower), or when it is one of several calls (no direct
    # kernel) on a large input, as in _lower_single; else one NumPy call serves it.
    first = g.members[0]
    several = n > 1 or red is not None or (first.kernel is None
                                           and first.outs[0].blob.nbytes >= config.single_compile_bytes)
    if (not entry[3] and several and (len(outs) <= config.max_compiled_outputs or len(g.lines) >= 2 * len(outs))
            and entry[1] >= config.compile_after and _compilable_group(entry[0], g.ext, outs)):
        entry[2], entry[3] = _compiled_kernel(entry[0]), True
    elif entry[2] is None:
        entry[2] = _numpy_kernel(entry[0])
    if rec is not None:
        rec.append((_FUSED, entry, tuple(g.ext_src), tuple(kept), red_pos, tuple(dead),
                    n - 1 if red is None else n, g.members[0].stream, g.shape))
    return fused_instruction(entry, tuple(g.ext), tuple(outs), red, g.members[0].stream, g.shape,
                             n + (red is not None))


def fused_instruction(entry: list, ext: tuple, outs: tuple, red: Instruction | None, stream: str,
                      shape: tuple, n: int) -> Instruction:
    """The instruction running a group's program `entry` (and the reduction `red` it feeds)."""
    if red is None:
        fused = Instruction(entry[4], entry[2], ext, outs, stream=stream)
    else:
        attrs = ReduceAttrs(red.reduce[0], shape, red.ins[0].dtype, red.kernel, red.attrs)
        fused = Instruction(entry[4], entry[2], ext, outs + red.outs, attrs, stream=stream)
    fused.fused = n
    return fused


# steps of a replay template (see fuse_window's `rec`), by their first field
_ORIG, _SINGLE, _FUSED, _DEAD = 0, 1, 2, 3


def _compilable_dtype(np_dtype) -> bool:
    # numba has no float16/bfloat16 scalars: groups touching them stay on the NumPy path
    return np_dtype.kind in "biufc" and not (np_dtype.kind == "f" and np_dtype.itemsize == 2)


def _compilable_group(prog: Program, ext: list, outs: list) -> bool:
    """Whether `prog` may run compiled on these inputs and outputs: numba has scalars of their dtypes,
    and each name the program uses compiles right for them (complex values have their own rules:
    codegen.register_complex_vocabulary)."""
    complex_values = False
    for v in ext:
        if v.__class__ is View:
            if not _compilable_dtype(v.dtype):
                return False
            complex_values = complex_values or v.dtype.kind == "c"
        elif getattr(v, "dtype", None) is not None:  # a NumPy scalar (a Python number has no dtype)
            complex_values = complex_values or v.dtype.kind == "c"
    complex_values = complex_values or any(o.dtype.kind == "c" for o in outs)
    # a complex group feeding a reduction stays on NumPy: the fused reduction loops (fusion_reduce)
    # are written and tested for real accumulators only
    if complex_values and prog.reduction is not None:
        return False
    return is_compilable(prog, complex_values)


_programs: dict = {}  # program key -> [Program, times seen, kernel, compiled?, instruction name]


def _numpy_kernel(prog: Program):
    if prog.reduction is not None:
        return lambda ins, outs, attrs: run_numpy_reduce(prog, ins, outs, attrs)
    return lambda ins, outs, attrs: run_numpy(prog, ins, outs)


def _compiled_kernel(prog: Program):
    if prog.reduction is not None:
        return lambda ins, outs, attrs: run_compiled_reduce(prog, ins, outs, attrs)
    return lambda ins, outs, attrs: run_compiled(prog, ins, outs)


def _lower_single(ins: Instruction, stats, pos: int, rec: list | None) -> Instruction | None:
    """A group of one, the common case between differently shaped ops: the instruction itself
    gets its NumPy kernel (None when its result is dead), with no group built."""
    out = ins.outs[0]
    if _is_dead(out, 1):
        stats.allocations_avoided += 1
        if rec is not None:
            rec.append((_DEAD, None, None, None, -1, ((pos, 1),), 0))
        return None
    del out
    if ins.kernel is not None and not (  # the op brought a kernel that runs it alone (a direct NumPy call),
            # unless it is an elementwise one large enough for a compiled loop on several threads
            # (from the size a lone op compiles at: below it the program would run on NumPy, slower than the ufunc)
            ins.expr is not None and ins.outs[0].blob.nbytes >= max(_PARALLEL_BYTES, config.single_compile_bytes)
            and intra_op.parallel()):
        if rec is not None:
            rec.append((_SINGLE, None, pos))
        return ins
    entry = _singles.get((ins.expr, len(ins.ins)))
    if entry is None:
        key = (((ins.expr, tuple(_IN[:len(ins.ins)])),), len(ins.ins), ("t0",))
        entry = _programs.get(key)
        if entry is None:
            entry = _programs[key] = [Program(*key), 0, None, False, ins.name]
            entry[2] = _numpy_kernel(entry[0])
        _singles[ins.expr, len(ins.ins)] = entry
    # an op whose expression is more than one NumPy call (threshold_backward, lerp, sigmoid...) makes NumPy
    # temporaries and passes: one seen often on large arrays gets a compiled loop as a group would
    entry[1] += 1
    if (not entry[3] and entry[1] >= config.compile_after and ins.outs[0].blob.nbytes >= config.single_compile_bytes
            and _compilable_group(entry[0], ins.ins, ins.outs)):
        entry[2], entry[3] = _compiled_kernel(entry[0]), True
    ins.kernel = entry[2]
    if rec is not None:
        rec.append((_SINGLE, entry, pos))
    return ins


def lower_one(ins: Instruction, stats) -> Instruction | None:
    """A window of one instruction, lowered (what fuse_window makes of it)."""
    return ins if ins.expr is None else _lower_single(ins, stats, 0, None)


_singles: dict = {}  # (expression, inputs) -> the _programs entry of that one-op group
_PARALLEL_BYTES = 4 * intra_op.PARALLEL_ELEMENTS


def fuse_window(window: list, stats, rec: list | None = None) -> list:
    """The window's instructions with elementwise runs fused, in an order that keeps dependences.
    With `rec` (a list), each step of the result is also recorded in window places: the
    template that vm/replay.py instantiates when the same window comes again."""
    batch = []
    group = None   # the group being built, or
    single = None  # the elementwise instruction that may start one
    single_pos = -1
    enabled = config.enabled
    reductions = enabled and config.reductions
    for pos, ins in enumerate(window):
        if ins.expr is None:
            if single is not None:
                if reductions and ins.reduce is not None:
                    group = _Group(single.outs[0].shape)
                    group.join(single, single_pos)
                else:
                    lowered = _lower_single(single, stats, single_pos, rec)
                    if lowered is not None:
                        batch.append(lowered)
                single = None
            if group is not None:
                if reductions and ins.reduce is not None and group.feeds(ins):
                    batch.append(_lower(group, stats, ins, pos, rec))
                    group = None
                    continue
                _lower_into(batch, group, stats, rec)
                group = None
            batch.append(ins)
            if rec is not None:
                rec.append((_ORIG, None, pos))
            continue
        if single is not None:
            if enabled and ins.outs[0].shape == single.outs[0].shape:
                group = _Group(single.outs[0].shape)
                group.join(single, single_pos)
            else:
                lowered = _lower_single(single, stats, single_pos, rec)
                if lowered is not None:
                    batch.append(lowered)
            single = None
        if group is not None:
            if enabled and group.join(ins, pos):
                continue
            _lower_into(batch, group, stats, rec)
            group = None
        single, single_pos = ins, pos
    if single is not None:
        lowered = _lower_single(single, stats, single_pos, rec)
        if lowered is not None:
            batch.append(lowered)
    elif group is not None:
        _lower_into(batch, group, stats, rec)
    return batch


def _lower_into(batch: list, g: _Group, stats, rec: list | None) -> None:
    """Append what a closed group (with no reduction) runs as. A wide group whose members all read
    only outside values (a burst of independent ops) gains nothing from one NumPy program, which
    would compute each result as a temporary and then copy it: its members run alone, each with
    its own kernel (a single ufunc call writing its result in place, where the op has one)."""
    if len(g.members) > config.max_compiled_outputs and all(
            a[0] == "i" for _, args in g.lines for a in args):
        members, positions = g.members, g.positions
        g.produced = g.touched = g.ext_names = None  # our references to the members' results
        for ins, pos in zip(members, positions):
            lowered = _lower_single(ins, stats, pos, rec)
            if lowered is not None:
                batch.append(lowered)
        return
    lowered = _lower(g, stats, rec=rec)
    if lowered is not None:
        batch.append(lowered)
