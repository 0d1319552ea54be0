"""Small torch modules scripts import against torch's: torch.xpu and torch.mps as a machine without those
backends reports them, torch.utils.dlpack, torch.utils.data._utils (collate with a type map), torch.storage,
and torch.distributed.elastic's `@record`."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
import torch.distributed.elastic.multiprocessing.errors as terrors
import torch.mps
import torch.utils.data._utils.collate as tcollate
import torch.utils.dlpack
import torch.xpu

import tidal
import tidal.compat as tc
import tidal.compat.distributed.elastic.multiprocessing.errors as oerrors
import tidal.compat.mps as omps
import tidal.compat.storage as ostorage
import tidal.compat.xpu as oxpu
import tidal.utils.data._utils as outils
import tidal.utils.data._utils.collate as ocollate
import tidal.utils.dlpack as odlpack

_ARGS = {"manual_seed": (1,), "manual_seed_all": (1,), "set_device": (0,), "get_device_properties": (0,),
         "set_per_process_memory_fraction": (0.5,), "set_rng_state": (None,)}


def _outcome(mod, name):
    try:
        value = getattr(mod, name)(*_ARGS.get(name, ()))
        return ("value", value)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return (type(e).__name__, str(e))


@pytest.mark.parametrize("ours,theirs", [(oxpu, torch.xpu), (omps, torch.mps)], ids=["xpu", "mps"])
def test_absent_backends_answer_as_torch(ours, theirs):
    for name in ours.__all__:
        if name == "device":
            continue
        want = _outcome(theirs, name)
        if want[0] == "AttributeError":  # (a torch build detail: a native binding it lacks)
            continue
        assert _outcome(ours, name) == want, name
    if ours is oxpu:
        with oxpu.device(-1):
            pass
        with pytest.raises(AssertionError, match="Torch not compiled with XPU enabled"):
            with oxpu.device(0):
                pass


def test_dlpack_both_ways_and_device_types():
    assert {k: int(v) for k, v in odlpack.DLDeviceType.__members__.items()} == \
        {k: int(v) for k, v in torch.utils.dlpack.DLDeviceType.__members__.items()}
    src = torch.arange(4.0)
    shared = odlpack.from_dlpack(src)
    src[0] = 7.0  # the memory is shared, as in torch
    np.testing.assert_allclose(shared.numpy(), [7.0, 1.0, 2.0, 3.0])
    back = torch.utils.dlpack.from_dlpack(odlpack.to_dlpack(tidal.tensor([1.0, 2.0])))
    assert back.tolist() == [1.0, 2.0]


def test_collate_with_a_type_map_as_the_tutorial_writes_it():
    class Point:
        def __init__(self, x):
            self.x = x

    def run(mod, lib):
        def collate_point(batch, *, collate_fn_map=None):
            return lib.tensor([p.x for p in batch])
        fn_map = {**mod.default_collate_fn_map, Point: collate_point}
        out = mod.collate([{"p": Point(1.0), "t": lib.ones(2)}, {"p": Point(2.0), "t": lib.zeros(2)}],
                          collate_fn_map=fn_map)
        return {k: v.tolist() for k, v in out.items()}, mod.default_collate([(1, "a"), (2, "b")])[1]
    assert run(ocollate, tc) == run(tcollate, torch)
    assert outils.MP_STATUS_CHECK_INTERVAL == torch.utils.data._utils.MP_STATUS_CHECK_INTERVAL
    assert outils.worker.get_worker_info() is None
    assert isinstance(tidal.ones(2).untyped_storage(), ostorage.UntypedStorage)
    assert issubclass(ostorage.TypedStorage, ostorage.UntypedStorage)


def test_record_writes_the_error_file_as_torch(tmp_path, monkeypatch):
    reports = []
    for mod in (terrors, oerrors):
        path = tmp_path / f"{mod.__name__}.json"
        monkeypatch.setenv("TORCHELASTIC_ERROR_FILE", str(path))

        @mod.record
        def main(x):
            if x == 0:
                raise SystemExit(0)
            if x < 0:
                raise ValueError("negative input")
            return x * 2

        assert main(3) == 6 and main(0) is None
        with pytest.raises(ValueError, match="negative input"):
            main(-1)
        data = json.loads(path.read_text())
        reports.append((sorted(data), sorted(data["message"]), data["message"]["message"],
                        sorted(data["message"]["extraInfo"])))
        assert "negative input" in data["message"]["extraInfo"]["py_callstack"]
        with pytest.raises(SystemExit):
            mod.record(lambda: (_ for _ in ()).throw(SystemExit(2)))()
    monkeypatch.delenv("TORCHELASTIC_ERROR_FILE")
    assert reports[0] == reports[1] == (["message"], ["extraInfo", "message"], "ValueError: negative input",
                                        ["py_callstack", "timestamp"])
    assert os.environ.get("TORCHELASTIC_ERROR_FILE") is None


def test_modules_are_torch_attributes():
    # a fresh interpreter: importing the submodules (as this file does) makes them attributes anyway
    import subprocess
    import sys
    code = ("import tidal.compat as torch; assert torch.xpu.is_available() is False; "
            "assert torch.mps.device_count() == 0; assert torch.storage.TypedStorage is not None; "
            "assert torch.library.custom_op is not None; print('ok')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-500:]
