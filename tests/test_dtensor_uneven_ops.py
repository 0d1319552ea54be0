"""Ops on unevenly sharded DTensors run on the local shards, as torch's DTensor runs them: elementwise
ops, reductions, softmax-like ops, views and matmul keep Shard or give Partial without gathering, and
the output placements, global shapes, local tensors and values are torch's. The expected placements
and local tensors come from torch's DTensor on a fake two-rank process group in this process (it
computes the local ops for real; its collectives move nothing, so only its Shard/Partial local tensors
are compared); whole values from plain torch. The rank side is uneven_ops_ranks.py."""
import numpy as np
import pytest
import torch

import uneven_ops_ranks as U

SIZE = 2
FULL = (np.arange(15, dtype=np.float64).reshape(5, 3) - 4.5) * np.array([1.0, -0.5, 0.25])


def _names(x, full: np.ndarray, wrap) -> dict:
    names = {"torch": torch, "x": x}
    names.update({k: wrap(torch.tensor(v)) for k, v in U.inputs(full).items()})
    return names


def _torch_dtensor_results(full: np.ndarray, dim: int, exprs: list = U.OPS) -> list:
    """Per rank, torch's DTensor placements, global shape and local tensor of every expression in `exprs`."""
    import torch.distributed as dist
    from torch.distributed.tensor import DTensor, Replicate, Shard, init_device_mesh
    from torch.testing._internal.distributed.fake_pg import FakeStore
    ranks = []
    for rank in range(SIZE):
        dist.init_process_group("fake", store=FakeStore(), rank=rank, world_size=SIZE)
        try:
            mesh = init_device_mesh("cpu", (SIZE,))
            local = torch.tensor(full).chunk(SIZE, dim)[rank]
            x = DTensor.from_local(local, mesh, [Shard(dim)], shape=full.shape, stride=(full.shape[1], 1))
            names = _names(x, full, lambda t: DTensor.from_local(t, mesh, [Replicate()]))
            with torch.no_grad():
                ranks.append({e: (repr(r.placements), tuple(r.shape), r.to_local().numpy())
                              for e in exprs for r in [eval(e, names)]})
        finally:
            dist.destroy_process_group()
    return ranks


@pytest.mark.timeout(120)
@pytest.mark.parametrize("dim", [0, 1], ids=["Shard0-3-2", "Shard1-2-1"])
def test_ops_on_uneven_shards_run_locally_as_torch(pool, dim):
    theirs = _torch_dtensor_results(FULL, dim)
    whole = _names(torch.tensor(FULL), FULL, lambda t: t)
    for rank, ours in enumerate(pool.run(U.uneven_ops, FULL, dim, timeout=100)):
        for expr in U.OPS:
            got, (placements, shape, local) = ours[expr], theirs[rank][expr]
            assert (got["placements"], got["shape"]) == (placements, shape), (rank, expr)
            np.testing.assert_allclose(got["full"], eval(expr, whole).numpy(), rtol=1e-12, atol=1e-12,
                                       err_msg=expr)
            if placements == "(Replicate(),)":   # torch gathers x for these: so does tidal, once
                assert got["steps"] == [f"S({dim})->B"], (rank, expr, got["steps"])
            else:                                 # Shard/Partial: the op ran on the local shard alone
                assert got["steps"] == [], (rank, expr, got["steps"])
                np.testing.assert_allclose(got["local"], local, rtol=1e-12, atol=1e-12, err_msg=f"{rank} {expr}")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("full", [FULL, np.round(FULL / 4), FULL[:4, :2]], ids=["distinct", "ties", "even"])
def test_gradients_reach_uneven_shards_as_torch(pool, full):
    """Losses through local ops on uneven shards: torch's values and gradients (on the ties of a max shared
    across ranks, and through zeros of a product, too), and torch's placements for reductions of a shard that
    requires grad; an even split too (mean over it is Partial("avg"))."""
    for dim in (0, 1):
        placements = _torch_dtensor_results(full, dim, U.RECORDED)[0]
        grads = {}
        for expr in U.LOSSES:
            x = torch.tensor(full, requires_grad=True)
            loss = eval(expr, _names(x, full, lambda t: t))
            loss.backward()
            grads[expr] = (loss.item(), x.grad.chunk(SIZE, dim))
        for rank, ours in enumerate(pool.run(U.uneven_grads, full, dim, timeout=100)):
            for expr, (value, parts) in grads.items():
                assert ours[expr]["value"] == pytest.approx(value, rel=1e-12), (dim, expr)
                np.testing.assert_allclose(ours[expr]["grad"], parts[rank].numpy(), rtol=1e-12, atol=1e-14,
                                           err_msg=f"{dim} {rank} {expr}")
            assert ours["recorded"] == {e: placements[e][0] for e in U.RECORDED}, dim
