"""The legacy typed constructors: `FloatTensor([1, 2])`, `LongTensor(3, 4)`, `isinstance(t, FloatTensor)`."""
from __future__ import annotations

from ..ops.factories.creation import legacy_new
from ..tensor import Tensor
from ..tensor import dtype as dt

_TYPES = {name: d for d, name in dt.LEGACY_TYPE_NAMES.items() if d not in dt.LIMITED}  # (no torch.UInt32Tensor)
__all__ = list(_TYPES)


class tensortype(type):
    """Metaclass of the legacy types: calling one builds a tensor of its dtype; isinstance checks the dtype."""

    dtype: dt.dtype

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None) -> Tensor:
        return legacy_new(cls.dtype, *args, device=device)

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


for _name, _dtype in _TYPES.items():
    globals()[_name] = tensortype(_name, (), {"dtype": _dtype, "__module__": "torch",
                                              "__doc__": f"Legacy constructor of {_dtype} tensors."})
