"""`out=` for the torch functions whose tidal op makes a new result (torch.mean(x, 1, out=buf)...).

The op runs as usual; the result is then written into `out` after torch's checks: no input may
require grad, the result's dtype must suit `out` by the op's own rule (torch words each kind of
refusal differently), `out` must not overlap the inputs, and an `out` of another shape is resized
(with torch's warning when it held elements). Rules, per op:

    cast    the result casts to out's dtype when torch's casting allows it (not to a lower kind)
    same    out's dtype must be the result's ("Found dtype ...")
    exact   out's dtype must be the result's ("Expected out tensor to have dtype ...")
    any     the op computes in out's dtype (as its `dtype=` argument)
    nan     nansum / nanmean: out must be a float dtype (torch's nansum kernel)
    bool    out must be bool (all / any)
    cat     the stacking functions: torch.cat's cast rule and TypeError
"""
from __future__ import annotations

import functools

from ...autograd.graph import needs_grad
from ...tensor import Tensor
from ...tensor import dtype as dt
from .mem_overlap import overlap
from ..elementwise.number_ops import can_cast
from ..elementwise.copies import copy_
from ..indexing.scatter import C_NAMES, prepare_out
from ..windowed.windows import TENSOR_TYPE

__all__ = ["with_out", "write", "RULES"]

RULES = {
    "cast": ("diff", "igamma", "igammac", "lerp", "mean", "std", "var", "square"),
    "nan": ("nansum", "nanmean"),
    "same": ("absolute", "neg", "negative", "clamp_max", "clamp_min"),
    "exact": ("argmax", "argmin", "index_add", "index_copy", "isin", "log_softmax", "softmax", "msort", "norm",
              "renorm", "max", "min"),
    "any": ("sum", "prod", "cumsum", "cumprod"),
    "bool": ("all", "any"),
    "cat": ("hstack", "vstack", "dstack", "column_stack", "row_stack"),
    "float_power": ("float_power",), "logsumexp": ("logsumexp",), "logcumsumexp": ("logcumsumexp",),
    "where": ("where",), "searchsorted": ("searchsorted", "bucketize"),
}
RULE_OF = {name: rule for rule, names in RULES.items() for name in names}
# ops whose `out` may be their input itself, as torch's kernels allow (`cumsum(x, 0, out=x)`): the result is
# computed apart and then copied, so reading and writing the same elements is safe; partial overlaps stay refused
SELF_OUT = frozenset({"cumsum", "cumprod", "logcumsumexp", "softmax", "log_softmax"})


def _refusal(rule: str, op: str, result: dt.dtype, out: dt.dtype, all_elements: bool = False) -> Exception | None:
    """torch's error when op's result (dtype `result`) may not go into an `out` of dtype `out`, else None."""
    r, o = TENSOR_TYPE.get(result, str(result)), TENSOR_TYPE.get(out, str(out))
    if rule == "cast" and not can_cast(result, out) and op == "mean" and all_elements:
        return RuntimeError(f"mean.dtype_out(): input types can't be cast to the desired output type {o}")
    if rule == "cast" and not can_cast(result, out):
        return RuntimeError(f"result type {r} can't be cast to the desired output type {o}")
    if rule == "same" and out is not result:
        return RuntimeError(f"Found dtype {o} but expected {r}")
    if rule == "exact" and out is not result:
        return RuntimeError(f"Expected out tensor to have dtype {C_NAMES.get(result)}, but got {C_NAMES.get(out)} "
                            "instead")
    if rule == "nan" and not out.is_floating_point:  # torch's nan-reductions run in out's dtype: floats only
        return NotImplementedError(f"\"nansum_cpu\" not implemented for '{o}'")
    if rule == "any" and out is dt.bool_ and op in ("cumsum", "cumprod"):
        return NotImplementedError(f"\"{op}_out_cpu\" not implemented for 'Bool'")
    if rule == "bool" and out is not dt.bool_ and out is not dt.uint8:  # (all/any: uint8 outs too, as torch)
        return RuntimeError(f"{op} only supports bool tensor for result, got: {o}")
    if rule == "cat" and not can_cast(result, out):
        return TypeError(f"torch.cat(): input types can't be cast to the desired output type {o}")
    if rule == "float_power" and out is not result:
        return RuntimeError(f"the output given to float_power has dtype {o} but the operation's result requires "
                            f"dtype {r}")
    if rule == "logsumexp" and not out.is_floating_point:
        return RuntimeError(f"logsumexp(): Expected floating point type for result tensor, but got: {o}")
    if rule == "logcumsumexp" and out is not result:
        return RuntimeError(f"expected scalar_type {r} but found {o}")
    if rule == "searchsorted" and out is not result:  # (the dtype checked before the op ran)
        return RuntimeError(f"Expected out tensor to have dtype {C_NAMES.get(result)}, but got {C_NAMES.get(out)}")
    if rule == "where" and out is not result:
        return RuntimeError(f"Expected out type to be {r} but got {o}")
    return None


def _tensors(args: tuple, kwargs: dict) -> tuple:
    """The tensors among the arguments, one level into lists and tuples (the stacking functions' inputs)."""
    found = []
    for a in (*args, *kwargs.values()):
        for item in (a if isinstance(a, (list, tuple)) else (a,)):
            if isinstance(item, Tensor):
                found.append(item)
    return tuple(found)


def write(op: str, result, out, inputs: tuple, all_elements: bool = False, rule: str | None = None):
    """`result` (a tensor or a tuple of them) written into `out` by op's rule; returns out (as result's type)."""
    results = result if isinstance(result, tuple) else (result,)
    outs = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(results) or not all(isinstance(o, Tensor) for o in outs):
        raise TypeError(f"{op}(): argument 'out' must be {'tuple of Tensors' if len(results) > 1 else 'Tensor'}, "
                        f"not {type(out).__name__}")
    rule = rule or RULE_OF[op]
    if op in ("max", "min") and not isinstance(result, tuple):  # the elementwise / all-element forms
        rule = "cast"
    for o, r in zip(outs, results):
        error = _refusal(rule, op, r.dtype, o.dtype, all_elements)
        if error is not None:
            raise error
        reads = inputs if op not in SELF_OUT else tuple(t for t in inputs if overlap(o, t) != "full")
        prepare_out(o, tuple(r._v.shape), o.dtype, reads)
    written = tuple(copy_(o, r) for o, r in zip(outs, results))
    return type(result)(*written) if isinstance(result, tuple) else written[0]


def _check_searchsorted_out(out, out_int32: bool) -> None:
    want = dt.int32 if out_int32 else dt.int64
    if isinstance(out, Tensor) and out.dtype is not want:
        raise RuntimeError("torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or "
                           "Long(int64) depending on whether out_int32 flag is True, but we got output tensor's "
                           f"dtype {TENSOR_TYPE.get(out.dtype)} and out_int32 flag is {bool(out_int32)}")


def with_out(name: str, fn, rule: str | None = None):
    """`fn` taking torch's `out=` when it has an out rule (`rule`, or this table's for `name`) and no `out` of
    its own; else fn itself."""
    rule = rule or RULE_OF.get(name)
    if rule is None:
        return fn
    import inspect
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    if signature is not None and "out" in signature.parameters:
        return fn

    def call(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        inputs = _tensors(args, kwargs)
        if rule == "searchsorted":
            _check_searchsorted_out(out, kwargs.get("out_int32", False))
        if needs_grad(inputs):
            raise RuntimeError(f"{name}(): functions with out=... arguments don't support automatic "
                               "differentiation, but one of the arguments requires grad.")
        all_elements = len(args) < 2 and "dim" not in kwargs
        first = out[0] if isinstance(out, (tuple, list)) and out else out
        if rule == "any" and isinstance(first, Tensor) and kwargs.get("dtype") is None:
            error = _refusal("any", name, first.dtype, first.dtype)
            if error is not None:
                raise error
            kwargs["dtype"] = first.dtype  # torch accumulates in out's dtype
        return write(name, fn(*args, **kwargs), out, inputs, all_elements, rule)
    functools.update_wrapper(call, fn)
    if signature is not None:  # the signature shows the `out` it now takes
        params = list(signature.parameters.values())
        at = next((k for k, p in enumerate(params) if p.kind is p.VAR_KEYWORD), len(params))
        params.insert(at, inspect.Parameter("out", inspect.Parameter.KEYWORD_ONLY, default=None))
        call.__signature__ = signature.replace(parameters=params)
    return call
