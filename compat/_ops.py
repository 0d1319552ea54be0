"""`torch.ops`: the namespaces of operators defined with torch.library (`torch.ops.mylib.crop`), each an
OpOverloadPacket whose `.default` overload runs the op. tidal has no ATen dispatcher: `torch.ops.aten` holds the
ATen names exported graphs call (tidal.fx._aten), each bound to the tidal function computing it."""
from __future__ import annotations

from typing import Any

from ._profiler_ops import namespace

__all__ = ["ops", "OpOverload", "OpOverloadPacket"]

_REGISTRY: dict = {}  # "ns::name" -> the CustomOpDef behind it


class OpOverload:
    """One overload of an operator (`torch.ops.mylib.crop.default`)."""

    def __init__(self, op: Any) -> None:
        self._op = op
        self._overloadname = "default"

    @property
    def _schema(self) -> str:
        return self._op._schema

    def name(self) -> str:
        """The qualified name: mylib::crop."""
        return self._op._qualname

    @property
    def op(self) -> Any:
        """The callable that runs this overload."""
        return self

    def __call__(self, *args, **kwargs) -> Any:
        return self._op._dispatch(args, kwargs)

    def __str__(self) -> str:
        return f"{self._op._namespace}.{self._op._name}.default"

    def __repr__(self) -> str:
        return f"<OpOverload(op='{self._op._namespace}.{self._op._name}', overload='default')>"


class OpOverloadPacket:
    """An operator by name (`torch.ops.mylib.crop`), holding its overloads (only `default` here)."""

    def __init__(self, op: Any) -> None:
        self._op = op
        self.default = op._opoverload
        self._qualified_op_name = op._qualname

    @property
    def _schema(self) -> str:
        return self._op._schema

    def overloads(self) -> list:
        """The overload names."""
        return ["default"]

    def __call__(self, *args, **kwargs) -> Any:
        return self._op._dispatch(args, kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise AttributeError(f"The underlying op of '{self}' has no overload name '{name}'")

    def __str__(self) -> str:
        return f"{self._op._namespace}.{self._op._name}"

    __repr__ = __str__


class _OpNamespace:
    """`torch.ops.<namespace>`: the operators defined in it."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, op_name: str) -> OpOverloadPacket:
        if op_name.startswith("__"):
            raise AttributeError(op_name)
        op = _REGISTRY.get(f"{self.name}::{op_name}")
        if op is None:
            raise AttributeError(f"'_OpNamespace' '{self.name}' object has no attribute '{op_name}'")
        return OpOverloadPacket(op)

    def __iter__(self):
        prefix = f"{self.name}::"
        return iter([q[len(prefix):] for q in _REGISTRY if q.startswith(prefix)])


class _Ops:
    """`torch.ops`: namespaces by attribute."""

    __name__ = "torch.ops"

    def __getattr__(self, name: str) -> _OpNamespace:
        if name.startswith("__"):
            raise AttributeError(name)
        if name == "aten":  # the ATen ops exported graphs call (tidal.fx._aten: names bound to tidal's functions)
            from ..fx._aten import aten  # fx loads on first use (keeps import light)
            return aten
        if name == "profiler":  # torch's record_function ops (torch.fx graphs call them)
            return namespace
        return _OpNamespace(name)

    def load_library(self, path: str) -> None:
        """Refuses: tidal cannot load compiled torch operator libraries."""
        raise RuntimeError(f"torch.ops.load_library({path!r}): tidal cannot load compiled PyTorch operator "
                           "libraries; define the operator in Python with torch.library.custom_op")


ops = _Ops()
