"""PassBase and PassResult (torch.fx.passes.infra.pass_base): a pass is a callable from a GraphModule to a
PassResult(graph_module, modified), with optional checks before and after."""
from __future__ import annotations

import abc
from collections import namedtuple
from typing import Any

__all__ = ["PassResult", "PassBase"]


class PassResult(namedtuple("PassResult", ["graph_module", "modified"])):
    """What a pass returns: the (possibly new) module and whether the pass changed it."""
    __slots__ = ()

    def __new__(cls, graph_module: Any, modified: bool) -> "PassResult":
        return super().__new__(cls, graph_module, modified)


class PassBase(abc.ABC):
    """A pass: `call(gm)` does the work; `requires(gm)` and `ensures(gm)` check before and after."""

    def __call__(self, graph_module: Any) -> PassResult | None:
        """Check the preconditions, run the pass, check the postconditions."""
        self.requires(graph_module)
        result = self.call(graph_module)
        self.ensures(graph_module)
        return result

    @abc.abstractmethod
    def call(self, graph_module: Any) -> PassResult | None:
        """The pass itself."""

    def requires(self, graph_module: Any) -> None:  # noqa: B027 - optional hook
        """Preconditions (nothing by default)."""

    def ensures(self, graph_module: Any) -> None:  # noqa: B027 - optional hook
        """Postconditions (nothing by default)."""
