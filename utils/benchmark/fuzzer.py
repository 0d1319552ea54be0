"""Fuzzed benchmark inputs (torch.utils.benchmark.Fuzzer): random parameters, then tensors shaped by them.

    fuzzer = Fuzzer(parameters=[FuzzedParameter("k0", 1, 100, "loguniform")],
                    tensors=[FuzzedTensor("x", size=("k0", 8), probability_contiguous=0.6)], seed=0)
    for tensors, tensor_properties, params in fuzzer.take(10):
        Timer("x.sum()", globals=tensors).blocked_autorange()

Parameters are drawn from a NumPy RandomState seeded by `seed` until the constraints (each tensor's element
and allocation bounds, and the user's) hold; a tensor is contiguous with `probability_contiguous`, else its
dimensions are laid out in a random order and strided by `steps`. The draws are tidal's own (the same seed
does not give torch's values).
"""
from __future__ import annotations

import math
from typing import Callable, Iterator

import numpy as np

from ...ops import from_numpy
from ...tensor.dtype import float32

__all__ = ["Fuzzer", "FuzzedParameter", "FuzzedTensor", "ParameterAlias"]

_MAX_ATTEMPTS = 1000


class FuzzedParameter:
    """A named random value: integers or floats between minval and maxval (uniform or loguniform), or one of
    the keys of a {value: probability} distribution."""

    def __init__(self, name: str, minval=None, maxval=None, distribution=None, strict: bool = False):
        if isinstance(distribution, dict):
            if any(p < 0 for p in distribution.values()):
                raise AssertionError("Probabilities cannot be negative")
            if abs(sum(distribution.values()) - 1) > 1e-5:  # (torch 2.13 inverts this test: it refuses every
                raise AssertionError("Distribution is not normalized")  # normalized distribution)
            if minval is not None:
                raise AssertionError("When passing a custom distribution, 'minval' must be None")
            if maxval is not None:
                raise AssertionError("When passing a custom distribution, 'maxval' must be None")
        elif distribution not in ("uniform", "loguniform"):
            raise AssertionError(f"Unknown distribution: {distribution}")
        if distribution == "loguniform" and (minval is None or minval <= 0):
            raise ValueError(f"loguniform needs minval > 0, got {minval}")
        self._name, self._minval, self._maxval = name, minval, maxval
        self._distribution, self.strict = distribution, strict

    @property
    def name(self) -> str:
        return self._name

    def sample(self, state: np.random.RandomState):
        """One draw."""
        if isinstance(self._distribution, dict):
            keys = list(self._distribution)
            return keys[state.choice(len(keys), p=np.array(list(self._distribution.values())))]
        lo, hi = self._minval, self._maxval
        integer = isinstance(lo, int) and isinstance(hi, int)
        if self._distribution == "loguniform":
            value = math.exp(state.uniform(math.log(lo), math.log(hi)))
            return min(max(int(value), lo), hi) if integer else value
        return int(state.randint(lo, hi + 1)) if integer else float(state.uniform(lo, hi))


class ParameterAlias:
    """A parameter that takes another's value: `FuzzedTensor(size=(ParameterAlias("k0"), ...))` reads k0."""

    def __init__(self, alias_to: str):
        self.alias_to = alias_to

    def __repr__(self) -> str:
        return f"ParameterAlias[alias_to: {self.alias_to}]"


def _resolve(value, params: dict):
    if isinstance(value, ParameterAlias):
        return params[value.alias_to]
    return params[value] if isinstance(value, str) else value


class FuzzedTensor:
    """A tensor whose sizes (and strides, dimensions count) are named parameters or numbers."""

    def __init__(self, name: str, size: tuple, steps: tuple | None = None, probability_contiguous: float = 0.5,
                 min_elements: int | None = None, max_elements: int | None = None,
                 max_allocation_bytes: int | None = None, dim_parameter: str | None = None,
                 roll_parameter: str | None = None, dtype=None, cuda: bool = False,
                 tensor_constructor: Callable | None = None):
        self._name, self._size, self._steps = name, tuple(size), tuple(steps) if steps is not None else None
        self._probability_contiguous = probability_contiguous
        self._min_elements, self._max_elements = min_elements, max_elements
        self._max_allocation_bytes, self._dim_parameter = max_allocation_bytes, dim_parameter
        self._dtype = dtype if dtype is not None else float32
        self._cuda, self._tensor_constructor = cuda, tensor_constructor

    @property
    def name(self) -> str:
        return self._name

    def _shape(self, params: dict) -> tuple:
        size = tuple(_resolve(s, params) for s in self._size)
        steps = tuple(_resolve(s, params) for s in self._steps) if self._steps else (1,) * len(size)
        if self._dim_parameter is not None:
            n = params[self._dim_parameter]
            size, steps = size[:n], steps[:n]
        return size, steps

    def satisfies_constraints(self, params: dict) -> bool:
        """Whether the sizes drawn give a tensor within the element and allocation bounds."""
        size, steps = self._shape(params)
        numel = math.prod(size)
        allocated = math.prod(s * t for s, t in zip(size, steps)) * self._dtype.itemsize
        return ((self._min_elements is None or numel >= self._min_elements) and
                (self._max_elements is None or numel <= self._max_elements) and
                (self._max_allocation_bytes is None or allocated <= self._max_allocation_bytes))

    def _make_tensor(self, params: dict, state: np.random.RandomState) -> tuple:
        size, steps = self._shape(params)
        contiguous = state.rand() < self._probability_contiguous
        order = list(range(len(size))) if contiguous else [int(i) for i in state.permutation(len(size))]
        steps = (1,) * len(size) if contiguous else steps
        allocated = [size[d] * steps[d] for d in order]  # laid out in `order`, then viewed back and strided
        if self._tensor_constructor is not None:
            base = self._tensor_constructor(size=allocated, dtype=self._dtype, **params)
        elif self._dtype.is_floating_point:
            base = from_numpy(state.rand(*allocated).astype(self._dtype.np))
        else:
            base = from_numpy(state.randint(1, 127, allocated).astype(self._dtype.np))
        x = base.permute(*np.argsort(order).tolist())
        x = x[tuple(slice(None, None, s) for s in steps)] if x.dim() else x
        if self._cuda:
            x = x.cuda()
        properties = {"numel": x.numel(), "order": order, "steps": list(steps), "is_contiguous": x.is_contiguous(),
                      "dtype": str(self._dtype)}
        return x, properties


class Fuzzer:
    """Draws parameters (resampling until every constraint holds) and makes the tensors they describe."""

    def __init__(self, parameters, tensors, constraints: list | None = None, seed: int | None = None):
        self._seed = int(np.random.randint(0, 2 ** 31 - 1)) if seed is None else seed
        self._parameters = list(_flatten(parameters))
        self._tensors = list(_flatten(tensors))
        self._constraints = list(constraints or ())
        names = [p.name for p in self._parameters]
        if len(set(names)) != len(names):
            raise ValueError("Duplicate names in parameters")
        self._rejections = self._total = 0

    def take(self, n: int) -> Iterator[tuple]:
        """n draws of (tensors by name, each tensor's properties, the parameters)."""
        state = np.random.RandomState(self._seed)
        for _ in range(n):
            params = self._generate(state)
            made = {t.name: t._make_tensor(params, state) for t in self._tensors}
            yield {k: v[0] for k, v in made.items()}, {k: v[1] for k, v in made.items()}, params

    def _generate(self, state: np.random.RandomState) -> dict:
        strict = {p.name: p.sample(state) for p in self._parameters if p.strict}
        for _ in range(_MAX_ATTEMPTS):
            params = dict(strict)
            params.update({p.name: p.sample(state) for p in self._parameters if not p.strict})
            for k, v in params.items():  # a value drawn as an alias takes the other parameter's value
                while isinstance(v, ParameterAlias):
                    v = params[k] = params[v.alias_to]
            self._total += 1
            if all(t.satisfies_constraints(params) for t in self._tensors) and \
                    all(c(params) for c in self._constraints):
                return params
            self._rejections += 1
        raise ValueError("Failed to generate a set of valid parameters.")

    @property
    def rejection_rate(self) -> float:
        """The share of parameter draws rejected by the constraints."""
        return self._rejections / self._total if self._total else 0.0


def _flatten(items):
    for item in items:
        if isinstance(item, (list, tuple)):
            yield from _flatten(item)
        else:
            yield item
