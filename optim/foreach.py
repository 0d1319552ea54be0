"""Multi-tensor updates: an optimizer's list-wide update function run as ONE VM instruction.

Each optimizer writes its update once, as a function over lists of tensors (`sgd`, `adam`...)
that uses a handful of tensor methods (`mul_`, `add_`, `lerp_`, `addcmul_`, `addcdiv_`, `sqrt`).
`foreach` queues a single kernel for the whole parameter group; on the worker the same function
runs again over `HostArray`s, NumPy arrays with those methods, computing as tidal's elementwise
ops do (same operation order, scalars in the array's dtype). So a step costs one instruction per
group instead of several per parameter (PyTorch's foreach idea), with the math written once.
Where the kernel does not apply (other devices or dtypes, a differentiable step), the function
simply runs on the tensors, one fused kernel per parameter.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..autograd.grad_mode import is_grad_enabled
from ..ops.dispatch.primitive import Primitive
from ..tensor import Tensor
from ..tensor import dtype as dt
from ..vm.codegen import kernel_module

_DTYPES = (dt.float32, dt.float64)


class HostArray:
    """A NumPy array with the in-place tensor methods optimizers use, evaluated as tidal's ops are."""

    __slots__ = ("a",)

    def __init__(self, a: np.ndarray):
        self.a = a if a.__class__ is np.ndarray else np.asarray(a)  # 0-d results come back as scalars

    def _scalar(self, x):
        return self.a.dtype.type(x)  # a Python scalar in the array's dtype, as elementwise plans cast it

    def _value(self, x):
        return x.a if isinstance(x, HostArray) else self._scalar(x)

    def _scaled(self, other, alpha):
        other = self._value(other)
        return other if alpha == 1 else other * self._scalar(alpha)

    # -- in place ------------------------------------------------------------------------------
    def mul_(self, other) -> "HostArray":
        np.multiply(self.a, self._value(other), out=self.a)
        return self

    def div_(self, other) -> "HostArray":
        np.divide(self.a, self._value(other), out=self.a)
        return self

    def add_(self, other, alpha=1) -> "HostArray":
        np.add(self.a, self._scaled(other, alpha), out=self.a)
        return self

    def sqrt_(self) -> "HostArray":
        np.sqrt(self.a, out=self.a)
        return self

    def addcmul_(self, tensor1, tensor2, value=1) -> "HostArray":
        np.add(self.a, self._scaled(tensor1, value) * self._value(tensor2), out=self.a)
        return self

    def addcdiv_(self, tensor1, tensor2, value=1) -> "HostArray":
        np.add(self.a, self._scaled(tensor1, value) / self._value(tensor2), out=self.a)
        return self

    def lerp_(self, end, weight) -> "HostArray":
        # tidal's (and PyTorch's) two-sided lerp, with a scalar weight; float32 rounds once, as torch's fused
        # multiply-add (an exact float64 product and sum: ops/elementwise's float32 lerp template)
        w, end = self._scalar(weight), self._value(end)
        if self.a.dtype == np.float32:
            d = (end - self.a).astype(np.float64)
            fused = self.a + np.float64(w) * d if abs(w) < 0.5 else end + (np.float64(w) - 1.0) * d
            np.copyto(self.a, fused, casting="same_kind")
        elif abs(w) < 0.5:
            np.add(self.a, w * (end - self.a), out=self.a)
        else:
            np.subtract(end, (end - self.a) * (self._scalar(1) - w), out=self.a)
        return self

    # -- new values ----------------------------------------------------------------------------
    def add(self, other, alpha=1) -> "HostArray":
        return HostArray(self.a + self._scaled(other, alpha))

    def addcmul(self, tensor1, tensor2, value=1) -> "HostArray":
        return HostArray(self.a + self._scaled(tensor1, value) * self._value(tensor2))

    def sqrt(self) -> "HostArray":
        return HostArray(np.sqrt(self.a))

    def __neg__(self) -> "HostArray":
        return HostArray(-self.a)

    def __mul__(self, other) -> "HostArray":
        return HostArray(self.a * self._value(other))

    def __truediv__(self, other) -> "HostArray":
        return HostArray(self.a / self._value(other))

    # -- used by NAdam, RAdam, Adamax, ASGD, Rprop and Adafactor ----------------------------------
    def sub_(self, other, alpha=1) -> "HostArray":
        np.subtract(self.a, self._scaled(other, alpha), out=self.a)
        return self

    def copy_(self, src) -> "HostArray":
        np.copyto(self.a, self._value(src))
        return self

    def maximum_(self, other) -> "HostArray":
        np.maximum(self.a, self._value(other), out=self.a)
        return self

    def clamp_(self, min=None, max=None) -> "HostArray":  # noqa: A002 - torch's argument names
        if min is not None:
            np.maximum(self.a, self._value(min), out=self.a)
        if max is not None:
            np.minimum(self.a, self._value(max), out=self.a)
        return self

    def rsqrt_(self) -> "HostArray":
        np.divide(self._scalar(1), np.sqrt(self.a), out=self.a)
        return self

    def square_(self) -> "HostArray":
        np.multiply(self.a, self.a, out=self.a)
        return self

    def masked_fill_(self, mask: "HostArray", value) -> "HostArray":
        np.copyto(self.a, self._scalar(value), where=mask.a)
        return self

    def masked_fill(self, mask: "HostArray", value) -> "HostArray":
        return HostArray(self.a.copy()).masked_fill_(mask, value)

    def sub(self, other, alpha=1) -> "HostArray":
        return HostArray(self.a - self._scaled(other, alpha))

    def abs(self) -> "HostArray":
        return HostArray(np.abs(self.a))

    def sign(self) -> "HostArray":
        out = np.asarray(np.sign(self.a))
        np.copyto(out, 0, where=np.isnan(out))  # torch's sign(nan) is 0
        return HostArray(out)

    def clone(self) -> "HostArray":
        return HostArray(self.a.copy())

    def gt(self, other) -> "HostArray":
        return HostArray(self.a > self._value(other))

    def lt(self, other) -> "HostArray":
        return HostArray(self.a < self._value(other))

    def eq(self, other) -> "HostArray":
        return HostArray(self.a == self._value(other))

    def norm(self, p=2, dim=None, keepdim=False) -> "HostArray":
        if p != 2:
            raise NotImplementedError("HostArray.norm: only the 2-norm")
        return HostArray(np.sqrt(np.sum(self.a * self.a, axis=dim, keepdims=keepdim)))

    def mean(self, dim=None, keepdim=False) -> "HostArray":
        return HostArray(np.mean(self.a, axis=dim, keepdims=keepdim))

    def numel(self) -> int:
        return self.a.size

    def dim(self) -> int:
        return self.a.ndim

    def size(self, dim=None):
        return self.a.shape if dim is None else self.a.shape[dim]

    def __matmul__(self, other) -> "HostArray":
        return HostArray(np.matmul(self.a, other.a))

    def __rtruediv__(self, other) -> "HostArray":
        return HostArray(self._scalar(other) / self.a)


_ONE_PASS: dict = {}  # list-wide update function -> its one-pass form on NumPy arrays (see one_pass)


def one_pass(update: Callable, fused: Callable) -> None:
    """Register `fused(lists, kwargs) -> bool`, `update`'s one-pass form over the kernel's NumPy arrays (built on
    compiled_loops()): where it applies it runs the step and answers True, else the list-wide function runs."""
    _ONE_PASS[update] = fused


def compiled_loops():
    """The compiled update loops (optim/foreach_kernels.py) once loaded, else None."""
    return kernel_module(".foreach_kernels", __package__)


def contiguous(*lists) -> bool:
    """Whether the lists' arrays are C-contiguous and, position by position, of one size (a one-pass loop's
    operands)."""
    for arrays in zip(*lists):
        size = arrays[0].size
        for a in arrays:
            if not a.flags.c_contiguous or a.size != size:
                return False
    return True


def _foreach_kernel(ins, outs, attrs) -> None:
    fn, layout, kwargs = attrs
    arrays = (ins, outs)
    lists = [value if kind is None else arrays[kind][start:start + count] for kind, start, count, value in layout]
    fused = _ONE_PASS.get(fn)
    if fused is not None and fused(lists, kwargs):
        return
    lists = [v if layout[k][0] is None else [HostArray(a) for a in v] for k, v in enumerate(lists)]
    with np.errstate(all="ignore"):  # as elementwise kernels: inf/nan results, no warnings
        fn(*lists, **kwargs)


def _layout(lists: tuple, written: tuple):
    """(ins, outs, layout) for the kernel, or None when a tensor is outside the kernel's domain (not a
    CPU tensor of the one float dtype of the rest) or a list mixes tensors and plain values."""
    ins, outs, layout = [], [], []
    dtype = None
    for k, values in enumerate(lists):
        types = set(map(type, values))  # a loop in C: this runs for every list of every step
        tensors = [issubclass(t, Tensor) for t in types]
        if not any(tensors):  # plain values: step counts, or None for state a configuration does not use
            layout.append((None, 0, 0, values))
            continue
        if not all(tensors):
            return None
        if dtype is None:
            dtype = values[0].dtype
        for t in values:
            if t.dtype is not dtype or t.device.type != "cpu":
                return None
        target = outs if k in written else ins
        layout.append((1 if k in written else 0, len(target), len(values), None))
        target.extend(values)
    if dtype not in _DTYPES:
        return None
    return ins, outs, layout


def foreach(fn: Callable, lists: tuple, written: tuple, kwargs: dict, enabled: bool = True) -> None:
    """Run the list-wide update `fn(*lists, **kwargs)`: as one multi-tensor instruction when it can,
    else directly on the tensors. `written` gives the positions of the lists updated in place; `kwargs`
    is a dict (not keywords), so that the step does not copy it on the way."""
    plan = _layout(lists, written) if enabled and lists[0] and not is_grad_enabled() else None
    if plan is None:
        fn(*lists, **kwargs)
        return
    ins, outs, layout = plan
    FOREACH_UPDATE.write(tuple(ins), tuple(outs), (fn, tuple(layout), kwargs))


# the optimizers' multi-tensor update, written in place (no node: optimizers step under no_grad)
FOREACH_UPDATE = Primitive("foreach_update", None, cpu=_foreach_kernel, cuda=None)
