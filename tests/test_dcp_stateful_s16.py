"""torch.distributed.checkpoint with Stateful objects (the DCP tutorial's AppState), the default planners and the
deprecated save_state_dict/load_state_dict, and format_utils (dcp_to_torch_save, torch_save_to_dcp), compared
with real torch: one process (no_dist) and, through
tests/scripts/dcp_stateful.py, 2 tidal ranks against 2 torch ranks on gloo."""
import warnings

import numpy as np
import pytest
import torch
import torch.distributed.checkpoint as tdcp

import script_runs
import tidal
import tidal.distributed.checkpoint as dcp
from tidal import nn
from tidal.distributed.checkpoint.default_planner import DefaultLoadPlanner, DefaultSavePlanner
from tidal.distributed.checkpoint.stateful import Stateful



def test_stateful_protocol_as_torch():
    class Counter:
        def state_dict(self):
            return {}

        def load_state_dict(self, sd):
            pass
    lin = nn.Linear(2, 2)
    for obj, want in ((lin, True), (tidal.optim.SGD(lin.parameters(), lr=0.1), True), (Counter(), True),
                      ({"a": 1}, False), (tidal.zeros(2), False)):
        assert isinstance(obj, Stateful) is want, obj
    assert isinstance(torch.nn.Linear(2, 2), tdcp.stateful.Stateful)


class _App:
    """The tutorial's AppState over either library (duck-typed Stateful, as torch accepts)."""

    def __init__(self, lib_sd, model, optimizer):
        self.sd, self.model, self.optimizer = lib_sd, model, optimizer

    def state_dict(self):
        m, o = self.sd.get_state_dict(self.model, self.optimizer)
        return {"model": m, "optim": o}

    def load_state_dict(self, state_dict):
        self.sd.set_state_dict(self.model, self.optimizer, model_state_dict=state_dict["model"],
                               optim_state_dict=state_dict["optim"])


def _resume(lib, lib_dcp, lib_sd, path) -> tuple:
    rng = np.random.default_rng(0)
    weights = [rng.standard_normal(s).astype(np.float32) for s in ((5, 4), (5,), (3, 5), (3,))]
    data = [lib.tensor(rng.standard_normal((6, 4)).astype(np.float32)) for _ in range(6)]

    def model_and_opt(shift):
        m = lib.nn.Sequential(lib.nn.Linear(4, 5), lib.nn.Tanh(), lib.nn.Linear(5, 3))
        with lib.no_grad():
            for p, w in zip(m.parameters(), weights):
                p.copy_(lib.tensor(w + shift))
        return m, lib.optim.Adam(m.parameters(), lr=0.05)

    def train(m, opt, batches):
        out = []
        for x in batches:
            opt.zero_grad()
            loss = m(x).pow(2).mean()
            loss.backward()
            opt.step()
            out.append(loss.item())
        return out
    m, opt = model_and_opt(0.0)
    losses = train(m, opt, data[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # torch warns that no process group is initialized
        lib_dcp.save({"app": _App(lib_sd, m, opt), "step": 3, "tag": "run"}, checkpoint_id=str(path))
        m2, opt2 = model_and_opt(1.0)
        state = {"app": _App(lib_sd, m2, opt2), "step": 0, "tag": ""}
        lib_dcp.load(state, checkpoint_id=str(path))
    losses += train(m2, opt2, data[3:])
    return losses, state["step"], state["tag"], [p.detach().numpy() for p in m2.parameters()]


def test_stateful_save_load_resumes_training_as_torch(tmp_path):
    import torch.distributed.checkpoint.state_dict as tsd

    import tidal.distributed.checkpoint.state_dict as sd
    want = _resume(torch, tdcp, tsd, tmp_path / "torch")
    got = _resume(tidal, dcp, sd, tmp_path / "tidal")
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6)
    assert got[1:3] == want[1:3] == (3, "run")
    for a, b in zip(got[3], want[3]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_module_as_stateful_value_and_partial_load(tmp_path):
    a, b = nn.Linear(3, 2), nn.Linear(3, 2)
    dcp.save({"net": a}, checkpoint_id=str(tmp_path))
    with pytest.raises(RuntimeError, match="Missing key in checkpoint state_dict: extra."):
        dcp.load({"net": b, "extra": tidal.zeros(2)}, checkpoint_id=str(tmp_path))
    extra = tidal.ones(2)
    dcp.load({"net": b, "extra": extra}, checkpoint_id=str(tmp_path),
             planner=DefaultLoadPlanner(allow_partial_load=True))
    assert tidal.equal(b.weight, a.weight) and tidal.equal(b.bias, a.bias)
    assert extra.tolist() == [1.0, 1.0]
    dcp.save({"net": a}, checkpoint_id=str(tmp_path / "x"), planner=DefaultSavePlanner())


def test_custom_planners_refused_and_deprecated_names_warn(tmp_path):
    class Mine(DefaultLoadPlanner):
        pass
    with pytest.raises(NotImplementedError, match=r"load\(\): custom planners \(Mine\)"):
        dcp.load({"x": tidal.zeros(1)}, checkpoint_id=str(tmp_path), planner=Mine())
    with pytest.raises(NotImplementedError, match=r"save\(\): custom planners \(DefaultLoadPlanner\)"):
        dcp.save({"x": tidal.zeros(1)}, checkpoint_id=str(tmp_path), planner=DefaultLoadPlanner())
    with pytest.warns(FutureWarning, match="`save_state_dict` is deprecated"):
        dcp.save_state_dict({"x": tidal.arange(3.0)}, dcp.FileSystemWriter(str(tmp_path)), no_dist=True)
    x = tidal.zeros(3)
    with pytest.warns(FutureWarning, match="`load_state_dict` is deprecated"):
        dcp.load_state_dict({"x": x}, dcp.FileSystemReader(str(tmp_path)), no_dist=True)
    assert x.tolist() == [0.0, 1.0, 2.0]


def test_format_utils_round_trip_and_real_torch_reads_the_file(tmp_path):
    from tidal.distributed.checkpoint.format_utils import dcp_to_torch_save, torch_save_to_dcp
    m = nn.Linear(3, 2)
    opt = tidal.optim.Adam(m.parameters())
    m(tidal.ones(1, 3)).sum().backward()
    opt.step()
    sd = {"model": m.state_dict(), "optim": opt.state_dict(), "step": 3, "mix": [tidal.ones(2), 5], "name": "x"}
    dcp.save(sd, checkpoint_id=str(tmp_path / "c"))
    dcp_to_torch_save(str(tmp_path / "c"), str(tmp_path / "full.pt"))
    theirs = torch.load(str(tmp_path / "full.pt"), weights_only=False)   # real torch reads it
    assert list(theirs) == ["model", "optim", "step", "mix", "name"] and (theirs["step"], theirs["name"]) == (3, "x")
    assert list(theirs["optim"]["state"]) == ["0", "1"]    # torch's flattening spells int keys as str
    assert theirs["mix"][1] == 5 and torch.equal(theirs["mix"][0], torch.ones(2))
    assert theirs["optim"]["param_groups"][0]["params"] == [0, 1]
    np.testing.assert_array_equal(theirs["model"]["weight"].numpy(), m.weight.detach().numpy())
    np.testing.assert_array_equal(theirs["optim"]["state"]["1"]["exp_avg"].numpy(),
                                  opt.state_dict()["state"][1]["exp_avg"].numpy())
    torch.save({"w": torch.arange(6.0).reshape(2, 3), "n": 4}, str(tmp_path / "in.pt"))
    torch_save_to_dcp(str(tmp_path / "in.pt"), str(tmp_path / "c2"))
    back = {"w": tidal.zeros(2, 3), "n": 0}
    dcp.load(back, checkpoint_id=str(tmp_path / "c2"))
    assert back["w"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]] and back["n"] == 4
    old = tmp_path / "c"
    import json
    meta = json.loads((old / ".metadata").read_text())
    for entry in meta["entries"].values():
        del entry["path"]
    (old / ".metadata").write_text(json.dumps(meta))
    with pytest.raises(RuntimeError, match="does not record how its keys nest"):
        dcp_to_torch_save(str(old), str(tmp_path / "x.pt"))


@pytest.mark.timeout(2 * script_runs.TIMEOUT_S)
def test_dcp_tutorial_script_on_2_ranks_as_torch_on_2_ranks(tmp_path):
    expected, got = script_runs.against_torch(tmp_path, "dcp_stateful", torch_ranks=2)
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"
    assert got["step"] == expected["step"] == 3 and got["same"] and expected["same"]
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    # dcp_to_torch_save of the sharded checkpoint: the whole tensors, nested as torch nests them
    assert got["layout"] == expected["layout"] == {"step": 3} and got["groups"] == expected["groups"] == 1
    assert sorted(got["whole"]) == sorted(expected["whole"]) and sorted(got["moments"]) == sorted(expected["moments"])
    for name, (shape, total) in expected["whole"].items():
        assert got["whole"][name][0] == shape
        np.testing.assert_allclose(got["whole"][name][1], total, rtol=1e-5, atol=1e-6)
    for name, total in expected["moments"].items():
        np.testing.assert_allclose(got["moments"][name], total, rtol=1e-5, atol=1e-6)
