"""layer_norm and group_norm on DTensors keep the input's shard as torch's DTensor does (sequence parallelism:
a LayerNorm on activations split along the sequence dim stays split, rather than all-gathering the activations
and returning a Replicate result whose to_local() is the whole tensor); values and gradients equal torch's."""
import numpy as np
import pytest
import torch

import dtensor_norm_ranks_s16 as R



@pytest.mark.timeout(120)
def test_layer_norm_and_group_norm_keep_the_shard_as_torch(pool):
    rng = np.random.default_rng(5)
    x, g = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 4, 6))
    w, b = rng.standard_normal(6), rng.standard_normal(6)
    gn_in = rng.standard_normal((4, 6, 3))
    xt = torch.tensor(x, requires_grad=True)
    wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    y = torch.nn.functional.layer_norm(xt, (6,), wt, bt)
    (y * torch.tensor(g)).sum().backward()
    want = {"y": y.detach().numpy(), "two": torch.nn.functional.layer_norm(torch.tensor(x), (4, 6)).numpy(),
            "gn": torch.nn.functional.group_norm(torch.tensor(gn_in), 2).numpy(),
            "gx": xt.grad.numpy(), "gw": wt.grad.numpy(), "gb": bt.grad.numpy()}
    for got in pool.run(R.norms_on_shards, x, w, b, g, gn_in, timeout=100):
        # torch's DTensor: (Shard(dim=1),) for the sequence-parallel norm, Shard(0) for the others
        assert got["placements"] == ["(Shard(dim=1),)", "(Shard(dim=0),)", "(Shard(dim=0),)"]
        assert got["local_shape"] == (2, 2, 6)
        for key, value in want.items():
            np.testing.assert_allclose(got[key], value, rtol=1e-10, atol=1e-12, err_msg=key)
