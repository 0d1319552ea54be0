"""Batched values for vmap: a function runs once on tensors that carry their batch dim.

A `BatchedTensor` is a tensor-like (not a Tensor) holding `value`, whose dim 0 is the batch dim of one vmap level,
and that level. Every other dim is the per-sample view the function sees: `shape`, `dim()`, `size()` leave the
batch dim out. Nested vmaps nest the wrappers: the value of a level-2 tensor may itself be a level-1 BatchedTensor,
so an op peels one level at a time and the innermost call runs on plain tensors.

Torch functions reach `BatchedTensor.__torch_function__` through tidal's protocol for tensor-likes (a plain op fails
on one, then dispatches: plain tensors pay nothing); its methods and operators call the same handler. The handler
takes the highest level among the arguments and runs the op's batching rule (batching_rules.py), which calls the op
once on the values with the batch dim in front; an op without a rule runs once per sample on the slices and stacks
(`loop_op`), with a one-time warning naming it. Values read back as Python numbers or truth values (`bool(x)`,
`x.item()`) must agree across the batch, as they would in a loop that took the same branch for each sample.
"""
from __future__ import annotations

import itertools
import operator
import warnings
from typing import Any, Callable

from .. import ops
from ..ops.random import rng
from ..tensor import Tensor

__all__ = ["BatchedTensor", "Level", "LEVELS"]

_ids = itertools.count(1)


class Level:
    """One active vmap: its batch size and id (levels nest: a later one is inside an earlier one)."""

    __slots__ = ("id", "size")

    def __init__(self, size: int):
        self.id, self.size = next(_ids), size


LEVELS: list = []  # the active vmap levels, innermost last


class BatchedTensor:
    """A tensor batched over one vmap level: `value` has the batch in dim 0; the rest is the sample's shape."""

    __slots__ = ("value", "level", "__weakref__")

    def __init__(self, value, level: Level):
        self.value, self.level = value, level

    # -- what the per-sample view reports -----------------------------------------------------------------------
    @property
    def shape(self):
        """The sample's shape (the batch dim left out)."""
        return self.value.shape[1:]

    def size(self, dim: int | None = None):
        """The sample's sizes, or one of them."""
        shape = self.value.shape[1:]
        if dim is None:
            return shape
        n = len(shape)
        if not -max(n, 1) <= dim < max(n, 1):
            raise IndexError(f"Dimension out of range (expected to be in range of [{-max(n, 1)}, {max(n, 1) - 1}], "
                             f"but got {dim})")
        return shape[dim % n] if n else 1

    def dim(self) -> int:
        """The sample's number of dims."""
        return self.value.dim() - 1

    ndimension = dim

    @property
    def ndim(self) -> int:
        """The sample's number of dims."""
        return self.value.dim() - 1

    def numel(self) -> int:
        """The sample's number of elements."""
        n = 1
        for s in self.value.shape[1:]:
            n *= s
        return n

    nelement = numel

    def __len__(self) -> int:
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.value.shape[1]

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    @property
    def dtype(self):
        """The dtype."""
        return self.value.dtype

    @property
    def device(self):
        """The device."""
        return self.value.device

    @property
    def requires_grad(self) -> bool:
        """Whether the batched value requires grad."""
        return self.value.requires_grad

    @property
    def _requires_grad(self) -> bool:
        """Whether the batched value is in a graph (forward AD's tensors too: what the transforms read)."""
        return self.value._requires_grad

    @property
    def grad_fn(self):
        """The batched value's autograd node."""
        return self.value.grad_fn

    @property
    def is_leaf(self) -> bool:
        """Whether the batched value is an autograd leaf."""
        return self.value.is_leaf

    @property
    def data(self):
        """The data without autograd history, still batched."""
        return BatchedTensor(self.value.data, self.level)

    @property
    def grad(self):
        """The batched value's gradient, batched (None if it has none)."""
        g = self.value.grad
        return None if g is None else BatchedTensor(g, self.level)

    def __getattr__(self, name: str):
        # (private names are the plain tensor's internals: an op reaching for them fails, and then dispatches here)
        attr = None if name.startswith("_") else getattr(Tensor, name, None)
        if attr is None:
            raise AttributeError(f"'Tensor' object has no attribute '{name}'")
        if isinstance(attr, property):
            if name in _VIEW_PROPERTIES:  # (T, mT, real...: ops on the sample)
                return dispatch(_property_caller(name), (self,), {})
            return getattr(self.value, name)  # (is_cuda, layout, ...: the same for every sample)
        if not callable(attr):
            return attr
        return _Method(self, name)

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self.level.id}, bdim=0, value=\n{self.value!r}\n)"

    # -- values read back: one value for the whole batch, or data-dependent control flow -----------------------
    def _uniform(self, convert: Callable, what: str):
        values = self.value
        flat = values.reshape(self.level.size, -1)
        first = flat[0:1]
        if not bool((flat == first).all()):
            raise RuntimeError(f"vmap: It looks like you're calling {what} on a Tensor whose value differs across the "
                               "batch. We don't support vmap over calling .item() on a Tensor or data-dependent "
                               "control flow (if on a tensor's value); use torch.where or a per-sample value instead")
        return convert(values[0])

    def __bool__(self) -> bool:
        return self._uniform(bool, "bool()")

    def __float__(self) -> float:
        return self._uniform(float, "float()")

    def __int__(self) -> int:
        return self._uniform(int, "int()")

    def __index__(self) -> int:
        return self._uniform(lambda v: v.__index__(), "__index__")

    def item(self):
        """The sample's value as a Python number, if every sample has the same."""
        return self._uniform(lambda v: v.item(), ".item()")

    def tolist(self):
        """The sample's values as lists, if every sample has the same."""
        return self._uniform(lambda v: v.tolist(), ".tolist()")

    def __array__(self, *args, **kwargs):
        raise RuntimeError("vmap: cannot convert a batched tensor to a NumPy array inside the vmapped function")

    numpy = __array__

    __hash__ = object.__hash__

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        """Run torch function `func` on batched arguments through its batching rule (or once per sample)."""
        return dispatch(func, args, kwargs or {})


class _Method:
    """A Tensor method bound to a BatchedTensor: the call goes through the batching rules."""

    __slots__ = ("owner", "name")

    def __init__(self, owner: BatchedTensor, name: str):
        self.owner, self.name = owner, name

    def __call__(self, *args, **kwargs):
        return dispatch(method_caller(self.name), (self.owner, *args), kwargs)


_CALLERS: dict = {}


def method_caller(name: str) -> Callable:
    """A function calling Tensor method `name` on its first argument (named `name`, as rules look it up)."""
    fn = _CALLERS.get(name)
    if fn is None:
        if name.startswith("__r") and hasattr(operator, "__" + name[3:]) and name != "__rshift__":
            # (a reflected operator: Python's protocol on the swapped operands)
            forward = getattr(operator, "__" + name[3:])

            def fn(self, other):
                return forward(other, self)
        elif name.startswith("__") and hasattr(operator, name):
            op = getattr(operator, name)

            def fn(*args):
                return op(*args)
        else:
            def fn(self, *args, **kwargs):
                return getattr(self, name)(*args, **kwargs)
        fn.__name__ = fn.__qualname__ = name
        _CALLERS[name] = fn
    return fn


def _property_caller(name: str) -> Callable:
    def fn(self):
        return getattr(self, name)
    fn.__name__ = fn.__qualname__ = name
    return fn


_VIEW_PROPERTIES = {"T", "mT", "H", "mH", "real", "imag"}


def _operator(name: str):
    def op(self, *args):
        return dispatch(method_caller(name), (self, *args), {})
    op.__name__ = name
    return op


for _name in ("add radd sub rsub mul rmul truediv rtruediv floordiv rfloordiv mod rmod pow rpow matmul rmatmul "
              "and rand or ror xor rxor lshift rlshift rshift rrshift eq ne lt le gt ge neg pos abs invert getitem "
              "setitem iadd isub imul itruediv ifloordiv imod ipow iand ior ixor ilshift irshift").split():
    setattr(BatchedTensor, f"__{_name}__", _operator(f"__{_name}__"))


# -- dispatch ---------------------------------------------------------------------------------------------------
RULES: dict = {}  # op name -> rule(func, level, args, kwargs); filled by batching_rules.py
_warned: set = set()


def op_name(func: Callable) -> str:
    """The name a rule is looked up by (a public op's own name, a method's, an operator's without underscores)."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", "")
    if "." in name:
        name = getattr(func, "__name__", name)
    return name


def top_level(args: tuple, kwargs: dict) -> Level:
    """The innermost vmap level among the batched arguments (one level into lists and tuples)."""
    best = None
    for a in itertools.chain(args, kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for x in items:
            if isinstance(x, BatchedTensor) and (best is None or x.level.id > best.id):
                best = x.level
    return best


def dispatch(func: Callable, args: tuple, kwargs: dict) -> Any:
    """`func(*args, **kwargs)` with batched arguments: its rule at the innermost level, else once per sample."""
    if ACCOUNTS and not _DEPTH[0]:  # (vmap with randomness= 'different' or 'same': the random draws of batched ops)
        before = rng_marks()
        _DEPTH[0] += 1
        try:
            return _dispatch(func, args, kwargs)
        finally:
            _DEPTH[0] -= 1
            after = rng_marks()
            for account in ACCOUNTS:
                account.append((before, after))
    return _dispatch(func, args, kwargs)


ACCOUNTS: list = []  # one list per batched run with randomness 'different' or 'same': (marks before, after) per op
_DEPTH = [0]


def rng_marks() -> dict:
    """Each default generator's (seed, offset): how many random ops have drawn from it."""
    return {kind: (gen._seed, gen._offset) for kind, gen in rng._defaults.items()}


def draws(before: dict, after: dict) -> dict | None:
    """How many random ops drew from each generator between two marks (None if one was seeded again)."""
    out = {}
    for kind, (seed, offset) in after.items():
        seed0, offset0 = before.get(kind, (seed, 0))
        if seed0 != seed:
            return None
        out[kind] = offset - offset0
    return out


def _dispatch(func, args: tuple, kwargs: dict):
    level = top_level(args, kwargs)
    name = op_name(func)
    rule = RULES.get(name)
    if rule is not None:
        result = rule(func, level, args, kwargs)
        if result is not NotImplemented:
            return result
    return loop_op(func, name, level, args, kwargs)


def unwrap(x: Any, level: Level) -> tuple:
    """(value with the batch dim in front, True) for a tensor batched at `level`, else (x, False)."""
    if isinstance(x, BatchedTensor) and x.level is level:
        return x.value, True
    return x, False


def wrap(result: Any, level: Level) -> Any:
    """Each tensor of an op's result (one, or a tuple or list of them) as batched at `level`."""
    if isinstance(result, (Tensor, BatchedTensor)):
        return BatchedTensor(result, level)
    if isinstance(result, (tuple, list)):
        items = [wrap(r, level) for r in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return result


def _slice(x, level: Level, i: int, own: bool = False):
    # (`own`: the sample in a storage of its own, for an op that reads the storage around its input)
    if isinstance(x, BatchedTensor) and x.level is level:
        return x.value[i].clone() if own else x.value[i]
    if isinstance(x, (list, tuple)) and any(isinstance(y, BatchedTensor) and y.level is level for y in x):
        return type(x)(_slice(y, level, i, own) for y in x)
    return x


# ops that address their input's storage (offsets count from the storage's start): each sample gets its own
_STORAGE_OPS = {"as_strided_scatter"}


def loop_op(func: Callable, name: str, level: Level, args: tuple, kwargs: dict) -> Any:
    """`func` run once per sample on the slices, the results stacked: for an op without a batching rule."""
    if name not in _warned:
        _warned.add(name)
        warnings.warn(f"vmap: there is no batching rule for {name}, so vmap runs it once per sample and stacks the "
                      "results (correct, but a Python loop over the batch)", UserWarning, stacklevel=4)
    self = args[0] if args else None
    if name.endswith("_") and not name.startswith("__") or name in IN_PLACE_OPERATORS:
        if not (isinstance(self, BatchedTensor) and self.level is level):
            refuse_in_place(name)
    own = name in _STORAGE_OPS
    results = [func(*[_slice(a, level, i, own) for a in args],
                    **{k: _slice(v, level, i, own) for k, v in kwargs.items()}) for i in range(level.size)]
    if self is not None and all(r is _slice(self, level, i) for i, r in enumerate(results)):
        return self  # an in-place op wrote each slice
    return stack_results(results, name, level)


IN_PLACE_OPERATORS = {f"__i{n}__" for n in "add sub mul truediv floordiv mod pow and or xor lshift rshift".split()} | \
    {"__setitem__"}


def refuse_in_place(name: str) -> None:
    """torch's refusal of an in-place op whose target is not batched while another argument is."""
    raise RuntimeError(f"vmap: {name}(self, *extra_args) is not possible because there exists a Tensor `other` in "
                       "extra_args that has more elements than `self`. This happened due to `other` being vmapped "
                       "over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators "
                       "instead of inplace operators or call vmap with in_dims")


def stack_results(results: list, name: str, level: Level) -> Any:
    """Per-sample results (tensors, tuples of them, or equal Python values) as one batched result."""
    first = results[0]
    if isinstance(first, (Tensor, BatchedTensor)):
        return BatchedTensor(ops.stack(results), level)
    if isinstance(first, (tuple, list)):
        columns = [stack_results([r[k] for r in results], name, level) for k in range(len(first))]
        return type(first)(*columns) if hasattr(first, "_fields") else type(first)(columns)
    if first is None or all(r == first for r in results[1:]):
        return first
    raise RuntimeError(f"vmap: {name} returned a value that differs across the batch ({type(first).__name__}); "
                       "vmap can only batch tensor results")


# -- differentiating inside vmap (func/transforms.py calls these while a vmap level is active) ----------------------
TENSORS = (Tensor, BatchedTensor)  # what the transforms accept as tensors
def _peel(t) -> tuple:
    """(the plain tensor under `t`'s wrappers, the levels it is batched at, outermost wrapper first)."""
    levels = []
    while isinstance(t, BatchedTensor):
        levels.append(t.level)
        t = t.value
    return t, levels


def physical(t: Any) -> Tensor:
    """`t` batched at every active vmap level, as the plain tensor under the wrappers: the batch dims of the levels
    in order (outermost vmap first), then the sample's dims."""
    value, levels = _peel(t)
    present = {lv.id for lv in levels}
    for k, lv in enumerate(LEVELS):
        if lv.id not in present:
            value = value.unsqueeze(k)
            value = value.expand(*value.shape[:k], lv.size, *value.shape[k + 1:])
    return value


def rewrap(value: Tensor) -> Any:
    """A plain tensor laid out as `physical` returns, wrapped again for every active level."""
    for lv in LEVELS:
        value = BatchedTensor(value, lv)
    return value


def lift(t: Any, lift_plain: Callable) -> Any:
    """A transform's differentiable stand-in for `t` inside vmap: the plain tensor batched at every level (an
    unbatched input expanded, so each sample gets its own gradient) lifted by `lift_plain`, wrapped again."""
    if not isinstance(t, TENSORS):
        return t
    return rewrap(lift_plain(physical(t)))


def vjp(vjp_raw: Callable, outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool) -> tuple:
    """`vjp_raw` (sum_i J_i^T v_i per input) on batched values: one backward pass over the plain tensors gives each
    sample's gradient, as the samples never mix."""
    outs = tuple(physical(o) for o in outputs)
    vs = tuple(None if v is None else physical(v) for v in cotangents)
    grads = vjp_raw(outs, tuple(physical(x) for x in inputs), vs, create_graph)
    return tuple(None if g is None else rewrap(g) for g in grads)


def dualize(t: Any, tangent: Any, make: Callable) -> Any:
    """Forward mode inside vmap: `make(plain, plain tangent)` (a dual tensor) on the tensors under the batched values,
    both batched at every level (an unbatched one expanded), wrapped again."""
    return rewrap(make(physical(t), None if tangent is None else physical(tangent)))


def linearize(linearize_fn: Callable, handle: Callable, outputs: list, duals: list, create_graph: bool) -> Callable:
    """`linearize_fn` (forward_ad.linearize) on the plain tensors under batched outputs and duals: one pass gives each
    sample's Jacobian-vector product, as the samples never mix; tangents of batched duals are batched to match."""
    batched = [isinstance(d, BatchedTensor) for d in duals]
    jvp_of = linearize_fn([physical(o) for o in outputs], [handle(_peel(d)[0]) for d in duals], create_graph)

    def apply(tangents: list) -> list:
        ts = [None if t is None else physical(t) if b else t for t, b in zip(tangents, batched)]
        return [None if g is None else rewrap(g) for g in jvp_of(ts)]
    return apply
