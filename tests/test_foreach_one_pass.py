"""The optimizers' one-pass compiled updates (optim/foreach_kernels.py): the same bits as the list-wide update on
NumPy arrays (HostArray), torch's values, and the configurations that keep the list-wide update."""
import numpy as np
import pytest
import torch

import tidal
import tidal.optim.foreach as F
from tidal.vm import codegen

from kernel_loops import compile_here, kernel_threads  # noqa: F401 - a fixture

CONFIGS = {  # name: (optimizer, kwargs, whether the one-pass form takes it)
    "adam": ("Adam", dict(lr=1e-2), True),
    "adamw": ("AdamW", dict(lr=1e-2, weight_decay=0.1), True),
    "adam small beta1": ("Adam", dict(lr=1e-2, betas=(0.3, 0.99)), True),  # the lerp's other side
    "sgd momentum": ("SGD", dict(lr=0.1, momentum=0.9), True),
    "adam amsgrad": ("Adam", dict(lr=1e-2, amsgrad=True), False),
    "adam l2": ("Adam", dict(lr=1e-2, weight_decay=0.1), False),
    "sgd nesterov": ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), False),
    "sgd dampening": ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5), False),
}


def _train(lib, name, kwargs, dtype, steps=4):
    rng = np.random.default_rng(0)
    params = [lib.nn.Parameter(lib.tensor(rng.standard_normal(s).astype(dtype))) for s in ((300, 200), (200,), (3,))]
    opt = getattr(lib.optim, name)(params, **kwargs)
    for k in range(steps):
        opt.zero_grad()
        sum(((p - 0.1 * k) ** 2 * (p * 0.5).tanh().detach()).sum() for p in params).backward()
        opt.step()
    return [p.detach().numpy().copy() for p in params]


@pytest.fixture(params=["threads", "one thread"])
def one_pass_calls(request, compile_here, monkeypatch):  # noqa: F811 - the fixture above
    """The one-pass forms loaded, their runs counted (by whether they took the step)."""
    assert codegen.kernel_module(".foreach_kernels", "tidal.optim", spent=1e9) is not None
    calls = []
    for update, fused in list(F._ONE_PASS.items()):
        monkeypatch.setitem(F._ONE_PASS, update, lambda lists, kwargs, _f=fused: calls.append(_f(lists, kwargs))
                            or calls[-1])
    with kernel_threads(1 if request.param == "one thread" else None):
        yield calls


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("config", list(CONFIGS))
def test_one_pass_updates_keep_the_bits_and_torchs_values(one_pass_calls, config, dtype, monkeypatch):
    name, kwargs, takes = CONFIGS[config]
    ours = _train(tidal, name, kwargs, dtype)
    assert (True in one_pass_calls) == takes
    saved = dict(F._ONE_PASS)
    monkeypatch.setattr(F, "_ONE_PASS", {})  # the list-wide update on HostArrays
    _train(tidal, name, kwargs, dtype)  # (a second run warms the same compiled loops as the first)
    generic = _train(tidal, name, kwargs, dtype)
    monkeypatch.setattr(F, "_ONE_PASS", saved)
    again = _train(tidal, name, kwargs, dtype)
    for a, b in zip(again, generic):
        np.testing.assert_array_equal(a, b)
    theirs = _train(torch, name, kwargs, dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    for a, t in zip(ours, theirs):
        np.testing.assert_allclose(a, t, **tol)
