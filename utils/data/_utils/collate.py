"""torch.utils.data._utils.collate: batch collation (`collate` with a type -> function map, and the defaults)."""
from __future__ import annotations

from .._collate import (collate, collate_float_fn, collate_int_fn, collate_numpy_array_fn,  # noqa: F401
                        collate_numpy_scalar_fn, collate_str_fn, collate_tensor_fn, default_collate,
                        default_collate_err_msg_format, default_collate_fn_map, default_convert)

__all__ = ["collate", "default_collate", "default_convert", "default_collate_fn_map", "collate_tensor_fn",
           "collate_numpy_array_fn", "collate_numpy_scalar_fn", "collate_float_fn", "collate_int_fn",
           "collate_str_fn", "default_collate_err_msg_format"]
