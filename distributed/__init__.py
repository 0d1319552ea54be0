"""torch.distributed's program-level subsystems on tidal's global tensors: `device_mesh`, `tensor`
(DTensor and tensor parallelism), `fsdp` (fully_shard) and `checkpoint` (sharded save/load).
Process groups and collectives themselves live in tidal.comm; this package is imported only when
a program asks for it."""
