"""The older pass manager (torch.fx.passes.pass_manager): a list of passes applied in order, each taking and
returning the module, checked against ordering constraints; decorators to loop a pass, log it, or make an
in-place pass return its input. (passes.infra.pass_manager is the newer one, with PassResult.)"""
from __future__ import annotations

import functools
import inspect
import logging
from typing import Any, Callable

__all__ = ["PassManager", "inplace_wrapper", "log_hook", "loop_pass", "this_before_that_pass_constraint",
           "these_before_those_pass_constraint"]

logger = logging.getLogger(__name__)


def inplace_wrapper(fn: Callable) -> Callable:
    """A pass that changes its module in place, made to return the module."""
    @functools.wraps(fn)
    def wrapped(gm, *args, **kwargs):
        fn(gm, *args, **kwargs)
        return gm
    return wrapped


def log_hook(fn: Callable, level: int = logging.INFO) -> Callable:
    """`fn`, logging each run and what it returned."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        value = fn(*args, **kwargs)
        logger.log(level, "Ran pass %s\t Return value: %s", fn, value)
        return value
    return wrapped


def loop_pass(base_pass: Callable, n_iter: int | None = None, predicate: Callable | None = None) -> Callable:
    """`base_pass` run `n_iter` times, or while `predicate(module)` holds (exactly one of the two)."""
    if not ((n_iter is not None) ^ (predicate is not None)):
        raise AssertionError("Exactly one of `n_iter`or `predicate` must be specified.")

    @functools.wraps(base_pass)
    def new_pass(source):
        output = source
        if n_iter is not None and n_iter > 0:
            for _ in range(n_iter):
                output = base_pass(output)
        elif predicate is not None:
            while predicate(output):
                output = base_pass(output)
        else:
            raise RuntimeError(f"loop_pass must be given positive int n_iter (given {n_iter}) xor predicate (given "
                               f"{predicate})")
        return output
    return new_pass


def this_before_that_pass_constraint(this: Callable, that: Callable) -> Callable:
    """A constraint: `this` must come before `that`."""
    def depends_on(a: Callable, b: Callable) -> bool:
        return a != that or b != this
    return depends_on


def these_before_those_pass_constraint(these: Callable, those: Callable) -> Callable:
    """As this_before_that_pass_constraint, comparing the passes under their decorators (inspect.unwrap)."""
    def depends_on(a: Callable, b: Callable) -> bool:
        return inspect.unwrap(a) != those or inspect.unwrap(b) != these
    return depends_on


class PassManager:
    """Passes applied in order to a module (`pm(module)`), after checking the constraints on their order."""
    _validated: bool = False

    def __init__(self, passes: list | None = None, constraints: list | None = None) -> None:
        self.passes = passes or []
        self.constraints = constraints or []

    @classmethod
    def build_from_passlist(cls, passes: list) -> "PassManager":
        """A PassManager of `passes`."""
        return PassManager(passes)

    def add_pass(self, _pass: Callable) -> None:
        """Append a pass."""
        self.passes.append(_pass)
        self._validated = False

    def add_constraint(self, constraint: Callable) -> None:
        """Add an ordering constraint."""
        self.constraints.append(constraint)
        self._validated = False

    def remove_pass(self, _passes: list) -> None:
        """Drop the passes with these names."""
        if _passes is None:
            return
        self.passes = [p for p in self.passes if p.__name__ not in _passes]
        self._validated = False

    def replace_pass(self, _target: Callable, _replacement: Callable) -> None:
        """Put `_replacement` where the pass named like `_target` is."""
        self.passes = [_replacement if p.__name__ == _target.__name__ else p for p in self.passes]
        self._validated = False

    def validate(self) -> None:
        """RuntimeError unless the passes' order meets every constraint."""
        if self._validated:
            return
        for constraint in self.constraints:
            for i, a in enumerate(self.passes):
                for j, b in enumerate(self.passes[i + 1:]):
                    if not constraint(a, b):
                        raise RuntimeError(f"pass schedule constraint violated. Expected {a} before {b} but found "
                                           f"{a} at index {i} and {b} at index{j} in pass list.")
        self._validated = True

    def __call__(self, source: Any) -> Any:
        self.validate()
        out = source
        for _pass in self.passes:
            out = _pass(out)
        return out
