"""torch.accelerator in compat (and tidal.accelerator): without a usable CUDA device it answers exactly as a CPU-only
torch does, values and errors; with one (compat's torch.cuda reporting a device) it names CUDA and delegates."""
import warnings

import pytest
import torch

import tidal
import tidal.compat as tc
from tidal.compat import accelerator as acc


def _outcome(fn):
    """(value, None) or (None, (error type, message)), with any warnings' categories and messages."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = fn(), None
        except Exception as exc:  # noqa: BLE001
            result = None, (type(exc), str(exc))
    return result, [(w.category, str(w.message)) for w in caught]


CALLS = {
    "current_accelerator": lambda a: a.current_accelerator(),
    "current_accelerator checked": lambda a: a.current_accelerator(check_available=True),
    "is_available": lambda a: a.is_available(),
    "device_count": lambda a: a.device_count(),
    "current_device_index": lambda a: a.current_device_index(),
    "current_device_idx": lambda a: a.current_device_idx(),
    "set_device_index int": lambda a: a.set_device_index(0),
    "set_device_index cpu": lambda a: a.set_device_index("cpu"),
    "set_device_index cuda": lambda a: a.set_device_index("cuda:0"),
    "set_device_index None": lambda a: a.set_device_index(None),
    "set_device_idx": lambda a: a.set_device_idx(0),
    "synchronize": lambda a: a.synchronize(),
    "synchronize int": lambda a: a.synchronize(0),
    "synchronize cpu": lambda a: a.synchronize("cpu"),
    "synchronize cuda": lambda a: a.synchronize("cuda"),
    "current_stream": lambda a: a.current_stream(),
    "current_stream cpu": lambda a: a.current_stream("cpu"),
    "empty_cache": lambda a: a.empty_cache(),
    "memory_allocated": lambda a: a.memory_allocated(),
    "memory_allocated cpu": lambda a: a.memory_allocated("cpu"),
    "max_memory_reserved": lambda a: a.max_memory_reserved(0),
    "memory_stats": lambda a: a.memory_stats(),
    "reset_peak_memory_stats": lambda a: a.reset_peak_memory_stats(),
    "get_memory_info": lambda a: a.get_memory_info(),
    "empty_host_cache": lambda a: a.empty_host_cache(),
    "get_device_capability": lambda a: a.get_device_capability(),
    "get_device_capability cpu": lambda a: a.get_device_capability("cpu"),
    "device_index None": lambda a: a.device_index(None).__enter__(),
    "device_index 0": lambda a: a.device_index(0).__enter__(),
}


@pytest.mark.skipif(torch.cuda.is_available(), reason="compares with a CPU-only torch build")
@pytest.mark.parametrize("call", list(CALLS))
def test_cpu_only_answers_match_torch(call):
    assert _outcome(lambda: CALLS[call](acc)) == _outcome(lambda: CALLS[call](torch.accelerator))


def test_the_same_module_everywhere():
    assert tc.accelerator is acc and tidal.accelerator is acc
    # the official examples' device choice lands where compat's torch.cuda points scripts
    script_device = tc.accelerator.current_accelerator().type if tc.accelerator.is_available() else "cpu"
    assert script_device == ("cuda" if tc.cuda.is_available() else "cpu")
    assert tc.cuda.is_available() == tc.accelerator.is_available() == (tc.accelerator.device_count() > 0)
    with tc.accelerator.device_index(None):  # a no-op without an accelerator, as in torch
        assert tc.tensor([1.0, 2.0]).sum().item() == 3.0


def test_a_usable_cuda_device_is_the_accelerator(monkeypatch):
    """When compat's torch.cuda reports devices, the accelerator is CUDA and every call goes to torch.cuda."""
    state = {"index": 0, "synced": 0}
    monkeypatch.setattr(tc.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(tc.cuda, "is_available", lambda: True)
    monkeypatch.setattr(tc.cuda, "current_device", lambda: state["index"])
    monkeypatch.setattr(tc.cuda, "set_device", lambda i: state.update(index=i))
    monkeypatch.setattr(tc.cuda, "synchronize", lambda d=None: state.update(synced=state["synced"] + 1))
    monkeypatch.setattr(tc.cuda, "memory_allocated", lambda d=None: 1234)
    assert acc.current_accelerator() == tidal.device("cuda") and acc.is_available()
    assert acc.device_count() == 2 and acc.current_device_index() == 0
    acc.set_device_index("cuda:1")
    assert acc.current_device_index() == 1
    with acc.device_index(0):
        assert acc.current_device_index() == 0
    assert acc.current_device_index() == 1
    acc.synchronize()
    acc.synchronize("cuda:1")
    assert state["synced"] == 2
    assert acc.memory_allocated() == 1234
    assert {tidal.float32, tidal.float64, tidal.int64, tidal.bool} <= acc.get_device_capability()["supported_dtypes"]
    with pytest.raises(RuntimeError, match="Accelerator expected"):
        acc.synchronize("cpu")
