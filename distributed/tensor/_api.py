"""DTensor: torch's distributed tensor as the face of tidal's GlobalTensor (one class, not two).

`DTensor` IS `tidal.comm.GlobalTensor`: a mesh is a placement, placements are sbp, redistribute is
boxing, and every op runs through the global-tensor dispatcher (SBP signatures). This module adds
torch's names to the class once (`placements`, `device_mesh`, `redistribute`, `full_tensor`,
`to_local(grad_placements=)`, `DTensor.from_local`) and gives the module-level functions
`distribute_tensor` and `distribute_module`. A Shard whose dim does not divide over the mesh gives
torch.chunk's parts (the last ranks smaller or empty), as torch's does; ops on such a tensor run on the
local parts where torch's do (elementwise ops, reductions, softmax-like ops, transposes, matmul: the SBP
signatures marked for uneven parts) and on the gathered value otherwise, as torch's.
"""
from __future__ import annotations

import inspect
from typing import Callable, Sequence

from ...autograd.function import Function
from ...comm import boxing
from ...comm import collectives
from ...comm.global_tensor import GlobalParameter, GlobalTensor, _grad_sbp
from ...comm.global_tensor import from_local as _global_from_local
from ...comm.placement_sbp import broadcast
from ...nn.parameter import Parameter
from ...tensor import Tensor
from ..device_mesh import _BY_PLACEMENT, DeviceMesh, current_mesh, mesh_of, remember
from .placement_types import Placement, Replicate, from_sbp, to_sbp

__all__ = ["DTensor", "distribute_tensor", "distribute_module"]

DTensor = GlobalTensor


# -- arguments --------------------------------------------------------------------------------------------
def _mesh(device_mesh: DeviceMesh | None) -> DeviceMesh:
    mesh = current_mesh() if device_mesh is None else device_mesh
    if not isinstance(mesh, DeviceMesh):
        raise TypeError(f"expected a DeviceMesh, got {type(mesh).__name__}")
    return remember(mesh)


def _sbps(mesh: DeviceMesh, placements: Sequence[Placement] | None, ndim: int) -> tuple:
    if placements is None:
        placements = [Replicate()] * mesh.ndim
    placements = tuple(placements)
    if len(placements) != mesh.ndim:
        raise ValueError(f"`placements` must have the same length as `device_mesh.ndim`! Found placements length: "
                         f"{len(placements)}, and device_mesh.ndim: {mesh.ndim}.")
    return tuple(to_sbp(p, ndim) for p in placements)


class _GradAs(Function):
    """Identity forward; backward boxes the local gradient from the sbp the caller says it has (torch's
    grad_placements) to the sbp tidal's autograd expects for the tensor."""

    @staticmethod
    def forward(ctx, x, placement, given, natural):
        ctx.route = (placement, given, natural)
        return x.detach()

    @staticmethod
    def backward(ctx, grad):
        placement, given, natural = ctx.route
        return boxing.box(grad, placement, given, natural), None, None, None


def _local_with_grad_placements(g: GlobalTensor, grad_placements) -> Tensor:
    if grad_placements is None:
        return g._local
    given = _sbps(g.device_mesh, grad_placements, g.dim())
    natural = _grad_sbp(g.sbp)
    if given == natural or not g._local.requires_grad:
        return g._local
    return _GradAs.apply(g._local, g.placement, given, natural)


# -- the members torch code reads on a DTensor ------------------------------------------------------------------
def _placements(self: GlobalTensor) -> tuple:
    """The placement of each mesh dimension (Shard(d), Replicate() or Partial())."""
    return tuple(from_sbp(s) for s in self.sbp)


def _device_mesh(self: GlobalTensor) -> DeviceMesh:
    """The device mesh (the face of this tensor's placement)."""
    return mesh_of(self.placement)


def _to_local(self: GlobalTensor, *, grad_placements: Sequence[Placement] | None = None) -> Tensor:
    """This rank's local tensor; `grad_placements` says how the gradients that flow into it are laid out."""
    return _local_with_grad_placements(self, grad_placements)


def _redistribute(self: GlobalTensor, device_mesh: DeviceMesh | None = None,
                  placements: Sequence[Placement] | None = None, *, async_op: bool = False, forward_dtype=None,
                  backward_dtype=None) -> GlobalTensor:
    """The same tensor laid out as `placements` (boxing: all-gather, reduce-scatter, all-reduce, all-to-all)."""
    if forward_dtype is not None or backward_dtype is not None:
        raise NotImplementedError("redistribute(): forward_dtype/backward_dtype are not implemented in tidal")
    mesh = self.device_mesh if device_mesh is None else device_mesh
    if mesh.placement != self.placement:
        raise NotImplementedError(f"redistribute(): moving a DTensor from {self.device_mesh!r} to another mesh "
                                  f"{mesh!r} is not supported")
    sbps = self.sbp if placements is None else _sbps(mesh, placements, self.dim())
    return self._relayout(sbps)


def _full_tensor(self: GlobalTensor, *, grad_placements: Sequence[Placement] | None = None) -> Tensor:
    """The whole tensor on every rank (all-gathered / all-reduced), differentiable."""
    full = self.to_global(self.placement, (broadcast,) * self.placement.ndim)
    return _local_with_grad_placements(full, grad_placements)


def from_local(local_tensor: Tensor, device_mesh: DeviceMesh | None = None,
               placements: Sequence[Placement] | None = None, *, run_check: bool = False, shape=None,
               stride=None) -> GlobalTensor:
    """A DTensor whose local tensor on this rank is `local_tensor` (gradients flow back into it); uneven
    shards need the global `shape` (and `stride`, as torch asks)."""
    if not isinstance(local_tensor, Tensor):
        raise TypeError(f"from_local(): expected a Tensor, got {type(local_tensor).__name__}")
    if (shape is None) != (stride is None):
        raise RuntimeError(f"Found shape:{shape}, stride:{stride}. Please pass both shape and stride at the same "
                           "time.")
    mesh = _mesh(device_mesh)
    sbps = _sbps(mesh, placements, local_tensor.dim())
    if run_check and shape is None:
        shapes = mesh.get_group(0).control.all_gather_object(list(local_tensor.shape)) if mesh.ndim == 1 else None
        if shapes is not None and any(s != shapes[0] for s in shapes):
            raise ValueError(f"Inconsistent tensor metadata (including shape and stride) across ranks: {shapes}")
    if shape is None:
        return _global_from_local(local_tensor, mesh.placement, sbps)   # even shards, as torch assumes
    shape = tuple(shape)
    expected = boxing.shard_shape(shape, mesh.placement, sbps, mesh.get_rank()) if len(shape) == local_tensor.dim() \
        else None
    if expected != list(local_tensor.shape):
        raise RuntimeError(f"from_local(): rank {mesh.get_rank()}'s part of a tensor of shape {list(shape)} laid "
                           f"out as {list(placements)} has shape {expected} (torch.chunk's parts), but the local "
                           f"tensor has shape {list(local_tensor.shape)}")
    _global_from_local(local_tensor, mesh.placement, (broadcast,) * mesh.ndim)   # checks the placement
    return GlobalTensor(local_tensor, mesh.placement, sbps, shape)


def _dtensor_repr(tidal_repr: Callable) -> Callable:
    """torch's DTensor repr (this rank's local tensor, the mesh, the placements) for a tensor on the placement
    of a DeviceMesh the program made; `tidal_repr` (the whole value, placement and sbp) otherwise."""
    def __repr__(self: GlobalTensor) -> str:
        mesh = _BY_PLACEMENT.get(self.placement)
        if mesh is None:
            return tidal_repr(self)
        # torch's local tensor carries no autograd history of its own (the DTensor does), nor a parameter's flag
        local = self._local.detach() if self._local.grad_fn is not None or getattr(self, "is_parameter", False) \
            else self._local
        return f"DTensor(local_tensor={local!r}, device_mesh={mesh!r}, placements={self.placements!r})"
    return __repr__


def _install() -> None:
    """Give tidal's global tensor torch's DTensor members (the names do not clash with tidal's own)."""
    for cls in (GlobalTensor, GlobalParameter):
        cls.__repr__ = cls.__str__ = _dtensor_repr(cls.__dict__["__repr__"])
    GlobalTensor.placements = property(_placements)
    GlobalTensor.device_mesh = property(_device_mesh)
    GlobalTensor.redistribute = _redistribute
    GlobalTensor.full_tensor = _full_tensor
    GlobalTensor.to_local = _to_local
    GlobalTensor.from_local = staticmethod(from_local)


_install()


# -- module-level functions -----------------------------------------------------------------------------------
def distribute_tensor(tensor: Tensor, device_mesh: DeviceMesh | None = None,
                      placements: Sequence[Placement] | None = None, *, src_data_rank: int | None = 0) -> GlobalTensor:
    """`tensor` (rank `src_data_rank`'s value, broadcast first; None: each rank's own) laid out as `placements`:
    a leaf DTensor with the tensor's requires_grad."""
    mesh = _mesh(device_mesh)
    if isinstance(tensor, GlobalTensor):
        sbps = _sbps(mesh, placements, tensor.dim())
        if tensor.placement != mesh.placement:
            raise ValueError(f"Cannot distribute a DTensor with device mesh {tensor.device_mesh} to a different "
                             f"device mesh {mesh}.")
        if tensor.sbp != sbps:
            raise ValueError(f"Cannot distribute a DTensor with placements {tensor.placements} to a different "
                             f"placements {tuple(placements)}. do you want to call `redistribute` instead?")
        return tensor
    if not isinstance(tensor, Tensor):
        raise TypeError(f"distribute_tensor(): expected a Tensor, got {type(tensor).__name__}")
    sbps = _sbps(mesh, placements, tensor.dim())
    full = tensor.detach().contiguous().clone()
    ranks = mesh.placement.flat_ranks()
    if src_data_rank is not None and len(ranks) > 1:
        collectives.broadcast(full, src=ranks[src_data_rank], group=boxing.line_group(ranks))
    laid = _global_from_local(full, mesh.placement, (broadcast,) * mesh.ndim)._relayout(sbps)
    local = laid._local.detach().requires_grad_(tensor.requires_grad)
    return GlobalTensor(local, mesh.placement, sbps, laid._shape)


def _replicate_rest(module, mesh: DeviceMesh) -> None:
    for sub in module.modules():
        for name, param in list(sub._parameters.items()):
            if param is not None and not isinstance(param, GlobalTensor):
                sub.register_parameter(name, Parameter(distribute_tensor(param.detach(), mesh),
                                                       requires_grad=param.requires_grad))
        for name, buf in list(sub._buffers.items()):
            if buf is not None and not isinstance(buf, GlobalTensor):
                sub._buffers[name] = distribute_tensor(buf, mesh)


def _arity(fn: Callable) -> int:
    try:
        return len(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return 3


def distribute_module(module, device_mesh: DeviceMesh | None = None, partition_fn: Callable | None = None,
                      input_fn: Callable | None = None, output_fn: Callable | None = None):
    """Lay out `module`'s parameters with `partition_fn(name, submodule, mesh)` (the rest replicated) and run
    `input_fn(module, inputs, mesh)` / `output_fn(module, outputs, mesh)` around its forward."""
    mesh = _mesh(device_mesh)
    if getattr(module, "_distribute_module_applied", False):
        raise RuntimeError("distribute_module should only be called once on a module, but it has already been "
                           "called on this module!")
    if partition_fn is not None:
        for name, sub in list(module.named_modules()):
            partition_fn(name, sub, mesh)
    _replicate_rest(module, mesh)
    if input_fn is not None:
        if _arity(input_fn) == 3:
            module.register_forward_pre_hook(lambda mod, inputs: input_fn(mod, inputs, mesh))
        else:
            module.register_forward_pre_hook(lambda mod, inputs: input_fn(inputs, mesh))
    if output_fn is not None:
        if _arity(output_fn) == 3:
            module.register_forward_hook(lambda mod, inputs, outputs: output_fn(mod, outputs, mesh))
        else:
            module.register_forward_hook(lambda mod, inputs, outputs: output_fn(outputs, mesh))
    object.__setattr__(module, "_distribute_module_applied", True)
    return module

