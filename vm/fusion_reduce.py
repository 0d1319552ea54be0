"""Fused trailing reductions: an elementwise group and the reduction of one of its results, one kernel.

A reduction instruction declares `reduce = (axes, init, combine, finish)` (see Instruction).
The fused program keeps the group's lines and adds `reduction = (var, init, combine, finish)`:
temporary `var` is reduced as it is computed and is never stored (unless the program still
holds it). The NumPy path evaluates the group and hands `var` to the reduction's own kernel,
so it is exactly the unfused result. The compiled path loops over the kept dims outside and
the reduced dims inside, with LANES accumulators in local variables; when the last dim is kept
(a bias gradient's sum over rows) it loops in memory order into an array of accumulators.
"""
from __future__ import annotations

import math

import numpy as np

from . import codegen, intra_op
from .codegen import Program, element_body, numpy_function

LANES = 4  # accumulators per reduced row in compiled loops
BLOCK = 256  # elements of a reduced row computed (vectorized) into a scratch row before they are accumulated


class ReduceAttrs:
    """What a fused reduction kernel needs at run time besides its arrays (the loop layout is
    worked out by the kernel, on the stream's thread)."""

    __slots__ = ("axes", "shape", "dtype", "kernel", "attrs")

    def __init__(self, axes: tuple, shape: tuple, dtype, kernel, attrs):
        self.axes = axes        # reduced dims of the group's shape
        self.shape = shape      # the group's shape
        self.dtype = dtype      # the reduced temporary's dtype (as the unfused program stores it)
        self.kernel = kernel    # the reduction's own kernel and attributes (the NumPy path)
        self.attrs = attrs


def reduce_kernel_source(prog: Program, variant: tuple) -> str:
    """Loops over the group's dims (extents `n<d>` are arguments): `r0` gets the reduction, the
    stored results `o<k>` (the group's shape) the rest; each input is indexed by its own pattern
    (codegen.input_index), so nothing is broadcast or transposed before the call.
    variant = (kind, ndim, axes, input indices, r0's index, aliases (codegen.aliases)): kind "outer" loops kept dims outside
    and reduced dims inside, with LANES accumulators in locals; "natural" (the last dim is kept:
    a bias gradient's sum over rows) loops in memory order into an array of accumulators."""
    parts = 0  # a parallel variant: the natural kind's rows in `parts` blocks, the outer kind's first kept loop split
    if variant[-1] == codegen.PARALLEL:
        parts, variant = variant[-2], variant[:-2]
    kind, ndim, axes, in_idx, r_idx, aliases = variant
    var, init, combine, finish = prog.reduction
    outs = [f"o{k}" for k in range(len(prog.out_vars))]
    extents = [f"n{d}" for d in range(ndim)]
    params = ", ".join(["r0"] + outs + [f"i{k}" for k in range(prog.n_in)] + ["count"] + extents)
    in_is_array = tuple(i is not None for i in in_idx)
    idx = ", ".join(f"j{d}" for d in range(ndim))
    lines = [f"def kernel({params}):"] + codegen.alias_lines(aliases)
    if kind == "natural":
        # the extents bound every loop: the background compiler's dummy call passes 0 for them
        indent = "    "
        if parts:  # each block of dim 0 into its own accumulators, added in block order after (bits fixed by parts)
            lines += [f"    accs = np.full(({parts},) + r0.shape, {init})", f"    step = (n0 + {parts - 1}) // {parts}",
                      f"    for t in prange({parts}):", "        acc = accs[t]",
                      "        for j0 in range(t * step, min(n0, t * step + step)):"]
            indent = "            "
        else:
            lines += [f"    acc = np.full(r0.shape, {init})", "    for j0 in range(n0):"]
            indent = "        "
        for d in range(1, ndim):
            lines.append(f"{indent}for j{d} in range(n{d}):")
            indent += "    "
        lines += element_body(prog, in_is_array, idx, indent, in_idx)
        lines.append(f"{indent}acc[{r_idx}] = {combine.format(f'acc[{r_idx}]', var)}")
        if parts:
            lines += ["    flat_acc = accs[0].reshape(-1)", f"    for t in range(1, {parts}):",
                      "        part = accs[t].reshape(-1)", "        for j in range(flat_acc.shape[0]):",
                      f"            flat_acc[j] = {combine.format('flat_acc[j]', 'part[j]')}"]
        else:
            lines.append("    flat_acc = acc.reshape(-1)")
        lines += ["    flat_out = r0.reshape(-1)", "    for j in range(flat_out.shape[0]):",
                  f"        flat_out[j] = {finish.format('flat_acc[j]', 'count')}"]
        return "\n".join(lines) + "\n"
    kept = [d for d in range(ndim) if d not in axes]
    reduced = sorted(axes)
    indent = "    "
    for d in kept:  # (a parallel variant splits the first kept loop: each of its rows is one thread's, same bits)
        lines.append(f"{indent}for j{d} in {'prange' if parts and d == kept[0] else 'range'}(n{d}):")
        indent += "    "
    lines += [f"{indent}acc{lane} = {init}" for lane in range(LANES)]
    inner = indent
    for d in reduced[:-1]:
        lines.append(f"{inner}for j{d} in range(n{d}):")
        inner += "    "
    # the innermost reduced loop keeps LANES independent accumulators, so additions overlap
    # instead of each waiting for the one before
    last = reduced[-1]
    n_last = f"n{last}"
    step = inner + "    "
    row_type = _stored_type(prog, var)
    if row_type is not None:  # (scratch for a row's block: one per thread in a parallel variant)
        at = lines.index(f"    for j{kept[0]} in prange(n{kept[0]}):") + 1 if parts else 1
        lines.insert(at, f"{'        ' if parts else '    '}row = np.empty({BLOCK}, np.{row_type})")
        lines += _blocked_row(prog, in_is_array, idx, inner, in_idx, last, combine)
    else:  # (a reduced value without a cast to type the row by: computed and added in one loop)
        lines.append(f"{inner}for q in range(0, {n_last} - {LANES - 1}, {LANES}):")
        for lane in range(LANES):
            lines.append(f"{step}j{last} = q + {lane}")
            lines += element_body(prog, in_is_array, idx, step, in_idx)
            lines.append(f"{step}acc{lane} = {combine.format(f'acc{lane}', var)}")
        lines.append(f"{inner}for j{last} in range({n_last} - {n_last} % {LANES}, {n_last}):")
        lines += element_body(prog, in_is_array, idx, step, in_idx)
        lines.append(f"{step}acc0 = {combine.format('acc0', var)}")
    lines += [f"{indent}acc0 = {combine.format('acc0', f'acc{lane}')}" for lane in range(1, LANES)]
    lines.append(f"{indent}r0[{r_idx}] = {finish.format('acc0', 'count')}")
    return "\n".join(lines) + "\n"


_numpy_programs: dict = {}  # fused program key -> the group's program that also returns `var`


def run_numpy_reduce(prog: Program, ins: list, outs: list, r: ReduceAttrs) -> None:
    """The group with NumPy, then the reduction's own kernel on the reduced temporary."""
    full = _numpy_programs.get(prog.key)
    if full is None:
        full = _numpy_programs[prog.key] = Program(prog.lines, prog.n_in, prog.out_vars + (prog.reduction[0],))
    n = len(prog.out_vars)
    if math.prod(r.shape) >= 2 * codegen.CHUNK_ELEMENTS:
        # the reduced temporary as one more output of the program: run_numpy computes it in cache-sized pieces
        temp = np.empty(r.shape, r.dtype)
        codegen.run_numpy(full, ins, outs[:n] + [temp])
    else:
        results = numpy_function(full)(*ins)  # NumPy's error state is quiet on VM threads (machine.py)
        for out, res in zip(outs, results[:n]):
            np.copyto(out, res, casting="unsafe")
        temp = np.asarray(results[n]).astype(r.dtype, copy=False)
        if temp.shape != r.shape:
            temp = np.broadcast_to(temp, r.shape)
    r.kernel([temp], outs[n:], r.attrs)


def _reduce_variant(r: ReduceAttrs, ins: list, outs: list) -> tuple:
    shape, axes = r.shape, tuple(sorted(r.axes))
    ndim = len(shape)
    kept = [d for d in range(ndim) if d not in axes]
    natural = bool(kept) and kept[-1] == ndim - 1 and shape[-1] > 1
    in_idx = tuple(codegen.input_index(x.shape, ndim) if x.__class__ is np.ndarray else None for x in ins)
    if outs[-1].ndim == ndim:  # keepdim: reduced dims are 0
        r_idx = ", ".join("0" if d in axes else f"j{d}" for d in range(ndim))
    else:
        r_idx = ", ".join(f"j{d}" for d in kept) if kept else "()"
    variant = ("natural" if natural else "outer", ndim, axes, in_idx, r_idx, codegen.aliases(outs[:-1], ins))
    # in parallel: the natural kind over blocks of dim 0 (then summed), the outer kind over its first kept dim
    split = shape[0] if natural else (shape[kept[0]] if kept else 1)
    if split > 1 and intra_op.wide(math.prod(shape)):
        variant += (intra_op.get_threads(), codegen.PARALLEL)
    return variant


def run_compiled_reduce(prog: Program, ins: list, outs: list, r: ReduceAttrs) -> None:
    """One compiled loop nest over the group's dims, reducing as it computes; NumPy while it compiles."""
    shape = r.shape
    ins = codegen.unbroadcast_all(ins)
    call = [outs[-1]] + outs[:-1] + ins
    key = codegen.kernel_key(prog, call, outs[:-1], ins) + (r.axes,)  # (equal shapes can reduce different axes)
    fn = codegen._ready_calls.get(key)
    extents = [math.prod(shape[d] for d in r.axes)] + list(shape)
    if fn is not None:
        fn(*call, *extents)
        return
    if key in codegen.compiler.pending or not all(codegen._compilable_array(x) for x in call):
        return run_numpy_reduce(prog, ins, outs, r)
    fallback = lambda: run_numpy_reduce(prog, ins, outs, r)  # noqa: E731
    if codegen._warming(key, fallback, lambda: codegen.kernel_stored(prog, _reduce_variant(r, ins, outs))):
        return
    codegen.launch_compiled(key, prog, _reduce_variant(r, ins, outs), call + extents, fallback,
                            n_extents=len(extents))


def ready_reduce_kernel(prog: Program, ins: list, outs: list, r: ReduceAttrs):
    """Like codegen.ready_kernel, for a fused reduction (its loop extents bound too)."""
    cut = codegen.unbroadcast_all(ins)
    call = [outs[-1]] + outs[:-1] + cut
    if call[0].__class__ is not np.ndarray:
        return None
    fn = codegen._ready_calls.get(codegen.kernel_key(prog, call, outs[:-1], ins) + (r.axes,))
    if fn is None:
        return None
    extents = tuple([math.prod(r.shape[d] for d in r.axes)] + list(r.shape))
    if cut is not ins:  # (the replayed window's inputs broadcast the same way)
        return lambda ins, outs, attrs: fn(outs[-1], *outs[:-1], *codegen.unbroadcast_all(ins), *extents)
    return lambda ins, outs, attrs: fn(outs[-1], *outs[:-1], *ins, *extents)


def _stored_type(prog: Program, var: str) -> str | None:
    # the NumPy type name of temporary `var` (its line's cast), or None when the line has none
    if not var.startswith("t"):
        return None
    template = prog.lines[int(var[1:])][0]
    if not template.startswith("as_") or "(" not in template:
        return None
    name = template[3:template.index("(")]
    return "bool_" if name == "bool" else name if hasattr(np, name) else None


def _blocked_row(prog: Program, in_is_array: tuple, idx: str, indent: str, in_idx: tuple, last: int,
                 combine: str) -> list:
    """The innermost reduced dim in blocks: the group's values for a block of the row first, in a loop
    with no reduction in it (compiled loops vectorize it, transcendental functions included), then the
    block into the LANES accumulators, element j into lane j % LANES and the row's last n % LANES into
    lane 0: the order of the unblocked loop, so the same sums to the bit."""
    var = prog.reduction[0]
    n = f"n{last}"
    inner = indent + "        "
    # the block's index unsigned: numba then drops the negative-index wraparound on each access, which
    # kept the loop from vectorizing (a fused gelu + sum ran 1.7x slower than the two apart)
    lines = [f"{indent}for b0 in range(0, {n}, {BLOCK}):",
             f"{indent}    b1 = min(b0 + {BLOCK}, {n})",
             f"{indent}    u0 = np.uint64(b0)",
             f"{indent}    for j{last} in range(u0, np.uint64(b1)):"]
    lines += element_body(prog, in_is_array, idx, inner, in_idx)
    lines.append(f"{inner}row[j{last} - u0] = {var}")
    lines += [f"{indent}    full = min(b1, {n} - {n} % {LANES})",
              f"{indent}    for q in range(0, full - b0, {LANES}):"]
    lines += [f"{inner}acc{lane} = {combine.format(f'acc{lane}', f'row[q + {lane}]')}" for lane in range(LANES)]
    lines += [f"{indent}    for q in range(max(full, b0) - b0, b1 - b0):",
              f"{inner}acc0 = {combine.format('acc0', 'row[q]')}"]
    return lines


codegen.reduce_source = reduce_kernel_source
