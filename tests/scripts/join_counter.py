"""The join context manager with a custom Joinable (the counter of PyTorch's "uneven inputs" tutorial): each rank
runs a different number of iterations, each all-reducing a one; joined ranks shadow them with zeros; the post
hook shares the final count of the last rank to join. Then throw_on_early_termination: every rank raises.

Run with `torchrun --nproc-per-node 2 join_counter.py` or under `python -m tidal.comm.launch --nproc-per-node 2
-m tidal.compat join_counter.py`. Rank 0 prints JSON."""
import torch
import torch.distributed as dist
from torch.distributed.algorithms.join import Join, Joinable, JoinHook

from _common import report


class CounterJoinHook(JoinHook):
    def __init__(self, counter, sync_max_count):
        self.counter = counter
        self.sync_max_count = sync_max_count

    def main_hook(self):
        dist.all_reduce(torch.zeros(1), group=self.counter.process_group)  # (the running ranks' one)

    def post_hook(self, is_last_joiner):
        if not self.sync_max_count:
            return
        rank = dist.get_rank(self.counter.process_group)
        common = self.counter.find_common_rank(rank, is_last_joiner)
        if rank == common:
            self.counter.max_count = self.counter.count.detach().clone()
        dist.broadcast(self.counter.max_count, src=common, group=self.counter.process_group)


class Counter(Joinable):
    def __init__(self, device, process_group):
        super().__init__()
        self.device, self.process_group = device, process_group
        self.count = torch.tensor([0.0])
        self.max_count = torch.tensor([0.0])

    def __call__(self):
        Join.notify_join_context(self)
        t = torch.ones(1)
        dist.all_reduce(t, group=self.process_group)
        self.count += t

    def join_hook(self, **kwargs):
        return CounterJoinHook(self, kwargs.get("sync_max_count", False))

    @property
    def join_device(self):
        return self.device

    @property
    def join_process_group(self):
        return self.process_group

    def find_common_rank(self, rank, to_consider):
        t = torch.tensor([rank if to_consider else -1])
        dist.all_reduce(t, op=dist.ReduceOp.MAX, group=self.process_group)
        return t.item()


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
counter = Counter(torch.device("cpu"), dist.group.WORLD)
with Join([counter], sync_max_count=True):
    for _ in range(3 + 2 * rank):
        counter()
result = {"count": counter.count.item(), "max_count": counter.max_count.item()}

quiet = Counter(torch.device("cpu"), dist.group.WORLD)  # (no sync_max_count: post_hook does nothing)
with Join([quiet]):
    for _ in range(1 + rank):
        quiet()
result["quiet"] = [quiet.count.item(), quiet.max_count.item()]

thrower = Counter(torch.device("cpu"), dist.group.WORLD)
try:
    with Join([thrower], throw_on_early_termination=True):
        for _ in range(2 + 3 * rank):
            thrower()
    result["thrown"] = None
except RuntimeError as e:
    result["thrown"] = str(e)
result["thrower_count"] = thrower.count.item()

try:
    Join([])
except ValueError as e:
    result["empty"] = str(e)

disabled = Counter(torch.device("cpu"), dist.group.WORLD)
with Join([disabled], enable=False):
    for _ in range(2):
        disabled()
result["disabled"] = disabled.count.item()

everyone = [None] * world
dist.all_gather_object(everyone, result)
if rank == 0:
    report([], ranks=everyone)
dist.destroy_process_group()
