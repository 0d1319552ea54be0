"""channels_last(_3d) tensors through the ops a CNN uses, against torch: each result's strides (so its
is_contiguous(memory_format=...)), dtype and values, and the input's gradient (values and strides). torch keeps the
format through elementwise ops and activations (TensorIterator), batch_norm, group_norm, convolutions (transposed
too), pools, padding, resampling and pixel shuffles; softmax, instance_norm and masked_fill give row-major results."""
import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc

RNG = np.random.default_rng(1212)


def F(L):
    return L.nn.functional


CASES_4D = {
    # elementwise: numbers, same-shape and broadcast operands on either side, dtype changes
    "add_number": lambda L, x: x + 1.5, "number_sub": lambda L, x: 2 - x, "mul_same": lambda L, x: x * x,
    "add_row_major": lambda L, x: x + x.contiguous(), "row_major_add": lambda L, x: x.contiguous() + x,
    "add_bias": lambda L, x: x + L.ones(4, 1, 1), "bias_add": lambda L, x: L.ones(1, 4, 1, 1) + x,
    "mul_int": lambda L, x: x * L.arange(6), "div_floor": lambda L, x: L.div(x, 0.3, rounding_mode="floor"),
    "pow": lambda L, x: x.abs().pow(1.5), "where": lambda L, x: L.where(x > 0, x, 0.1 * x),
    "clamp": lambda L, x: x.clamp(-0.5, 0.5), "clamp_tensor": lambda L, x: L.clamp(x, min=L.zeros(4, 1, 1)),
    "maximum": lambda L, x: L.maximum(x, L.zeros(4, 1, 1)), "lerp": lambda L, x: L.lerp(x, L.zeros(4, 5, 6), 0.3),
    "addcmul": lambda L, x: L.addcmul(x, x, L.ones(4, 1, 1), value=0.5), "compare": lambda L, x: x > 0,
    "exp": lambda L, x: x.exp(), "abs": lambda L, x: x.abs(), "nan_to_num": lambda L, x: (x / 0).nan_to_num(),
    "to_double": lambda L, x: x.double() * 2,
    # activations
    "relu": lambda L, x: F(L).relu(x), "relu6": lambda L, x: F(L).relu6(x),
    "leaky_relu": lambda L, x: F(L).leaky_relu(x, 0.1), "elu": lambda L, x: F(L).elu(x),
    "selu": lambda L, x: F(L).selu(x), "gelu": lambda L, x: F(L).gelu(x),
    "gelu_tanh": lambda L, x: F(L).gelu(x, approximate="tanh"), "silu": lambda L, x: F(L).silu(x),
    "mish": lambda L, x: F(L).mish(x), "hardswish": lambda L, x: F(L).hardswish(x),
    "hardsigmoid": lambda L, x: F(L).hardsigmoid(x), "sigmoid": lambda L, x: x.sigmoid(),
    "tanh": lambda L, x: x.tanh(), "softplus": lambda L, x: F(L).softplus(x), "hardtanh": lambda L, x: F(L).hardtanh(x),
    "prelu": lambda L, x: F(L).prelu(x, L.full((4,), 0.2)),
    "squeeze_excite": lambda L, x: x * L.sigmoid(x.mean((2, 3), keepdim=True)),
    "chain": lambda L, x: ((x * 2 + 1).sigmoid() - x) * L.ones(4, 1, 1),
    # normalization
    "batch_norm_train": lambda L, x: F(L).batch_norm(x, L.zeros(4), L.ones(4), L.full((4,), 1.5), L.full((4,), 0.1),
                                                     training=True),
    "batch_norm_eval": lambda L, x: F(L).batch_norm(x, L.full((4,), 0.2), L.full((4,), 2.0), training=False),
    "group_norm": lambda L, x: F(L).group_norm(x, 2, L.full((4,), 1.5), L.full((4,), 0.1)),
    "instance_norm": lambda L, x: F(L).instance_norm(x), "layer_norm": lambda L, x: F(L).layer_norm(x, (6,)),
    "normalize": lambda L, x: F(L).normalize(x, dim=1), "dropout_eval": lambda L, x: F(L).dropout(x, 0.5, False),
    "softmax": lambda L, x: F(L).softmax(x, 1), "log_softmax": lambda L, x: F(L).log_softmax(x, 2),
    "softmax_last": lambda L, x: F(L).softmax(x, -1), "masked_fill": lambda L, x: x.masked_fill(x > 0, 0.0),
    # convolutions and pools
    "conv2d": lambda L, x: F(L).conv2d(x, L.ones(3, 4, 3, 3), L.ones(3), padding=1),
    "conv_grouped": lambda L, x: F(L).conv2d(x, L.ones(4, 1, 3, 3), groups=4),
    "conv_transpose2d": lambda L, x: F(L).conv_transpose2d(x, L.ones(4, 3, 3, 3), L.ones(3), stride=2),
    "conv_transpose_weight": lambda L, x: F(L).conv_transpose2d(
        x.contiguous(), L.ones(4, 3, 3, 3).to(memory_format=L.channels_last)),
    "max_pool": lambda L, x: F(L).max_pool2d(x, 2), "avg_pool": lambda L, x: F(L).avg_pool2d(x, 2),
    "adaptive_avg": lambda L, x: F(L).adaptive_avg_pool2d(x, 1),
    # padding, resampling, shuffles
    "pad": lambda L, x: F(L).pad(x, (1, 2, 0, 1)), "pad_channels": lambda L, x: F(L).pad(x, (1, 1, 1, 1, 1, 1)),
    "pad_reflect": lambda L, x: F(L).pad(x, (1, 1, 2, 2), mode="reflect"),
    "pad_replicate": lambda L, x: F(L).pad(x, (1, 1, 1, 1), mode="replicate"),
    "pad_circular": lambda L, x: F(L).pad(x, (1, 1, 1, 1), mode="circular"),
    "nearest": lambda L, x: F(L).interpolate(x, scale_factor=2),
    "bilinear": lambda L, x: F(L).interpolate(x, size=(7, 9), mode="bilinear"),
    "bilinear_corners": lambda L, x: F(L).interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
    "bicubic": lambda L, x: F(L).interpolate(x, scale_factor=2, mode="bicubic"),
    "antialias": lambda L, x: F(L).interpolate(x, size=(3, 4), mode="bilinear", antialias=True),
    "pixel_shuffle": lambda L, x: F(L).pixel_shuffle(x, 2), "channel_shuffle": lambda L, x: F(L).channel_shuffle(x, 2),
    "slice_mul": lambda L, x: x[:, :2] * 2, "narrow_add": lambda L, x: x.narrow(3, 0, 3) + L.ones(4, 1, 1),
    "pixel_unshuffle": lambda L, x: F(L).pixel_unshuffle(x[:, :, :4], 2),
    "upsample_module": lambda L, x: L.nn.Upsample(scale_factor=2)(x),
    "mse_none": lambda L, x: F(L).mse_loss(x, L.zeros(2, 4, 5, 6), reduction="none"),
}
CASES_5D = {
    "add3d": lambda L, x: x + L.ones(4, 1, 1, 1), "gelu3d": lambda L, x: F(L).gelu(x),
    "batch_norm3d": lambda L, x: F(L).batch_norm(x, None, None, training=True),
    "group_norm3d": lambda L, x: F(L).group_norm(x, 2),
    "instance_norm3d": lambda L, x: F(L).instance_norm(x), "softmax3d": lambda L, x: F(L).softmax(x, 1),
    "conv3d": lambda L, x: F(L).conv3d(x, L.ones(3, 4, 2, 2, 2)),
    "conv_transpose3d": lambda L, x: F(L).conv_transpose3d(x, L.ones(4, 3, 2, 2, 2)),
    "max_pool3d": lambda L, x: F(L).max_pool3d(x, 2), "pad3d": lambda L, x: F(L).pad(x, (1, 1, 1, 1, 1, 1)),
    "replicate3d": lambda L, x: F(L).pad(x, (1, 1, 1, 1, 1, 1), mode="replicate"),
    "trilinear": lambda L, x: F(L).interpolate(x, scale_factor=2, mode="trilinear"),
}


def _result(L, fn, a, fmt, grad_seed):
    """(strides, dtype, values, input gradient strides and values) of fn on a channels_last(_3d) leaf."""
    x = L.tensor(a).to(memory_format=getattr(L, fmt))
    differentiable = True
    x.requires_grad_()
    y = fn(L, x)
    if not y.requires_grad:
        differentiable = False
    out = [tuple(y.stride()), str(y.dtype).rsplit(".", 1)[-1], y.detach().numpy().copy()]
    if differentiable:
        g = np.random.default_rng(grad_seed).standard_normal(tuple(y.shape)).astype("float32")
        y.backward(L.tensor(g).to(y.dtype))
        out += [tuple(x.grad.stride()), x.grad.numpy().copy()]
    return out


def _compare(cases, name, shape, fmt):
    a = RNG.standard_normal(shape).astype("float32")
    got, want = _result(tc, cases[name], a, fmt, 7), _result(torch, cases[name], a, fmt, 7)
    assert got[0] == want[0], f"{name}: strides {got[0]} != torch's {want[0]}"
    assert got[1] == want[1], f"{name}: dtype {got[1]} != torch's {want[1]}"
    np.testing.assert_allclose(got[2], want[2], rtol=1e-4, atol=1e-5, equal_nan=True)
    assert len(got) == len(want), f"{name}: gradient presence differs"
    if len(got) > 3:
        assert got[3] == want[3], f"{name}: gradient strides {got[3]} != torch's {want[3]}"
        np.testing.assert_allclose(got[4], want[4], rtol=1e-4, atol=1e-4, equal_nan=True)


@pytest.mark.parametrize("name", list(CASES_4D))
def test_channels_last_results_as_torch(name):
    _compare(CASES_4D, name, (2, 4, 5, 6), "channels_last")


@pytest.mark.parametrize("name", list(CASES_5D))
def test_channels_last_3d_results_as_torch(name):
    _compare(CASES_5D, name, (2, 4, 3, 4, 5), "channels_last_3d")


def test_is_contiguous_in_the_format_after_each_op():
    """The check a user writes: the activation of a channels_last conv block stays channels_last."""
    x = tc.randn(2, 3, 8, 8).to(memory_format=tc.channels_last)
    block = tc.nn.Sequential(tc.nn.Conv2d(3, 4, 3, padding=1), tc.nn.BatchNorm2d(4), tc.nn.ReLU(),
                             tc.nn.MaxPool2d(2)).to(memory_format=tc.channels_last)
    for layer in block:
        x = layer(x)
        assert x.is_contiguous(memory_format=tc.channels_last) and not x.is_contiguous(), type(layer).__name__


def _resnet(L):
    nn = L.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)
            self.conv2, self.bn2 = nn.Conv2d(4, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4)

        def forward(self, x):
            y = L.relu(self.bn1(self.conv1(x)))
            return L.relu(self.bn2(self.conv2(y)) + x)

    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), Block(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(4, 5))


def test_resnet_block_trains_as_torch():
    """A channels_last residual network: every layer's output layout, the loss, and parameters after SGD steps."""
    torch.manual_seed(0)
    ref = _resnet(torch)
    model = _resnet(tc)
    model.load_state_dict({k: tc.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    ref, model = ref.to(memory_format=torch.channels_last), model.to(memory_format=tc.channels_last)
    layouts = {"tidal": [], "torch": []}
    for net, key in ((model, "tidal"), (ref, "torch")):
        for m in net.modules():
            if not isinstance(m, (tc.nn.Sequential, torch.nn.Sequential)):
                m.register_forward_hook(lambda mod, i, o, key=key: layouts[key].append(tuple(o.stride())))
    opt, ref_opt = tc.optim.SGD(model.parameters(), lr=0.1), torch.optim.SGD(ref.parameters(), lr=0.1)
    a = RNG.standard_normal((4, 3, 8, 8)).astype("float32")
    target = RNG.integers(0, 5, 4)
    for _ in range(2):
        for net, lib, o in ((model, tc, opt), (ref, torch, ref_opt)):
            o.zero_grad()
            x = lib.tensor(a).to(memory_format=lib.channels_last)
            loss = lib.nn.functional.cross_entropy(net(x), lib.tensor(target))
            loss.backward()
            o.step()
        assert layouts["tidal"] == layouts["torch"]
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        assert p.grad.stride() == q.grad.stride(), name
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5, err_msg=name)


def test_fused_chain_of_channels_last_inputs(async_mode, fusion_settings):
    """In async mode elementwise runs fuse into one kernel: the fused results keep torch's layout and values."""
    a = RNG.standard_normal((2, 4, 5, 6)).astype("float32")
    outs = {}
    for L in (tc, torch):
        x = L.tensor(a).to(memory_format=L.channels_last)
        h = (x * 0.5 + 1.0).tanh()
        outs[L] = (h, F(L).silu(h - x) * L.ones(4, 1, 1), L.where(x > 0, h, x).exp())
    tidal.sync()
    for got, want in zip(outs[tc], outs[torch]):
        assert got.stride() == want.stride()
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_row_major_and_permuted_inputs():
    """What stays as it is: row-major inputs give row-major results, a leaf's gradient takes its layout."""
    a = RNG.standard_normal((2, 4, 5, 6)).astype("float32")
    for L in (tc, torch):
        x = L.tensor(a, requires_grad=True)
        y = F(L).relu(x * 2 + L.ones(4, 1, 1))
        assert y.stride() == (120, 30, 6, 1) and y.is_contiguous()
        y.sum().backward()
        assert x.grad.stride() == (120, 30, 6, 1)
