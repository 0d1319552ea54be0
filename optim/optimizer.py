"""Optimizer: parameter groups, per-parameter state, hooks and PyTorch-format state dicts.

`step` is wrapped once per class (see `__init_subclass__`) so that every step runs the step
hooks and runs without recording a graph. The update math of each optimizer is a single
list-wide function in its own module; an optimizer that declares it (`_update`, with the state
entries it takes, `_state_keys`) inherits the one `step` skeleton written here: collect the
parameters with gradients, create their state the first time, count the step, and run the
update over the group as one multi-tensor instruction (complex parameters through their real
views, as PyTorch: see `_run`). A subclass overrides only the piece particular to its algorithm (`_init_state`, `_advance`, `_apply`).
"""
from __future__ import annotations

import functools
import inspect
import operator
import warnings
from collections import OrderedDict, defaultdict
from copy import deepcopy
from itertools import chain
from typing import Any, Callable, Iterable, Union

from ..autograd.grad_mode import enable_grad, no_grad, set_grad_enabled
from ..ops.complex_numbers.tensors import view_as_complex, view_as_real
from ..ops.factories.sparse_coo import SparseCooTensor
from ..tensor import Tensor
from ..tensor import dtype
from .foreach import foreach
from .step_counts import advance, as_tensors, forget, values, written

__all__ = ["Optimizer", "required", "descent_grad", "register_optimizer_step_pre_hook",
           "register_optimizer_step_post_hook"]


class _RequiredParameter:
    """Marks a hyperparameter that every parameter group must set."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

# what an optimizer's `params` may be (torch's alias, used in the signatures of user-written optimizers)
ParamsT = Union[Iterable[Tensor], Iterable[dict[str, Any]], Iterable[tuple[str, Tensor]]]


def _use_grad_for_differentiable(func: Callable) -> Callable:
    """torch's decorator for a `step`: run it with grad mode on only if the optimizer is `differentiable`."""
    @functools.wraps(func)
    def step(self, *args, **kwargs):
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            return func(self, *args, **kwargs)
    return step


def _get_value(x):
    """A step count or hyperparameter as a Python number (torch's helper for user-written updates)."""
    return x.item() if isinstance(x, Tensor) else x


def _default_to_fused_or_foreach(params: list, differentiable: bool, use_fused: bool = False) -> tuple:
    """(fused, foreach) as torch picks them by default: torch's multi-tensor kernels are for accelerators, so
    CPU parameters (and differentiable optimizers) get neither."""
    if differentiable:
        return False, False
    on_accelerator = all(p is None or p.device.type != "cpu" for p in params)
    fused = use_fused and on_accelerator and all(p is None or p.is_floating_point() for p in params)
    return fused, not fused and on_accelerator

_global_step_pre_hooks: OrderedDict = OrderedDict()
_global_step_post_hooks: OrderedDict = OrderedDict()


class RemovableHandle:
    """Returned by the register_* methods: `.remove()` unregisters the hook."""

    _next_id = 0

    def __init__(self, hooks: dict):
        self._hooks = hooks
        self.id = RemovableHandle._next_id
        RemovableHandle._next_id += 1

    def remove(self) -> None:
        """Unregister the hook (a second call does nothing)."""
        self._hooks.pop(self.id, None)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


def _add_hook(hooks: OrderedDict, hook: Callable, prepend: bool = False) -> RemovableHandle:
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def register_optimizer_step_pre_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(optimizer, args, kwargs)` before every optimizer's step."""
    return _add_hook(_global_step_pre_hooks, hook)


def register_optimizer_step_post_hook(hook: Callable) -> RemovableHandle:
    """Call `hook(optimizer, args, kwargs)` after every optimizer's step."""
    return _add_hook(_global_step_post_hooks, hook)


def _typename(obj) -> str:
    return obj.type() if isinstance(obj, Tensor) else type(obj).__qualname__


def _with_step_hooks(step: Callable) -> Callable:
    """Wrap a subclass's `step`: run the step hooks around it, with grad mode off (on when
    the optimizer is `differentiable`). Closures turn grad mode back on themselves."""
    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        for hook in chain(_global_step_pre_hooks.values(), self._optimizer_step_pre_hooks.values()):
            result = hook(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{hook} must return None or a tuple of (new_args, new_kwargs), "
                                       f"but got {result}.")
                args, kwargs = result
        with set_grad_enabled(bool(self.defaults.get("differentiable", False))):
            out = step(self, *args, **kwargs)
        for hook in chain(self._optimizer_step_post_hooks.values(), _global_step_post_hooks.values()):
            hook(self, args, kwargs)
        return out
    wrapper._hooked = True
    return wrapper


class Optimizer:
    """Base class: holds `param_groups` (dicts with 'params' and hyperparameters) and `state`."""

    # the list-wide update `_update(params, grads, *state lists, *extra lists, **hyperparameters)` that the
    # inherited `step` runs: one list per key of `_state_keys` (a parameter's `state.get(key)`), and as
    # keywords the group's entries of the same names, pairs split as `_pairs` says ({"betas": ("beta1", "beta2")})
    _update: Callable | None = None
    _state_keys: tuple[str, ...] = ()
    _pairs: dict[str, tuple[str, ...]] = {}
    _init_state: Callable[[Tensor, dict], dict] | None = None
    # on unpickling and loading: the flags that param groups saved by older versions lack (with the values those
    # versions meant); the scalar state PyTorch keeps in 0-d tensors, mirrored on the host (step_counts.py)
    _group_flags: tuple[tuple[str, Any], ...] = ()
    _host_state: tuple[str, ...] = ()
    # whether `state['step']` is PyTorch's 0-d step tensor (counted by `_advance`, see step_counts.py); a number
    # loaded into such an optimizer becomes one (SparseAdam and optimizers written by users keep what they keep)
    _step_tensors: bool = False
    # whether the step refuses complex parameters (PyTorch's Adafactor and Muon) instead of updating them
    # through their real views
    _refuses_complex: bool = False
    # PyTorch's refusal of sparse (layout sparse_coo) gradients at the step; None where the update takes them
    # (SGD, Adagrad; SparseAdam takes only them)
    _sparse_refusal: str | None = "{name} does not support sparse gradients"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _with_step_hooks(step)
        if "_update" in cls.__dict__:  # what the inherited step passes, worked out once per class
            keywords = [p.name for p in inspect.signature(cls._update).parameters.values()
                        if p.kind is inspect.Parameter.KEYWORD_ONLY]
            split = {name: (key, i) for key, names in cls._pairs.items() for i, name in enumerate(names)}
            cls._direct = tuple(name for name in keywords if name not in split)
            cls._split = tuple((name,) + split[name] for name in keywords if name in split)
            cls._written = (0,) + tuple(range(2, 2 + len(cls._state_keys)))  # parameters and state, in place

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_step_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_state_dict_post_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_pre_hooks: OrderedDict = OrderedDict()
        self._optimizer_load_state_dict_post_hooks: OrderedDict = OrderedDict()
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of Tensors or dicts, "
                            f"but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        for name in ("step_pre", "step_post", "state_dict_pre", "state_dict_post", "load_state_dict_pre",
                     "load_state_dict_post"):
            self.__dict__.setdefault(f"_optimizer_{name}_hooks", OrderedDict())
        self.defaults.setdefault("differentiable", False)  # (torch adds it on every load and unpickle)
        if self._group_flags:
            for group in self.param_groups:
                for key, value in self._group_flags:
                    group.setdefault(key, value)
        if self._host_state or self._step_tensors:
            as_tensors(self)
        forget(self)

    def __repr__(self) -> str:
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):  # each group after a newline: a blank line between groups
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {key}: {group[key]}\n" for key in sorted(group) if key != "params")
        return text + ")"

    # -- parameter groups ------------------------------------------------------------------
    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters (with its own hyperparameters; missing ones take the defaults)."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, but the ordering "
                            "of tensors in sets will change between runs. Please use a list instead.")
        params = list(params)
        names = [p[0] for p in params if isinstance(p, tuple)]
        params = [p[1] if isinstance(p, tuple) else p for p in params]
        # a global parameter's shard is its autograd leaf, and its gradient already has the parameter's sbp:
        # the update is local to every rank
        params = [p.to_local() if getattr(p, "is_global", False) is True else p for p in params]
        param_group["params"] = params
        if names:
            if len(names) != len(params):
                raise ValueError("all optimizer params should be with/without names. Some param names are missing")
            param_group["param_names"] = names
        for param in params:
            if not isinstance(param, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is " + _typename(param))
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(f"parameter group didn't specify a value of required optimization parameter {name}")
            param_group.setdefault(name, default)
        if len(params) != len({id(p) for p in params}):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in future, this will "
                          "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(id(p) for p in params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: to None (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
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

    def step(self, closure: Callable | None = None):
        """Perform one optimization step; `closure` re-evaluates the loss and returns it."""
        if self._update is None:  # a subclass without a declared update implements step itself
            raise NotImplementedError
        loss = self._evaluate(closure)
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group: dict) -> None:
        """One parameter group's step: its parameters with gradients, their state, the update."""
        params, grads, states = self._with_grads(group, self._init_state)
        self._advance(group, states)
        self._apply(group, params, grads, states)

    def _advance(self, group: dict, states: list) -> None:
        """The scalar state before the update: the step counts (0-d tensors mirrored on the host, so the step never
        waits for the device)."""
        advance(self, states)

    def _apply(self, group: dict, params: list, grads: list, states: list, *extra: list) -> None:
        """Run `_update` over the group as one multi-tensor instruction where `_multi_tensor(group)` allows."""
        lists = [params, grads]
        for key in self._state_keys:
            if key == "step":  # the counts `_advance` wrote, as host numbers (bias corrections are Python floats)
                lists.append(written(self, states))
                continue
            if key in self._host_state:  # 0-d state tensors (NAdam's mu_product...): their host numbers
                lists.append(values(self, states, key))
                continue
            try:
                lists.append([s[key] for s in states])
            except KeyError:  # state that this group's configuration does not keep (AMSGrad's maximum...)
                lists.append([s.get(key) for s in states])
        self._run(group, (*lists, *extra), self._multi_tensor(group))

    def _run(self, group: dict, lists: tuple, multi_tensor: bool) -> None:
        """Run `_update` over `lists` (parameters, gradients, state...), as one multi-tensor instruction where
        `multi_tensor` allows. Complex parameters, their gradients and their complex state are updated through
        their real views, as PyTorch does: the update's math is the real one, applied to the parts."""
        kwargs = self._hyperparameters(group)
        dtypes = set(map(_dtype_of, lists[0]))  # a loop in C; the check below is one test per distinct dtype
        if not any(d.is_complex for d in dtypes):
            foreach(self._update, lists, self._written, kwargs, multi_tensor)
            return
        at = [i for i, p in enumerate(lists[0]) if p.dtype.is_complex]
        views = [_real_views(values, at) for values in lists]
        foreach(self._update, views, self._written, kwargs, multi_tensor)
        complex_at = set(at)
        for values, seen in zip(lists, views):  # state the update created in the copies (SGD's first buffers)
            for i in range(len(seen)) if seen is not values else ():
                if values[i] is None and isinstance(seen[i], Tensor):  # kept complex for a complex parameter
                    values[i] = view_as_complex(seen[i]) if i in complex_at else seen[i]

    def _multi_tensor(self, group: dict) -> bool:
        """Whether the update may run as one host kernel over the group (else on the tensors)."""
        return True

    def _hyperparameters(self, group: dict) -> dict:
        """The keyword arguments of `_update`, read from the group."""
        kwargs = {}
        for name in self._direct:  # a plain loop: cheaper than a comprehension, and this runs every step
            kwargs[name] = group[name]
        for name, key, i in self._split:
            kwargs[name] = group[key][i]
        for name, value in kwargs.items():
            # a 1-element tensor (lr=torch.tensor(0.01), betas) is read now, on this thread: the multi-tensor
            # update runs as one VM kernel, where reading a tensor would wait on the VM from its own worker
            if value.__class__ is not float and isinstance(value, Tensor):
                kwargs[name] = value.item()
        return kwargs

    @staticmethod
    def _evaluate(closure: Callable | None):
        """The closure's loss, computed with grad mode on (None without a closure)."""
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _with_grads(self, group: dict, init_state: Callable[[Tensor, dict], dict] | None) -> tuple:
        """The group's parameters that have a gradient, their gradients and their state dicts;
        a parameter's state is created by `init_state(param, group)` the first time it is seen
        (with `init_state` None, state is not touched and the list of states is empty)."""
        params = [p for p in group["params"] if p.grad is not None]
        grads = [p.grad for p in params]
        if self._refuses_complex and any(p.dtype.is_complex for p in params):  # before any state, as PyTorch
            raise RuntimeError(f"{type(self).__name__} does not support complex parameters")
        if self._sparse_refusal is not None and any(g.__class__ is SparseCooTensor for g in grads):
            raise RuntimeError(self._sparse_refusal.format(name=type(self).__name__))
        if init_state is None:
            return params, grads, []
        states = [self.state[p] for p in params]
        for p, state in zip(params, states):
            if not state:
                state.update(init_state(p, group))
        return params, grads, states

    # -- state dicts -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """{'state': {param index: state}, 'param_groups': [group with 'params' as indices]}.

        The state values are the optimizer's own tensors, not copies (as in PyTorch)."""
        for hook in self._optimizer_state_dict_pre_hooks.values():
            hook(self)
        index_of: dict[int, int] = {}
        packed_groups = []
        start = 0
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                index_of.setdefault(id(p), i)
            packed["params"] = [index_of[id(p)] for p in group["params"]]
            start += len(group["params"])
            packed_groups.append(packed)
        packed_state = {(index_of[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()}
        state_dict = {"state": packed_state, "param_groups": packed_groups}
        for hook in self._optimizer_state_dict_post_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        return state_dict

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a state dict made by `state_dict()`; tensors are cast to their parameter's dtype
        and device (the 'step' tensors are kept as they are, as torch's)."""
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():
            result = hook(self, state_dict)
            if result is not None:
                state_dict = result
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match the size of "
                             "optimizer's group")
        param_of = dict(zip(chain.from_iterable(g["params"] for g in saved_groups),
                            chain.from_iterable(g["params"] for g in groups)))
        state: defaultdict = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in param_of:
                param = param_of[key]
                state[param] = _cast_state(param, value)
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
            if "param_names" in group and "param_names" not in saved:
                saved["param_names"] = group["param_names"]
        self.__setstate__({"state": state, "param_groups": saved_groups})
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)

    # -- hooks -------------------------------------------------------------------------------
    def register_step_pre_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(optimizer, args, kwargs)` before each step; it may return new (args, kwargs)."""
        return _add_hook(self._optimizer_step_pre_hooks, hook)

    def register_step_post_hook(self, hook: Callable) -> RemovableHandle:
        """Call `hook(optimizer, args, kwargs)` after each step."""
        return _add_hook(self._optimizer_step_post_hooks, hook)

    def register_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call `hook(optimizer)` before `state_dict()` builds the dict."""
        return _add_hook(self._optimizer_state_dict_pre_hooks, hook, prepend)

    def register_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call `hook(optimizer, state_dict)` after; a returned dict replaces it."""
        return _add_hook(self._optimizer_state_dict_post_hooks, hook, prepend)

    def register_load_state_dict_pre_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call `hook(optimizer, state_dict)` before loading; a returned dict is loaded instead."""
        return _add_hook(self._optimizer_load_state_dict_pre_hooks, hook, prepend)

    def register_load_state_dict_post_hook(self, hook: Callable, prepend: bool = False) -> RemovableHandle:
        """Call `hook(optimizer)` after loading."""
        return _add_hook(self._optimizer_load_state_dict_post_hooks, hook, prepend)


Optimizer.step = _with_step_hooks(Optimizer.step)  # the inherited step, as every subclass's own


_dtype_of = operator.attrgetter("dtype")


def _real_views(values: list, at: list[int]) -> list:
    """A copy of `values` whose complex tensors at the positions `at` are replaced by their real views."""
    if len(values) <= at[-1]:  # not a per-parameter list (SGD's buffers without momentum: none)
        return values
    values = list(values)
    for i in at:
        v = values[i]
        if isinstance(v, Tensor) and v.dtype.is_complex:
            values[i] = view_as_real(v)
    return values


def _cast_state(param: Tensor, value, key=None):
    """A copy of a saved state value whose tensors follow `param`'s dtype (floats) and device."""
    if isinstance(value, Tensor):
        if key == "step":  # the state dict's own step tensor, as torch's (counting on in it shares the count)
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    if isinstance(value, dict):
        return {k: _cast_state(param, v, k) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_state(param, v) for v in value)
    return value


def descent_grad(param: Tensor, grad: Tensor, maximize: bool, weight_decay: float = 0) -> Tensor:
    """The gradient an update descends: negated to maximize, then with L2 weight decay (PyTorch's order)."""
    if maximize:
        grad = -grad
    if weight_decay != 0:
        grad = grad.add(param, alpha=weight_decay)
    return grad


def check(ok: bool, what: str, value) -> None:
    """PyTorch's ValueError for an invalid hyperparameter: 'Invalid {what}: {value}'."""
    if not ok:
        raise ValueError(f"Invalid {what}: {value}")
