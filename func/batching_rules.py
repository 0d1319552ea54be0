"""vmap's batching rules, one per op family: how an op runs once on values that carry the batch in dim 0.

Each rule receives the op (a public function, or a Tensor method's caller), the vmap level, and the arguments,
some batched at that level (BatchedTensor); it calls the op once on the values and wraps what comes back. A rule
returns NotImplemented for a call it does not cover; the op then runs once per sample (batching.loop_op).

- pointwise: every elementwise op (the declarations table of ops/elementwise), activations, casts and copies:
  batched operands get size-1 dims after the batch dim up to the call's rank, so they broadcast as the samples do.
- dims: reductions (the `Reduction` records), scans, softmax/log_softmax, sorting and the ops that take dims: each
  dim shifts past the batch dim; `dim=None` reduces the flattened sample.
- products and linear algebra: batching_linalg.py.
- views and movement: view/reshape/permute/transpose/unsqueeze/squeeze/flatten/expand/cat/stack/select/narrow,
  getitem/setitem with basic indices (and plain index tensors next to each other).
nn.functional's ops (convolutions, pools, losses) are in batching_nn.py.
"""
from __future__ import annotations

from typing import Callable

from .. import ops
from ..ops.elementwise.declarations import OPS as ELEMENTWISE
from ..tensor import Tensor
from .batching import (RULES, IN_PLACE_OPERATORS, BatchedTensor, Level, method_caller, op_name, refuse_in_place,
                       wrap)

__all__: list = []


def _batched(x, level) -> bool:
    return isinstance(x, BatchedTensor) and x.level is level


def _tensorish(x) -> bool:
    return isinstance(x, (Tensor, BatchedTensor))


def _rank(x, level) -> int:
    return x.dim()  # (a batched tensor's dim() is its sample's)


def _pad(v, level, rank: int):
    """The value `v` (batch in dim 0) with size-1 dims after the batch dim up to sample rank `rank`."""
    r = v.dim() - 1
    if r >= rank:
        return v
    return v.reshape(level.size, *([1] * (rank - r)), *v.shape[1:])


def _batch(x, level):
    """The value of `x` with the batch dim in front (an unbatched tensor expanded over the batch)."""
    if _batched(x, level):
        return x.value
    return x.unsqueeze(0).expand(level.size, *x.shape)


def _in_place(name: str) -> bool:
    return name.endswith("_") and not name.startswith("__") or name in IN_PLACE_OPERATORS


# -- pointwise ---------------------------------------------------------------------------------------------------
def pointwise(func: Callable, level: Level, args: tuple, kwargs: dict):
    """An elementwise op: batched operands padded to the call's rank, the op run once on the values."""
    name = op_name(func)
    items = [x for a in (*args, *kwargs.values()) for x in (a if isinstance(a, (list, tuple)) else (a,))]
    rank = max((_rank(x, level) for x in items if _tensorish(x)), default=0)
    self = args[0] if args else None
    if _in_place(name):
        if not _batched(self, level):
            refuse_in_place(name)
    elif name in _SELF_SHAPED and _tensorish(self) and not _batched(self, level):
        args = (BatchedTensor(_batch(self, level), level),) + tuple(args[1:])
    if not _in_place(name) and any(_batched(x, level) and x.dim() == 0 for x in items) and rank > 0 and \
            len({x.dtype for x in items if _tensorish(x)}) > 1:
        args, kwargs = _promoted_zero_d(items, level, args, kwargs)

    def prep(a):
        if _batched(a, level):
            return _pad(a.value, level, rank) if a is not self or not _in_place(name) else a.value
        if isinstance(a, (list, tuple)) and any(_batched(x, level) for x in a):
            return type(a)(prep(x) for x in a)
        return a
    result = func(*[prep(a) for a in args], **{k: prep(v) for k, v in kwargs.items()})
    if _in_place(name):
        return self
    return wrap(result, level)


def _promoted_zero_d(items: list, level, args: tuple, kwargs: dict) -> tuple:
    """The call with its 0-d batched samples cast to the dtype the samples promote to: on the batch they have a
    dim, and would otherwise win type promotion over tensors with dims as a 0-d tensor does not."""
    def stand_in(x):
        if not _tensorish(x):
            return x
        return ops.empty((), dtype=x.dtype) if x.dim() == 0 else ops.empty((1,), dtype=x.dtype)
    stand_ins = [stand_in(x) for x in items if _tensorish(x) or isinstance(x, (int, float, bool, complex))]
    want = stand_ins[0] if _tensorish(stand_ins[0]) else None
    want_dtype = None
    for x in stand_ins[1:] if want is not None else stand_ins:
        if want is None:
            want = x
            continue
        want_dtype = ops.result_type(want, x)
        want = ops.empty((1,) if (_tensorish(want) and want.dim()) or (_tensorish(x) and x.dim()) else (),
                         dtype=want_dtype)
    if want_dtype is None:
        return args, kwargs

    def cast(a):
        if _batched(a, level) and a.dim() == 0 and a.dtype != want_dtype:
            return BatchedTensor(a.value.to(want_dtype), level)
        return a
    return tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}


_SELF_SHAPED = {"masked_fill", "index_fill", "masked_scatter"}  # the result has the first operand's shape
POINTWISE = set(ELEMENTWISE) | {
    "rsub", "true_divide", "multiply", "subtract", "divide", "clamp_min", "clamp_max", "clip", "masked_fill",
    "nan_to_num", "relu6", "leaky_relu", "elu", "selu", "celu", "silu", "mish", "softplus", "softsign", "hardswish",
    "hardsigmoid", "hardtanh", "hardshrink", "softshrink", "tanhshrink", "logsigmoid", "gelu", "addcmul", "addcdiv",
    "clone", "detach", "contiguous", "to", "float", "double", "half", "bfloat16", "int", "long", "bool", "type_as",
    "type", "cpu", "zeros_like", "ones_like", "full_like", "empty_like", "absolute", "negative", "float_power",
    "bitwise_not", "sgn", "fill", "zero", "threshold", "fix", "exp", "abs", "conj", "real", "imag",
    "angle", "isreal", "is_nonzero", "logical_not", "square", "heaviside", "ldexp", "erfc", "frexp", "sinc", "log",
}
# random ops drawing per element: one call on the batch gives each sample its own numbers (randomness='different')
POINTWISE |= {"bernoulli", "uniform", "normal", "exponential", "cauchy", "log_normal", "geometric", "random",
              "rand_like", "randn_like", "randint_like", "dropout", "alpha_dropout"}
_OPERATORS = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift",
              "eq", "ne", "lt", "le", "gt", "ge", "neg", "pos", "abs", "invert"}
for _n in POINTWISE:
    RULES[_n] = RULES[_n + "_"] = pointwise
for _n in _OPERATORS:
    RULES[f"__{_n}__"] = RULES[f"__r{_n}__"] = RULES[f"__i{_n}__"] = pointwise


def _max_min(func: Callable, level: Level, args: tuple, kwargs: dict):
    """max/min: elementwise against a tensor, else a reduction."""
    other = kwargs.get("other", args[1] if len(args) > 1 else None)
    if _tensorish(other):
        return pointwise(func, level, args, kwargs)
    return dims(func, level, args, kwargs)


# -- dims --------------------------------------------------------------------------------------------------------
# name -> (position of the dim argument, its keyword, its default, kind): "reduce" (None: the flattened sample),
# "dim" (one dim, or a list of dims), "new" (a dim of the result, which has one more: unsqueeze, stack)
DIMS = {name: (1, "dim", None, "reduce") for name in (
    "sum", "mean", "prod", "nansum", "nanmean", "amax", "amin", "all", "any", "count_nonzero", "var", "std",
    "var_mean", "std_mean", "max", "min", "median", "nanmedian", "argmax", "argmin", "aminmax", "logsumexp")}
DIMS.update({"norm": (2, "dim", None, "reduce")})
DIMS.update({name: (1, "dim", None, "dim") for name in (
    "softmax", "log_softmax", "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp", "select", "narrow",
    "index_select", "flip", "squeeze", "_softmax", "_log_softmax", "softmin")})
DIMS.update({name: (1, "dim", -1, "dim") for name in ("sort", "argsort", "mode")})
DIMS.update({name: (2, "dim", -1, "dim") for name in ("kthvalue", "topk", "diff")})
DIMS.update({name: (2, "dim", 0, "dim") for name in ("split", "chunk", "tensor_split", "split_with_sizes")})
DIMS.update({"unbind": (1, "dim", 0, "dim"), "unsqueeze": (1, "dim", None, "new")})
_FLAT_NAME = {"max": "amax", "min": "amin"}  # a whole-sample max/min is amax/amin over the flattened sample


def _shift(d, r: int, name: str):
    if isinstance(d, (list, tuple)):
        return type(d)(_shift(x, r, name) for x in d)
    if isinstance(d, BatchedTensor) or not isinstance(d, int):
        d = int(d)
    n = max(r, 1)
    if not -n <= d < n:
        raise IndexError(f"{name}(): Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got "
                         f"{d})")
    return d % n + 1


def _with_dim(args, kwargs, pos: int, key: str, value):
    if key in kwargs:
        return args, dict(kwargs, **{key: value})
    if len(args) > pos:
        return args[:pos] + (value,) + args[pos + 1:], kwargs
    return args, dict(kwargs, **{key: value})


def dims(func: Callable, level: Level, args: tuple, kwargs: dict):
    """An op over dims of its first operand: each dim shifted past the batch dim."""
    name = op_name(func)
    pos, key, default, kind = DIMS[name]
    x = args[0]
    if not _batched(x, level) or any(_batched(a, level) for a in (*args[1:], *kwargs.values())):
        return NotImplemented
    v, r = x.value, x.dim()
    if name in ("var", "std", "var_mean", "std_mean") and len(args) > 1 and isinstance(args[1], bool):
        args, kwargs = (args[0],) + tuple(args[2:]), dict(kwargs, unbiased=args[1])  # var(x, unbiased)
    dim = kwargs[key] if key in kwargs else args[pos] if len(args) > pos else default
    if kind == "reduce" and (dim is None or isinstance(dim, (list, tuple)) and not dim and name != "norm"):
        keepdim = kwargs.get("keepdim", args[pos + 1] if len(args) > pos + 1 and isinstance(args[pos + 1], bool)
                             and name not in ("var", "std", "var_mean", "std_mean") else False)
        args, kwargs = _with_dim((v.reshape(level.size, -1),) + tuple(args[1:]), kwargs, pos, key, 1)
        if "keepdim" in kwargs:
            kwargs = dict(kwargs, keepdim=False)
        if name in _FLAT_NAME:
            result = getattr(ops, _FLAT_NAME[name])(*args, **kwargs)
        elif name in ("median", "nanmedian"):
            result = func(*args, **kwargs).values
        else:
            result = func(*args, **kwargs)
        if keepdim:
            result = _map(result, lambda t: t.reshape(level.size, *([1] * r)))
        return wrap(result, level)
    if r == 0 and name == "unfold":
        return NotImplemented  # (unfold of a 0-d tensor makes a dim of its own)
    if r == 0 and kind != "new":  # a 0-d sample: its dim 0 (or -1) is a size-1 dim added for the call
        v = v.unsqueeze(1)
        args, kwargs = _with_dim((v,) + tuple(args[1:]), kwargs, pos, key, _shift(dim, 1, name))
        return wrap(_map(func(*args, **kwargs), lambda t: t.reshape(level.size) if t.dim() == 2 else t), level)
    if name == "squeeze" and dim is None:
        keep = [d + 1 for d, s in enumerate(x.shape) if s == 1]
        return wrap(v.squeeze(tuple(keep)) if keep else v, level)
    new = _shift(dim, r + 1 if kind == "new" else r, name)
    args, kwargs = _with_dim((v,) + tuple(args[1:]), kwargs, pos, key, new)
    result = func(*args, **kwargs)
    if _in_place(name):
        return x
    return wrap(result, level)


def _map(result, fn):
    if isinstance(result, (tuple, list)):
        items = [fn(t) if _tensorish(t) else t for t in result]
        return type(result)(*items) if hasattr(result, "_fields") else type(result)(items)
    return fn(result)


for _n in DIMS:
    RULES[_n] = dims
RULES["max"] = RULES["min"] = _max_min


def _two_dims(func: Callable, level: Level, args: tuple, kwargs: dict):
    """transpose/swapaxes/movedim/diagonal: two dims of the sample, shifted."""
    name = op_name(func)
    x = args[0]
    if not _batched(x, level) or len(args) < 3 and name != "diagonal":
        return NotImplemented
    r = x.dim()
    if name == "diagonal":
        offset = kwargs.pop("offset", args[1] if len(args) > 1 else 0)
        d1 = kwargs.pop("dim1", args[2] if len(args) > 2 else 0)
        d2 = kwargs.pop("dim2", args[3] if len(args) > 3 else 1)
        return wrap(x.value.diagonal(offset, _shift(d1, r, name), _shift(d2, r, name)), level)
    return wrap(func(x.value, _shift(args[1], r, name), _shift(args[2], r, name), *args[3:], **kwargs), level)


for _n in ("transpose", "swapaxes", "swapdims", "movedim", "moveaxis", "diagonal", "transpose_"):
    RULES[_n] = _two_dims


# -- views and movement ------------------------------------------------------------------------------------------
def _sizes(args) -> tuple:
    """A shape given as separate ints or as one sequence (view(2, 3) / view((2, 3)))."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)) or len(args) == 1 and hasattr(args[0], "__len__"):
        return tuple(args[0])
    return tuple(args)


def _reshape(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    if not _batched(x, level) or kwargs:
        return NotImplemented
    shape = _sizes(args[1:])
    if shape and not isinstance(shape[0], int):  # view(dtype)
        return NotImplemented
    name = op_name(func)
    method = "view" if name == "view" else "reshape"
    return wrap(getattr(x.value, method)(level.size, *shape), level)


def _like_shape(func: Callable, level: Level, args: tuple, kwargs: dict):
    """view_as/reshape_as/expand_as: the other tensor's sample shape."""
    x, other = args[0], args[1]
    name = op_name(func).replace("_as", "")
    if name == "expand":
        return _expand(func, level, (x, *other.shape), {})
    return _reshape(method_of(name), level, (x, *other.shape), {})


def method_of(name: str) -> Callable:
    """The caller of Tensor method `name` (as the rules look it up)."""
    return method_caller(name)


def _permute(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    if not _batched(x, level):
        return NotImplemented
    order = _sizes(args[1:]) if len(args) > 1 else tuple(kwargs.get("dims", ()))
    r = x.dim()
    return wrap(x.value.permute(0, *[_shift(d, r, "permute") for d in order]), level)


def _t(func: Callable, level: Level, args: tuple, kwargs: dict):
    """t/T/mT/H/mH/adjoint: transposes of the sample."""
    name = op_name(func)
    x = args[0]
    if not _batched(x, level):
        return NotImplemented
    r, v = x.dim(), x.value
    if name == "t":
        if r > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {r}D")
        return x if r < 2 else wrap(v.transpose(1, 2), level)
    if name == "T":
        return wrap(v.permute(0, *range(r, 0, -1)), level)
    if r < 2:
        return NotImplemented
    out = v.transpose(-2, -1)
    return wrap(out.conj() if name in ("H", "mH", "adjoint") and v.dtype.is_complex else out, level)


def _expand(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    sizes = _sizes(args[1:])
    if not _batched(x, level):
        return NotImplemented
    v = _pad(x.value, level, len(sizes))
    return wrap(v.expand(level.size, *sizes), level)


def _flatten(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    if not _batched(x, level):
        return NotImplemented
    start = kwargs.get("start_dim", args[1] if len(args) > 1 else 0)
    end = kwargs.get("end_dim", args[2] if len(args) > 2 else -1)
    r = x.dim()
    if r == 0:
        return wrap(x.value.reshape(level.size, 1), level)
    return wrap(x.value.flatten(_shift(start, r, "flatten"), _shift(end, r, "flatten")), level)


def _unflatten(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    if not _batched(x, level) or kwargs:
        return NotImplemented
    return wrap(x.value.unflatten(_shift(args[1], x.dim(), "unflatten"), args[2]), level)


def _repeat(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    if not _batched(x, level):
        return NotImplemented
    reps = _sizes(args[1:])
    v = _pad(x.value, level, len(reps))
    return wrap(v.repeat(1, *reps), level)


def _cat_stack(func: Callable, level: Level, args: tuple, kwargs: dict):
    name = op_name(func)
    tensors = kwargs.pop("tensors", args[0] if args else None)
    dim = kwargs.pop("dim", args[1] if len(args) > 1 else 0)
    if kwargs or not isinstance(tensors, (list, tuple)) or not tensors:
        return NotImplemented
    ranks = {_rank(t, level) for t in tensors if not (name == "cat" and _rank(t, level) == 1 and t.shape[0] == 0)}
    r = max(ranks) if ranks else 1
    values = [_batch(t, level) for t in tensors]
    if name == "cat":
        values = [v for v, t in zip(values, tensors) if v.dim() - 1 == r]  # (torch skips empty 1-d tensors)
    d = _shift(dim, r + 1 if name == "stack" else r, name)
    return wrap(getattr(ops, name)(values, d), level)


for _n in ("view", "reshape"):
    RULES[_n] = _reshape
for _n in ("view_as", "reshape_as", "expand_as"):
    RULES[_n] = _like_shape
RULES["permute"] = _permute
for _n in ("t", "T", "mT", "adjoint", "mH", "H"):
    RULES[_n] = _t
RULES["expand"] = _expand
RULES["flatten"] = _flatten
RULES["unflatten"] = _unflatten
RULES["repeat"] = _repeat
for _n in ("cat", "concat", "concatenate", "stack"):
    RULES[_n] = _cat_stack


def _getitem(func: Callable, level: Level, args: tuple, kwargs: dict):
    x, index = args[0], args[1]
    if not _batched(x, level):
        return NotImplemented
    idx = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, BatchedTensor) for i in idx):
        return NotImplemented
    advanced = [k for k, i in enumerate(idx) if isinstance(i, (Tensor, list)) or
                isinstance(i, int) and not isinstance(i, bool) and any(isinstance(j, (Tensor, list)) for j in idx)]
    if advanced and advanced != list(range(advanced[0], advanced[-1] + 1)):
        return NotImplemented  # (separated advanced indices move their dims to the front)
    if any(i is Ellipsis for i in idx) and advanced and any(i is Ellipsis for i in idx[:advanced[0]]):
        pass
    return wrap(x.value[(slice(None),) + idx], level)


def _setitem(func: Callable, level: Level, args: tuple, kwargs: dict):
    x, index, value = args
    idx = index if isinstance(index, tuple) else (index,)
    if not _batched(x, level):
        if _batched(value, level):
            refuse_in_place("__setitem__")
        return NotImplemented
    if any(isinstance(i, (BatchedTensor, Tensor, list)) for i in idx):
        return NotImplemented
    if _batched(value, level):
        target_rank = x.value[(slice(None),) + idx].dim() - 1
        value = _pad(value.value, level, target_rank)
    x.value[(slice(None),) + idx] = value
    return None


RULES["__getitem__"] = RULES["getitem"] = _getitem
RULES["__setitem__"] = _setitem


# -- values read as they are -------------------------------------------------------------------------------------
def _same_for_all(func: Callable, level: Level, args: tuple, kwargs: dict):
    """Metadata that is the same for every sample (dtype queries, contiguity...)."""
    return func(args[0].value, *args[1:], **kwargs)


for _n in ("is_floating_point", "is_complex", "element_size", "get_device", "is_contiguous", "is_signed",
           "requires_grad_", "retain_grad", "data_ptr", "is_inference"):
    RULES[_n] = _same_for_all


def _requires_grad_(func: Callable, level: Level, args: tuple, kwargs: dict):
    args[0].value.requires_grad_(*args[1:], **kwargs)
    return args[0]


RULES["requires_grad_"] = _requires_grad_


# -- more ops over dims, and composites of the rules above ---------------------------------------------------------
def _gather(func: Callable, level: Level, args: tuple, kwargs: dict):
    """gather/take_along_dim: input and index both batched (an unbatched one expanded), the dim shifted."""
    x = args[0]
    index = kwargs.pop("index", args[2] if len(args) > 2 else None)
    dim = kwargs.pop("dim", args[1] if len(args) > 1 else None)
    if op_name(func) == "take_along_dim":
        dim, index = index, dim  # take_along_dim(input, indices, dim)
    if kwargs or dim is None or not _tensorish(index) or _batched(index, level) and x.dim() != index.dim():
        return NotImplemented
    d = _shift(dim, x.dim(), op_name(func))
    xv, iv = _batch(x, level), _batch(index, level)
    if op_name(func) == "take_along_dim":
        return wrap(ops.take_along_dim(xv, iv, d), level)
    return wrap(ops.gather(xv, d, iv), level)


def _roll(func: Callable, level: Level, args: tuple, kwargs: dict):
    x = args[0]
    shifts = kwargs.get("shifts", args[1] if len(args) > 1 else None)
    dims_ = kwargs.get("dims", args[2] if len(args) > 2 else None)
    if not _batched(x, level) or shifts is None:
        return NotImplemented
    v = x.value
    if dims_ is None or dims_ == () or dims_ == []:  # the flattened sample rolled
        return wrap(v.reshape(level.size, -1).roll(shifts, 1).reshape(v.shape), level)
    return wrap(v.roll(shifts, _shift(dims_, x.dim(), "roll")), level)


def _last_two(func: Callable, level: Level, args: tuple, kwargs: dict):
    """tril/triu: ops on the last two dims, which the batch dim in front does not move."""
    x = args[0]
    if not _batched(x, level) or x.dim() < 2 or _in_place(op_name(func)):
        return NotImplemented
    return wrap(func(x.value, *args[1:], **kwargs), level)


def _new(func: Callable, level: Level, args: tuple, kwargs: dict):
    """new_zeros/new_ones/new_full/new_empty/new_tensor: an unbatched tensor of the given shape (same for all)."""
    if any(_batched(a, level) for a in (*args[1:], *kwargs.values())):
        return NotImplemented
    return func(args[0].value, *args[1:], **kwargs)


RULES["gather"] = RULES["take_along_dim"] = _gather
RULES["roll"] = _roll
RULES["tril"] = RULES["triu"] = _last_two
for _n in ("new_zeros", "new_ones", "new_full", "new_empty", "new_tensor"):
    RULES[_n] = _new


DIMS.update({"vector_norm": (2, "dim", None, "reduce"), "narrow_copy": (1, "dim", None, "dim"),
             "unfold": (1, "dimension", None, "dim"), "matrix_norm": (2, "dim", (-2, -1), "dim")})
for _n in ("vector_norm", "narrow_copy", "unfold", "matrix_norm"):
    RULES[_n] = dims


def _simple_views(func: Callable, level: Level, args: tuple, kwargs: dict):
    """ravel, fliplr/flipud, msort: views and reorderings spelled through the rules above."""
    name = op_name(func)
    x = args[0]
    if not _batched(x, level) or kwargs or len(args) > 1:
        return NotImplemented
    if name == "ravel":
        return wrap(x.value.reshape(level.size, -1), level)
    if name == "msort":
        return wrap(x.value.sort(1).values, level)
    if x.dim() < (2 if name == "fliplr" else 1):
        return NotImplemented
    return wrap(x.value.flip(2 if name == "fliplr" else 1), level)


for _n in ("ravel", "fliplr", "flipud", "msort"):
    RULES[_n] = _simple_views


def _broadcast_tensors(func: Callable, level: Level, args: tuple, kwargs: dict):
    """broadcast_tensors: each sample's tensors expanded to their common sample shape."""
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    if kwargs or not all(_tensorish(t) for t in tensors):
        return NotImplemented
    rank = max(t.dim() for t in tensors)
    shape = [1] * rank
    for t in tensors:
        for k, s in enumerate(t.shape):
            at = rank - t.dim() + k
            if s != 1:
                if shape[at] not in (1, s):
                    raise RuntimeError(f"The size of tensor a ({shape[at]}) must match the size of tensor b ({s}) at "
                                       f"non-singleton dimension {at}")
                shape[at] = s
    return tuple(t.expand(*shape) for t in tensors)


RULES["broadcast_tensors"] = _broadcast_tensors


def _scatter_like(func: Callable, level: Level, args: tuple, kwargs: dict):
    """scatter/scatter_add/scatter_reduce (self, dim, index, src): all batched (unbatched ones expanded), the dim
    shifted; index_add/index_copy/index_fill (self, dim, index, source) with an unbatched index: self and source
    batched. In place: the target must be batched."""
    name = op_name(func)
    x = args[0]
    if len(args) < 3 or "dim" in kwargs or not _tensorish(args[2]):
        return NotImplemented
    if _in_place(name) and not _batched(x, level):
        refuse_in_place(name)
    d = _shift(args[1], x.dim(), name)
    base = name.rstrip("_")
    if base.startswith("index_"):
        if _batched(args[2], level):
            return NotImplemented
        rest = [_batch(a, level) if _tensorish(a) else a for a in args[3:]]
        index = args[2]
    else:
        if args[2].dim() != x.dim():
            return NotImplemented
        rest = [_batch(a, level) if _tensorish(a) else a for a in args[3:]]
        index = _batch(args[2], level)
    kw = {k: _batch(v, level) if _tensorish(v) else v for k, v in kwargs.items()}
    target = x.value if _batched(x, level) else _batch(x, level)
    out = func(target, d, index, *rest, **kw)
    return x if _in_place(name) else wrap(out, level)


for _n in ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill"):
    RULES[_n] = RULES[_n + "_"] = _scatter_like


def _as_strided(func: Callable, level: Level, args: tuple, kwargs: dict):
    """as_strided/as_strided_copy: the geometry read in each sample's own storage (the sample's slice of the batch,
    made contiguous), the batch dim striding over the samples."""
    x = args[0]
    names = ("size", "stride", "storage_offset")
    bound = dict(zip(names, args[1:]))
    bound.update(kwargs)
    if not _batched(x, level) or set(bound) - set(names):
        return NotImplemented
    v = x.value.contiguous()
    n = 1
    for s in v.shape[1:]:
        n *= s
    offset = v.storage_offset() + (bound.get("storage_offset") or 0)
    out = v.as_strided((level.size, *bound["size"]), (n, *bound["stride"]), offset)
    return wrap(out.clone() if op_name(func) == "as_strided_copy" else out, level)


RULES["as_strided"] = RULES["as_strided_copy"] = _as_strided

