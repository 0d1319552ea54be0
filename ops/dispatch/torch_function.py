"""The __torch_function__ protocol for tensor-like objects (torch.overrides; the "Extending torch" notes).

A class that is not a Tensor but defines `__torch_function__(cls, func, types, args, kwargs)` (the docs'
ScalarTensor) receives the torch functions called with its instances: `torch.mean(d)` returns what its handler
returns, NotImplemented from every handler is torch's TypeError. The public functions reach this only when they
failed on such an argument (ops/__init__.py: the check costs nothing for tensors, as for global tensors).

Tensor subclasses made outside tidal (not Parameters) get, when the class is created, methods and operators that
keep their class (`m * 2`, `m.sum()`, `m[0]` are instances of it, as torch's default __torch_function__ makes them)
or, when the class defines its own __torch_function__, that pass each call to it (the handler may defer to
Tensor.__torch_function__ with super()). Plain tensors are untouched: the methods live on the subclass. The public
torch functions do the same when their first argument (or the first tensor of a list) is such an instance; they
check it only once such a class exists (before, one flag read per call).
"""
from __future__ import annotations

import contextlib
import functools
from typing import Any, Callable, Iterable

from ...tensor import Tensor
from ...tensor.dtype import repr_namespace

__all__: list = []  # (torch.overrides names these: compat/overrides.py)
METHODS: dict = {}

_DISABLED = [0]  # inside DisableTorchFunction blocks (and a default __torch_function__'s call)
# > 0 while tensor-likes that autograd cannot record on are live (func/batching.py: vmap's batched values); a
# composite's hand-attached node checks its inputs only then (Primitive.attach)
TENSOR_LIKES_LIVE = [0]
_PLAIN = (Tensor,)  # classes whose instances act as plain tensors: Tensor, and nn's Parameter once nn registers it


def register_plain_subclass(cls: type) -> None:
    """Make Tensor subclass `cls` act as torch's Parameter does: its __torch_function__ disabled, results plain
    tensors (tidal.nn.parameter registers Parameter when it loads; nn sits above ops)."""
    global _PLAIN
    _PLAIN += (cls,)


def _is_overloaded(item) -> bool:
    tf = getattr(type(item), "__torch_function__", None)
    return tf is not None and not isinstance(item, Tensor)


def overloaded_args(relevant: Iterable) -> list:
    """The arguments (one level into lists and tuples) whose type has its own __torch_function__, subclasses
    before their parents, otherwise in order."""
    found: list = []
    for arg in relevant:
        for item in (arg if isinstance(arg, (list, tuple)) else (arg,)):
            if _is_overloaded(item) and not any(type(f) is type(item) for f in found):
                at = next((k for k, f in enumerate(found) if issubclass(type(item), type(f))), len(found))
                found.insert(at, item)
    return found


def has_torch_function(relevant_args: Iterable) -> bool:
    """Whether any of `relevant_args` is a tensor-like with __torch_function__ or a Tensor subclass (not a
    Parameter), as torch answers."""
    if _DISABLED[0]:
        return False
    return any(_is_overloaded(a) or isinstance(a, Tensor) and type(a) not in _PLAIN
               for arg in relevant_args for a in (arg if isinstance(arg, (list, tuple)) else (arg,)))


def has_torch_function_unary(input) -> bool:
    """has_torch_function for one argument (torch.nn.functional's fast spelling)."""
    return has_torch_function((input,))


def has_torch_function_variadic(*args) -> bool:
    """has_torch_function over the positional arguments."""
    return has_torch_function(args)


def is_tensor_like(inp) -> bool:
    """A Tensor, or an object whose type defines __torch_function__."""
    return isinstance(inp, Tensor) or hasattr(type(inp), "__torch_function__")


def handle_torch_function(public_api: Callable, relevant_args: Iterable, *args, **kwargs) -> Any:
    """Call each overloaded argument's __torch_function__ in turn until one does not return NotImplemented."""
    overloaded = overloaded_args(relevant_args)
    types = tuple(type(a) for a in overloaded)
    for arg in overloaded:
        result = type(arg).__torch_function__(public_api, types, args, kwargs)
        if result is not NotImplemented:
            return result
    name = f"{repr_namespace[0]}.{getattr(public_api, '__name__', public_api)}"
    listed = "".join(f"  - tensor subclass {t}\n" for t in types)
    raise TypeError(f"Multiple dispatch failed for '{name}'; all __torch_function__ handlers returned "
                    f"NotImplemented:\n\n{listed}\nFor more information, try re-running with "
                    "TORCH_LOGS=not_implemented")


def dispatch_if_overloaded(public_api: Callable, args: tuple, kwargs: dict):
    """(True, result) when an argument is an overloaded tensor-like (its handlers answered), else (False, None)."""
    if _DISABLED[0]:
        return False, None
    relevant = (*args, *kwargs.values())
    if not overloaded_args(relevant):
        return False, None
    return True, handle_torch_function(public_api, relevant, *args, **kwargs)


def asking_tensor_likes(fn: Callable) -> Callable:
    """`fn`, asking a tensor-like's __torch_function__ (vmap's batched values) when its plain call fails, as the
    public ops functions do: for functions reached outside ops' own wrappers (nn.functional, linalg, fft). Nothing
    is checked on the plain path."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception:
            handled, result = dispatch_if_overloaded(call, args, kwargs)
            if handled:
                return result
            raise
    return call


@contextlib.contextmanager
def DisableTorchFunction():
    """A block where torch functions do not dispatch to __torch_function__."""
    _DISABLED[0] += 1
    try:
        yield
    finally:
        _DISABLED[0] -= 1


def _default_torch_function(cls, func, types, args=(), kwargs=None):
    """Tensor.__torch_function__: run `func` itself; Tensor results come back as `cls` (torch's default)."""
    kwargs = kwargs or {}
    if _DISABLED[0] or not all(issubclass(cls, t) for t in types if issubclass(t, Tensor)):
        # (called again from inside its own call: `func` is another library's (real torch's `torch_t != tidal_t`),
        # which asks the tidal tensor again; declining ends the loop in that library's TypeError or fallback)
        return NotImplemented
    with DisableTorchFunction():
        result = func(*args, **kwargs)
    return _convert(result, cls)


def _convert(value, cls):
    if cls is Tensor:
        return value
    if isinstance(value, Tensor) and not isinstance(value, cls):
        return value.as_subclass(cls)
    if isinstance(value, (tuple, list)):
        items = [_convert(v, cls) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else type(value)(items)
    return value


# -- Tensor subclasses ------------------------------------------------------------------------------------------
_OPERATORS = {f"__{n}__" for n in (
    "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv rfloordiv ifloordiv mod rmod imod "
    "pow rpow ipow matmul rmatmul and rand iand or ror ior xor rxor ixor lshift rlshift ilshift rshift rrshift "
    "irshift eq ne lt le gt ge neg pos abs invert getitem").split()}
_VIEW_PROPERTIES = ("T", "mT", "H", "mH")


SUBCLASSES = [False]  # whether a user's Tensor subclass exists (the public functions then look at their input)
NOT_OVERRIDABLE = frozenset({"tensor"})  # functions torch does not dispatch: torch.tensor(m) is a plain tensor
_USER_CLASSES: set = set()


def first_is_subclass(first) -> bool:
    """Whether a call's first argument (or the first tensor of a list of them, as cat takes) is an instance of a
    user's Tensor subclass: the one check a public function makes once such a class exists."""
    c = first.__class__
    if c is list or c is tuple:
        return bool(first) and first[0].__class__ in _USER_CLASSES
    return c in _USER_CLASSES


def _found(args, kwargs) -> list:
    found = []
    for arg in (*args, *kwargs.values()) if kwargs else args:
        c = arg.__class__
        if c in _USER_CLASSES:
            found.append(arg)
        elif c is list or c is tuple:
            found.extend(item for item in arg if item.__class__ in _USER_CLASSES)
    return found


def dispatch_subclass(public_api: Callable, fn: Callable, args: tuple, kwargs: dict):
    """(True, result) for a call with instances of a user's Tensor subclass (its handler's answer, or `fn`'s with
    tensors converted to the subclass), else (False, None)."""
    found = _found(args, kwargs)
    if not found or _DISABLED[0]:
        return False, None
    cls = type(found[0])
    for item in found[1:]:
        if issubclass(type(item), cls):
            cls = type(item)
    handler = cls.__torch_function__
    if getattr(handler, "__func__", None) is not _default_torch_function:
        return True, handler(public_api, tuple(dict.fromkeys(type(i) for i in found)), args, kwargs)
    with DisableTorchFunction():
        result = fn(*args, **kwargs)
    return True, _convert(result, cls)


def _subclass_methods(cls) -> None:
    """Give a user's Tensor subclass torch's subclass behaviour (see the module docstring)."""
    if cls.__module__.startswith("tidal."):  # (tidal's own subclasses: Parameter, Buffer, CausalBias...)
        return
    if issubclass(cls, _PLAIN[1:]):  # torch's Parameter disables __torch_function__: results are plain tensors
        return
    _USER_CLASSES.add(cls)
    SUBCLASSES[0] = True
    for name, fn in list(vars(Tensor).items()):
        # (only where Tensor's own method would be found: not over the class's or a parent subclass's methods)
        if callable(fn) and not isinstance(fn, (type, classmethod, staticmethod)) and \
                (not name.startswith("_") or name in _OPERATORS) and _found_on(cls, name) is fn:
            setattr(cls, name, _dispatching(fn))
    for name in _VIEW_PROPERTIES:
        prop = vars(Tensor).get(name)
        if isinstance(prop, property) and _found_on(cls, name) is prop:
            setattr(cls, name, property(_dispatching(prop.fget), doc=prop.__doc__))
    if _found_on(cls, "__repr__") is Tensor.__repr__:
        cls.__repr__ = cls.__str__ = _named_repr


def _named_repr(self) -> str:
    """torch prints a subclass instance under its class name: `Meta([1., 2.])`."""
    name = type(self).__name__
    text = Tensor.__repr__(self)
    if not text.startswith("tensor("):
        return text
    return name + text[len("tensor"):].replace("\n" + " " * len("tensor("), "\n" + " " * (len(name) + 1))


def _found_on(cls, name: str):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


def _dispatching(fn):
    def method(self, *args, **kwargs):
        if _DISABLED[0]:
            return fn(self, *args, **kwargs)
        cls = type(self)
        handler = cls.__torch_function__
        if getattr(handler, "__func__", None) is not _default_torch_function:
            return handler(named, (cls,), (self, *args), kwargs)
        with DisableTorchFunction():
            result = fn(self, *args, **kwargs)
        return _convert(result, cls)

    def named(*args, **kwargs):  # what a handler receives as `func`: named as the op ("add" for `x + y`)
        return fn(*args, **kwargs)
    named.__name__ = fn.__name__.removesuffix("_operator")
    method.__name__, method.__qualname__, method.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return method


def _init_subclass(cls, **kwargs) -> None:
    super(Tensor, cls).__init_subclass__(**kwargs)
    _subclass_methods(cls)


METHODS["__torch_function__"] = classmethod(_default_torch_function)
METHODS["__init_subclass__"] = classmethod(_init_subclass)
