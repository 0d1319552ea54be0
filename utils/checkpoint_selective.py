"""Selective activation checkpointing's names (torch.utils.checkpoint): CheckpointPolicy, SelectiveCheckpointContext,
create_selective_checkpoint_contexts, SAC_IGNORED_OPS.

torch saves the outputs of the ops a policy picks during the checkpointed forward and reuses them in the
recomputation; that needs a hook on every op call, which tidal's dispatcher does not offer. So the contexts
made here leave checkpoint() as it is: every op of the segment is recomputed (the values and gradients are
the ones torch gives, since the recomputation replays the same random draws; less memory is kept, more time
is spent) and the policy is never consulted. A one-time warning says so.
"""
from __future__ import annotations

import contextlib
import enum
import warnings
from typing import Any, Callable

__all__ = ["CheckpointPolicy", "SelectiveCheckpointContext", "create_selective_checkpoint_contexts",
           "SAC_IGNORED_OPS"]

# torch lists the metadata ops a policy never sees; tidal consults no policy, so nothing is listed
SAC_IGNORED_OPS: set = set()

_warned = False


class CheckpointPolicy(enum.Enum):
    """What selective checkpointing does with one op's output (torch's values)."""

    MUST_SAVE = 0
    PREFER_SAVE = 1
    MUST_RECOMPUTE = 2
    PREFER_RECOMPUTE = 3
    MUST_CPU_OFFLOAD = 4
    PREFER_CPU_OFFLOAD = 5


class SelectiveCheckpointContext:
    """The context a selective-checkpointing policy function receives."""

    def __init__(self, *, is_recompute, op_output=None) -> None:
        self.is_recompute = is_recompute
        self.op_output = op_output


def _is_op(op: Any) -> bool:
    # an OpOverload of tidal.fx._aten, known by its class: fx builds on utils (its _pytree), so utils imports no fx
    return any(c.__name__ == "OpOverload" and c.__module__ == "tidal.fx._aten" for c in type(op).__mro__)


def create_selective_checkpoint_contexts(policy_fn_or_list: Callable | list,
                                         allow_cache_entry_mutation: bool = False) -> tuple:
    """The (forward, recompute) context pair for checkpoint's `context_fn`; in tidal every op is recomputed
    and the policy is not consulted (values as torch's; see the module docstring)."""
    if isinstance(policy_fn_or_list, list):
        for op in policy_fn_or_list:
            if not _is_op(op):
                hint = ("Please update the OpOverloadPacket to a specific OpOverload.For example, if you have "
                        "`torch.ops.aten.mm`, change it to `torch.ops.aten.mm.default`.") \
                    if type(op).__name__ == "OpOverloadPacket" else ""
                raise ValueError(f"Expected op in `op_list` to be an OpOverload but got: {op} of type {type(op)}. "
                                 f"{hint}")
    elif not callable(policy_fn_or_list):
        raise TypeError("policy_fn_or_list must be either a function or a list of ops.")
    global _warned
    if not _warned:
        _warned = True
        warnings.warn("torch.utils.checkpoint.create_selective_checkpoint_contexts: tidal has no per-op hook to "
                      "save the ops the policy picks, so every op of the checkpointed region is recomputed in "
                      "backward (same values and gradients; less memory kept, more compute)", UserWarning,
                      stacklevel=2)
    return contextlib.nullcontext(), contextlib.nullcontext()
