"""How torch functions run on nested tensors: once on the jagged values, or once per strided component.

Pointwise ops (every elementwise op, activations, casts, copies) and ops over the trailing dims (linear, matmul by a
dense matrix, layer_norm, softmax and reductions over a dim after the ragged one) are supported, as torch's jagged
tensors support them; a `dim` argument is moved past the batch dim. Jagged tensors also take the ops of
structure.py (transpose, flatten, cat, attention), shape_ops.py (view/reshape, unsqueeze, select, permute, split...)
and reductions.py (reductions over any dims torch's jagged layout reduces, softmax over the ragged dim); holes.py says
what torch refuses on jagged tensors with holes (lengths) and packs them for contiguous()/reshape(). Other ops
refuse with a RuntimeError naming the op rather than run on the packed memory as if it were a dense tensor.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..ops.dispatch import torch_function as tf
from ..ops.elementwise.declarations import OPS
from ..tensor import Tensor
from . import holes
from .nested_tensor import NestedTensor, _alias, _components, _wrap, has_holes, make_strided, rejag
from .reductions import NORMALIZERS, REDUCTIONS, normalize, over_ragged_dim, reduce
from .shape_ops import OPS as SHAPES, strided_narrow
from .structure import OPS as STRUCTURE

POINTWISE = set(OPS) | {
    "rsub", "true_divide", "multiply", "subtract", "divide", "clamp_min", "clamp_max", "clip", "masked_fill",
    "nan_to_num", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "softplus", "softsign", "hardswish",
    "hardsigmoid", "hardtanh", "hardshrink", "softshrink", "tanhshrink", "logsigmoid", "glu", "dropout", "gelu",
    "clone", "detach", "contiguous", "to", "float", "double", "half", "bfloat16", "int", "long", "bool", "type_as",
    "zeros_like", "ones_like", "full_like", "empty_like", "rand_like", "randn_like", "ge", "le", "isclose",
    "bitwise_not", "invert", "sgn", "absolute", "negative", "square", "sub", "add", "mul", "div", "pow", "fill",
    "zero", "bernoulli", "uniform", "normal", "exponential", "cauchy", "log_normal", "geometric", "random", "frexp",
}
# ops over the trailing dims whose `dim` (second positional argument or keyword) is moved past the batch dim
DIM_OPS = {"sum", "mean", "amax", "amin", "prod", "softmax", "log_softmax", "cumsum", "cumprod", "argmax", "argmin",
           "logsumexp", "var", "std", "nansum", "nanmean", "all", "any", "norm", "count_nonzero"}
TRAILING = {"linear", "matmul", "layer_norm", "rms_norm", "normalize", "__matmul__", "chunk", "split",
            "embedding"} | DIM_OPS
_DIM_POSITION = {"normalize": 2, "chunk": 2, "split": 2}  # F.normalize(input, p, dim), chunk(input, chunks, dim)


# Tensor's operators arrive under their functions' names: reflected ones as _rsub, in-place ones as _inplace_add,
# the bitwise ones and __rpow__ (all elementwise) as `op` / `<lambda>`, the cast methods as `fn`
_RAW_IN_PLACE = {"inplace_add", "inplace_sub", "inplace_div", "pow_"}
_OPERATOR_NAMES = {"op": "bitwise_and", "<lambda>": "pow", "rtruediv": "div", "pos": "positive",
                   "invert": "bitwise_not", "rmatmul": "rmatmul", "fn": "to"}  # (`fn`: the casts float(), long()...)


def _canonical(name: str) -> str:
    name = name.strip("_") if name.startswith("__") else name.lstrip("_")
    return _OPERATOR_NAMES.get(name, name)


def call(func, args: tuple, kwargs: dict):
    """`func(*args, **kwargs)` for arguments that include nested tensors (NestedTensor.__torch_function__)."""
    name = _canonical(getattr(func, "__name__", str(func)))
    nested = [a for a in (*args, *kwargs.values()) if isinstance(a, NestedTensor)]
    nested += [x for a in args if isinstance(a, (list, tuple)) for x in a if isinstance(x, NestedTensor)]
    first = nested[0]
    if name in ("unbind", "to_padded_tensor", "values", "offsets", "lengths", "size", "dim", "numel", "is_nested"):
        return getattr(NestedTensor, name)(*args, **kwargs)
    if any(has_holes(a) for a in nested):
        result = holes.run(func, name, args, kwargs)
        if result is not None:
            return result
    if name == "getitem" and isinstance(args[1], int) and not isinstance(args[1], bool):  # nt[k]: a component
        return _components(args[0])[_wrap(args[1], len(args[0]), "getitem")]
    if name == "requires_grad_" or name.endswith("_") and name.rstrip("_") in POINTWISE or name in _RAW_IN_PLACE:
        return _in_place(func, args, kwargs)
    if not first._jagged and name == "narrow" and args and args[0] is first:
        return strided_narrow(func, args, kwargs)
    if first._jagged and name in STRUCTURE:
        return STRUCTURE[name](func, args, kwargs)
    if first._jagged and args and args[0] is first:
        if name in SHAPES:
            return SHAPES[name](func, args, kwargs)
        dim = kwargs.get("dim", args[1] if len(args) > 1 else None)
        if name in REDUCTIONS and not isinstance(dim, Tensor):  # (max(nt, other) is elementwise)
            return reduce(func, name, args, kwargs)
        if name in NORMALIZERS and over_ragged_dim(first, args, kwargs):
            return normalize(func, name, args, kwargs)
    base = name.rstrip("_")
    if base not in POINTWISE and base not in TRAILING and name not in ("backward",):
        raise RuntimeError(f"{name}(): not supported for nested tensors in tidal (pointwise ops and ops over the "
                           "trailing dims are)")
    if name == "matmul" and not (args and args[0] is first and not isinstance(args[1], NestedTensor)):
        raise RuntimeError("matmul(): only a nested tensor times a dense matrix is supported for nested tensors")
    if name == "backward":
        with tf.DisableTorchFunction():
            return Tensor.backward(_alias(args[0], Tensor), *args[1:], **kwargs)
    args, kwargs = _moved_dim(name, first, args, kwargs)
    if first._jagged:
        return _jagged_call(func, name, first, args, kwargs)
    return _strided_call(func, name, first, args, kwargs)


def _in_place(func, args: tuple, kwargs: dict):
    """An in-place op writes into the nested tensor's own memory; nested operands are read as packed memory."""
    self = args[0]
    rest = [_packed_operand(self, a) for a in args[1:]]
    with tf.DisableTorchFunction():
        func(self, *rest, **kwargs)
    return self


def _packed_operand(self: NestedTensor, a):
    if isinstance(a, NestedTensor):
        _check_same_structure("in-place", self, a)
        return _alias(a, Tensor)
    return a


def _moved_dim(name: str, first: NestedTensor, args: tuple, kwargs: dict) -> tuple:
    """The call's `dim` counted on the packed values (jagged: minus one) or a component (strided: minus one)."""
    if name not in DIM_OPS and name not in _DIM_POSITION:
        return args, kwargs
    position = _DIM_POSITION.get(name, 1)
    if "dim" in kwargs:
        kwargs = dict(kwargs, dim=_inner_dim(name, first, kwargs["dim"]))
    elif len(args) > position and args[position] is not None and not isinstance(args[position], Tensor):
        args = args[:position] + (_inner_dim(name, first, args[position]),) + args[position + 1:]
    elif name in ("normalize", "chunk", "split"):  # their default dims (1, 0, 0) are not dense dims
        kwargs = dict(kwargs, dim=_inner_dim(name, first, 1 if name == "normalize" else 0))
    return args, kwargs


def _inner_dim(name: str, first: NestedTensor, dim):
    if isinstance(dim, (list, tuple)):
        return type(dim)(_inner_dim(name, first, d) for d in dim)
    d = _wrap(dim, first.dim(), name)
    if d == 0 or first._jagged and (d == first._ragged_idx or d < first._ragged_idx and name not in _KEEP_DIMS):
        # (a reduction before the ragged dim would move it: torch refuses those too)
        raise RuntimeError(f"{name}(): not supported for NestedTensor on dim={d}")
    return d - 1


_KEEP_DIMS = {"softmax", "log_softmax", "cumsum", "cumprod", "normalize", "chunk", "split"}


def _check_same_structure(name: str, a: NestedTensor, b: NestedTensor) -> None:
    if a._jagged != b._jagged:
        raise RuntimeError(f"{name}(): nested tensors of different layouts")
    if a._jagged and (a._ragged is not b._ragged or a._ragged_idx != b._ragged_idx) or \
            not a._jagged and a._nested_sizes != b._nested_sizes:
        shapes = [f"({', '.join(str(s) for s in t.size())})" if t._jagged else str(t._nested_sizes) for t in (a, b)]
        raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of shapes {shapes[0]} and "
                           f"{shapes[1]}")


def _jagged_call(func, name: str, first: NestedTensor, args: tuple, kwargs: dict):
    r = first._ragged_idx
    rows = first._buffer_shape[r - 1]

    def unwrap(a):
        if isinstance(a, NestedTensor):
            _check_same_structure(name, first, a)
            return _alias(a, Tensor)
        if isinstance(a, Tensor) and name not in TRAILING and a.dim() >= first.dim() - first._ragged_idx:
            return _dense_rows(name, first, a)
        return a

    with tf.DisableTorchFunction():
        result = func(*[unwrap(a) for a in args], **{k: unwrap(v) for k, v in kwargs.items()})
    return _nest(result, lambda t: isinstance(t, Tensor) and t.dim() >= r and t.shape[r - 1] == rows,
                 lambda t: rejag(first, t, r))


def _dense_rows(name: str, first: NestedTensor, a: Tensor) -> Tensor:
    """A dense operand broadcast against the packed values: of the values' rank or less when its size along the
    ragged dim is 1; (B, 1, *D) of the tensor's own rank as one row per packed row (ragged dim 1)."""
    n, r = first.dim(), first._ragged_idx
    if a.dim() <= n - 1 and (r == 1 or a.dim() < n - r):  # (torch refuses dense operands reaching a moved ragged dim)
        at = (r - 1) - (n - 1 - a.dim())  # a's dim aligned with the values' ragged dim (negative: none)
        if at < 0 or a.shape[at] == 1:
            return a
    elif r == 1 and a.dim() == n and a.shape[1] == 1 and a.shape[0] in (1, len(first)):
        holes.check_dense_operand(name, first, a)
        lengths = Tensor._from_array(np.diff(first._offsets_list).astype(np.int64))
        rows = a.select(1, 0)
        return rows.expand(len(first), *rows.shape[1:]).repeat_interleave(lengths, dim=0)
    sizes = ", ".join(str(s) for s in first.size())
    raise RuntimeError(f"cannot call binary pointwise function {name} with inputs of shapes ({sizes}) and "
                       f"{tuple(a.shape)}")


_KEEPDIM = {"sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std", "nansum", "nanmean", "norm"}


def _strided_call(func, name: str, first: NestedTensor, args: tuple, kwargs: dict):
    if name in _KEEPDIM and not kwargs.get("keepdim", args[2] if len(args) > 2 and name != "norm" else False):
        raise RuntimeError("NestedTensor always requires keepdim=True for now.")
    parts = {}

    def component(a, k):
        if isinstance(a, NestedTensor):
            if id(a) not in parts:
                if a._nested_sizes != first._nested_sizes:  # (torch's words for a strided pair)
                    raise RuntimeError(f"{name} does not support broadcasting when given a NestedTensor")
                parts[id(a)] = _components(a)
            return parts[id(a)][k]
        return a

    results = []
    for k in range(len(first._nested_sizes)):
        with tf.DisableTorchFunction():
            results.append(func(*[component(a, k) for a in args], **{n: component(v, k) for n, v in kwargs.items()}))
    if all(isinstance(r, Tensor) for r in results):
        with tf.DisableTorchFunction():
            buffer = ops.cat([r.reshape(-1) for r in results])
        return make_strided(buffer, [tuple(r.shape) for r in results])
    return results


def _nest(result, nestable, nest):
    if isinstance(result, (tuple, list)) and not isinstance(result, Tensor):
        items = [nest(r) if nestable(r) else r for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else tuple(items)
    return nest(result) if nestable(result) else result
