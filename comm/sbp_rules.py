"""SBP signatures: for each family of ops, the input sbps under which running the op on the local
shards gives a shard of the global result, and the output's sbp.

Which family an op belongs to is declared on the op: a primitive record's `sbp=` (Primitive, Reduction:
"reduction", "matmul", "concat"...) and an elementwise op's `ElemOp.sbp` ("elementwise", or "additive"...
for the ops linear in an operand). FAMILIES gives each family its rule, so a new record declared with a
family runs on global tensors with no edit here. Two small tables remain for the public names that are
not a declared op's own: ALIASES (torch's other spellings, the Python operators, public ops that run a
record of another name) and COMPOSITES (ops with no record, whose family is their own: layer_norm's
"normalization"; views reaching the view records with arguments of their own).

A rule takes the call (`Call`: the op's arguments and its global inputs' shapes) and returns the
candidate `Sig`s for one grid axis; the dispatcher adds "everything broadcast -> broadcast"
(always right) and picks the candidate needing the fewest bytes of boxing. A `Sig` may carry
`rewrite`, which turns the global arguments (shapes) into the local shard's arguments, and says
through `parts` whether it also holds for uneven splits (torch.chunk's parts, as DTensor's Shard
lays out a dim that does not divide): "any" for signatures whose output split dim keeps the size of
the inputs' split dim (elementwise ops, reductions of other dims, transposes, matmul), "nonempty"
for max/min reductions (a rank's empty part has no max), "even" otherwise (reshape, mean's average).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ..autograd.grad_mode import is_grad_enabled
from ..ops.dispatch.primitive import PRIMITIVES
from ..ops.elementwise.declarations import OPS as ELEMENTWISE_OPS
from .partial_grad import finish_average, finish_extremum, finish_product
from .placement_sbp import SbpKind, broadcast as B, partial, partial_sum as P, split as S

__all__ = ["Sig", "Call", "FAMILIES", "ALIASES", "COMPOSITES", "family_of", "rule_for", "table"]


class Sig(NamedTuple):
    """Input sbps (one per global input, in argument order), the outputs' sbp, and an argument rewrite."""

    ins: tuple
    out: SbpKind
    rewrite: Callable | None = None
    parts: str = "even"   # which splits it holds for: "even", "any" (uneven too) or "nonempty" (no empty part)
    finish: Callable | None = None   # finish(local result, local input, group of the axes) -> local result


class Call(NamedTuple):
    """What a rule sees: the op's name and arguments and its global inputs with their global shapes."""

    name: str
    args: tuple
    kwargs: dict
    inputs: list
    shapes: list


def _arg(call: Call, index: int, key: str, default=None):
    if len(call.args) > index:
        return call.args[index]
    return call.kwargs.get(key, default)


def _norm(dim: int, ndim: int) -> int:
    return dim % ndim if ndim else 0


def _uneven(sigs: list, parts: str = "any") -> list:
    """`sigs` marked as holding for torch.chunk's uneven parts too (their output split dims keep their size)."""
    return [sig._replace(parts=parts) for sig in sigs]


def _broadcast_shape(shapes: list) -> tuple:
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for k, size in enumerate(s):
            j = ndim - len(s) + k
            out[j] = size if out[j] == 1 else out[j]
    return tuple(out)


# -- elementwise ---------------------------------------------------------------------------------------
def elementwise(call: Call) -> list:
    """Every input split along the same (broadcast-aligned) output dim, or broadcast where it is broadcast."""
    out_shape = _broadcast_shape(call.shapes)
    sigs = []
    for d in range(len(out_shape)):
        ins = []
        for shape in call.shapes:
            k = d - (len(out_shape) - len(shape))
            ins.append(S(k) if k >= 0 and shape[k] == out_shape[d] and shape[k] > 1 else B)
        if any(s != B for s in ins):
            sigs.append(Sig(tuple(ins), S(d), parts="any"))
    return sigs


def _all_operands_global(call: Call) -> bool:
    first, second = _arg(call, 0, "input"), _arg(call, 1, "other")
    return first is call.inputs[0] and len(call.inputs) == 2 and second is call.inputs[1]


def additive(call: Call) -> list:
    """add/sub: elementwise, and P + P -> P when both operands are global (a number would be added n times)."""
    sigs = elementwise(call)
    if _all_operands_global(call):
        sigs.append(Sig((P, P), P))
    return sigs


def multiplicative(call: Call) -> list:
    """mul: elementwise, and one P times broadcast others -> P."""
    sigs = elementwise(call)
    for i in range(len(call.inputs)):
        sigs.append(Sig(tuple(P if j == i else B for j in range(len(call.inputs))), P))
    return sigs


def divisive(call: Call) -> list:
    """div: elementwise, and a P numerator over a broadcast denominator -> P."""
    sigs = elementwise(call)
    if _arg(call, 0, "input") is call.inputs[0]:
        sigs.append(Sig((P,) + (B,) * (len(call.inputs) - 1), P))
    return sigs


def linear_unary(call: Call) -> list:
    """Ops linear in their one tensor: elementwise, and P -> P."""
    return elementwise(call) + ([Sig((P,), P)] if len(call.inputs) == 1 else [])


# -- matmul -------------------------------------------------------------------------------------------
def matmul(call: Call) -> list:
    """S(0)xB->S(0), BxS(1)->S(1), S(1)xS(0)->P, PxB->P, BxP->P, and batch dims split together."""
    if len(call.shapes) != 2 or len(call.inputs) != 2 or min(len(s) for s in call.shapes) < 2:
        return []
    a, b = call.shapes
    nd = max(len(a), len(b))
    sigs = [Sig((S(len(a) - 2), B), S(nd - 2)), Sig((B, S(len(b) - 1)), S(nd - 1)),
            Sig((S(len(a) - 1), S(len(b) - 2)), P), Sig((P, B), P), Sig((B, P), P)]
    for d in range(nd - 2):  # batch dims, right-aligned and broadcast like elementwise ones
        ka, kb = d - (nd - len(a)), d - (nd - len(b))
        sa = S(ka) if ka >= 0 and a[ka] > 1 else B
        sb = S(kb) if kb >= 0 and b[kb] > 1 else B
        if sa != B or sb != B:
            sigs.append(Sig((sa, sb), S(d)))
    return _uneven(sigs)


# -- reductions ---------------------------------------------------------------------------------------
def _reduced_dims(call: Call, ndim: int):
    dim = _arg(call, 1, "dim")
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return set(range(ndim))
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return {_norm(int(d), ndim) for d in dims}


def _keep_split(call: Call, over_split: SbpKind | None, parts: str = "any", keepdim_at: int = 2) -> list:
    """A split of a dim the reduction keeps stays (renumbered); a split of a reduced dim gives `over_split`
    (None: it cannot stay split)."""
    ndim = len(call.shapes[0])
    reduced = _reduced_dims(call, ndim)
    keepdim = bool(_arg(call, keepdim_at, "keepdim", False))
    sigs = []
    for d in range(ndim):
        if d not in reduced:
            sigs.append(Sig((S(d),), S(d if keepdim else d - sum(1 for r in reduced if r < d)), parts="any"))
        elif over_split is not None:
            sigs.append(Sig((S(d),), over_split, parts=parts))
    return sigs


def summation(call: Call) -> list:
    """sum over a split dim -> P, over other dims keeps the split; sum of P -> P."""
    return [Sig((P,), P)] + _keep_split(call, P) if len(call.inputs) == 1 else []


# The partial value each rank's reduction of its part is, as torch's DTensor has it (max(dim)/min(dim) give
# indices too, which cannot be combined, so only their whole-tensor forms are here).
_PARTIAL_OF = {"amax": "max", "amin": "min", "max": "max", "min": "min", "prod": "product", "all": "product",
               "any": "sum"}


def _needs_grad(call: Call) -> bool:
    return is_grad_enabled() and any(g.requires_grad for g in call.inputs)


def reduction(call: Call) -> list:
    """Other reductions keep a split of a dim they do not reduce; max/min/prod/all/any of a split dim give the
    ranks' partial max/min/product/sum. With autograd, a partial max/min/product's local result is wrapped so
    that its gradient is the global reduction's (comm.partial_grad)."""
    if len(call.inputs) != 1:                    # max(a, b) and friends are elementwise
        return elementwise(call)
    op = _PARTIAL_OF.get(call.name)
    whole = call.name not in ("max", "min") or _arg(call, 1, "dim") is None
    if op is None or not whole:
        return _keep_split(call, None)
    grad = _needs_grad(call)
    finish = None
    if grad and op == "product":
        finish = finish_product
    elif grad and op != "sum":
        ndim = len(call.shapes[0])
        finish = finish_extremum(op, tuple(sorted(_reduced_dims(call, ndim))), bool(_arg(call, 2, "keepdim", False)))
    sigs = [sig._replace(finish=finish) if sig.out.is_partial else sig for sig in
            _keep_split(call, partial(op), parts="nonempty" if op in ("max", "min") else "any")]
    if op in ("max", "min", "product") and not grad:   # max of partial maxes is the max (product likewise)
        sigs.append(Sig((partial(op),), partial(op)))
    return sigs


def averaging(call: Call) -> list:
    """mean keeps a split of a dim it does not reduce; over a split dim that divides evenly each rank's mean is
    a Partial("avg") (uneven parts do not average to the mean: gathered). With autograd the local result is
    wrapped so that its gradient is divided by the number of ranks averaged."""
    if len(call.inputs) != 1:
        return []
    finish = None
    if _needs_grad(call):
        finish = finish_average
    return [sig._replace(finish=finish) if sig.out.is_partial else sig
            for sig in _keep_split(call, partial("avg"), parts="even")]


def variance(call: Call) -> list:
    """var/std keep a split of a dim they do not reduce (keepdim is their fourth argument)."""
    return _keep_split(call, None, keepdim_at=3) if len(call.inputs) == 1 else []


def along_dim(call: Call) -> list:
    """softmax-like ops along `dim` keep a split of any other dim."""
    ndim = len(call.shapes[0])
    dim = _norm(int(_arg(call, 1, "dim")), ndim)
    return [Sig((S(d),), S(d), parts="any") for d in range(ndim) if d != dim]


# -- views and reshapes: renumber the split dim ---------------------------------------------------------
def _renumber(mapping: Callable) -> Callable:
    """A rule from `mapping(call, ndim) -> {old dim: new dim}` (dims left out cannot stay split)."""
    def rule(call: Call) -> list:
        if len(call.inputs) != 1:
            return []
        ndim = len(call.shapes[0])
        moved = mapping(call, ndim)
        return [Sig((P,), P)] + [Sig((S(d),), S(moved[d]), parts="any") for d in range(ndim) if d in moved]
    return rule


def _dims_arg(call: Call) -> tuple:
    rest = call.args[1:]
    dims = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
    return tuple(call.kwargs.get("dims", dims))


def _transpose(call, ndim):
    d0, d1 = _norm(int(_arg(call, 1, "dim0")), ndim), _norm(int(_arg(call, 2, "dim1")), ndim)
    out = {d: d for d in range(ndim)}
    out[d0], out[d1] = d1, d0
    return out


def _t(call, ndim):
    return {d: ndim - 1 - d for d in range(ndim)}


def _permute(call, ndim):
    dims = [_norm(int(d), ndim) for d in _dims_arg(call)]
    return {old: new for new, old in enumerate(dims)}


def _movedim(call, ndim):
    src, dst = _arg(call, 1, "source"), _arg(call, 2, "destination")
    src = [src] if isinstance(src, int) else list(src)
    dst = [dst] if isinstance(dst, int) else list(dst)
    src, dst = [_norm(s, ndim) for s in src], [_norm(d, ndim) for d in dst]
    order = [None] * ndim
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(ndim) if d not in src)
    order = [next(rest) if o is None else o for o in order]
    return {old: new for new, old in enumerate(order)}


def _unsqueeze(call, ndim):
    at = _norm(int(_arg(call, 1, "dim")), ndim + 1)
    return {d: d + (d >= at) for d in range(ndim)}


def _squeezed(call: Call) -> tuple:
    shape = call.shapes[0]
    dim = _arg(call, 1, "dim")
    if dim is None:
        return tuple(d for d, s in enumerate(shape) if s == 1)
    dims = dim if isinstance(dim, (tuple, list)) else (dim,)
    return tuple(d for d in (_norm(int(k), len(shape)) for k in dims) if shape[d] == 1)


def _squeeze(call, ndim):
    gone = _squeezed(call)
    return {d: d - sum(1 for g in gone if g < d) for d in range(ndim) if d not in gone}


def _flat_range(call, ndim) -> tuple:
    return _norm(int(_arg(call, 1, "start_dim", 0)), ndim), _norm(int(_arg(call, 2, "end_dim", -1)), ndim)


def _flatten(call, ndim):
    if ndim == 0:
        return {}
    start, end = _flat_range(call, ndim)
    return {d: d if d <= start else d - (end - start) for d in range(ndim) if not start < d <= end}


def flatten(call: Call) -> list:
    """flatten renumbers; a split of the first merged dim only holds for even parts (the merged dim's
    torch.chunk parts are not the parts of its first dim times the rest)."""
    sigs = _renumber(_flatten)(call)
    ndim = len(call.shapes[0]) if call.inputs else 0
    if ndim == 0:
        return sigs
    start, end = _flat_range(call, ndim)
    return [sig._replace(parts="even") if end > start and sig.ins[0] == S(start) else sig for sig in sigs]


def _select(call, ndim):
    dim = _norm(int(_arg(call, 1, "dim")), ndim)
    return {d: d - (d > dim) for d in range(ndim) if d != dim}


def getitem(call: Call) -> list:
    """Basic indexing (ints, slices, None, ...) keeps a split of a dim it takes whole; P stays P."""
    if len(call.inputs) != 1:
        return []
    index = call.args[1] if isinstance(call.args[1], tuple) else (call.args[1],)
    if not all(i is None or i is Ellipsis or isinstance(i, (int, slice)) for i in index) or \
            any(isinstance(i, bool) for i in index):
        return []
    ndim = len(call.shapes[0])
    used = sum(1 for i in index if i is not None and i is not Ellipsis)
    if Ellipsis in index:
        at = index.index(Ellipsis)
        index = index[:at] + (slice(None),) * (ndim - used) + index[at + 1:]
    index = index + (slice(None),) * (ndim - used)
    moved, d, out = {}, 0, 0
    for i in index:
        if i is None:
            out += 1
            continue
        if i == slice(None):
            moved[d] = out
        out += not isinstance(i, int)
        d += 1
    return [Sig((P,), P)] + [Sig((S(k),), S(v), parts="any") for k, v in moved.items()]


def squeeze(call: Call) -> list:
    """squeeze renumbers; with no dim it squeezes the dims of global size 1 only (not shards of size 1)."""
    gone = _squeezed(call)

    def rewrite(args, kwargs, out_sbp, hierarchy):
        return (args[0], gone), {}
    return [sig._replace(rewrite=rewrite) for sig in _renumber(_squeeze)(call)]


def _target_shape(call: Call) -> tuple:
    rest = call.args[1:]
    shape = rest[0] if len(rest) == 1 and isinstance(rest[0], (tuple, list)) else rest
    shape = [int(s) for s in call.kwargs.get("shape", shape)]
    known = 1
    for s in shape:
        known *= s if s != -1 else 1
    total = 1
    for s in call.shapes[0]:
        total *= s
    return tuple(total // max(known, 1) if s == -1 else s for s in shape)


def reshape(call: Call) -> list:
    """reshape/view keep a split when the elements before the split dim stay the same (OneFlow's rule too)."""
    if len(call.inputs) != 1:
        return []
    try:
        src, dst = call.shapes[0], _target_shape(call)
    except (TypeError, ValueError):             # view(dtype) and other forms run on broadcast inputs
        return []
    sigs = [Sig((P,), P)]
    for d in range(len(src)):
        before = 1
        for s in src[:d]:
            before *= s
        acc = 1
        for k, size in enumerate(dst):
            if acc == before and size > 1 and src[d] > 0 and (size % src[d] == 0 or src[d] % size == 0):
                sigs.append(Sig((S(d),), S(k)))
                break
            acc *= size

    def rewrite(args, kwargs, out_sbp, hierarchy):
        local = list(dst)
        for axis, s in enumerate(out_sbp):
            if s.is_split:
                local[s.dim] //= hierarchy[axis]
        return (args[0], tuple(local)), {}
    return [sig._replace(rewrite=rewrite) for sig in sigs]


# -- joins ----------------------------------------------------------------------------------------------
def concat(call: Call) -> list:
    """cat along one dim keeps a split of any other dim; P's concatenate to P."""
    ndim = len(call.shapes[0])
    dim = _norm(int(_arg(call, 1, "dim", 0)), ndim)
    n = len(call.inputs)
    return [Sig((P,) * n, P)] + [Sig((S(d),) * n, S(d), parts="any") for d in range(ndim) if d != dim]


def normalization(call: Call) -> list:
    """layer_norm keeps a split of any dim before its normalized (trailing) dims, group_norm a split of the batch
    dim (each sample is normalized on its own); weight and bias stay broadcast (their gradients are reduced)."""
    if not call.inputs or call.inputs[0] is not call.args[0]:
        return []   # only a parameter is global: the op runs on broadcast inputs
    ndim = len(call.shapes[0])
    if call.name == "layer_norm":
        normalized = _arg(call, 1, "normalized_shape")
        leading = ndim - (1 if isinstance(normalized, int) else len(tuple(normalized)))
    else:
        leading = min(ndim, 1)
    rest = (B,) * (len(call.inputs) - 1)
    return [Sig((S(d),) + rest, S(d), parts="any") for d in range(leading)]


# -- the families, and the table read off the declarations ------------------------------------------------
FAMILIES: dict = {
    "elementwise": elementwise, "additive": additive, "multiplicative": multiplicative, "divisive": divisive,
    "linear_unary": linear_unary, "matmul": matmul, "summation": summation, "reduction": reduction,
    "averaging": averaging, "variance": variance, "along_dim": along_dim, "normalization": normalization,
    "transpose": _renumber(_transpose), "t": _renumber(_t), "permute": _renumber(_permute),
    "movedim": _renumber(_movedim), "unsqueeze": _renumber(_unsqueeze), "select": _renumber(_select),
    "squeeze": squeeze, "flatten": flatten, "reshape": reshape, "concat": concat, "getitem": getitem}

# Public names that reach a declared op (an ElemOp or a record) under another name: torch's aliases, the Python
# operators, and the public ops a record of another name runs (var/std: the var_mean/std_mean records, which keep
# the mean for the backward). (The reflected operators whose global operand is not where the family expects it are
# in COMPOSITES: __rtruediv__ divides by it.)
ALIASES: dict = {
    "subtract": "sub", "__add__": "add", "__radd__": "add", "__sub__": "sub", "__rsub__": "sub",
    "multiply": "mul", "__mul__": "mul", "__rmul__": "mul", "divide": "div", "true_divide": "div",
    "__truediv__": "div", "negative": "neg", "__neg__": "neg", "__pos__": "positive", "absolute": "abs",
    "__abs__": "abs", "arctan2": "atan2", "clip": "clamp", "greater": "gt", "greater_equal": "ge", "less": "lt",
    "less_equal": "le", "not_equal": "ne", "__lt__": "lt", "__le__": "le", "__gt__": "gt", "__ge__": "ge",
    "__eq__": "eq", "__ne__": "ne", "__pow__": "pow", "__rpow__": "pow", "__floordiv__": "floor_divide",
    "__mod__": "remainder", "__and__": "bitwise_and", "__or__": "bitwise_or", "__xor__": "bitwise_xor",
    "__invert__": "bitwise_not",
    "mm": "matmul", "bmm": "matmul", "__matmul__": "matmul", "var": "var_mean", "std": "std_mean",
    "swapaxes": "transpose", "swapdims": "transpose", "T": "t", "concat": "cat", "concatenate": "cat",
    "__getitem__": "getitem"}

# Public names whose family is their own (looked up before the records): composites with no record, the norms
# (their records are nodes shared by several norms and paths: "native_norm" serves layer, group, batch and rms
# norm, so which dims stay split is the composite's to say), and the views that reach the view records with
# arguments of their own (unsqueeze's dim, squeeze's dims...).
COMPOSITES: dict = {
    **dict.fromkeys(("addcdiv", "addcmul", "clamp_max", "clamp_min", "float_power", "heaviside", "nan_to_num",
                     "hardshrink", "leaky_relu", "logsigmoid", "mish", "relu6", "silu", "softsign", "tanhshrink",
                     "threshold", "__rtruediv__",
                     # conversions, and the like-factories whose value is the same in any split
                     "float", "double", "half", "bfloat16", "int", "long", "bool", "to", "type", "ones_like",
                     "full_like"), "elementwise"),
    # (empty_like: any layout holds garbage; meta DTensors take no comm)
    **dict.fromkeys(("clone", "contiguous", "detach", "zeros_like", "empty_like"), "linear_unary"),
    "layer_norm": "normalization", "group_norm": "normalization", "narrow": "along_dim",
    "movedim": "movedim", "moveaxis": "movedim", "unsqueeze": "unsqueeze", "squeeze": "squeeze",
    "select": "select", "flatten": "flatten", "reshape": "reshape"}


def family_of(name: str) -> str | None:
    """The SBP family of public op `name`: its own (COMPOSITES), else its record's or ElemOp's `sbp` (under the
    name ALIASES gives), else None."""
    family = COMPOSITES.get(name)
    if family is not None:
        return family
    target = ALIASES.get(name, name)
    record = PRIMITIVES.get(target)
    if record is not None and record.sbp is not None:
        return record.sbp
    op = ELEMENTWISE_OPS.get(target)
    return None if op is None else op.sbp


def rule_for(name: str) -> Callable | None:
    """The signature rule of op `name`, or None (the op then runs on broadcast inputs)."""
    family = family_of(name)
    return None if family is None else FAMILIES[family]


def table() -> dict:
    """name -> family for every name the declarations and the two tables give a family (records' and ElemOps'
    own names included, public or not)."""
    names = [*ELEMENTWISE_OPS, *(name for name, r in PRIMITIVES.items() if r.sbp is not None), *ALIASES, *COMPOSITES]
    out = {name: family_of(name) for name in names}
    return {name: family for name, family in out.items() if family is not None}
