"""torch.distributed._composable: the path FSDP2 had before torch.distributed.fsdp (torch 2.4-2.5 scripts import
`fully_shard` from torch.distributed._composable.fsdp)."""
