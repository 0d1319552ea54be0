"""Tensor: a handle on a view of a blob, with dtype, device and autograd fields.

Ops are attached as methods by `tidal.ops`; this file holds what every tensor is.
"""
from __future__ import annotations

import threading

import numpy as np

from ..vm import Blob, View, fresh_view, get_vm
from ..vm.blob import contiguous_strides, numel_of  # noqa: F401  (re-exported: ops use them)
from . import dtype as dt
from .device import cpu, device
from .printing import format_tensor
from .printing import host_values
from .printing import meta_repr


class Size(tuple):
    """A tensor shape: a tuple of ints that prints as `tidal.Size([2, 3])` (`torch.Size` under compat.install())."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{dt.repr_namespace[0]}.Size({list(self)})"

    def numel(self) -> int:
        """The product of the dimensions."""
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, item):
        out = tuple.__getitem__(self, item)
        return Size(out) if isinstance(item, slice) else out

    # concatenation and repetition keep the type, as torch.Size's (tuple's would give a plain tuple)
    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to {dt.repr_namespace[0]}.Size")
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple.__add__(other, self))

    def __mul__(self, times):
        if not hasattr(times, "__index__"):
            raise TypeError(f"can't multiply sequence by non-int of type '{type(times).__name__}'")
        return Size(tuple.__mul__(self, times))

    __rmul__ = __mul__


ONE_ELEMENT = "only one element tensors can be converted to Python scalars"  # int(t), float(t), complex(t)
SCALAR_WARNED: list = []  # float() of a tensor that requires grad has warned (torch's TORCH_WARN_ONCE)


class _GradMode(threading.local):
    # autograd's grad mode switch lives here, beside inference mode, so that Tensor reads it without importing
    # autograd (which sits above tensor). Class attributes are each thread's defaults: reading them needs no
    # getattr default (which costs an AttributeError inside threading.local on every op that records)
    enabled = True


GRAD_MODE = _GradMode()


class _FromOps:
    """What Tensor needs from ops (which sits above tensor), set by tidal.ops when it loads: building a tensor
    from data, and reading one of more dims than NumPy holds, are ops."""
    legacy_new = from_numpy = tolist_many_dims = None


FROM_OPS = _FromOps()


def _grad_mode_on() -> bool:
    return GRAD_MODE.enabled


class VersionCounter:
    """A version counter of its own (`x.data`'s); every other tensor counts in its blob's `version`."""

    __slots__ = ("version",)

    def __init__(self):
        self.version = 0


class _ThreadInference(threading.local):
    active = False  # this thread is inside inference_mode (a class default: no getattr fallback per read)


class _Inference:
    """Inference mode (autograd.grad_mode.inference_mode): whether tensors made now are inference tensors
    (Tensor.is_inference). `active` is a plain attribute read on the hot path: True while any thread is
    inside inference_mode, and only then is this thread's own flag (`here.active`) consulted."""

    __slots__ = ("active", "threads", "here", "_lock")

    def __init__(self):
        self.active = False
        self.threads = 0  # threads now inside inference_mode
        self.here = _ThreadInference()
        self._lock = threading.Lock()

    def now(self) -> bool:
        """Whether this thread is inside inference_mode."""
        return self.active and self.here.active

    def set(self, on: bool) -> None:
        """Enter (True) or leave (False) inference mode on this thread."""
        if self.here.active == on:
            return
        self.here.active = on
        with self._lock:
            self.threads += 1 if on else -1
            self.active = self.threads > 0


INFERENCE = _Inference()

# each memory format's dims, innermost first (None: row-major)
_INNERMOST_FIRST = {"contiguous_format": None, "preserve_format": None, "channels_last": (1, 3, 2, 0),
                    "channels_last_3d": (1, 4, 3, 2, 0)}


class Tensor:
    """A multi-dimensional array on a device whose ops run as VM instructions."""

    __slots__ = ("_v", "dtype", "device", "_vm", "_retains_grad", "_hooks", "_name", "__weakref__", "__dict__")
    __array_priority__ = 1000  # NumPy defers to our reflected operators
    _output_nr = 0  # which output of its grad_fn this tensor is (set for multi-output ops)
    # autograd fields: class-level defaults, set on the instance only for tensors in a graph, so
    # making a tensor on the hot path writes four fields
    _requires_grad = False  # what `requires_grad` reads; internal code that records graphs writes it directly
    grad = None
    grad_fn = None
    _base = None
    _vc = None  # `x.data`'s own version counter, shared by its views (None: the blob's, shared by x's views)
    _inference = False  # made under inference_mode (ops/grad_attrs.is_inference)

    # -- construction --------------------------------------------------------------------
    def __new__(cls, *args, **kwargs):
        """`Tensor(2, 3)`, `Tensor([1., 2.])`: torch's legacy constructor, in the default dtype (tidal makes
        its own tensors with _make, which never comes here; subclasses keep plain object construction)."""
        if cls is not Tensor:
            return object.__new__(cls)
        return FROM_OPS.legacy_new(dt.get_default_dtype(), *args, **kwargs)

    @classmethod
    def _make(cls, view: View, dtype: dt.dtype, dev: device, vm, base=None) -> "Tensor":
        t = object.__new__(cls)
        t._v = view
        t.dtype = dtype
        t.device = dev
        t._vm = vm
        if base is not None:
            t._base = base
            if base._vc is not None:
                t._vc = base._vc
        if INFERENCE.active and INFERENCE.now():
            t._inference = True
        return t

    @classmethod
    def _empty(cls, shape: tuple, dtype: dt.dtype, dev: device = cpu) -> "Tensor":
        """A new contiguous tensor whose memory is allocated when first written."""
        vm = get_vm(dev)
        return cls._make(fresh_view(numel_of(shape) * dtype.itemsize, vm, shape, contiguous_strides(shape), dtype.np),
                         dtype, dev, vm)

    @classmethod
    def _from_array(cls, arr: np.ndarray, dtype: dt.dtype | None = None, share: bool = False) -> "Tensor":
        """A CPU tensor holding `arr`'s values; with `share`, it uses `arr`'s memory."""
        if dtype is None:
            dtype = dt.from_numpy(arr.dtype)
        if not share:
            arr = np.array(arr, dtype=dtype.np, order="C", copy=True)
        vm = get_vm(cpu)
        item = arr.itemsize
        if arr.strides and min(arr.strides) < 0:  # (also a size-1 dim's, which a contiguous array may have, as torch)
            raise ValueError("At least one stride in the given numpy array is negative, and tensors "
                             "with negative strides are not currently supported. (You can probably "
                             "work around this by making a copy of your array  with array.copy().) ")
        if arr.flags.c_contiguous and arr.size:  # (the usual case: a flat view, without as_strided's few us)
            flat = arr.reshape(-1).view(np.uint8)
        else:
            span = 1 + sum((n - 1) * s // item for n, s in zip(arr.shape, arr.strides)) if arr.size else 0
            flat = np.lib.stride_tricks.as_strided(arr, (span,), (item,)).view(np.uint8) if span else \
                np.empty(0, np.uint8)
        blob = Blob(flat.shape[0], vm, data=flat)  # lent memory: never freed by us
        strides = tuple(s // item for s in arr.strides)
        return cls._make(View(blob, tuple(arr.shape), strides, 0, dtype.np), dtype, cpu, vm)

    # -- metadata ------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The size of each dimension."""
        return Size(self._v.shape)

    def size(self, dim: int | None = None):
        """The shape, or the size of one dimension."""
        if dim is None:
            return Size(self._v.shape)
        if not self._v.shape:  # torch wraps no dim of a 0-d tensor here (ops take dim 0 / -1 of a scalar)
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._v.shape[self._dim(dim, "size")]

    def stride(self, dim: int | None = None):
        """The strides in elements, or the stride of one dimension."""
        if dim is None:
            return self._v.strides
        if not self._v.shape:
            raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
        return self._v.strides[self._dim(dim, "stride")]

    def storage_offset(self) -> int:
        """The offset of the first element in the underlying storage, in elements."""
        return self._v.offset

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self._v.shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._v.shape)

    def numel(self) -> int:
        """The number of elements."""
        return numel_of(self._v.shape)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element."""
        return self.dtype.itemsize

    def is_contiguous(self, memory_format=None) -> bool:
        """Whether the strides are dense in `memory_format`'s order (row-major by default, where every
        empty tensor counts as contiguous; size-1 dims ignored), as in PyTorch."""
        name = "contiguous_format" if memory_format is None else \
            str(getattr(memory_format, "name", memory_format)).split(".")[-1]
        order = _INNERMOST_FIRST.get(name, ())
        shape, strides = self._v.shape, self._v.strides
        if order is None:
            if 0 in shape:  # (torch's special case for the default format only)
                return True
            order = range(len(shape) - 1, -1, -1)
        elif len(order) != len(shape):
            return False
        expected = 1
        for d in order:
            if shape[d] != 1:
                if strides[d] != expected:
                    return False
                expected *= shape[d]
        return True

    @property
    def data(self) -> "Tensor":
        """The values as a tensor sharing this one's memory, outside the autograd graph."""
        out = Tensor._make(self._v, self.dtype, self.device, self._vm)
        out._vc = VersionCounter()  # writes through it do not invalidate this tensor's saved values (torch)
        if self._inference:  # a view of an inference tensor is one
            out._inference = True
        return out

    @data.setter
    def data(self, value: "Tensor") -> None:
        # point this tensor at `value`'s memory, dtype and device, keeping identity and flags
        self._v, self.dtype, self.device, self._vm, self._base = value._v, value.dtype, value.device, value._vm, \
            value._base

    def _set_requires_grad(self, value: bool) -> None:
        # torch's checks for `t.requires_grad = value` (ops set `_requires_grad` directly, unchecked)
        if value.__class__ is not bool:
            raise RuntimeError("requires_grad must be a bool")
        if "_fw_only" in self.__dict__ and self._requires_grad:
            # torch's leaf: a tensor in a graph for forward AD's sake alone; True: its gradient lands in .grad
            if value:
                del self.__dict__["_fw_only"]
                self.retain_grad()
            return
        if self.grad_fn is not None:
            raise RuntimeError("you can only change requires_grad flags of leaf variables." + (
                "" if value else " If you want to use a computed variable in a subgraph that doesn't require "
                "differentiation use var_no_grad = var.detach()."))
        if value and not (self.dtype.is_floating_point or self.dtype.is_complex):
            raise RuntimeError("only Tensors of floating point and complex dtype can require gradients")
        if value and (self._base if self._base is not None else self)._inference and not INFERENCE.now():
            raise RuntimeError("Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.")
        if not value and "_nograd_view" in self.__dict__:
            return  # a view made under no_grad keeps reading its base's flag, as in torch (autograd/view_inplace)
        self._requires_grad = value

    def _del_requires_grad(self) -> None:
        raise RuntimeError("requires_grad must be a bool")  # (torch's answer to `del t.requires_grad`)

    def _get_requires_grad(self) -> bool:
        # torch's value: False for tensors in a graph for forward AD's sake alone (forward_ad's `_fw_only` mark);
        # the dict is read only when the flag is set. Internal code deciding what to record reads `_requires_grad`
        return self._requires_grad and "_fw_only" not in self.__dict__

    requires_grad = property(_get_requires_grad, _set_requires_grad, _del_requires_grad,
                             "Whether gradients are computed for this tensor.")

    @property
    def is_leaf(self) -> bool:
        """True for tensors not produced by a differentiable op (forward AD's own tensors too, as torch's)."""
        return self.grad_fn is None or "_fw_only" in self.__dict__

    @property
    def is_cuda(self) -> bool:
        """Whether the tensor is on a CUDA device."""
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        """Whether the tensor is on the CPU."""
        return self.device.type == "cpu"

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating type."""
        return self.dtype.category == dt.FLOAT

    def is_complex(self) -> bool:
        """Always False (no complex dtypes)."""
        return False

    @property
    def _version(self) -> int:
        if (self._base if self._base is not None else self)._inference:  # (views of one too, as torch's)
            raise RuntimeError("Inference tensors do not track version counter.")
        return (self._vc or self._v.blob).version

    def data_ptr(self) -> int:
        """The address of the first element (waits for the tensor's writer); 0 for a meta tensor, as torch."""
        if self.device.type == "meta":
            return 0
        self._sync()
        blob = self._v.blob
        if blob.data is None:
            blob.hold(self._vm.allocator.alloc(blob.nbytes))
        return self._vm.backend.array(self._v).__array_interface__["data"][0]

    def untyped_storage_id(self) -> int:
        """An id shared by every view of the same memory."""
        return id(self._v.blob)

    def _dim(self, dim: int, op: str) -> int:
        n = len(self._v.shape)
        lo, hi = (-n, n - 1) if n else (-1, 0)
        if not isinstance(dim, (int, np.integer)) or isinstance(dim, bool):
            raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
        if dim < lo or dim > hi:
            raise IndexError(f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})")
        return dim % max(n, 1)

    is_global = False  # tidal.comm.GlobalTensor says True; `to_global` is bound by tidal (comm sits above tensor)

    # -- sync points ---------------------------------------------------------------------
    def _sync(self) -> None:
        self._vm.wait_blob(self._v.blob)

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The values as a NumPy array sharing this tensor's memory (waits for pending work)."""
        if self.dtype in dt.NO_NUMPY:  # torch has no NumPy dtype for them (tidal's arrays are ml_dtypes', pairs)
            raise TypeError(f"Got unsupported ScalarType {self.dtype.scalar_name}")
        if not force:
            self._check_numpy()
        return self._lent_array()

    def _lent_array(self) -> np.ndarray:
        """The host array sharing this tensor's memory, lent to the program: numpy()'s, for any dtype (DLPack)."""
        array = self._host_array()
        if self.device.type == "cpu":  # the program's own view of the blob: while it lives, ops on the blob
            array = array.view()       # run at their call (see VirtualMachine.lent), and the ones pending
            self._vm.synchronize()     # now finish before the program can write through it
            self._vm.lend(self._v.blob, array)
        return array

    def _host_array(self) -> np.ndarray:
        self._vm.wait_blob(self._v.blob)  # (not _sync: a deferred error's traceback stays short)
        blob = self._v.blob
        if blob.data is None:  # never written (an empty() tensor): give it memory now
            blob.hold(self._vm.allocator.alloc(blob.nbytes))
        return self._vm.backend.to_host(self._v) if hasattr(self._vm.backend, "to_host") \
            else self._vm.backend.array(self._v)

    def item(self):
        """The single value of a one-element tensor, as a Python number."""
        if self.device.type == "meta":
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"a Tensor with {n} elements cannot be converted to Scalar")
        if len(self._v.shape) > 64:  # more dims than a NumPy array holds
            return self.reshape(()).item()
        if self.dtype is dt.complex32:  # (float16 pairs: their complex64 value)
            return dt.complex32_values(self._host_array().reshape(())).item()
        return self._host_array().reshape(()).item() if self.dtype.np.kind != "V" else \
            float(self._host_array().reshape(()).astype(np.float32))

    def tolist(self):
        """The values as (nested) Python lists."""
        if len(self._v.shape) > 64:  # more dims than a NumPy array holds: ops/many_dims reads them
            return FROM_OPS.tolist_many_dims(self)
        arr = self._host_array()
        if self.dtype in (dt.bfloat16,):
            arr = arr.astype(np.float32)
        elif self.dtype is dt.complex32:
            arr = dt.complex32_values(arr)
        return arr.tolist()

    def _check_numpy(self) -> None:
        """torch's refusals of numpy(): a tensor that requires grad while grad mode is on, or not on the CPU."""
        if self.requires_grad:
            if _grad_mode_on():
                raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                                   "Use tensor.detach().numpy() instead.")
        if self.device.type != "cpu":
            where = self.device if self.device.type == "meta" else f"{self.device.type}:{self.device.index or 0}"
            raise TypeError(f"can't convert {where} device type tensor "
                            "to numpy. Use Tensor.cpu() to copy the tensor to host memory first.")

    def __array__(self, dtype=None, copy=None):
        if self.dtype in dt.NO_NUMPY:
            raise TypeError(f"Got unsupported ScalarType {self.dtype.scalar_name}")
        if self.requires_grad or self.device.type == "meta":  # torch's __array__ is numpy()'s (cuda: see to_host)
            self._check_numpy()
        arr = self._host_array()
        return arr if dtype is None else arr.astype(dtype)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # torch's: what a NumPy ufunc computed from a tensor operand (`np.sin(t)`, `t + array` after the operator
        # gave NotImplemented) comes back as a tensor; a bool result as uint8
        return FROM_OPS.from_numpy(array.astype("uint8") if array.dtype == bool else array)

    def __bool__(self) -> bool:
        n = self.numel()
        if n != 1:
            raise RuntimeError(f"Boolean value of Tensor with {'no values' if n == 0 else 'more than one value'} "
                               "is ambiguous")
        return bool(self._int64_item())

    def __float__(self) -> float:
        if self.numel() != 1:
            raise ValueError(ONE_ELEMENT)
        if self._requires_grad and not SCALAR_WARNED and _grad_mode_on():  # torch: once per process, grad mode on
            SCALAR_WARNED.append(True)
            import warnings
            warnings.warn("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\n"
                          "Consider using tensor.detach() first.", UserWarning, stacklevel=2)
        return float(self.item())

    def __int__(self) -> int:
        if self.numel() != 1:
            raise ValueError(ONE_ELEMENT)
        return int(self._int64_item())

    def __index__(self) -> int:
        if self.dtype.category not in (dt.INT, dt.BOOL) or self.numel() != 1:  # (torch takes bool: True is 1)
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self._int64_item())

    def _int64_item(self):
        """item(), refused as torch's conversion through int64_t refuses a uint64 value past its range."""
        value = self.item()
        if self.dtype is dt.uint64 and value >> 63:
            raise RuntimeError("value cannot be converted to type int64_t without overflow")
        return value

    def __len__(self) -> int:
        if not self._v.shape:
            raise TypeError("len() of a 0-d tensor")
        return self._v.shape[0]

    def __iter__(self):
        if not self._v.shape:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self._v.shape[0]))

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        if self.device.type == "meta":  # no values to show: torch prints the size instead
            return meta_repr(self)
        arr, shape = host_values(self)  # (shape: past 64 dims, the values lack their dims of extent 1)
        if self.dtype in (dt.float16, dt.bfloat16):
            arr = arr.astype(np.float32)
        kind = {dt.BOOL: "bool", dt.INT: "int", dt.FLOAT: "float", dt.COMPLEX: "complex"}[self.dtype.category]
        show = self.dtype not in (dt.get_default_dtype(), dt.get_default_complex_dtype(), dt.int64, dt.bool_)
        extras = []
        if self.device.type != "cpu":
            extras.append(("device", f"'{self.device}'"))
        if self.grad_fn is not None and "_fw_only" not in self.__dict__:  # (forward AD's own: torch shows none)
            extras.append(("grad_fn", f"<{type(self.grad_fn).__name__}>"))
        elif self.requires_grad:
            extras.append(("requires_grad", "True"))
        return format_tensor(arr, kind=kind, dtype_repr=repr(self.dtype), show_dtype=show, extras=extras,
                             shape=shape)

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        # torch's: a plain 0-d tensor formats as its number (f"{loss}" prints 0.693...), anything else as object
        if self.dim() == 0 and type(self) is Tensor and not self.is_meta:
            return self.detach().item().__format__(spec)
        return object.__format__(self, spec)

    def __reduce_ex__(self, protocol):
        arr = np.array(self.detach()._host_array())
        return (_rebuild, (arr, self.dtype.name, self.requires_grad))

    def __setstate__(self, state):  # pragma: no cover - rebuilt through _rebuild
        pass

    def __deepcopy__(self, memo):
        if not self.is_leaf:  # torch's refusal (a module holding a computed tensor: weight_norm's weight)
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) support the deepcopy "
                               "protocol at the moment.  If you were attempting to deepcopy a module, this may be "
                               "because of a torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        if id(self) in memo:
            return memo[id(self)]
        out = self.detach().clone()
        out.requires_grad = self.requires_grad
        if self.grad is not None:  # the gradient comes along, as in torch
            out.grad = self.grad.__deepcopy__(memo)
        memo[id(self)] = out
        return out


def _rebuild(arr, dtype_name, requires_grad):
    t = Tensor._from_array(arr, dt.from_name(dtype_name))
    t.requires_grad = requires_grad
    return t
