"""Arguments of the shape ops: ints, dims, sizes and shapes parsed as PyTorch does, with its errors.

Also `exporter`, the decorator that views, shape_ops and splits use to publish their functions, and the
checks that an argument is a Tensor or a list of them.
"""
from __future__ import annotations

import operator

from ...tensor import Tensor


def exporter(names: list, methods: dict, namespace: dict):
    """A decorator registering a function as `tidal.<name>` (into `names`) and/or a Tensor method."""
    def public(fn=None, *, method: bool = True, function: bool = True, aliases: tuple = ()):
        def deco(f):
            for name in (f.__name__,) + aliases:
                if function:
                    names.append(name)
                    namespace[name] = f
                if method:
                    methods[name] = f
            return f
        return deco(fn) if fn is not None else deco
    return public


def as_int(value, op: str, arg: str) -> int:
    """`value` as a Python int (ints, NumPy ints, one-element integer tensors); TypeError otherwise."""
    if isinstance(value, bool) or isinstance(value, float):
        raise TypeError(f"{op}(): argument '{arg}' must be int, not {type(value).__name__}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{op}(): argument '{arg}' must be int, not {type(value).__name__}") from None


def wrap_dim(dim, ndim: int, op: str = "dim", arg: str = "dim") -> int:
    """`dim` wrapped into [0, ndim); IndexError as PyTorch's when out of range (0-d allows -1 and 0)."""
    if dim.__class__ is int and ndim and -ndim <= dim < ndim:  # (the usual case, first)
        return dim + ndim if dim < 0 else dim
    dim = as_int(dim, op, arg)
    lo, hi = (-ndim, ndim - 1) if ndim else (-1, 0)
    if dim < lo or dim > hi:
        raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
    return dim + max(ndim, 1) if dim < 0 else dim


def size_args(op: str, args: tuple, arg: str = "size") -> tuple:
    """The ints of `f(2, 3)`, `f((2, 3))` or `f([2, 3])`; TypeError naming the bad element."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    out = []
    for k, s in enumerate(args):
        if isinstance(s, (bool, float)) or not hasattr(s, "__index__"):
            raise TypeError(f"{op}(): argument '{arg}' must be tuple of ints, but found element of type "
                            f"{type(s).__name__} at pos {k}")
        out.append(operator.index(s))
    return tuple(out)


def dims_arg(dims, ndim: int, op: str, arg: str = "dims") -> tuple:
    """An int or a sequence of dims, wrapped; RuntimeError when one repeats."""
    dims = (dims,) if not isinstance(dims, (tuple, list)) else tuple(dims)
    out = tuple(wrap_dim(d, ndim, op, arg) for d in dims)
    seen = set()
    for d in out:
        if d in seen:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        seen.add(d)
    return out


def infer_size(shape: tuple, numel: int) -> tuple:
    """`shape` with its one -1 resolved so that it holds `numel` elements."""
    infer, known = None, 1
    for k, s in enumerate(shape):
        if s == -1:
            if infer is not None:
                raise RuntimeError("only one dimension can be inferred")
            infer = k
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {k} of shape {list(shape)}")
        else:
            known *= s
    if infer is None:
        if numel == known:
            return tuple(shape)
    elif known and numel % known == 0:
        return shape[:infer] + (numel // known,) + shape[infer + 1:]
    elif not known and not numel:
        raise RuntimeError(f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                           "unspecified dimension size -1 can be any value and is ambiguous")
    raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")


def need_tensor(op: str, arg: str, pos: int, x) -> None:
    """torch's TypeError when argument `arg` (at `pos`) of `op` is not a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")


def tensor_list(op: str, tensors: tuple) -> list:
    """`f(a, b)` and `f([a, b])` both work, as in torch."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    for t in tensors:
        need_tensor(op, "tensors", 1, t)
    return list(tensors)
