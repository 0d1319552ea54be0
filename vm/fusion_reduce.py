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

from . import codegen
from .codegen import Program, element_body, numpy_function

LANES = 4  # accumulators per reduced row in compiled loops


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


def reduce_kernel_source(prog: Program, dims: tuple, in_is_array: tuple) -> str:
    """Loops over `dims = (kept, reduced)` dimensions: `r0` (kept shape) gets the reduction,
    `o0...` (the group's stored results, transposed like the inputs) the rest.
    `dims = ("natural", axes, ndim)`: loops in memory order, accumulating into an array."""
    if dims[0] == "natural":
        return _natural_source(prog, dims[1], dims[2], in_is_array)
    n_outer, n_inner = dims
    var, init, combine, finish = prog.reduction
    outs = [f"o{k}" for k in range(len(prog.out_vars))]
    # the reduced extents are arguments: the background compiler's dummy call passes 0 for ints,
    # so its loops stay inside its tiny dummy arrays
    extents = [f"n{d}" for d in range(n_inner)]
    params = ", ".join(["r0"] + outs + [f"i{k}" for k in range(prog.n_in)] + ["count"] + extents)
    lines = [f"def kernel({params}):"]
    indent = "    "
    for d in range(n_outer):
        lines.append(f"{indent}for j{d} in range(r0.shape[{d}]):")
        indent += "    "
    outer = ", ".join(f"j{d}" for d in range(n_outer))
    lines += [f"{indent}acc{lane} = {init}" for lane in range(LANES)]
    inner = indent
    for d in range(n_outer, n_outer + n_inner - 1):
        lines.append(f"{inner}for j{d} in range(n{d - n_outer}):")
        inner += "    "
    # the innermost reduced loop keeps LANES independent accumulators, so additions overlap
    # instead of each waiting for the one before
    last, n_last = n_outer + n_inner - 1, f"n{n_inner - 1}"
    idx = ", ".join(f"j{d}" for d in range(n_outer + n_inner))
    step = inner + "    "
    lines.append(f"{inner}for q in range(0, {n_last} - {LANES - 1}, {LANES}):")
    for lane in range(LANES):
        lines.append(f"{step}j{last} = q + {lane}")
        lines += element_body(prog, in_is_array, idx, step)
        lines.append(f"{step}acc{lane} = {combine.format(f'acc{lane}', var)}")
    lines.append(f"{inner}for j{last} in range({n_last} - {n_last} % {LANES}, {n_last}):")
    lines += element_body(prog, in_is_array, idx, step)
    lines.append(f"{step}acc0 = {combine.format('acc0', var)}")
    lines += [f"{indent}acc0 = {combine.format('acc0', f'acc{lane}')}" for lane in range(1, LANES)]
    lines.append(f"{indent}r0[{outer}] = {finish.format('acc0', 'count')}")
    return "\n".join(lines) + "\n"


def _natural_source(prog: Program, axes: tuple, ndim: int, in_is_array: tuple) -> str:
    # when the last dim is kept, looping reduced dims inside would stride through memory: the
    # loops keep the arrays' order and each kept position has its own accumulator
    var, init, combine, finish = prog.reduction
    outs = [f"o{k}" for k in range(len(prog.out_vars))]
    extents = [f"n{d}" for d in range(ndim)]
    params = ", ".join(["r0"] + outs + [f"i{k}" for k in range(prog.n_in)] + ["count"] + extents)
    kept_idx = ", ".join("0" if d in axes else f"j{d}" for d in range(ndim))
    lines = [f"def kernel({params}):", f"    acc = np.full(r0.shape, {init})"]
    indent = "    "
    for d in range(ndim):
        lines.append(f"{indent}for j{d} in range(n{d}):")
        indent += "    "
    idx = ", ".join(f"j{d}" for d in range(ndim))
    lines += element_body(prog, in_is_array, idx, indent)
    lines.append(f"{indent}acc[{kept_idx}] = {combine.format(f'acc[{kept_idx}]', var)}")
    lines += ["    flat_acc = acc.reshape(-1)", "    flat_out = r0.reshape(-1)",
              "    for j in range(flat_out.shape[0]):",
              f"        flat_out[j] = {finish.format('flat_acc[j]', 'count')}"]
    return "\n".join(lines) + "\n"


_numpy_programs: dict = {}  # fused program key -> the group's program that also returns `var`


def run_numpy_reduce(prog: Program, ins: list, outs: list, r: ReduceAttrs) -> None:
    """The group with NumPy, then the reduction's own kernel on the reduced temporary."""
    full = _numpy_programs.get(prog.key)
    if full is None:
        full = _numpy_programs[prog.key] = Program(prog.lines, prog.n_in, prog.out_vars + (prog.reduction[0],))
    n = len(prog.out_vars)
    results = numpy_function(full)(*ins)  # NumPy's error state is quiet on VM threads (machine.py)
    for out, res in zip(outs, results[:n]):
        np.copyto(out, res, casting="unsafe")
    temp = np.asarray(results[n]).astype(r.dtype, copy=False)
    if temp.shape != r.shape:
        temp = np.broadcast_to(temp, r.shape)
    r.kernel([temp], outs[n:], r.attrs)


def run_compiled_reduce(prog: Program, ins: list, outs: list, r: ReduceAttrs) -> None:
    """One compiled loop nest (kept dims outside, reduced inside); NumPy while it compiles."""
    n = len(prog.out_vars)
    shape, axes = r.shape, r.axes
    kept = tuple(d for d in range(len(shape)) if d not in axes)
    count = math.prod(shape[d] for d in axes)
    natural = bool(kept) and kept[-1] == len(shape) - 1 and shape[-1] > 1
    perm = tuple(range(len(shape))) if natural else kept + axes
    full = []
    for x in ins:
        if isinstance(x, np.ndarray):
            if x.dtype.kind not in "biuf" or (x.dtype.kind == "f" and x.dtype.itemsize == 2):
                return run_numpy_reduce(prog, ins, outs, r)  # numba has no 16-bit float scalars
            if x.shape != shape:
                x = np.broadcast_to(x, shape)
            x = x.transpose(perm)
        full.append(x)
    stored = [o.transpose(perm) for o in outs[:n]]
    kept_shape = tuple(shape[d] for d in kept)
    arrays = [x for x in full if isinstance(x, np.ndarray)] + stored
    if natural:
        keep_shape = tuple(1 if d in axes else s for d, s in enumerate(shape))
        reduced = [o.reshape(keep_shape) for o in outs[n:]]
        dims = ("natural", tuple(sorted(axes)), len(shape))
    elif all(a.flags.c_contiguous for a in arrays):  # one flat loop over kept, one over reduced
        flat = (math.prod(kept_shape), count)
        full = [x.reshape(flat) if isinstance(x, np.ndarray) else x for x in full]
        stored = [o.reshape(flat) for o in stored]
        reduced = [o.reshape(flat[0]) for o in outs[n:]]
        dims = (1, 1)
    elif not kept:  # a leading length-1 dim stands for the missing kept dims
        full = [x[np.newaxis] if isinstance(x, np.ndarray) else x for x in full]
        stored = [o[np.newaxis] for o in stored]
        reduced = [o.reshape(1) for o in outs[n:]]
        dims = (1, len(shape))
    else:
        reduced = [o.reshape(kept_shape) for o in outs[n:]]
        dims = (len(kept), len(axes))
    in_is_array = tuple(isinstance(x, np.ndarray) for x in full)
    extents = list(shape) if natural else [count] if dims == (1, 1) else [shape[d] for d in axes]
    call = reduced + stored + full + [count] + extents
    sig = codegen._signature(call)
    key = (prog.key, dims, in_is_array, sig)
    compiler = codegen.compiler
    if key in compiler.ready or not codegen.background:
        codegen.compiled_kernel(prog, dims, in_is_array)(*call)
        compiler.ready.add(key)
        return
    compiler.request(key, prog, dims, in_is_array, sig)
    run_numpy_reduce(prog, ins, outs, r)
