"""FSDP2 (`torch.distributed.fsdp.fully_shard`) on tidal's global tensors.

`fully_shard(module)` replaces each parameter it manages by a DTensor (a global parameter) split on
dim 0 over the mesh, so the optimizer steps on this rank's shard. Before forward a hook all-gathers
the shards into whole local tensors and registers those in the module; they are the output of a
graph node (FsdpUnshardBackward0) whose backward reduce-scatters (averaging over ranks) the whole gradient into the
shard's `.grad`. After forward (with `reshard_after_forward`, the default) the sharded parameters are
registered again, and the gathered tensors are freed: the ops of the module's forward save them through
saved-tensor hooks (autograd.graph.saved_tensors_hooks) as a note of which parameter and which view, and
backward all-gathers each parameter again (once per backward) when it first needs it, as torch does.

A parameter whose sharded dim does not divide by the mesh size is split as torch.chunk does (the last
ranks hold less, or nothing), as torch's FSDP2 shards it; the collectives pad it internally.

Prefetch: collectives are queued on the VM's communication stream, so issuing one never blocks the caller
and it overlaps with compute already queued. By default a module gathers when its forward starts (and, with
reshard_after_forward, each parameter again when backward first needs it); `set_modules_to_forward_prefetch`
makes a module's forward also issue the listed modules' all-gathers right after its own (their forward then
finds them gathered), and `set_modules_to_backward_prefetch` makes its backward's first re-gather issue the
listed modules' re-gathers too. What differs from torch: a forward that raises leaves its saved-tensor
hooks active. A 2-D mesh is HSDP: parameters replicated along mesh dim 0 and
sharded along dim 1, gradients reduce-scattered along dim 1 and all-reduced along dim 0.

Over tensor parallelism (parallelize_module on mesh["tp"], then fully_shard with mesh["dp"] of one 2-D
mesh): each DTensor parameter's tp-local tensor is what the dp ranks shard, gather and reduce-scatter; the
module computes with the gathered tp DTensor. The sharded parameter is a DTensor on the (tp, dp) mesh with
placements (tp placement, Shard(0)) -- torch names the same layout on the (dp, tp) mesh, with a
_StridedShard where both split dim 0. HSDP over tensor parallelism (a 3-D mesh: fully_shard with
mesh["dp_replicate", "dp_shard"]) is the same with the replicas' all-reduce added: the parameter is a
DTensor on the (tp, dp_replicate, dp_shard) mesh with placements (tp placement, Replicate(), Shard(0)).
"""
from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass

import numpy as np

from ..autograd.grad_mode import is_grad_enabled, no_grad
from ..autograd.graph import record
from ..autograd.saved_hooks import saved_tensors_hooks
from ..comm import boxing
from ..comm.global_tensor import GlobalTensor
from ..nn import Module
from ..nn.parameter import Parameter
from ..tensor import Tensor
from ..utils import checkpoint as _checkpoint
from .device_mesh import DeviceMesh, init_device_mesh
from .device_mesh import _BY_PLACEMENT
from .tensor._api import distribute_tensor
from .tensor.placement_types import Replicate, Shard, from_sbp, to_sbp

__all__ = ["fully_shard", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "CPUOffloadPolicy", "UnshardHandle",
           "register_fsdp_forward_method"]


@dataclass(frozen=True)
class MixedPrecisionPolicy:
    """Dtypes for the gathered parameters (forward/backward compute), the gradient reduction and outputs."""

    param_dtype: object = None
    reduce_dtype: object = None
    output_dtype: object = None
    cast_forward_inputs: bool = True


@dataclass
class OffloadPolicy:
    """No offloading (the default)."""


@dataclass
class CPUOffloadPolicy(OffloadPolicy):
    """Keep sharded parameters on the CPU: tidal's global tensors live there already, so nothing moves."""

    pin_memory: bool = True


class _Param:
    """One managed parameter: where it is registered, its sharded DTensor, and gradients held back."""

    __slots__ = ("slots", "sharded", "dim", "pending", "full", "whole", "tp", "node")

    def __init__(self, slots: list, sharded: GlobalTensor, dim: int | None, tp: tuple | None = None):
        self.slots, self.sharded, self.dim, self.pending = slots, sharded, dim, None
        self.full = None  # the gathered tensor, while forward runs with reshard_after_forward
        # a tensor-parallel parameter: (placement, sbp, shape) of the DTensor the module computes with, whose
        # local tensor is what the data-parallel ranks shard and gather again
        self.tp = tp
        self.node = None  # the graph node of the last gathered tensor (its backward reduce-scatters)
        self.whole = None if dim is None else (sharded._shape[dim] if tp is None else
                                               boxing.shard_shape(tp[2], tp[0], tp[1], _rank())[dim])

    def register(self, value) -> None:
        for owner, name in self.slots:
            owner._parameters[name] = value


class _State:
    """What fully_shard keeps for one module: its parameters, mesh and policies."""

    def __init__(self, params: list, mesh: DeviceMesh, reshard_after_forward: bool, mp: MixedPrecisionPolicy):
        self.params, self.mesh, self.mp = params, mesh, mp
        self.reshard_after_forward = reshard_after_forward
        self.group = mesh.get_group(mesh.ndim - 1)                       # the ranks sharing one parameter
        self.replicas = mesh.get_group(0) if mesh.ndim == 2 else None    # HSDP: the replicas of a shard
        self.sync = True
        self.unsharded = False
        self.waiting = 0      # gathered parameters whose gradient has not come back yet
        self.hooks = None     # the saved-tensor hooks active during forward (reshard_after_forward)
        self.regathered: dict = {}  # _Param -> its tensor gathered again for the running backward
        self.forward_prefetch: list = []    # _States whose all-gathers this module's forward issues early
        self.backward_prefetch: list = []   # _States whose re-gathers this module's backward issues early
        self.prefetched = False             # gathered by another module's forward prefetch, not yet used
        self.backward_started = False       # this backward has read a gathered parameter of this module
        self.saved: set = set()             # parameters the last forward's graph saved (backward re-gathers them)


def _gather(p: _Param, state: _State) -> Tensor:
    local = p.sharded._local.detach()
    full = local.clone() if p.dim is None else boxing._gather(local, state.group, p.dim, p.whole)
    dtype = state.mp.param_dtype
    return full if dtype is None or dtype == full.dtype else full.to(dtype)


def _unshard_backward(node, grad):
    """The whole gradient of a gathered parameter, averaged over the ranks and reduce-scattered into the
    shard (all-reduced for a replicated parameter)."""
    p, state = node.attrs
    state.waiting -= 1
    if state.waiting <= 0:
        state.regathered = {}
        state.backward_started = False
        if state.unsharded and not state.reshard_after_forward:
            _reshard(state)
    if p.pending is not None:
        grad, p.pending = grad + p.pending, None
    if not state.sync:
        p.pending = grad
        return (None,)
    dtype = state.mp.reduce_dtype
    if dtype is not None and dtype != grad.dtype:
        grad = grad.to(dtype)
    n = state.group.size()
    if p.dim is None:
        reduced = boxing._all_reduce(grad, state.group)
    else:
        reduced = boxing._reduce_scatter(grad, state.group, p.dim)
    if state.replicas is not None:
        reduced = boxing._all_reduce(reduced, state.replicas)
        n *= state.replicas.size()
    reduced = reduced / n
    shard_dtype = p.sharded.dtype
    return (reduced if reduced.dtype == shard_dtype else reduced.to(shard_dtype),)


class _Gathered:
    """What the graph keeps of a saved tensor that views a gathered parameter: the parameter and the view."""

    __slots__ = ("p", "state", "shape", "strides", "offset", "dtype")

    def __init__(self, p: _Param, state: _State, t: Tensor):
        v = t._v
        self.p, self.state, self.shape, self.strides, self.offset, self.dtype = p, state, v.shape, v.strides, \
            v.offset, t.dtype


def _hooks(state: _State) -> saved_tensors_hooks:
    """Saved-tensor hooks for a forward that reshards: views of gathered parameters are packed as _Gathered."""
    def pack(t: Tensor):
        blob = t._v.blob
        for p in state.params:
            if p.full is not None and p.full._v.blob is blob:
                state.saved.add(p)
                return _Gathered(p, state, t)
        return t

    def unpack(packed) -> Tensor:
        if not isinstance(packed, _Gathered):
            return packed
        st, p = packed.state, packed.p
        with no_grad():
            full = st.regathered.get(p)
            if full is None:
                full = st.regathered[p] = _gather(p, st)
            if not st.backward_started:   # this module's backward starts: so do the re-gathers it prefetches
                st.backward_started = True
                for other in st.backward_prefetch:
                    _regather_all(other)
        v = full._v
        view = type(v)(v.blob, packed.shape, packed.strides, packed.offset, v.dtype)
        return Tensor._make(view, packed.dtype, full.device, full._vm)
    return saved_tensors_hooks(pack, unpack)


def _regather_all(state: _State) -> None:
    """Re-gather, for the coming backward, every parameter of `state` that the graph saved (and freed)."""
    for p in state.params:
        if p in state.saved and p not in state.regathered:
            state.regathered[p] = _gather(p, state)


def _adopt_assigned(p: _Param) -> None:
    """Take as the shard a parameter the program registered in its place while resharded (load_state_dict(...,
    assign=True) of DTensor parameters, as torch's FSDP2 adopts them)."""
    owner, name = p.slots[0]
    current = owner._parameters.get(name)
    if current is not p.sharded and isinstance(current, GlobalTensor) and current._shape == p.sharded._shape \
            and current.sbp == p.sharded.sbp and current.placement == p.sharded.placement:
        p.sharded = current
        p.register(current)


def _unshard(state: _State) -> None:
    grad = is_grad_enabled()
    state.waiting = 0
    state.saved = set()
    for p in state.params:
        if not state.unsharded:
            _adopt_assigned(p)
        full = _gather(p, state)  # from the detached shard: no graph
        p.node = None
        if grad and p.sharded.requires_grad:
            record("fsdp_unshard", _unshard_backward, (p.sharded._local,), (full,), (), (p, state))
            state.waiting += 1
            p.node = full.grad_fn
        p.register(full if p.tp is None else GlobalTensor(full, *p.tp))
        if grad and state.reshard_after_forward:
            p.full = full
    state.unsharded = True


def _reshard(state: _State) -> None:
    for p in state.params:
        p.register(p.sharded)
        p.full = None
    state.unsharded = False


def _cast(obj, dtype):
    if isinstance(obj, Tensor) and obj.is_floating_point() and obj.dtype != dtype:
        return obj.to(dtype)
    if isinstance(obj, (list, tuple)):
        return type(obj)(_cast(o, dtype) for o in obj)
    if isinstance(obj, dict):
        return {k: _cast(v, dtype) for k, v in obj.items()}
    return obj


_RUNNING: list = []   # the states whose module's forward is running (outermost first)


def _recompute_hook():
    """utils.checkpoint's hook: a checkpointed segment inside running FSDP modules recomputes with their
    parameters gathered again, each tensor standing on the node of the forward's gathered tensor, so the
    gradient of the recomputation reaches the same reduce-scatter (torch's FSDP unshards before the
    checkpointed module's backward)."""
    running = [(st, {p: p.node for p in st.params}) for st in _RUNNING if st.unsharded]
    if not running:
        return None

    @contextlib.contextmanager
    def regathered():
        done = []
        for st, nodes in running:
            if st.unsharded:    # (reshard_after_forward=False: still gathered)
                continue
            for p in st.params:
                with no_grad():
                    full = _gather(p, st)
                node = nodes.get(p)
                if node is not None:
                    full._requires_grad, full.grad_fn, full._output_nr = True, node, 0
                p.register(full if p.tp is None else GlobalTensor(full, *p.tp))
            st.unsharded = True
            done.append(st)
        try:
            yield
        finally:
            for st in done:
                _reshard(st)
    return regathered


def _pre_forward(module, args, kwargs):
    state = module._fsdp_state
    _RUNNING.append(state)
    if state.prefetched:
        state.prefetched = False
    else:
        _unshard(state)
    for other in state.forward_prefetch:
        if not other.prefetched:
            _unshard(other)
            other.prefetched = True
    if state.reshard_after_forward and is_grad_enabled() and state.hooks is None:
        state.hooks = _hooks(state)
        state.hooks.__enter__()
    mp = state.mp
    if mp.param_dtype is not None and mp.cast_forward_inputs:
        return _cast(args, mp.param_dtype), _cast(kwargs, mp.param_dtype)
    return None


def _post_forward(module, args, output):
    state = module._fsdp_state
    if state in _RUNNING:
        _RUNNING.remove(state)
    if state.hooks is not None:
        state.hooks.__exit__(None, None, None)
        state.hooks = None
    if state.reshard_after_forward:
        _reshard(state)
    if state.mp.output_dtype is not None:
        return _cast(output, state.mp.output_dtype)
    return None


class FSDPModule:
    """What fully_shard adds to a module's class: explicit unshard/reshard and gradient-sync switches."""

    def unshard(self, async_op: bool = False) -> "UnshardHandle | None":
        """All-gather the parameters now and register the whole tensors (until `reshard`); the next forward
        uses them instead of gathering again. With `async_op`, a handle to wait on (the all-gathers are queued
        on the VM's communication stream either way, and whatever reads them waits for them)."""
        state = self._fsdp_state
        if not (state.unsharded and state.prefetched):
            _unshard(state)
            state.prefetched = True
        return UnshardHandle() if async_op else None

    def reshard(self) -> None:
        """Register the sharded parameters again, dropping the module's whole ones."""
        _reshard(self._fsdp_state)
        self._fsdp_state.prefetched = False

    def set_reshard_after_forward(self, reshard_after_forward: bool, recurse: bool = True) -> None:
        """Whether forward ends by resharding (for this module and, with `recurse`, its FSDP submodules)."""
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.reshard_after_forward = bool(reshard_after_forward)

    def set_modules_to_forward_prefetch(self, modules: list) -> None:
        """Issue the all-gathers of `modules` (FSDP modules) right after this module's own, in forward."""
        self._fsdp_state.forward_prefetch = [m._fsdp_state for m in _fsdp_modules(modules)]

    def set_modules_to_backward_prefetch(self, modules: list) -> None:
        """Issue the re-gathers of `modules` (FSDP modules) when this module's backward starts re-gathering."""
        self._fsdp_state.backward_prefetch = [m._fsdp_state for m in _fsdp_modules(modules)]

    def set_requires_gradient_sync(self, requires_gradient_sync: bool, *, recurse: bool = True) -> None:
        """Whether backward reduce-scatters gradients; without, whole gradients accumulate locally until a
        backward that syncs (gradient accumulation without communication)."""
        for m in (self.modules() if recurse else [self]):
            if isinstance(m, FSDPModule):
                m._fsdp_state.sync = bool(requires_gradient_sync)


class UnshardHandle:
    """A handle to wait on an FSDPModule.unshard(async_op=True)."""

    def wait(self) -> None:
        """Nothing to do: what reads the gathered parameters waits for their all-gathers (VM dependencies)."""
        return None


def register_fsdp_forward_method(module, method_name: str) -> None:
    """Make `module.<method_name>(...)` gather and reshard the module's parameters as forward does (a no-op for
    a module that is not an FSDPModule)."""
    if not isinstance(module, FSDPModule):
        return
    if not hasattr(module, method_name):
        raise ValueError(f"{type(module)} does not have a method {method_name}")
    method = getattr(module, method_name)

    def wrapped(*args, **kwargs):
        prepared = _pre_forward(module, args, kwargs)
        if prepared is not None:
            args, kwargs = prepared
        out = method(*args, **kwargs)
        replaced = _post_forward(module, args, out)
        return out if replaced is None else replaced
    object.__setattr__(module, method_name, functools.update_wrapper(wrapped, method))


def _fsdp_modules(modules) -> list:
    modules = list(modules)
    for module in modules:
        if not isinstance(module, FSDPModule):
            raise ValueError(f"Expects FSDPModule but got {type(module)}: {module}")
    return modules


_CLASSES: dict = {}


def _fsdp_class(cls: type) -> type:
    made = _CLASSES.get(cls)
    if made is None:
        made = _CLASSES[cls] = type(f"FSDP{cls.__name__}", (FSDPModule, cls), {})
    return made


def _managed(module, ignored: set) -> list:
    """(owner, name, parameter) for the parameters under `module` that no inner fully_shard manages."""
    found, stack = [], [module]
    while stack:
        owner = stack.pop()
        for name, param in owner._parameters.items():
            if param is not None and id(param) not in ignored:
                found.append((owner, name, param))
        stack.extend(child for child in reversed(list(owner._modules.values()))
                     if child is not None and not isinstance(child, FSDPModule))
    return found


def fully_shard(module, *, mesh: DeviceMesh | None = None, reshard_after_forward: bool | int = True,
                shard_placement_fn=None, mp_policy: MixedPrecisionPolicy = MixedPrecisionPolicy(),
                offload_policy: OffloadPolicy = OffloadPolicy(), ignored_params: set | None = None):
    """Shard `module`'s parameters (those not already under an inner fully_shard) on dim 0 over `mesh`;
    all-gather them around forward and reduce-scatter their gradients. Returns the module, now also an
    FSDPModule."""
    if isinstance(module, (list, tuple)):
        raise NotImplementedError("fully_shard(): a list of modules sharing one group is not implemented; call it "
                                  "on each module")
    if not isinstance(module, Module):
        raise ValueError(f"fully_shard does not support containers that do not implement forward: {module}")
    if isinstance(module, FSDPModule):
        raise RuntimeError(f"fully_shard() was already applied to {type(module).__name__}")
    if not isinstance(offload_policy, OffloadPolicy):
        raise TypeError(f"offload_policy must be an OffloadPolicy, got {type(offload_policy).__name__}")
    mesh = mesh if mesh is not None else init_device_mesh("cpu", (_world_size(),))
    if mesh.ndim > 2:
        raise NotImplementedError(f"fully_shard(): a {mesh.ndim}-D mesh is not supported; pass a 1-D mesh (FSDP) "
                                  "or a 2-D one (HSDP: replicate x shard)")
    if not isinstance(reshard_after_forward, bool):
        raise NotImplementedError("fully_shard(): reshard_after_forward as an int (resharding to a smaller world) "
                                  "is not implemented")
    ignored = {id(p) for p in (ignored_params or ())}
    by_id: dict = {}
    for owner, name, param in _managed(module, ignored):
        entry = by_id.get(id(param))
        if entry is not None:           # a shared (tied) parameter: one shard, registered in every place
            entry.slots.append((owner, name))
            continue
        placement = shard_placement_fn(param) if shard_placement_fn is not None else None
        placement = Shard(0) if placement is None else placement
        dim = placement.dim % max(param.dim(), 1)
        if param.dim() == 0:
            placement, dim = Replicate(), None   # nothing to split: whole on every rank
        if isinstance(param, GlobalTensor):
            by_id[id(param)] = _over_tensor_parallel(owner, name, param, mesh, dim)
            continue
        placements = [Replicate()] * (mesh.ndim - 1) + [placement]
        with no_grad():
            sharded = Parameter(distribute_tensor(param.detach(), mesh, placements, src_data_rank=None),
                                requires_grad=param.requires_grad)
        by_id[id(param)] = _Param([(owner, name)], sharded, dim)
    params = list(by_id.values())
    for p in params:
        p.register(p.sharded)
    object.__setattr__(module, "_fsdp_state", _State(params, mesh, reshard_after_forward, mp_policy))
    module.register_forward_pre_hook(_pre_forward, prepend=True, with_kwargs=True)
    module.register_forward_hook(_post_forward)
    module.__class__ = _fsdp_class(type(module))
    return module


def _over_tensor_parallel(owner, name: str, param: GlobalTensor, mesh: DeviceMesh, dim: int | None) -> _Param:
    """A tensor-parallel parameter (a DTensor on the tp mesh) sharded again over the data-parallel `mesh` (1-D:
    FSDP, 2-D: HSDP): its local tensor split on `dim` over the dp shard ranks (and replicated over the HSDP
    replicas), kept as a DTensor on the (tp, *dp) mesh. The tp axis comes first, so that even a tp Shard(0)
    split again on dim 0 is exactly tidal's nested split (torch reports it on the (*dp, tp) mesh with a
    _StridedShard)."""
    if param.placement.ndim != 1:
        raise NotImplementedError(f"fully_shard(): parameter {name!r} is a DTensor on a {param.placement.ndim}-D "
                                  "mesh; tidal shards DTensor parameters laid out on a 1-D tensor-parallel mesh "
                                  "(mesh['tp'])")
    grid = _joint_grid(param.placement.flat_ranks(), mesh.placement)
    both = DeviceMesh("cpu", grid.tolist(), mesh_dim_names=_joint_names(param, mesh), _init_backend=False)
    placements = [from_sbp(param.sbp[0])] + [Replicate()] * (mesh.ndim - 1) + \
        [Replicate() if dim is None else Shard(dim)]
    with no_grad():
        local = param._local.detach()
        if dim is not None:
            local = boxing._slice(local, mesh.get_group(mesh.ndim - 1), dim)
        sharded = GlobalTensor(local, both.placement, tuple(to_sbp(q, param.dim()) for q in placements),
                               param._shape).as_parameter(param.requires_grad)
    return _Param([(owner, name)], sharded, dim, (param.placement, param.sbp, param._shape))


def _joint_grid(tp_ranks: tuple, dp):
    """The ranks of the mesh made with init_device_mesh whose line through this rank along one axis is
    `tp_ranks` and whose other axes, through this rank, are the grid of the dp placement `dp`: as a (tp, *dp)
    grid."""
    rank = _rank()
    dp_grid = dp.ranks
    for made in list(_BY_PLACEMENT.values()):
        placement = made.placement
        coords = placement.coords(rank)
        if placement.ndim != 1 + dp_grid.ndim or coords is None:
            continue
        for tp_axis in range(placement.ndim):
            index = tuple(coords[a] if a == tp_axis else slice(None) for a in range(placement.ndim))
            if placement.line(rank, tp_axis) == tp_ranks and np.array_equal(placement.ranks[index], dp_grid):
                return np.moveaxis(placement.ranks, tp_axis, 0)
    raise NotImplementedError("fully_shard(): the tensor-parallel and data-parallel meshes of this rank are not "
                              "sub-meshes of one mesh made with init_device_mesh; tidal shards DTensor parameters "
                              "over mesh['dp'] (or mesh['dp_replicate', 'dp_shard']) of the mesh whose "
                              "mesh['tp'] laid them out")


def _joint_names(param: GlobalTensor, mesh: DeviceMesh) -> tuple:
    tp = param.device_mesh.mesh_dim_names or ("tp",)
    dp = mesh.mesh_dim_names or (("dp",) if mesh.ndim == 1 else ("dp_replicate", "dp_shard"))
    return tp + dp if not set(tp) & set(dp) else ("tp",) + tuple(f"dp{k}" for k in range(mesh.ndim))


def _rank() -> int:
    from ..comm import process_group as pg  # comm loads on first use (keeps import light)
    return pg.get_rank()


def _world_size() -> int:
    from ..comm import process_group as pg  # comm loads on first use (keeps import light)
    if not pg.is_initialized():
        pg.init_process_group("gloo")
    return pg.get_world_size()


_checkpoint.RECOMPUTE_HOOKS.append(_recompute_hook)
