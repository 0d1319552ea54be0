"""torch.distributed.pipelining on 2 CPU ranks, against torch under torchrun: an MLP cut in two by hand
(ScheduleGPipe and Schedule1F1B) and by pipeline() (a SplitPoint, or pipe_split() in the forward), 4 microbatches,
the per-microbatch losses, the last stage's merged outputs, the stage modules' parameter names and both stages'
weights after the SGD steps (scripts/pipeline_stages.py)."""
import numpy as np
import pytest

from script_runs import against_torch

pytestmark = pytest.mark.timeout(300)


def test_pipeline_schedules_like_torch(tmp_path):
    expected, got = against_torch(tmp_path, "pipeline_stages", torch_ranks=2)
    for mine, theirs in zip(got["ranks"], expected["ranks"]):
        assert mine.get("bad_index") == theirs.get("bad_index")
        for schedule in ("gpipe", "1f1b"):
            a, b = mine[schedule], theirs[schedule]
            np.testing.assert_allclose(np.array(a["losses"]), np.array(b["losses"]), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(a["weights"], b["weights"], rtol=1e-5, atol=1e-5)
            assert (a["out"] is None) == (b["out"] is None)
            if b["out"] is not None:
                np.testing.assert_allclose(a["out"], b["out"], rtol=1e-4, atol=1e-4)
    assert len(got["ranks"][1]["gpipe"]["losses"]) == 4
    for mine, theirs in zip(got["ranks"], expected["ranks"]):
        for cut in ("auto", "marked"):  # pipeline(): by split_spec, and by pipe_split()
            a, b = mine[cut], theirs[cut]
            assert (a["stages"], a["children"], a["params"]) == (b["stages"], b["children"], b["params"])
            np.testing.assert_allclose(np.array(a["losses"]), np.array(b["losses"]), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(a["weights"], b["weights"], rtol=1e-5, atol=1e-5)
