"""vmap's batching rules for products, linear algebra and the FFTs: matmul/mm/bmm/mv/dot/@ (1-d samples made
matrices, the samples' batch dims padded), einsum (a letter of its own for the batch), the fused products (addmm...
through the rules of their parts), outer, cdist, trace, the matrix functions that take leading batch dims (det,
inverse, cholesky, svd, matrix_exp...: one call on the batch), and torch.fft's transforms (their dims shifted).
The shared helpers are batching_rules.py's.
"""
from __future__ import annotations

from typing import Callable

from .. import ops
from .batching import RULES, Level, op_name, wrap
from .batching_rules import _batch, _batched, _pad, _rank, _shift, _tensorish

__all__: list = []


# -- products ----------------------------------------------------------------------------------------------------
def matmul(func: Callable, level: Level, args: tuple, kwargs: dict):
    """matmul (and mm/bmm/mv/dot/@): 1-d samples made matrices, batch dims padded, one matmul."""
    name = op_name(func)
    a, b = (args[1], args[0]) if name == "__rmatmul__" else (args[0], args[1])
    if kwargs or not _tensorish(a) or not _tensorish(b):
        return NotImplemented
    ra, rb = _rank(a, level), _rank(b, level)
    if ra == 0 or rb == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {ra}D and {rb}D")
    _check_product(name, ra, rb, a, b)
    va = a.value if _batched(a, level) else a
    vb = b.value if _batched(b, level) else b
    if ra == 1:
        va = va.unsqueeze(-2)
    if rb == 1:
        vb = vb.unsqueeze(-1)
    lead = max(max(ra, 2), max(rb, 2)) - 2  # the samples' broadcast batch rank
    if _batched(a, level):
        va = _pad(va, level, lead + 2)
    if _batched(b, level):
        vb = _pad(vb, level, lead + 2)
    out = ops.matmul(va, vb)
    if rb == 1:
        out = out.squeeze(-1)
    if ra == 1:
        out = out.squeeze(-1 if rb == 1 else -2)
    return wrap(out, level)


def _check_product(name: str, ra: int, rb: int, a, b) -> None:
    """The rank checks of the strict products (mm, bmm, mv, dot), on the samples' shapes."""
    want = {"mm": (2, 2), "bmm": (3, 3), "mv": (2, 1), "dot": (1, 1), "vdot": (1, 1), "inner": None}.get(name)
    if want and (ra, rb) != want:
        raise RuntimeError(f"{name}: expected {want[0]}-D and {want[1]}-D tensors, got {ra}-D and {rb}-D")


for _n in ("matmul", "mm", "bmm", "mv", "dot", "__matmul__", "__rmatmul__"):
    RULES[_n] = matmul


def einsum(func: Callable, level: Level, args: tuple, kwargs: dict):
    """einsum: a letter of its own for the batch, in front of each batched operand and of the output."""
    if kwargs or not args or not isinstance(args[0], str):
        return NotImplemented
    operands = args[1:]
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    eq = args[0].replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if not arrow:
        rhs = _implicit_output(terms)
    used = set(eq)
    letter = next(c for c in "zyxwvutsrqponmlkjihgfedcbaZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in used)
    new_terms = [letter + t if _batched(o, level) else t for t, o in zip(terms, operands)]
    values = [o.value if _batched(o, level) else o for o in operands]
    out = ops.einsum(",".join(new_terms) + "->" + letter + rhs, *values)
    return wrap(out, level)


def _implicit_output(terms: list) -> str:
    """torch's output of an einsum without '->': the ellipsis, then the letters used once, sorted."""
    letters = "".join(terms).replace("...", "")
    once = sorted(c for c in set(letters) if letters.count(c) == 1)
    return ("..." if any("..." in t for t in terms) else "") + "".join(once)


RULES["einsum"] = einsum


def _trace(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    if not _batched(x, level) or x.dim() != 2:
        return NotImplemented
    return wrap(x.value.diagonal(0, 1, 2).sum(-1), level)


def _outer(func: Callable, level: Level, args: tuple, kwargs: dict):
    a, b = args[0], args[1]
    if kwargs or a.dim() != 1 or b.dim() != 1:
        return NotImplemented
    return a.unsqueeze(-1) * b.unsqueeze(-2)  # (rules again: pointwise)


def _add_product(func: Callable, level: Level, args: tuple, kwargs: dict):
    """addmm/addmv/addbmm/baddbmm/addr: beta * input + alpha * product, through the rules of their parts."""
    name = op_name(func)
    names = ("input", "mat1", "mat2") if name in ("addmm",) else ("input", "batch1", "batch2") \
        if name in ("addbmm", "baddbmm") else ("input", "mat", "vec") if name == "addmv" else ("input", "vec1", "vec2")
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if set(bound) - set(names) - {"beta", "alpha"} or len(bound) < 3:
        return NotImplemented
    m1, m2 = bound[names[1]], bound[names[2]]
    product = _outer(None, level, (m1, m2), {}) if name == "addr" else m1 @ m2
    if name == "addbmm":
        product = product.sum(0)
    beta, alpha = bound.get("beta", 1), bound.get("alpha", 1)
    scaled = product if alpha == 1 else product * alpha
    return scaled + (bound["input"] if beta == 1 else bound["input"] * beta) if beta != 0 else scaled


def _cdist(func: Callable, level: Level, args: tuple, kwargs: dict):
    a, b = args[0], args[1]
    if a.dim() < 2 or b.dim() < 2:
        return NotImplemented
    rank = max(a.dim(), b.dim())
    return wrap(func(_pad(_batch(a, level), level, rank), _pad(_batch(b, level), level, rank), *args[2:], **kwargs),
                level)


RULES["outer"] = RULES["ger"] = _outer
for _n in ("addmm", "addmv", "addbmm", "baddbmm", "addr"):
    RULES[_n] = _add_product
RULES["cdist"] = _cdist

RULES["trace"] = _trace


def _leading_batch(func: Callable, level: Level, args: tuple, kwargs: dict):
    """Ops that already take leading batch dims (the matrix functions of linalg): every tensor argument batched
    (an unbatched one expanded), one call."""
    if any(isinstance(a, (list, tuple)) and any(_tensorish(x) for x in a) for a in (*args, *kwargs.values())):
        return NotImplemented

    def prep(a):
        return _batch(a, level) if _tensorish(a) else a
    return wrap(func(*[prep(a) for a in args], **{k: prep(v) for k, v in kwargs.items()}), level)


for _n in ("det", "inverse", "cholesky", "svd", "slogdet", "logdet", "matrix_power", "matrix_exp", "cholesky_solve",
           "cholesky_inverse", "pinverse", "inv", "solve", "qr", "svdvals", "eigh", "eigvalsh", "pinv", "inv_ex",
           "cholesky_ex", "solve_triangular", "lu_factor", "matrix_rank", "cond"):
    RULES.setdefault(_n, _leading_batch)


# -- the FFT family (torch.fft): transforms over dims of the sample ------------------------------------------------
def fft_dims(func: Callable, level: Level, args: tuple, kwargs: dict):
    """fft/fft2/fftn and their inverses and real forms, fftshift/ifftshift: the dims shifted past the batch dim
    (an n-dimensional transform's default dims are the sample's, or its last len(s))."""
    name = op_name(func)
    x = args[0]
    if not _batched(x, level) or any(_batched(a, level) for a in (*args[1:], *kwargs.values())):
        return NotImplemented
    shift = name in ("fftshift", "ifftshift")
    pos = 1 if shift else 2
    one = name in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft")
    args, dim = list(args), kwargs.get("dim", args[pos] if len(args) > pos else (-1 if one else None if shift or
                                                                                   name.endswith("n") else (-2, -1)))
    if dim is None:
        s = None if shift else kwargs.get("s", args[1] if len(args) > 1 else None)
        dim = tuple(range(x.dim())) if s is None else tuple(range(-len(s), 0))
    new = _shift(dim, x.dim(), name)
    if len(args) > pos and "dim" not in kwargs:
        args[pos] = new
    else:
        kwargs = dict(kwargs, dim=new)
    return wrap(func(x.value, *args[1:], **kwargs), level)


for _n in ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftshift", "ifftshift"):
    RULES[_n] = fft_dims
