"""torch.distributed and torch.nn.parallel.DistributedDataParallel under tidal.compat: the names map
onto tidal.comm and tidal.nn.parallel; collectives spelled as PyTorch scripts spell them run on real
ranks (comm_ranks.RankPool; the rank side is check_ranks.py); init_process_group and friends run
in ranks started by `python -m tidal.comm.launch -m tidal.compat`."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest

import check_ranks as K
import tidal.compat as tc
from comm_ranks import RankPool

dist = tc.distributed


def _missing(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is None
    except ModuleNotFoundError:
        return True


@pytest.fixture(scope="module", params=[2, 3], ids=["2ranks", "3ranks"])
def ranks(request):
    pool = RankPool(request.param)
    yield pool
    pool.close()


# -- without a process group -------------------------------------------------------------------------
def test_names_are_tidal_comms():
    from tidal import comm
    for name in ("all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                 "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send", "recv", "isend", "irecv",
                 "barrier", "new_group", "get_rank", "get_world_size", "get_backend", "destroy_process_group",
                 "ReduceOp", "Work", "ProcessGroup"):
        assert getattr(dist, name) is getattr(comm, name), name
    assert set(dist.__all__) <= set(dir(dist))
    with pytest.raises(AttributeError, match="has no attribute 'no_such_name'"):
        dist.no_such_name
    assert repr(dist.ReduceOp.SUM) == "<RedOpType.SUM: 0>"


def test_availability_and_backends():
    assert dist.is_available() and not dist.is_initialized()
    assert dist.is_gloo_available() and dist.is_backend_available("gloo") and dist.is_backend_available("GLOO")
    assert not (dist.is_nccl_available() or dist.is_mpi_available() or dist.is_ucc_available())
    assert dist.Backend("GLOO") == dist.Backend.GLOO == "gloo" and isinstance(dist.Backend("nccl"), str)
    with pytest.raises(ValueError, match="must be string-ish"):
        dist.Backend(3)
    assert dist.group.WORLD is None and dist.GroupMember.WORLD is None
    assert dist.GroupMember.NON_GROUP_MEMBER == -100
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        dist.get_world_size()


@pytest.mark.parametrize("backend, name", [("nccl", "NCCL"), ("cpu:gloo,cuda:nccl", "NCCL"), ("mpi", "MPI")])
def test_backends_a_cpu_torch_lacks(backend, name):
    with pytest.raises(RuntimeError, match=f"Distributed package doesn't have {name} built in"):
        dist.init_process_group(backend)
    assert not dist.is_initialized()


def test_torchelastic_launched_follows_the_environment(monkeypatch):
    monkeypatch.delenv("TORCHELASTIC_RUN_ID", raising=False)
    assert not dist.is_torchelastic_launched()
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")
    assert dist.is_torchelastic_launched()


def test_import_compat_leaves_comm_unimported():
    code = "import sys, tidal.compat as t; t.distributed.is_available(); print('tidal.comm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


@pytest.mark.skipif(_missing("tidal.nn.parallel"), reason="needs tidal.nn.parallel")
def test_ddp_is_tidals():
    from tidal.nn.parallel import DistributedDataParallel
    assert tc.nn.parallel.DistributedDataParallel is DistributedDataParallel
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        tc.nn.parallel.DistributedDataParallel(tc.nn.Linear(1, 1))


@pytest.mark.skipif(_missing("tidal.utils.data.distributed"), reason="needs tidal.utils.data.distributed")
def test_distributed_sampler_resolves_through_import_torch(tmp_path):
    code = ("import tidal.compat; tidal.compat.install()\n"
            "import torch.utils.data.distributed as d\nfrom torch.utils.data.distributed import DistributedSampler\n"
            "import tidal.utils.data.distributed as t\n"
            "print(d is t, DistributedSampler is t.DistributedSampler)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert out.stdout.split() == ["True", "True"], out.stderr


# -- on real ranks ---------------------------------------------------------------------------------------
@pytest.mark.timeout(60)
def test_collectives_spelled_as_torch(ranks):
    failures = ranks.run(K.compat_collectives, timeout=50)
    assert failures == [[]] * ranks.size


@pytest.mark.timeout(60)
@pytest.mark.skipif(_missing("tidal.nn.parallel"), reason="needs tidal.nn.parallel")
def test_ddp_averages_gradients(ranks):
    assert ranks.run(K.compat_ddp_step, timeout=50) == [[]] * ranks.size


INIT_SCRIPT = """
import json
import torch
import torch.distributed as dist

out = {"before": [dist.is_available(), dist.is_initialized(), dist.is_torchelastic_launched(),
                  dist.group.WORLD is None]}
try:
    dist.init_process_group("nccl")
except RuntimeError as exc:
    out["nccl"] = str(exc)
dist.init_process_group(backend="GLOO", init_method="env://")
out["init"] = [dist.is_initialized(), dist.get_backend(), dist.get_rank(), dist.get_world_size()]
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
out["sum"] = t.item()
dist.destroy_process_group()
out["after"] = dist.is_initialized()
print(json.dumps(out))
"""


@pytest.mark.timeout(90)
def test_init_and_destroy_under_the_launcher(tmp_path):
    script = tmp_path / "init_script.py"
    script.write_text(INIT_SCRIPT)
    proc = subprocess.run([sys.executable, "-m", "tidal.comm.launch", "--nproc-per-node", "2", "-m", "tidal.compat",
                           str(script)], capture_output=True, text=True, timeout=80, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = sorted(line for line in proc.stdout.splitlines() if line.startswith("[rank "))
    assert len(lines) == 2, proc.stdout
    for rank, line in enumerate(lines):
        assert line.startswith(f"[rank {rank}] ")
        out = json.loads(line.split("] ", 1)[1])
        assert out["before"] == [True, False, True, True]
        assert out["nccl"] == "Distributed package doesn't have NCCL built in"
        assert out["init"] == [True, "gloo", rank, 2]
        assert out["sum"] == 3.0 and out["after"] is False


@pytest.mark.timeout(60)
def test_launcher_runs_a_command_with_no_python(tmp_path):
    script = tmp_path / "show.sh"
    script.write_text("#!/bin/sh\necho \"$RANK/$WORLD_SIZE $TORCHELASTIC_RUN_ID $1\"\n")
    os.chmod(script, 0o755)
    proc = subprocess.run([sys.executable, "-m", "tidal.comm.launch", "--nproc-per-node", "2", "--no-python",
                           str(script), "arg"], capture_output=True, text=True, timeout=50, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert sorted(proc.stdout.splitlines()) == ["[rank 0] 0/2 none arg", "[rank 1] 1/2 none arg"]
