"""Lazy conjugate and negative views: torch's conjugate bit (`x.conj()`) and negative bit (`x.conj().imag`).

A lazy view shares its source's memory (same blob, same geometry rules as any view) and reads it through a
transform: its values are conj(memory) or -memory. Design, chosen so that plain tensors pay nothing:

- The bit is the tensor's class. `ConjView` and `NegView` are Tensor subclasses whose `_v` (the View every
  kernel, printer and op reads) is a property: reading it returns a *snapshot*, a View of a fresh blob laid out
  exactly as the memory (same shape, strides, offset) holding the transformed values, computed by one
  elementwise instruction queued at the read, so it sees every write queued before it. The snapshot is kept
  while the memory's version counter is unchanged. The memory itself is `_mem`. A plain Tensor's `_v` is its
  slot, untouched: no op on plain tensors checks a bit, and no dispatch path changed for them.
- What must see the memory rather than the values reads `_mem`: metadata (shape, strides, data_ptr, storage,
  version) here, and the two places views are made (movement.views.make_view, indexing.scatter.view_of), which
  for a lazy view make a lazy view of the same memory (their cost for plain tensors: `t.__class__ is not Tensor`).
- Writes into a lazy view (its in-place methods, item assignment, augmented operators, copy_, and ops' out=:
  elementwise.plans.apply, copy_ and launch_into hand a lazy view to its writer) run on a resolved copy and
  store the inverse transform of the result into the memory through a plain view (`unmarked`), so the source
  sees them, and autograd sees an ordinary write through a view of the source. A lazy view's grad_fn is
  renewed on the source's current history when the source was written since (torch regenerates a stale
  view's grad_fn on access too).

Known gaps: a Tensor method called unbound on a lazy view (`Tensor.add_(y, 1)`) writes the snapshot only;
`type(x.conj())` is ConjView, a Tensor subclass, where torch's is torch.Tensor; save/load give a plain tensor of
the values until patch s19_conj_2 (serialization.py) lands; a write through `x.data` (which counts versions
apart) is not seen by a conj view of x read before it.
"""
from __future__ import annotations

from ...autograd import hooks
from ...autograd.view_inplace import track_view
from ...tensor import Tensor
from ...tensor.tensor import GRAD_MODE, Size, VersionCounter, contiguous_strides
from ...vm import View
from ...vm.blob import fresh_blob
from ..dispatch.primitive import Primitive
from ..dispatch.torch_function import register_plain_subclass
from ..elementwise import copies, plans as ew


def _conj_back(node, g):
    return (ew.apply("conj", g),)


def _neg_back(node, g):
    return (ew.apply("neg", g),)


# the nodes of a lazy view and of the plain view that undoes it (torch's ConjBackward0 / NegViewBackward0)
CONJ = Primitive("conj", None, cpu=None, backward=_conj_back)
NEG_VIEW = Primitive("_neg_view", None, cpu=None, backward=_neg_back)


class LazyView(Tensor):
    """A view whose values are a transform (`op`: "conj" or "neg") of the memory it shares (see the module)."""

    __slots__ = ("_mem", "_snap")
    op = ""
    node: Primitive
    numpy_error = ""
    dtype_view_error = ""

    # -- the memory and the values ----------------------------------------------------------------
    def _read_values(self) -> View:
        mem = self._mem
        snap = self._snap
        if snap is not None and snap[0] == mem.blob.version and not mem.blob.lent:  # (lent: numpy() may write it)
            return snap[1]._v
        src = Tensor._make(mem, self.dtype, self.device, self._vm)  # (a handle in no graph: the op records nothing)
        if not mem.offset and mem.strides == contiguous_strides(mem.shape):  # the usual case: the op's own result
            values = ew.apply(self.op, src)                                   # has the memory's layout
            self._snap = (mem.blob.version, values)
            return values._v
        nbytes = mem.blob.nbytes
        if all(mem.shape):  # (only as far as the view reaches: a view of the first rows of a big source)
            nbytes = min(nbytes, (mem.offset + 1 + sum((n - 1) * s for n, s in zip(mem.shape, mem.strides) if s > 0))
                         * mem.dtype.itemsize)  # (the highest element reached: negative strides (flip) go below)
        blob = fresh_blob(nbytes, self._vm)
        values = dst = Tensor._make(View(blob, mem.shape, mem.strides, mem.offset, mem.dtype), self.dtype,
                                    self.device, self._vm)
        if any(s == 0 and n > 1 for n, s in zip(mem.shape, mem.strides)):  # (expanded: the write would overlap)
            flat = (nbytes // self.dtype.itemsize,)
            src = Tensor._make(View(mem.blob, flat, (1,), 0, mem.dtype), self.dtype, self.device, self._vm)
            dst = Tensor._make(View(blob, flat, (1,), 0, mem.dtype), self.dtype, self.device, self._vm)
        ew.apply(self.op, src, out=dst)
        self._snap = (mem.blob.version, values)
        return values._v

    def _write_memory(self, view: View) -> None:
        self._mem = view
        self._snap = None

    _v = property(_read_values, _write_memory, doc="The values, as a View of a snapshot laid out as the memory.")

    # -- the node: regenerated on the source's current history when that changed (as torch's views' grad_fn) ----
    _node = _node_on = None

    def _get_node(self):
        base = self._base
        if base is not None and base.grad_fn is not self._node_on and base.grad_fn is not None and \
                GRAD_MODE.enabled and "_nograd_view" not in self.__dict__:
            self._renode(base)  # (also when the source had no history at all when this view was made)
        return self._node

    def _set_node(self, node) -> None:
        self._node = node
        base = self._base
        self._node_on = base.grad_fn if base is not None else None

    grad_fn = property(_get_node, _set_node, doc="The node that made this view (renewed after writes to its source).")

    def _get_requires_grad(self) -> bool:
        self._get_node()  # (a write into the source may have given it a history since)
        return self.__dict__.get("_requires", False)

    def _set_requires_grad_flag(self, value: bool) -> None:
        self.__dict__["_requires"] = value

    _requires_grad = property(_get_requires_grad, _set_requires_grad_flag)

    def _renode(self, base: Tensor) -> None:
        # a plain view of the source's memory laid out as this one's, on its current history, then this view's node
        source = view_with(Tensor, self, self._mem)
        if source.dtype is base.dtype:  # (both through autograd.hooks: view_grads and tensors.py sit above this file)
            hooks.strided_node("as_strided", base, source)
        else:  # the imaginary part of a complex source
            hooks.parts_node(base, source)
        self.node.attach((source,), (self,))

    def _plain(self) -> Tensor:
        """The memory as a plain tensor, in no graph (for metadata)."""
        out = Tensor._make(self._mem, self.dtype, self.device, self._vm)
        out._vc = self._vc
        return out

    # -- metadata: the memory's ----------------------------------------------------------------------
    shape = property(lambda self: Size(self._mem.shape), doc="The size of each dimension.")
    ndim = property(lambda self: len(self._mem.shape), doc="The number of dimensions.")

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        return Tensor.size(self._plain(), dim)

    def stride(self, dim: int | None = None):
        """The strides in elements, or the stride of one dimension."""
        return Tensor.stride(self._plain(), dim)

    def storage_offset(self) -> int:
        """The offset of the first element in the shared storage, in elements."""
        return self._mem.offset

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self._mem.shape)

    def numel(self) -> int:
        """The number of elements."""
        return Size(self._mem.shape).numel()

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the memory is dense in `memory_format`'s order."""
        return Tensor.is_contiguous(self._plain(), memory_format)

    def data_ptr(self) -> int:
        """The address of the first element of the shared memory."""
        return Tensor.data_ptr(self._plain())

    def untyped_storage_id(self) -> int:
        """An id shared by every view of the same memory."""
        return id(self._mem.blob)

    @property
    def _version(self) -> int:
        return Tensor._version.fget(self._plain())

    # -- what torch refuses, and the views that keep the bit ---------------------------------------------
    def numpy(self, *, force: bool = False):
        """Refused, as torch: the memory does not hold the values."""
        raise RuntimeError(self.numpy_error)

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError(self.numpy_error)

    def detach(self) -> "LazyView":
        """The same lazy view, cut from the autograd graph."""
        out = type(self)._make(self._mem, self.dtype, self.device, self._vm)
        if self._vc is not None:
            out._vc = self._vc
        return out

    @property
    def data(self) -> "LazyView":
        """The same lazy view, outside the graph, with a version counter of its own."""
        out = type(self)._make(self._mem, self.dtype, self.device, self._vm)
        out._vc = VersionCounter()
        return out

    def _lazy_view(self, shape: tuple, strides: tuple, offset: int, dtype) -> "LazyView":
        """A view of the same memory with another geometry, keeping the bit (views.make_view, scatter.view_of)."""
        if dtype is not None and dtype is not self.dtype:
            raise RuntimeError(self.dtype_view_error)
        base = self._base if self._base is not None else self
        out = type(self)._make(View(self._mem.blob, tuple(shape), tuple(strides), offset, self._mem.dtype),
                               self.dtype, self.device, self._vm, base=base)
        track_view(out)
        return out


class ConjView(LazyView):
    """conj() of a complex tensor: its memory read conjugated (torch's conjugate bit)."""

    __slots__ = ()
    op = "conj"
    node = CONJ
    numpy_error = "Can't call numpy() on Tensor that has conjugate bit set. Use tensor.resolve_conj().numpy() instead."
    dtype_view_error = ("torch.Tensor.view is not supported for conjugate view tensors when converting to a different "
                        "dtype.")


class NegView(LazyView):
    """The imaginary part of a conj() view: its memory read negated (torch's negative bit)."""

    __slots__ = ()
    op = "neg"
    node = NEG_VIEW
    numpy_error = "Can't call numpy() on Tensor that has negative bit set. Use tensor.resolve_neg().numpy() instead."
    dtype_view_error = ("torch.Tensor.view is not supported for tensors with negative bit set when converting to a "
                        "different dtype.")


register_plain_subclass(LazyView)


# -- making and undoing lazy views ------------------------------------------------------------------------
def view_with(cls: type, input: Tensor, view: View, dtype=None) -> Tensor:
    """A `cls` tensor over `view` (of `input`'s memory), a view of input's base; no node."""
    base = input._base if input._base is not None else input
    out = cls._make(view, input.dtype if dtype is None else dtype, input.device, input._vm, base=base)
    track_view(out)
    return out


def memory_of(t: Tensor) -> View:
    """The View of `t`'s memory: a lazy view's `_mem`, a plain tensor's `_v`."""
    return t._mem if isinstance(t, LazyView) else t._v


def lazy(cls: type, input: Tensor) -> Tensor:
    """`input`'s memory as a lazy view of class `cls`, with its node."""
    out = view_with(cls, input, memory_of(input))
    cls.node.attach((input,), (out,))
    return out


def unmarked(t: LazyView) -> Tensor:
    """A plain view of `t`'s memory: the values without the bit (conj() of a conj view), with its node."""
    out = view_with(Tensor, t, t._mem)
    t.node.attach((t,), (out,))
    return out


def resolved(t: LazyView) -> Tensor:
    """The values in new memory: a plain copy (resolve_conj, resolve_neg)."""
    return copies.clone(t)


# -- writes into a lazy view ---------------------------------------------------------------------------------
def _store(self: LazyView, values: Tensor) -> None:
    """Write `values` (self's new values) into the memory, through a plain view, inverting the transform."""
    unmarked(self).copy_(ew.apply(self.op, values))  # (self's node follows the source's new history: grad_fn)


def _writer(name: str):
    plain_method = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        values = resolved(self)
        result = plain_method(values, *args, **kwargs)
        _store(self, values)
        return self if result is values or result is None else result
    method.__name__, method.__qualname__, method.__doc__ = name, f"LazyView.{name}", plain_method.__doc__
    return method


def _relayout(name: str):
    # an in-place metadata op sets `_v` to a new view's snapshot layout: the memory keeps its blob
    plain_method = getattr(Tensor, name)

    def method(self, *args, **kwargs):
        blob = self._mem.blob
        result = plain_method(self, *args, **kwargs)
        m = self._mem
        if m.blob is not blob:
            self._mem = View(blob, m.shape, m.strides, m.offset, m.dtype)
        return self if result is self else result
    method.__name__, method.__qualname__, method.__doc__ = name, f"LazyView.{name}", plain_method.__doc__
    return method


def _setitem(self: LazyView, index, value) -> None:
    values = resolved(self)
    values[index] = value
    _store(self, values)


# methods ending in "_" that change metadata or flags, not values (the first set: the layout, in place)
_RELAYOUTS = {"as_strided_", "squeeze_", "unsqueeze_", "t_", "transpose_", "swapaxes_", "swapdims_"}
_NOT_WRITES = _RELAYOUTS | {"requires_grad_", "share_memory_", "detach_", "resize_", "resize_as_", "set_", "conj_"}


def install_writers() -> None:
    """Give LazyView its writing methods (called once Tensor has every op's method: tidal.ops)."""
    for name in dir(Tensor):
        if name.endswith("_") and not name.startswith("_") and name not in _NOT_WRITES and \
                callable(getattr(Tensor, name)) and name not in vars(LazyView):
            setattr(LazyView, name, _writer(name))
    for name in ("__iadd__", "__iand__", "__ifloordiv__", "__ilshift__", "__imod__", "__imul__", "__ior__",
                 "__ipow__", "__irshift__", "__isub__", "__itruediv__", "__ixor__"):
        if hasattr(Tensor, name):
            setattr(LazyView, name, _writer(name))
    for name in _RELAYOUTS:
        if hasattr(Tensor, name):
            setattr(LazyView, name, _relayout(name))
    LazyView.__setitem__ = _setitem
