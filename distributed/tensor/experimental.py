"""torch.distributed.tensor.experimental on tidal: `local_map` (run a function written for plain tensors on
DTensors' local tensors and wrap its outputs as DTensors) and `implicit_replication` (plain tensors mixed
with DTensors in an op count as Replicate). context_parallel and register_sharding are absent."""
from __future__ import annotations

import contextlib
import functools
from typing import Callable, Iterator

from ...comm import global_tensor
from ...comm.global_tensor import GlobalTensor
from ...func._pytree import tree_flatten, tree_unflatten
from ...tensor import Tensor
from ..device_mesh import DeviceMesh
from ._api import from_local

__all__ = ["local_map", "implicit_replication"]

@contextlib.contextmanager
def implicit_replication() -> Iterator[None]:
    """Within the context, a plain tensor in an op with DTensors is taken as a Replicate DTensor (the caller
    vouches that every rank holds the same value)."""
    saved = global_tensor.IMPLICIT_REPLICATION[0]
    global_tensor.IMPLICIT_REPLICATION[0] = True
    try:
        yield
    finally:
        global_tensor.IMPLICIT_REPLICATION[0] = saved

def local_map(func: Callable | None = None, out_placements=None, in_placements=None, in_grad_placements=None,
              device_mesh: DeviceMesh | None = None, *, redistribute_inputs: bool = False):
    """`func` (written for plain tensors) as a function of DTensors: it runs on their local tensors (checked or
    redistributed against `in_placements`) and its tensor outputs become DTensors laid out as `out_placements`."""
    if func is None:
        return lambda f: local_map(f, out_placements, in_placements, in_grad_placements, device_mesh,
                                   redistribute_inputs=redistribute_inputs)
    return functools.partial(_local_map_wrapped, func, out_placements, in_placements, in_grad_placements,
                             device_mesh, redistribute_inputs)

def _spec(specs, idx: int, arg, what: str) -> tuple:
    spec = specs[idx]
    if spec is None:
        raise AssertionError(f"DTensor input {arg} expects {what} but received {spec}!")
    return tuple(spec)

def _local_map_wrapped(func: Callable, out_placements, in_placements, in_grad_placements,
                       device_mesh: DeviceMesh | None, redistribute_inputs: bool, *args, **kwargs):
    flat, spec = tree_flatten(args)
    if in_placements is not None and len(in_placements) != len(flat):
        raise AssertionError(f"in_placements length {len(in_placements)} does not match the number of input args "
                             f"{len(flat)}!")
    local_args, seen = [], False
    for idx, arg in enumerate(flat):
        if isinstance(arg, GlobalTensor):
            device_mesh = arg.device_mesh if device_mesh is None else device_mesh
            seen = True
            if in_placements is not None:
                want = _spec(in_placements, idx, arg, "placements")
                if arg.placements != want:
                    if not redistribute_inputs:
                        raise ValueError(f"arg {arg} in local_map has a mismatched placements: arg placements is "
                                         f"{arg.placements} but the input placements is {want}! If "
                                         "redistribute_inputs is wanted, set redistribute_inputs=True to local_map.")
                    arg = arg.redistribute(placements=want)
            grads = None if in_grad_placements is None else _spec(in_grad_placements, idx, arg, "in grad placements")
            local_args.append(arg.to_local(grad_placements=grads))
        else:
            if in_placements is not None and not isinstance(arg, Tensor) and in_placements[idx] is not None:
                raise AssertionError(f"Non-Tensor input {arg} expects None placements but received "
                                     f"{in_placements[idx]}!")
            local_args.append(arg)
    out = func(*tree_unflatten(local_args, spec), **kwargs)
    if not seen:
        return out
    flat_out, out_spec = tree_flatten(out)
    specs = out_placements if isinstance(out_placements, tuple) else (out_placements,)
    if len(flat_out) != len(specs):
        raise AssertionError(f"local_map requires one PlacementType be provided for each output value, received "
                             f"{len(specs)} out_placements but {len(flat_out)} is expected!")
    wrapped = []
    for value, placements in zip(flat_out, specs):
        if isinstance(value, GlobalTensor):
            raise AssertionError(f"torch.Tensor output expected but received {type(value)}: {value}")
        if isinstance(value, Tensor):
            wrapped.append(from_local(value, device_mesh, placements))
        elif placements is not None:
            raise AssertionError(f"Non-tensor output {value} expects None placements but received {placements}!")
        else:
            wrapped.append(value)
    return tree_unflatten(wrapped, out_spec)
