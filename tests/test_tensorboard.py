"""tidal.utils.tensorboard (torch.utils.tensorboard under compat) against torch's SummaryWriter: the same
logging calls made with both, the event files read back with tensorboard's loader and compared event by event
(wall times aside). Needs the `tensorboard` package, as torch's does; without it both refuse to import."""
from __future__ import annotations

import importlib
import os
import sys

import numpy as np
import pytest

import tidal
import tidal.compat as tc

tensorboard = pytest.importorskip("tensorboard")
import torch  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader  # noqa: E402
from torch.utils.tensorboard import SummaryWriter as TorchWriter  # noqa: E402

from tidal.utils.tensorboard import SummaryWriter  # noqa: E402


def _log(writer_cls, lib, root):
    rng = np.random.default_rng(0)
    values = rng.standard_normal(500).astype(np.float32)
    with writer_cls(os.path.join(root, "run"), purge_step=2) as w:
        for step in range(3):
            w.add_scalar("loss/train", lib.tensor(1.0 / (step + 1)), step, walltime=100.0 + step)
            w.add_scalar("lr", 0.1 * step, global_step=step, new_style=True)
            w.add_scalar("acc", np.float64(0.25 * step), step, new_style=True, double_precision=True)
        w.add_scalars("metrics", {"a": 1.0, "b": lib.tensor(2.0)}, 5)
        w.add_histogram("weights", lib.tensor(values), 1)
        w.add_histogram("weights_np", values, 2, bins="auto", max_bins=7)
        w.add_histogram_raw("raw", 0.0, 3.0, 4, 6.0, 14.0, [1.0, 2.0, 3.0], [1, 2, 1], global_step=0)
        w.add_text("notes", "hello **tensorboard**", 3)
        w.add_hparams({"lr": 0.1, "opt": "adam", "bs": lib.tensor([32.0]), "flag": True}, {"hp/acc": 0.9},
                      run_name="hp")
    return root


def _events(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(d, root)
            evs = []
            for ev in EventFileLoader(os.path.join(d, f)).Load():
                ev.wall_time = 0.0
                evs.append(ev.SerializeToString(deterministic=True))
            out.setdefault(rel, []).extend(evs)
    return out


def test_event_files_match_torch(tmp_path):
    want = _events(_log(TorchWriter, torch, str(tmp_path / "torch")))
    got = _events(_log(SummaryWriter, tc, str(tmp_path / "tidal")))
    assert sorted(got) == sorted(want)
    assert set(want) >= {"run", os.path.join("run", "metrics_a"), os.path.join("run", "hp")}
    assert len(want["run"]) == 16  # file version, 2 purge marks, 9 scalars, 3 histograms, 1 text
    for run in want:
        assert got[run] == want[run], run


def test_images_match_torch(tmp_path):
    pytest.importorskip("PIL")  # torch's writer encodes images with Pillow too
    img = np.linspace(0, 1, 3 * 4 * 5, dtype=np.float32).reshape(3, 4, 5)
    runs = []
    for cls, lib, name in ((TorchWriter, torch, "torch"), (SummaryWriter, tc, "tidal")):
        with cls(str(tmp_path / name)) as w:
            w.add_image("chw", lib.tensor(img), 0)
            w.add_image("hw", lib.tensor(img[0]), 1, dataformats="HW")
            w.add_images("batch", lib.tensor(np.stack([img] * 10)), 2)
            w.add_image("u8", (img.transpose(1, 2, 0) * 255).astype(np.uint8), 3, dataformats="HWC")
        runs.append(_events(str(tmp_path / name)))
    assert runs[0] == runs[1]


def test_writer_lifecycle_and_refusals(tmp_path):
    w = SummaryWriter(str(tmp_path / "x"), comment="ignored", filename_suffix=".v1")
    assert w.get_logdir() == str(tmp_path / "x")
    w.add_scalar("a", 1.0, 0)
    w.flush()
    assert any(f.endswith(".v1") for f in os.listdir(tmp_path / "x"))
    w.close()
    w.close()  # a second close does nothing
    w.add_scalar("a", 2.0, 1)  # after close a new event file is opened, as torch's does
    w.close()
    with pytest.raises(AssertionError, match="Tensor should contain one element"):
        SummaryWriter(str(tmp_path / "y")).add_scalar("bad", tidal.ones(2))
    with pytest.raises(TypeError, match="hparam_dict and metric_dict should be dictionary."):
        SummaryWriter(str(tmp_path / "y")).add_hparams([1], {})
    with pytest.raises(NotImplementedError, match="add_graph"):
        SummaryWriter(str(tmp_path / "y")).add_graph(tidal.nn.Linear(2, 2), tidal.ones(1, 2))


def test_import_refuses_without_tensorboard_as_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorboard", None)
    for name in [n for n in sys.modules if n.startswith("tidal.utils.tensorboard")]:
        monkeypatch.delitem(sys.modules, name)
    with pytest.raises(ImportError, match="^TensorBoard logging requires TensorBoard version 1.15 or above$"):
        importlib.import_module("tidal.utils.tensorboard")
