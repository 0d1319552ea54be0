"""The products' argument checks: the errors PyTorch raises on the path (dot, mv, mm, bmm, addmm...) a product
takes, with its words, and the shape of a @ b under matmul's rules."""
from __future__ import annotations

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import numel_of
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.factory_args import TYPEMETA_NAME
from ..elementwise.plans import torch_name

# PyTorch's C++ type names, as its mm/baddbmm dtype errors print them (its TypeMeta names).
C_NAMES = TYPEMETA_NAME


# -- argument checks -------------------------------------------------------------------------------
def need_tensor(op: str, arg: str, pos: int, x) -> None:
    """TypeError as PyTorch's argument parser raises it when `x` is not a Tensor."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}(): argument '{arg}' (position {pos}) must be Tensor, not {type(x).__name__}")


def not_bool(kernel: str, d: dt.dtype) -> None:
    """NotImplementedError as PyTorch's for a kernel with no bool version (nor uint16/32/64 or float8 ones: but
    torch multiplies float8 matrices)."""
    if d is dt.bool_ or d in dt.LIMITED and not (d in dt.FLOAT8 and kernel == "addmm_impl_cpu_"):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{d.scalar_name}'")


def check_dot(a: Tensor, b: Tensor) -> None:
    """dot's checks: one dtype, the same length, a dtype its kernel has."""
    if a.dtype is not b.dtype:
        raise RuntimeError(f"dot : expected both vectors to have same dtype, but found {torch_name(a.dtype)} "
                           f"and {torch_name(b.dtype)}")
    n, m = a.shape[0], b.shape[0]
    if n != m:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{n}] and src [{m}] to have the same "
                           f"number of elements, but got {n} and {m} elements respectively")
    not_bool("dot", a.dtype)


def check_mv(rows: int, depth: int, vec_len: int, in_len: int, dtypes: tuple) -> None:
    """Checks of addmv (input, mat, vec); mv passes the vector's dtype as the input's."""
    if depth != vec_len or in_len not in (1, rows):
        raise RuntimeError(f"size mismatch, got input ({in_len}), mat ({rows}x{depth}), vec ({vec_len})")
    if len(set(dtypes)) > 1:
        names = [torch_name(d) for d in dtypes]
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got {names[0]}, {names[1]}, "
                           f"and {names[2]}")
    not_bool("addmv_impl_cpu", dtypes[1])


def check_mm(shape1: tuple, shape2: tuple, d1: dt.dtype, d2: dt.dtype) -> None:
    """mm's checks on the (rows, cols) of its two matrices and their dtypes."""
    if shape1[1] != shape2[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({shape1[0]}x{shape1[1]} and "
                           f"{shape2[0]}x{shape2[1]})")
    if d1 is not d2:
        raise RuntimeError(f"expected m1 and m2 to have the same dtype, but got: {C_NAMES[d1]} != {C_NAMES[d2]}")
    not_bool("addmm_impl_cpu_", d1)


def check_bmm(first: tuple, second: tuple, d1: dt.dtype, d2: dt.dtype, kernel: str = "bmm") -> None:
    """`first`/`second` are (batches, depth) of batch1 and batch2."""
    if first != second:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{first[0]}, {first[1]}] but got: [{second[0]}, {second[1]}].")
    not_bool(kernel, d1)
    if d1 is not d2:
        raise RuntimeError(f"expected scalar type {torch_name(d1)} but found {torch_name(d2)}")


def check_expand(shape: tuple, target: tuple, d: dt.dtype) -> None:
    """PyTorch's errors when `shape` can't be expanded to `target` (the addend of addmm & co.)."""
    if len(shape) > len(target):
        raise RuntimeError(f"expand(torch.{torch_name(d)}Tensor{{{list(shape)}}}, size={list(target)}): the "
                           f"number of sizes provided ({len(target)}) must be greater or equal to the number "
                           f"of dimensions in the tensor ({len(shape)})")
    for j, size in enumerate(shape, start=len(target) - len(shape)):
        if size != 1 and size != target[j]:
            raise RuntimeError(f"The expanded size of the tensor ({target[j]}) must match the existing size "
                               f"({size}) at non-singleton dimension {j}.  Target sizes: {list(target)}.  "
                               f"Tensor sizes: {list(shape)}")


def coef(value, d: dt.dtype) -> int | float | complex:
    """alpha/beta as the scalar type of `d` (PyTorch truncates float coefficients for integer tensors)."""
    if isinstance(value, Tensor):
        value = value.item()
    if d.is_complex:
        return complex(value)
    return int(value) if d.category != dt.FLOAT else float(value)


def matmul_shape(a: Tensor, b: Tensor) -> tuple:
    """The shape of a @ b; raises what PyTorch raises on the path (dot/mv/mm/bmm) it would take."""
    da, db = a.ndim, b.ndim
    if da == 0 or db == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {da}D and {db}D")
    sa, sb = a._v.shape, b._v.shape
    if da == 1 and db == 1:
        check_dot(a, b)
        return ()
    if db == 1:  # matrix @ vector; leading dims of a fold into rows
        rows = numel_of(sa[:-1])
        check_mv(rows, sa[-1], sb[0], rows, (b.dtype, a.dtype, b.dtype))
        return sa[:-1]
    if db == 2:
        if da <= 2:
            check_mm((1 if da == 1 else sa[0], sa[-1]), sb, a.dtype, b.dtype)
        else:  # batch dims of a fold into rows
            check_mm((numel_of(sa[:-1]), sa[-1]), sb, a.dtype, b.dtype)
        return sa[:-1] + sb[-1:]
    batch = broadcast_shapes(sa[:-2], sb[:-2])
    batches = numel_of(batch)
    check_bmm((batches, sa[-1]), (batches, sb[-2]), a.dtype, b.dtype)
    return batch + sa[-2:-1] + sb[-1:]
