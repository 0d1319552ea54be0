"""tidal.nn recurrent layers (RNN, LSTM, GRU and the cells) against torch.nn with identical weights:
outputs, final states, gradients of the input, the initial states and every parameter, parameter names
and shapes, reprs, default initialization, inter-layer dropout, and PyTorch's argument errors."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import tidal
from nn_helpers import assert_close, assert_grads_close, load_from_torch, pair, to_numpy, to_tidal, torch_repr
from tidal.nn.modules import rnn as tnn

# (name, constructor kwargs): every recurrent flavour, the LSTM with and without projections
KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("GRU", {}), ("LSTM", {}), ("LSTM", {"proj_size": 2})]
KIND_IDS = ["rnn_tanh", "rnn_relu", "gru", "lstm", "lstm_proj"]

# (num_layers, bidirectional, batch_first, bias, unbatched, given initial state)
CONFIGS = [
    (1, False, False, True, False, False),
    (2, False, False, True, False, True),
    (1, True, False, True, False, False),
    (2, True, True, True, False, True),
    (1, False, True, False, False, False),
    (2, True, False, False, True, True),
    (1, False, True, True, True, False),
]
CONFIG_IDS = ["l1", "l2_h0", "bi", "l2_bi_bf_h0", "bf_nobias", "l2_bi_nobias_unbatched_h0", "bf_unbatched"]

INPUT, HIDDEN, SEQ, BATCH = 3, 4, 5, 2


def make_pair(name: str, *args, dtype=torch.float64, **kwargs):
    """The same layer in tidal and torch with torch's weights copied into tidal."""
    ref = getattr(torch.nn, name)(*args, **kwargs).to(dtype)
    mod = getattr(tnn, name)(*args, **kwargs)
    mod = mod.double() if dtype == torch.float64 else mod
    load_from_torch(mod, ref)
    return mod, ref


def param_pairs(mod, ref) -> list:
    ref_params = dict(ref.named_parameters())
    return [(p, ref_params[n]) for n, p in mod.named_parameters()]


def flat_outputs(result) -> list:
    """(output, h) or (output, (h, c)) as a flat list of tensors."""
    output, state = result
    return [output] + (list(state) if isinstance(state, tuple) else [state])


def initial_state(rng, name: str, kwargs: dict, num_layers: int, bidirectional: bool, unbatched: bool):
    """Random (h0) or (h0, c0) pairs for tidal and torch."""
    lead = (num_layers * (2 if bidirectional else 1),) + (() if unbatched else (BATCH,))
    h_size = kwargs.get("proj_size") or HIDDEN
    h, hr = pair(rng, lead + (h_size,), requires_grad=True)
    if name != "LSTM":
        return (h, hr), [(h, hr)]
    c, cr = pair(rng, lead + (HIDDEN,), requires_grad=True)
    return ((h, c), (hr, cr)), [(h, hr), (c, cr)]


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_forward_and_gradients_match_torch(rng, kind, config):
    name, kwargs = kind
    num_layers, bidirectional, batch_first, bias, unbatched, given_state = config
    mod, ref = make_pair(name, INPUT, HIDDEN, num_layers=num_layers, bidirectional=bidirectional,
                         batch_first=batch_first, bias=bias, **kwargs)
    shape = (SEQ, INPUT) if unbatched else ((BATCH, SEQ, INPUT) if batch_first else (SEQ, BATCH, INPUT))
    x, xr = pair(rng, shape, requires_grad=True)
    leaves = [(x, xr)] + param_pairs(mod, ref)
    if given_state:
        (state, ref_state), state_leaves = initial_state(rng, name, kwargs, num_layers, bidirectional, unbatched)
        leaves += state_leaves
        outs, ref_outs = flat_outputs(mod(x, state)), flat_outputs(ref(xr, ref_state))
    else:
        outs, ref_outs = flat_outputs(mod(x)), flat_outputs(ref(xr))
    loss, ref_loss = 0, 0
    for out, ref_out in zip(outs, ref_outs):
        assert tuple(out.shape) == tuple(ref_out.shape)
        assert_close(out, ref_out)
        weight, ref_weight = pair(rng, tuple(ref_out.shape))
        loss, ref_loss = loss + (out * weight).sum(), ref_loss + (ref_out * ref_weight).sum()
    loss.backward()
    ref_loss.backward()
    assert_grads_close(leaves)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_IDS)
def test_float32_and_sum_backward(rng, kind):
    name, kwargs = kind
    mod, ref = make_pair(name, INPUT, HIDDEN, num_layers=2, bidirectional=True, dtype=torch.float32, **kwargs)
    x, xr = pair(rng, (SEQ, BATCH, INPUT), "float32", requires_grad=True)
    outs, ref_outs = flat_outputs(mod(x)), flat_outputs(ref(xr))
    for out, ref_out in zip(outs, ref_outs):
        assert out.dtype == tidal.float32
        assert_close(out, ref_out)
    outs[0].sum().backward()
    ref_outs[0].sum().backward()
    assert_grads_close([(x, xr)] + param_pairs(mod, ref), rtol=1e-4, atol=1e-5)


def test_empty_batch(rng):
    mod, ref = make_pair("LSTM", INPUT, HIDDEN, num_layers=2)
    x, xr = pair(rng, (SEQ, 0, INPUT))
    for out, ref_out in zip(flat_outputs(mod(x)), flat_outputs(ref(xr))):
        assert tuple(out.shape) == tuple(ref_out.shape)


def test_finite_differences(rng):
    """The gradient of a GRU's output agrees with central differences (float64)."""
    mod = tnn.GRU(2, 3, num_layers=2, bidirectional=True).double()
    x = rng.standard_normal((3, 2, 2))
    weight = rng.standard_normal((3, 2, 6))

    def loss(data) -> float:
        with tidal.no_grad():
            return float((mod(tidal.tensor(data))[0] * tidal.tensor(weight)).sum().item())

    xt = tidal.tensor(x).requires_grad_(True)
    (mod(xt)[0] * tidal.tensor(weight)).sum().backward()
    eps, numeric = 1e-6, np.zeros_like(x)
    for index in np.ndindex(x.shape):
        bump = np.zeros_like(x)
        bump[index] = eps
        numeric[index] = (loss(x + bump) - loss(x - bump)) / (2 * eps)
    np.testing.assert_allclose(to_numpy(xt.grad), numeric, rtol=1e-6, atol=1e-8)


# -- cells ----------------------------------------------------------------------------------------------
CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("GRUCell", {}), ("LSTMCell", {}),
         ("GRUCell", {"bias": False}), ("LSTMCell", {"bias": False})]


@pytest.mark.parametrize("cell", CELLS, ids=["rnn_tanh", "rnn_relu", "gru", "lstm", "gru_nobias", "lstm_nobias"])
@pytest.mark.parametrize("unbatched", [False, True], ids=["batched", "unbatched"])
@pytest.mark.parametrize("given_state", [False, True], ids=["zeros", "hx"])
def test_cells_match_torch(rng, cell, unbatched, given_state):
    name, kwargs = cell
    mod, ref = make_pair(name, INPUT, HIDDEN, **kwargs)
    lead = () if unbatched else (BATCH,)
    x, xr = pair(rng, lead + (INPUT,), requires_grad=True)
    leaves = [(x, xr)] + param_pairs(mod, ref)
    args, ref_args = (x,), (xr,)
    if given_state:
        states = [pair(rng, lead + (HIDDEN,), requires_grad=True) for _ in range(2 if name == "LSTMCell" else 1)]
        leaves += states
        if name == "LSTMCell":
            args, ref_args = (x, tuple(s for s, _ in states)), (xr, tuple(r for _, r in states))
        else:
            args, ref_args = (x, states[0][0]), (xr, states[0][1])
    out, ref_out = mod(*args), ref(*ref_args)
    outs = list(out) if isinstance(out, tuple) else [out]
    ref_outs = list(ref_out) if isinstance(ref_out, tuple) else [ref_out]
    loss, ref_loss = 0, 0
    for o, r in zip(outs, ref_outs):
        assert tuple(o.shape) == tuple(r.shape)
        assert_close(o, r)
        weight, ref_weight = pair(rng, tuple(r.shape))
        loss, ref_loss = loss + (o * weight).sum(), ref_loss + (r * ref_weight).sum()
    loss.backward()
    ref_loss.backward()
    assert_grads_close(leaves)


def test_cell_unrolled_equals_layer(rng):
    """Stepping an LSTMCell over a sequence gives the LSTM layer's output with the same weights."""
    layer = tnn.LSTM(INPUT, HIDDEN).double()
    cell = tnn.LSTMCell(INPUT, HIDDEN).double()
    cell.load_state_dict({k[:-3]: v for k, v in layer.state_dict().items()})
    x = tidal.tensor(rng.standard_normal((SEQ, BATCH, INPUT)))
    output, (h_n, c_n) = layer(x)
    state = None
    for t in range(SEQ):
        state = cell(x[t], state)
        assert_close(state[0], output[t])
    assert_close(state[0], h_n[0])
    assert_close(state[1], c_n[0])


# -- parameters, state dict, init, repr -------------------------------------------------------------------
STRUCTURES = [
    ("RNN", (3, 4), {"num_layers": 2, "bidirectional": True}),
    ("RNN", (3, 4, 1, "relu"), {"bias": False}),
    ("GRU", (3, 4), {"num_layers": 3, "batch_first": True, "dropout": 0.25}),
    ("LSTM", (3, 4), {"num_layers": 2, "bidirectional": True, "proj_size": 2}),
    ("LSTM", (3, 4), {"proj_size": 3, "bias": False}),
    ("LSTM", (5, 6, 2, False, True, 0.5, True), {}),
    ("RNNCell", (3, 4), {}),
    ("RNNCell", (3, 4, False, "relu"), {}),
    ("GRUCell", (3, 4), {"bias": False}),
    ("LSTMCell", (3, 4), {}),
]


@pytest.mark.parametrize("name,args,kwargs", STRUCTURES)
def test_parameters_state_dict_and_repr(name, args, kwargs):
    ref = getattr(torch.nn, name)(*args, **kwargs)
    mod = getattr(tnn, name)(*args, **kwargs)
    assert [(k, tuple(v.shape)) for k, v in mod.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in ref.state_dict().items()]
    assert [n for n, _ in mod.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert repr(mod) == torch_repr(repr(ref))
    hidden = ref.hidden_size
    for p in mod.parameters():
        values = to_numpy(p)
        assert p.requires_grad and p.dtype == tidal.float32
        assert np.all(np.abs(values) <= 1 / math.sqrt(hidden)) and values.std() > 0
    load_from_torch(mod, ref)
    for (n, p), (_, r) in zip(mod.named_parameters(), ref.named_parameters()):
        assert_close(p, r)


def test_flat_and_all_weights():
    mod = tnn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    ref = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, proj_size=2)
    assert mod._flat_weights_names == ref._flat_weights_names
    assert [[tuple(p.shape) for p in group] for group in mod.all_weights] == \
        [[tuple(p.shape) for p in group] for group in ref.all_weights]
    mod.flatten_parameters()


def test_replaced_parameter_is_used(rng):
    """A parameter assigned after construction (load_state_dict(assign=True)) drives the next forward."""
    mod, ref = make_pair("GRU", INPUT, HIDDEN)
    new_state = {k: torch.randn_like(v) for k, v in ref.state_dict().items()}
    ref.load_state_dict(new_state)
    mod.load_state_dict({k: to_tidal(v) for k, v in new_state.items()}, assign=True)
    x, xr = pair(rng, (SEQ, BATCH, INPUT))
    assert_close(mod(x)[0], ref(xr)[0])


def test_device_and_dtype_arguments():
    mod = tnn.LSTM(3, 4, dtype=tidal.float64, device="cpu")
    assert all(p.dtype == tidal.float64 for p in mod.parameters())
    cell = tnn.GRUCell(3, 4, dtype=tidal.float64)
    assert cell.weight_ih.dtype == tidal.float64


# -- dropout between layers ---------------------------------------------------------------------------------
def test_dropout_only_in_training(rng):
    mod, ref = make_pair("LSTM", INPUT, HIDDEN, num_layers=2, dropout=0.5)
    x, xr = pair(rng, (SEQ, BATCH, INPUT))
    mod.eval()
    ref.eval()
    assert_close(mod(x)[0], ref(xr)[0])
    mod.train()
    tidal.manual_seed(0)
    first = to_numpy(mod(x)[0])
    tidal.manual_seed(0)
    again = to_numpy(mod(x)[0])
    # the same dropout draws; values to a few ulps (NumPy and compiled paths of a fused group)
    np.testing.assert_allclose(first, again, rtol=1e-5, atol=1e-6)
    assert not np.allclose(first, to_numpy(ref(xr)[0]))


def test_full_dropout_zeroes_the_next_layer_input(rng):
    """With p=1 the second layer sees zeros: its output equals a one-layer net fed with zeros."""
    mod = tnn.GRU(INPUT, HIDDEN, num_layers=2, dropout=1.0).double().train()
    top = tnn.GRU(HIDDEN, HIDDEN).double()
    top.load_state_dict({k.replace("_l1", "_l0"): v for k, v in mod.state_dict().items() if "_l1" in k})
    x = tidal.tensor(rng.standard_normal((SEQ, BATCH, INPUT)))
    expected = to_numpy(top(tidal.zeros(SEQ, BATCH, HIDDEN, dtype=tidal.float64))[0])
    np.testing.assert_allclose(to_numpy(mod(x)[0]), expected, rtol=1e-12, atol=1e-12)


def test_dropout_warning_with_one_layer():
    with pytest.warns(UserWarning, match="non-zero dropout expects num_layers greater than 1"):
        tnn.GRU(3, 4, dropout=0.5)


# -- errors ---------------------------------------------------------------------------------------------------
def assert_same_error(make, make_ref) -> None:
    """tidal raises the exception type and message that torch raises."""
    with pytest.raises(Exception) as ref_info:
        make_ref()
    with pytest.raises(type(ref_info.value)) as info:
        make()
    assert str(info.value) == str(ref_info.value).replace("torch.", "tidal.")


@pytest.mark.parametrize("name,args,kwargs", [
    ("LSTM", (3, 0), {}), ("LSTM", (0, 3), {}), ("LSTM", (3.0, 4), {}), ("LSTM", (3, 4.0), {}),
    ("GRU", (3, 4), {"num_layers": 0}), ("GRU", (3, 4), {"dropout": 1.5}), ("GRU", (3, 4), {"dropout": True}),
    ("RNN", (3, 4), {"bias": 1}), ("RNN", (3, 4), {"batch_first": None}), ("RNN", (3, 4), {"nonlinearity": "gelu"}),
    ("RNN", (3, 4), {"proj_size": 2}), ("GRU", (3, 4), {"proj_size": 0}), ("LSTM", (3, 4), {"proj_size": 4}),
    ("LSTM", (3, 4), {"proj_size": -1}),
])
def test_constructor_errors(name, args, kwargs):
    assert_same_error(lambda: getattr(tnn, name)(*args, **kwargs), lambda: getattr(torch.nn, name)(*args, **kwargs))


@pytest.mark.parametrize("name,x_shape,state_shapes", [
    ("RNN", (5,), None), ("GRU", (2, 3, 3, 3), None), ("LSTM", (5,), None),
    ("RNN", (5, 2, 3), [(1, 2, 4, 1)]), ("GRU", (5, 3), [(1, 1, 4)]), ("LSTM", (5, 2, 3), [(1, 2, 4), (2, 4)]),
    ("LSTM", (5, 3), [(1, 1, 4), (1, 4)]),
    ("RNN", (5, 2, 6), None), ("GRU", (5, 2, 3), [(1, 3, 4)]), ("RNN", (5, 2, 3), [(1, 2, 5)]),
    ("LSTM", (5, 2, 3), [(2, 2, 4), (1, 2, 4)]), ("LSTM", (5, 2, 3), [(1, 2, 4), (1, 2, 3)]),
    ("LSTM", (0, 2, 3), None),
])
def test_forward_errors(name, x_shape, state_shapes):
    mod, ref = make_pair(name, INPUT, HIDDEN)
    x = np.zeros(x_shape)
    if state_shapes is None:
        args, ref_args = (tidal.tensor(x),), (torch.from_numpy(x),)
    else:
        states = [np.zeros(s) for s in state_shapes]
        tidal_states = [tidal.tensor(s) for s in states]
        torch_states = [torch.from_numpy(s) for s in states]
        if name == "LSTM":
            args, ref_args = (tidal.tensor(x), tuple(tidal_states)), (torch.from_numpy(x), tuple(torch_states))
        else:
            args, ref_args = (tidal.tensor(x), tidal_states[0]), (torch.from_numpy(x), torch_states[0])
    assert_same_error(lambda: mod(*args), lambda: ref(*ref_args))


def test_dtype_mismatch_error():
    mod, ref = tnn.GRU(INPUT, HIDDEN), torch.nn.GRU(INPUT, HIDDEN)
    x = np.zeros((5, 2, INPUT))
    assert_same_error(lambda: mod(tidal.tensor(x)), lambda: ref(torch.from_numpy(x)))


@pytest.mark.parametrize("name,x_shape,state_shapes", [
    ("RNNCell", (2, 5), None), ("GRUCell", (2, 3, 3), None), ("LSTMCell", (2, 2, 3), None),
    ("RNNCell", (2, 3), [(3, 4)]), ("GRUCell", (2, 3), [(2, 6)]), ("GRUCell", (2, 3), [(1, 2, 4)]),
    ("LSTMCell", (2, 3), [(2, 4), (2, 5)]), ("LSTMCell", (2, 3), [(2, 4), (1, 2, 4)]),
])
def test_cell_errors(name, x_shape, state_shapes):
    mod, ref = make_pair(name, INPUT, HIDDEN)
    x = np.zeros(x_shape)
    args, ref_args = [tidal.tensor(x)], [torch.from_numpy(x)]
    if state_shapes is not None:
        states = [np.zeros(s) for s in state_shapes]
        if name == "LSTMCell":
            args.append(tuple(tidal.tensor(s) for s in states))
            ref_args.append(tuple(torch.from_numpy(s) for s in states))
        else:
            args.append(tidal.tensor(states[0]))
            ref_args.append(torch.from_numpy(states[0]))
    assert_same_error(lambda: mod(*args), lambda: ref(*ref_args))


def test_rnn_cell_unknown_nonlinearity_fails_at_forward():
    mod, ref = make_pair("RNNCell", INPUT, HIDDEN, nonlinearity="gelu")
    x = np.zeros((2, INPUT))
    assert_same_error(lambda: mod(tidal.tensor(x)), lambda: ref(torch.from_numpy(x)))


@pytest.mark.parametrize("name", ["GRU", "LSTM"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_forward(rng, name, dtype):
    ref = getattr(torch.nn, name)(INPUT, HIDDEN, num_layers=2).to(getattr(torch, dtype))
    mod = getattr(tnn, name)(INPUT, HIDDEN, num_layers=2).to(getattr(tidal, dtype))
    load_from_torch(mod, ref)
    x, xr = pair(rng, (SEQ, BATCH, INPUT), dtype)
    out, ref_out = mod(x)[0], ref(xr)[0]
    assert out.dtype == getattr(tidal, dtype)
    assert_close(out, ref_out, rtol=2e-2, atol=2e-2)


def test_functional_forms_match_torch(rng):
    """The torch-shaped functions (torch.lstm, torch.gru_cell, ...) take the module's flat weights."""
    from tidal.nn import functional_rnn as R
    mod, ref = make_pair("LSTM", INPUT, HIDDEN, num_layers=2, bidirectional=True)
    x, xr = pair(rng, (SEQ, BATCH, INPUT))
    (h, hr), (c, cr) = pair(rng, (4, BATCH, HIDDEN)), pair(rng, (4, BATCH, HIDDEN))
    got = R.lstm(x, (h, c), mod._flat_weights, True, 2, 0.0, False, True, False)
    want = torch.lstm(xr, (hr, cr), ref._flat_weights, True, 2, 0.0, False, True, False)
    for g, w in zip(got, want):
        assert_close(g, w)
    cell, ref_cell = make_pair("GRUCell", INPUT, HIDDEN)
    weights = [cell.weight_ih, cell.weight_hh, cell.bias_ih, cell.bias_hh]
    ref_weights = [ref_cell.weight_ih, ref_cell.weight_hh, ref_cell.bias_ih, ref_cell.bias_hh]
    assert_close(R.gru_cell(x[0], h[0], *weights), torch.gru_cell(xr[0], hr[0], *ref_weights))
