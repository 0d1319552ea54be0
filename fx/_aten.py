"""ATen operator names for exported graphs (torch.ops.aten.<op>.<overload>): what an exported program's nodes call.

tidal has no ATen dispatcher. An `OpOverload` here is a name (`aten.linear.default`, printed and compared as torch's)
bound to the tidal function that computes it: the torch function of the same name, else torch.nn.functional's,
else the Tensor method, with a few ops of ATen's own (slice, index, rsub, _softmax, the batch-norm variants the
decompositions make) written below. Called with traced values it records itself as one node.
`aten_call` names the ATen op of a call that symbolic tracing recorded (a torch function, a Tensor method, an
operator) and its overload, as torch's export names them.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

from ..tensor import Tensor
from .node import map_aggregate
from .proxy import Proxy

__all__ = ["OpOverload", "OpOverloadPacket", "aten", "aten_call"]


def _tidal():
    import tidal.compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
    return tidal.compat


def _slice(x, dim: int = 0, start=None, end=None, step: int = 1):
    d = dim % x.dim() if x.dim() else 0
    return x[(slice(None),) * d + (slice(start, end, step),)]


def _native_batch_norm_functional(input, weight, bias, running_mean, running_var, training: bool, momentum: float,
                                  eps: float):
    """(output, save_mean, save_rstd, new_running_mean, new_running_var): batch norm leaving its inputs as they
    were (the functional form torch's decompositions produce)."""
    dims = [0] + list(range(2, input.dim()))
    mean = input.mean(dims)
    var = input.var(dims, unbiased=False)
    rstd = (var + eps).rsqrt()
    shape = [1, -1] + [1] * (input.dim() - 2)
    out = (input - mean.view(shape)) * rstd.view(shape)
    if weight is not None:
        out = out * weight.view(shape)
    if bias is not None:
        out = out + bias.view(shape)
    n = input.numel() // input.shape[1]
    new_mean = running_mean * (1 - momentum) + mean * momentum
    new_var = running_var * (1 - momentum) + var * (n / max(n - 1, 1)) * momentum
    return out, mean, rstd, new_mean.to(running_mean.dtype), new_var.to(running_var.dtype)


def _no_training_batch_norm(input, weight, bias, running_mean, running_var, momentum: float, eps: float):
    torch = _tidal()
    out = torch.batch_norm(input, weight, bias, running_mean, running_var, False, momentum, eps, False)
    empty = input.new_zeros(0)
    return out, empty, empty


def _arith(op: Callable) -> Callable:
    def impl(self, other, *, alpha=1):
        return op(self, other if alpha == 1 else other * alpha)
    return impl


_SPECIAL: dict = {
    "add.Tensor": _arith(operator.add), "sub.Tensor": _arith(operator.sub),
    "mul.Tensor": lambda self, other: self * other, "div.Tensor": lambda self, other: self / other,
    "rsub.Scalar": lambda self, other, alpha=1: other - self * alpha,
    "rsub.Tensor": lambda self, other, alpha=1: other - self * alpha,
    "pow.Scalar": lambda self, exponent: self ** exponent,
    "slice.Tensor": _slice,
    "index.Tensor": lambda self, indices: self[tuple(indices)],
    "_softmax.default": lambda self, dim, half_to_float=False: self.softmax(dim),
    "_log_softmax.default": lambda self, dim, half_to_float=False: self.log_softmax(dim),
    "sym_size.int": lambda self, dim: self.size(dim),
    "_native_batch_norm_legit_functional.default": _native_batch_norm_functional,
    "_native_batch_norm_legit_no_training.default": _no_training_batch_norm,
    "copy_.default": lambda self, src, non_blocking=False: self.copy_(src),
    "alias.default": lambda self: self.view(self.shape),
    "_to_copy.default": lambda self, **kw: self.to(**{k: v for k, v in kw.items() if k in ("dtype", "device")}),
}


def _resolve(name: str, overload: str) -> Callable | None:
    """The tidal callable computing aten `name`.`overload`, or None when tidal has none."""
    special = _SPECIAL.get(f"{name}.{overload}")
    if special is not None:
        return special
    torch = _tidal()
    fn = getattr(torch, name, None) if not name.startswith("_") or name.endswith("_") else None
    if callable(fn) and not isinstance(fn, type):
        return fn
    fn = getattr(torch.nn.functional, name, None)
    if callable(fn) and not isinstance(fn, type):
        return fn
    method = getattr(torch.Tensor, name, None)
    if callable(method):
        return method
    return None


class OpOverload:
    """One overload of an ATen op (torch._ops.OpOverload): `aten.add.Tensor`; callable."""

    def __init__(self, packet: "OpOverloadPacket", overload: str, impl: Callable) -> None:
        self.overloadpacket = packet
        self._overloadname = overload
        self._impl = impl
        self.namespace = "aten"
        self.__name__ = f"{packet._name}.{overload}"
        self.__qualname__ = self.__name__
        self.__module__ = "torch._ops.aten"
        self._fx_qualified_name = f"torch.ops.aten.{packet._name}.{overload}"  # (how generated code names it)

    def name(self) -> str:
        """The schema name: 'aten::linear', 'aten::add.Tensor'."""
        base = f"aten::{self.overloadpacket._name}"
        return base if self._overloadname == "default" else f"{base}.{self._overloadname}"

    def __call__(self, *args, **kwargs):
        found: list = []
        map_aggregate((args, kwargs), lambda a: found.append(a) if isinstance(a, Proxy) else None)
        if found:
            return found[0].tracer.create_proxy("call_function", self, args, kwargs)
        return self._impl(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverload(op='aten.{self.overloadpacket._name}', overload='{self._overloadname}')>"

    def __str__(self) -> str:
        return f"aten.{self.__name__}"

    def __reduce__(self):
        return (_lookup, (self.overloadpacket._name, self._overloadname))


def _lookup(name: str, overload: str) -> OpOverload:
    return getattr(getattr(aten, name), overload)


class OpOverloadPacket:
    """An ATen op and its overloads (torch._ops.OpOverloadPacket): `aten.add`; calling it calls `default`."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._qualified_op_name = f"aten::{name}"
        self.__name__ = name
        self._overloads: dict = {}

    def __getattr__(self, overload: str) -> OpOverload:
        if overload.startswith("__"):
            raise AttributeError(overload)
        op = self._overloads.get(overload)
        if op is None:
            impl = _resolve(self._name, overload)
            if impl is None:
                raise AttributeError(f"The underlying op of 'aten.{self._name}' has no overload name '{overload}'")
            op = self._overloads[overload] = OpOverload(self, overload, impl)
        return op

    def overloads(self) -> list:
        """The overloads looked up so far."""
        return list(self._overloads)

    def __call__(self, *args, **kwargs):
        return self.default(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='aten.{self._name}')>"

    def __str__(self) -> str:
        return f"aten.{self._name}"


class _AtenNamespace:
    """torch.ops.aten: the ATen ops tidal computes, by name."""

    __name__ = "torch.ops.aten"
    name = "aten"

    def __init__(self) -> None:
        self._packets: dict = {}

    def __getattr__(self, name: str) -> OpOverloadPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        packet = self._packets.get(name)
        if packet is None:
            if _resolve(name, "default") is None and not any(k.startswith(f"{name}.") for k in _SPECIAL):
                raise AttributeError(f"'_OpNamespace' 'aten' object has no attribute '{name}'")
            packet = self._packets[name] = OpOverloadPacket(name)
        return packet


aten = _AtenNamespace()

# -- naming a traced call -----------------------------------------------------------------------------------

_BINARY = {"add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
           "matmul": "matmul", "pow": "pow", "and_": "bitwise_and", "or_": "bitwise_or", "xor": "bitwise_xor",
           "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}
_COMPARE = {"lt", "le", "gt", "ge", "eq", "ne"}
_UNARY = {"neg": "neg", "pos": "positive", "invert": "bitwise_not", "abs": "abs"}
_TENSOR_OVERLOAD = {"add", "sub", "mul", "div", "remainder", "bitwise_and", "bitwise_or", "bitwise_xor",
                    "floor_divide", "rsub", "where", "masked_fill", "fill", "copy", "eq", "ne", "lt", "le", "gt", "ge"}
_INT_OVERLOAD = {"softmax": "int", "log_softmax": "int", "select": "int", "transpose": "int", "unbind": "int",
                 "size": "int", "swapaxes": None, "flatten": "using_ints", "unflatten": "int", "split": "Tensor",
                 "chunk": None, "cumsum": None, "narrow": None, "index_select": None, "gather": None, "sort": None,
                 "topk": None, "var": "correction", "std": "correction", "repeat_interleave": "self_int"}
_SIZE_METHODS = {"view", "reshape", "expand", "permute", "repeat", "tile", "new_zeros", "new_ones", "new_empty"}


def _has_dim(args: tuple, kwargs: dict) -> bool:
    return len(args) > 1 and args[1] is not None or kwargs.get("dim") is not None


def _is_tensor(a) -> bool:
    return isinstance(a, Tensor)


def overload_of(name: str, args: tuple, kwargs: dict, values: tuple) -> str:
    """The overload torch's export names for aten `name` called with (`args`, `kwargs`) whose values are
    `values` (tensors or not)."""
    if name in ("sum", "nansum"):
        return "dim_IntList" if _has_dim(args, kwargs) else "default"
    if name in ("mean", "nanmean", "amax", "amin", "any", "all", "prod", "logsumexp", "max", "min", "argmax",
                "argmin", "squeeze", "norm"):
        if name in ("max", "min") and len(values) > 1 and _is_tensor(values[1]):
            return "other"
        if name in ("any", "all", "prod", "squeeze", "max", "min") and _has_dim(args, kwargs):
            return "dim_int" if name == "prod" else "dims" if isinstance(args[1] if len(args) > 1 else
                                                                          kwargs.get("dim"), (list, tuple)) else "dim"
        return "dim" if name in ("mean", "nanmean") and _has_dim(args, kwargs) else "default"
    if name in _COMPARE or name in ("pow",):
        other = values[1] if len(values) > 1 else kwargs.get("other", kwargs.get("exponent"))
        if name == "pow":
            return "Tensor_Tensor" if _is_tensor(other) else "Tensor_Scalar"
        return "Tensor" if _is_tensor(other) else "Scalar"
    if name.rstrip("_") in _TENSOR_OVERLOAD:
        other = values[1] if len(values) > 1 else None
        if name.rstrip("_") in ("fill", "masked_fill", "where"):
            return {"where": "self", "fill": "Tensor" if _is_tensor(other) else "Scalar",
                    "masked_fill": "Tensor" if len(values) > 2 and _is_tensor(values[2]) else "Scalar"}[
                name.rstrip("_")]
        return "Tensor"
    if name == "split" and isinstance(args[1] if len(args) > 1 else kwargs.get("split_size_or_sections"),
                                      (list, tuple)):
        return "sizes"
    if name == "to":
        return "dtype" if any(not _is_tensor(a) and type(a).__name__ == "dtype" for a in args[1:]) else "default"
    return _INT_OVERLOAD.get(name) or "default"


def _bound(fn, args: tuple, kwargs: dict) -> dict | None:
    import inspect
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    return dict(bound.arguments)


# torch.nn.functional calls whose ATen op takes its arguments in another order: (input, ...) in ATen's order
_F_NORMALIZE = {
    "batch_norm": lambda a: (a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"], a["training"],
                             a["momentum"], a["eps"], False),
    "instance_norm": lambda a: (a["input"], a["weight"], a["bias"], a["running_mean"], a["running_var"],
                                a["use_input_stats"], a["momentum"], a["eps"], False),
    "layer_norm": lambda a: (a["input"], list(a["normalized_shape"]), a["weight"], a["bias"], a["eps"]),
    "group_norm": lambda a: (a["input"], a["num_groups"], a["weight"], a["bias"], a["eps"]),
    "dropout": lambda a: (a["input"], a["p"], a["training"]),
    "softmax": lambda a: (a["input"], a["dim"]) + ((a["dtype"],) if a.get("dtype") is not None else ()),
    "log_softmax": lambda a: (a["input"], a["dim"]) + ((a["dtype"],) if a.get("dtype") is not None else ()),
    "embedding": lambda a: None if a.get("max_norm") is not None else
    (a["weight"], a["input"]) + ((a["padding_idx"],) if a.get("padding_idx") is not None else ()),
}


def _functional(name: str, target: Any, args: tuple, kwargs: dict) -> tuple | None:
    """(name, args, kwargs) in ATen's form for a torch.nn.functional call, or None to keep it as an F call."""
    normalize = _F_NORMALIZE.get(name)
    if normalize is not None:
        bound = _bound(target, args, kwargs)
        if bound is None or bound.get("dim", 0) is None:
            return None
        out = normalize(bound)
        if out is None:
            return None
        return (f"{name}_" if bound.get("inplace") else name), out, {}
    if getattr(_tidal(), name, target) is not target:
        return None  # (torch.<name> takes ATen's arguments, this call F's: kept as the F call)
    if "inplace" in kwargs:
        kwargs = dict(kwargs)
        if kwargs.pop("inplace"):
            name += "_"
    return name, args, kwargs


def aten_call(kind: str, target: Any, args: tuple, kwargs: dict, values: tuple) -> tuple | None:
    """(aten op name, overload, args, kwargs) for a recorded call_function / call_method node (`values`: its
    arguments' values), or None to keep the node as recorded (getitem of a tuple, a call tidal cannot name)."""
    if kind == "call_method":
        name = target
    elif getattr(operator, getattr(target, "__name__", ""), None) is target:
        op = target.__name__
        if op in _UNARY:
            return _UNARY[op], "default", args, kwargs
        if op not in _BINARY and op not in _COMPARE:
            return None
        name = _BINARY.get(op, op)
        if values and not _is_tensor(values[0]) and len(values) > 1 and _is_tensor(values[1]):  # `2 - x`
            if name in ("add", "mul", "bitwise_and", "bitwise_or", "bitwise_xor"):
                args, values = (args[1], args[0]), (values[1], values[0])
            elif name == "sub":
                return "rsub", "Scalar", (args[1], args[0]), kwargs
            elif name == "pow":
                return "pow", "Scalar", args, kwargs
            else:
                return None
    else:
        name = getattr(target, "__name__", None)
        if name is None or not isinstance(name, str) or not name.isidentifier():
            return None
        name = name.lstrip("_") if name.startswith("_") and not name.startswith("__") else name
        if (getattr(target, "__module__", None) or "").startswith("tidal.nn.functional"):
            normalized = _functional(name, target, args, kwargs)
            if normalized is None:
                return None
            name, args, kwargs = normalized
            values = tuple(values) + (None,) * max(0, len(args) - len(values))
    if name.startswith("__"):
        return None
    if name in _SIZE_METHODS and len(args) > 2 or name in _SIZE_METHODS and len(args) == 2 and \
            isinstance(values[1], int):
        args = (args[0], list(args[1:]))
    return name, overload_of(name, args, kwargs, values), args, kwargs
