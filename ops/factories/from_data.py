"""Tensors from host data: tensor, as_tensor, from_numpy, with PyTorch's dtype inference.

Nested sequences are read the way PyTorch reads them: the shape comes from the first
element at each level, every other element must match it, and the dtype is the
promotion of every leaf's type (bool, int -> int64, float -> the default dtype, NumPy
scalars, arrays and tensors keep theirs).
"""
from __future__ import annotations

import warnings
from collections import deque

import numpy as np

from ...tensor import Tensor
from ...tensor import dtype as dt
from ...vm import View
from ..elementwise.float8 import cast as float8_cast, is_float8
from ..complex_numbers.half import cast as complex32_cast, widened as complex32_widened
from ..dispatch.factory_args import CPU, OPEN_BLOCKS, check_requires_grad, device_arg, dtype_arg
from ..elementwise.copies import convert
from ..dispatch.user_frame import user_stacklevel

__all__ = ["tensor", "as_tensor", "from_numpy"]
METHODS: dict = {}

_SEQUENCES = (list, tuple, range, deque)  # what torch reads as sequences (deque: reinforce.py's returns)
_PY_SCALARS = {bool: dt.bool_, int: dt.int64, float: None, complex: None}  # None: the default float/complex


def _scalar_dtype(kind: type) -> dt.dtype:
    d = _PY_SCALARS[kind]
    if d is None:
        return dt.get_default_complex_dtype() if kind is complex else dt.get_default_dtype()
    return d


def _first_path_shape(data) -> list:
    """Sizes along the first element of each level (PyTorch's compute_sizes)."""
    shape = []
    x = data
    while True:
        if isinstance(x, str) and shape:  # torch walks into a string as a sequence of itself, past 64 dims
            raise ValueError("too many dimensions 'str'")
        if isinstance(x, _SEQUENCES):
            shape.append(len(x))
            if not len(x):
                return shape
            x = x[0]
        elif isinstance(x, np.ndarray) and x.ndim:
            for n in x.shape:
                shape.append(n)
                if not n:
                    break
            return shape
        elif isinstance(x, np.ndarray) and shape:  # torch takes an array first in a list for a sequence
            raise TypeError("len() of unsized object")
        else:
            return shape


def _invalid_leaf(x) -> Exception:
    if isinstance(x, (str, bytes)):
        return TypeError(f"new(): invalid data type '{type(x).__name__}'")
    if isinstance(x, _SEQUENCES) or isinstance(x, np.ndarray):
        return TypeError(f"'{type(x).__name__}' object cannot be interpreted as a number: the sequences "
                         "nest deeper here than along the first element")
    return RuntimeError(f"Could not infer dtype of {type(x).__name__}")


class _Reader:
    """Walks nested data once: checks lengths, collects leaf chunks and their dtypes."""

    def __init__(self, shape: list):
        self.shape = shape
        self.chunks: list = []
        self.dtypes: dict = {}  # (as an ordered set: promotion errors name the dtypes in reading order, as torch's)
        self.python_complex = False  # a Python complex leaf: torch refuses to read it as a real number

    def leaf(self, x) -> None:
        kind = type(x)
        if kind in _PY_SCALARS:
            self.python_complex |= kind is complex
            self.dtypes[_scalar_dtype(kind)] = None
            self.chunks.append((x,))
        elif isinstance(x, np.generic) and x.dtype.kind in "biufc":
            self.dtypes[_numpy_dtype(x.dtype)] = None
            self.chunks.append(np.asarray(x).reshape(1))
        elif isinstance(x, Tensor):
            if x.numel() != 1:
                raise ValueError("only one element tensors can be converted to Python scalars")
            self.dtypes[x.dtype] = None
            self.chunks.append(_host(x).reshape(1))
        elif isinstance(x, np.ndarray) and x.ndim == 0:  # (a later 0-d array is a number, as NumPy's __float__)
            self.dtypes[_numpy_dtype(x.dtype)] = None
            self.chunks.append(x.reshape(1))
        elif isinstance(x, np.ndarray) and x.size == 1:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        else:
            raise _invalid_leaf(x)

    def block(self, arr: np.ndarray, dim: int, d: dt.dtype) -> None:
        want = tuple(self.shape[dim:])
        if arr.shape != want:
            for k, (w, g) in enumerate(zip(want, arr.shape)):
                if w != g:
                    raise ValueError(f"expected sequence of length {w} at dim {dim + k} (got {g})")
            raise ValueError(f"expected {len(want)} more dimension(s) at dim {dim} (got {arr.ndim})")
        self.dtypes[d] = None
        self.chunks.append(arr)

    def read(self, x, dim: int) -> None:
        shape = self.shape
        if dim == len(shape):
            self.leaf(x)
            return
        if isinstance(x, Tensor):
            self.block(_host(x), dim, x.dtype)
            return
        if isinstance(x, np.ndarray):
            self.block(x, dim, _numpy_dtype(x.dtype))
            return
        if not isinstance(x, _SEQUENCES):
            if isinstance(x, str):
                raise _invalid_leaf(x)
            raise TypeError(f"expected a sequence at dim {dim}, got {type(x).__name__}")
        if len(x) != shape[dim]:
            raise ValueError(f"expected sequence of length {shape[dim]} at dim {dim} (got {len(x)})")
        if dim == len(shape) - 1:
            kinds = set(map(type, x))
            if kinds.issubset(_PY_SCALARS):  # the common case: a row of Python numbers, read at once
                self.python_complex |= complex in kinds
                self.dtypes.update(dict.fromkeys(_scalar_dtype(k) for k in kinds))
                self.chunks.append(x)
                return
        for item in x:
            self.read(item, dim + 1)


def _host(x) -> np.ndarray:
    if isinstance(x, Tensor):
        return complex32_widened(x.detach()._host_array())  # (complex32's float16 pairs: NumPy reads complex64)
    return x


def _promoted(dtypes) -> dt.dtype:
    out = None
    for d in dtypes:
        out = d if out is None else dt.promote_types(out, d)
    return dt.get_default_dtype() if out is None else out


def _carrier(d: dt.dtype) -> np.dtype:
    # A NumPy dtype holding every value of that category exactly, before the checked cast.
    if d is dt.uint64:  # past int64's range
        return d.np
    return {dt.FLOAT: np.dtype(np.float64), dt.INT: np.dtype(np.int64), dt.BOOL: np.dtype(np.bool_),
            dt.COMPLEX: np.dtype(np.complex128)}[d.category]


def _unsigned_leaves(chunks: list) -> None:
    """torch's errors for Python numbers read as uint64 (it reads them as C unsigned longs, unchecked
    otherwise): a float is no integer, and negative or too large ints don't convert."""
    for c in chunks:
        if isinstance(c, np.ndarray):
            continue
        for v in c:
            if isinstance(v, float):
                raise TypeError("an integer is required")
            if isinstance(v, int) and v < 0:
                raise OverflowError("can't convert negative int to unsigned")
            if isinstance(v, int) and v >> 64:
                raise OverflowError("int too big to convert")


def _gather(data, target: dt.dtype | None = None) -> tuple:
    """(carrier array, inferred dtype, whether a Python complex was read) for nested sequences, scalars or
    arrays (read as `target` where that changes how: Python ints as uint64)."""
    if isinstance(data, np.ndarray):
        inferred = _numpy_dtype(data.dtype)
        return data, inferred, False
    shape = _first_path_shape(data)
    reader = _Reader(shape)
    reader.read(data, 0)
    inferred = _promoted(reader.dtypes)
    carrier = _carrier(inferred)
    if target is dt.uint64 and not reader.python_complex:
        _unsigned_leaves(reader.chunks)
        carrier = target.np
    try:
        parts = [np.asarray(c, dtype=carrier).reshape(-1) for c in reader.chunks]
    except OverflowError:
        raise ValueError("Overflow when unpacking long long") from None
    flat = np.concatenate(parts) if parts else np.zeros(0, carrier)
    return flat.reshape(shape), inferred, reader.python_complex


_WARNED: set = set()  # the warnings torch gives once per process


def _numpy_dtype(np_dtype) -> dt.dtype:
    """The dtype of NumPy data torch reads; its TypeError for others, ml_dtypes' float8 arrays included."""
    if not np.dtype(np_dtype).isnative:
        raise ValueError("given numpy array has byte order different from the native byte order. Conversion between "
                         "byte orders is currently not supported.")
    d = dt.from_numpy(np_dtype)
    if d in dt.FLOAT8:
        raise TypeError(f"can't convert np.ndarray of type ml_dtypes.{d.name}. The only supported types are: "
                        "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
                        "uint32, uint16, uint8, and bool.")
    return d


def _checked_cast(arr: np.ndarray, target: dt.dtype, checked: bool = True) -> np.ndarray:
    """`arr` converted to `target`, raising PyTorch's overflow error for integers that don't fit (when `checked`:
    torch casts a NumPy array's values as C does, wrapping them)."""
    if checked and target.category == dt.INT and arr.size and arr.dtype.kind in "fiu" and arr.dtype != target.np:
        info = np.iinfo(target.np)
        if arr.dtype.kind == "f":
            bad = not np.isfinite(arr).all() or arr.min() < info.min or arr.max() > info.max
        else:
            lo = -info.max if info.min == 0 else info.min  # unsigned targets wrap negatives, as C++
            bad = int(arr.min()) < lo or int(arr.max()) > info.max
        if bad:
            raise RuntimeError(f"value cannot be converted to type {target.name} without overflow")
    if target is dt.complex32:  # (NumPy can't cast to its float16 pairs)
        return np.array(complex32_cast(arr, target.np), order="K")
    if arr.dtype.kind == "c" and target.category != dt.COMPLEX:
        arr = arr.real  # NumPy complex data cast to a real dtype keeps its real parts, as torch's copy
    if target in dt.FLOAT8 or is_float8(arr.dtype):  # torch's float8 rounding and special values
        return np.array(float8_cast(arr, target.np), order="K")
    with np.errstate(over="ignore", invalid="ignore"):
        if target.np.kind == "V" and arr.dtype.kind != "f":  # bfloat16 converts from floats only
            arr = arr.astype(np.float64)
        return np.array(arr, dtype=target.np, order="K")  # keeps a NumPy input's layout, as PyTorch does


def _holding(arr: np.ndarray, target: dt.dtype) -> Tensor:
    """A CPU tensor using `arr`'s memory (a fresh copy: ours to keep)."""
    if target not in dt.FLOAT8:
        return Tensor._from_array(arr, target, share=True)
    # NumPy's as_strided can't read ml_dtypes' float8 arrays: hold their bytes and give them the dtype
    arr = arr if arr.flags.c_contiguous else arr.copy(order="C")
    v = Tensor._from_array(arr.view(np.uint8), dt.uint8, share=True)._v
    return Tensor._make(View(v.blob, v.shape, v.strides, v.offset, target.np), target, CPU, v.blob.vm)


def _copy_of_tensor(data: Tensor, dtype, dev, call: str | None = None) -> Tensor:
    """A copy of `data`, with torch's warning naming the call (`torch.tensor`, or `tensor.new_tensor`)."""
    call = call or f"{dt.repr_namespace[0]}.tensor"
    warnings.warn("To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
                  "or sourceTensor.detach().clone().requires_grad_(True), rather than "
                  f"{call}(sourceTensor).", UserWarning, stacklevel=user_stacklevel())
    out = convert(data.detach(), dtype or data.dtype)
    return out if dev is None or dev == out.device else out.to(dev)


def tensor(data, *, dtype: dt.dtype | None = None, device=None, requires_grad: bool = False,
           pin_memory: bool = False) -> Tensor:
    """A new tensor holding a copy of `data` (numbers, nested sequences, NumPy arrays, tensors)."""
    return copied(data, dtype, device, requires_grad)


def copied(data, dtype, device, requires_grad: bool, call: str | None = None) -> Tensor:
    """torch.tensor's work; `call` names the function a tensor `data` is copied by in the warning."""
    dtype = dtype_arg("tensor", dtype)
    dev = None if device is None and not OPEN_BLOCKS[0] else device_arg(device)  # (with device(d): d)
    if isinstance(data, (list, tuple)) and data and isinstance(data[0], np.ndarray) and "arrays" not in _WARNED:
        _WARNED.add("arrays")  # torch's TORCH_WARN_ONCE
        warnings.warn("Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting "
                      "the list to a single numpy.ndarray with numpy.array() before converting to a tensor.",
                      UserWarning, stacklevel=user_stacklevel())
    if isinstance(data, Tensor):
        check_requires_grad(dtype or data.dtype, requires_grad)
        out = _copy_of_tensor(data, dtype, dev, call)
    else:
        arr, inferred, python_complex = _gather(data, dtype)
        target = dtype or inferred
        if python_complex and target.category != dt.COMPLEX:
            # torch reads each Python leaf as the target's scalar type: a complex number is no real one
            raise TypeError("must be real number, not complex" if target.category == dt.FLOAT else
                            "'complex' object cannot be interpreted as an integer")
        check_requires_grad(target, requires_grad)
        out = _holding(_checked_cast(arr, target, not isinstance(data, np.ndarray)), target)
        if dev is not None and dev != CPU:
            out = out.to(dev)
    out.requires_grad = requires_grad
    return out


def as_tensor(data, dtype: dt.dtype | None = None, device=None) -> Tensor:
    """`data` as a tensor without copying when it already is one (or a NumPy array) of that dtype and device."""
    dtype = dtype_arg("as_tensor", dtype)
    dev = None if device is None and not OPEN_BLOCKS[0] else device_arg(device)  # (with device(d): d)
    if isinstance(data, Tensor):
        out = data if dtype is None or dtype is data.dtype else convert(data, dtype)
        return out if dev is None or dev == out.device else out.to(dev)
    if isinstance(data, np.ndarray) and dev in (None, CPU) and all(s >= 0 for s in data.strides):
        try:
            native = _numpy_dtype(data.dtype)
        except TypeError:
            native = None
        if native is not None and (dtype is None or dtype is native):
            return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(ndarray: np.ndarray) -> Tensor:
    """A CPU tensor sharing `ndarray`'s memory: writes through either are seen by the other (ops on it run
    at their call, as torch's: see VirtualMachine.lent)."""
    if not isinstance(ndarray, np.ndarray):
        kind = type(ndarray)
        name = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
        raise TypeError(f"expected np.ndarray (got {name})")
    dtype = _numpy_dtype(ndarray.dtype)
    if not ndarray.flags.writeable and "read-only" not in _WARNED:  # torch warns once per program
        _WARNED.add("read-only")
        library = "PyTorch" if dt.repr_namespace[0] == "torch" else "tidal"
        warnings.warn(f"The given NumPy array is not writable, and {library} does not support non-writable "
                      "tensors. This means writing to this tensor will result in undefined behavior. You may want to "
                      "copy the array to protect its data or make it writable before converting it to a tensor. "
                      "This type of warning will be suppressed for the rest of this program.",
                      UserWarning, stacklevel=user_stacklevel())
    out = Tensor._from_array(ndarray, dtype, share=True)
    out._vm.lend(out._v.blob)
    return out
