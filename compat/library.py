"""torch.library's Python custom operators: `custom_op` makes a function an operator `ns::name` (also reachable
as `torch.ops.ns.name`) with a schema inferred from its annotations, and the op's pieces are registered on
it: `register_fake` (what it gives for meta tensors: shapes and dtypes only), `register_autograd` (backward
and setup_context, as an autograd.Function), `register_kernel` (a per-device implementation). `opcheck`
runs the checks torch's does that mean something without a compiler.

The op runs its implementation with grad mode off; when an input requires grad the output gets the op's
backward node (`GeneratedBackwardFor_<ns>_<name>_defaultBackward`), which raises torch's error at backward
time when no formula was registered. As in torch, an output may not be (or alias) an input.
"""
from __future__ import annotations

import collections.abc
import inspect
import numbers
import typing
from typing import Any, Callable

from ..autograd.function import Function
from ..autograd.grad_mode import no_grad
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from ..tensor.device import device as _device
from ..tensor.dtype import dtype as _dtype
from . import _ops

__all__ = ["custom_op", "CustomOpDef", "infer_schema", "register_fake", "register_autograd", "register_kernel",
           "opcheck", "OpCheckError", "get_ctx"]

_UNKNOWN = "unknown"


# -- schema inference ----------------------------------------------------------------------------------
def _param_types() -> dict:
    """Python annotation -> schema type, with the Optional / Sequence / List variants torch accepts."""
    table: dict = {}
    # (type, schema, T[] variant, T?[] variant, T[]? variant), torch's table
    rows = [(Tensor, "Tensor", True, True, False), (int, "SymInt", True, False, True),
            (float, "float", True, False, True), (bool, "bool", True, False, True), (str, "str", False, False, False),
            (numbers.Number, "Scalar", True, False, False), (_dtype, "ScalarType", False, False, False),
            (_device, "Device", False, False, False)]

    def sequences(t):
        return (typing.Sequence[t], typing.List[t], collections.abc.Sequence[t], list[t])  # noqa: UP006
    for t, name, seq, opt_seq, seq_opt in rows:
        table[t] = name
        table[typing.Optional[t]] = f"{name}?"
        if seq:
            table.update((s, f"{name}[]") for s in sequences(t))
        if opt_seq:
            table.update((s, f"{name}?[]") for s in sequences(typing.Optional[t]))
        if seq_opt:
            table.update((typing.Optional[s], f"{name}[]?") for s in sequences(t))
    return table


_PARAM_TYPES = _param_types()
_RETURN_TYPES = {Tensor: "Tensor", typing.List[Tensor]: "Tensor[]", list[Tensor]: "Tensor[]",  # noqa: UP006
                 int: "SymInt", float: "float", bool: "bool", numbers.Number: "Scalar"}


def _hints(fn: Callable, sig: inspect.Signature, error: Callable) -> dict:
    """Each parameter's (and the return's, key 'return') annotation, strings evaluated in fn's globals."""
    scope = dict(getattr(fn, "__globals__", {}))
    out = {}
    items = [(n, p.annotation) for n, p in sig.parameters.items()] + [("return", sig.return_annotation)]
    for name, ann in items:
        if isinstance(ann, str):
            try:
                ann = eval(ann, scope)  # noqa: S307 - a postponed annotation, as torch evaluates it
            except Exception as e:  # noqa: BLE001 - reported as torch reports it
                error(f"Unsupported type annotation {ann}. It is not a type. ({type(e).__name__}: {e})")
        out[name] = ann
    return out


def infer_schema(prototype_function: Callable, /, *, mutates_args, op_name: str | None = None) -> str:
    """The operator schema of a type-annotated function: `(Tensor x, SymInt[] size, float alpha=2.0) -> Tensor`."""
    sig = inspect.signature(prototype_function)
    if type(mutates_args) is not str:
        mutates_args = tuple(mutates_args)

    def error(what: str):
        raise ValueError(f"infer_schema(func): {what} Got func with signature {sig})")

    hints = _hints(prototype_function, sig, error)
    params: list = []
    seen: set = set()
    kw_only = False
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            error("We do not support positional-only args, varargs, or varkwargs.")
        if param.kind == param.KEYWORD_ONLY and not kw_only:
            params.append("*")
            kw_only = True
        if param.annotation is inspect.Parameter.empty:
            error(f"Parameter {name} must have a type annotation.")
        ann = hints[name]
        schema = _PARAM_TYPES.get(ann) if _hashable(ann) else None
        if schema is None:
            if typing.get_origin(ann) is tuple:
                error(f"Parameter {name} has unsupported type {param.annotation}. We do not support Tuple inputs in "
                      f"schema. As a workaround, please try to use List instead. ")
            error(f"Parameter {name} has unsupported type {param.annotation}.")
        mutated = mutates_args == _UNKNOWN and schema.startswith("Tensor") or \
            type(mutates_args) is not str and name in mutates_args
        if type(mutates_args) is str and mutates_args != _UNKNOWN:
            raise ValueError("mutates_args must either be a sequence of the names of the arguments that are mutated "
                             "or the string 'unknown'. ")
        if mutated:
            if not schema.startswith("Tensor"):
                error(f"Parameter {name} is in mutable_args but only Tensors or collections of Tensors can be "
                      "mutated")
            schema = f"Tensor(a{idx}!){schema[len('Tensor'):]}"
        seen.add(name)
        if param.default is inspect.Parameter.empty:
            params.append(f"{schema} {name}")
            continue
        default = param.default
        if default is None or isinstance(default, (int, float, bool)):
            text = str(default)
        elif isinstance(default, (str, _device)):
            text = f'"{default}"'
        elif isinstance(default, _dtype):
            text = str(default).split(".")[-1]
        else:
            error(f"Parameter {name} has an unsupported default value type {type(default)}. Please file an issue "
                  "on GitHub so we can prioritize this.")
        params.append(f"{schema} {name}={text}")
    if mutates_args != _UNKNOWN:
        unseen = set(mutates_args) - seen
        if unseen:
            error(f"{unseen} in mutates_args were not found in the custom op's signature. mutates_args should "
                  "contain the names of all args that the custom op mutates, or just the string 'unknown' if you "
                  "don't know.")
    ret = _return_schema(hints["return"], sig.return_annotation, error)
    head = op_name if op_name is not None else ""
    return f"{head}({', '.join(params)}) -> {ret}"


def _hashable(x: Any) -> bool:
    try:
        hash(x)
        return True
    except TypeError:
        return False


def _return_schema(ann: Any, raw: Any, error: Callable) -> str:
    if ann is None:
        return "()"
    if raw is inspect.Parameter.empty:
        error("No return type annotation was provided. Please add one.")
    if typing.get_origin(ann) is not tuple:
        if not _hashable(ann) or ann not in _RETURN_TYPES:
            error(f"Return has unsupported type {ann}. The valid types are: {_RETURN_TYPES}.")
        return _RETURN_TYPES[ann]
    args = typing.get_args(ann)
    for a in args:
        if not _hashable(a) or a not in _RETURN_TYPES:
            error(f"Return has unsupported type {ann}. The valid types are: {_RETURN_TYPES}.")
    return "(" + ", ".join(_RETURN_TYPES[a] for a in args) + ")"


# -- the operator --------------------------------------------------------------------------------------
def _tensors(value: Any) -> list:
    if isinstance(value, Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


class CustomOpDef:
    """A Python custom operator (what `custom_op` returns): call it, or register its pieces on it."""

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable, mutates_args: Any) -> None:
        self._namespace, self._name = namespace, name
        self._qualname = f"{namespace}::{name}"
        self._schema = f"{self._qualname}{schema}"
        self._init_fn = fn
        self._signature = inspect.signature(fn)
        self._mutates_args = mutates_args
        self._kernels: dict = {}  # device type -> implementation
        self._fake_fn: Callable | None = None
        self._backward_fn: Callable | None = None
        self._setup_context_fn: Callable | None = None
        self._function = None
        self._opoverload = _ops.OpOverload(self)

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, *args, **kwargs) -> Any:
        return self._dispatch(args, kwargs)

    # -- registration ----------------------------------------------------------------------------------
    def register_fake(self, fn: Callable, /) -> Callable:
        """The op's meta implementation: given meta tensors, make outputs of the right shapes and dtypes."""
        self._fake_fn = fn
        return fn

    def register_kernel(self, device_types, fn: Callable | None = None, /) -> Callable:
        """An implementation for `device_types` ('cpu', 'cuda' or several); as a decorator without `fn`."""
        def register(f: Callable) -> Callable:
            for d in ([device_types] if isinstance(device_types, str) or device_types is None else device_types):
                self._kernels[d] = f
            return f
        return register if fn is None else register(fn)

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """backward(ctx, *grads) -> one gradient per input; setup_context(ctx, inputs, output) saves what it needs."""
        if not callable(backward):
            raise TypeError(f"Expected backward to be callable, got {type(backward)}")
        self._backward_fn, self._setup_context_fn = backward, setup_context

    # -- calling ---------------------------------------------------------------------------------------
    def _inputs(self, args: tuple, kwargs: dict) -> tuple:
        bound = self._signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def _invoke(self, fn: Callable, inputs: tuple) -> Any:
        params = list(self._signature.parameters.values())
        positional = [v for p, v in zip(params, inputs) if p.kind != p.KEYWORD_ONLY]
        keywords = {p.name: v for p, v in zip(params, inputs) if p.kind == p.KEYWORD_ONLY}
        return fn(*positional, **keywords)

    def _kernel(self, tensors: list) -> Callable:
        for t in tensors:
            found = self._kernels.get(t.device.type)
            if found is not None:
                return found
        return self._kernels.get(None, self._init_fn)

    def _dispatch(self, args: tuple, kwargs: dict) -> Any:
        inputs = self._inputs(args, kwargs)
        tensors = [t for v in inputs for t in _tensors(v)]
        if any(t.device.type == "meta" for t in tensors):
            if self._fake_fn is None:
                raise RuntimeError(f"There was no fake impl registered for {self}. This is necessary for "
                                   "torch.compile/export/fx tracing to work. Please use "
                                   f"`{self._init_fn.__name__}.register_fake` to add an fake impl.")
            return self._invoke(self._fake_fn, inputs)
        if is_grad_enabled() and any(t._requires_grad for t in tensors):
            return self._autograd_function().apply(*inputs)
        with no_grad():
            return self._checked(self._invoke(self._kernel(tensors), inputs), tensors)

    def _checked(self, out: Any, tensors: list) -> Any:
        """`out`, once sure no output is or aliases an input (torch refuses that)."""
        outs = _tensors(out)
        for i, o in enumerate(outs):
            if any(o is t or o._v.blob is t._v.blob for t in tensors) or \
                    any(o._v.blob is p._v.blob for p in outs[:i]):
                fn = self._init_fn
                raise RuntimeError(f"{fn.__name__} (with implementation in {inspect.getmodule(fn)}): The output of "
                                   "this custom operator (1) must not also be an input to this custom operator and "
                                   "(2) may not alias any inputs to this custom operator or other returns. The most "
                                   "common way to trigger this error is if we have y = custom_op(x) and y and x are "
                                   "the same Tensor. Please instead return a clone of the offending output "
                                   "tensor(s) (e.g. return x.clone()) or refactor the custom operator to not return "
                                   "y.")
        return out

    def _autograd_function(self) -> type:
        """The autograd.Function running this op (made once; it reads the current registrations)."""
        if self._function is not None:
            return self._function
        op = self

        def forward(*inputs):
            tensors = [t for v in inputs for t in _tensors(v)]
            return op._checked(op._invoke(op._kernel(tensors), inputs), tensors)

        def setup_context(ctx, inputs, output):
            if op._setup_context_fn is not None:
                op._setup_context_fn(ctx, inputs, output)

        def backward(ctx, *grads):
            if op._backward_fn is None:
                raise RuntimeError(f"Trying to backward through {op._namespace}.{op._name}.default but no autograd "
                                   "formula was registered. Please use register_autograd to add one.")
            result = op._backward_fn(ctx, *grads)
            return result if isinstance(result, tuple) else (result,)

        name = f"GeneratedBackwardFor_{self._namespace}_{self._name}_default"
        self._function = type(name, (Function,), {"forward": staticmethod(forward),
                                                  "setup_context": staticmethod(setup_context),
                                                  "backward": staticmethod(backward)})
        return self._function


def _split_name(name: str) -> tuple:
    if not isinstance(name, str) or name.count("::") != 1:
        raise ValueError(f"Expected there to be a namespace in {name}, i.e. The operator name should look something "
                         "like ns::foo")
    namespace, op_name = name.split("::")
    if "." in op_name:
        raise ValueError(f"The torch.custom_ops APIs do not handle overloads, i.e. operator names with '.' in them. "
                         f"Please name your operator something like {namespace}::{op_name.replace('.', '_')}.")
    return namespace, op_name


def custom_op(name: str, fn: Callable | None = None, /, *, mutates_args, device_types=None,
              schema: str | None = None, tags=None) -> Any:
    """Make `fn` (or the decorated function) the operator `name` ('ns::op'); `mutates_args`: the names of the
    Tensor arguments it writes to (or 'unknown'); `device_types`: the devices this implementation is for."""
    namespace, op_name = _split_name(name)

    def make(f: Callable) -> CustomOpDef:
        text = schema if schema is not None else infer_schema(f, mutates_args=mutates_args)
        op = CustomOpDef(namespace, op_name, text, f, mutates_args)
        if device_types is not None:
            op._kernels.clear()
            op.register_kernel(device_types, f)
            op._init_fn = f
        _ops._REGISTRY[op._qualname] = op
        return op
    return make if fn is None else make(fn)


def _lookup(op: Any) -> CustomOpDef:
    if isinstance(op, CustomOpDef):
        return op
    if isinstance(op, (_ops.OpOverload, _ops.OpOverloadPacket)):
        return op._op
    if isinstance(op, str):
        found = _ops._REGISTRY.get(op)
        if found is None:
            raise ValueError(f"Cannot find operator {op}: define it with torch.library.custom_op first")
        return found
    raise TypeError(f"Expected an operator name 'ns::op', a CustomOpDef or an OpOverload, got {type(op)}")


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Any = None, _stacklevel: int = 1) -> Any:
    """Register the fake (meta) implementation of `op`; as a decorator without `func`."""
    target = _lookup(op)
    return target.register_fake if func is None else target.register_fake(func)


def register_autograd(op: Any, backward: Callable, /, *, setup_context: Callable | None = None,
                      lib: Any = None) -> None:
    """Register the backward formula (and setup_context) of `op`."""
    _lookup(op).register_autograd(backward, setup_context=setup_context)


def register_kernel(op: Any, device_types, func: Callable | None = None, /, *, lib: Any = None) -> Any:
    """Register a per-device implementation of `op`; as a decorator without `func`."""
    return _lookup(op).register_kernel(device_types, func)


def get_ctx() -> Any:
    """torch's context for data-dependent fake implementations: tidal's meta tensors have no symbolic sizes."""
    raise RuntimeError("torch.library.get_ctx(): tidal's fake implementations run on meta tensors with concrete "
                       "sizes; there is no symbolic-size context")


class OpCheckError(Exception):
    """A check of opcheck failed."""


_CHECKS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_aot_dispatch_dynamic")


def opcheck(op: Any, args: tuple, kwargs: dict | None = None, *, test_utils=_CHECKS,
            raise_exception: bool = True, atol=None, rtol=None) -> dict:
    """Check a custom op on one sample: it writes only the inputs it declares (test_schema), an input that
    requires grad gives an output in the graph (test_autograd_registration), its fake implementation gives the
    real outputs' shapes and dtypes (test_faketensor). test_aot_dispatch_dynamic compares a compiled run with an
    eager one; tidal compiles nothing, so it reports SKIPPED."""
    target = _lookup(op)
    kwargs = kwargs or {}
    tests = (test_utils,) if isinstance(test_utils, str) else tuple(test_utils)
    for t in tests:
        if t not in _CHECKS:
            raise ValueError(f"test_utils must be a subset of {_CHECKS}, got {t!r}")
    results: dict = {}
    for t in tests:
        try:
            if t == "test_aot_dispatch_dynamic":
                results[t] = "SKIPPED"
                continue
            {"test_schema": _check_schema, "test_autograd_registration": _check_autograd,
             "test_faketensor": _check_fake}[t](target, args, kwargs)
            results[t] = "SUCCESS"
        except Exception as e:  # noqa: BLE001 - each check's failure is reported, as torch's opcheck does
            if raise_exception:
                raise OpCheckError(f"opcheck(op, ...): {t} failed with {e} (scroll up for stack trace)") from e
            results[t] = e
    return results


def _clone_args(value: Any) -> Any:
    if isinstance(value, Tensor):
        return value.detach().clone().requires_grad_(value.requires_grad)
    if isinstance(value, (list, tuple)):
        return type(value)(_clone_args(v) for v in value)
    return value


def _check_schema(op: CustomOpDef, args: tuple, kwargs: dict) -> None:
    import numpy as np
    args, kwargs = _clone_args(args), _clone_args(kwargs)
    inputs = op._inputs(args, kwargs)
    names = list(op._signature.parameters)
    before = {n: [t.detach().clone() for t in _tensors(v)] for n, v in zip(names, inputs)}
    with no_grad():
        op._dispatch(args, kwargs)
    declared = () if op._mutates_args == _UNKNOWN else op._mutates_args
    for n, v in zip(names, inputs):
        if op._mutates_args == _UNKNOWN or n in declared:
            continue
        for old, new in zip(before[n], _tensors(v)):
            if not np.array_equal(old.numpy(), new.detach().numpy(), equal_nan=True):
                raise RuntimeError(f"Argument {n} is not defined as mutable but was mutated")


def _check_autograd(op: CustomOpDef, args: tuple, kwargs: dict) -> None:
    args, kwargs = _clone_args(args), _clone_args(kwargs)
    inputs = [t for v in op._inputs(args, kwargs) for t in _tensors(v)]
    if not any(t._requires_grad for t in inputs):
        return
    outs = [o for o in _tensors(op._dispatch(args, kwargs)) if o.dtype.is_floating_point or o.dtype.is_complex]
    if outs and not any(o._requires_grad for o in outs):
        raise RuntimeError(f"{op._qualname}: inputs require grad but the outputs are not in the autograd graph")


def _check_fake(op: CustomOpDef, args: tuple, kwargs: dict) -> None:
    real = _tensors(op._dispatch(_clone_args(args), _clone_args(kwargs)))

    def to_meta(v):
        if isinstance(v, Tensor):
            return v.detach().to("meta")
        if isinstance(v, (list, tuple)):
            return type(v)(to_meta(x) for x in v)
        return v
    fake = _tensors(op._dispatch(to_meta(args), {k: to_meta(v) for k, v in kwargs.items()}))
    if len(fake) != len(real):
        raise RuntimeError(f"{op._qualname}: the fake implementation returned {len(fake)} tensors, the real one "
                           f"{len(real)}")
    head = (f"When comparing the output of {op._namespace}.{op._name}.default on FakeTensor and concrete Tensors, "
            "found mismatched tensor metadata: ")
    for f, r in zip(fake, real):
        if tuple(f.shape) != tuple(r.shape):
            raise RuntimeError(f"{head}Shapes torch.Size({list(r.shape)}) and torch.Size({list(f.shape)}) are not "
                               "equal!")
        if f.dtype is not r.dtype:
            raise RuntimeError(f"{head}Dtypes {r.dtype} and {f.dtype} are not equal!")
