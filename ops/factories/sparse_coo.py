"""Sparse COO tensors, held dense: torch.sparse_coo_tensor, Tensor.to_sparse, indices()/values()/_nnz(),
coalesce, to_dense, and sparse matrix products (mm, spmm, torch.sparse.mm).

A sparse tensor here is a Tensor of the full size whose memory holds its dense equal (duplicate indices
summed), plus the indices and values it was given. Every op therefore computes on it what torch computes
on a sparse tensor (the graph examples' `D^-1/2 A D^-1/2` and `spmm(adj, support)`), and ops other than the
ones below return dense (strided) tensors, where torch returns some of them sparse. Memory is that of the
dense tensor, so this suits the moderate sizes scripts use, not huge sparse matrices.

Sparse gradients (`Embedding(sparse=True)`, `embedding_bag(sparse=True)`) are such tensors too, made by
`sparse_grad`: uncoalesced, their entries joined on accumulation as torch's sparse add joins them, and the
optimizers that take them (SGD, Adagrad, SparseAdam) update only the entries they hold.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.printing import format_tensor, host_values
from ...tensor import layout as _layout
from . import creation, from_data
from ..movement.shape_ops import cat

__all__ = ["sparse_coo_tensor", "spmm"]


class SparseCooTensor(Tensor):
    """A tensor of layout sparse_coo: its dense values, plus the COO indices and values it was made from."""

    __slots__ = ()

    @property
    def is_sparse(self) -> bool:
        """True: this tensor has the sparse_coo layout."""
        return True

    @property
    def layout(self):
        """torch.sparse_coo."""
        return _layout.sparse_coo

    def _indices(self) -> Tensor:
        """The indices as given (duplicates included while uncoalesced): a (sparse_dim, nnz) int64 tensor."""
        return self.__dict__["_coo"][0]

    def _values(self) -> Tensor:
        """The values as given, one row per index column."""
        return self.__dict__["_coo"][1]

    def _nnz(self) -> int:
        """How many index columns this tensor stores."""
        return int(self._indices().shape[1])

    def is_coalesced(self) -> bool:
        """Whether the indices are sorted and unique."""
        return self.__dict__["_coalesced"]

    def indices(self) -> Tensor:
        """The indices of a coalesced tensor."""
        if not self.is_coalesced():
            raise RuntimeError("Cannot get indices on an uncoalesced tensor, please call .coalesce() first")
        return self._indices()

    def values(self) -> Tensor:
        """The values of a coalesced tensor."""
        if not self.is_coalesced():
            raise RuntimeError("Cannot get values on an uncoalesced tensor, please call .coalesce() first")
        return self._values()

    def sparse_dim(self) -> int:
        """How many leading dims the indices address."""
        return int(self._indices().shape[0])

    def dense_dim(self) -> int:
        """How many trailing dims each value has."""
        return self.ndim - self.sparse_dim()

    def coalesce(self) -> "SparseCooTensor":
        """The same tensor with sorted, unique indices (values at repeated indices summed)."""
        if self.is_coalesced():
            return self
        index = self._indices().numpy()
        if index.shape[1] == 0:
            return _wrap(self.detach().clone(), self._indices(), self._values(), True)
        flat = np.ravel_multi_index(tuple(index), tuple(self.shape[:index.shape[0]]))
        unique, inverse = np.unique(flat, return_inverse=True)
        values = self._values()
        summed = values.new_zeros((len(unique),) + tuple(values.shape[1:]))
        summed.index_add_(0, Tensor._from_array(inverse.astype(np.int64), dt.int64), values)
        keep = np.stack(np.unravel_index(unique, tuple(self.shape[:index.shape[0]]))).astype(np.int64)
        return _wrap(self.clone(), Tensor._from_array(keep, dt.int64), summed, True)

    def entry_mask(self) -> Tensor:
        """A dense bool tensor of this shape, True at the entries the indices address (their dense dims whole)."""
        sparse_dim = self.sparse_dim()
        held = creation.zeros(tuple(self.shape[:sparse_dim]), dtype=dt.bool_, device=self.device)
        if self._nnz():
            held.index_put_(tuple(self._indices()), creation.ones((), dtype=dt.bool_, device=self.device))
        return held.reshape(tuple(self.shape[:sparse_dim]) + (1,) * self.dense_dim()).expand(*self.shape)

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense (strided) tensor of the same values."""
        out = Tensor.clone(self)
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, **kwargs) -> "SparseCooTensor":
        """Itself: it is sparse already."""
        return self

    def __add__(self, other):
        if isinstance(other, Tensor) and not other.is_sparse:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        if isinstance(other, SparseCooTensor):
            return _joined(Tensor.__add__(self, other), self, other, 1)
        return Tensor.__add__(self, other)

    def add_(self, other, *, alpha=1) -> "SparseCooTensor":
        """In place: another sparse tensor's entries joined to these (torch's sparse add_)."""
        if not isinstance(other, SparseCooTensor):
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        indices, values, coalesced = _joined_coo(self, other, alpha)
        Tensor.add_(self, other, alpha=alpha)
        self.__dict__["_coo"] = (indices, values)
        self.__dict__["_coalesced"] = coalesced
        return self

    def zero_(self) -> "SparseCooTensor":
        """In place: no entries at all (nnz 0), as torch's sparse zero_."""
        Tensor.zero_(self)
        indices, values = self.__dict__["_coo"]
        self.__dict__["_coo"] = (indices[:, :0], values[:0])
        self.__dict__["_coalesced"] = True
        return self

    def clone(self, *, memory_format=None) -> "SparseCooTensor":
        """A sparse copy: the values, indices and coalesced flag copied."""
        indices, values = self.__dict__["_coo"]
        return _wrap(Tensor.clone(self), indices.clone(), values.clone(), self.is_coalesced())

    def __repr__(self) -> str:
        return _repr(self)

    __str__ = __repr__


def _wrap(dense: Tensor, indices: Tensor, values: Tensor, coalesced: bool) -> SparseCooTensor:
    # `dense` must be a tensor of its own (fresh from an op): it becomes the sparse tensor
    dense.__class__ = SparseCooTensor
    dense.__dict__["_coo"] = (indices, values)
    dense.__dict__["_coalesced"] = coalesced
    return dense


def _merge_order(a: np.ndarray, b: np.ndarray) -> tuple:
    """torch's add_out_sparse_contiguous walk over two index sequences (row-major positions), as if both were
    sorted: the output slot of each entry of `a` and of `b` (equal heads share a slot), and the slot count."""
    slot_a, slot_b = np.empty(len(a), np.int64), np.empty(len(b), np.int64)
    a, b = a.tolist(), b.tolist()
    i = j = r = 0
    while i < len(a) or j < len(b):  # (a host loop: taken only when gradients accumulate)
        cmp = -1 if i >= len(a) else 1 if j >= len(b) else 1 if a[i] < b[j] else -1 if a[i] > b[j] else 0
        if cmp >= 0:
            slot_a[i] = r
            i += 1
        if cmp <= 0:
            slot_b[j] = r
            j += 1
        r += 1
    return slot_a, slot_b, r


def _joined_coo(a: SparseCooTensor, b: SparseCooTensor, alpha) -> tuple:
    """(indices, values, coalesced) of a + alpha * b, as torch's sparse add joins them: with contiguous values,
    its merge walk (entries at equal heads summed; coalesced when both were); otherwise the entries
    concatenated (coalesced once they outnumber the elements)."""
    if tuple(a.shape) != tuple(b.shape):
        raise RuntimeError(f"add: expected 'self' and 'other' to have same size, but self has size "
                           f"{list(a.shape)} while other has size {list(b.shape)} (FYI: op2-sparse addition does "
                           "not currently support broadcasting)")
    b_values = (b._values() if alpha == 1 else b._values() * alpha).to(a.dtype)
    if b._nnz() == 0:
        return a._indices().clone(), a._values().clone(), a.is_coalesced()
    if a._nnz() == 0:
        return b._indices().clone(), b_values.clone(), b.is_coalesced()
    if a._values().is_contiguous() and b._values().is_contiguous():
        dims = tuple(a.shape[:a.sparse_dim()])
        slot_a, slot_b, n = _merge_order(*(np.ravel_multi_index(tuple(t._indices().numpy()), dims) for t in (a, b)))
        slot_a, slot_b = (Tensor._from_array(s, dt.int64) for s in (slot_a, slot_b))
        indices = creation.zeros((len(dims), n), dtype=dt.int64, device=a.device)
        indices[:, slot_a] = a._indices()
        indices[:, slot_b] = b._indices()
        values = creation.zeros((n,) + tuple(a._values().shape[1:]), dtype=a.dtype, device=a.device)
        values.index_add_(0, slot_a, a._values())
        values.index_add_(0, slot_b, b_values)
        return indices, values, a.is_coalesced() and b.is_coalesced()
    indices, values = cat([a._indices(), b._indices()], 1), cat([a._values(), b_values], 0)
    if indices.shape[1] > a.numel():
        merged = _wrap(Tensor.clone(a), indices, values, False).coalesce()
        return merged._indices(), merged._values(), True
    return indices, values, False


def _joined(dense: Tensor, a: SparseCooTensor, b: SparseCooTensor, alpha) -> SparseCooTensor:
    indices, values, coalesced = _joined_coo(a, b, alpha)
    return _wrap(dense, indices, values, coalesced)


def sparse_grad(dense: Tensor, indices: Tensor, values: Tensor) -> SparseCooTensor:
    """A gradient of layout sparse_coo (uncoalesced, as torch's embedding backward makes it): `dense` (a
    fresh tensor holding the summed entries) with the COO `indices` (sparse_dim, nnz) and `values`."""
    return _wrap(dense, indices, values, False)


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants=None, is_coalesced=None) -> SparseCooTensor:
    """A sparse COO tensor with `values` at the columns of `indices` (repeated indices add up)."""
    index = indices if isinstance(indices, Tensor) else from_data.tensor(np.asarray(indices, dtype=np.int64))
    if index.dtype != dt.int64:
        index = index.to(dt.int64)
    vals = values if isinstance(values, Tensor) else from_data.tensor(values)
    if dtype is not None:
        vals = vals.to(dtype)
    if index.ndim != 2:
        raise RuntimeError(f"indices must be sparse_dim x nnz, but got: {list(index.shape)}")
    if index.shape[1] != vals.shape[0]:
        raise RuntimeError(f"indices and values must have same nnz, but got nnz from indices: {index.shape[1]}, "
                           f"nnz from values: {vals.shape[0]}")
    host = index.numpy()
    if host.size and host.min() < 0:
        raise RuntimeError(f"found negative index {int(host.min())} for dim {int(np.argmin(host.min(1)))}")
    if size is None:
        size = tuple(int(n) + 1 for n in (host.max(1) if host.size else np.full(host.shape[0], -1)))
        size += tuple(vals.shape[1:])
    size = tuple(int(n) for n in size)
    if len(size) != index.shape[0] + vals.ndim - 1:
        raise RuntimeError(f"number of dimensions must be sparse_dim ({index.shape[0]}) + dense_dim "
                           f"({vals.ndim - 1}), but got {len(size)}")
    for d in range(host.shape[0]):
        if host.size and host[d].max() >= size[d]:
            raise RuntimeError(f"size is inconsistent with indices: for dim {d}, size is {size[d]} but found "
                               f"index {int(host[d].max())}")
    dense = creation.zeros(size, dtype=vals.dtype, device=device)
    dense.index_put_(tuple(index), vals.detach(), accumulate=True)
    out = _wrap(dense, index, vals.detach(), bool(is_coalesced))
    return out.requires_grad_() if requires_grad else out


def to_sparse(self: Tensor, sparse_dim: int | None = None, *, layout=None, blocksize=None,
              dense_dim: int | None = None) -> SparseCooTensor:
    """This dense tensor as a coalesced sparse COO tensor (its nonzero entries, over `sparse_dim` dims)."""
    if layout is not None and getattr(layout, "name", "sparse_coo") != "sparse_coo":
        raise RuntimeError(f"to_sparse: tidal has no {layout} layout (only torch.sparse_coo)")
    k = self.ndim if sparse_dim is None else int(sparse_dim)
    if not 0 <= k <= self.ndim:
        raise RuntimeError(f"sparse_dim must be in [0, {self.ndim}], got {k}")
    nonzero = self.detach() != 0
    if k < self.ndim:
        nonzero = nonzero.flatten(k).any(-1) if k else nonzero.any().reshape(())
    index = nonzero.nonzero().t().contiguous() if k else Tensor._from_array(np.zeros((0, 1), np.int64), dt.int64)
    values = self.detach()[tuple(index)] if k else self.detach().unsqueeze(0)
    return _wrap(self.clone(), index, values, True)


def to_dense(self: Tensor, dtype=None, *, masked_grad=None) -> Tensor:
    """A dense tensor is its own dense form (in `dtype` if given)."""
    return self if dtype is None else self.to(dtype)


def spmm(input: Tensor, mat2: Tensor) -> Tensor:
    """Sparse (or dense) matrix times dense matrix: torch.spmm."""
    return input.mm(mat2)


def _plain_repr(t: Tensor) -> str:
    # a tensor's repr without its dtype (the sparse repr names the dtype once, at the end)
    values, shape = host_values(t)
    kind = ("bool" if t.dtype == dt.bool_ else "complex" if t.dtype.is_complex
            else "float" if t.dtype.is_floating_point else "int")
    return format_tensor(values, kind=kind, dtype_repr=str(t.dtype), show_dtype=False, shape=shape)


def _indent(text: str, by: int) -> str:
    return text.replace("\n", "\n" + " " * by)


def _repr(t: SparseCooTensor) -> str:
    """torch's repr of a sparse COO tensor: its indices, values, size, nnz and layout."""
    lead = "       "
    tail = [f"size={tuple(t.shape)}", f"nnz={t._nnz()}"]
    plain = (dt.get_default_dtype(), dt.int64, dt.bool_, dt.get_default_complex_dtype())
    if t.dtype not in plain:
        tail.append(f"dtype={t.dtype}")
    tail.append("layout=torch.sparse_coo")
    text = ("tensor(indices=" + _indent(_plain_repr(t._indices()), len("tensor(indices=")) + ",\n" + lead
            + "values=" + _indent(_plain_repr(t._values()), len(lead + "values=")) + ",\n" + lead + ", ".join(tail))
    if t.requires_grad:
        text += ",\n" + lead + "requires_grad=True"
    return text + ")"


METHODS = {"to_sparse": to_sparse, "to_sparse_coo": to_sparse, "to_dense": to_dense}
