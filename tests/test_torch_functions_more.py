"""torch.* functions with ATen signatures and process switches, against torch: convolution, grid_sampler,
affine_grid_generator, the recurrent functions and cells (packed overloads too), cond/while_loop, anomaly /
warn-always / deterministic debug switches, set_default_tensor_type, get_device."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc
from complex_helpers import raises_like

RNG = np.random.default_rng(1613)


def _both(*shape):
    a = RNG.standard_normal(shape)
    return tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _check(got, want, ins, rtol=1e-8, atol=1e-10):
    got = got if isinstance(got, (tuple, list)) else (got,)
    want = want if isinstance(want, (tuple, list)) else (want,)
    assert len(got) == len(want)
    loss_t, loss_w = 0, 0
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=rtol, atol=atol)
        cot = RNG.standard_normal(tuple(w.shape))
        loss_t = loss_t + (g * tc.tensor(cot)).sum()
        loss_w = loss_w + (w * torch.tensor(cot)).sum()
    loss_t.backward()
    loss_w.backward()
    for t, w in ins:
        np.testing.assert_allclose(t.grad.numpy(), w.grad.numpy(), rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("spatial", [1, 2, 3])
@pytest.mark.parametrize("transposed", [False, True])
def test_convolution(spatial, transposed):
    x = _both(2, 4, *([5] * spatial))
    w = _both(*((4, 3) if transposed else (6, 2)), *([3] * spatial))
    b = _both(6 if transposed else 6)
    stride, padding, dilation = [2] * spatial, [1] * spatial, [1] * spatial
    out_pad, groups = [1] * spatial if transposed else [0] * spatial, 2
    got = tc.convolution(x[0], w[0], b[0], stride, padding, dilation, transposed, out_pad, groups)
    want = torch.convolution(x[1], w[1], b[1], stride, padding, dilation, transposed, out_pad, groups)
    _check(got, want, [x, w, b])


def test_convolution_errors():
    raises_like(lambda: tc.convolution(tc.ones(1, 1, 3), tc.ones(2), None, [1], [0], [1], False, [0], 1),
                lambda: torch.convolution(torch.ones(1, 1, 3), torch.ones(2), None, [1], [0], [1], False, [0], 1))


@pytest.mark.parametrize("interpolation", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_and_affine_grid_generator(interpolation, padding, align):
    x = _both(2, 3, 4, 5)
    theta = _both(2, 2, 3)
    grid_t = tc.affine_grid_generator(theta[0], [2, 3, 3, 4], align)
    grid_w = torch.affine_grid_generator(theta[1], [2, 3, 3, 4], align)
    got = tc.grid_sampler(x[0], grid_t, interpolation, padding, align)
    want = torch.grid_sampler(x[1], grid_w, interpolation, padding, align)
    _check((got, grid_t), (want, grid_w), [x, theta], rtol=1e-7, atol=1e-9)


def _rnn_params(lib, mode, layers, bidirectional, hidden, inputs, biases):
    gates = {"lstm": 4, "gru": 3}.get(mode, 1)
    params, arrays = [], []
    for layer in range(layers):
        for _ in range(2 if bidirectional else 1):
            width = inputs if layer == 0 else hidden * (2 if bidirectional else 1)
            shapes = [(gates * hidden, width), (gates * hidden, hidden)] + \
                ([(gates * hidden,), (gates * hidden,)] if biases else [])
            arrays += [RNG.standard_normal(s) * 0.3 for s in shapes]
    return arrays


@pytest.mark.parametrize("mode", ["rnn_tanh", "rnn_relu", "gru", "lstm"])
@pytest.mark.parametrize("bidirectional,batch_first,biases", [(False, False, True), (True, True, False)])
def test_recurrent_functions(mode, bidirectional, batch_first, biases):
    layers, hidden, feats, seq, batch = 2, 3, 4, 5, 2
    arrays = _rnn_params(None, mode, layers, bidirectional, hidden, feats, biases)
    ps = [(tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)) for a in arrays]
    x = _both(*((batch, seq, feats) if batch_first else (seq, batch, feats)))
    dirs = 2 if bidirectional else 1
    h = _both(layers * dirs, batch, hidden)
    hx_t, hx_w = h[0], h[1]
    ins = [x, h] + ps
    if mode == "lstm":
        c = _both(layers * dirs, batch, hidden)
        hx_t, hx_w = (h[0], c[0]), (h[1], c[1])
        ins.append(c)
    args = (biases, layers, 0.0, True, bidirectional, batch_first)
    got = getattr(tc, mode)(x[0], hx_t, [p for p, _ in ps], *args)
    want = getattr(torch, mode)(x[1], hx_w, [p for _, p in ps], *args)
    _check(got, want, ins)


@pytest.mark.parametrize("mode", ["gru", "lstm"])
def test_recurrent_packed_overload(mode):
    layers, hidden, feats = 1, 3, 2
    arrays = _rnn_params(None, mode, layers, False, hidden, feats, True)
    ps = [(tc.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)) for a in arrays]
    data = _both(6, feats)  # batch sizes 3, 2, 1
    sizes_t, sizes_w = tc.tensor([3, 2, 1]), torch.tensor([3, 2, 1])
    h = _both(1, 3, hidden)
    ins = [data, h] + ps
    hx_t, hx_w = h[0], h[1]
    if mode == "lstm":
        c = _both(1, 3, hidden)
        hx_t, hx_w = (h[0], c[0]), (h[1], c[1])
        ins.append(c)
    got = getattr(tc, mode)(data[0], sizes_t, hx_t, [p for p, _ in ps], True, layers, 0.0, True, False)
    want = getattr(torch, mode)(data[1], sizes_w, hx_w, [p for _, p in ps], True, layers, 0.0, True, False)
    _check(got, want, ins)


@pytest.mark.parametrize("mode", ["rnn_tanh_cell", "rnn_relu_cell", "gru_cell", "lstm_cell"])
def test_cells(mode):
    gates = {"lstm_cell": 4, "gru_cell": 3}.get(mode, 1)
    x, h = _both(2, 4), _both(2, 3)
    w_ih, w_hh, b_ih, b_hh = _both(gates * 3, 4), _both(gates * 3, 3), _both(gates * 3), _both(gates * 3)
    ins = [x, h, w_ih, w_hh, b_ih, b_hh]
    hx_t, hx_w = h[0], h[1]
    if mode == "lstm_cell":
        c = _both(2, 3)
        hx_t, hx_w = (h[0], c[0]), (h[1], c[1])
        ins.append(c)
    got = getattr(tc, mode)(x[0], hx_t, w_ih[0], w_hh[0], b_ih[0], b_hh[0])
    want = getattr(torch, mode)(x[1], hx_w, w_ih[1], w_hh[1], b_ih[1], b_hh[1])
    _check(got, want, ins)


def test_cond():
    # torch.cond compiles its branches (seconds per call) and then runs the one pred picks: compared here with
    # that branch run by torch directly
    x = _both(3)
    got = tc.cond(x[0].sum() > x[0].sum() - 1, lambda a: a * 2, lambda a: a.sin(), (x[0],))
    _check(got, x[1] * 2, [x])
    x = _both(3)
    got = tc.cond(x[0].sum() < x[0].sum() - 1, lambda a: a * 2, lambda a: a.sin(), (x[0],))
    _check(got, x[1].sin(), [x])  # the false branch, as torch's eager branch computes it
    assert float(tc.cond(True, lambda a, b: a + b, lambda a, b: a - b, [tc.ones(1), tc.ones(1)])) == 2.0
    assert float(tc.cond(tc.tensor(0.0), lambda a: a + 1, lambda a: a - 1, (tc.zeros(1),))) == -1.0
    raises_like(lambda: tc.cond(tc.tensor([True, False]), lambda a: a, lambda a: a, (tc.ones(1),)),
                lambda: torch.cond(torch.tensor([True, False]), lambda a: a, lambda a: a, (torch.ones(1),)))
    raises_like(lambda: tc.cond(tc.tensor(True), lambda a: a, lambda a: a, tc.ones(2)),
                lambda: torch.cond(torch.tensor(True), lambda a: a, lambda a: a, torch.ones(2)))
    raises_like(lambda: tc.cond(tc.tensor(True), lambda a: a, lambda a: a, (tc.ones(2), 3)),
                lambda: torch.cond(torch.tensor(True), lambda a: a, lambda a: a, (torch.ones(2), 3)))
    raises_like(lambda: tc.cond("yes", lambda: 1, lambda: 2), lambda: torch.cond("yes", lambda: 1, lambda: 2))


def test_while_loop():
    x = _both(3)
    got = tc.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2 + 1), (tc.tensor(0), x[0]))
    want = torch.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * 2 + 1), (torch.tensor(0), x[1]))
    assert isinstance(got, tuple) and int(got[0]) == int(want[0]) == 3
    np.testing.assert_allclose(got[1].detach().numpy(), want[1].detach().numpy())
    bare = tc.while_loop(lambda i: i < 3, lambda i: i + 1, (tc.tensor(0),))  # torch's: a bare tensor back
    assert isinstance(bare, tc.Tensor) and int(bare) == 3  # (each torch.while_loop call compiles: seconds)
    assert tc.while_loop(lambda i: i < 3, lambda i: (i + 1,), (3,)) == (3,)  # no iteration: the inputs, a tuple
    with pytest.raises(RuntimeError, match="tensor or int leaves"):  # torch: an AssertionError of its tracer
        tc.while_loop(lambda i, j: i < 3, lambda i, j: (i, j), (tc.ones(1), 2.5))
    raises_like(lambda: tc.while_loop(None, lambda i: i, (1,)), lambda: torch.while_loop(None, lambda i: i, (1,)))


def test_anomaly_switches():
    for lib in (tc, torch):
        try:
            assert not lib.is_anomaly_enabled()
            lib.set_anomaly_enabled(True)
            assert lib.is_anomaly_enabled() and lib.is_anomaly_check_nan_enabled()
            lib.set_anomaly_enabled(True, False)
            assert lib.is_anomaly_enabled() and not lib.is_anomaly_check_nan_enabled()
        finally:
            lib.set_anomaly_enabled(False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with lib.autograd.detect_anomaly():
                assert lib.is_anomaly_enabled()
        assert not lib.is_anomaly_enabled()
    raises_like(lambda: tc.set_anomaly_enabled(1), lambda: torch.set_anomaly_enabled(1))


def test_warn_always():
    for lib in (tc, torch):
        assert not lib.is_warn_always_enabled()
        lib.set_warn_always(True)
        assert lib.is_warn_always_enabled()
        lib.set_warn_always(False)
    raises_like(lambda: tc.set_warn_always(1), lambda: torch.set_warn_always(1))


@pytest.mark.parametrize("mode", [0, 1, 2, "default", "warn", "error", 3, "x", 1.0])
def test_deterministic_debug_mode(mode):
    try:
        for lib in (tc, torch):
            try:
                lib.set_deterministic_debug_mode(mode)
            except (RuntimeError, TypeError):
                raises_like(lambda: tc.set_deterministic_debug_mode(mode),
                            lambda: torch.set_deterministic_debug_mode(mode))
                return
        assert tc.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode()
        assert tc.are_deterministic_algorithms_enabled() == torch.are_deterministic_algorithms_enabled()
        assert tc.is_deterministic_algorithms_warn_only_enabled() == \
            torch.is_deterministic_algorithms_warn_only_enabled()
    finally:
        tc.use_deterministic_algorithms(False)
        torch.use_deterministic_algorithms(False)


@pytest.mark.parametrize("kind", ["DoubleTensor", "torch.DoubleTensor", "LongTensor", "torch.LongTensor",
                                  "float64", "torch.cuda.FloatTensor", "foo.Bar"])
def test_set_default_tensor_type(kind):
    def arg(lib):
        if kind.startswith(("torch.", "foo.")):
            return kind
        return getattr(lib, kind)
    if kind == "torch.cuda.FloatTensor" and (tc.cuda.is_available() or torch.cuda.is_available()):
        pytest.skip("needs a machine without CUDA in both")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch warns once per process (checked for tidal below)
            try:
                torch.set_default_tensor_type(arg(torch))
            except (TypeError, ModuleNotFoundError):
                raises_like(lambda: tc.set_default_tensor_type(arg(tc)),
                            lambda: torch.set_default_tensor_type(arg(torch)))
                return
        with pytest.warns(UserWarning, match=r"set_default_tensor_type\(\) is deprecated as of PyTorch 2.1"):
            tc.set_default_tensor_type(arg(tc))
        assert str(tc.get_default_dtype())[6:] == str(torch.get_default_dtype())[6:] == "float64"
        assert tc.ones(1).dtype is tc.float64
    finally:
        tc.set_default_dtype(tc.float32)
        torch.set_default_dtype(torch.float32)


def test_get_device_and_inference_mode():
    assert tc.get_device(tc.ones(1)) == torch.get_device(torch.ones(1)) == -1
    raises_like(lambda: tc.get_device(3), lambda: torch.get_device(3))
    assert not tc.is_inference_mode_enabled() and not torch.is_inference_mode_enabled()
    with tc.inference_mode(), torch.inference_mode():
        assert tc.is_inference_mode_enabled() and torch.is_inference_mode_enabled()
