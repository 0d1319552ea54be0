"""Rank-side checks for SBP families declared on the op records (run by test_sbp_declared.py through
comm_ranks.RankPool): a reduction record declared here, with `sbp="reduction"` and nothing in tidal.comm, runs
on global tensors under the reduction signatures; var_mean/std_mean, which reach the var_mean/std_mean records,
take the "variance" family those records declare. Each function returns a list of failures (empty when every
value and sbp matches NumPy)."""
import numpy as np

import tidal
from comm_ranks import _me
from global_ranks import _global, _ints, _line, _op_case

S, B = tidal.sbp.split, tidal.sbp.broadcast
TOY = "toy_abs_max"   # a record no library module declares


def _toy_abs_max():
    """The public front end of a new reduction record (max of |x| over one dim), declared once per rank the way an
    op module declares its records: a Reduction with `sbp="reduction"`, made public through tidal.ops."""
    from tidal import ops
    from tidal.ops.dispatch.primitive import PRIMITIVES
    from tidal.ops.reductions.reduce import ReduceAttrs, Reduction

    record = PRIMITIVES.get(TOY) or Reduction(
        TOY, lambda a, axes, extra: np.abs(a).max(axis=axes, keepdims=True), sbp="reduction")

    def toy_abs_max(input, dim: int, keepdim: bool = False):
        return record((input,), ReduceAttrs((dim % input.ndim,), None, None, keepdim, (input.dtype,)))
    return ops._accepting_global(toy_abs_max, TOY)


def declared_families() -> list:
    """The toy reduction and var_mean/std_mean on split and broadcast global tensors: values and sbps."""
    _, size = _me()
    placement = _line(size)
    failures = []
    toy = _toy_abs_max()
    x = _ints((2 * size, 3 * size), 40)
    g0, g1, gb = (_global(x, placement, sbp)[1] for sbp in (S(0), S(1), B))
    _op_case(failures, "toy over a dim not split (stays split)", toy(g0, 1), np.abs(x).max(1), S(0))
    _op_case(failures, "toy keepdim, split renumbered", toy(g1, 0, True), np.abs(x).max(0, keepdims=True), S(1))
    _op_case(failures, "toy over the split dim (split moved to the other dim)", toy(g0, 0), np.abs(x).max(0), S(0))
    v = _ints((2 * size,), 41)
    _op_case(failures, "toy over the only dim, split (gathered)", toy(_global(v, placement, S(0))[1], 0),
             np.abs(v).max(0), B)
    _op_case(failures, "toy of broadcast", toy(gb, 1), np.abs(x).max(1), B)
    for op, fn in (("var_mean", np.var), ("std_mean", np.std)):
        spread, mean = getattr(tidal, op)(g0, 1)
        _op_case(failures, f"{op} spread over a dim not split", spread, fn(x, 1, ddof=1), S(0))
        _op_case(failures, f"{op} mean over a dim not split", mean, x.mean(1), S(0))
        spread, mean = getattr(tidal, op)(g1, 0, keepdim=True, correction=0)
        _op_case(failures, f"{op} keepdim correction=0", spread, fn(x, 0, keepdims=True), S(1))
        spread, mean = getattr(tidal, op)(g0, 0)
        _op_case(failures, f"{op} over the split dim (split moved)", spread, fn(x, 0, ddof=1), S(0))
        _op_case(failures, f"{op} mean over the split dim", mean, x.mean(0), S(0))
        spread, mean = getattr(tidal, op)(g0)
        _op_case(failures, f"{op} of everything (gathered)", spread, fn(x, ddof=1), B)
        _op_case(failures, f"{op} mean of everything", mean, x.mean(), B)
    return failures
