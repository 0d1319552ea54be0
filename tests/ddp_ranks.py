"""Rank-side functions for tests/test_comm_ddp.py (run on comm_ranks.RankPool's ranks). Each checks
DistributedDataParallel on the rank against a plain single-process computation (float64, so
the tolerances are tight) and returns a list of failures. No pytest import: ranks start fast."""
import numpy as np

import tidal
from tidal import nn
from comm_ranks import expect_errors

IN, HIDDEN, OUT = 6, 16, 3
TINY_BUCKETS_MB = 600 / (1 << 20)   # 600 bytes: several buckets for the small MLP
TOL = dict(rtol=1e-12, atol=1e-12)


def _me() -> tuple:
    from tidal import comm
    return comm.get_rank(), comm.get_world_size()


def _mlp(seed: int) -> nn.Module:
    tidal.manual_seed(seed)
    return nn.Sequential(nn.Linear(IN, HIDDEN), nn.Tanh(), nn.Linear(HIDDEN, 8), nn.Tanh(),
                         nn.Linear(8, OUT)).double()


def _copy_of(model: nn.Module, seed: int = 99) -> nn.Module:
    """A plain model of the same architecture holding `model`'s current values."""
    twin = _mlp(seed)
    twin.load_state_dict({k: v.detach().clone() for k, v in model.state_dict().items()})
    return twin


def _batch(rows: int, salt: int = 0) -> tuple:
    """The global batch: the same on every rank."""
    rng = np.random.default_rng(7 + salt)
    return tidal.tensor(rng.standard_normal((rows, IN))), tidal.tensor(rng.standard_normal((rows, OUT)))


def _share(t, rank: int, size: int):
    per = t.shape[0] // size
    return t[rank * per:(rank + 1) * per]


def _loss(model, x, y):
    return ((model(x) - y) ** 2).mean()


def _check(failures: list, what: str, got, want) -> None:
    try:
        np.testing.assert_allclose(got, want, **TOL)
    except AssertionError as exc:
        failures.append(f"{what}: {exc}")


def _compare_params(failures: list, what: str, ddp_model, plain) -> None:
    for (name, p), q in zip(ddp_model.module.named_parameters(), plain.parameters()):
        _check(failures, f"{what} {name}", p.detach().numpy(), q.detach().numpy())


# -- training equals one process on the whole batch -------------------------------------------------
def train_matches_full_batch(bucket_as_view: bool) -> list:
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    failures = []
    local = _mlp(seed=rank)   # every rank starts differently: DDP must send rank 0's values
    ddp = DDP(local, bucket_cap_mb=TINY_BUCKETS_MB, gradient_as_bucket_view=bucket_as_view)
    if len(ddp.reducer.buckets) < 3:
        failures.append(f"expected several buckets, got {len(ddp.reducer.buckets)}")
    reference = _copy_of(ddp.module)
    _compare_params(failures, "after construction vs rank 0", ddp, _mlp(seed=0))
    opt = tidal.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    ref_opt = tidal.optim.SGD(reference.parameters(), lr=0.1, momentum=0.9)
    for step in range(4):
        x, y = _batch(8 * size, salt=step)
        opt.zero_grad(set_to_none=step % 2 == 0)
        _loss(ddp, _share(x, rank, size), _share(y, rank, size)).backward()
        opt.step()
        ref_opt.zero_grad(set_to_none=step % 2 == 0)
        _loss(reference, x, y).backward()
        ref_opt.step()
    _compare_params(failures, "after training", ddp, reference)
    for p, q in zip(ddp.module.parameters(), reference.parameters()):
        _check(failures, "last grads", p.grad.numpy(), q.grad.numpy())
    return failures


def buckets_launch_during_backward() -> list:
    """Each bucket's all-reduce is queued as soon as its gradients exist, while backward still has
    gradients to compute (the overlap), last-registered parameters' bucket first."""
    from tidal.autograd import engine
    from tidal.comm import collectives
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    ddp = DDP(_mlp(seed=0), bucket_cap_mb=TINY_BUCKETS_MB)
    params = list(ddp.module.parameters())
    launches = []
    real = collectives.all_reduce

    def spy(tensor, *args, **kwargs):
        launches.append((tensor.numel(), sum(p.grad is None for p in params), bool(engine._final_callbacks)))
        return real(tensor, *args, **kwargs)
    collectives.all_reduce = spy
    try:
        x, y = _batch(2)
        _loss(ddp, x, y).backward()
    finally:
        collectives.all_reduce = real
    failures = []
    sizes = [b.flat.numel() for b in ddp.reducer.buckets]
    if [n for n, _, _ in launches] != sizes:
        failures.append(f"all-reduces of {[n for n, _, _ in launches]} elements, buckets of {sizes}")
    if not all(during for _, _, during in launches):
        failures.append("an all-reduce was queued after backward")
    if launches[0][1] == 0:
        failures.append("the first bucket waited for every gradient")
    return failures


def no_sync_accumulates() -> list:
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    failures = []
    ddp = DDP(_mlp(seed=rank), bucket_cap_mb=TINY_BUCKETS_MB)
    reference = _copy_of(ddp.module)
    micro = [_batch(4 * size, salt=10 + m) for m in range(3)]
    with ddp.no_sync():
        for x, y in micro[:2]:
            _loss(ddp, _share(x, rank, size), _share(y, rank, size)).backward()
    local = _copy_of(ddp.module)
    for x, y in micro[:2]:
        _loss(local, _share(x, rank, size), _share(y, rank, size)).backward()
    for p, q in zip(ddp.module.parameters(), local.parameters()):  # no_sync: still this rank's own sums
        _check(failures, "inside no_sync", p.grad.numpy(), q.grad.numpy())
    x, y = micro[2]
    _loss(ddp, _share(x, rank, size), _share(y, rank, size)).backward()
    for x, y in micro:
        _loss(reference, x, y).backward()
    for p, q in zip(ddp.module.parameters(), reference.parameters()):
        _check(failures, "accumulated then synced", p.grad.numpy(), q.grad.numpy())
    return failures


# -- unused parameters ----------------------------------------------------------------------------------
class _Branchy(nn.Module):
    """A trunk plus `extra` (used when `use_extra` says so) and `idle` (never used)."""

    def __init__(self):
        super().__init__()
        tidal.manual_seed(3)
        self.trunk = nn.Linear(IN, OUT).double()
        self.extra = nn.Linear(IN, OUT).double()
        self.idle = nn.Linear(IN, OUT).double()
        self.use_extra = True

    def forward(self, x):
        out = self.trunk(x)
        return out + self.extra(x) if self.use_extra else out


def find_unused() -> list:
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    failures = []
    model = _Branchy()
    model.use_extra = rank == 0           # extra: used by rank 0 only; idle: by nobody
    ddp = DDP(model, find_unused_parameters=True, bucket_cap_mb=TINY_BUCKETS_MB / 4)
    x, y = _batch(4 * size)
    for _ in range(2):  # a second iteration: the first one finished cleanly
        model.zero_grad()
        _loss(ddp, _share(x, rank, size), _share(y, rank, size)).backward()
    # expected: the average over ranks of each rank's own gradient (zeros where a rank did not use it)
    want = {}
    for r in range(size):
        twin = _Branchy()
        twin.use_extra = r == 0
        _loss(twin, _share(x, r, size), _share(y, r, size)).backward()
        for name, p in twin.named_parameters():
            g = p.grad.numpy() if p.grad is not None else np.zeros(tuple(p.shape))
            want[name] = want.get(name, 0) + g / size
    for name, p in model.named_parameters():
        if name.startswith("idle"):
            if p.grad is not None:
                failures.append(f"{name}: unused on every rank, but got a .grad")
        elif p.grad is None:
            failures.append(f"{name}: no .grad")
        else:
            _check(failures, name, p.grad.numpy(), want[name])
    return failures


def unused_without_find_unused() -> str:
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    ddp = DDP(_Branchy())
    x, y = _batch(2 * size)
    _loss(ddp, x, y).backward()            # idle's weight and bias (indices 4 and 5) get no gradient
    try:
        ddp(x)
    except RuntimeError as exc:
        return str(exc)
    return "no error"


# -- buffers, state, errors -------------------------------------------------------------------------------
def buffers_follow_rank0(broadcast: bool) -> list:
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    failures = []
    tidal.manual_seed(rank)
    model = nn.Sequential(nn.Linear(IN, 4), nn.BatchNorm1d(4)).double()
    model[1].running_mean.fill_(float(rank + 5))     # construction sends rank 0's buffers
    ddp = DDP(model, broadcast_buffers=broadcast)
    _check(failures, "buffer after construction", model[1].running_mean.numpy(), np.full(4, 5.0))
    model[1].running_mean.fill_(float(rank + 1))
    x = _share(_batch(4 * size)[0], rank, size)
    with tidal.no_grad():
        batch_mean = model[0](x).mean(0).numpy()
    ddp(x).sum().backward()
    start = 1.0 if broadcast else float(rank + 1)     # each forward first takes rank 0's buffers
    _check(failures, "running_mean after forward", model[1].running_mean.numpy(), 0.9 * start + 0.1 * batch_mean)
    return failures


def state_and_errors() -> list:
    from tidal.nn.parallel import DistributedDataParallel as DDP
    rank, size = _me()
    failures = []
    model = _mlp(seed=0)
    ddp = DDP(model)
    if ddp.module is not model:
        failures.append(".module is not the wrapped module")
    keys = list(ddp.state_dict())
    if keys != ["module." + k for k in model.state_dict()]:
        failures.append(f"state_dict keys {keys}")
    checks = [
        (lambda: DDP(_mlp(0), device_ids=[0]), ValueError, "device_ids and output_device arguments only work"),
        (lambda: DDP(nn.ReLU()), RuntimeError, "doesn't have any parameter that requires a gradient"),
        (lambda: DDP(nn.Linear(2 + rank, 2)), RuntimeError, "appears not to match sizes of the same param"),
    ]
    expect_errors(failures, checks)
    return failures


def sampler_from_group() -> list:
    from tidal.utils.data import DistributedSampler
    rank, size = _me()
    sampler = DistributedSampler(range(10))
    failures = []
    if (sampler.rank, sampler.num_replicas) != (rank, size):
        failures.append(f"sampler rank/replicas {(sampler.rank, sampler.num_replicas)}")
    return failures
