"""The torch names added by the s6 surface pass, each compared with real torch 2.13: torch.nn.attention,
torch.cpu, nn.grad, nn.utils.fusion/stateless/skip_init, norm `bias=`, and the small torch.* names."""
import warnings

import numpy as np
import pytest
import torch
import torch.nn.attention.bias

import tidal
import tidal.compat as tc
from torch_compare import check


def _pair(*shape, seed=0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (torch.tensor(a, requires_grad=requires_grad), tidal.tensor(a, requires_grad=requires_grad))


# ---- torch.nn.attention -------------------------------------------------------------------------

def test_sdp_backend_enum_as_torch():
    ref, mine = torch.nn.attention.SDPBackend, tc.nn.attention.SDPBackend
    assert list(mine.__members__) == list(ref.__members__)
    for name in ref.__members__:
        assert int(getattr(mine, name)) == int(getattr(ref, name))
        assert str(getattr(mine, name)) == str(getattr(ref, name))
        assert repr(getattr(mine, name)) == repr(getattr(ref, name))


@pytest.mark.parametrize("backends", ["MATH", "FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION",
                                      ("EFFICIENT_ATTENTION", "MATH"), ()])
def test_sdpa_kernel_switches_and_refusal(backends):
    """Inside sdpa_kernel the switches read as torch's; on the CPU only math/flash may run, else torch's error."""
    (tq, mq) = _pair(1, 2, 4, 8)
    results = []
    for lib, attn, cuda in ((torch, torch.nn.attention, torch.backends.cuda),
                            (tc, tc.nn.attention, tc.backends.cuda)):
        chosen = getattr(attn.SDPBackend, backends) if isinstance(backends, str) else \
            [getattr(attn.SDPBackend, b) for b in backends]
        q = tq if lib is torch else mq
        with attn.sdpa_kernel(chosen) as value:
            flags = (cuda.flash_sdp_enabled(), cuda.math_sdp_enabled(), cuda.mem_efficient_sdp_enabled(),
                     cuda.cudnn_sdp_enabled(), value)
            try:
                out = lib.nn.functional.scaled_dot_product_attention(q, q, q)
            except RuntimeError as e:
                out = str(e)
        results.append((flags, out, cuda.math_sdp_enabled() and cuda.flash_sdp_enabled()))
    (rflags, rout, rrestored), (mflags, mout, mrestored) = results
    assert mflags == rflags and mrestored and rrestored
    if isinstance(rout, str):
        assert mout == rout
    else:
        check(mout, rout, rtol=1e-5, atol=1e-6)


def test_sdpa_kernel_type_error_and_priority():
    for attn in (torch.nn.attention, tc.nn.attention):
        with pytest.raises(AssertionError, match="Backend must be an instance of SDPBackend or a list of SDPBackend "
                                                 "instances, got str"):
            with attn.sdpa_kernel("math"):
                pass
    B = tc.nn.attention.SDPBackend
    with tc.nn.attention.sdpa_kernel([B.MATH, B.CUDNN_ATTENTION], set_priority=True):
        assert tc.nn.attention.priority_order()[:2] == [0, 3]
    with torch.nn.attention.sdpa_kernel([torch.nn.attention.SDPBackend.MATH,
                                         torch.nn.attention.SDPBackend.CUDNN_ATTENTION], set_priority=True):
        assert torch._C._get_sdp_priority_order()[:2] == [0, 3]


def test_flash_attention_registry():
    attn = tc.nn.attention
    assert attn.current_flash_attention_impl() is None
    with pytest.raises(ValueError, match="Unknown flash attention impl 'nope'"):
        attn.activate_flash_attention_impl("nope")
    removed = []

    class Handle:
        def remove(self):
            removed.append(True)

    attn.register_flash_attention_impl("Mine", register_fn=Handle)
    try:
        assert "Mine" in attn.list_flash_attention_impls()
        attn.activate_flash_attention_impl("Mine")
        assert attn.current_flash_attention_impl() == "Mine"
        attn.restore_flash_attention_impl()
        assert removed == [True] and attn.current_flash_attention_impl() is None
    finally:
        attn._registry._IMPLS.pop("Mine")
    q = tc.randn(1, 1, 2, 4)
    params = attn.SDPAParams(q, q, q, None, 0.0, False, False)
    assert attn.can_use_flash_attention(params) is False and attn.can_use_efficient_attention(params) is False


@pytest.mark.parametrize("lq,lk", [(3, 5), (4, 4), (5, 3)])
@pytest.mark.parametrize("variant", ["causal_upper_left", "causal_lower_right"])
def test_causal_bias(variant, lq, lk):
    """The bias materializes as torch's mask; attention with it matches torch, gradients too."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rb = getattr(torch.nn.attention.bias, variant)(lq, lk)
        mb = getattr(tc.nn.attention.bias, variant)(lq, lk)
    check(mb._materialize(), rb._materialize())
    tq, mq = _pair(2, 2, lq, 4, seed=1, requires_grad=True)
    tk, mk = _pair(2, 2, lk, 4, seed=2, requires_grad=True)
    rout = torch.nn.functional.scaled_dot_product_attention(tq, tk, tk, rb)
    mout = tc.nn.functional.scaled_dot_product_attention(mq, mk, mk, mb)
    check(mout, rout.as_subclass(torch.Tensor), rtol=1e-5, atol=1e-6)
    rout.sum().backward()
    mout.sum().backward()
    check(mq.grad, tq.grad, rtol=1e-4, atol=1e-5)
    check(mk.grad, tk.grad, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="CausalBias should not be used with causal=True"):
        tc.nn.functional.scaled_dot_product_attention(mq, mk, mk, mb, is_causal=True)


# ---- torch.cpu ----------------------------------------------------------------------------------

def test_cpu_module_as_torch():
    for name in ("is_available", "is_initialized", "current_device", "device_count"):
        assert getattr(tc.cpu, name)() == getattr(torch.cpu, name)()
    ref, mine = torch.cpu.get_capabilities(), tc.cpu.get_capabilities()
    assert mine["architecture"] == ref["architecture"]
    shared = [k for k in mine if k in ref and isinstance(ref[k], bool)]
    assert len(shared) > 20 and {k: mine[k] for k in shared} == {k: ref[k] for k in shared}
    with pytest.raises(TypeError):
        mine["avx2"] = True  # read-only, as torch's MappingProxyType
    s = tc.cpu.Stream()
    assert tc.cpu.current_stream() is not s
    with tc.cpu.stream(s):
        assert tc.cpu.current_stream() is s
    assert tc.cpu.current_stream() is not s
    e = tc.cpu.Event()
    assert e.query() is True and e.record() is None and e.synchronize() is None
    x = tc.ones(3) * 2
    tc.cpu.synchronize()
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_cpu_amp_deprecated_spellings():
    for lib in (torch, tc):
        with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.autocast\(args...\)` is deprecated"):
            a = lib.cpu.amp.autocast()
        with pytest.warns(FutureWarning, match=r"`torch.cpu.amp.GradScaler\(args...\)` is deprecated"):
            lib.cpu.amp.GradScaler()
        assert a.device == "cpu" and str(a.fast_dtype).endswith("bfloat16")


# ---- torch.nn.grad ------------------------------------------------------------------------------

@pytest.mark.parametrize("spatial,shape,stride,padding,dilation,groups", [
    (1, (2, 4, 9), 2, 1, 1, 2), (2, (2, 3, 7, 6), (2, 1), (1, 0), (1, 2), 1), (3, (1, 2, 5, 5, 5), 1, 1, 1, 1)])
def test_nn_grad_conv(spatial, shape, stride, padding, dilation, groups):
    """conv*_input/conv*_weight as torch's, and differentiable (double backward through them)."""
    rng = np.random.default_rng(3)
    out_channels = 4
    w_shape = (out_channels, shape[1] // groups) + (3,) * spatial
    x, w = rng.standard_normal(shape).astype(np.float32), rng.standard_normal(w_shape).astype(np.float32)
    conv = getattr(torch.nn.functional, f"conv{spatial}d")
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    go = rng.standard_normal(conv(torch.tensor(x), torch.tensor(w), **kw).shape).astype(np.float32)
    results = []
    for lib, make in ((torch, torch.tensor), (tc, tidal.tensor)):
        tw, tx, tg = make(w).requires_grad_(), make(x).requires_grad_(), make(go).requires_grad_()
        gi = getattr(lib.nn.grad, f"conv{spatial}d_input")(shape, tw, tg, **kw)
        gw = getattr(lib.nn.grad, f"conv{spatial}d_weight")(tx, w_shape, tg, **kw)
        (gi.square().sum() + gw.square().sum()).backward()
        results.append((gi, gw, tw.grad, tx.grad, tg.grad))
    for mine, ref in zip(results[1], results[0]):
        check(mine, ref, rtol=1e-4, atol=1e-4)
    assert tc.nn.functional.grad is tc.nn.grad


# ---- torch.nn.utils: fusion, stateless, skip_init, memory format --------------------------------

def _copy_module(src, dst):
    dst.load_state_dict({k: tidal.tensor(v.detach().numpy()) for k, v in src.state_dict().items()})


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn_eval(transpose):
    torch.manual_seed(0)
    rconv = (torch.nn.ConvTranspose2d(3, 4, 3) if transpose else torch.nn.Conv2d(3, 4, 3, bias=False)).eval()
    rbn = torch.nn.BatchNorm2d(4).eval()
    with torch.no_grad():
        rbn.running_mean.uniform_(-1, 1), rbn.running_var.uniform_(0.5, 2), rbn.weight.uniform_(0.5, 2)
        rbn.bias.uniform_(-1, 1)
    mconv = (tc.nn.ConvTranspose2d(3, 4, 3) if transpose else tc.nn.Conv2d(3, 4, 3, bias=False)).eval()
    mbn = tc.nn.BatchNorm2d(4).eval()
    _copy_module(rconv, mconv)
    _copy_module(rbn, mbn)
    rf = torch.nn.utils.fuse_conv_bn_eval(rconv, rbn, transpose)
    mf = tc.nn.utils.fuse_conv_bn_eval(mconv, mbn, transpose)
    assert mf is not mconv and type(mf.weight).__name__ == "Parameter" and mf.weight.requires_grad
    check(mf.weight, rf.weight, rtol=1e-5, atol=1e-6)
    check(mf.bias, rf.bias, rtol=1e-5, atol=1e-6)
    tx, mx = _pair(2, 3, 6, 6)
    check(mf(mx), rf(tx), rtol=1e-4, atol=1e-5)
    check(mf(mx), mbn(mconv(mx)), rtol=1e-4, atol=1e-5)
    mconv.train()
    with pytest.raises(AssertionError, match="Fusion only for eval!"):
        tc.nn.utils.fuse_conv_bn_eval(mconv, mbn)


def test_fuse_linear_bn_eval():
    torch.manual_seed(1)
    rlin, rbn = torch.nn.Linear(5, 4).eval(), torch.nn.BatchNorm1d(4).eval()
    with torch.no_grad():
        rbn.running_mean.uniform_(-1, 1), rbn.running_var.uniform_(0.5, 2)
    mlin, mbn = tc.nn.Linear(5, 4).eval(), tc.nn.BatchNorm1d(4).eval()
    _copy_module(rlin, mlin)
    _copy_module(rbn, mbn)
    rf, mf = torch.nn.utils.fuse_linear_bn_eval(rlin, rbn), tc.nn.utils.fuse_linear_bn_eval(mlin, mbn)
    check(mf.weight, rf.weight, rtol=1e-5, atol=1e-6)
    check(mf.bias, rf.bias, rtol=1e-5, atol=1e-6)
    bad = tc.nn.BatchNorm1d(3).eval()
    with pytest.raises(AssertionError, match="linear.out_features=4 and bn.num_features=3"):
        tc.nn.utils.fuse_linear_bn_eval(mlin, bad)
    w, b = tc.nn.utils.fuse_linear_bn_weights(mlin.weight, None, mbn.running_mean, mbn.running_var, 1e-5,
                                              mbn.weight, mbn.bias)
    rw, rb = torch.nn.utils.fuse_linear_bn_weights(rlin.weight, None, rbn.running_mean, rbn.running_var, 1e-5,
                                                   rbn.weight, rbn.bias)
    check(w, rw, rtol=1e-5, atol=1e-6)
    check(b, rb, rtol=1e-5, atol=1e-6)
    assert b.requires_grad == rb.requires_grad


def test_stateless_functional_call():
    lin = tc.nn.Linear(3, 2)
    new = {"weight": tc.ones(2, 3), "bias": tc.zeros(2)}
    x = tc.tensor([[1.0, 2.0, 3.0]])
    with pytest.warns(FutureWarning, match="torch.nn.utils.stateless.functional_call` is deprecated"):
        out = tc.nn.utils.stateless.functional_call(lin, new, (x,))
    assert out.tolist() == [[6.0, 6.0]] and lin.weight.tolist() != [[1.0] * 3] * 2


def test_skip_init_and_conv_memory_format():
    m = tc.nn.utils.skip_init(tc.nn.Linear, 5, 1)
    assert isinstance(m, tc.nn.Linear) and tuple(m.weight.shape) == (1, 5) and m.weight.requires_grad
    for lib in (torch, tc):
        with pytest.raises(RuntimeError, match="Expected a Module; got"):
            lib.nn.utils.skip_init(int)
        with pytest.raises(RuntimeError, match="Module must support a 'device' arg to skip initialization"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
    for lib in (torch, tc):
        net = lib.nn.Sequential(lib.nn.Conv2d(3, 4, 3), lib.nn.Sequential(lib.nn.ConvTranspose2d(4, 2, 3)))
        before = net[0].weight.detach().clone()
        out = lib.nn.utils.convert_conv2d_weight_memory_format(net, lib.channels_last)
        assert out is net
        assert net[0].weight.is_contiguous(memory_format=lib.channels_last)
        assert net[1][0].weight.is_contiguous(memory_format=lib.channels_last)
        assert lib.equal(net[0].weight, before)


# ---- Module: backward hooks, extra state, set_submodule, to_empty ------------------------------

def _hook_program(lib, state):
    """A module with two outputs and a non-tensor argument, hooked; returns what the hooks saw and the grads."""
    class Two(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(3, 2)

        def forward(self, x, y, k=3):
            return self.lin(x) * y, x.sum() * k

    m = Two()
    m.load_state_dict({k: lib.tensor(v) for k, v in state.items()})
    seen = []

    def full(mod, grad_input, grad_output):
        seen.append(("full", [None if g is None else g.detach().numpy().copy() for g in grad_input],
                     [None if g is None else g.detach().numpy().copy() for g in grad_output]))

    def pre(mod, grad_output):
        seen.append(("pre", [None if g is None else g.detach().numpy().copy() for g in grad_output]))
        return (grad_output[0] * 2, grad_output[1])

    m.register_full_backward_hook(full)
    m.register_full_backward_pre_hook(pre)
    a = np.arange(12, dtype=np.float32).reshape(4, 3) / 7
    x, y = lib.tensor(a, requires_grad=True), lib.tensor(np.full((4, 2), 0.5, np.float32))
    out, s = m(x, y, 5)
    (out.sum() + s).backward()
    grads = [x.grad.numpy().copy(), m.lin.weight.grad.numpy().copy()]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out, s = m(x.detach(), y)  # no input requires grad: the hook fires from the outputs, grad_input all None
        out.sum().backward()
    return seen, grads, [str(w.message) for w in caught], (out.requires_grad, s.requires_grad)


def test_full_backward_hooks_as_torch():
    torch.manual_seed(0)
    state = {k: v.numpy() for k, v in torch.nn.Linear(3, 2).state_dict().items()}
    state = {"lin." + k: v for k, v in state.items()}
    ref, mine = _hook_program(torch, state), _hook_program(tc, state)
    assert [s[0] for s in mine[0]] == [s[0] for s in ref[0]]
    for rs, ms in zip(ref[0], mine[0]):
        for rpart, mpart in zip(rs[1:], ms[1:]):
            assert len(rpart) == len(mpart)
            for r, m in zip(rpart, mpart):
                assert (r is None) == (m is None)
                if r is not None:
                    np.testing.assert_allclose(m, r, rtol=1e-5, atol=1e-6)
    for r, m in zip(ref[1], mine[1]):
        np.testing.assert_allclose(m, r, rtol=1e-5, atol=1e-6)
    assert any("no inputs require gradients" in w for w in mine[2]) and any("no inputs require" in w for w in ref[2])
    assert mine[3] == ref[3]


def test_backward_hook_errors_and_replacement():
    for lib in (torch, tc):
        x = lib.ones(2, 3, requires_grad=True)
        m = lib.nn.Linear(3, 2)
        m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
        m(x).sum().backward()
        expected = m.weight.detach().sum(0) * 10
        assert np.allclose(x.grad.numpy(), np.broadcast_to(expected.numpy(), (2, 3)))
        bad = lib.nn.Linear(3, 2)
        bad.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but "
                                               "expected 1"):
            bad(x).sum().backward()
        badpre = lib.nn.Linear(3, 2)
        badpre.register_full_backward_pre_hook(lambda mod, go: (go[0], go[0]))
        with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 2"):
            badpre(x).sum().backward()
        legacy = lib.nn.Linear(3, 2)
        legacy.register_backward_hook(lambda *a: None)
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks"):
            legacy.register_full_backward_hook(lambda *a: None)
        handle = m.register_full_backward_hook(lambda *a: (None,))
        handle.remove()


def test_legacy_backward_hook_runs_on_output_node():
    """register_backward_hook sees the gradients of the node that made the output (its own, as in torch)."""
    for lib in (torch, tc):
        seen = []
        m = lib.nn.Tanh()
        m.register_backward_hook(lambda mod, gi, go: seen.append((gi[0].numpy().copy(), go[0].numpy().copy())))
        x = lib.tensor([0.5, -1.0], requires_grad=True)
        with pytest.warns(FutureWarning, match="non-full backward hook when the forward contains multiple autograd"):
            y = m(x)  # x is a leaf: its node differs from the output node's next functions, as torch warns
        y.sum().backward()
        (gi, go), = seen
        np.testing.assert_allclose(gi, 1 - np.tanh([0.5, -1.0]) ** 2, rtol=1e-5)
        np.testing.assert_allclose(go, [1.0, 1.0])


def _extra_program(lib):
    class WithExtra(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lib.nn.Linear(2, 2)
            self.count = 5

        def get_extra_state(self):
            return {"count": self.count}

        def set_extra_state(self, state):
            self.count = state["count"]

    out = []
    sd = WithExtra().state_dict()
    out.append(list(sd))
    other = WithExtra()
    other.count = 0
    out.append((repr(other.load_state_dict(sd)), other.count))
    partial = {k: v for k, v in sd.items() if k != "_extra_state"}
    out.append(repr(WithExtra().load_state_dict(partial, strict=False)))
    for module, state in ((WithExtra(), partial), (lib.nn.Linear(2, 2), sd)):
        with pytest.raises(RuntimeError) as err:
            module.load_state_dict(state)
        out.append(str(err.value).replace("tidal", "torch"))
    with pytest.raises(RuntimeError) as err:
        lib.nn.Linear(2, 2).get_extra_state()
    out.append(str(err.value))
    return out


def test_extra_state_as_torch():
    assert _extra_program(tc) == _extra_program(torch)


def test_set_submodule_state_dict_pre_hook_to_empty():
    results = []
    for lib in (torch, tc):
        net = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.Sequential(lib.nn.ReLU()))
        net.set_submodule("1.0", lib.nn.Tanh())
        out = [type(net[1][0]).__name__]
        for args in (("1.5", lib.nn.Tanh(), True), ("2.0", lib.nn.Tanh()), ("0.weight", lib.nn.Tanh()),
                     ("", lib.nn.Tanh()), ("1.0", 3)):
            try:
                net.set_submodule(*args)
            except (AttributeError, ValueError) as e:
                out.append((type(e).__name__, str(e)))
        net.set_submodule("1.1", lib.nn.ReLU())
        out.append(len(net[1]))
        calls = []
        net.register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append((prefix, keep_vars)))
        net[0].register_state_dict_pre_hook(lambda mod, prefix, keep_vars: calls.append((prefix, keep_vars)))
        net.state_dict(keep_vars=True)
        out.append(calls)
        weight = net[0].weight
        assert net.to_empty(device="cpu") is net and net[0].weight is weight and weight.requires_grad
        out.append(lib.nn.Module.call_super_init)
        results.append(out)
    assert results[1] == results[0]


# ---- small torch.* names: version, futures, streams, errors, flags, importable modules ----------

@pytest.mark.parametrize("other", ["2.0", "2.13", "2.13.0", "2.13.1", "2.13.0rc1", "2.14.0.dev20260101", "1.13.1",
                                   (2, 13), (2, 12, 9), (3,), "parrot"])
def test_torch_version_compares_as_torch(other):
    ref = torch.torch_version.TorchVersion("2.13.0+tidal")
    mine = tc.__version__
    assert isinstance(mine, str) and mine == "2.13.0+tidal" and type(mine).__name__ == "TorchVersion"
    for op in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__"):
        assert getattr(mine, op)(other) == getattr(ref, op)(other), (op, other)
    assert {mine: 1}["2.13.0+tidal"] == 1


def test_futures_as_torch():
    results = []
    for lib in (torch, tc):
        F, out = lib.futures.Future, []
        f = F()
        out.append(f.done())
        f.set_result(3)
        with pytest.raises(RuntimeError, match="Attempting to mark a completed Future as complete again"):
            f.set_result(4)
        out += [f.wait(), f.value(), f.done()]
        g = F()
        g.set_exception(ValueError("bad"))
        for call in (g.wait, g.value):
            with pytest.raises(ValueError, match="bad"):
                call()
        out.append(f.then(lambda fut: fut.wait() + 1).wait())
        with pytest.raises(RuntimeError, match="Got the following error when running the callback: "
                                               "ZeroDivisionError: division by zero"):
            f.then(lambda fut: 1 / 0).wait()
        late, seen = F(), []
        late.add_done_callback(lambda fut: seen.append(fut.value()))
        late.set_result(7)
        out.append(seen)
        out.append([x.wait() for x in lib.futures.collect_all([f, late]).wait()])
        out.append(lib.futures.wait_all([f, late]))
        with pytest.raises(ValueError, match="bad"):
            lib.futures.wait_all([f, g])
        with pytest.raises(AssertionError, match="3 is of type <class 'int'>, not an Exception."):
            F().set_exception(3)
        results.append(out)
    assert results[1] == results[0]


def test_generic_stream_and_event_on_cpu():
    for lib in (torch, tc):
        s, e = lib.Stream("cpu"), lib.Event()
        assert repr(s) == "torch.Stream device_type=cpu, device_index=-1, stream_id=0"
        assert repr(lib.Event(enable_timing=True)) == ("torch.Event device_type=cpu, device_index=-1, event_flag=1, "
                                                       "event_id=0")
        assert s == lib.Stream() and hash(s) == hash(lib.Stream()) and s.device_type == 0 and str(s.device) == "cpu"
        assert s.query() and e.query() and s.is_capturing() is False
        s.synchronize(), e.synchronize(), e.wait(), s.wait_event(e)
        for call in (lambda: s.wait_stream(lib.Stream()), s.record_event, e.record):
            with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
                call()
        with pytest.raises(ValueError, match="Both events must be created with argument 'enable_timing=True'."):
            e.elapsed_time(e)
        with pytest.raises(NotImplementedError, match="torch.Event ipc is not supported yet"):
            e.ipc_handle()
        with pytest.raises(RuntimeError, match="PyTorch is not linked with support for cuda devices"):
            lib.Stream("cuda")


def test_errors_flags_and_aliases():
    for name in ("OutOfMemoryError", "AcceleratorError"):
        assert issubclass(getattr(tc, name), RuntimeError)
    assert tc.OutOfMemoryError is tc.cuda.OutOfMemoryError
    assert tc.legacy_contiguous_format is tc.contiguous_format
    assert repr(tc.legacy_contiguous_format) == repr(torch.legacy_contiguous_format)
    assert tc.has_lapack is True and tc.has_spectral is True
    assert tc.has_mkl == tc.backends.mkl.is_available() and tc.has_openmp == tc.backends.openmp.is_available()
    assert tc.nn.factory_kwargs({"device": "cpu", "factory_kwargs": {"dtype": tc.float64}}) == \
        {"device": "cpu", "dtype": tc.float64}
    for lib in (torch, tc):
        with pytest.raises(TypeError, match="unexpected kwargs"):
            lib.nn.factory_kwargs({"bias": True})
        with pytest.raises(TypeError, match="dtype specified twice, in \\*\\*kwargs and in factory_kwargs"):
            lib.nn.factory_kwargs({"dtype": lib.float32, "factory_kwargs": {"dtype": lib.float32}})
    assert tc.nn.utils.rnn.bind(None, abs) is None and tc.nn.utils.rnn.bind(-2, abs) == 2
    assert issubclass(tc.nn.utils.rnn.PackedSequence, tc.nn.utils.rnn.PackedSequence_)
    assert tc.nn.utils.rnn.PackedSequence_._fields == torch.nn.utils.rnn.PackedSequence_._fields


def test_modules_scripts_import(tmp_path):
    """`import torch.linalg`, torch.types, torch.functional, torch.futures, torch.nn.common_types... resolve."""
    import subprocess
    import sys
    script = tmp_path / "imports.py"
    script.write_text(
        "import torch.linalg, torch.types, torch.functional, torch.futures, torch.cpu, torch.nn.grad\n"
        "from torch.linalg import norm, vector_norm\n"
        "from torch.nn.common_types import _size_2_t\n"
        "from torch.nn.attention import SDPBackend, sdpa_kernel\n"
        "from torch.nn.attention.bias import causal_lower_right\n"
        "from torch.nn.utils.fusion import fuse_conv_bn_eval\n"
        "from torch.nn.utils.stateless import functional_call\n"
        "from torch.torch_version import TorchVersion\n"
        "from torch.types import Device, Number\n"
        "x = torch.tensor([3.0, 4.0])\n"
        "assert float(norm(x)) == 5.0 and torch.functional.einsum('i,i->', x, x).item() == 25.0\n"
        "assert torch.__version__ >= (2, 0) and torch.linalg.__name__.startswith('tidal')\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-m", "tidal.compat", str(script)], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "ok"
    torch_linalg = {n for n in dir(torch.linalg) if not n.startswith("_") and callable(getattr(torch.linalg, n))}
    assert torch_linalg <= set(tc.linalg.__all__)
    assert sorted(tc.functional.__all__) == sorted(torch.functional.__all__)


# ---- signatures torch 2.13 has: norm `bias=`, Hardtanh's old keywords, cdist's compute_mode, from_dlpack --

@pytest.mark.parametrize("cls,shape", [("BatchNorm1d", (4, 3)), ("BatchNorm2d", (4, 3, 2, 2)),
                                       ("InstanceNorm1d", (4, 3, 5)), ("LazyBatchNorm2d", (4, 3, 2, 2)),
                                       ("SyncBatchNorm", (4, 3, 2))])
@pytest.mark.parametrize("affine,bias", [(True, False), (True, True), (False, True)])
def test_norm_bias_keyword(cls, shape, affine, bias):
    lazy = cls.startswith("Lazy")
    args = () if lazy else (3,)
    ref = getattr(torch.nn, cls)(*args, affine=affine, bias=bias)
    mine = getattr(tc.nn, cls)(*args, affine=affine, bias=bias)
    assert repr(mine) == repr(ref)
    tx, mx = _pair(*shape, seed=4, requires_grad=True)
    if cls == "SyncBatchNorm":  # one process: torch's needs a process group for training, so compare in eval
        ref.eval(), mine.eval()
    rout, mout = ref(tx), mine(mx)
    assert list(mine.state_dict()) == list(ref.state_dict())
    check(mout, rout, rtol=1e-4, atol=1e-5)
    rout.square().sum().backward()
    mout.square().sum().backward()
    check(mx.grad, tx.grad, rtol=1e-3, atol=1e-4)
    if affine:
        check(mine.weight.grad, ref.weight.grad, rtol=1e-3, atol=1e-4)


def test_hardtanh_old_keywords():
    for lib in (torch, tc):
        with pytest.warns(FutureWarning, match="keyword argument `min_value` is deprecated and renamed to `min_val`"):
            m = lib.nn.Hardtanh(min_value=-0.5, max_val=2.0)
        with pytest.warns(FutureWarning, match="keyword argument `max_value` is deprecated and renamed to `max_val`"):
            m2 = lib.nn.Hardtanh(max_value=0.25)
        assert (m.min_val, m.max_val, m2.max_val) == (-0.5, 2.0, 0.25)
        assert m(lib.tensor([-1.0, 3.0])).tolist() == [-0.5, 2.0]
        with pytest.raises(AssertionError, match=r"max_val \(-2.0\) must be greater than min_val \(-1.0\)"):
            lib.nn.Hardtanh(max_val=-2.0)


def test_cdist_compute_modes():
    (ta, ma), (tb, mb) = _pair(5, 3, seed=5), _pair(4, 3, seed=6)
    for mode in ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"):
        check(tc.cdist(ma, mb, compute_mode=mode), torch.cdist(ta, tb, compute_mode=mode), rtol=1e-5, atol=1e-5)
    for lib, a, b in ((torch, ta, tb), (tc, ma, mb)):
        for bad in (None, "x"):
            with pytest.raises(ValueError, match=f"{bad} is not a valid value for compute_mode"):
                lib.cdist(a, b, compute_mode=bad)


def test_from_dlpack_copy_and_device():
    for lib in (torch, tc):
        a = np.arange(3.0)
        copied = lib.from_dlpack(a, copy=True)
        shared = lib.from_dlpack(a, device="cpu")
        a[0] = 9.0
        assert copied.tolist() == [0.0, 1.0, 2.0] and shared.tolist() == [9.0, 1.0, 2.0]
        x = lib.arange(3.0)
        y = lib.from_dlpack(x, copy=True)
        y[0] = 5.0
        assert x.tolist() == [0.0, 1.0, 2.0]


# ---- torch.embedding_bag (ATen signature) -------------------------------------------------------

@pytest.mark.parametrize("offsets,mode,weighted,last,pad,dtype", [
    ([0, 4], 0, False, False, None, np.float32), ([0, 4], 0, False, False, None, np.float64),
    ([0, 4], 1, False, False, None, np.float32), ([0, 4], 2, False, False, None, np.float32),
    ([0, 4, 8], 0, False, True, None, np.float32), ([0, 4], 0, False, False, 2, np.float32),
    ([0, 4], 1, False, False, 2, np.float32), ([0, 4], 2, False, False, 4, np.float32),
    ([0, 4, 4], 2, False, False, None, np.float32), ([0, 4, 4], 1, False, False, None, np.float32),
    ([0, 4], 0, True, False, None, np.float32), ([0, 4], 1, False, False, -1, np.float32)])
def test_aten_embedding_bag(offsets, mode, weighted, last, pad, dtype):
    """All four results (output, offset2bag, bag_size, max_indices) and the weight's gradient, as torch's."""
    w = np.random.default_rng(7).standard_normal((10, 3)).astype(dtype)
    idx, off = np.array([1, 2, 4, 5, 4, 3, 2, 9]), np.array(offsets)
    psw = np.linspace(0, 1, 8).astype(dtype) if weighted else None
    results = []
    for lib in (torch, tc):
        weight = lib.tensor(w, requires_grad=True)
        out = lib.embedding_bag(weight, lib.tensor(idx), lib.tensor(off), False, mode, False,
                                None if psw is None else lib.tensor(psw), last, pad)
        out[0].square().sum().backward()
        results.append(list(out) + [weight.grad])
    for mine, ref in zip(results[1], results[0]):
        check(mine, ref, rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match="argument 'offsets' \\(position 3\\) must be Tensor, not NoneType"):
        tc.embedding_bag(tc.tensor(w), tc.tensor(idx), None)


# ---- torch.quasirandom.SobolEngine --------------------------------------------------------------

@pytest.mark.parametrize("dimension", [1, 7, 1111])
def test_sobol_unscrambled_as_torch(dimension):
    pytest.importorskip("scipy")  # tidal reads Joe and Kuo's direction numbers from SciPy's copy
    ref, mine = torch.quasirandom.SobolEngine(dimension), tc.quasirandom.SobolEngine(dimension)
    assert repr(mine) == repr(ref)
    check(mine.sobolstate, ref.sobolstate)
    for step in (lambda e, lib: e.draw(), lambda e, lib: e.draw(5, dtype=lib.float64),
                 lambda e, lib: e.fast_forward(4).draw(6, dtype=lib.float64), lambda e, lib: e.draw_base2(4),
                 lambda e, lib: e.reset().fast_forward(3).draw(2)):
        check(step(mine, tc), step(ref, torch))
    assert mine.num_generated == ref.num_generated
    out = tc.empty(0)
    assert mine.draw(2, out=out) is out and tuple(out.shape) == (2, dimension)


def test_sobol_scrambled_and_errors():
    pytest.importorskip("scipy")
    from tidal.compat import quasirandom as q
    # the linear matrix scramble, fed torch's random bits, gives torch's scrambled directions
    g = torch.Generator().manual_seed(5)
    ltm = torch.randint(2, (3, 30, 30), generator=g).tril()
    state = torch.zeros(3, 30, dtype=torch.long)
    torch._sobol_engine_initialize_state_(state, 3)
    torch._sobol_engine_scramble_(state, ltm, 3)
    bits = np.int64(1) << np.arange(29, -1, -1, dtype=np.int64)
    lower = ltm.numpy().astype(np.int64)
    lower[:, np.arange(30), np.arange(30)] = 1
    ours = q._parity((lower @ bits)[:, None, :] & q._direction_numbers(3, 30)[:, :, None]) @ bits
    np.testing.assert_array_equal(ours, state.numpy())
    e = tc.quasirandom.SobolEngine(3, scramble=True, seed=1)
    assert repr(e) == repr(torch.quasirandom.SobolEngine(3, scramble=True, seed=1))
    pts = e.draw_base2(6).numpy()
    assert tc.quasirandom.SobolEngine(3, scramble=True, seed=1).draw(64).equal(tc.tensor(pts))
    for column in pts.T:  # a scrambled (0, m, 1)-net: one point in each of the 2**m strata
        assert sorted(np.floor(column * 64).astype(int).tolist()) == list(range(64))
    for lib in (torch, tc):
        eng = lib.quasirandom.SobolEngine(2)
        eng.draw(3)
        with pytest.raises(ValueError, match=r"3 points have been previously generated, then: n=3\+2\*\*1=5"):
            eng.draw_base2(1)
        with pytest.raises(ValueError, match=r"Supported range of dimensionality for SobolEngine is \[1, 21201\]"):
            lib.quasirandom.SobolEngine(0)


# ---- torch.nn.attention.flex_attention ----------------------------------------------------------

def _causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def _window(b, h, q_idx, kv_idx):
    return (q_idx - kv_idx).abs() <= 2 + h


_BM_FIELDS = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks", "q_indices",
              "full_q_num_blocks", "full_q_indices")


def _same_block_mask(mine, ref):
    assert repr(mine).replace("tidal.Size", "torch.Size") == repr(ref)  # Size prints as torch's under the runner
    for name in _BM_FIELDS:
        m, r = getattr(mine, name), getattr(ref, name)
        assert (m is None) == (r is None), name
        if r is not None:
            check(m, r)
    check(mine.to_dense(), ref.to_dense())
    assert mine.shape == ref.shape and abs(mine.sparsity() - ref.sparsity()) < 1e-9


@pytest.mark.parametrize("mod,B,H,L,S,block,separate", [
    (_causal, None, None, 5, 7, 2, True), (_window, 2, 3, 9, 6, (4, 2), True), (_causal, 1, 2, 8, 8, 4, False),
    ("noop", None, None, 4, 4, 2, True)])
def test_create_block_mask_as_torch(mod, B, H, L, S, block, separate):
    import torch.nn.attention.flex_attention as rfa
    mfa = tc.nn.attention.flex_attention
    rmod, mmod = (rfa.noop_mask, mfa.noop_mask) if mod == "noop" else (mod, mod)
    ref = rfa.create_block_mask(rmod, B, H, L, S, device="cpu", BLOCK_SIZE=block, separate_full_blocks=separate)
    mine = mfa.create_block_mask(mmod, B, H, L, S, device="cpu", BLOCK_SIZE=block, separate_full_blocks=separate)
    _same_block_mask(mine, ref)
    _same_block_mask(mine._adjust(L - 1, S - 2), ref._adjust(L - 1, S - 2))
    if B:
        _same_block_mask(mine[B - 1], ref[B - 1])
        with pytest.raises(RuntimeError, match="Cannot use mask_mod from a sliced BlockMask"):
            mine[0].mask_mod(None, None, None, None)
    check(mfa.create_mask(mmod, B, H, L, S, "cpu"), rfa.create_mask(rmod, B, H, L, S, "cpu"))


def _flex_inputs(lib, hq=2, hkv=2, grad=False):
    rng = np.random.default_rng(11)
    shapes = ((2, hq, 5, 4), (2, hkv, 7, 4), (2, hkv, 7, 3))
    return [lib.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=grad) for s in shapes]


@pytest.mark.parametrize("case", ["plain", "both", "gqa", "empty_rows"])
def test_flex_attention_as_torch(case):
    """Values and log-sum-exp as torch's eager flex_attention (torch has no CPU backward to compare)."""
    import torch.nn.attention.flex_attention as rfa
    mfa = tc.nn.attention.flex_attention
    results = []
    for lib, fa in ((torch, rfa), (tc, mfa)):
        q, k, v = _flex_inputs(lib, hq=4 if case == "gqa" else 2)
        bias = lib.tensor([0.5, -0.25, 0.0, 1.0])

        def score_mod(score, b, h, q_idx, kv_idx):
            return score + (q_idx - kv_idx) * 0.1 + bias[h]
        mask = None
        if case in ("block_mask", "both"):
            mask = fa.create_block_mask(fa.and_masks(_causal, lambda b, h, qi, ki: ki != 2), 2, None, 5, 7,
                                        device="cpu", BLOCK_SIZE=(2, 4))
        if case == "empty_rows":
            mask = fa.create_block_mask(fa.or_masks(lambda b, h, qi, ki: ki > 100, lambda b, h, qi, ki: qi == 3), None,
                                        None, 5, 7, device="cpu", BLOCK_SIZE=2)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's 'called without torch.compile' note
            out, aux = fa.flex_attention(q, k, v, score_mod=score_mod if case in ("score_mod", "both") else None,
                                         block_mask=mask, enable_gqa=case == "gqa", scale=0.3 if case == "gqa" else None,
                                         return_aux=fa.AuxRequest(lse=True))
        results.append((out, aux.lse))
    check(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    check(results[1][1], results[0][1], rtol=1e-5, atol=1e-6)


def test_flex_attention_gradients_match_the_math():
    """Gradients (torch's flex_attention refuses backward on CPU): against torch's softmax(QK^T) V written out."""
    mfa = tc.nn.attention.flex_attention
    tq, tk, tv = _flex_inputs(torch, grad=True)
    mq, mk, mv = _flex_inputs(tc, grad=True)
    tbias, mbias = torch.tensor([0.5, -0.25], requires_grad=True), tc.tensor([0.5, -0.25], requires_grad=True)
    mask = mfa.create_block_mask(_causal, None, None, 5, 7, device="cpu", BLOCK_SIZE=2)
    out = mfa.flex_attention(mq, mk, mv, score_mod=lambda s, b, h, qi, ki: s + mbias[h], block_mask=mask)
    scores = tq @ tk.transpose(-2, -1) / 2.0 + tbias.view(1, 2, 1, 1)
    allowed = torch.ones(5, 7, dtype=torch.bool).tril()
    ref = torch.softmax(scores.masked_fill(~allowed, float("-inf")), -1) @ tv
    check(out, ref, rtol=1e-5, atol=1e-6)
    out.square().sum().backward()
    ref.square().sum().backward()
    for mine, theirs in ((mq, tq), (mk, tk), (mv, tv), (mbias, tbias)):
        check(mine.grad, theirs.grad, rtol=1e-4, atol=1e-5)


def test_flex_attention_errors_as_torch():
    import torch.nn.attention.flex_attention as rfa
    mfa = tc.nn.attention.flex_attention
    for lib, fa in ((torch, rfa), (tc, mfa)):
        q, k, v = _flex_inputs(lib, hq=4)
        with pytest.raises(ValueError, match="Expect query and key/value to have the same number of heads but got "
                                             "Hq=4 and Hkv=2. Try setting enable_gqa=True for GQA."):
            fa.flex_attention(q, k, v)
        with pytest.raises(NotImplementedError, match="NYI: query, key, and value must be 4D tensors"):
            fa.flex_attention(q[0], k[0], v[0])
        with pytest.raises(ValueError, match="same embedding dimension but got E=4 and E=2"):
            fa.flex_attention(q, k[..., :2], v, enable_gqa=True)
        for lengths, hint in (((9, 9), "larger length"), ((3, 3), "smaller length")):
            bm = fa.create_block_mask(_causal, None, None, *lengths, device="cpu", BLOCK_SIZE=2)
            with pytest.raises(ValueError, match=f"block_mask was created for .* {hint}"):
                fa.flex_attention(q, k, v, block_mask=bm, enable_gqa=True)
        with pytest.raises(RuntimeError, match="All inputs should be callable mask_mods"):
            fa.and_masks(_causal, 3)
        with pytest.raises(NotImplementedError, match="Returning max scores is not supported on CPU/MPS."):
            fa.flex_attention(q, k, v, enable_gqa=True, return_aux=fa.AuxRequest(max_scores=True))
        with pytest.raises(ValueError, match="Cannot specify both return_lse and return_aux"):
            fa.flex_attention(q, k, v, enable_gqa=True, return_lse=True, return_aux=fa.AuxRequest(lse=True))
        with pytest.warns(FutureWarning, match="return_lse is deprecated"):
            fa.flex_attention(q, k, v, enable_gqa=True, return_lse=True)


# ---- out= on the torch functions that take it ---------------------------------------------------

def _out_calls(lib, x, y, i, b):
    return {
        "absolute": lambda o: lib.absolute(x, out=o), "all": lambda o: lib.all(b, 1, out=o),
        "any": lambda o: lib.any(b, out=o), "argmax": lambda o: lib.argmax(x, 1, out=o),
        "argmin": lambda o: lib.argmin(x, 0, True, out=o), "clamp_min": lambda o: lib.clamp_min(x, 0.5, out=o),
        "column_stack": lambda o: lib.column_stack((x, y), out=o), "cumprod": lambda o: lib.cumprod(x, 1, out=o),
        "cumsum": lambda o: lib.cumsum(x, 0, out=o), "diff": lambda o: lib.diff(x, out=o),
        "float_power": lambda o: lib.float_power(x.abs(), 2, out=o), "hstack": lambda o: lib.hstack((x, y), out=o),
        "igamma": lambda o: lib.igamma(x.abs(), y.abs(), out=o),
        "index_add": lambda o: lib.index_add(x, 0, i, y[:2], out=o), "isin": lambda o: lib.isin(i, i + 1, out=o),
        "lerp": lambda o: lib.lerp(x, y, 0.3, out=o), "log_softmax": lambda o: lib.log_softmax(x, 1, out=o),
        "logcumsumexp": lambda o: lib.logcumsumexp(x, 1, out=o), "logsumexp": lambda o: lib.logsumexp(x, 1, out=o),
        "max": lambda o: lib.max(x, 1, out=o), "max2": lambda o: lib.max(x, y, out=o),
        "mean": lambda o: lib.mean(x, 1, out=o), "mean_all": lambda o: lib.mean(x, out=o),
        "msort": lambda o: lib.msort(x, out=o), "nanmean": lambda o: lib.nanmean(x, 0, out=o),
        "nansum": lambda o: lib.nansum(x, 1, out=o), "neg": lambda o: lib.neg(x, out=o),
        "norm": lambda o: lib.norm(x, 2, 1, out=o), "prod": lambda o: lib.prod(x, 1, out=o),
        "renorm": lambda o: lib.renorm(x, 2, 0, 1.0, out=o), "softmax": lambda o: lib.softmax(x, 1, out=o),
        "square": lambda o: lib.square(x, out=o), "std": lambda o: lib.std(x, 1, out=o),
        "sum": lambda o: lib.sum(x, 1, out=o), "var": lambda o: lib.var(x, 0, out=o),
        "vstack": lambda o: lib.vstack((x, y), out=o), "where": lambda o: lib.where(b, x, y, out=o)}


@pytest.mark.parametrize("out_dtype", ["float32", "int64", "bool", "float64"])
def test_out_argument_as_torch(out_dtype):
    """Each function with out=: same values and dtype written into out (and out returned), or torch's error."""
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    per_lib = []
    for lib in (torch, tc):
        x, y = lib.tensor(xa), lib.tensor(ya)
        per_lib.append((lib, _out_calls(lib, x, y, lib.tensor([0, 2]), x > 0)))
    (_, ref_calls), (_, my_calls) = per_lib
    for name in ref_calls:
        seen = []
        for (lib, calls) in per_lib:
            plain = calls[name](None)
            want = getattr(lib, out_dtype)
            out = tuple(lib.empty(0, dtype=lib.int64 if k else want) for k in range(len(plain))) \
                if isinstance(plain, tuple) else lib.empty(2, dtype=want)  # 2 elements: resized, with a warning
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    got = calls[name](out)
                outs = got if isinstance(got, tuple) else (got,)
                same = all(a is b for a, b in zip(outs, out if isinstance(out, tuple) else (out,)))
                warned = any("resized" in str(w.message) for w in caught)
                seen.append(("ok", [(str(t.dtype).split(".")[-1], t.numpy().tolist()) for t in outs], same, warned))
            except Exception as e:  # noqa: BLE001 - the error itself is compared
                seen.append((type(e).__name__, str(e)))
        ref, mine = seen
        if ref[0] == "ok":
            assert mine[0] == "ok", (name, mine)
            assert [d for d, _ in mine[1]] == [d for d, _ in ref[1]] and mine[2:] == ref[2:], name
            for (_, m), (_, r) in zip(mine[1], ref[1]):
                np.testing.assert_allclose(np.asarray(m, float), np.asarray(r, float), rtol=1e-5, atol=1e-6,
                                           err_msg=name)
        else:
            assert mine == ref, name


def test_out_argument_refuses_grad_and_shows_in_signature():
    import inspect
    x = tc.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"sum\(\): functions with out=... arguments don't support automatic "
                                           "differentiation, but one of the arguments requires grad."):
        tc.sum(x, 0, out=tc.empty(0))
    with tc.no_grad():
        assert tc.sum(x, 0, out=tc.empty(0)).item() == 3.0
    assert "out" in inspect.signature(tc.mean).parameters and "out" in inspect.signature(tc.hstack).parameters


def test_out_and_keywords_of_special_searchsorted_and_friends():
    results = []
    for lib in (torch, tc):
        x = lib.tensor(np.linspace(0.1, 2, 6, dtype=np.float32))
        calls = [lambda: lib.special.entr(x, out=lib.empty(0)),
                 lambda: lib.special.entr(x, out=lib.empty(0, dtype=lib.long)),
                 lambda: lib.special.i0e(x, out=lib.empty(0, dtype=lib.float64)),
                 lambda: lib.special.gammainc(x, x, out=lib.empty(0)),
                 lambda: lib.searchsorted(lib.tensor([0.5, 1.0]), x, out=lib.empty(0, dtype=lib.long)),
                 lambda: lib.bucketize(x, lib.tensor([0.5]), out=lib.empty(0)),
                 lambda: lib.bucketize(x, lib.tensor([0.5]), out_int32=True, out=lib.empty(0, dtype=lib.int32)),
                 lambda: lib.promote_types(type1=lib.int32, type2=lib.float32),
                 lambda: lib.range(0, 2, layout=lib.strided),
                 lambda: x.cpu(memory_format=lib.contiguous_format)]
        seen = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.range's deprecation
            for call in calls:
                try:
                    r = call()
                    seen.append((str(getattr(r, "dtype", r)).split(".")[-1],
                                 np.round(r.numpy(), 5).tolist() if hasattr(r, "numpy") else None))
                except Exception as e:  # noqa: BLE001 - the error itself is compared
                    seen.append((type(e).__name__, str(e)))
        results.append(seen)
    assert results[1] == results[0]


def test_generator_and_packed_sequence_extras():
    for lib in (torch, tc):
        g = lib.Generator()
        g.manual_seed(3)
        lib.rand(2, generator=g)
        twin = g.clone_state()
        assert twin is not g and twin.initial_seed() == 3
        assert lib.rand(3, generator=g).tolist() == lib.rand(3, generator=twin).tolist()
        for call in (g.get_offset, lambda: g.set_offset(5)):
            with pytest.raises(RuntimeError, match="CPU Generator does not use offset"):
                call()
        with pytest.raises(NotImplementedError, match="graphsafe_get_state is not supported in this Generator"):
            g.graphsafe_get_state()
        packed = lib.nn.utils.rnn.pack_sequence([lib.ones(3), lib.ones(2)])
        assert [str(p.data.dtype).split(".")[-1] for p in (packed.byte(), packed.char(), packed.short())] == \
            ["uint8", "int8", "int16"]
        assert packed.is_pinned() is False and packed.short().batch_sizes.tolist() == [2, 2, 1]


def test_backends_sdp_kernel_deprecated_as_torch():
    for lib in (torch, tc):
        with pytest.warns(FutureWarning, match=r"`torch.backends.cuda.sdp_kernel\(\)` is deprecated"):
            with lib.backends.cuda.sdp_kernel(enable_math=False):
                assert not lib.backends.cuda.math_sdp_enabled() and lib.backends.cuda.flash_sdp_enabled()
        assert lib.backends.cuda.math_sdp_enabled()
