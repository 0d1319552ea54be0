"""The fusion pass: runs of elementwise instructions become one generated kernel.

Instructions join a group while they have the group's output shape and touch no
memory the group reaches through a different view (so per-element order is program
order). An intermediate whose view only the group itself still references was
dropped by the program: it stays a local variable of the kernel, never allocated.
"""
from __future__ import annotations

import os
import sys

from .blob import View
from .codegen import Program, is_compilable, run_compiled, run_numpy
from .instruction import Instruction


class FusionConfig:
    """Knobs: fusion on/off, group size limit, how often a group is seen before it is compiled."""

    __slots__ = ("enabled", "max_group", "compile_after", "seen")

    def __init__(self):
        self.enabled = os.environ.get("TIDAL_FUSION", "1") != "0"
        self.max_group = 64
        self.compile_after = int(os.environ.get("TIDAL_FUSION_COMPILE_AFTER", "2"))
        self.seen: dict = {}


config = FusionConfig()  # one configuration for every device


def _view_key(v: View):
    return (v.shape, v.strides, v.offset, v.dtype)


def split_groups(window: list, max_group: int) -> list:
    """Cut the window (program order) into fusible groups."""
    groups: list = []
    group: list = []
    shape = None
    touched: dict = {}  # id(blob) -> view key through which the group touches it
    written: set = set()
    for ins in window:
        out_shape = ins.outs[0].shape
        ok = bool(group) and out_shape == shape and len(group) < max_group
        if ok:
            for v in ins.ins:
                if isinstance(v, View):
                    b = id(v.blob)
                    if b in written and touched[b] != _view_key(v):
                        ok = False
                        break
            for v in ins.outs:
                b = id(v.blob)
                if b in touched and touched[b] != _view_key(v):
                    ok = False
                    break
        if not ok:
            if group:
                groups.append(group)
            group, shape, touched, written = [], out_shape, {}, set()
        group.append(ins)
        for v in ins.ins:
            if isinstance(v, View):
                touched.setdefault(id(v.blob), _view_key(v))
        for v in ins.outs:
            touched[id(v.blob)] = _view_key(v)
            written.add(id(v.blob))
    if group:
        groups.append(group)
    return groups


def _is_dead(view: View, refs_in_group: int) -> bool:
    # The blob is dead to the program when its only View is this one and the View is
    # referenced only by the group's instructions. The constants count the references this
    # frame, the caller's local and getrefcount's argument add (tests/test_fusion.py pins them).
    blob = view.blob
    if blob.data is not None:
        return False
    return sys.getrefcount(blob) == 3 and sys.getrefcount(view) == refs_in_group + 3


def build_program(group: list):
    """The SSA program of a group, its external inputs, stored outputs and dead temporaries."""
    refs: dict = {}
    for ins in group:
        for v in ins.ins + ins.outs:
            if isinstance(v, View):
                refs[id(v)] = refs.get(id(v), 0) + 1
    del v
    produced: dict = {}  # id(blob) -> (view key, temp name)
    ext_ids: dict = {}
    ext: list = []
    lines = []
    outs, out_vars = [], []
    dead = 0
    for k, ins in enumerate(group):
        args = []
        for v in ins.ins:
            if isinstance(v, View):
                hit = produced.get(id(v.blob))
                if hit is not None and hit[0] == _view_key(v):
                    args.append(hit[1])
                    continue
                name = ext_ids.get(id(v))
                if name is None:
                    name = ext_ids[id(v)] = f"i{len(ext)}"
                    ext.append(v)
                args.append(name)
            else:
                args.append(f"i{len(ext)}")
                ext.append(v)
        var = f"t{k}"
        lines.append((var, ins.expr.format(*args)))
        out = ins.outs[0]
        produced[id(out.blob)] = (_view_key(out), var)
        if _is_dead(out, refs[id(out)]):
            dead += 1
        else:
            outs.append(out)
            out_vars.append(var)
    return Program(tuple(lines), len(ext), tuple(out_vars)), tuple(ext), tuple(outs), dead


def _numpy_kernel(prog):
    return lambda ins, outs, attrs: run_numpy(prog, ins, outs)


def _compiled_kernel(prog):
    return lambda ins, outs, attrs: run_compiled(prog, ins, outs)


def lower(group: list, config: FusionConfig, stats) -> Instruction | None:
    """One runnable instruction for a group (None if nothing it computes is still wanted)."""
    prog, ext, outs, dead = build_program(group)
    stats.fused_away += len(group) - 1
    stats.allocations_avoided += dead
    if not outs:
        return None
    seen = config.seen.get(prog.key, 0) + 1
    config.seen[prog.key] = seen
    use_compiled = (len(group) > 1 and seen >= config.compile_after and is_compilable(prog))
    kernel = _compiled_kernel(prog) if use_compiled else _numpy_kernel(prog)
    name = group[0].name if len(group) == 1 else "fused[" + "+".join(i.name for i in group) + "]"
    fused = Instruction(name, kernel, ext, outs, stream=group[0].stream)
    fused.fused = len(group)
    return fused
