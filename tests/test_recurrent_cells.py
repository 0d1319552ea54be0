"""The LSTM and GRU cells' gate math as one record each way (ops/rowwise/recurrent_cells.py): values and gradients of
LSTM, GRU and their cells against torch, with outputs unused, in float32 and float64, and double backward."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc


def _pair(dtype, make):
    """The same module in torch and in tidal (tidal's loaded from torch's state dict)."""
    torch.manual_seed(0)
    ref = make(torch).to(getattr(torch, dtype))
    mine = make(tc).to(getattr(tc, dtype))
    mine.load_state_dict({k: tc.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    return ref, mine


def _grads(module):
    return [p.grad.numpy() for p in module.parameters()]


def _lstm(lib):
    return lib.nn.LSTM(5, 7, num_layers=2, batch_first=True)


def _gru(lib):
    return lib.nn.GRU(5, 7, num_layers=2, bidirectional=True)


def _losses(out, state) -> dict:
    h, c = state if isinstance(state, tuple) else (state, None)
    losses = {"output": out.sum(), "h_n": (h * h).sum()}
    if c is not None:
        losses.update(c_n=c.sum(), all=out.sum() + h.sum() + c.sum())
    return losses


@pytest.mark.parametrize("dtype, rtol", [("float32", 2e-5), ("float64", 1e-12)])
@pytest.mark.parametrize("make, use", [(_lstm, "output"), (_lstm, "h_n"), (_lstm, "c_n"), (_lstm, "all"),
                                       (_gru, "output"), (_gru, "h_n")],
                         ids=["lstm-output", "lstm-h_n", "lstm-c_n", "lstm-all", "gru-output", "gru-h_n"])
def test_layers_values_and_gradients_as_torch(dtype, rtol, make, use):
    ref, mine = _pair(dtype, make)
    x = np.random.default_rng(1).standard_normal((3, 6, 5) if make is _lstm else (6, 3, 5))

    def run(lib, module):
        inp = lib.tensor(x, dtype=getattr(lib, dtype), requires_grad=True)
        _losses(*module(inp))[use].backward()
        return module(inp)[0].detach().numpy(), inp.grad.numpy(), _grads(module)
    (o1, g1, p1), (o2, g2, p2) = run(torch, ref), run(tc, mine)
    np.testing.assert_allclose(o2, o1, rtol=rtol, atol=rtol)
    np.testing.assert_allclose(g2, g1, rtol=rtol, atol=rtol)
    for a, b in zip(p2, p1):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol)


def test_lstm_cell_loop_as_torch():
    ref, mine = _pair("float32", lambda lib: lib.nn.LSTMCell(4, 6))
    xs = np.random.default_rng(2).standard_normal((5, 3, 4)).astype(np.float32)

    def run(lib, cell):
        h = c = None
        for x in xs:
            h, c = cell(lib.tensor(x), None if h is None else (h, c))
        (h.sum() + 2 * c.sum()).backward()
        return h.detach().numpy(), _grads(cell)
    (h1, p1), (h2, p2) = run(torch, ref), run(tc, mine)
    np.testing.assert_allclose(h2, h1, rtol=2e-5, atol=2e-6)
    for a, b in zip(p2, p1):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)


def test_double_backward_through_the_cell_as_torch():
    ref, mine = _pair("float64", lambda lib: lib.nn.LSTMCell(3, 4))
    x = np.random.default_rng(3).standard_normal((2, 3))

    def run(lib, cell):
        inp = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        h, c = cell(inp)
        (g,) = lib.autograd.grad((h * c).sum(), inp, create_graph=True)
        (g * g).sum().backward()
        return g.detach().numpy(), _grads(cell)
    (g1, p1), (g2, p2) = run(torch, ref), run(tc, mine)
    np.testing.assert_allclose(g2, g1, rtol=1e-10)
    for a, b in zip(p2, p1):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_gru_cell_double_backward_as_torch():
    ref, mine = _pair("float64", lambda lib: lib.nn.GRUCell(3, 4))
    x = np.random.default_rng(5).standard_normal((2, 3))
    h0 = np.random.default_rng(6).standard_normal((2, 4))

    def run(lib, cell):
        inp = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        h = cell(inp, lib.tensor(h0, dtype=lib.float64))
        (g,) = lib.autograd.grad((h * h).sum(), inp, create_graph=True)
        (g * g).sum().backward()
        return h.detach().numpy(), g.detach().numpy(), _grads(cell)
    (h1, g1, p1), (h2, g2, p2) = run(torch, ref), run(tc, mine)
    np.testing.assert_allclose(h2, h1, rtol=1e-12)
    np.testing.assert_allclose(g2, g1, rtol=1e-10)
    for a, b in zip(p2, p1):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_one_record_per_step_and_direction():
    lstm = tc.nn.LSTM(4, 5, bidirectional=True)
    out, _ = lstm(tc.randn(6, 2, 4))
    cells, seen, todo = 0, set(), [out.grad_fn]
    while todo:  # every node of the graph, once
        node = todo.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        cells += node.name() in ("ThnnFusedLstmCellBackward0", "ThnnFusedGruCellBackward0")
        todo += [n for n, _ in node.next_functions]
    assert cells == 6 * 2
    tidal.sync()


def test_one_gru_record_per_step():
    out, _ = tc.nn.GRU(4, 5)(tc.randn(6, 2, 4))
    node, steps = out.grad_fn, 0
    assert node.name() == "StackBackward0"
    for edge, _ in node.next_functions:
        steps += edge.name() == "ThnnFusedGruCellBackward0"
    assert steps == 6
