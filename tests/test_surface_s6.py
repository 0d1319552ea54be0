"""The nn-side names added by the s6 surface pass, each compared with real torch 2.13: torch.cpu, nn.grad,
nn.utils fusion/stateless/skip_init, Module backward hooks and extra state, the norms' `bias=` and Hardtanh's old
keywords (torch.* names: test_surface_s6_torch.py; attention: test_surface_s6_attention.py)."""
import warnings

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc
from torch_compare import check


def _pair(*shape, seed=0, requires_grad=False):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return (torch.tensor(a, requires_grad=requires_grad), tidal.tensor(a, requires_grad=requires_grad))


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


# ---- global module hooks (torch.nn.modules.module.register_module_*) -----------------------------

def _global_hooks_program(lib, M):
    log, handles = [], []
    try:
        handles += [M.register_module_forward_pre_hook(lambda m, a: log.append(("gpre", type(m).__name__))),
                    M.register_module_forward_hook(lambda m, a, o: log.append(("gpost", type(m).__name__))),
                    M.register_module_forward_hook(lambda m, a, k, o: log.append(("kw", type(m).__name__, sorted(k))),
                                                   with_kwargs=True),
                    M.register_module_full_backward_pre_hook(lambda m, go: log.append(("bpre", type(m).__name__))),
                    M.register_module_full_backward_hook(
                        lambda m, gi, go: log.append(("bw", type(m).__name__, [tuple(g.shape) for g in gi])))]
        net = lib.nn.Sequential(lib.nn.Linear(3, 2), lib.nn.Tanh())
        net[0].register_forward_pre_hook(lambda m, a: log.append(("lpre", type(m).__name__)))
        net[0].register_forward_hook(lambda m, a, o: log.append(("lpost", type(m).__name__)))
        net(lib.ones(4, 3, requires_grad=True)).sum().backward()
        with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full backward hooks as a "
                                               "global Module hook"):
            M.register_module_backward_hook(lambda *a: None)
        handles.append(M.register_module_buffer_registration_hook(
            lambda m, n, b: log.append(("buf", n)) or (None if b is None else b + 1)))
        handles.append(M.register_module_parameter_registration_hook(lambda m, n, p: log.append(("param", n))))
        handles.append(M.register_module_module_registration_hook(lambda m, n, s: log.append(("mod", n))))
        bn = lib.nn.BatchNorm1d(2)
        seq = lib.nn.Sequential()
        seq.add_module("a", lib.nn.ReLU())
        seq.b = lib.nn.ReLU()
        seq.b = None
        log.append(bn.num_batches_tracked.item())

        class Boom(lib.nn.Module):
            def forward(self, x):
                raise ValueError("boom")
        handles.append(M.register_module_forward_hook(lambda m, a, o: log.append(("always", o)), always_call=True))
        with pytest.raises(ValueError, match="boom"):
            Boom()(lib.ones(1))
    finally:
        for h in handles:
            h.remove()
    net(lib.ones(1, 3))  # removed: only the module's own hooks run
    return log


def test_global_module_hooks_as_torch():
    mine = _global_hooks_program(tc, tc.nn.modules.module)  # what `import torch.nn.modules.module` gives
    import torch.nn.modules.module as ref_module
    assert mine == _global_hooks_program(torch, ref_module)
