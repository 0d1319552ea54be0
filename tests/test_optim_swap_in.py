"""torch.optim.swap_in_optimizer_params_and_state compared with torch 2.13's."""
import numpy as np
import pytest
import torch

import tidal.compat as tc


def _program(lib):
    w = lib.nn.Parameter(lib.tensor([1.0, 2.0]))
    opt = lib.optim.Adam([w], lr=0.1)
    w.grad = lib.tensor([0.5, -0.5])
    opt.step()
    snapshot = opt.state_dict()
    other = {"w": lib.nn.Parameter(lib.tensor([10.0, 20.0]))}
    swap_state = {"state": {0: {k: (v.clone() if isinstance(v, lib.Tensor) else v)
                                for k, v in snapshot["state"][0].items()}},
                  "param_groups": [dict(snapshot["param_groups"][0], lr=1.0)]}
    live_params = opt.param_groups[0]["params"]
    with lib.optim.swap_in_optimizer_params_and_state(opt, other, swap_state):
        assert opt.param_groups[0]["params"][0] is other["w"] and opt.param_groups[0]["lr"] == 1.0
        other["w"].grad = lib.tensor([1.0, 1.0])
        opt.step()
    assert opt.param_groups[0]["params"] is live_params and opt.param_groups[0]["lr"] == 0.1
    errors = []
    for bad in ({"state": [], "param_groups": []}, {"state": {}, "param_groups": {}}, "x",
                {"state": {0: {}, 7: {}}, "param_groups": [dict(snapshot["param_groups"][0])]}):
        with pytest.raises(RuntimeError) as e:
            with lib.optim.swap_in_optimizer_params_and_state(opt, other, bad):
                pass
        errors.append(str(e.value))
    return (other["w"].detach().numpy().tolist(), w.detach().numpy().tolist(),
            swap_state["state"][0]["exp_avg"].numpy().tolist(), int(opt.state[w]["step"]), errors)


def test_swap_in_optimizer_params_and_state_as_torch():
    ref, mine = _program(torch), _program(tc)
    np.testing.assert_allclose(mine[0], ref[0], rtol=1e-6)
    np.testing.assert_allclose(mine[1], ref[1], rtol=1e-6)
    np.testing.assert_allclose(mine[2], ref[2], rtol=1e-6)
    assert mine[3:] == ref[3:]


def test_swap_in_needs_initialized_state():
    for lib in (torch, tc):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(2))], lr=0.1)
        with pytest.raises(RuntimeError, match="requires initialized optimizer state"):
            with lib.optim.swap_in_optimizer_params_and_state(opt, {}, {}):
                pass
