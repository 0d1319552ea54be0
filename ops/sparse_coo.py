"""Sparse COO tensors, held dense: torch.sparse_coo_tensor, Tensor.to_sparse, indices()/values()/_nnz(),
coalesce, to_dense, and sparse matrix products (mm, spmm, torch.sparse.mm).

A sparse tensor here is a Tensor of the full size whose memory holds its dense equal (duplicate indices
summed), plus the indices and values it was given. Every op therefore computes on it what torch computes
on a sparse tensor (the graph examples' `D^-1/2 A D^-1/2` and `spmm(adj, support)`), and ops other than the
ones below return dense (strided) tensors, where torch returns some of them sparse. Memory is that of the
dense tensor, so this suits the moderate sizes scripts use, not huge sparse matrices.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..tensor.printing import format_tensor, host_values

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
        from ..compat._layout import sparse_coo
        return sparse_coo

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

    def to_dense(self, dtype=None, *, masked_grad=None) -> Tensor:
        """The dense (strided) tensor of the same values."""
        out = self.clone()
        return out if dtype is None else out.to(dtype)

    def to_sparse(self, *args, **kwargs) -> "SparseCooTensor":
        """Itself: it is sparse already."""
        return self

    def __add__(self, other):
        if isinstance(other, Tensor) and not other.is_sparse:
            raise RuntimeError("add(sparse, dense) is not supported. Use add(dense, sparse) instead.")
        return Tensor.__add__(self, other)

    def __repr__(self) -> str:
        return _repr(self)

    __str__ = __repr__


def _wrap(dense: Tensor, indices: Tensor, values: Tensor, coalesced: bool) -> SparseCooTensor:
    # `dense` must be a tensor of its own (fresh from an op): it becomes the sparse tensor
    dense.__class__ = SparseCooTensor
    dense.__dict__["_coo"] = (indices, values)
    dense.__dict__["_coalesced"] = coalesced
    return dense


def sparse_coo_tensor(indices, values, size=None, *, dtype=None, device=None, pin_memory: bool = False,
                      requires_grad: bool = False, check_invariants=None, is_coalesced=None) -> SparseCooTensor:
    """A sparse COO tensor with `values` at the columns of `indices` (repeated indices add up)."""
    from . import creation, from_data
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
