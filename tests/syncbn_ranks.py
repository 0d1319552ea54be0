"""Rank-side functions for the SyncBatchNorm test in tests/test_nn_surface.py (run on comm_ranks.RankPool's
ranks). Each rank holds a different, unevenly sized share of one global batch; SyncBatchNorm there must equal
plain BatchNorm on the whole batch: outputs, input gradients, summed parameter gradients, running statistics.
No pytest import: ranks start fast."""
import numpy as np

import tidal
from tidal import comm, nn

TOL = dict(rtol=1e-10, atol=1e-12)


def _check(failures: list, what: str, got, want) -> None:
    try:
        np.testing.assert_allclose(got, want, **TOL)
    except AssertionError as exc:
        failures.append(f"{what}: {exc}")


def _pair(shape_tail: tuple, momentum):
    rng = np.random.default_rng(5)
    channels = shape_tail[0]
    weight, bias = rng.standard_normal(channels), rng.standard_normal(channels)
    sync = nn.SyncBatchNorm(channels, momentum=momentum).double()
    plain = (nn.BatchNorm1d if len(shape_tail) <= 2 else nn.BatchNorm2d)(channels, momentum=momentum).double()
    for m in (sync, plain):
        with tidal.no_grad():
            m.weight.copy_(tidal.tensor(weight))
            m.bias.copy_(tidal.tensor(bias))
    return sync, plain


def sync_batch_norm_matches_full_batch(shape_tail: tuple, momentum) -> list:
    """Two training steps and one eval step on this rank's share against the whole batch in one process."""
    rank, size = comm.get_rank(), comm.get_world_size()
    rows = [2 + r for r in range(size)]            # uneven shares: the counts must be summed, not assumed
    start, stop = sum(rows[:rank]), sum(rows[:rank + 1])
    sync, plain = _pair(shape_tail, momentum)
    failures = []
    for step in range(2):
        rng = np.random.default_rng(10 + step)
        full = rng.standard_normal((sum(rows),) + shape_tail)
        upstream = rng.standard_normal(full.shape)
        x = tidal.tensor(full[start:stop]).requires_grad_(True)
        xf = tidal.tensor(full).requires_grad_(True)
        out, out_full = sync(x), plain(xf)
        (out * tidal.tensor(upstream[start:stop])).sum().backward()
        (out_full * tidal.tensor(upstream)).sum().backward()
        _check(failures, f"step {step} output", out.detach().numpy(), out_full.detach().numpy()[start:stop])
        _check(failures, f"step {step} input grad", x.grad.numpy(), xf.grad.numpy()[start:stop])
        for name in ("weight", "bias"):
            grad = getattr(sync, name).grad.clone()
            comm.all_reduce(grad)
            _check(failures, f"step {step} {name} grad", grad.numpy(), getattr(plain, name).grad.numpy())
            getattr(sync, name).grad, getattr(plain, name).grad = None, None
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            _check(failures, f"step {step} {name}", getattr(sync, name).numpy(), getattr(plain, name).numpy())
    sync.eval()
    plain.eval()
    probe = np.random.default_rng(rank).standard_normal((3,) + shape_tail)
    _check(failures, "eval output", sync(tidal.tensor(probe)).detach().numpy(),
           plain(tidal.tensor(probe)).detach().numpy())
    return failures
