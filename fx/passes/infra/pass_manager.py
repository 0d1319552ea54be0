"""PassManager (torch.fx.passes.infra.pass_manager): runs a list of passes in an order their constraints allow,
`steps` times or until none changes the module, with optional checks after each pass."""
from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

from ....nn.module import Module
from ...graph_module import GraphModule
from .pass_base import PassResult

__all__ = ["pass_result_wrapper", "this_before_that_pass_constraint", "PassManager"]


def _name(fn: Callable) -> str:
    return fn.__name__ if inspect.isfunction(fn) else type(fn).__name__


def pass_result_wrapper(fn: Callable) -> Callable | None:
    """`fn` made to return a PassResult: None or a module from it counts as modified."""
    if fn is None:
        return None

    @functools.wraps(fn)
    def wrapped(gm: Any) -> PassResult | None:
        result = fn(gm)
        if result is None:
            return PassResult(gm, True)
        if isinstance(result, PassResult):
            return result
        if isinstance(result, Module):
            return PassResult(result, True)
        return None
    if not inspect.isfunction(fn):
        wrapped.__name__ = type(fn).__name__
    return wrapped


def this_before_that_pass_constraint(this: Callable, that: Callable) -> Callable[[Callable, Callable], bool]:
    """A constraint: `this` must run before `that` (constraint(a, b) is False only for a=that, b=this)."""
    def depends_on(a: Callable, b: Callable) -> bool:
        return a != that or b != this
    return depends_on


def _check_schedule(constraint: Callable, passes: list) -> None:
    for i, a in enumerate(passes):
        for j, b in enumerate(passes[i + 1:]):
            if not constraint(a, b):
                raise RuntimeError(f"pass schedule constraint violated. Expected {a} before {b} but found {a} at "
                                   f"index {i} and {b} at index {j} in pass list.")


def _sort_passes(passes: list, constraints: list) -> list:
    """The passes in an order where, for every constraint c and a placed before b, c(a, b) holds (FIFO among the
    ready ones, so an already valid order is kept); RuntimeError on a cycle."""
    if not constraints:
        return passes
    after: dict = {p: [] for p in passes}  # b -> the passes that must wait for b
    waiting = dict.fromkeys(passes, 0)
    for a in passes:
        for b in passes:
            if a != b and any(not c(a, b) for c in constraints):
                for c in constraints:
                    if not c(a, b):
                        after[b].append(a)
                        waiting[a] += 1
    ready = [p for p in passes if waiting[p] == 0]
    order: list = []
    while ready:
        p = ready.pop(0)
        order.append(p)
        for q in after[p]:
            waiting[q] -= 1
            if waiting[q] == 0:
                ready.append(q)
    cycle = [p for p in passes if waiting[p] != 0]
    if cycle:
        raise RuntimeError(f"Circular dependency detected within the following passes: {cycle}")
    return order


class PassManager:
    """Collects passes and constraints on their order, and runs them on a module."""
    _validated: bool = False
    steps: int = 1

    def __init__(self, passes: list | None = None, constraints: list | None = None, steps: int | None = None,
                 run_checks_after_each_pass: bool = False, suppress_check_failures: bool = False) -> None:
        self.passes = passes or []
        self.constraints = constraints or []
        if steps:
            self.steps = steps
        self.run_checks_after_each_pass = run_checks_after_each_pass
        self.suppress_check_failures = suppress_check_failures

    def add_pass(self, _pass: Callable) -> None:
        """Append a pass."""
        self.passes.append(_pass)
        self._validated = False

    def add_constraint(self, constraint: Callable) -> None:
        """Add an ordering constraint (constraint(a, b): may a run before b)."""
        self.constraints.append(constraint)
        self._validated = False

    def validate_constraints(self) -> None:
        """RuntimeError unless the passes' current order meets every constraint."""
        if self._validated:
            return
        for constraint in self.constraints:
            _check_schedule(constraint, self.passes)
        self._validated = True

    def solve_constraints(self) -> None:
        """Reorder the passes to meet the constraints."""
        self.passes = _sort_passes(self.passes, self.constraints)
        self._validated = True

    def add_checks(self, check: Callable) -> None:
        """Use `check(module)` before the passes (and after each one with run_checks_after_each_pass)."""
        if len(inspect.signature(check).parameters) != 1:
            raise TypeError("PassManager check function should only take in one variable, a module")
        self.check = check

    def check(self, module: Any) -> None:
        """The module's invariants (nothing by default)."""

    def __call__(self, module: Any) -> PassResult:
        """Run the passes on `module` up to `steps` times (stopping once a round changes nothing)."""
        if not self._validated:
            self.solve_constraints()
        self.check(module)
        overall = False
        for _ in range(self.steps):
            modified = False
            for i, fn in enumerate(self.passes):
                try:
                    result = fn(module)
                    if not isinstance(result, PassResult) and not hasattr(result, "graph_module"):
                        raise TypeError(f"The result of the pass {_name(fn)} should be type PassResult."
                                        "Please wrap it with pass_result_wrapper()")
                    module = result.graph_module
                    modified = modified or result.modified
                    if isinstance(module, GraphModule):
                        module.recompile()
                    if self.run_checks_after_each_pass:
                        self.check(module)
                except Exception as e:
                    before = [_name(p) for p in self.passes[:i]]
                    raise Exception(f"An error occurred when running the '{_name(fn)}' pass after the following "
                                    f"passes: {before}") from e
            overall = overall or modified
            if not modified:
                break
        return PassResult(module, overall)
