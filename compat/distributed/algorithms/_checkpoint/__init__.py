"""torch.distributed.algorithms._checkpoint: the activation-checkpoint wrappers FSDP training scripts import."""
