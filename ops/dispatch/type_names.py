"""How C++ names each dtype in the messages PyTorch copies: CHECKED_NAME (`int64_t`, `c10::Half`), as its value
checks print them, and TYPEMETA_NAME (`long int`), as caffe2::TypeMeta prints them."""
from __future__ import annotations

from ...tensor import dtype as dt

CHECKED_NAME = {dt.uint8: "uint8_t", dt.int8: "int8_t", dt.int16: "int16_t", dt.int32: "int", dt.int64: "int64_t",
                dt.float16: "c10::Half", dt.bfloat16: "c10::BFloat16", dt.float32: "float", dt.float64: "double",
                dt.bool_: "bool", dt.uint16: "uint16_t", dt.uint32: "uint32_t", dt.uint64: "uint64_t"}
CHECKED_NAME.update({d: f"c10::{d.scalar_name}" for d in dt.FLOAT8})
TYPEMETA_NAME = dict(CHECKED_NAME)
TYPEMETA_NAME.update({dt.uint8: "unsigned char", dt.int8: "signed char", dt.int16: "short int",
                      dt.int64: "long int", dt.uint16: "short unsigned int", dt.uint32: "unsigned int",
                      dt.uint64: "long unsigned int"})
