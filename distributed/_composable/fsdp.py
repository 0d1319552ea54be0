"""torch.distributed._composable.fsdp: FSDP2's older import path, the same objects as torch.distributed.fsdp."""
from __future__ import annotations

from ..fsdp import (CPUOffloadPolicy, FSDPModule, MixedPrecisionPolicy, OffloadPolicy, fully_shard,
                    register_fsdp_forward_method)

__all__ = ["CPUOffloadPolicy", "FSDPModule", "MixedPrecisionPolicy", "OffloadPolicy", "fully_shard",
           "register_fsdp_forward_method"]
