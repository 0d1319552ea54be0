"""Products of tensors: matmul and its BLAS family, dot products, tensordot, einsum, trace, kron, cross.

Every matrix product is one primitive record, "matmul" (its kernel in ops/linalg/product_kernels.py):
`beta * c + alpha * (a @ b)` with NumPy's broadcasting rules; each front end names the node torch records.
Checks (ops/linalg/product_checks.py) follow the path PyTorch's matmul takes (dot, mv, mm or bmm), so the
error a user sees names the same shapes and dtypes torch's would. They share one backward too: the
gradient of a @ b is g @ b^T and a^T @ g, with 1-D operands seen as a row (a) or a column (b);
the engine sums broadcast batch dims. tensordot and inner are einsums (their gradient is einsum's);
outer and kron are views and a product, differentiable through those.
"""
from __future__ import annotations

import string
import warnings

import numpy as np

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import VersionCounter, numel_of
from .product_checks import (C_NAMES, check_bmm, check_dot, check_expand, check_mm, check_mv, coef, matmul_shape,
                             need_tensor, not_bool)
from ..dispatch import autocast as _ac
from ..elementwise import arithmetic as M, copies
from .product_kernels import cross_kernel, matmul_kernel, trace_kernel
from ..movement import views
from ..dispatch.broadcast import broadcast_shapes
from ..factories.creation import eye
from ..dispatch.operator_operands import operand_not_implemented
from ..dispatch.primitive import Primitive
from .einsum_equation import contract, einsum
from ..dispatch.node_names import torch_node
from ..dispatch.user_frame import user_stacklevel
from ..elementwise.plans import check_leaf_inplace, torch_name
from ..indexing.scatter import check_out_grad, wants
from ..dispatch.mem_overlap import INTERNAL, has_internal_overlap

__all__ = ["matmul", "mm", "bmm", "mv", "addmm", "addmv", "addbmm", "baddbmm", "dot", "vdot", "inner",
           "outer", "ger", "tensordot", "einsum", "trace", "kron", "cross"]
METHODS: dict = {}


# -- gradients -----------------------------------------------------------------------------------
def _mT(x: Tensor) -> Tensor:
    return views.transpose(x, -1, -2)


def _is_transposed(m: Tensor) -> bool:
    """Whether a matrix is laid out column by column (the transpose of a contiguous one)."""
    if m.ndim != 2:
        return False
    rows, cols = m._v.shape
    return m._v.strides == (1, rows) and rows > 1 and cols > 1


def _product_grads(g: Tensor, a: Tensor, b: Tensor, nda: int, ndb: int, want_a: bool, want_b: bool,
                   b_transposed: bool = False) -> tuple:
    """Gradients of a @ b (matmul's rules) for the upstream `g`, possibly batch-broadcast (the engine sums)."""
    if nda == 1 and ndb == 1:
        return (g * b if want_a else None), (g * a if want_b else None)
    # a 1-D `a` is a row (1, k) and a 1-D `b` a column (k, 1): their dim is back in g, then gone again
    if nda == 1:
        g = views.unsqueeze(g, -2)
    if ndb == 1:
        g = views.unsqueeze(g, -1)
    grad_a = grad_b = None
    if want_a:
        grad_a = matmul(g, _mT(b) if ndb > 1 else views.unsqueeze(b, 0))
        if nda == 1:
            grad_a = views.squeeze(grad_a, -2)
    if want_b:
        if b_transposed and nda >= 2:
            # b is a transposed matrix (linear's weight.t()): (g^T a)^T has b's layout, so the
            # gradient reaching the weight through t() is contiguous, as the weight is
            rows = numel_of(a._v.shape[:-1])
            grad_b = _mT(matmul(_mT(views.reshape(g, (rows, g.shape[-1]))), views.reshape(a, (rows, a.shape[-1]))))
        elif nda > 2 and ndb <= 2:  # fold a's batch dims into rows: one product, nothing left to sum
            rows = numel_of(a._v.shape[:-1])
            grad_b = matmul(_mT(views.reshape(a, (rows, a.shape[-1]))), views.reshape(g, (rows, g.shape[-1])))
        else:
            grad_b = matmul(_mT(views.unsqueeze(a, 0) if nda == 1 else a), g)
        if ndb == 1:
            grad_b = views.squeeze(grad_b, -1)
    return grad_a, grad_b


def _scaled(g: Tensor | None, factor) -> Tensor | None:
    return g if g is None or factor == 1 else g * factor


def _product_backward(node, g):
    """Backward of the "matmul" record: inputs (a, b[, addend]), out = beta * addend + alpha * (a @ b)."""
    a, b = node.saved_tensors
    nda, ndb, alpha, beta, b_transposed = node.attrs
    grad_a, grad_b = _product_grads(g, a, b, nda, ndb, wants(node, 0), wants(node, 1), b_transposed)
    grads = (_scaled(grad_a, alpha), _scaled(grad_b, alpha))
    if len(node.next_functions) == 3:
        grads += (_scaled(g, beta) if wants(node, 2) else None,)
    return grads


# The "matmul" record's attrs, a plain tuple (built on every product: a NamedTuple's constructor costs 0.4 us):
# (alpha, beta, sum_batches, shape, dtype): the kernel reads the first three (out = beta * addend + alpha * (a @ b),
# addbmm's batch of products summed into one matrix), the shape rule the output's shape and dtype.
def _product_shapes(inputs: tuple, attrs: tuple) -> list:
    return [(attrs[3], attrs[4])]  # (each front end checks its operands as torch's path does)


def _saved_operands(inputs: tuple, outs) -> tuple:
    """Each operand saved for the other's gradient only, as torch saves them (products and cross)."""
    a, b = inputs[0], inputs[1]
    return a if b._requires_grad else None, b if a._requires_grad else None


def _product_node(inputs: tuple, attrs: tuple) -> tuple:
    """What the backward reads: the operands' ranks, alpha, beta, and whether b is a transposed matrix."""
    a, b = inputs[0], inputs[1]
    return len(a._v.shape), len(b._v.shape), attrs[0], attrs[1], b._requires_grad and _is_transposed(b)


def _cross_backward(node, g):
    # complex: each gradient takes the other factor conjugated (torch's convention)
    a, b = (None if t is None else t.conj() for t in node.saved_tensors)
    return (linalg_cross(b, g, dim=node.attrs) if wants(node, 0) else None,
            linalg_cross(g, a, dim=node.attrs) if wants(node, 1) else None)


def _trace_shapes(inputs: tuple, attrs) -> list:
    x = inputs[0]
    if x.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {x.ndim}")
    not_bool("trace", x.dtype)
    return [((), x.dtype if x.dtype.is_floating_point else dt.int64)]  # (complex dtypes count as floating)


def _trace_backward(node, g):
    rows, cols = node.attrs
    return (g * eye(rows, cols, dtype=g.dtype, device=g.device),)


# -- public functions -------------------------------------------------------------------------------
# the products whose written-to tensor torch checks for internal overlap (an expanded one), by node: out= and in place
# (bmm, mv, matmul's batched and vector paths, addmv_ and baddbmm_ are not checked: torch runs them)
_OUT_CHECKED = frozenset(("mm", "addmm", "addmv", "addbmm", "baddbmm"))
_INPLACE_CHECKED = frozenset(("addmm", "addbmm"))


def _product(ins: tuple, shape: tuple, d: dt.dtype, node: str, out: Tensor | None, alpha=1, beta=0,
             sum_batches: bool = False, inplace: bool = False, op: str | None = None) -> Tensor:
    """The "matmul" record (node `node`) into a new tensor, or into `out` (resized as PyTorch resizes outputs);
    `op`: the public name out='s error names, if not the node's."""
    attrs = (alpha, beta, sum_batches, shape, d)
    if out is None:
        return PRODUCT(ins, attrs, node)
    if node in (_INPLACE_CHECKED if inplace else _OUT_CHECKED) and has_internal_overlap(out):
        raise RuntimeError(INTERNAL)
    return _into(PRODUCT, op or node, ins, attrs, shape, d, out, inplace)


def _into(rec: Primitive, op: str, ins: tuple, attrs, shape: tuple, d: dt.dtype, out: Tensor,
          inplace: bool = False) -> Tensor:
    """`rec` written into `out=` (checked and resized), or in place into the addend `out` (node `op`)."""
    if not inplace:
        check_out_grad(op, out, ins)
        rec.write(ins, (_resized(out, shape, d),), attrs)
        return out
    if tuple(out._v.shape) != shape:
        raise RuntimeError(f"output with shape {list(out._v.shape)} doesn't match the broadcast shape "
                           f"{list(shape)}")
    if needs_grad(ins):
        check_leaf_inplace(out)
    # recorded before the write, so an operand that is `out` itself is caught as modified
    rec.write(ins, (out,), attrs, node=op, record_first=True)
    return out


# The node PyTorch's matmul records on each of its paths (others: its batched path's views).
_MATMUL_NODES = {(1, 1): "dot", (2, 1): "mv", (2, 2): "mm"}
# ...and the last node torch's matmul leaves on the others: the view (or squeeze, clone) after its mm/bmm
_MATMUL_LAST = {(1, 2): "SqueezeBackward4", (2, 3): "CloneBackward0"}


def matmul(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix product with PyTorch's 1-D and batched broadcasting rules."""
    need_tensor("matmul", "input", 1, input)
    need_tensor("matmul", "other", 2, other)
    if _ac.ACTIVE[0] and out is None:
        input, other = _ac.lower(input, other)
    ranks = (input.ndim, other.ndim)
    node = _MATMUL_NODES.get(ranks, "matmul")
    result = _product((input, other), matmul_shape(input, other), input.dtype, node, out, op="matmul")
    if node != "matmul" or out is not None or result.grad_fn is None:
        return result
    return torch_node(result, _MATMUL_LAST.get(ranks, "_unsafe_view"), input, other)


def mm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Product of two matrices."""
    need_tensor("mm", "input", 1, input)
    need_tensor("mm", "mat2", 2, mat2)
    if _ac.ACTIVE[0] and out is None:
        input, mat2 = _ac.lower(input, mat2)
    if input.ndim != 2:
        raise RuntimeError("self must be a matrix")
    if mat2.ndim != 2:
        raise RuntimeError("mat2 must be a matrix")
    check_mm(input._v.shape, mat2._v.shape, input.dtype, mat2.dtype)
    return _product((input, mat2), (input.shape[0], mat2.shape[1]), input.dtype, "mm", out)


def _check_batches(b1: Tensor, b2: Tensor) -> None:
    if b1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if b2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")


def bmm(input: Tensor, mat2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Batched product of 3-D tensors, (b,n,k) @ (b,k,m)."""
    need_tensor("bmm", "input", 1, input)
    need_tensor("bmm", "mat2", 2, mat2)
    if _ac.ACTIVE[0] and out is None:
        input, mat2 = _ac.lower(input, mat2)
    _check_batches(input, mat2)
    (batches, rows, depth), sb = input._v.shape, mat2._v.shape
    check_bmm((batches, depth), sb[:2], input.dtype, mat2.dtype)
    return _product((input, mat2), (batches, rows, sb[2]), input.dtype, "bmm", out)


def _check_mv_ranks(input_ndim: int, mat: Tensor, vec: Tensor) -> None:
    if input_ndim > 1 or mat.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input_ndim}, {mat.ndim}, {vec.ndim}")


def mv(input: Tensor, vec: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Matrix-vector product."""
    need_tensor("mv", "input", 1, input)
    need_tensor("mv", "vec", 2, vec)
    _check_mv_ranks(1, input, vec)
    rows, depth = input._v.shape
    check_mv(rows, depth, vec.shape[0], rows, (vec.dtype, input.dtype, vec.dtype))
    return _product((input, vec), (rows,), input.dtype, "mv", out)


def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta=1, alpha=1, out: Tensor | None = None,
          _inplace: bool = False) -> Tensor:
    """beta * input + alpha * (mat1 @ mat2); input broadcasts to the product's shape."""
    for pos, (arg, t) in enumerate((("input", input), ("mat1", mat1), ("mat2", mat2)), start=1):
        need_tensor("addmm", arg, pos, t)
    if _ac.ACTIVE[0] and out is None and not _inplace:
        input, mat1, mat2 = _ac.lower(input, mat1, mat2)
    for arg, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2:
            raise RuntimeError(f"{arg} must be a matrix, got {t.ndim}-D tensor")
    for first, d in (("self", input.dtype), ("mat1", mat1.dtype)):
        if d is not mat2.dtype:
            raise RuntimeError(f"{first} and mat2 must have the same dtype, but got {torch_name(d)} and "
                               f"{torch_name(mat2.dtype)}")
    check_mm(mat1._v.shape, mat2._v.shape, mat1.dtype, mat2.dtype)
    shape = (mat1.shape[0], mat2.shape[1])
    check_expand(input._v.shape, shape, input.dtype)
    return _add_product("addmm", mat1, mat2, input, shape, alpha, beta, out, _inplace)


def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta=1, alpha=1, out: Tensor | None = None,
          _inplace: bool = False) -> Tensor:
    """beta * input + alpha * (mat @ vec)."""
    for pos, (arg, t) in enumerate((("input", input), ("mat", mat), ("vec", vec)), start=1):
        need_tensor("addmv", arg, pos, t)
    _check_mv_ranks(input.ndim, mat, vec)
    rows, depth = mat._v.shape
    check_mv(rows, depth, vec.shape[0], input.numel() if input.ndim else 1,
              (input.dtype, mat.dtype, vec.dtype))
    return _add_product("addmv", mat, vec, input, (rows,), alpha, beta, out, _inplace)


def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out: Tensor | None = None,
           _inplace: bool = False) -> Tensor:
    """beta * input + alpha * sum over the batch of batch1[i] @ batch2[i]."""
    for pos, (arg, t) in enumerate((("input", input), ("batch1", batch1), ("batch2", batch2)), start=1):
        need_tensor("addbmm", arg, pos, t)
    if _ac.ACTIVE[0] and out is None and not _inplace:
        input, batch1, batch2 = _ac.lower(input, batch1, batch2)
    _check_batches(batch1, batch2)
    (n1, rows, depth), (n2, depth2, cols) = batch1._v.shape, batch2._v.shape
    if n1 != n2:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got {n1} and {n2}")
    if depth != depth2:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({rows}x{depth} and {depth2}x{cols})")
    check_expand(input._v.shape, (rows, cols), input.dtype)
    for first, d in (("self", input.dtype), ("mat1", batch1.dtype)):
        if d is not batch2.dtype:
            raise RuntimeError(f"{first} and mat2 must have the same dtype, but got {torch_name(d)} and "
                               f"{torch_name(batch2.dtype)}")
    not_bool("addmm_impl_cpu_", input.dtype)
    return _add_product("addbmm", batch1, batch2, input, (rows, cols), alpha, beta, out, _inplace,
                        sum_batches=True)


def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta=1, alpha=1, out: Tensor | None = None,
            _inplace: bool = False) -> Tensor:
    """beta * input + alpha * bmm(batch1, batch2); input broadcasts to (b, n, m)."""
    for pos, (arg, t) in enumerate((("input", input), ("batch1", batch1), ("batch2", batch2)), start=1):
        need_tensor("baddbmm", arg, pos, t)
    if _ac.ACTIVE[0] and out is None and not _inplace:
        input, batch1, batch2 = _ac.lower(input, batch1, batch2)
    _check_batches(batch1, batch2)
    (batches, rows, depth), sb = batch1._v.shape, batch2._v.shape
    if input.dtype is not batch1.dtype or input.dtype is not batch2.dtype:
        if input.dtype is not batch1.dtype or batch1.dtype is batch2.dtype:
            raise RuntimeError(f"Input dtypes must be the same, got: input {C_NAMES[input.dtype]}, batch1: "
                               f"{C_NAMES[batch1.dtype]}, batch2: {C_NAMES[batch2.dtype]}")
    check_bmm((batches, depth), sb[:2], batch1.dtype, batch2.dtype, kernel="baddbmm")
    shape = (batches, rows, sb[2])
    check_expand(input._v.shape, shape, input.dtype)
    return _add_product("baddbmm", batch1, batch2, input, shape, alpha, beta, out, _inplace)


def _add_product(op: str, a: Tensor, b: Tensor, input: Tensor, shape: tuple, alpha, beta, out: Tensor | None,
                 inplace: bool, sum_batches: bool = False) -> Tensor:
    """beta * input + alpha * (a @ b) (summed over the batch with `sum_batches`), checks done."""
    d = input.dtype
    alpha, beta = coef(alpha, d), coef(beta, d)
    return _product((a, b, input), shape, d, op, out, alpha, beta, sum_batches, inplace)


def _inplace(fn):
    import inspect
    first, second = list(inspect.signature(fn).parameters)[1:3]  # torch's names: mat1/mat2, mat/vec, batch1/batch2

    def method(self: Tensor, *args, beta=1, alpha=1, **operands) -> Tensor:
        named = [operands.pop(first, None), operands.pop(second, None)]
        if operands:
            raise TypeError(f"{fn.__name__}_() got an unexpected keyword argument '{next(iter(operands))}'")
        a, b = (list(args) + [v for v in named if v is not None] + [None, None])[:2]
        return fn(self, a, b, beta=beta, alpha=alpha, out=self, _inplace=True)
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place {fn.__name__}."
    return method


def dot(input: Tensor, tensor: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inner product of two 1-D tensors of the same dtype."""
    need_tensor("dot", "input", 1, input)
    need_tensor("dot", "tensor", 2, tensor)
    return _dot("dot", input, tensor, out)


def _dot(op: str, a: Tensor, b: Tensor, out: Tensor | None) -> Tensor:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")
    check_dot(a, b)
    return _product((a, b), (), a.dtype, op, out)


def vdot(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """dot with the first argument conjugated (the same as dot for real dtypes)."""
    need_tensor("vdot", "input", 1, input)
    need_tensor("vdot", "other", 2, other)
    if input.dtype is dt.complex32:
        not_bool("vdot", input.dtype)
    if input.dtype.is_complex and input.ndim == 1:  # (a conj view: the product reads its conjugated values)
        input = input.conj()
    return _dot("vdot", input, other, out)


def _tensordot(a: Tensor, b: Tensor, dims_a: list, dims_b: list, out: Tensor | None = None) -> Tensor:
    """Contract wrapped dims `dims_a` of a with `dims_b` of b (sizes already checked), as an einsum."""
    if _ac.ACTIVE[0] and out is None:  # torch's tensordot (and inner) is a mm: autocast lowers it
        a, b = _ac.lower(a, b)
    if a.dtype is not b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    not_bool("addmm_impl_cpu_", a.dtype)
    letters = iter(string.ascii_letters)
    term_a = [next(letters) for _ in range(a.ndim)]
    term_b = [term_a[dims_a[dims_b.index(i)]] if i in dims_b else next(letters) for i in range(b.ndim)]
    free = [t for i, t in enumerate(term_a) if i not in dims_a] + [t for i, t in enumerate(term_b)
                                                                    if i not in dims_b]
    shape = tuple(s for i, s in enumerate(a._v.shape) if i not in dims_a) + \
        tuple(s for i, s in enumerate(b._v.shape) if i not in dims_b)
    result = contract([a, b], [term_a, term_b], free, shape, a.dtype)
    return result if out is None else copies.copy_(_resized(out, shape, result.dtype), result)


def inner(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Sum of products over the last dimension of both; a 0-d argument multiplies."""
    need_tensor("inner", "input", 1, input)
    need_tensor("inner", "other", 2, other)
    if input.ndim == 0 or other.ndim == 0:
        return M.mul(input, other, out=out)
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    return _tensordot(input, other, [input.ndim - 1], [other.ndim - 1], out)


def outer(input: Tensor, vec2: Tensor, *, out: Tensor | None = None) -> Tensor:
    """input[i] * vec2[j] for 1-D tensors, with type promotion."""
    need_tensor("outer", "input", 1, input)
    need_tensor("outer", "vec2", 2, vec2)
    for arg, t in (("self", input), ("vec2", vec2)):
        if t.ndim != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {arg}, but got {t.ndim}-D")
    check_out_grad("mul", out, (input, vec2))  # as PyTorch, whose outer is a mul
    return M.mul(views.unsqueeze(input, 1), vec2, out=out)


ger = outer


def tensordot(a: Tensor, b: Tensor, dims=2, out: Tensor | None = None) -> Tensor:
    """Contract the last `dims` dims of a with the first of b, or the listed pairs ([dims_a], [dims_b])."""
    need_tensor("tensordot", "a", 1, a)
    need_tensor("tensordot", "b", 2, b)
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, (int, np.integer)):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > a.ndim or dims > b.ndim:
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        given_a, given_b = list(range(-dims, 0)), list(range(dims))
    else:
        given_a, given_b = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(given_a) != len(given_b):
            raise RuntimeError("both dimension lists should have same length")
    dims_a = [a._dim(d, "tensordot") for d in given_a]
    dims_b = [b._dim(d, "tensordot") for d in given_b]
    for wrapped in (dims_a, dims_b):
        for d in wrapped:
            if wrapped.count(d) > 1:
                raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    for da, db, ga, gb in zip(dims_a, dims_b, given_a, given_b):
        sa, sb = a.shape[da], b.shape[db]
        if sa != sb and sa != 1 and sb != 1:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {sa} in dim {ga} and "
                               f"second has size {sb} in dim {gb}")
    return _tensordot(a, b, dims_a, dims_b, out)


def trace(input: Tensor) -> Tensor:
    """Sum of the main diagonal of a matrix (integers sum to int64)."""
    need_tensor("trace", "input", 1, input)
    if input.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input.ndim}")
    return TRACE((input,))


def kron(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Kronecker product: input's blocks scaled copies of other (dims padded with leading 1s)."""
    need_tensor("kron", "input", 1, input)
    need_tensor("kron", "other", 2, other)
    ndim = max(input.ndim, other.ndim, 1)  # as PyTorch: two 0-d tensors give shape (1,)
    sa = (1,) * (ndim - input.ndim) + input._v.shape
    sb = (1,) * (ndim - other.ndim) + other._v.shape
    check_out_grad("mul", out, (input, other))  # as PyTorch, whose kron is a mul
    # interleave: a as (a0, 1, a1, 1, ...) and b as (1, b0, 1, b1, ...); their product is (a0, b0, a1, b1, ...)
    spread_a = views.reshape(input, sum(((s, 1) for s in sa), ()))
    spread_b = views.reshape(other, sum(((1, s) for s in sb), ()))
    # torch's are _unsafe_view: counters of their own, so the product's saved operands do not see a later write
    # into input or other (torch's backward runs then)
    spread_a._vc, spread_b._vc = VersionCounter(), VersionCounter()
    shape = tuple(x * y for x, y in zip(sa, sb))
    result = torch_node(views.reshape(M.mul(spread_a, spread_b), shape), "_unsafe_view")
    return result if out is None else copies.copy_(_resized(out, shape, result.dtype), result)


def _resized(out: Tensor, shape: tuple, d: dt.dtype) -> Tensor:
    """`out` checked for dtype `d` and given `shape` (a fresh blob, as torch's resize_ of an out= tensor)."""
    if out.dtype is not d:
        raise RuntimeError(f"Expected out tensor to have dtype {C_NAMES[d]}, but got {C_NAMES[out.dtype]} instead")
    if tuple(out._v.shape) != shape:
        out._v = Tensor._empty(shape, d, out.device)._v
    return out


def cross(input: Tensor, other: Tensor, dim: int | None = None, *, out: Tensor | None = None) -> Tensor:
    """3-D cross product along `dim` (default: the first dimension of size 3)."""
    need_tensor("cross", "input", 1, input)
    need_tensor("cross", "other", 2, other)
    if dim is None and input.ndim == other.ndim:
        ns = dt.repr_namespace[0]
        warnings.warn(f"Using {ns}.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      f"explicitly or simply use {ns}.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=user_stacklevel())
        shape = broadcast_shapes(input._v.shape, other._v.shape)
        dim = next((i for i, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return linalg_cross(input, other, dim=dim, out=out)


def linalg_cross(input: Tensor, other: Tensor, *, dim: int = -1, out: Tensor | None = None) -> Tensor:
    """torch.linalg.cross: the cross product along `dim` (default -1), inputs broadcast."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    if input.ndim == 0:  # (a 0-d tensor wraps -1 and 0, but has no dim to take)
        raise IndexError(f"linalg.cross: Dimension specified as {dim} but tensor has no dimensions")
    axis = input._dim(dim, "cross")
    if input.shape[axis] != 3 or other.shape[axis] != 3:  # (torch checks the lengths before broadcasting)
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{input.shape[axis]} and {other.shape[axis]}")
    shape = broadcast_shapes(input._v.shape, other._v.shape)
    not_bool("cross", input.dtype)
    if input.dtype is not other.dtype:
        raise RuntimeError(f"expected scalar type {torch_name(input.dtype)} but found {torch_name(other.dtype)}")
    if out is None:
        return CROSS((input, other), axis, "linalg_cross")
    if has_internal_overlap(out):
        raise RuntimeError(INTERNAL)
    return _into(CROSS, "linalg_cross", (input, other), axis, shape, input.dtype, out)


def _rmatmul(self: Tensor, other) -> Tensor:
    return matmul(other, self)


# -- the records -------------------------------------------------------------------------------------
PRODUCT = Primitive("matmul", _product_shapes, cpu=matmul_kernel, cuda=None, backward=_product_backward,
                    saved=_saved_operands, node_attrs=_product_node, sbp="matmul")
TRACE = Primitive("trace", _trace_shapes, cpu=trace_kernel, cuda=None, backward=_trace_backward,
                  node_attrs=lambda inputs, attrs: inputs[0]._v.shape)
CROSS = Primitive("cross", lambda inputs, axis: [(broadcast_shapes(inputs[0]._v.shape, inputs[1]._v.shape),
                                                   inputs[0].dtype)],
                  cpu=cross_kernel, cuda=None, backward=_cross_backward, saved=_saved_operands)

METHODS.update(matmul=matmul, mm=mm, bmm=bmm, mv=mv, addmm=addmm, addmm_=_inplace(addmm), addmv=addmv,
               addmv_=_inplace(addmv), addbmm=addbmm, addbmm_=_inplace(addbmm), baddbmm=baddbmm,
               baddbmm_=_inplace(baddbmm), dot=dot, vdot=vdot, inner=inner, outer=outer, ger=ger,
               trace=trace, kron=kron, cross=cross, __matmul__=operand_not_implemented(matmul),
               __rmatmul__=operand_not_implemented(_rmatmul))
