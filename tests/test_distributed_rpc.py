"""torch.distributed.rpc on 2 CPU workers against torch's TensorPipe RPC (torchrun): calls by name, id and
WorkerInfo, futures, remote errors and torch's messages, RRefs and their method proxies, RRefs passed on, nested
calls, @async_execution, a module living on the other worker (scripts/rpc_basics.py); a parameter server trained
over RPC (scripts/rpc_parameter_server.py); distributed autograd and DistributedOptimizer
(scripts/rpc_dist_autograd.py). The encoding refuses what it cannot send without pickle."""
import numpy as np
import pytest

from script_runs import against_torch

pytestmark = pytest.mark.timeout(300)


def test_rpc_calls_and_rrefs_like_torch(tmp_path):
    expected, got = against_torch(tmp_path, "rpc_basics", torch_ranks=2)
    assert expected.pop("framework") == "torch" and got.pop("framework") != "torch"
    assert got == expected


def test_parameter_server_like_torch(tmp_path):
    expected, got = against_torch(tmp_path, "rpc_parameter_server", torch_ranks=2)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["weights"], expected["weights"], rtol=1e-5, atol=1e-6)


def test_distributed_autograd_like_torch(tmp_path):
    """dist_autograd.context/backward/get_gradients across both workers and a DistributedOptimizer over the
    parameters of both, then an RRef pipeline (remote() outputs fetched with to_here() by the next shard): the
    same losses, local gradients and final weights as torch's."""
    expected, got = against_torch(tmp_path, "rpc_dist_autograd", torch_ranks=2)
    np.testing.assert_allclose(got["losses"], expected["losses"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["weights"], expected["weights"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["pipeline_losses"], expected["pipeline_losses"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["pipeline_weights"], expected["pipeline_weights"], rtol=1e-5, atol=1e-5)
    for mine, theirs in zip(got["local"], expected["local"]):
        assert mine[0] == theirs[0] and mine[3] == theirs[3]  # (gradients of x, head.weight, head.bias; no .grad)
        np.testing.assert_allclose(mine[1:3], theirs[1:3], rtol=1e-4, atol=1e-5)


def test_encoding_refuses_what_pickle_would_need():
    import pickle

    from tidal.distributed import rpc
    with pytest.raises(pickle.PicklingError, match="Can't pickle <function"):
        rpc.encode(lambda v: v)
    with pytest.raises(TypeError, match="cannot send a value of type"):
        rpc.encode(object())
    import tidal
    t = tidal.arange(6.0).reshape(2, 3)
    back = rpc.decode(rpc.encode({"t": t, "xs": [1, (2.5, "s")], "d": tidal.int32, "set": {1, "a"},
                                  "frozen": frozenset({2})}))
    assert back["xs"] == [1, (2.5, "s")] and back["d"] is tidal.int32
    assert back["set"] == {1, "a"} and back["frozen"] == frozenset({2}) and isinstance(back["frozen"], frozenset)
    np.testing.assert_array_equal(np.asarray(back["t"].tolist()), np.asarray(t.tolist()))
    # a module travels whole (as pytorch/examples' batch parameter server sends its model): parameters stay
    # Parameters, buffers and the non-persistent set come back
    model = tidal.nn.Sequential(tidal.nn.Linear(3, 2), tidal.nn.BatchNorm1d(2))
    copy = rpc.decode(rpc.encode(model))
    assert [n for n, _ in copy.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert all(type(p) is tidal.nn.Parameter and p.requires_grad for p in copy.parameters())
    x = tidal.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(np.asarray(copy(x).tolist()), np.asarray(model(x).tolist()), rtol=1e-6)
