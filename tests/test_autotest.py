"""Op and module behaviour checked through the dual-object harness (tests/autotest.py)."""
import pytest

from autotest import dual

lib, F, nn = dual.lib, dual.F, dual.nn

OP_BODIES = {
    "exp_sum": lambda x: (x.exp() * 2).sum(dim=1),
    "softmax_matmul": lambda x: lib.softmax(x @ x.T, dim=-1),
    "where_clamp": lambda x: lib.where(x > 0, x.clamp(max=0.5), x * x),
    "reduce_mix": lambda x: x.var(dim=0, keepdim=True) + x.amax(dim=1, keepdim=True),
    "views": lambda x: x.T.reshape(-1)[1:7].unsqueeze(0).expand(3, 6),
    "indexing": lambda x: x[[0, 2, 2], 1:] * x[..., None, 0].sum(),
    "cat_stack": lambda x: lib.cat([x, x.flip(0)], dim=1) + lib.stack([x, x]).mean(0).repeat(1, 2),
    "logsumexp": lambda x: lib.logsumexp(x, dim=0) * lib.tanh(x).sum(0),
    "cumsum_sort": lambda x: lib.cumsum(x, dim=1) + lib.sort(x, dim=1).values,
    "norm_lerp": lambda x: lib.lerp(x, x.sigmoid(), 0.3).norm(dim=1),
    "gather": lambda x: lib.gather(x, 1, dual.randint(0, 4, (3, 2))) ** 2,
    "einsum": lambda x: lib.einsum("ij,kj->ik", x, x.sin()),
}


@pytest.mark.parametrize("name", sorted(OP_BODIES))
def test_op_bodies_values_and_gradients(name):
    x = dual.randn(3, 4, requires_grad=True)
    y = OP_BODIES[name](x)
    y.check(rtol=1e-9, atol=1e-12)
    g = dual.randn(*y.pair[1].shape)
    y.backward(g)
    x.grad.check(rtol=1e-8, atol=1e-10)


MODULES = {
    "linear_gelu": lambda: nn.Sequential(nn.Linear(4, 5), nn.GELU(), nn.Linear(5, 2)),
    "layernorm": lambda: nn.LayerNorm(4),
    "conv": lambda: nn.Conv1d(3, 2, 2),
    "lstm_first": lambda: nn.LSTM(4, 3, batch_first=True),
    "attention": lambda: nn.MultiheadAttention(4, 2, batch_first=True),
}
INPUTS = {"linear_gelu": (3, 4), "layernorm": (2, 3, 4), "conv": (2, 3, 4), "lstm_first": (2, 3, 4),
          "attention": (2, 3, 4)}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_modules_values_and_gradients(name):
    built = MODULES[name]()
    ours, theirs = built.pair
    model = dual.module(ours.double(), theirs.double())
    x = dual.randn(*INPUTS[name], requires_grad=True)
    out = model(x, x, x) if name == "attention" else model(x)
    out = out[0] if isinstance(out, tuple) else out
    out.check(rtol=1e-9, atol=1e-12)
    out.sum().backward()
    x.grad.check(rtol=1e-8, atol=1e-10)
    for (n, p), (_, tp) in zip(ours.named_parameters(), theirs.named_parameters()):
        type(x)(p.grad, tp.grad).check(rtol=1e-8, atol=1e-10)


def test_losses_through_the_harness():
    logits = dual.randn(5, 3, requires_grad=True)
    target = dual.randint(0, 3, (5,))
    loss = F.cross_entropy(logits, target, label_smoothing=0.1)
    loss.check(rtol=1e-12)
    loss.backward()
    logits.grad.check(rtol=1e-10)


def test_dtypes_and_integer_results():
    a = dual.randint(-5, 5, (4, 3))
    (a * 3 // 2).check()
    (a.float() / 2).check()
    (a > 0).sum().check()
    a.argmax(dim=1).check()


def test_harness_detects_mismatches():
    import numpy as np
    import torch

    import tidal
    from autotest import Dual
    with pytest.raises(AssertionError):
        Dual(tidal.ones(2), torch.zeros(2)).check()
    with pytest.raises(AssertionError):
        Dual(tidal.ones(2, dtype=tidal.float64), torch.ones(2)).check()
    with pytest.raises(AssertionError):
        Dual(tidal.ones(2), torch.ones(3)).check()
    Dual(tidal.tensor(np.arange(3)), torch.arange(3)).check()
