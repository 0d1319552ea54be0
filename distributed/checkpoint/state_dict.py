"""torch.distributed.checkpoint.state_dict on tidal: model and optimizer state dicts keyed by
parameter names, with a sharded parameter's optimizer state as DTensors laid out like it, so
`save`/`load` write and reshard them with the parameters."""
from __future__ import annotations

from dataclasses import dataclass

from ... import ops
from ...autograd.grad_mode import no_grad
from ...comm.global_tensor import GlobalTensor
from ...nn.hooks import IncompatibleKeys
from ...tensor import Tensor
from ..fsdp import FSDPModule
from ..tensor._api import distribute_tensor  # also gives GlobalTensor redistribute()
from ._layout import region

__all__ = ["StateDictOptions", "get_model_state_dict", "get_optimizer_state_dict", "get_state_dict",
           "set_model_state_dict", "set_optimizer_state_dict", "set_state_dict"]


@dataclass
class StateDictOptions:
    """full_state_dict: whole tensors instead of DTensors (with cpu_offload, only on rank 0);
    ignore_frozen_params: leave out parameters without requires_grad; strict: for loading."""

    full_state_dict: bool = False
    cpu_offload: bool = False
    ignore_frozen_params: bool = False
    keep_submodule_prefixes: bool = True
    strict: bool = True
    broadcast_from_rank0: bool = False
    flatten_optimizer_state_dict: bool = False
    dsd_fqn_modifiers: str = "_fqn_modifiers"


def _options(options: StateDictOptions | None) -> StateDictOptions:
    options = options or StateDictOptions()
    if options.flatten_optimizer_state_dict:
        raise NotImplementedError("flatten_optimizer_state_dict is not implemented in tidal")
    return options


def _resharded(model) -> None:
    for m in model.modules():
        if isinstance(m, FSDPModule):
            m.reshard()


def _rank() -> int:
    from ...comm import process_group as pg  # comm loads on first use (keeps import light)
    return pg.get_rank() if pg.is_initialized() else 0


def _full(value, options: StateDictOptions):
    if isinstance(value, GlobalTensor):
        return value.full_tensor().detach()
    return value


def _finish(sd: dict, options: StateDictOptions) -> dict:
    if not options.full_state_dict:
        return sd
    out = {k: _full(v, options) if not isinstance(v, dict) else _finish(v, options) for k, v in sd.items()}
    return out if not options.cpu_offload or _rank() == 0 else {}


def get_model_state_dict(model, *, submodules=None, options: StateDictOptions | None = None) -> dict:
    """The model's state dict: sharded parameters as DTensors (whole tensors with full_state_dict)."""
    options = _options(options)
    if submodules is not None:
        raise NotImplementedError("get_model_state_dict(): submodules= is not implemented in tidal")
    _resharded(model)
    sd = model.state_dict()
    if options.ignore_frozen_params:
        frozen = {name for name, p in model.named_parameters() if not p.requires_grad}
        sd = type(sd)((k, v) for k, v in sd.items() if k not in frozen)
    return _finish(sd, options)


def _named_leaves(model) -> dict:
    """id(the tensor an optimizer holds) -> (name, parameter): a global parameter's optimizer sees its shard."""
    found = {}
    for name, p in model.named_parameters():
        found[id(p.to_local() if isinstance(p, GlobalTensor) else p)] = (name, p)
    return found


def _init_optim_state(optimizer) -> None:
    """Give an optimizer without state its state, as torch does: one step with zero gradients and lr 0; nothing when
    it has state or a parameter has a gradient. A tensor lr is set aside for the step, not zeroed in place."""
    if optimizer.state:
        return
    params = [p for g in optimizer.param_groups for p in g["params"]]
    if any(p.grad is not None for p in params):
        return
    for p in params:
        if p.requires_grad:
            p.grad = ops.zeros_like(p)
    kept = [(g, g["lr"]) for g in optimizer.param_groups if "lr" in g]
    for g, lr in kept:
        g["lr"] = ops.tensor(0.0) if isinstance(lr, Tensor) else 0.0
    optimizer.step()
    for g, lr in kept:
        g["lr"] = lr
    optimizer.zero_grad(set_to_none=True)


def get_optimizer_state_dict(model, optimizers, *, submodules=None, options: StateDictOptions | None = None) -> dict:
    """The optimizers' state keyed by parameter name; a sharded parameter's state tensors are DTensors."""
    options = _options(options)
    optimizers = [optimizers] if not isinstance(optimizers, (list, tuple)) else list(optimizers)
    leaves = _named_leaves(model)
    state, groups = {}, []
    for opt in optimizers:
        _init_optim_state(opt)
        sd = opt.state_dict()
        index_to_name = {}
        for group, packed in zip(opt.param_groups, sd["param_groups"]):
            for p, index in zip(group["params"], packed["params"]):
                index_to_name[index] = leaves[id(p)][0]
            groups.append(dict(packed, params=[index_to_name[i] for i in packed["params"]]))
        for index, values in sd["state"].items():
            name = index_to_name[index]
            param = _param_named(leaves, name)
            state[name] = {k: _like(v, param) for k, v in values.items()}
    return _finish({"state": state, "param_groups": groups}, options)


def _param_named(leaves: dict, name: str):
    for n, p in leaves.values():
        if n == name:
            return p
    raise KeyError(name)


def _like(value, param):
    """A state tensor of a sharded parameter (shard-shaped) as a DTensor laid out like the parameter."""
    if isinstance(param, GlobalTensor) and isinstance(value, Tensor) and value.dim() > 0 and \
            tuple(value.shape) == tuple(param.to_local().shape):
        return GlobalTensor(value, param.placement, param.sbp, param._shape)
    return value


def _local_part(value, param):
    """What a rank's optimizer holds for a saved state value: a DTensor's shard, or this rank's part of a
    whole tensor."""
    if isinstance(value, GlobalTensor):
        if isinstance(param, GlobalTensor) and value.sbp != param.sbp:
            value = value.redistribute(param.device_mesh, param.placements)
        return value.to_local()
    if isinstance(param, GlobalTensor) and isinstance(value, Tensor) and tuple(value.shape) == tuple(param.shape) \
            and value.dim() > 0:
        offsets, sizes, _ = region(param, _rank())
        return value[tuple(slice(o, o + n) for o, n in zip(offsets, sizes))].clone()
    return value


def set_model_state_dict(model, model_state_dict: dict, *, options: StateDictOptions | None = None):
    """Load a model state dict (DTensors, or whole tensors that are sharded here to the parameters' layout)."""
    options = _options(options)
    _resharded(model)
    current = model.state_dict()
    local, tensors = {}, None
    with no_grad():
        for key, value in model_state_dict.items():
            target = current.get(key)
            if not isinstance(target, GlobalTensor):
                local[key] = value
                continue
            if isinstance(value, Tensor):
                value = distribute_tensor(value, target.device_mesh, target.placements,
                                          src_data_rank=0 if options.broadcast_from_rank0 else None)
            if not isinstance(value, GlobalTensor) or tuple(value.shape) != tuple(target.shape):
                raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}:\n\tsize mismatch "
                                   f"or wrong type for {key}")
            if target.device.type == "meta":  # a model built on meta: the values are assigned, as torch does
                if tensors is None:
                    tensors = {**dict(model.named_parameters()), **dict(model.named_buffers())}
                owned = tensors.get(key)
                if isinstance(owned, GlobalTensor):
                    owned.data = value.redistribute(target.device_mesh, target.placements)
                    continue
            if value._local is not target._local:     # a state dict loaded in place already holds the values
                target._local.copy_(value.redistribute(target.device_mesh, target.placements)._local)
        result = model.load_state_dict(local, strict=False)
    missing = [k for k in result.missing_keys if k not in model_state_dict]
    unexpected = list(result.unexpected_keys)
    if options.strict and (missing or unexpected):
        raise RuntimeError(f"Error(s) in loading state_dict for {type(model).__name__}: missing keys {missing}, "
                           f"unexpected keys {unexpected}")
    return IncompatibleKeys(missing, unexpected)


def set_optimizer_state_dict(model, optimizers, optim_state_dict: dict, *,
                             options: StateDictOptions | None = None) -> None:
    """Load an optimizer state dict keyed by parameter name (from get_optimizer_state_dict)."""
    _options(options)
    optimizers = [optimizers] if not isinstance(optimizers, (list, tuple)) else list(optimizers)
    leaves = _named_leaves(model)
    saved_groups = list(optim_state_dict["param_groups"])
    for opt in optimizers:
        groups, state, index = [], {}, 0
        for group in opt.param_groups:
            names = [leaves[id(p)][0] for p in group["params"]]
            saved = next((g for g in saved_groups if g["params"] and g["params"][0] in names), None)
            if saved is None:
                raise ValueError(f"set_optimizer_state_dict(): no saved parameter group holds {names[:1]}")
            ids = list(range(index, index + len(names)))
            groups.append(dict(saved, params=ids))
            for i, name in zip(ids, names):
                if name in optim_state_dict["state"]:
                    param = _param_named(leaves, name)
                    state[i] = {k: _local_part(v, param) for k, v in optim_state_dict["state"][name].items()}
            index += len(names)
        opt.load_state_dict({"state": state, "param_groups": groups})


def get_state_dict(model, optimizers, *, submodules=None, options: StateDictOptions | None = None) -> tuple:
    """(model state dict, optimizer state dict), as get_model_state_dict and get_optimizer_state_dict."""
    return (get_model_state_dict(model, submodules=submodules, options=options),
            get_optimizer_state_dict(model, optimizers, submodules=submodules, options=options))


def set_state_dict(model, optimizers, *, model_state_dict: dict, optim_state_dict: dict,
                   options: StateDictOptions | None = None):
    """Load both: set_model_state_dict then set_optimizer_state_dict."""
    result = set_model_state_dict(model, model_state_dict, options=options)
    set_optimizer_state_dict(model, optimizers, optim_state_dict, options=options)
    return result
