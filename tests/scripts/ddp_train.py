"""Data-parallel training the torchrun way: init_process_group, DistributedSampler, DDP, SGD.

Run with `torchrun --nproc-per-node 2 ddp_train.py` (real torch) or
`python -m tidal.comm.launch --nproc-per-node 2 -m tidal.compat ddp_train.py` (tidal). Each rank
starts from different weights (seeded by rank): DDP must broadcast rank 0's. Rank 0 prints the
per-step losses averaged over ranks, the final loss and a parameter checksum.
"""
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

from _common import init_params, report

dist.init_process_group("gloo")
rank, world_size = dist.get_rank(), dist.get_world_size()

rng = np.random.default_rng(7)
x_np = rng.normal(size=(64, 8)).astype(np.float32)
y_np = (np.tanh(x_np[:, :1] - x_np[:, 1:2]) + 0.1 * x_np[:, 2:3]).astype(np.float32)
dataset = TensorDataset(torch.from_numpy(x_np), torch.from_numpy(y_np))
sampler = DistributedSampler(dataset, shuffle=True, seed=3)
loader = DataLoader(dataset, batch_size=8, sampler=sampler)

model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
init_params(model, seed=rank)
ddp = DDP(model)
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)

losses = []
for epoch in range(3):
    sampler.set_epoch(epoch)
    for xb, yb in loader:
        optimizer.zero_grad()
        loss = F.mse_loss(ddp(xb), yb)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())

mean_losses = torch.stack(losses)
dist.all_reduce(mean_losses)
mean_losses /= world_size
checksum = torch.stack([p.detach().double().sum() for p in model.parameters()]).sum().reshape(1)
checksums = [torch.zeros(1, dtype=torch.float64) for _ in range(world_size)]
dist.all_gather(checksums, checksum)
dist.barrier()
if rank == 0:
    print(f"final loss {mean_losses[-1].item():.6f} checksum {checksum.item():.6f}")
    report(mean_losses.tolist(), checksum=checksum.item(), ranks_agree=len({c.item() for c in checksums}) == 1,
           world_size=world_size)
dist.destroy_process_group()
