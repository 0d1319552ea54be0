"""torch.distributed.checkpoint.default_planner: the planners save() and load() use when given none.

tidal's save and load plan by themselves (each rank writes the shards it holds and reads what its
layout covers), so the default planners are their options: DefaultLoadPlanner(allow_partial_load=True)
lets load() skip keys the checkpoint lacks. A planner of any other class (a custom plan) is refused by
save() and load() with NotImplementedError.
"""
from __future__ import annotations

__all__ = ["DefaultSavePlanner", "DefaultLoadPlanner"]


class DefaultSavePlanner:
    """save()'s default plan: every rank writes one replica of each shard it holds."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 dedup_replicated_tensors: bool | None = None, dedup_save_to_lowest_rank: bool = False,
                 enable_plan_caching: bool = False) -> None:
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.dedup_save_to_lowest_rank = dedup_save_to_lowest_rank
        self.enable_plan_caching = enable_plan_caching


class DefaultLoadPlanner:
    """load()'s default plan: every rank reads what its shards cover; a key missing from the checkpoint is
    an error unless `allow_partial_load`."""

    def __init__(self, flatten_state_dict: bool = True, flatten_sharded_tensors: bool = True,
                 allow_partial_load: bool = False) -> None:
        self.flatten_state_dict = flatten_state_dict
        self.flatten_sharded_tensors = flatten_sharded_tensors
        self.allow_partial_load = allow_partial_load


def _check_planner(verb: str, planner) -> None:
    """Refuse a planner save()/load() (`verb`) cannot follow: anything but its default planner."""
    allowed = DefaultSavePlanner if verb == "save" else DefaultLoadPlanner
    if planner is not None and type(planner) is not allowed:
        raise NotImplementedError(f"{verb}(): custom planners ({type(planner).__name__}) are not implemented in "
                                  f"tidal; only {allowed.__name__} (or None) is accepted")
