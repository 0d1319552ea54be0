"""View ops: new shapes, strides and offsets over the same blob. No instruction is queued.

A view is metadata only (`View(blob, shape, strides, offset)`), so writes through it are
seen by its base and the reverse. `reshape` and `flatten` fall back to a contiguous copy
when no strides can describe the new shape, as PyTorch's do.

Each view's node (named as PyTorch's) is a record without a kernel (the view is metadata), declared
at the bottom of the file with its backward in tidal ops: relabelled elements (reshape, transpose,
permute, expand) map the gradient back with the inverse view; views that pick elements (narrow, select,
diagonal, unfold, as_strided: slicing.py) send it back through `view_grads`.
"""
from __future__ import annotations

import warnings

from ...autograd.graph import needs_grad
from ...autograd.view_inplace import track_view
from ...tensor import Tensor
from ...tensor import dtype as dt
from ...tensor.tensor import contiguous_strides, numel_of
from ...vm import View
from ..elementwise import copies
from ..dispatch.dim_args import as_int, dims_arg, exporter, infer_size, size_args, wrap_dim  # noqa: F401 (re-exported)
from ..elementwise.plans import check_leaf_inplace, torch_name
from ..dispatch.mem_overlap import check_written
from ..dispatch.primitive import Primitive
from .view_grads import inplace_node, overload

__all__: list = []
METHODS: dict = {}


_public = exporter(__all__, METHODS, globals())


# -- shared helpers (shape_ops uses them too) ----------------------------------------------------
def make_view(t: Tensor, shape: tuple, strides: tuple, offset: int, dtype: dt.dtype | None = None) -> Tensor:
    """A tensor over `t`'s blob with the given geometry; its `_base` is the root tensor."""
    if t.__class__ is not Tensor and hasattr(t, "_lazy_view"):  # a conj view's views keep its bit (lazy_views)
        return t._lazy_view(shape, strides, offset, dtype)
    dtype = t.dtype if dtype is None else dtype
    base = t._base if t._base is not None else t
    out = Tensor._make(View(t._v.blob, tuple(shape), tuple(strides), offset, dtype.np), dtype, t.device,
                       t._vm, base=base)
    track_view(out)
    return out


def _restride(t: Tensor, shape, strides, offset: int | None = None) -> Tensor:
    return make_view(t, shape, strides, t._v.offset if offset is None else offset)


_view_strides: dict = {}  # (old shape, old strides, new shape) -> view_strides' answer, for the layouts a program reuses


def view_strides(old_shape: tuple, old_strides: tuple, new_shape: tuple) -> tuple | None:
    """Strides that make `new_shape` read the same elements in the same order, or None (found once per
    layout and shape: see _chunked_strides)."""
    key = (old_shape, old_strides, new_shape)
    try:
        return _view_strides[key]
    except KeyError:
        pass
    strides = _chunked_strides(tuple(old_shape), tuple(old_strides), tuple(new_shape))
    if len(_view_strides) < 16384:
        _view_strides[key] = strides
    return strides


def _chunked_strides(old_shape: tuple, old_strides: tuple, new_shape: tuple) -> tuple | None:
    """The old dims fall into chunks, runs that are contiguous with each other (size-1 dims join
    any run); a view exists when consecutive new dims tile each chunk exactly."""
    if not old_shape:
        return (1,) * len(new_shape)
    if numel_of(old_shape) == 0:
        return tuple(old_strides) if tuple(old_shape) == tuple(new_shape) else contiguous_strides(new_shape)
    new_strides = [0] * len(new_shape)
    j = len(new_shape) - 1
    inner = old_strides[-1]      # stride of the innermost dim of the current chunk
    chunk = covered = 1          # elements in the chunk so far / in the new dims given to it
    for i in range(len(old_shape) - 1, -1, -1):
        chunk *= old_shape[i]
        if i > 0 and (old_shape[i - 1] == 1 or old_strides[i - 1] == chunk * inner):
            continue  # the chunk goes on outwards
        while j >= 0 and (covered < chunk or new_shape[j] == 1):
            new_strides[j] = covered * inner
            covered *= new_shape[j]
            j -= 1
        if covered != chunk:
            return None
        if i > 0:
            inner, chunk, covered = old_strides[i - 1], 1, 1
    return tuple(new_strides) if j < 0 else None


def _reshape_back(node, g):
    return (reshape(g, node.attrs),)


def shaped(out: Tensor, input: Tensor, name: str = "view") -> Tensor:
    """`out`, the elements of `input` in the same order under another shape, recorded as `name`."""
    VIEW.attach((input,), (out,), input._v.shape, node=name)
    return out


def _contiguous_view(t: Tensor, shape: tuple) -> Tensor:
    """`t` viewed as `shape`, through a contiguous copy when its strides can't express it."""
    strides = view_strides(t._v.shape, t._v.strides, shape)
    if strides is not None:
        return shaped(_restride(t, shape, strides), t)
    copy = copies.contiguous(t)  # (row-major whatever clone's memory_format rule would keep)
    out = _restride(copy, shape, contiguous_strides(shape))
    out.__dict__.pop("_base", None)  # torch's _unsafe_view: the copy is no one's view (its `_base` is None)
    return shaped(out, copy, "unsafe_view")


# -- view / reshape ------------------------------------------------------------------------------
def _view_dtype(t: Tensor, dtype: dt.dtype) -> Tensor:
    if dtype is not t.dtype and hasattr(t, "dtype_view_error"):  # a conj or negative view (lazy_views): refused first
        raise RuntimeError(t.dtype_view_error)
    old, new = t.dtype.itemsize, dtype.itemsize
    shape, strides, offset = list(t._v.shape), list(t._v.strides), t._v.offset
    if old == new:
        return make_view(t, shape, strides, offset, dtype)
    what = f"to view {torch_name(t.dtype)} as {torch_name(dtype)} (different element sizes)"
    if not shape:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if old > new:
        ratio = old // new
        if strides[-1] != 1:
            raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
        shape[-1] *= ratio
        strides = [s * ratio for s in strides[:-1]] + [1]
        return make_view(t, shape, strides, offset * ratio, dtype)
    ratio = new // old
    if shape[-1] % ratio:
        raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got {shape[-1]}")
    if offset % ratio:
        raise RuntimeError(f"self.storage_offset() must be divisible by {ratio} {what}, but got {offset}")
    if strides[-1] != 1:
        raise RuntimeError(f"self.stride(-1) must be 1 {what}, but got {strides[-1]}")
    for i, s in enumerate(strides[:-1]):
        if s % ratio:
            raise RuntimeError(f"self.stride({i}) must be divisible by {ratio} {what}, but got {s}")
    shape[-1] //= ratio
    strides = [s // ratio for s in strides[:-1]] + [1]
    return make_view(t, shape, strides, offset // ratio, dtype)


@_public(function=False)
def view(self: Tensor, *shape, size=None, dtype: dt.dtype | None = None) -> Tensor:
    """The same memory seen with another shape (one -1 is inferred) or another dtype."""
    if dtype is None and len(shape) == 1 and isinstance(shape[0], dt.dtype):
        dtype = shape[0]
    if dtype is not None:  # not differentiable, and no view for autograd (its `_base` is None), as in PyTorch
        out = _view_dtype(self, dtype)
        out.__dict__.pop("_base", None)
        return out
    shape = infer_size(size_args("view", shape if size is None else (size,)), self.numel())
    strides = view_strides(self._v.shape, self._v.strides, shape)
    if strides is None:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at least one "
                           "dimension spans across two contiguous subspaces). Use .reshape(...) instead.")
    return shaped(_restride(self, shape, strides), self)


@_public(function=False)
def view_as(self: Tensor, other: Tensor) -> Tensor:
    """`self.view(other.shape)`."""
    return view(self, other._v.shape)


@_public(method=False)
def reshape(input: Tensor, shape) -> Tensor:
    """`input` with another shape: a view when the strides allow it, else a contiguous copy."""
    return _contiguous_view(input, infer_size(size_args("reshape", (shape,), "shape"), input.numel()))


def _reshape_method(self: Tensor, *shape, **kwargs) -> Tensor:
    if "shape" in kwargs:
        shape = (kwargs.pop("shape"),)
    if kwargs:
        raise TypeError(f"reshape() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return reshape(self, shape[0] if len(shape) == 1 else shape)


METHODS["reshape"] = _reshape_method


@_public(function=False)
def reshape_as(self: Tensor, other: Tensor) -> Tensor:
    """`self.reshape(other.shape)`."""
    return reshape(self, other._v.shape)


@_public
def ravel(input: Tensor) -> Tensor:
    """A 1-D view of a contiguous tensor, else a contiguous 1-D copy."""
    flat = copies.contiguous(input)
    return shaped(_restride(flat, (flat.numel(),), (1,)), flat)


@_public
def flatten(input: Tensor, start_dim: int = 0, end_dim: int = -1) -> Tensor:
    """Dims start_dim..end_dim merged into one (a view when possible)."""
    n = input.ndim
    start, end = wrap_dim(start_dim, n, "flatten", "start_dim"), wrap_dim(end_dim, n, "flatten", "end_dim")
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    shape = input._v.shape
    if n == 0:
        return shaped(_restride(input, (1,), (1,)), input)
    if start == end:
        return input
    return _contiguous_view(input, shape[:start] + (numel_of(shape[start:end + 1]),) + shape[end + 1:])


@_public
def unflatten(input: Tensor, dim: int, sizes) -> Tensor:
    """Dim `dim` split into `sizes` (one -1 is inferred)."""
    if input.ndim == 0:  # (torch wraps the dim error of a 0-d input in a RuntimeError)
        raise RuntimeError(f"unflatten: Dimension specified as {dim} but tensor has no dimensions")
    d = wrap_dim(dim, input.ndim, "unflatten")
    sizes = size_args("unflatten", (sizes,), "sizes")
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    n = input._v.shape[d]
    try:
        sizes = infer_size(sizes, n)
    except RuntimeError as exc:
        if "invalid for input" not in str(exc):
            raise
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the size of dim "
                           f"{dim} ({n}) in the input tensor") from None
    shape = input._v.shape
    return view(input, shape[:d] + sizes + shape[d + 1:])


# -- dim permutations ----------------------------------------------------------------------------
def _swapped(input: Tensor, a: int, b: int) -> Tensor:
    shape, strides = list(input._v.shape), list(input._v.strides)
    if shape:
        shape[a], shape[b] = shape[b], shape[a]
        strides[a], strides[b] = strides[b], strides[a]
    return _restride(input, shape, strides)


def _transpose_back(node, g):
    return (transpose(g, *node.attrs),)


@_public
def transpose(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Dims dim0 and dim1 exchanged (a view)."""
    n = input.ndim
    a, b = wrap_dim(dim0, n, "transpose", "dim0"), wrap_dim(dim1, n, "transpose", "dim1")
    out = _swapped(input, a, b)
    TRANSPOSE.attach((input,), (out,), (a, b))
    return out


@_public
def swapaxes(input: Tensor, axis0: int, axis1: int) -> Tensor:
    """Alias of transpose (NumPy's name)."""
    return transpose(input, axis0, axis1)


@_public
def swapdims(input: Tensor, dim0: int, dim1: int) -> Tensor:
    """Alias of transpose."""
    return transpose(input, dim0, dim1)


@_public
def permute(input: Tensor, *dims, **kwargs) -> Tensor:
    """Dims reordered: output dim i is input dim dims[i] (a view); `dims=` works too."""
    dims = size_args("permute", (kwargs.pop("dims"),) if "dims" in kwargs else dims, "dims")
    if kwargs:
        raise TypeError(f"permute() got an unexpected keyword argument '{next(iter(kwargs))}'")
    n = input.ndim
    if len(dims) != n:
        raise RuntimeError("permute(sparse_coo): number of dimensions in the tensor input does not match the "
                           "length of the desired ordering of dimensions i.e. input.dim() = "
                           f"{n} is not equal to len(dims) = {len(dims)}")
    dims = [wrap_dim(d, n, "permute", "dims") for d in dims]
    if len(set(dims)) != len(dims):
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    shape, strides = input._v.shape, input._v.strides
    out = _restride(input, [shape[d] for d in dims], [strides[d] for d in dims])
    inverse = [0] * n
    for i, d in enumerate(dims):
        inverse[d] = i
    PERMUTE.attach((input,), (out,), inverse)
    return out


def _permute_back(node, g):
    return (permute(g, node.attrs),)


@_public
def t(input: Tensor) -> Tensor:
    """The transpose of a matrix; 0-d and 1-d tensors are returned as views of themselves."""
    if input.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {input.ndim}D")
    out = _swapped(input, 0, 1) if input.ndim == 2 else _restride(input, input._v.shape, input._v.strides)
    MATRIX_T.attach((input,), (out,))
    return out


def _t_back(node, g):
    return (t(g),)


@_public
def adjoint(input: Tensor) -> Tensor:
    """The last two dims swapped and conjugated (a view; for complex dtypes a conjugate view, as torch's)."""
    return _conj(_matrix_transpose(input, "tensor.adjoint()"))


def _conj(x: Tensor) -> Tensor:
    return x.conj() if x.dtype.is_complex else x


def _matrix_transpose(input: Tensor, name: str) -> Tensor:
    if input.ndim < 2:
        raise RuntimeError(f"{name} is only supported on matrices or batches of matrices. Got {input.ndim}-D "
                           "tensor.")
    return transpose(input, -2, -1)


def _T(self: Tensor) -> Tensor:
    n = self.ndim
    if n == 0:
        warnings.warn("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
                      UserWarning, stacklevel=2)
    elif n != 2:
        warnings.warn("The use of `x.T` on tensors of dimension other than 2 to reverse their shape is "
                      "deprecated and it will throw an error in a future release. Consider `x.mT` to "
                      "transpose batches of matrices or `x.permute(*torch.arange(x.ndim - 1, -1, -1))` to "
                      "reverse the dimensions of a tensor.", UserWarning, stacklevel=2)
    return permute(self, tuple(range(n - 1, -1, -1)))


def _H(self: Tensor) -> Tensor:
    if self.ndim == 0:
        return self  # PyTorch returns the tensor itself
    if self.ndim != 2:
        hint = " For batches of matrices, consider using tensor.mH" if self.ndim > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {self.ndim}-D tensor.{hint}")
    return _conj(transpose(self, 0, 1))


def _matrix_property(name: str):
    def getter(self: Tensor) -> Tensor:
        if self.ndim == 0:
            warnings.warn(f"Tensor.{name} is deprecated on 0-D tensors. This function is the identity in these "
                          "cases.", UserWarning, stacklevel=2)
            return self  # PyTorch returns the tensor itself
        result = _matrix_transpose(self, f"tensor.{name}")
        return _conj(result) if name == "mH" else result
    return getter


METHODS.update(T=property(_T, doc="The dims reversed (a view)."),
               H=property(_H, doc="The conjugate transpose of a matrix (a view)."),
               mT=property(_matrix_property("mT"), doc="The last two dims swapped (a view)."),
               mH=property(_matrix_property("mH"), doc="mT conjugated (a view)."))


@_public(aliases=("moveaxis",))
def movedim(input: Tensor, source, destination) -> Tensor:
    """Dims at `source` moved to `destination`, the others keeping their order (a view)."""
    n = input.ndim
    src = (source,) if not isinstance(source, (tuple, list)) else tuple(source)
    dst = (destination,) if not isinstance(destination, (tuple, list)) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} dims) should "
                           f"contain the same number of dims as destination ({list(dst)} dims)")
    src = [wrap_dim(d, n, "movedim", "source") for d in src]
    dst = [wrap_dim(d, n, "movedim", "destination") for d in dst]
    for name, dims in (("source", src), ("destination", dst)):
        if len(set(dims)) != len(dims):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({dims})")
    order = [-1] * n
    for s, d in zip(src, dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in src)
    order = [o if o >= 0 else next(rest) for o in order]
    return permute(input, order)


# -- adding and removing dims --------------------------------------------------------------------
@_public
def squeeze(input: Tensor, dim=None) -> Tensor:
    """Size-1 dims removed: all of them, or those among `dim` (an int or a tuple)."""
    n = input.ndim
    shape, strides = input._v.shape, input._v.strides
    if dim is None:
        keep = [i for i in range(n) if shape[i] != 1]
    else:
        drop = set(dims_arg(dim, n, "squeeze", "dim"))
        keep = [i for i in range(n) if i not in drop or shape[i] != 1]
    # PyTorch's nodes: SqueezeBackward0 (all dims), 1 (one dim), 2 (a tuple of dims)
    name = "squeeze" if dim is None else overload("squeeze", 2 if isinstance(dim, (tuple, list)) else 1)
    return shaped(_restride(input, [shape[i] for i in keep], [strides[i] for i in keep]), input, name)


@_public
def unsqueeze(input: Tensor, dim: int) -> Tensor:
    """A size-1 dim inserted at `dim` (a view)."""
    return shaped(unsqueezed(input, wrap_dim(dim, input.ndim + 1, "unsqueeze")), input, "unsqueeze")


def unsqueezed(input: Tensor, d: int) -> Tensor:
    """A size-1 dim inserted at (wrapped) `d`, no node recorded: for ops that record their own."""
    return _restride(input, *unsqueezed_geometry(input._v.shape, input._v.strides, d))


def unsqueezed_geometry(shape: tuple, strides: tuple, d: int) -> tuple:
    """The shape and strides of a view with a size-1 dim inserted at (wrapped) `d`."""
    stride = shape[d] * strides[d] if d < len(shape) else 1
    return shape[:d] + (1,) + shape[d:], strides[:d] + (stride,) + strides[d:]


def expand_geometry(t: Tensor, sizes: tuple) -> tuple:
    """Shape and strides of `t` expanded to `sizes` (-1 keeps a size; new or broadcast dims get stride 0)."""
    shape, strides = t._v.shape, t._v.strides
    n, lead = len(sizes), len(sizes) - len(shape)
    if lead < 0:
        raise RuntimeError(f"expand(torch.{_legacy_name(t)}{{{list(shape)}}}, size={list(sizes)}): the number "
                           f"of sizes provided ({n}) must be greater or equal to the number of dimensions in "
                           f"the tensor ({len(shape)})")
    out_shape, out_strides = [0] * n, [0] * n
    for i in range(n - 1, -1, -1):
        j = i - lead
        target = sizes[i]
        if j >= 0:
            size, stride = shape[j], strides[j]
        else:
            size, stride = 1, out_shape[i + 1] * out_strides[i + 1] if i + 1 < n else 0
            if target == -1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) isn't allowed in a leading, "
                                   f"non-existing dimension {i}")
        if target == -1:
            target = size
        if size != target:
            if size != 1:
                raise RuntimeError(f"The expanded size of the tensor ({target}) must match the existing size "
                                   f"({size}) at non-singleton dimension {i}.  Target sizes: {list(sizes)}.  "
                                   f"Tensor sizes: {list(shape)}")
            size, stride = target, 0
        if size < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {size}: {list(sizes)}")
        out_shape[i], out_strides[i] = size, stride
    return tuple(out_shape), tuple(out_strides)


def _legacy_name(t: Tensor) -> str:
    return torch_name(t.dtype) + "Tensor"


def expanded(input: Tensor, sizes: tuple) -> Tensor:
    """`input` expanded to `sizes` (checked), recorded as PyTorch's ExpandBackward0."""
    shape, strides = expand_geometry(input, sizes)
    out = _restride(input, shape, strides)
    EXPAND.attach((input,), (out,), input._v.shape)
    return out


def _expand_back(node, g):
    return (sum_to_size(g, node.attrs),)


@_public(function=False)
def expand(self: Tensor, *sizes, size=None, implicit: bool = False) -> Tensor:
    """A view with size-1 dims repeated (stride 0) and new leading dims; -1 keeps a size (`implicit`, a
    tracing flag in torch, changes nothing)."""
    return expanded(self, size_args("expand", sizes if size is None else (size,)))


@_public(function=False)
def expand_as(self: Tensor, other: Tensor) -> Tensor:
    """`self.expand(other.shape)`."""
    return expand(self, other._v.shape)


@_public(function=False)
def sum_to_size(self: Tensor, *size) -> Tensor:
    """The sum of this tensor down to `size`, a shape that expands to this one (expand's adjoint)."""
    size = size_args("sum_to_size", size)
    if not size:  # torch's sum_to with an empty shape always sums (int and bool give int64)
        return self.sum()
    shape = self._v.shape
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size {{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size) if s == 1 and shape[lead + i] != 1)
    if not dims:
        return self
    return reshape(self.sum(dim=dims, keepdim=True), size)  # keepdim: size-1 dims stay where `size` has them


# -- in-place metadata changes -------------------------------------------------------------------
def _inplace(fn, node: str, variant=lambda args, kwargs: 1):
    """The in-place form of view `fn`; `variant(args, kwargs)` numbers PyTorch's node (TBackward1...)."""
    def method(self: Tensor, *args, **kwargs) -> Tensor:
        check_written(self)
        tracked = self._requires_grad and self.grad_fn is not None
        if not tracked and needs_grad((self,)):
            check_leaf_inplace(self)
        out = fn(self, *args, **kwargs)
        self._v = out._v
        (self._vc or self._v.blob).version += 1  # torch counts a metadata change in place as a write
        if tracked and out.grad_fn is not None:  # the new node's input is this tensor as it was
            inplace_node(out, node, variant(args, kwargs))
            self.grad_fn = out.grad_fn
            self.__dict__.pop("_output_nr", None)
        return self
    method.__name__ = fn.__name__ + "_"
    method.__doc__ = f"In-place {fn.__name__}: this tensor's own shape and strides change."
    return method


def _squeeze_variant(args, kwargs) -> int:
    dim = args[0] if args else kwargs.get("dim")
    return 3 if dim is None else 5 if isinstance(dim, (tuple, list)) else 4


METHODS.update(squeeze_=_inplace(squeeze, "squeeze", _squeeze_variant), unsqueeze_=_inplace(unsqueeze, "unsqueeze"),
               t_=_inplace(t, "t"), transpose_=_inplace(transpose, "transpose"),
               swapaxes_=_inplace(transpose, "transpose"), swapdims_=_inplace(transpose, "transpose"))


# -- records (the views' nodes) ------------------------------------------------------------------
# the same elements in the same order under another shape (view, reshape, flatten, squeeze, unsqueeze and
# _unsafe_view name theirs): the gradient is reshaped back to the input's shape
VIEW = Primitive("view", None, cpu=None, backward=_reshape_back, sbp="reshape")
TRANSPOSE = Primitive("transpose", None, cpu=None, backward=_transpose_back, sbp="transpose")
PERMUTE = Primitive("permute", None, cpu=None, backward=_permute_back, sbp="permute")
MATRIX_T = Primitive("t", None, cpu=None, backward=_t_back, sbp="t")
EXPAND = Primitive("expand", None, cpu=None, backward=_expand_back)
