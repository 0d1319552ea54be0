"""Pruning: zero parts of a parameter through a mask kept beside it (torch.nn.utils.prune).

Pruning `module.weight` moves the parameter to `weight_orig`, adds the buffer `weight_mask`, and
recomputes `module.weight = weight_mask * weight_orig` before each forward (a pre-hook), so
state dicts have PyTorch's keys. Pruning the same tensor again combines the masks through a
PruningContainer: the new method only sees the entries (or channels) still unpruned.
"""
from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ... import ops
from ...tensor import Tensor
from ..module import Module
from .convert_parameters import parameters_to_vector

__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured",
           "l1_unstructured", "random_structured", "ln_structured", "global_unstructured", "custom_from_mask",
           "remove", "is_pruned"]


class BasePruningMethod(ABC):
    """A way to compute a pruning mask; also the forward pre-hook that applies it."""

    _tensor_name: str | None = None
    PRUNING_TYPE: str = "unstructured"

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The new mask for `t`, given the mask already in force."""

    def apply_mask(self, module: Module) -> Tensor:
        """The pruned tensor: mask * original."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned")
        mask = getattr(module, self._tensor_name + "_mask")
        orig = getattr(module, self._tensor_name + "_orig")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module: Module, name: str, *args, importance_scores: Tensor | None = None,
              **kwargs) -> "BasePruningMethod":
        """Prune `module.<name>` with a new `cls(*args, **kwargs)`, combined with any earlier pruning."""
        method = _compose(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            if importance_scores.shape != orig.shape:
                raise AssertionError(f"importance_scores should have the same shape as parameter {name} of "
                                     f"{module}, got {importance_scores.shape} vs {orig.shape}")
        else:
            importance_scores = orig
        first = not isinstance(method, PruningContainer)
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = ops.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:  # leave the module as it was
                orig = getattr(module, name + "_orig")
                module.register_parameter(name, orig)
                del module._parameters[name + "_orig"]
            raise
        return method

    def prune(self, t: Tensor, default_mask: Tensor | None = None,
              importance_scores: Tensor | None = None) -> Tensor:
        """`t` with this method's mask applied (no module involved)."""
        if importance_scores is not None and importance_scores.shape != t.shape:
            raise AssertionError("importance_scores should have the same shape as tensor t, got "
                                 f"{importance_scores.shape} vs {t.shape}")
        scores = t if importance_scores is None else importance_scores
        default_mask = default_mask if default_mask is not None else ops.ones_like(t)
        return t * self.compute_mask(scores, default_mask=default_mask)

    def remove(self, module: Module) -> None:
        """Make the pruning permanent: `<name>` becomes a plain parameter holding mask * original."""
        if self._tensor_name is None:
            raise AssertionError(f"Module {module} has to be pruned before pruning can be removed")
        weight = self.apply_mask(module)
        if hasattr(module, self._tensor_name):
            delattr(module, self._tensor_name)
        orig = module._parameters[self._tensor_name + "_orig"]
        orig.data = weight.detach()
        del module._parameters[self._tensor_name + "_orig"]
        del module._buffers[self._tensor_name + "_mask"]
        setattr(module, self._tensor_name, orig)


def _compose(cls, module: Module, name: str, *args, **kwargs) -> BasePruningMethod:
    """The new method, or the container joining it to the pruning already on `module.<name>`."""
    old, keys = None, []
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            keys.append(key)
    if len(keys) > 1:
        raise AssertionError(f"Avoid adding multiple pruning hooks to the same tensor {name} of module {module}. "
                             "Use a PruningContainer.")
    for key in keys:
        del module._forward_pre_hooks[key]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if isinstance(old, PruningContainer):
        old.add_pruning_method(method)
        return old
    if old is not None:
        container = PruningContainer(old)
        container.add_pruning_method(method)
        return container
    return method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods applied one after another to the same tensor."""

    def __init__(self, *args) -> None:
        self._pruning_methods: tuple = ()
        if len(args) == 1 and isinstance(args[0], BasePruningMethod):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method: BasePruningMethod) -> None:
        """Append `method` (it must act on the same tensor name)."""
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found '{method._tensor_name}'")
        self._pruning_methods += (method,)

    def __len__(self) -> int:
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        """The last method's mask, computed only over what the earlier ones left unpruned."""
        method = self._pruning_methods[-1]
        new_mask = default_mask.to(dtype=t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            slc = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError('Pruning methods of PRUNING_TYPE "structured" need to have the attribute '
                                     "`dim` defined.")
            dim = method.dim + t.dim() if method.dim < 0 else method.dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor with dimensions {t.dim()}")
            keep = default_mask.sum(dim=[d for d in range(t.dim()) if d != dim]) != 0
            slc = tuple(keep if d == dim else slice(None) for d in range(t.dim()))
        elif method.PRUNING_TYPE == "global":
            slc = (slice(None),) * t.dim()
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {method.PRUNING_TYPE}")
        partial = method.compute_mask(t[slc], default_mask=default_mask[slc])
        new_mask[slc] = partial.to(dtype=new_mask.dtype)
        return new_mask


def _validate_amount_init(amount) -> None:
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount, size: int) -> int:
    """How many of `size` entries `amount` (a count, or a fraction) prunes; errors as torch."""
    n = amount if isinstance(amount, numbers.Integral) else round(amount * size)
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
    return n


def _check_structured(t: Tensor, dim: int) -> None:
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                         f"shape {t.shape} with {t.dim()} dims")
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")


def _channel_mask(t: Tensor, dim: int, keep: Tensor, default_mask: Tensor) -> Tensor:
    """Ones on the channels `keep` (indices or a bool vector) along `dim`, times the mask in force."""
    mask = ops.zeros_like(t)
    mask[tuple(keep if d == dim % t.dim() else slice(None) for d in range(t.dim()))] = 1
    return mask * default_mask.to(dtype=mask.dtype)


class Identity(BasePruningMethod):
    """Prunes nothing (adds the `_orig`/`_mask` reparametrization only)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        return default_mask

    @classmethod
    def apply(cls, module: Module, name: str) -> BasePruningMethod:  # noqa: D102
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` entries chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if n:
            mask.view(-1)[ops.topk(ops.rand_like(t).view(-1), k=n).indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount) -> BasePruningMethod:  # noqa: D102
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes the `amount` entries of smallest magnitude."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount) -> None:
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        n = _count(self.amount, t.numel())
        mask = default_mask.clone()
        if n:
            mask.view(-1)[ops.topk(t.abs().reshape(-1), k=n, largest=False).indices] = 0
        return mask

    @classmethod
    def apply(cls, module: Module, name: str, amount, importance_scores=None) -> BasePruningMethod:  # noqa: D102
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class RandomStructured(BasePruningMethod):
    """Prunes `amount` whole channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim: int = -1) -> None:
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t, self.dim)
        size = t.shape[self.dim]
        n = _count(self.amount, size)
        if not n:
            return default_mask
        prob = ops.rand(size, device=t.device)
        return _channel_mask(t, self.dim, prob > ops.kthvalue(prob, n).values, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount, dim: int = -1) -> BasePruningMethod:  # noqa: D102
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes the `amount` channels along `dim` of smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim: int = -1) -> None:
        _validate_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        _check_structured(t, self.dim)
        size = t.shape[self.dim]
        prune = _count(self.amount, size)
        if not prune:
            return default_mask
        dims = [d for d in range(t.dim()) if d != self.dim % t.dim()]
        norm = t.norm(self.n, dims)
        return _channel_mask(t, self.dim, ops.topk(norm, k=size - prune, largest=True).indices, default_mask)

    @classmethod
    def apply(cls, module: Module, name: str, amount, n, dim, importance_scores=None) -> BasePruningMethod:  # noqa: D102
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where a given mask is zero."""

    PRUNING_TYPE = "global"

    def __init__(self, mask: Tensor) -> None:
        self.mask = mask

    def compute_mask(self, t: Tensor, default_mask: Tensor) -> Tensor:
        if default_mask.shape != self.mask.shape:
            raise AssertionError(f"default_mask shape {default_mask.shape} must match self.mask shape "
                                 f"{self.mask.shape}")
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module: Module, name: str, mask: Tensor) -> BasePruningMethod:  # noqa: D102
        return super().apply(module, name, mask=mask)


def identity(module: Module, name: str) -> Module:
    """Reparametrize `module.<name>` as original * an all-ones mask."""
    Identity.apply(module, name)
    return module


def random_unstructured(module: Module, name: str, amount) -> Module:
    """Prune `amount` random entries of `module.<name>`."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module: Module, name: str, amount, importance_scores: Tensor | None = None) -> Module:
    """Prune the `amount` smallest-magnitude entries of `module.<name>` (or of `importance_scores`)."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module: Module, name: str, amount, dim: int) -> Module:
    """Prune `amount` random channels of `module.<name>` along `dim`."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module: Module, name: str, amount, n, dim: int, importance_scores: Tensor | None = None) -> Module:
    """Prune the `amount` channels of `module.<name>` along `dim` with the smallest L`n` norm."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def global_unstructured(parameters, pruning_method, importance_scores: dict | None = None, **kwargs) -> None:
    """Prune `(module, name)` pairs together, ranking all their entries as one vector."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n)).detach() for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask") if hasattr(m, n + "_mask")
                                         else ops.ones_like(getattr(m, n)) for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f"{pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final = container.compute_mask(scores, default_mask)
    start = 0
    for module, name in parameters:
        param = getattr(module, name)
        custom_from_mask(module, name, mask=final[start:start + param.numel()].view_as(param))
        start += param.numel()


def custom_from_mask(module: Module, name: str, mask: Tensor) -> Module:
    """Prune `module.<name>` where `mask` is zero."""
    CustomFromMask.apply(module, name, mask)
    return module


def remove(module: Module, name: str) -> Module:
    """Make the pruning of `module.<name>` permanent and drop its mask and hook."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module: Module) -> bool:
    """Whether `module` or any submodule carries a pruning hook."""
    return any(isinstance(hook, BasePruningMethod)
               for _, sub in module.named_modules() for hook in sub._forward_pre_hooks.values())
