"""The stride rules of memory formats (ops/movement/memory_format.py says which of torch's it follows): a format's
name and dense strides, the format a tensor's strides suggest, preserve_format's strides, and the layout of an
elementwise result (TensorIterator's). Only arithmetic on shapes and strides: no tensor is made here."""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor.tensor import contiguous_strides
from ...tensor.layout import memory_format as _format_token  # torch.memory_format's class

_RANK = {"channels_last": 4, "channels_last_3d": 5}
# format names, as torch.memory_format tokens carry them (compat/_layout.py)
PRESERVE, CONTIGUOUS = "preserve_format", "contiguous_format"


def memory_format_name(fn: str, memory_format, default: str = PRESERVE) -> str:
    """The format's name; torch's TypeError for something that is not a torch.memory_format."""
    if memory_format is None:
        return default
    if not isinstance(memory_format, _format_token):
        raise TypeError(f"{fn}(): argument 'memory_format' must be torch.memory_format, not "
                        f"{type(memory_format).__name__}")
    return memory_format.name


def format_strides(shape: tuple, name: str) -> tuple:
    """Dense strides of `shape` in format `name` (contiguous or channels_last(_3d)); torch's rank error."""
    rank = _RANK.get(name)
    if rank is None:
        return contiguous_strides(shape)
    if len(shape) != rank:
        raise RuntimeError(f"required rank {rank} tensor to use {name} format")
    strides, acc = [0] * rank, 1
    for d in (1, *range(rank - 1, 1, -1), 0):  # innermost first: C, then W, H, (D), then N
        strides[d] = acc
        acc *= max(shape[d], 1)
    return tuple(strides)


def non_overlapping_and_dense(shape: tuple, strides: tuple) -> bool:
    """torch's is_non_overlapping_and_dense(): the elements fill one block of memory exactly, in some dim order
    (dims of size 1 have no say; an empty tensor always does, as torch finds it contiguous)."""
    if 0 in shape:
        return True
    expected = 1
    for d in sorted((d for d in range(len(shape)) if shape[d] > 1), key=lambda d: strides[d]):
        if strides[d] != expected:
            return False
        expected *= shape[d]
    return True


def dense_strides(shape: tuple, operands: list, size0_as_1: bool = True) -> tuple:
    """Dense strides of `shape` in the dim order of the `operands`' strides: torch's stable insertion sort of the
    dims, innermost first, shared by infer_dense_strides (empty_like/clone of a strided input) and TensorIterator's
    outputs. A stride of 0 (broadcast) gives no order; equal strides put the smaller dim inner, else ask the next
    operand. Only the layout of a permuted order differs between torch's two callers: infer_dense_strides lays a
    size-0 dim out as size 1 (`size0_as_1`), TensorIterator multiplies by its 0; the row-major order is always
    the contiguous strides."""
    ndim = len(shape)

    def outer(d0: int, d1: int) -> int:  # 1: d0 goes outside d1, -1: inside, 0: no opinion
        for strides in operands:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return -1 if s0 < s1 else 1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))
    for i in range(1, ndim):
        d1 = i
        for d0 in range(i - 1, -1, -1):
            c = outer(perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):
        return contiguous_strides(shape)
    out, acc = [0] * ndim, 1
    for d in perm:
        out[d] = acc
        acc *= max(shape[d], 1) if size0_as_1 else shape[d]
    return tuple(out)


def preserved_strides(x: Tensor) -> tuple:
    """preserve_format's strides for a copy of `x` (torch's empty_like): its own when non-overlapping and dense,
    else dense ones in its stride order."""
    shape, strides = x._v.shape, x._v.strides
    return strides if non_overlapping_and_dense(shape, strides) else dense_strides(shape, [strides])


def copy_strides(fn: str, x: Tensor, memory_format) -> tuple:
    """The strides of a copy of `x` made by `fn` with `memory_format` (None: tidal's default, see
    ops/movement/memory_format.py)."""
    name = memory_format_name(fn, memory_format)
    if memory_format is None and suggest_memory_format(x) == CONTIGUOUS:
        return contiguous_strides(x._v.shape)  # tidal's default (memory_format.py's docstring)
    return preserved_strides(x) if name == PRESERVE else format_strides(x._v.shape, name)



def _strides_like(shape: tuple, strides: tuple, order: tuple) -> bool:
    """torch's is_channels_last_strides_2d/3d: strides ordered as the format's (ambiguous cases: not)."""
    if strides[1] == 0:
        return False
    least = 0
    for d in order:
        if shape[d] == 0 or strides[d] < least or (d == 0 and least == strides[1]):
            return False
        least = strides[d] * shape[d] if shape[d] > 1 else strides[d]
    return True


def suggest_memory_format(x: Tensor) -> str:
    """torch's suggest_memory_format(): the format `x`'s strides are ordered like."""
    return suggested_format(x._v.shape, x._v.strides)


def suggested_format(shape: tuple, strides: tuple) -> str:
    """suggest_memory_format() of a tensor with this geometry."""
    if len(shape) == 4 and _strides_like(shape, strides, (1, 3, 2, 0)):
        return "channels_last"
    if len(shape) == 5 and _strides_like(shape, strides, (1, 4, 3, 2, 0)):
        return "channels_last_3d"
    return CONTIGUOUS


def cat_memory_format(tensors) -> str:
    """torch.cat's result format: the one every input suggests (skipped empty inputs included), else
    contiguous_format."""
    fmt = None
    for t in tensors:
        f = suggest_memory_format(t)
        if f == CONTIGUOUS or fmt not in (None, f):
            return CONTIGUOUS
        fmt = f
    return fmt


def channels_last_like(x: Tensor) -> str | None:
    """The channels-last format `x` is dense in while not row-major (None if none)."""
    n = len(x._v.shape)
    if n not in (4, 5) or x.is_contiguous():
        return None
    name = "channels_last" if n == 4 else "channels_last_3d"
    return name if x.is_contiguous(memory_format=name) else None


# -- elementwise results: TensorIterator's output layout ----------------------------------------------------
def _operand_strides(t: Tensor, shape: tuple) -> tuple:
    """`t`'s strides against the broadcast `shape` (0 for broadcast dims, as TensorIterator sees them)."""
    own, strides = t._v.shape, t._v.strides
    lead = len(shape) - len(own)
    return tuple(0 if k < lead or (own[k - lead] == 1 and shape[k] != 1) else strides[k - lead]
                 for k in range(len(shape)))


_layouts: dict = {}  # (result shape, arity, each tensor argument's (index, shape, strides)) -> the result's strides


def elementwise_strides(plan, args: tuple) -> tuple:
    """The strides of an elementwise result of `args` (a 4-d or 5-d result): TensorIterator's layout when an input's
    strides suggest channels_last(_3d) (a slice of such a tensor too), else the plan's row-major strides.
    `plan.plain` holds (argument index, row-major strides) per tensor argument; the caller compares strides by
    identity (a row-major result carries that very tuple) and calls this only when one differs, so an input equal
    to its tuple gets it here."""
    special = False
    for k, plain in plan.plain:
        v = args[k]._v
        if v.strides == plain:
            v.strides = plain  # the same values, as the tuple compared by identity: not seen here again
        else:
            special = True
    if not special:
        return plan.strides
    key = (plan.shape, len(args)) + tuple([(k, args[k]._v.shape, args[k]._v.strides) for k, _ in plan.plain])
    strides = _layouts.get(key)
    if strides is None:
        strides = plan.strides
        if any(suggest_memory_format(args[k]) != CONTIGUOUS for k, _ in plan.plain):
            strides = iterator_strides(plan.shape, args)
            if strides == plan.strides:
                strides = plan.strides
        if len(_layouts) < 4096:
            _layouts[key] = strides
    return strides


def iterator_strides(shape: tuple, args) -> tuple:
    """The strides TensorIterator gives a new output of `shape` from its inputs `args` (tensors and numbers):
    its fast setups when every input has the output's shape, else its permutation of the dims."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if len(tensors) == len(args) and all(t._v.shape == shape for t in tensors):
        if all(t.is_contiguous() for t in tensors):
            return contiguous_strides(shape)
        if len(shape) == 4 and all(t.is_contiguous(memory_format="channels_last") for t in tensors):
            return format_strides(shape, "channels_last")
        first = tensors[0]._v.strides
        if all(t._v.strides == first for t in tensors) and non_overlapping_and_dense(shape, first):
            return first
    return dense_strides(shape, [_operand_strides(t, shape) for t in tensors], size0_as_1=False)
