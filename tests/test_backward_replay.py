"""Backward replay (autograd/backward_replay.py): a pass over a graph seen before pushes the recorded instructions.

Every case runs the same program with replay off and on and asks for bitwise equal gradients (and torch's values
where it says so); the counters show that the replay path really ran, or that it was refused where it must be.
"""
import threading

import numpy as np
import pytest
import torch

import tidal
from tidal.autograd import backward_replay as br
from tidal.perf import models


@pytest.fixture
def replay():
    """Replay on, with no recordings from earlier tests; restores the switch after."""
    saved = br.enabled
    br._recordings.clear()
    br._seen.clear()
    br.enabled = True
    yield br
    br.enabled = saved
    br._recordings.clear()
    br._seen.clear()


def _counts() -> dict:
    return br.stats()


def _trained(name: str, on: bool, steps: int = 5) -> tuple:
    br.enabled = on
    br._recordings.clear()
    br._seen.clear()
    trainer = models.build(name, tidal, quick=True)
    losses = [trainer.step().item() for _ in range(steps)]
    params = list(trainer.model.parameters())
    return losses, [p.grad.numpy().copy() for p in params], [p.detach().numpy().copy() for p in params]


@pytest.mark.parametrize("name", ["mlp", "cnn", "gpt", "lm"])
def test_training_steps_are_bitwise_those_of_the_engine(replay, fusion_settings, name):
    tidal.vm.set_fusion(background_compile=False)  # (see test_models_train_bitwise_as_on_the_engine)
    _trained(name, False)
    before = _counts()
    off = _trained(name, False)
    on = _trained(name, True)
    after = _counts()
    assert after["recorded"] == before["recorded"] + 1
    assert after["replayed"] == before["replayed"] + 3  # passes 3, 4 and 5 (the first is seen, the second recorded)
    assert off[0] == on[0]
    for a, b in zip(off[1] + off[2], on[1] + on[2]):
        assert np.array_equal(a, b)


nn, F = tidal.nn, tidal.nn.functional


def _lstm_lm():
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8, padding_idx=0)
            self.rnn = nn.LSTM(8, 16, batch_first=True, num_layers=2)
            self.out = nn.Linear(16, 20)

        def forward(self, x):
            return self.out(self.rnn(self.emb(x))[0])
    x = tidal.tensor(np.random.default_rng(0).integers(0, 20, (4, 7)))
    return LM(), lambda m: F.cross_entropy(m(x).reshape(-1, 20), x.reshape(-1), label_smoothing=0.1)


def _conv_norms():
    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                      nn.Conv2d(8, 4, 3, stride=2), nn.GroupNorm(2, 4), nn.GELU(), nn.AdaptiveAvgPool2d(1),
                      nn.Flatten(), nn.Linear(4, 3))
    x, y = tidal.randn(5, 3, 12, 12), tidal.tensor([0, 1, 2, 1, 0])
    return m, lambda m: F.cross_entropy(m(x), y)


def _tied_weights():
    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(11, 6)
            self.norm = nn.LayerNorm(6)

        def forward(self, x):
            return self.norm(self.emb(x)) @ self.emb.weight.t()
    x = tidal.tensor([[1, 2, 3], [4, 5, 6]])
    return Tied(), lambda m: F.cross_entropy(m(x).reshape(-1, 11), x.reshape(-1))


def _views_and_inplace():
    m = nn.Linear(4, 6)
    x = tidal.randn(3, 4)

    def loss(m):
        h = m(x) * 1.0
        h.add_(1).clamp_(-0.5, 2.0)
        h[:, 0] = h[:, 1] * 2
        a, b = h.chunk(2, 1)
        return (a.t().narrow(0, 1, 2) * b[:, :2].t()).sigmoid().sum() + h.cumsum(1).max(1)[0].sum() + h[::2].norm()
    return m, loss


@pytest.mark.parametrize("make", [_lstm_lm, _conv_norms, _tied_weights, _views_and_inplace],
                         ids=["lstm", "conv and norms", "tied weights", "views and in-place"])
@pytest.mark.parametrize("accumulate", [1, 2])
def test_models_train_bitwise_as_on_the_engine(replay, fusion_settings, make, accumulate):
    tidal.vm.set_fusion(background_compile=False)  # (a kernel's compiled loop then arrives at a fixed call, not
    # between the two runs compared: the NumPy path and the compiled loop may differ in the last bit)

    def train(on):
        br.enabled = on
        br.forget()
        tidal.manual_seed(0)
        model, loss_fn = make()
        opt = tidal.optim.Adam(model.parameters(), lr=0.01)
        losses = []
        for k in range(6):
            if k % accumulate == 0:
                opt.zero_grad()
            loss = loss_fn(model)
            loss.backward()
            losses.append(loss.item())
            if k % accumulate == accumulate - 1:
                opt.step()
        return losses, [p.detach().numpy().copy() for p in model.parameters()]

    train(False)  # (warm: a first run may meet NumPy paths whose compiled loops later runs take)
    before = _counts()["replayed"]
    off, on = train(False), train(True)
    assert _counts()["replayed"] == before + (4 if accumulate == 1 else 2)
    assert off[0] == on[0]
    for a, b in zip(off[1], on[1]):
        assert np.array_equal(a, b)


def _mlp_grads(lib, w1, w2, x, steps, accumulate=False, scale=1.0):
    a, b = lib.tensor(w1, requires_grad=True), lib.tensor(w2, requires_grad=True)
    inputs = lib.tensor(x)
    out = []
    for _ in range(steps):
        if not accumulate:
            a.grad = b.grad = None
        loss = ((inputs @ a).tanh() @ b * scale).pow(2).mean()
        loss.backward()
        out.append((a.grad.numpy().copy() if lib is tidal else a.grad.detach().numpy().copy(),
                    b.grad.numpy().copy() if lib is tidal else b.grad.detach().numpy().copy()))
    return out


@pytest.mark.parametrize("accumulate", [False, True])
def test_gradients_match_torch_and_accumulate(replay, rng, accumulate):
    w1, w2 = rng.standard_normal((5, 7)), rng.standard_normal((7, 3))
    x = rng.standard_normal((4, 5))
    before = _counts()["replayed"]
    got = _mlp_grads(tidal, w1, w2, x, 6, accumulate)
    want = _mlp_grads(torch, w1, w2, x, 6, accumulate)
    # (accumulating, the first pass meets no .grad and the later ones do: another graph, recorded a pass later)
    assert _counts()["replayed"] == before + (3 if accumulate else 4)
    for (ga, gb), (wa, wb) in zip(got, want):
        np.testing.assert_allclose(ga, wa, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(gb, wb, rtol=1e-12, atol=1e-12)


def test_accumulated_grad_keeps_its_object_and_bumps_its_version(replay):
    w = tidal.ones(3, requires_grad=True)
    versions = []
    for _ in range(5):
        (w * 2.0).sum().backward()
        versions.append(w.grad._version)
    grad = w.grad
    (w * 2.0).sum().backward()
    assert w.grad is grad
    assert versions == [0, 1, 2, 3, 4]
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 12.0, np.float32))


CHANGES = [  # each pair: the same program, then one with one thing changed; the change must not be replayed
    ("shape", lambda L, w: (w[:3] * 2.0).sum(), lambda L, w: (w[:2] * 2.0).sum()),
    ("dtype", lambda L, w: (w * 2.0).sum(), lambda L, w: (w.double() * 2.0).sum()),
    ("op", lambda L, w: (w * 3.0).exp().sum(), lambda L, w: (w * 3.0).sin().sum()),
    ("number", lambda L, w: (w * 3.0).sum(), lambda L, w: (w * 5.0).sum()),
    ("int or float", lambda L, w: w.pow(2).sum(), lambda L, w: w.pow(2.5).sum()),
    ("edge", lambda L, w: (w * w.detach()).sum(), lambda L, w: (w * w).sum()),
    ("layout", lambda L, w: (w.reshape(2, 2) @ w.reshape(2, 2)).sum(),
     lambda L, w: (w.reshape(2, 2).t() @ w.reshape(2, 2)).sum()),
    ("dim", lambda L, w: w.reshape(2, 2).softmax(0)[0, 1], lambda L, w: w.reshape(2, 2).softmax(1)[0, 1]),
]


@pytest.mark.parametrize("first, second", [c[1:] for c in CHANGES], ids=[c[0] for c in CHANGES])
def test_a_graph_that_differs_in_one_thing_is_not_replayed(replay, rng, first, second):
    values = rng.standard_normal(4)
    w = tidal.tensor(values, dtype=tidal.float32, requires_grad=True)
    t = torch.tensor(values, dtype=torch.float32, requires_grad=True)
    for fn in (first, first, first, second, second, second, first):
        w.grad = t.grad = None
        fn(tidal, w).backward()
        fn(torch, t).backward()
        np.testing.assert_allclose(w.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_hooks_and_custom_functions_run_every_pass(replay):
    calls = []

    class Twice(tidal.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls.append("function")
            return g * 2

    w = tidal.ones(3, requires_grad=True)
    v = tidal.ones(3, requires_grad=True)
    before = _counts()["replayed"]
    for _ in range(4):
        Twice.apply(w).sum().backward()
        h = v * 3
        h.register_hook(lambda g: calls.append("hook"))
        h.sum().backward()
    assert calls.count("function") == 4 and calls.count("hook") == 4
    assert _counts()["replayed"] == before
    np.testing.assert_array_equal(w.grad.numpy(), np.full(3, 8.0, np.float32))
    np.testing.assert_array_equal(v.grad.numpy(), np.full(3, 12.0, np.float32))


def test_retain_grad_and_post_accumulate_hooks_are_kept(replay):
    w = tidal.ones(2, requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(p.grad.numpy().copy()))
    for _ in range(4):
        h = w * 2
        h.retain_grad()
        (h * h).sum().backward()
        np.testing.assert_array_equal(h.grad.numpy(), np.full(2, 4.0, np.float32))
    assert len(seen) == 4


def test_errors_of_the_engine_still_raise(replay):
    w = tidal.ones(3, requires_grad=True)
    for _ in range(3):
        y = w.exp()
        z = y.sum()
        z.backward()
    y = w.exp()
    z = y * y
    y.mul_(2)  # a saved tensor modified in place
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()
    for _ in range(3):
        loss = (w.exp() * w).sum()
        loss.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_retain_graph_passes_replay_onto_the_same_graph(replay):
    w = tidal.tensor([1.0, 2.0], requires_grad=True)
    loss = (w.exp() * w).sum()
    for _ in range(4):
        loss.backward(retain_graph=True)
    want = 4 * (np.exp([1.0, 2.0]) * np.array([2.0, 3.0]))
    np.testing.assert_allclose(w.grad.numpy(), want, rtol=1e-6)
    assert _counts()["replayed"] >= 2


def test_random_draws_in_the_graph_are_not_frozen(replay):
    w = tidal.ones(1000, requires_grad=True)
    masks = []
    for _ in range(4):
        w.grad = None
        tidal.nn.functional.dropout(w, 0.5).sum().backward()
        masks.append(w.grad.numpy().copy())
    assert not np.array_equal(masks[2], masks[3])  # the replayed pass reads this step's mask


def _in_two_threads(train) -> dict:
    """train(k) on two threads at once, k = 0 and 1; their results by k."""
    results: dict = {}
    threads = [threading.Thread(target=lambda k=k: results.__setitem__(k, train(k))) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results


def test_passes_from_two_threads(replay):
    def train(k):
        w = tidal.full((8,), float(k + 1), requires_grad=True)
        for _ in range(20):
            w.grad = None
            (w * w).sum().backward()
        return w.grad.numpy().copy()

    results = _in_two_threads(train)
    for k in range(2):
        np.testing.assert_array_equal(results[k], np.full(8, 2.0 * (k + 1), np.float32))


def test_a_replayed_pass_allocates_no_more_than_the_engine(replay, async_mode, fusion_settings):
    tidal.vm.set_fusion(background_compile=False)  # (each kernel's final form from its first compiled call)
    trainer = models.build("gpt", tidal, quick=True)

    def per_step(on):
        br.enabled = on
        for _ in range(6):
            trainer.step().item()
        tidal.sync()
        before = tidal.vm.stats()
        for _ in range(5):
            trainer.step()
        tidal.sync()
        after = tidal.vm.stats()
        return [after[k] - before[k] for k in ("kernels", "allocations", "cache_hits")]

    off, on = per_step(False), per_step(True)
    assert _counts()["replayed"] >= 1
    assert on[0] <= off[0] and on[1] + on[2] <= off[1] + off[2]


def test_graphs_that_never_repeat_are_walked_one_pass_in_a_few(replay, monkeypatch):
    walks = []
    real = br._Walk.__init__
    monkeypatch.setattr(br._Walk, "__init__", lambda self, *a: (walks.append(1), real(self, *a))[1])
    w = tidal.ones(64, requires_grad=True)
    for n in range(1, 49):  # a new length every pass
        (w[:n] * 2.0).sum().backward()
    assert br.MISSES_BEFORE_BACKOFF <= len(walks) <= br.MISSES_BEFORE_BACKOFF + 48 // br.BACKOFF + 1
    np.testing.assert_array_equal(w.grad.numpy(), 2.0 * np.clip(48 - np.arange(64), 0, None).astype(np.float32))
    for _ in range(4 * br.BACKOFF):  # a graph that repeats is found again
        (w * 3.0).sum().backward()
    assert _counts()["replayed"] > 0


def test_recordings_stay_within_their_instruction_budget(replay, monkeypatch):
    monkeypatch.setattr(br, "MAX_STEPS", 1)  # the first recording spends it
    w = tidal.ones(8, requires_grad=True)
    for _ in range(4):
        (w * 2.0).exp().sum().backward()
    assert br.stats()["kept"] == 1 and br._kept_steps[0] >= 1
    for _ in range(6):  # past the budget, another graph is not recorded, and still computes right
        w.grad = None
        (w * 4.0).sin().sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), 4.0 * np.cos(np.full(8, 4.0, np.float32)), rtol=1e-6)
    assert br.stats()["kept"] == 1


def test_a_pass_that_syncs_is_tried_a_few_times_then_left_to_the_engine(replay, monkeypatch):
    from tidal.autograd import engine
    real = engine._run_graph
    w = tidal.tensor([1.0, -2.0, 3.0], requires_grad=True)

    def syncing(*args):  # a value read on the host inside the pass
        real(*args)
        w.sum().item()
    monkeypatch.setattr(engine, "_run_graph", syncing)
    before = br.stats()
    for _ in range(2 * br.MAX_TRIES + 3):
        w.grad = None
        (w * 3.0).sin().sum().backward()
        np.testing.assert_allclose(w.grad.numpy(), 3 * np.cos(3 * np.array([1.0, -2.0, 3.0], np.float32)), rtol=1e-6)
    after = br.stats()
    assert after["replayed"] == before["replayed"] and after["refused"] == before["refused"] + 1
    assert after["kept"] == 1  # (the graph's refusal, kept: no more tries)


def test_two_threads_recording_at_once_record_later_and_replay_right(replay):
    barrier = threading.Barrier(2)

    def train(k):
        w = tidal.full((16,), float(k + 1), requires_grad=True)
        barrier.wait()
        for _ in range(30):
            w.grad = None
            (w * w * float(k + 2)).sum().backward()
        return w.grad.numpy().copy()

    results = _in_two_threads(train)
    for k in range(2):
        np.testing.assert_array_equal(results[k], np.full(16, 2.0 * (k + 1) * (k + 2), np.float32))
