"""pytorch/examples' distributed/FSDP2/example.py way of building a model: meta device, fully_shard, to_empty, a
tensor lr, and torch.distributed.checkpoint.state_dict._init_optim_state. tests/scripts/fsdp_meta_init.py runs on 2
ranks under `python -m tidal.comm.launch -m tidal.compat` and must print the losses real torch prints for it in one
process (a 1-rank mesh)."""
import numpy as np
import pytest
import torch

import tidal.compat as tc

import script_runs


@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_meta_device_fsdp2_on_2_ranks_follows_torch(tmp_path):
    expected, got = script_runs.against_torch(tmp_path, "fsdp_meta_init")
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"
    assert got.pop("world_size") == 2 and expected.pop("world_size") == 1
    np.testing.assert_allclose(got.pop("losses"), expected.pop("losses"), rtol=1e-5, atol=1e-6)
    assert got == expected  # placements, meta then cpu, Adam's state made, the tensor lr kept


def test_optimizer_state_dict_keeps_a_tensor_lr():
    """get_optimizer_state_dict makes a fresh optimizer's state with an lr-0 step; a tensor lr must come back
    unchanged (it was zeroed in place, so training stopped)."""
    import torch.distributed.checkpoint.state_dict as theirs

    import tidal.distributed.checkpoint.state_dict as ours
    for L, S in ((torch, theirs), (tc, ours)):
        model = L.nn.Linear(2, 2)
        optimizer = L.optim.Adam(model.parameters(), lr=L.tensor(0.1))
        before = [p.detach().clone() for p in model.parameters()]
        state = S.get_optimizer_state_dict(model, optimizer)
        assert float(optimizer.param_groups[0]["lr"]) == pytest.approx(0.1), L.__name__
        assert len(state["state"]) == 2 and all(p.grad is None for p in model.parameters())
        assert all(bool((a == b).all()) for a, b in zip(before, model.parameters()))


@pytest.mark.parametrize("with_grad", [False, True])
def test_init_optim_state_as_torch(with_grad):
    """torch's private _init_optim_state: nothing when a parameter already has a gradient, else an lr-0 step."""
    import torch.distributed.checkpoint.state_dict as theirs

    import tidal.distributed.checkpoint.state_dict as ours
    sizes = []
    for L, S in ((torch, theirs), (tc, ours)):
        model = L.nn.Linear(2, 2)
        optimizer = L.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        if with_grad:
            model(L.ones(1, 2)).sum().backward()
        S._init_optim_state(optimizer)
        sizes.append((len(optimizer.state), [p.grad is None for p in model.parameters()],
                      optimizer.param_groups[0]["lr"]))
    assert sizes[1] == sizes[0]
