"""Rank side of tests/test_dtensor_norm_s16.py: layer_norm and group_norm on DTensors (sequence parallelism's
Shard of a leading dim), returning what the test compares with torch."""
import numpy as np

import tidal
from comm_ranks import _me


def norms_on_shards(x_full: np.ndarray, w: np.ndarray, b: np.ndarray, g_full: np.ndarray, gn_full: np.ndarray) -> dict:
    """layer_norm over the last dim of x split on dim 1 (with a Replicate weight and bias) and over the last two dims
    of x split on dim 0; group_norm of an input split on the batch dim: placements, local shapes, global values
    and gradients."""
    from tidal.distributed import tensor as D
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    x = D.distribute_tensor(tidal.tensor(x_full), mesh, [D.Shard(1)]).requires_grad_()
    weight = D.distribute_tensor(tidal.tensor(w), mesh, [D.Replicate()]).requires_grad_()
    bias = D.distribute_tensor(tidal.tensor(b), mesh, [D.Replicate()]).requires_grad_()
    y = tidal.nn.functional.layer_norm(x, (x_full.shape[-1],), weight, bias)
    (y * D.distribute_tensor(tidal.tensor(g_full), mesh, [D.Shard(1)])).sum().backward()
    two = tidal.nn.functional.layer_norm(D.distribute_tensor(tidal.tensor(x_full), mesh, [D.Shard(0)]),
                                         tuple(x_full.shape[1:]))
    gn = tidal.nn.functional.group_norm(D.distribute_tensor(tidal.tensor(gn_full), mesh, [D.Shard(0)]), 2)
    full = lambda t: t.full_tensor().detach().numpy()   # noqa: E731
    return {"placements": [str(t.placements) for t in (y, two, gn)],
            "local_shape": tuple(y.to_local().shape),
            "y": full(y), "two": full(two), "gn": full(gn),
            "gx": full(x.grad), "gw": full(weight.grad), "gb": full(bias.grad)}
