"""Module: the base class of layers. It owns parameters, buffers and child modules by name.

Attribute assignment routes Parameters, Buffers and Modules into three ordered dicts, so that
traversal (`named_parameters`, `state_dict`, `to`) sees the tree; everything else is an
ordinary attribute. Subclasses set hyperparameters in `__init__` and compute in `forward`.
"""
from __future__ import annotations

import warnings
from collections import OrderedDict
from typing import Callable, Iterator

from .. import ops
from ..autograd import no_grad
from ..tensor import Tensor
from ..tensor import dtype as dt
from . import future_flags
from .backward_hooks import BackwardHook, BackwardHooksMixin, legacy_backward_hooks
from .hooks import RemovableHandle
from .module_hooks import GLOBAL as _G
from .module_hooks import registered as _registered
from .module_to import parse_to
from .parameter import Buffer, Parameter, set_data
from .state_dict import StateDictMixin

__all__ = ["Module", "RemovableHandle"]
# the global hook tables (torch.nn.modules.module.register_module_*), bound once: a plain call tests them
_G_FORWARD_PRE, _G_FORWARD, _G_BACKWARD_PRE, _G_BACKWARD = _G.forward_pre, _G.forward, _G.backward_pre, _G.backward

def _add_indent(text: str, spaces: int) -> str:
    """Indent every line of `text` but the first (for nested reprs); blank lines stay empty, as torch's."""
    lines = text.split("\n")
    if len(lines) == 1:
        return text
    pad = " " * spaces
    return lines[0] + "\n" + "\n".join(pad + line if line.strip() else "" for line in lines[1:])


_addindent = _add_indent  # (torch's name: custom reprs call torch.nn.modules.module._addindent)


def _is_parameter(value) -> bool:
    """An nn.Parameter, or a global parameter (nn.Parameter of a global tensor)."""
    return getattr(value, "is_parameter", False) is True


def _check_member_name(kind: str, name) -> None:
    """PyTorch's checks on the name given to register_buffer/register_parameter/add_module."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else ""))
    if name == "":
        raise KeyError(f'{kind} name can\'t be empty string ""')


class Module(BackwardHooksMixin, StateDictMixin):
    """Base class for all neural network modules."""

    _version: int = 1
    training: bool
    dump_patches: bool = False
    call_super_init: bool = False

    def __init__(self, *args, **kwargs) -> None:
        if args or kwargs:
            extra = next(iter(kwargs)) if kwargs else None
            raise TypeError(f"{type(self).__name__}.__init__() got an unexpected keyword argument '{extra}'"
                            if extra else f"{type(self).__name__}.__init__() takes 1 positional argument but "
                            f"{len(args) + 1} were given")
        setter = super().__setattr__
        setter("training", True)
        setter("_parameters", {})
        setter("_buffers", {})
        setter("_non_persistent_buffers_set", set())
        setter("_modules", {})
        setter("_forward_pre_hooks", OrderedDict())
        setter("_forward_pre_hooks_with_kwargs", OrderedDict())  # (hook id -> True, as torch keeps them)
        setter("_forward_hooks", OrderedDict())
        setter("_forward_hooks_with_kwargs", OrderedDict())
        setter("_forward_hooks_always_called", OrderedDict())
        setter("_backward_hooks", OrderedDict())
        setter("_backward_pre_hooks", OrderedDict())
        setter("_is_full_backward_hook", None)
        setter("_state_dict_hooks", OrderedDict())
        setter("_load_state_dict_pre_hooks", OrderedDict())
        setter("_load_state_dict_post_hooks", OrderedDict())

    def forward(self, *args, **kwargs):
        """The computation of the module; subclasses define it."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    # -- calling -------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks or self._backward_hooks or self._backward_pre_hooks
                or _G_FORWARD_PRE or _G_FORWARD or _G_BACKWARD_PRE or _G_BACKWARD):
            return self.forward(*args, **kwargs)
        called: set = set()  # always-called hooks that ran
        state = {"args": args, "kwargs": kwargs, "output": None}
        try:
            return self._call_with_hooks(state, called)
        except Exception:
            # torch runs the hooks registered with always_call=True that have not run, whatever raised
            # (a pre-hook, forward or another hook); their own errors become warnings.
            args, kwargs, output = state["args"], state["kwargs"], state["output"]
            for scope, table in (("global module", _G_FORWARD), ("module", self._forward_hooks)):
                always = _G.forward_always_called if table is _G_FORWARD else self._forward_hooks_always_called
                for hook_id, hook in list(table.items()):
                    if hook_id not in always or hook_id in called:
                        continue
                    try:
                        if table is not _G_FORWARD and hook_id in self._forward_hooks_with_kwargs:
                            result = hook(self, args, kwargs, output)
                        else:
                            result = hook(self, args, output)
                        if result is not None:
                            output = result
                    except Exception as exc:  # noqa: BLE001 - the first error is the one to report
                        warnings.warn(f"{scope} forward hook with ``always_call=True`` raised an exception that "
                                      f"was silenced as another error was raised in forward: {exc}", stacklevel=2)
            raise

    def _call_with_hooks(self, state: dict, called: set):
        """forward between its hooks; `state` keeps the arguments and output the always-called hooks need."""
        args, kwargs = state["args"], state["kwargs"]
        for hook_id, hook in (*_G_FORWARD_PRE.items(), *self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of "
                                           f"(new_args, new_kwargs), but got {result}.")
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
            state["args"], state["kwargs"] = args, kwargs
        full, legacy = self._backward_hook_lists()
        bw_hook = None
        pre = [*_G_BACKWARD_PRE.values(), *self._backward_pre_hooks.values()]
        if full or pre:
            bw_hook = BackwardHook(self, full, pre)
            args = bw_hook.setup_input_hook(args)
            state["args"] = args
        output = state["output"] = self.forward(*args, **kwargs)
        for hook_id, hook in (*_G_FORWARD.items(), *self._forward_hooks.items()):
            if hook_id in self._forward_hooks_always_called or hook_id in _G.forward_always_called:
                called.add(hook_id)
            if hook_id in self._forward_hooks_with_kwargs or hook_id in _G.forward_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = state["output"] = result
        if bw_hook is not None:
            if not isinstance(output, (Tensor, tuple)):
                warnings.warn("For backward hooks to be called, module output should be a Tensor or a tuple of "
                              f"Tensors but received {type(output)}", stacklevel=3)
            output = bw_hook.setup_output_hook(output)
        if legacy:
            legacy_backward_hooks(self, legacy, args, output)
        return output

    def register_forward_pre_hook(self, hook: Callable, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """Call `hook(module, args)` (or `(module, args, kwargs)`) before forward; it may replace the inputs."""
        handle = RemovableHandle(self._forward_pre_hooks, extra_dict=self._forward_pre_hooks_with_kwargs)
        self._forward_pre_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_pre_hooks_with_kwargs[handle.id] = True
        if prepend:
            self._forward_pre_hooks.move_to_end(handle.id, last=False)
        return handle

    def register_forward_hook(self, hook: Callable, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """Call `hook(module, args, output)` after forward; it may replace the output."""
        handle = RemovableHandle(self._forward_hooks,
                                 extra_dict=[self._forward_hooks_with_kwargs, self._forward_hooks_always_called])
        self._forward_hooks[handle.id] = hook
        if with_kwargs:
            self._forward_hooks_with_kwargs[handle.id] = True
        if always_call:
            self._forward_hooks_always_called[handle.id] = True
        if prepend:
            self._forward_hooks.move_to_end(handle.id, last=False)
        return handle

    # -- registration --------------------------------------------------------------------------
    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not a parameter (saved in state_dict if `persistent`)."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_member_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' "
                            f"({dt.repr_namespace[0]} Tensor or None required)")
        if isinstance(tensor, Buffer):
            persistent = tensor.__dict__.get("persistent", persistent)
        if _G.buffer_registration:
            tensor = _registered(_G.buffer_registration, self, name, tensor)
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under `name`."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_member_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not _is_parameter(param):
            raise TypeError(f"cannot assign '{_type_name(param)}' object to parameter '{name}' "
                            f"({dt.repr_namespace[0]}.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                             f"created explicitly. To express '{name}' as a function of another Tensor, "
                             "compute the value in the forward() method.")
        if _G.parameter_registration:
            param = _registered(_G.parameter_registration, self, name, param)
        self._parameters[name] = param

    def add_module(self, name: str, module: "Module | None") -> None:
        """Add a child module under `name` (reachable as an attribute)."""
        if not isinstance(module, Module) and module is not None:
            raise TypeError(f"{_type_name(module)} is not a Module subclass")
        _check_member_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        if _G.module_registration:
            module = _registered(_G.module_registration, self, name, module)
        self._modules[name] = module

    register_module = add_module

    def set_submodule(self, target: str, module: "Module", strict: bool = False) -> None:
        """Put `module` at dotted path `target` (its parent must exist; with `strict`, the name too)."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        *path, name = target.split(".")
        parent = self.get_submodule(".".join(path))
        if strict and not hasattr(parent, name):
            raise AttributeError(f"{parent._get_name()} has no attribute `{name}`")
        if hasattr(parent, name) and not isinstance(getattr(parent, name), Module):
            raise AttributeError(f"`{name}` is not an nn.Module")
        setattr(parent, name, module)

    def get_submodule(self, target: str) -> "Module":
        """The submodule at dotted path `target` ('' is self)."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(f"{mod._get_name()} has no attribute `{item}`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return mod

    def _owner_and_name(self, target: str) -> tuple:
        module_path, _, name = target.rpartition(".")
        return self.get_submodule(module_path), name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target`."""
        mod, name = self._owner_and_name(target)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        param = getattr(mod, name)
        if not _is_parameter(param):
            raise AttributeError(f"`{name}` is not an nn.Parameter")
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target`."""
        mod, name = self._owner_and_name(target)
        if not hasattr(mod, name):
            raise AttributeError(f"{mod._get_name()} has no attribute `{name}`")
        if name not in mod._buffers:
            raise AttributeError(f"`{name}` is not a buffer")
        return getattr(mod, name)

    # -- attributes ----------------------------------------------------------------------------
    def __getattr__(self, name: str):
        d = self.__dict__
        for store in ("_parameters", "_buffers", "_modules"):
            members = d.get(store)
            if members is not None and name in members:
                return members[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params = d.get("_parameters")

        def forget(*stores):
            for store in stores:
                if store is d:
                    store.pop(name, None)
                elif store is not None and name in store:
                    del store[name]
                    if store is d.get("_buffers"):
                        self._non_persistent_buffers_set.discard(name)

        if _is_parameter(value):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            forget(d, d.get("_buffers"), d.get("_modules"))
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as parameter '{name}' "
                                f"({dt.repr_namespace[0]}.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            modules = d.get("_modules")
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            forget(d, params, d.get("_buffers"))
            modules[name] = _registered(_G.module_registration, self, name, value) if _G.module_registration \
                else value
        elif d.get("_modules") is not None and name in d["_modules"]:
            if value is not None:
                raise TypeError(f"cannot assign '{_type_name(value)}' as child module '{name}' "
                                f"({dt.repr_namespace[0]}.nn.Module or None expected)")
            d["_modules"][name] = _registered(_G.module_registration, self, name, value)
        elif isinstance(value, Buffer) or (d.get("_buffers") is not None and name in d["_buffers"]):
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_type_name(value)}' as buffer '{name}' "
                                f"({dt.repr_namespace[0]}.nn.Buffer, {dt.repr_namespace[0]}.Tensor or None expected)")
            if isinstance(value, Buffer):
                persistent = value.__dict__.get("persistent", True)
            else:
                persistent = name not in self._non_persistent_buffers_set
            if name not in d.get("_buffers", {}):
                forget(d, params, d.get("_modules"))
            self.register_buffer(name, value, persistent)
        else:
            super().__setattr__(name, value)

    def __delattr__(self, name: str) -> None:
        if name in self._parameters:
            del self._parameters[name]
        elif name in self._buffers:
            del self._buffers[name]
            self._non_persistent_buffers_set.discard(name)
        elif name in self._modules:
            del self._modules[name]
        else:
            super().__delattr__(name)

    def __dir__(self) -> list:
        keys = list(super().__dir__()) + list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(k for k in set(keys) if not k[:1].isdigit())

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        for name, empty in (("_backward_hooks", OrderedDict), ("_backward_pre_hooks", OrderedDict),
                            ("_is_full_backward_hook", lambda: None)):  # pickled before these existed
            if name not in self.__dict__:
                self.__dict__[name] = empty()

    # -- traversal -----------------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator:
        """(name, module) for this module and every descendant, depth first."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self) -> Iterator:
        """This module and every descendant."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator:
        """(name, module) for each direct child (each module once)."""
        seen = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator:
        """The direct children."""
        for _, module in self.named_children():
            yield module

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool) -> Iterator:
        seen = set()
        owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse \
            else [(prefix, self)]
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, store).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield owner_prefix + ("." if owner_prefix else "") + name, value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator:
        """(dotted name, parameter) over this module (and its descendants if `recurse`)."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator:
        """The parameters (each once), e.g. to give to an optimizer."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True) -> Iterator:
        """(dotted name, buffer) over this module (and its descendants if `recurse`)."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator:
        """The buffers."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn: Callable) -> "Module":
        """Call `fn` on every child (recursively), then on self; returns self."""
        for module in self.children():
            module.apply(fn)
        fn(self)
        return self

    # -- modes and gradients -------------------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Set training mode on this module and its descendants."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self

    def eval(self) -> "Module":
        """Set evaluation mode (same as train(False))."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Set requires_grad on every parameter."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters: to None, or to zeros in place."""
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    # -- conversion ----------------------------------------------------------------------------
    def _apply(self, fn: Callable, recurse: bool = True) -> "Module":
        """Replace every parameter's data, gradient and buffer by fn(tensor), keeping parameter identity."""
        if recurse:
            for module in self.children():
                module._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with no_grad():
                new = fn(param)
            if new is not param and future_flags.get_overwrite_module_params_on_conversion() and \
                    not future_flags.get_swap_module_params_on_conversion():
                # torch.__future__'s overwrite switch: a new Parameter object (the old one keeps its values)
                fresh = type(param)(new, param.requires_grad)
                if param.grad is not None:
                    with no_grad():
                        fresh.grad = fn(param.grad)
                self._parameters[key] = fresh
                continue
            if new is not param:
                set_data(param, new)
            if param.grad is not None:
                with no_grad():
                    param.grad = fn(param.grad)
        for key, buf in self._buffers.items():
            if buf is not None:
                new = fn(buf)
                if new is not buf and getattr(type(buf), "cls_to_become", None) is not None:
                    set_data(buf, new)  # a lazy placeholder stays one (torch's keep their class through .to())
                    new = buf
                self._buffers[key] = new
        return self

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Move parameters and buffers to `device` without copying their values (new, uninitialized storage)."""
        return self._apply(lambda t: ops.empty_like(t, device=device), recurse=recurse)

    def compile(self, *args, **kwargs) -> None:
        """torch compiles the module's call in place; tidal runs eagerly (the VM fuses), so calls are unchanged."""

    def share_memory(self) -> "Module":
        """Move every parameter and buffer into shared memory (Hogwild: worker processes update them in place)."""
        return self._apply(lambda t: t.share_memory_())

    def to(self, *args, **kwargs) -> "Module":
        """Move/cast parameters and buffers: `.to(device)`, `.to(dtype)`, `.to(tensor)`, `.to(device, dtype)`."""
        device, dtype, _, memory_format = parse_to(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired "
                            f"dtype={dtype}")

        def convert(t: Tensor) -> Tensor:
            target = dtype if dtype is not None and t.dtype.is_floating_point else None
            if memory_format is not None and t.dim() in (4, 5):  # torch lays out 4-D and 5-D tensors only
                return t.to(device=device, dtype=target, memory_format=memory_format)
            return t.to(device=device, dtype=target)
        return self._apply(convert)

    def _cast_floats(self, target: dt.dtype) -> "Module":
        return self._apply(lambda t: t.to(target) if t.dtype.is_floating_point else t)

    def float(self) -> "Module":
        """Cast floating-point parameters and buffers to float32."""
        return self._cast_floats(dt.float32)

    def double(self) -> "Module":
        """Cast floating-point parameters and buffers to float64."""
        return self._cast_floats(dt.float64)

    def half(self) -> "Module":
        """Cast floating-point parameters and buffers to float16."""
        return self._cast_floats(dt.float16)

    def bfloat16(self) -> "Module":
        """Cast floating-point parameters and buffers to bfloat16."""
        return self._cast_floats(dt.bfloat16)

    def type(self, dst_type: dt.dtype) -> "Module":
        """Cast every parameter and buffer to `dst_type`."""
        return self._apply(lambda t: t.to(dst_type))

    def cpu(self) -> "Module":
        """Move parameters and buffers to the CPU."""
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None) -> "Module":
        """Move parameters and buffers to a CUDA device."""
        return self._apply(lambda t: t.cuda(device))

    # -- printing ------------------------------------------------------------------------------
    def _get_name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """The hyperparameters shown inside this module's repr (subclasses override)."""
        return ""

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({name}): " + _add_indent(repr(module), 2) for name, module in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return f"{self._get_name()}({body})"


def _type_name(value) -> str:
    """How PyTorch names a value's type in its errors: 'torch.FloatTensor' for tensors, else the class."""
    if isinstance(value, Tensor):
        return value.type()
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
