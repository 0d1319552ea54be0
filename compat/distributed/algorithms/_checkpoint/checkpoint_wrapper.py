"""torch.distributed.algorithms._checkpoint.checkpoint_wrapper: tidal.utils.checkpoint_wrapper's objects."""
from __future__ import annotations

from .....utils.checkpoint_wrapper import (ActivationWrapper, CheckpointImpl, CheckpointWrapper, OffloadWrapper,
                                           apply_activation_checkpointing, checkpoint_wrapper, offload_wrapper)

__all__ = ["CheckpointImpl", "ActivationWrapper", "CheckpointWrapper", "OffloadWrapper", "checkpoint_wrapper",
           "offload_wrapper", "apply_activation_checkpointing"]
