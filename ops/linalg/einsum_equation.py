"""einsum: the equation parsed and checked at the call (PyTorch's rules and messages).

Two operands whose labels map onto a batched matrix product run as one (BLAS, batch dims
included, which NumPy's einsum can't do); anything else runs NumPy's einsum.

The gradient of an operand is itself an einsum: the upstream gradient (with the output's labels)
times the other operands, contracted onto the operand's labels. A label only that operand has
(summed inside it) comes back through a ones vector; a repeated label (a diagonal) gets a fresh
label tied to the first by an identity matrix. Broadcast size-1 dims are summed by the engine.
"""
from __future__ import annotations

import math
import string

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ..dispatch import autocast as _ac
from ..factories.creation import eye, ones
from ..elementwise import plans as ew
from ..dispatch.primitive import Primitive
from ..elementwise.plans import torch_name
from ..elementwise.float8 import to_float8
from .product_kernels import FLOAT8_NP, HALF_NP, product_into

# Sublist subscripts 0..51 name A..Z then a..z, so implicit outputs sort the same in both forms.
_LETTERS = string.ascii_uppercase + string.ascii_lowercase
_OPTIMIZE_ABOVE = 1 << 14  # iteration-space size from which a contraction order (and BLAS) pays off


def _pair_product(a: np.ndarray, b: np.ndarray, out: np.ndarray, plan: tuple) -> None:
    """out = a (*) b as one batched matmul: (batch, rows, depth) @ (batch, depth, cols), then permuted."""
    sum_a, perm_a, sum_b, perm_b, (batch, rows, depth, cols), shape, perm_out = plan
    a = a.sum(axis=sum_a, dtype=a.dtype) if sum_a else a
    b = b.sum(axis=sum_b, dtype=b.dtype) if sum_b else b
    a3 = a.transpose(perm_a).reshape(batch, rows, depth)
    b3 = b.transpose(perm_b).reshape(batch, depth, cols)
    if perm_out == tuple(range(len(perm_out))) and out.flags.c_contiguous:
        product_into(a3, b3, out.reshape(batch, rows, cols))
        return
    result = np.empty((batch, rows, cols), out.dtype)
    product_into(a3, b3, result)
    out[...] = result.reshape(shape).transpose(perm_out)


def _einsum_kernel(ins, outs, attrs) -> None:
    equation, optimize, plan = attrs[0], attrs[1], attrs[2]  # (then the record's terms, output, shape, dtype)
    out = outs[0]
    float8 = out.dtype in FLOAT8_NP  # (no summing: products of float8 values, rounded once as torch's casts)
    compute = np.dtype(np.float32) if out.dtype in HALF_NP or float8 else out.dtype
    operands = [x.astype(compute, copy=False) for x in ins]
    if float8:
        out[...] = to_float8(np.asarray(np.einsum(equation, *operands, optimize=optimize)), out.dtype)
    elif plan is not None:
        _pair_product(operands[0], operands[1], out, plan)
    elif compute == out.dtype:
        np.einsum(equation, *operands, out=out, optimize=optimize)
    else:
        out[...] = np.einsum(equation, *operands, optimize=optimize)


def _tokens(equation: str, start: int, end: int, who: str, output: bool) -> list:
    """The subscripts of one term: letters and '...', with PyTorch's errors for anything else."""
    tokens, i = [], start
    while i < end:
        ch = equation[i]
        if ch == ".":
            if equation[i:i + 3] != "..." or i + 3 > end:
                raise RuntimeError(f"einsum(): found '.' for {who} that is not part of any ellipsis"
                                   + (" (...)" if output else ""))
            if "..." in tokens:
                raise RuntimeError(f"einsum(): found '.' for output but an ellipsis (...) was already found"
                                   if output else f"einsum(): found '.' for {who} for which an ellipsis was "
                                                  "already found")
            tokens.append("...")
            i += 3
            continue
        if ch in _LETTERS:
            tokens.append(ch)
        elif ch != " ":
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation string, "
                               "subscripts must be in [a-zA-Z]")
        i += 1
    return tokens


def _from_sublists(args: tuple) -> tuple:
    """einsum(op0, sub0, op1, sub1, ..., [out]) as an equation string and operands."""
    def term(sub) -> str:
        parts = []
        for s in sub:
            if s is Ellipsis:
                parts.append("...")
            elif isinstance(s, int) and 0 <= s < 52:
                parts.append(_LETTERS[s])
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid range [0, 52)")
        return "".join(parts)
    pairs = args[:len(args) // 2 * 2]
    equation = ",".join(term(s) for s in pairs[1::2])
    if len(args) % 2:  # a trailing sublist names the output
        equation += "->" + term(args[-1])
    return equation, list(pairs[0::2])


def _operands(args: tuple) -> tuple:
    if not args or (isinstance(args[0], str) and len(args) < 2):
        raise ValueError("einsum(): must specify the equation string and at least one operand, or at least one "
                         "operand and its subscripts list")
    if not isinstance(args[0], str):
        return _from_sublists(args)
    equation, operands = args[0], list(args[1:])
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = list(operands[0])
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got {type(op).__name__}")
    return equation, operands


def _parse(equation: str, operands: list) -> tuple:
    """(input terms, output term) as token lists; checks subscripts, operand count and ranks."""
    arrow = equation.find("->")
    lhs_end = arrow if arrow >= 0 else len(equation)
    terms, start, k = [], 0, 0
    while True:
        comma = equation.find(",", start, lhs_end)
        stop = lhs_end if comma < 0 else comma
        if k >= len(operands):
            raise RuntimeError("einsum(): fewer operands were provided than specified in the equation")
        tokens = _tokens(equation, start, stop, f"operand {k}", output=False)
        labels, ndim = sum(t != "..." for t in tokens), operands[k].ndim
        if "..." not in tokens and labels != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({labels}) does not match the "
                               f"number of dimensions ({ndim}) for operand {k} and no ellipsis was given")
        if labels > ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({labels}) is more than the "
                               f"number of dimensions ({ndim}) for operand {k}")
        terms.append(tokens)
        k += 1
        if comma < 0:
            break
        start = comma + 1
    if k < len(operands):
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    output = None if arrow < 0 else _tokens(equation, arrow + 2, len(equation), "output", output=True)
    return terms, output


def _sizes(terms: list, operands: list) -> tuple:
    """Each label's (broadcast) size, and the broadcast shape the ellipses cover."""
    sizes: dict = {}
    spans = [op.ndim - (len(t) - 1) if "..." in t else 0 for t, op in zip(terms, operands)]
    ellipsis = [1] * max(spans, default=0)
    for k, (tokens, op, span) in enumerate(zip(terms, operands, spans)):
        shape, dim, mine = op._v.shape, 0, {}
        for tok in tokens:
            if tok == "...":
                for j, size in enumerate(shape[dim:dim + span], start=len(ellipsis) - span):
                    if ellipsis[j] == 1:
                        ellipsis[j] = size
                    elif size not in (1, ellipsis[j]):
                        raise RuntimeError(f"einsum(): dimension {j} covered by ellipsis in operand {k}has size "
                                           f"{size} which does not broadcast with previously seen ellipsis with "
                                           f"size {ellipsis[j]} for the respective dimension")
                dim += span
                continue
            size = shape[dim]
            dim += 1
            if tok in mine:
                if size != mine[tok]:
                    raise RuntimeError(f"einsum(): subscript {tok} is repeated for operand {k} but the sizes don't "
                                       f"match, {size} != {mine[tok]}")
                continue
            mine[tok] = size
            seen = sizes.get(tok)
            if seen is None or seen == 1:
                sizes[tok] = size
            elif size not in (1, seen):
                raise RuntimeError(f"einsum(): subscript {tok} has size {size} for operand {k} which does not "
                                   f"broadcast with previously seen size {seen}")
    return sizes, tuple(ellipsis)


def _output(terms: list, output: list | None) -> list:
    """The output term: as written (checked), or PyTorch's implicit one (ellipsis, then single labels sorted)."""
    counts: dict = {}
    for tokens in terms:
        for tok in tokens:
            counts[tok] = counts.get(tok, 0) + 1
    if output is None:
        return (["..."] if "..." in counts else []) + sorted(t for t, n in counts.items() if n == 1 and t != "...")
    for i, tok in enumerate(output):
        if tok != "..." and tok in output[i + 1:]:
            raise RuntimeError(f"einsum(): output subscript {tok} appears more than once in the output")
        if tok != "..." and tok not in counts:
            raise RuntimeError(f"einsum(): output subscript {tok} does not appear in the equation for any input "
                               "operand")
    return output


def _spell_out_ellipsis(terms: list, output: list, operands: list, length: int) -> tuple:
    """Terms with each ellipsis replaced by unused letters (right-aligned), so NumPy may sum over them too."""
    used = {tok for tokens in terms + [output] for tok in tokens}
    free = [c for c in _LETTERS if c not in used]
    if len(free) < length:  # no letters left: keep '...' (NumPy then can't sum over it)
        return terms, output
    letters = free[:length]

    def spell(tokens: list, span: int) -> list:
        at = tokens.index("...") if "..." in tokens else None
        return tokens if at is None else tokens[:at] + letters[length - span:] + tokens[at + 1:]
    spans = [op.ndim - (len(t) - 1) for t, op in zip(terms, operands)]
    return [spell(t, s) for t, s in zip(terms, spans)], spell(output, length)


def _result_dtype(terms: list, output: list, operands: list) -> dt.dtype:
    """PyTorch's einsum dtype: a label summed within one operand (alone, or against a size-1 dim) goes
    through torch.sum, so integers and bool come out as int64; bool can't be contracted (bmm)."""
    first = operands[0].dtype
    if first.category >= dt.FLOAT and first not in dt.NO_SUM:  # float and complex sums keep their dtype
        return first
    sizes: dict = {}  # label -> its size in each operand that has it
    for tokens, op in zip(terms, operands):
        dim, span, seen = 0, op.ndim - (len(tokens) - 1), set()
        for tok in tokens:
            if tok == "...":
                dim += span
                continue
            if tok not in seen:
                seen.add(tok)
                sizes.setdefault(tok, []).append(op._v.shape[dim])
            dim += 1
    summed = [s for tok, s in sizes.items() if tok not in output]
    alone = any(len(s) == 1 or (1 in s and max(s) > 1) for s in summed)
    empty = any(op.numel() == 0 for op in operands)  # PyTorch never reaches its bmm kernel then
    if first in dt.NO_SUM and alone and not empty:  # torch.sum first: no float8/complex32 kernel
        raise NotImplementedError(f"\"sum_cpu\" not implemented for '{first.scalar_name}'")
    if (first is dt.bool_ or first in dt.LIMITED) and not empty and any(len(s) > 1 and 1 not in s for s in summed):
        raise NotImplementedError(f"\"bmm\" not implemented for '{first.scalar_name}'")
    return dt.int64 if alone and first.category < dt.FLOAT else first


def _pair_plan(terms: list, output: list, operands: list, d: dt.dtype):
    """How two operands contract as one batched matmul (see `_pair_product`), or None when they don't:
    a label repeated in one operand (a diagonal), a size-1 dim broadcast against a bigger one, bool."""
    if len(operands) != 2 or d is dt.bool_ or any("..." in t or len(set(t)) != len(t) for t in terms):
        return None
    ta, tb = terms
    size = {}
    for tokens, op in zip(terms, operands):
        for tok, s in zip(tokens, op._v.shape):
            if size.setdefault(tok, s) != s:
                return None
    sum_a = tuple(i for i, t in enumerate(ta) if t not in tb and t not in output)
    sum_b = tuple(i for i, t in enumerate(tb) if t not in ta and t not in output)
    ta = [t for i, t in enumerate(ta) if i not in sum_a]
    tb = [t for i, t in enumerate(tb) if i not in sum_b]
    batch = [t for t in output if t in ta and t in tb]
    rows = [t for t in output if t in ta and t not in tb]
    cols = [t for t in output if t in tb and t not in ta]
    depth = [t for t in ta if t in tb and t not in output]
    order = batch + rows + cols
    extents = tuple(math.prod(size[t] for t in labels) for labels in (batch, rows, depth, cols))
    return (sum_a, tuple(ta.index(t) for t in batch + rows + depth), sum_b,
            tuple(tb.index(t) for t in batch + depth + cols), extents, tuple(size[t] for t in order),
            tuple(order.index(t) for t in output))


def einsum(*args) -> Tensor:
    """Sum of products over the subscripts an equation names: einsum('ij,jk->ik', a, b)."""
    equation, operands = _operands(args)
    terms, output = _parse(equation, operands)
    sizes, ellipsis = _sizes(terms, operands)
    output = _output(terms, output)
    if _ac.ACTIVE[0] and _contracts_a_pair(terms, output):  # torch's einsum then runs bmm, which autocast lowers
        operands = list(_ac.lower(*operands))
    first = operands[0].dtype
    for op in operands[1:]:
        if op.dtype is not first:
            raise RuntimeError(f"expected scalar type {torch_name(first)} but found {torch_name(op.dtype)}")
    shape = tuple(s for tok in output for s in (ellipsis if tok == "..." else (sizes[tok],)))
    terms, output = _spell_out_ellipsis(terms, output, operands, len(ellipsis))
    return contract(operands, terms, output, shape, _result_dtype(terms, output, operands))


def _contracts_a_pair(terms: list, output: list) -> bool:
    """Whether a label shared by two operands is summed away: torch's einsum contracts such a pair with bmm (a
    pair without one is a broadcast multiply, a single operand a sum)."""
    seen: set = set()
    for tokens in terms:
        labels = set(tokens) - set(output)
        if labels & seen:
            return True
        seen |= labels
    return False


def contract(operands: list, terms: list, output: list, shape: tuple, d: dt.dtype) -> Tensor:
    """Launch the einsum kernel for checked terms (lists of letters) and the result's shape and dtype."""
    sizes: dict = {}
    for tokens, op in zip(terms, operands):  # (an estimate if a '...' was left in)
        for tok, size in zip(tokens, op._v.shape):
            sizes[tok] = max(sizes.get(tok, 1), size)
    work = math.prod(sizes.values())  # the iteration space
    optimize = "greedy" if len(operands) > 2 or (len(operands) == 2 and work > _OPTIMIZE_ABOVE) else False
    spec = ",".join("".join(t) for t in terms) + "->" + "".join(output)
    plan = _pair_plan(terms, output, operands, d)
    return EINSUM(tuple(operands), (spec, optimize, plan, terms, output, shape, d))


def _einsum_saved(inputs: tuple, outs) -> tuple:
    """An operand is kept only for the gradients of the others."""
    wanted = [op._requires_grad for op in inputs]
    return tuple([op if sum(wanted) - want > 0 else None for op, want in zip(inputs, wanted)])


def _einsum_backward(node, g):
    terms, output, shapes = node.attrs
    operands = node.saved_tensors
    return tuple(_operand_grad(g, k, operands, terms, output, shapes) if node.next_functions[k][0] is not None
                 else None for k in range(len(terms)))


def _label_sizes(terms: list, operands: list) -> dict:
    """Each label's size over the operands, a size-1 dim broadcasting against the others."""
    sizes: dict = {}
    for tokens, op in zip(terms, operands):
        for tok, size in zip(tokens, op._v.shape):
            if sizes.get(tok, 1) == 1:
                sizes[tok] = size
    return sizes


def _operand_grad(g: Tensor, k: int, operands: tuple, terms: list, output: list, shapes: tuple) -> Tensor:
    """The gradient of operand k: einsum(g, the other operands -> operand k's labels)."""
    term = terms[k]
    if "..." in term or "..." in output:
        raise NotImplementedError("einsum(): the gradient needs an unused letter for each ellipsis dim")
    # a product's gradient takes the other factors conjugated (g * conj(b) for a * b, torch's convention)
    ins = [g] + [ew.apply("conj", op) if op.dtype.is_complex else op for j, op in enumerate(operands) if j != k]
    in_terms = [output] + [t for j, t in enumerate(terms) if j != k]
    have = _label_sizes(in_terms, ins)
    have.update((tok, size) for tok, size in zip(term, shapes[k]) if term.count(tok) > 1)  # from the identity
    fresh = iter(c for c in _LETTERS if c not in {tok for t in terms + [output] for tok in t})
    target: list = []
    for tok, size in zip(term, shapes[k]):
        if have.get(tok, 1) == 1 and (tok not in have or size != 1):
            # summed inside operand k alone (or broadcast from size 1 elsewhere): each element of it
            # gets the same gradient
            ins.append(ones(size, dtype=g.dtype, device=g.device))
            in_terms.append([tok])
            have[tok] = size
        if tok in target:  # a diagonal: a fresh label, equal to tok where the identity is 1
            tok2 = next(fresh, None)
            if tok2 is None:
                raise NotImplementedError("einsum(): the gradient needs an unused letter per repeated subscript")
            ins.append(eye(size, dtype=g.dtype, device=g.device))
            in_terms.append([tok, tok2])
            tok = tok2
        target.append(tok)
    sizes = _label_sizes(in_terms, ins)
    return contract(ins, in_terms, target, tuple(sizes[t] for t in target), g.dtype)


# attrs: (equation, optimize, pair plan) for the kernel, then the terms, output labels, shape and dtype
EINSUM = Primitive("einsum", lambda inputs, attrs: [(attrs[5], attrs[6])], cpu=_einsum_kernel, cuda=None,
                   backward=_einsum_backward, saved=_einsum_saved,
                   node_attrs=lambda inputs, attrs: (attrs[3], attrs[4], tuple([op._v.shape for op in inputs])))
