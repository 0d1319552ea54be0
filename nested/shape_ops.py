"""Jagged nested-tensor ops that reshape the dense dims, as torch's jagged layout runs them: view/reshape (the batch
and ragged sizes kept, as given or -1), unsqueeze/squeeze, select/narrow of a dense dim, expand, permute, split and
is_same_size. Each runs once on the packed values and nests the result with the same offsets, moving the ragged dim
(`_ragged_idx`) where a dim before it comes or goes; torch's errors where it refuses."""
from __future__ import annotations

from .. import ops
from ..ops.dispatch import torch_function as tf
from ..tensor import Tensor
from .nested_tensor import NestedTensor, _alias, _components, _wrap, rejag
from .nested_tensor import make_strided


def _inner(nt: NestedTensor, dim: int, name: str, n: int | None = None, ragged_ok: bool = False) -> int:
    """An outer dim of `nt` (of `n` dims) as a dim of the packed values; torch's refusals of the batch and ragged
    dims."""
    n = nt.dim() if n is None else n
    d = _wrap(dim, n, "dim")
    if d == nt._ragged_idx and not ragged_ok:
        raise RuntimeError(f"{name}(): not supported for NestedTensor on ragged dim")
    if d == 0:
        raise RuntimeError(f"{name}(): not supported for NestedTensor on dim=0")
    return d - 1


def _values(nt: NestedTensor) -> Tensor:
    return _alias(nt, Tensor)


def _run(method: str, nt: NestedTensor, *args):
    with tf.DisableTorchFunction():
        return getattr(_values(nt), method)(*args)


def _sizes(args: tuple, kwargs: dict, key: str = "size") -> list:
    size = args[1:] if len(args) > 1 else (kwargs.get(key, kwargs.get("shape")),)
    if len(size) == 1 and isinstance(size[0], (list, tuple)):
        size = size[0]
    return list(size)


def _shape(nt: NestedTensor) -> str:
    return "(" + ", ".join(str(s) for s in nt.size()) + ")"


def _ragged_matches(nt: NestedTensor, size: list) -> bool:
    outer = list(nt.size())[:nt._ragged_idx + 1]
    given = size[:nt._ragged_idx + 1]
    return len(outer) == len(given) and all(s == -1 or s is o or s == o for o, s in zip(outer, given))


def view(func, args: tuple, kwargs: dict):
    """nt.view(*size) / nt.reshape(*size): the values viewed with the dense sizes; batch and ragged kept."""
    nt, size = args[0], _sizes(args, kwargs)
    name = "view"
    if nt._ragged_idx != 1 and not (len(size) == nt.dim() and all(s is o or s == o for o, s in zip(nt.size(), size))):
        raise RuntimeError(f"{name}(): does not support ragged_idx != 1 except when inp._size == size. inp._size is "
                           f"({_shape(nt)}) and size is ({size}).")
    if len(size) < 3 or not _ragged_matches(nt, size):
        raise RuntimeError(f"{name}(): cannot view shape {_shape(nt)} as {size}")
    r = nt._ragged_idx
    inner = [nt._buffer_shape[i] if i == r - 1 else size[i + 1] for i in range(len(size) - 1)]
    return rejag(nt, _run("view", nt, inner), r)


def unsqueeze(func, args: tuple, kwargs: dict):
    """nt.unsqueeze(dim) of a dim after the batch dim (the ragged dim moves right when it comes before it)."""
    nt, dim = args[0], args[1] if len(args) > 1 else kwargs["dim"]
    d = _inner(nt, dim, "unsqueeze", nt.dim() + 1, ragged_ok=True)
    r = nt._ragged_idx + 1 if d <= nt._ragged_idx - 1 else nt._ragged_idx
    return rejag(nt, _run("unsqueeze", nt, d), r)


def squeeze(func, args: tuple, kwargs: dict):
    """nt.squeeze(dim) of a dense dim."""
    nt = args[0]
    dim = args[1] if len(args) > 1 else kwargs.get("dim")
    if dim is None or isinstance(dim, (list, tuple)):
        raise RuntimeError("squeeze(): For nested tensors, squeeze without the dim argument is not supported")
    d = _inner(nt, dim, "squeeze")
    values = _run("squeeze", nt, d)
    r = nt._ragged_idx - 1 if values.dim() < len(nt._buffer_shape) and d < nt._ragged_idx - 1 else nt._ragged_idx
    return rejag(nt, values, r)


def select(func, args: tuple, kwargs: dict):
    """nt.select(dim, index): a component for dim 0, else a dense dim selected on the values."""
    nt = args[0]
    dim = args[1] if len(args) > 1 else kwargs["dim"]
    index = args[2] if len(args) > 2 else kwargs["index"]
    if _wrap(dim, nt.dim(), "dim") == 0:
        return _components(nt)[index]
    d = _inner(nt, dim, "select")
    r = nt._ragged_idx - 1 if d < nt._ragged_idx - 1 else nt._ragged_idx
    return rejag(nt, _run("select", nt, d, index), r)


def narrow(func, args: tuple, kwargs: dict):
    """nt.narrow(dim, start, length) of a dense dim."""
    nt = args[0]
    dim, start, length = list(args[1:]) + [kwargs[k] for k in ("dim", "start", "length")[len(args) - 1:]]
    d = _wrap(dim, nt.dim(), "dim")
    if d == nt._ragged_idx:
        raise RuntimeError("narrow(): not supported for NestedTensor on ragged dim")
    if d == 0:
        raise RuntimeError("narrow(): not supported for NestedTensor on dim=0")
    return rejag(nt, _run("narrow", nt, d - 1, start, length))


def strided_narrow(func, args: tuple, kwargs: dict):
    """nt.narrow(0, start, length) of a strided nested tensor: the components start .. start + length - 1 (a copy)."""
    nt = args[0]
    dim, start, length = list(args[1:]) + [kwargs[k] for k in ("dim", "start", "length")[len(args) - 1:]]
    if dim != 0:
        raise RuntimeError(f"narrow(): only dim=0 supported for nested tensors, but got: {dim}")
    n = len(nt)
    start = start + n if start < 0 else start
    if not 0 <= start <= n or length < 0 or start + length > n:
        raise IndexError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    parts = _components(nt)[start:start + length]
    with tf.DisableTorchFunction():
        buffer = ops.cat([p.reshape(-1) for p in parts]) if parts else _values(nt)[:0]
    return make_strided(buffer, [tuple(p.shape) for p in parts])


def expand(func, args: tuple, kwargs: dict):
    """nt.expand(*size): dense dims of size 1 expanded; batch and ragged sizes kept (given or -1)."""
    nt, size = args[0], _sizes(args, kwargs)
    if not _ragged_matches(nt, size):
        raise RuntimeError(f"expand(): cannot expand shape {_shape(nt)} -> {size}")
    inner = [-1 if d == nt._ragged_idx else size[d] for d in range(1, nt.dim())]
    return rejag(nt, _run("expand", nt, inner))


def permute(func, args: tuple, kwargs: dict):
    """nt.permute(*dims) keeping the batch dim first; the ragged dim goes where the order puts it."""
    nt, dims = args[0], _sizes(args, kwargs, "dims")
    n = nt.dim()
    if n != len(dims):
        raise ValueError(f"permute(): number of dimensions in the tensor input ({n}) does not match the length of the "
                         f"desired ordering of dimensions ({len(dims)}).")
    dims = [_wrap(d, n, "dim") for d in dims]
    if len(set(dims)) != len(dims):
        raise ValueError("permute(): duplicate dims are not allowed.")
    if dims[0] != 0:
        raise ValueError("Permute is not supported on the batch dimension for jagged NT")
    r = nt._ragged_idx
    inner = [r - 1 if d == 0 else d - 1 for d in dims[1:]]
    return rejag(nt, _run("permute", nt, inner), dims.index(r))


def split(func, args: tuple, kwargs: dict):
    """nt.split(size_or_sizes, dim) along a dense dim: nested pieces with the same offsets."""
    nt = args[0]
    sizes = args[1] if len(args) > 1 else kwargs.get("split_size_or_sections", kwargs.get("split_size"))
    dim = args[2] if len(args) > 2 else kwargs.get("dim", 0)
    name = "split_with_sizes" if isinstance(sizes, (list, tuple)) else "split"
    d = _inner(nt, dim, name)
    pieces = _run("split", nt, sizes, d)
    out = [rejag(nt, p) for p in pieces]
    return out if name == "split_with_sizes" else tuple(out)


def is_same_size(func, args: tuple, kwargs: dict) -> bool:
    """Whether both nested tensors have the same sizes (the ragged size is the same one: same offsets)."""
    a, b = args[0], args[1] if len(args) > 1 else kwargs["other"]
    if not isinstance(b, NestedTensor) or not b._jagged:
        return False
    return len(a.size()) == len(b.size()) and all(x is y or x == y for x, y in zip(a.size(), b.size()))


OPS = {"view": view, "reshape": view, "reshape_method": view, "unsqueeze": unsqueeze, "squeeze": squeeze,
       "select": select, "narrow": narrow, "expand": expand, "permute": permute, "split": split,
       "split_method": split, "split_with_sizes": split, "is_same_size": is_same_size}
