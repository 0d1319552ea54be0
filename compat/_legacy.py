"""The legacy typed constructors: `FloatTensor([1, 2])`, `LongTensor(3, 4)`, `isinstance(t, FloatTensor)`."""
from __future__ import annotations

from .. import ops
from ..tensor import Size, Tensor
from ..tensor import dtype as dt

_TYPES = {"FloatTensor": dt.float32, "DoubleTensor": dt.float64, "HalfTensor": dt.float16,
          "BFloat16Tensor": dt.bfloat16, "LongTensor": dt.int64, "IntTensor": dt.int32, "ShortTensor": dt.int16,
          "CharTensor": dt.int8, "ByteTensor": dt.uint8, "BoolTensor": dt.bool_}
__all__ = list(_TYPES)


class tensortype(type):
    """Metaclass of the legacy types: calling one builds a tensor of its dtype; isinstance checks the dtype."""

    dtype: dt.dtype

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype

    def __call__(cls, *args, device=None) -> Tensor:
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype is not cls.dtype:
                raise TypeError(f"expected {cls.dtype} (got {args[0].dtype})")
            return args[0].detach()
        if len(args) == 1 and not isinstance(args[0], (int, Size)):
            if not hasattr(args[0], "__len__"):
                raise TypeError(f"new(): data must be a sequence (got {type(args[0]).__name__})")
            return ops.tensor(args[0], dtype=cls.dtype, device=device)
        shape = tuple(args[0]) if len(args) == 1 and isinstance(args[0], Size) else (args or (0,))
        return ops.empty(*shape, dtype=cls.dtype, device=device)

    def __repr__(cls) -> str:
        return f"<class 'torch.{cls.__name__}'>"


for _name, _dtype in _TYPES.items():
    globals()[_name] = tensortype(_name, (), {"dtype": _dtype, "__module__": "torch",
                                              "__doc__": f"Legacy constructor of {_dtype} tensors."})
