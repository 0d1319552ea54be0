"""torch.distributed.optim: DistributedOptimizer (one optimizer per worker owning some of the parameters, given as
RRefs, each stepped with the gradients that worker's distributed autograd context holds) and
ZeroRedundancyOptimizer (optimizer state sharded over the ranks of a process group; Joinable)."""
from __future__ import annotations

from .. import ops
from ..autograd import no_grad
from ..tensor import dtype as dt
from ..tensor import Tensor
from . import rpc
from .autograd import get_gradients

__all__ = ["DistributedOptimizer"]


class _LocalOptimizer:
    """The optimizer on a parameters' owner (made there by remote())."""

    def __init__(self, optimizer_class, param_rrefs: list, args: tuple, kwargs: dict) -> None:
        self.params = [r.local_value() for r in param_rrefs]
        self.optim = optimizer_class(self.params, *args, **kwargs)

    @staticmethod
    def step_remote(optimizer_rref, context_id: int) -> None:
        """Step with the context's gradients (None for a parameter that got none); .grad is left as it was (torch's
        distributed optimizer never writes it)."""
        self = optimizer_rref.local_value()
        grads = get_gradients(context_id)
        kept = [p.grad for p in self.params]
        for p in self.params:
            p.grad = grads.get(p)
        try:
            self.optim.step()
        finally:
            for p, g in zip(self.params, kept):
                p.grad = g


class DistributedOptimizer:
    """Step `optimizer_class(params, *args, **kwargs)` on every worker owning some of `params_rref`, with the
    gradients of a distributed autograd context."""

    def __init__(self, optimizer_class, params_rref: list, *args, **kwargs) -> None:
        by_owner: dict = {}
        for rref in params_rref:
            by_owner.setdefault(rref._owner, []).append(rref)
        self.remote_optimizers = [rpc.remote(owner, _LocalOptimizer, args=(optimizer_class, rrefs, args, kwargs))
                                  for owner, rrefs in by_owner.items()]

    def step(self, context_id: int) -> None:
        """One step of every worker's optimizer with the gradients of `context_id`."""
        futures = [rpc.rpc_async(r.owner(), _LocalOptimizer.step_remote, args=(r, context_id))
                   for r in self.remote_optimizers]
        for future in futures:
            future.wait()


# -- ZeroRedundancyOptimizer ----------------------------------------------------------------------------------

from ..comm.join import Join, JoinHook, Joinable, _JoinConfig  # noqa: E402
from ..optim.optimizer import Optimizer  # noqa: E402

__all__ += ["ZeroRedundancyOptimizer"]


class _ZeROJoinHook(JoinHook):
    """A joined rank keeps stepping (its shard's update and broadcasts), as torch's hook does."""

    def __init__(self, zero) -> None:
        self.zero = zero

    def main_hook(self) -> None:
        """One optimizer step, matching the running ranks' broadcasts."""
        self.zero.step()


def _broadcast_from(tensors: list, group, src: int) -> None:
    """Overwrite `tensors` with group rank `src`'s values: one broadcast per dtype of their concatenation."""
    from ..comm import collectives as C  # comm loads on first use (keeps import light)
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with no_grad():
        for same in by_dtype.values():
            flat = ops.cat([t.detach().reshape(-1) for t in same])
            C.broadcast(flat, group=group, group_src=src)
            offset = 0
            for t in same:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()


class ZeroRedundancyOptimizer(Optimizer, Joinable):
    """`optimizer_class` with its state sharded over the ranks of `process_group`: each rank updates the parameters
    assigned to it (largest first, to the rank holding the fewest elements so far, as torch assigns them) and
    broadcasts them; consolidate_state_dict gathers the shards for state_dict."""

    def __init__(self, params, optimizer_class, process_group=None, parameters_as_bucket_view: bool = False,
                 overlap_with_ddp: bool = False, **defaults) -> None:
        from ..comm.process_group import default_group  # comm loads on first use (keeps import light)
        if overlap_with_ddp:
            raise NotImplementedError("ZeroRedundancyOptimizer: overlap_with_ddp is not supported by tidal")
        Optimizer.__init__(self, params, defaults)
        self._join_config = _JoinConfig.construct_disabled_join_config()
        self.process_group = default_group() if process_group is None else process_group
        self.world_size, self.rank = self.process_group.size(), self.process_group.rank()
        self.parameters_as_bucket_view = parameters_as_bucket_view
        self._all_state_dicts: list = []
        self._partition = self._partition_parameters()
        self._index_to_param = [p for g in self.param_groups for p in g["params"]]
        self._param_to_index = {id(p): k for k, p in enumerate(self._index_to_param)}
        self._param_to_rank = {id(p): r for r, groups in enumerate(self._partition) for g in groups
                               for p in g["params"]}
        self.optim = optimizer_class(self._partition[self.rank], **defaults)

    def _partition_parameters(self) -> list:
        """For each rank, its parameter groups (the global groups' hyperparameters, its share of their params)."""
        sizes = [0] * self.world_size
        out = [[] for _ in range(self.world_size)]
        for group in self.param_groups:
            shares = [[] for _ in range(self.world_size)]
            for p in sorted(group["params"], key=lambda t: t.numel(), reverse=True):
                rank = sizes.index(min(sizes))
                shares[rank].append(p)
                sizes[rank] += p.numel()
            for rank in range(self.world_size):
                out[rank].append({**{k: v for k, v in group.items() if k != "params"}, "params": shares[rank]})
        return out

    def _sync_hyperparameters(self, source: list, target: list) -> None:
        for src, dst in zip(source, target):
            for key, value in src.items():
                if key != "params":
                    dst[key] = value

    def step(self, closure=None, **kwargs):
        """Update this rank's shard and broadcast every rank's updated parameters."""
        Join.notify_join_context(self)
        self._sync_hyperparameters(self.param_groups, self.optim.param_groups)
        loss = self.optim.step(closure, **kwargs) if closure is not None else self.optim.step(**kwargs)
        for rank, groups in enumerate(self._partition):
            owned = [p for g in groups for p in g["params"]]
            if owned:
                _broadcast_from(owned, self.process_group, rank)
        self._sync_hyperparameters(self.optim.param_groups, self.param_groups)
        return loss

    def consolidate_state_dict(self, to: int = 0) -> None:
        """Gather every rank's optimizer shard on rank `to` (a collective: every rank calls it)."""
        from ..comm import collectives as C  # comm loads on first use (keeps import light)
        self._all_state_dicts = []
        control = self.process_group.control
        for rank in range(self.world_size):
            mine = self.optim.state_dict() if rank == self.rank else None
            tensors: list = []
            plain = _strip(mine, tensors) if mine is not None else None
            plain = control.broadcast_object(plain, src=self.process_group.ranks[rank])
            shapes = _tensor_slots(plain)
            if rank != self.rank:
                tensors = [ops.zeros(tuple(shape), dtype=dt.from_name(dtype)) for shape, dtype in shapes]
            for t in tensors:
                C.broadcast(t, group=self.process_group, group_src=rank)
            if self.rank == to:
                self._all_state_dicts.append(_rebuild(plain, tensors))

    def state_dict(self) -> dict:
        """The whole optimizer's state with global parameter indices (after consolidate_state_dict here)."""
        if not self._all_state_dicts:
            raise RuntimeError("Optimizer state has not been consolidated on this rank. Please call "
                               f"`consolidate_state_dict(to={self.rank})` on all ranks beforehand if you meant to "
                               "save the global state.")
        state_dict = Optimizer.state_dict(self)
        for rank, local in enumerate(self._all_state_dicts):
            for local_group, global_group in zip(local["param_groups"], self._partition[rank]):
                for index, param in zip(local_group["params"], global_group["params"]):
                    if index in local["state"]:
                        state_dict["state"][self._param_to_index[id(param)]] = local["state"][index]
        state_dict["state"] = dict(sorted(state_dict["state"].items()))
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        """Load this rank's share of a state_dict() result (every rank loads the same one)."""
        local_state, local_groups, k = {}, [], 0  # (this rank's share, in its local optimizer's numbering)
        for group, saved in zip(self._partition[self.rank], state_dict["param_groups"]):
            indices = []
            for p in group["params"]:
                index = self._param_to_index[id(p)]
                if index in state_dict["state"]:
                    local_state[k] = state_dict["state"][index]
                indices.append(k)
                k += 1
            local_groups.append({**{key: v for key, v in saved.items() if key != "params"}, "params": indices})
        self.optim.load_state_dict({"state": local_state, "param_groups": local_groups})
        Optimizer.load_state_dict(self, {"state": {}, "param_groups": state_dict["param_groups"]})
        self._sync_hyperparameters(self.param_groups, self.optim.param_groups)

    def join_hook(self, **kwargs) -> JoinHook:
        """The hook stepping on a joined rank."""
        return _ZeROJoinHook(self)

    @property
    def join_device(self):
        """The parameters' device."""
        return self._index_to_param[0].device

    @property
    def join_process_group(self):
        """The process group the shards are spread over."""
        return self.process_group


def _strip(value, tensors: list):
    """`value` with each tensor replaced by a slot naming its index, shape and dtype (the plain data sent)."""
    if isinstance(value, Tensor):
        tensors.append(value.detach().contiguous())
        return {"\x00tensor": len(tensors) - 1, "shape": list(value.shape), "dtype": str(value.dtype).split(".")[-1]}
    if isinstance(value, dict):
        return {k: _strip(v, tensors) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_strip(v, tensors) for v in value)
    return value


def _tensor_slots(plain) -> list:
    """(shape, dtype) of each tensor slot of a stripped value, in slot order."""
    found: dict = {}

    def walk(v):
        if isinstance(v, dict) and "\x00tensor" in v:
            found[v["\x00tensor"]] = (v["shape"], v["dtype"])
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, (list, tuple)):
            for x in v:
                walk(x)
    walk(plain)
    return [found[k] for k in sorted(found)]


def _rebuild(plain, tensors: list):
    if isinstance(plain, dict) and "\x00tensor" in plain:
        return tensors[plain["\x00tensor"]]
    if isinstance(plain, dict):
        return {k: _rebuild(v, tensors) for k, v in plain.items()}
    if isinstance(plain, (list, tuple)):
        return type(plain)(_rebuild(v, tensors) for v in plain)
    return plain
