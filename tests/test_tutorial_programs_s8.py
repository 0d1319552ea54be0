"""Programs shaped like the official PyTorch tutorials (pytorch/tutorials: forward-mode AD, fusing conv and batch
norm with a custom Function, the Tensors deep dive, ...), run on real torch and on `tidal.compat` from the same
NumPy-made data (see tests/tutorial_data.py); each test checks one behaviour those programs met."""
import collections
import math
import os
import warnings

import numpy as np
import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_examples_programs import picklable, run_both
from tutorial_data import uniform

FRAMEWORKS = (real_torch, tidal_torch)


# -- forward-mode AD tutorial: a custom Function with only jvp --------------------------------------------------
def _exp_jvp_function(T, factor: float = 1.0):
    class Fn(T.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            result = T.exp(foo)
            ctx.result = result
            return result

        @staticmethod
        def jvp(ctx, gI):
            gO = gI * ctx.result * factor
            del ctx.result  # the tutorial frees what only the jvp needed
            return gO
    return Fn


def forward_ad_custom_function(T):
    """fwAD.make_dual of a float64 primal with a float32 tangent through Fn.apply, Fn defining only jvp."""
    fwAD = T.autograd.forward_ad
    Fn = _exp_jvp_function(T)
    primal = T.from_numpy(uniform((3, 4), 1).astype(np.float64)).requires_grad_()
    tangent = T.from_numpy(uniform((3, 4), 2))
    with fwAD.dual_level():
        dual_output = Fn.apply(fwAD.make_dual(primal, tangent))
        jvp = fwAD.unpack_dual(dual_output).tangent
        primal_out = fwAD.unpack_dual(dual_output).primal
    return {"jvp": jvp, "primal": primal_out, "dtype": str(jvp.dtype).split(".")[-1]}


def test_forward_ad_custom_function_with_only_jvp():
    run_both(forward_ad_custom_function, rtol=1e-6)


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_jvp_only_function_refuses_backward(T):
    x = T.ones(3, dtype=T.float64, requires_grad=True)
    with pytest.raises(NotImplementedError, match="You must implement either the backward or vjp method"):
        _exp_jvp_function(T).apply(x).sum().backward()


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_gradcheck_checks_forward_ad(T):
    """gradcheck(check_forward_ad=True, check_backward_ad=False) compares the jvp with finite differences."""
    x = T.from_numpy(uniform((3,), 3).astype(np.float64)).requires_grad_()
    kwargs = dict(check_forward_ad=True, check_backward_ad=False, check_undefined_grad=False,
                  check_batched_grad=False)
    assert T.autograd.gradcheck(_exp_jvp_function(T).apply, (x,), **kwargs)
    assert T.autograd.gradcheck(T.sin, (x,), check_forward_ad=True)
    wrong = _exp_jvp_function(T, factor=2.0).apply
    assert not T.autograd.gradcheck(wrong, (x,), raise_exception=False, **kwargs)
    with pytest.raises(RuntimeError, match="Jacobian computed with forward mode mismatch for output 0 with respect "
                                           "to input 0"):
        T.autograd.gradcheck(wrong, (x,), **kwargs)


# -- fusing convolution and batch norm with a custom Function ------------------------------------------------------
def fused_conv_bn(T):
    """The tutorial's FusedConvBN2DFunction: conv2d + batch statistics in forward (in place: out -= mean; out /=),
    conv recomputed in backward, conv_transpose2d / transposed conv2d for the gradients, and a backward that
    returns 7 values (trailing Nones) for 3 inputs; then a few training steps of a net using it."""
    F, nn = T.nn.functional, T.nn

    def unsqueeze_all(t):
        return t[None, :, None, None]

    def convolution_backward(grad_out, X, weight):
        grad_input = F.conv2d(X.transpose(0, 1), grad_out.transpose(0, 1)).transpose(0, 1)
        return F.conv_transpose2d(grad_out, weight), grad_input

    def batch_norm_backward(grad_out, X, sum, sqrt_var, N, eps):
        tmp = -((X - unsqueeze_all(sum) / N) * grad_out).sum(dim=(0, 2, 3))
        d_var = tmp / (sqrt_var + eps) ** 2 / (2 * sqrt_var)
        d_mean_dx = unsqueeze_all(-(grad_out / unsqueeze_all(sqrt_var + eps)).sum(dim=(0, 2, 3)) / N)
        grad_input = X * unsqueeze_all(d_var * N)
        grad_input += unsqueeze_all(-d_var * sum)
        grad_input *= 2 / ((N - 1) * N)
        grad_input += d_mean_dx
        grad_input *= unsqueeze_all(sqrt_var + eps)
        grad_input += grad_out
        grad_input /= unsqueeze_all(sqrt_var + eps)
        return grad_input

    class FusedConvBN2DFunction(T.autograd.Function):
        @staticmethod
        def forward(ctx, X, conv_weight, eps=1e-3):
            assert X.ndim == 4
            ctx.save_for_backward(X, conv_weight)
            X = F.conv2d(X, conv_weight)
            sum = X.sum(dim=(0, 2, 3))
            var = X.var(unbiased=True, dim=(0, 2, 3))
            N = X.numel() / X.size(1)
            sqrt_var = T.sqrt(var)
            ctx.eps, ctx.sum, ctx.N, ctx.sqrt_var = eps, sum, N, sqrt_var
            out = X - unsqueeze_all(sum / N)
            out /= unsqueeze_all(sqrt_var + eps)
            return out

        @staticmethod
        def backward(ctx, grad_out):
            X, conv_weight, = ctx.saved_tensors
            X_conv_out = F.conv2d(X, conv_weight)
            grad_out = batch_norm_backward(grad_out, X_conv_out, ctx.sum, ctx.sqrt_var, ctx.N, ctx.eps)
            grad_X, grad_input = convolution_backward(grad_out, X, conv_weight)
            return grad_X, grad_input, None, None, None, None, None

    weight = T.from_numpy(uniform((2, 1, 2, 2), 10, 0, 1).astype(np.float64)).requires_grad_()
    X = T.from_numpy(uniform((1, 1, 3, 3), 11, 0, 1).astype(np.float64)).requires_grad_()
    checked = T.autograd.gradcheck(FusedConvBN2DFunction.apply, (X, weight))

    class FusedConvBN(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, eps=1e-3):
            super().__init__()
            self.conv_weight = nn.Parameter(T.empty(out_channels, in_channels, kernel_size, kernel_size))
            self.eps = eps
            nn.init.kaiming_uniform_(self.conv_weight, a=math.sqrt(5))

        def forward(self, X):
            return FusedConvBN2DFunction.apply(X, self.conv_weight, self.eps)

    model = nn.Sequential(FusedConvBN(1, 3, 3), nn.ReLU(), FusedConvBN(3, 4, 3), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Flatten(), nn.Linear(16, 5), nn.LogSoftmax(dim=1))
    with T.no_grad():
        for k, p in enumerate(model.parameters()):
            p.copy_(T.from_numpy(uniform(tuple(p.shape), 20 + k, -0.5, 0.5)))
    data, target = T.from_numpy(uniform((6, 1, 8, 8), 12)), T.tensor([0, 1, 2, 3, 4, 0])
    losses = []
    for _ in range(2):  # (plain SGD steps: torch's first optimizer costs it seconds of imports)
        model.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        with T.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
        losses.append(loss.item())
    return {"gradcheck": float(checked), "losses": losses, "grad": model[0].conv_weight.grad}


def test_fused_conv_bn_custom_function():
    run_both(fused_conv_bn, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_custom_function_gradient_count(T):
    """Too few gradients is an error, extra trailing Nones are dropped, extra gradients that are not None are an
    error."""
    def make(grads):
        class Fn(T.autograd.Function):
            @staticmethod
            def forward(ctx, x, y, k):
                return x * y * k

            @staticmethod
            def backward(ctx, g):
                return grads(g)
        return Fn

    x = T.ones(2, requires_grad=True)
    make(lambda g: (g * 3, None, None, None, None)).apply(x, T.ones(2), 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match=r"^function FnBackward returned an incorrect number of gradients "
                                           r"\(expected 3, got 2\)"):
        make(lambda g: (g, g)).apply(x, T.ones(2), 3).sum().backward()
    with pytest.raises(RuntimeError, match=r"^function FnBackward returned an incorrect number of gradients "
                                           r"\(expected 3, got 4\)"):
        make(lambda g: (g, None, None, g)).apply(x, T.ones(2), 3).sum().backward()


# -- the Tensors deep dive (introyt) -----------------------------------------------------------------------------
def test_cross_without_dim_warns_at_the_callers_line():
    """torch.cross(a, b) without dim: torch's deprecation text, reported at the caller's line (function and method)."""
    from tidal.tensor.dtype import repr_namespace
    v1, v2 = tidal_torch.tensor([1., 0., 0.]), tidal_torch.tensor([0., 1., 0.])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [tidal_torch.cross(v2, v1), v2.cross(v1)]
    assert [o.tolist() for o in outs] == [real_torch.cross(*pair, dim=0).tolist() for pair in
                                          [(real_torch.tensor([0., 1., 0.]), real_torch.tensor([1., 0., 0.]))] * 2]
    assert [w.filename for w in caught] == [__file__] * 2
    text = ("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim explicitly or "
            "simply use torch.linalg.cross.\nThe default value of dim will change to agree with that of linalg.cross "
            "in a future release.").replace("torch.", repr_namespace[0] + ".")
    assert str(caught[0].message) == text


# -- the Fundamentals of Autograd (introyt): walking grad_fn.next_functions ------------------------------------------
def _node_names(y) -> list:
    return [type(n).__name__ if n is not None else None for n, _ in y.grad_fn.next_functions]


def test_reflected_operator_puts_the_tensor_first():
    """`c = 2 * b; d = c + 1`: the tutorial walks d.grad_fn.next_functions[0][0].next_functions[0][0] down to
    SinBackward0 and AccumulateGrad; torch records `2 * b` as b.mul(2) and `2 + b` as b.add(2)."""
    def chain(T):
        a = T.linspace(0., 2. * math.pi, steps=5, requires_grad=True)
        b = T.sin(a)
        return {"mul": _node_names(2 * b), "add": _node_names(2 + b), "leaf": _node_names(2 * a),
                "walk": [type(n).__name__ for n in [(2 * b + 1).grad_fn.next_functions[0][0].next_functions[0][0]]]}
    assert chain(tidal_torch) == chain(real_torch)


# -- profiling: torch.autograd.profiler (introyt) and torch.profiler (the profiler recipe) -------------------------
def profiler_programs(T):
    """What the profiler recipe and the autograd tutorial read off a profile: table columns and footer, a
    record_function label listed once with self time below its total, op names and call counts, and a
    schedule(wait=1, warmup=1, active=2) handing two windows of two steps to on_trace_ready."""
    from tutorial_data import uniform
    model = T.nn.Sequential(T.nn.Linear(8, 8), T.nn.ReLU(), T.nn.Linear(8, 2))
    inputs = T.from_numpy(uniform((5, 8), 30))
    with T.profiler.profile(activities=[T.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        with T.profiler.record_function("model_inference"):
            model(inputs)
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
    label = next(e for e in prof.key_averages() if e.key == "model_inference")
    x, y, z = (T.from_numpy(uniform((2, 3), 31 + k)) for k in range(3))
    with T.autograd.profiler.profile(use_cuda=False) as prf:
        for _ in range(3):
            z = (z / x) * y
    counts = {e.key: e.count for e in prf.key_averages() if e.key in ("aten::div", "aten::mul")}
    seen = []

    def trace_handler(p):
        seen.append((p.step_num, [e.count for e in p.key_averages() if e.key == "model_step"]))
    with T.profiler.profile(activities=[T.profiler.ProfilerActivity.CPU], on_trace_ready=trace_handler,
                            schedule=T.profiler.schedule(wait=1, warmup=1, active=2)) as p:
        for _ in range(8):
            with T.profiler.record_function("model_step"):
                model(inputs)
            p.step()
    return {"header": table.splitlines()[1].split(), "footer": table.splitlines()[-1].split(":")[0],
            "label": [label.count, float(label.self_cpu_time_total < label.cpu_time_total)], "counts": counts,
            "windows": seen, "types": [type(prof.key_averages()).__name__, type(label).__name__]}


def test_profiler_reports_as_torch():
    # torch's first profile imports for seconds: its answer is computed once per machine (tests/torch_reference.py)
    import inspect
    import json
    import torch_reference
    run_key = torch_reference.key("profiler_programs", inspect.getsource(profiler_programs))
    theirs = torch_reference.lookup(run_key)
    if theirs is None:
        theirs = torch_reference.store(run_key, json.loads(json.dumps(profiler_programs(real_torch))))
    assert json.loads(json.dumps(profiler_programs(tidal_torch))) == theirs


def test_profiler_sort_key_and_trace(tmp_path):
    with tidal_torch.profiler.profile() as prof:
        tidal_torch.ones(3).mul(2)
    with pytest.raises(AttributeError, match="'FunctionEventAvg' object has no attribute 'nonsense'"):
        prof.key_averages().table(sort_by="nonsense")
    with tidal_torch.profiler.profile(schedule=tidal_torch.profiler.schedule(wait=0, warmup=1, active=1),
                                      on_trace_ready=tidal_torch.profiler.tensorboard_trace_handler(tmp_path)) as p:
        for _ in range(4):
            tidal_torch.ones(3).mul(2)
            p.step()
    assert len([f for f in tmp_path.iterdir() if f.name.endswith(".pt.trace.json")]) == 2


# -- warnings point at the user's line, whatever wrapper the op went through ----------------------------------------
WARNING_CALLS = {
    "std function (dof <= 0)": lambda T: T.std(T.ones(1), dim=0),
    "var function": lambda T: T.var(T.ones(1)),
    "std method": lambda T: T.ones(1).std(dim=0),
    "list index (non-tuple sequence)": lambda T: T.ones(3, 4)[[0, slice(None)]],
    "mse_loss target size": lambda T: T.nn.functional.mse_loss(T.ones(3, 4), T.ones(4)),
    "cross without dim": lambda T: T.cross(T.ones(2, 3), T.ones(2, 3)),
    "tensor(tensor)": lambda T: T.tensor(T.ones(2)),
    "new_tensor(tensor)": lambda T: T.ones(2).new_tensor(T.ones(2)),
}


@pytest.mark.parametrize("call", list(WARNING_CALLS), ids=list(WARNING_CALLS))
def test_warnings_point_at_the_callers_line(call):
    def sites(T):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            WARNING_CALLS[call](T)
        return [(w.category.__name__, w.filename) for w in caught if "cross" not in call or T is tidal_torch]
    theirs, ours = sites(real_torch), sites(tidal_torch)
    assert ours and all(f == __file__ for _, f in ours)
    assert all(f == __file__ for _, f in theirs)
    assert not theirs or [c for c, _ in theirs] == [c for c, _ in ours]  # (torch warns once for cross)


# -- hooks for autograd saved tensors: grad_fn._saved_<name> ------------------------------------------------------
def _saved(T, node, name):
    """`node._saved_<name>`; on tidal through autograd/saved_names.py (until s8_saved_names.patch gives the
    attribute itself)."""
    if T is real_torch:
        return getattr(node, "_saved_" + name)
    from tidal.autograd.saved_names import saved_value
    return saved_value(node, name)


def saved_tensor_names(T, read=_saved):
    """The saved-tensors-hooks tutorial's first lines: y = a * b saves a and b themselves; exp saves its result
    (equal, not the same object); x.mul(2) keeps no self; pow through hooks that scale by 4 on pack and unpack."""
    a = T.from_numpy(uniform((5,), 40)).requires_grad_()
    b = T.ones(5, requires_grad=True)
    y = a * b
    out = {"is": [read(T, y.grad_fn, "self") is a, read(T, y.grad_fn, "other") is b]}
    e = T.exp(a)
    out["result"] = [read(T, e.grad_fn, "result").equal(e), read(T, e.grad_fn, "result") is e]
    out["no self"] = read(T, a.mul(2).grad_fn, "self") is None
    out["sin"] = read(T, T.sin(a).grad_fn, "self") is a
    x = T.from_numpy(uniform((5,), 41)).requires_grad_()
    with T.autograd.graph.saved_tensors_hooks(lambda x: x * 4, lambda x: x / 4):
        y = T.pow(x, 2)
    out["hooked"] = read(T, y.grad_fn, "self").equal(x)
    y.sum().backward()
    out["grad"] = x.grad.equal(2 * x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        read(T, y.grad_fn, "self")
    with pytest.raises(AttributeError, match="'AddBackward0' object has no attribute '_saved_self'"):
        read(T, (a + b).grad_fn, "self")
    return {k: [float(v) for v in (val if isinstance(val, list) else [val])] for k, val in out.items()}


def test_saved_tensor_names():
    run_both(saved_tensor_names)


def test_saved_tensor_attributes():
    run_both(saved_tensor_names, read=lambda T, node, name: getattr(node, "_saved_" + name))


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_saved_tensor_unpacked_from_disk_twice(T, tmp_path):
    """The tutorial's 'incorrect version': an unpack hook deleting its file makes a second read fail."""
    import os
    import uuid
    from tidal.autograd.saved_names import saved_value

    def pack_hook(tensor):
        name = os.path.join(tmp_path, str(uuid.uuid4()))
        T.save(tensor, name)
        return name

    def unpack_hook(name):
        tensor = T.load(name)
        os.remove(name)
        return tensor
    x = T.ones(5, requires_grad=True)
    with T.autograd.graph.saved_tensors_hooks(pack_hook, unpack_hook):
        y = x.pow(2)
    read = (lambda: y.grad_fn._saved_self) if T is real_torch else (lambda: saved_value(y.grad_fn, "self"))
    assert read().equal(x)
    with pytest.raises(FileNotFoundError):
        read()


# -- NumPy scalars as operands (np.prod(shape), np.float32 constants: what data and metric code passes) -----------
NUMPY_SCALAR_CALLS = {
    "t * f32": lambda T, t: t * np.float32(2.0), "f32 * t": lambda T, t: np.float32(2.0) * t,
    "t + i64": lambda T, t: t + np.int64(3), "i64 - t": lambda T, t: np.int64(3) - t,
    "t / prod(shape)": lambda T, t: t / np.prod(t.shape), "add": lambda T, t: T.add(t, np.float32(1)),
    "mul_": lambda T, t: t.clone().mul_(np.float32(3)), "clamp": lambda T, t: t.clamp(np.float32(0), np.float64(0.5)),
    "where": lambda T, t: T.where(t > 0, t, np.float32(0)), "pow base": lambda T, t: T.pow(np.float32(2), t),
    "int * i64": lambda T, t: t.long() * np.int64(2), "int32 * f32": lambda T, t: t.int() * np.float32(2.5),
    "half * f64": lambda T, t: t.half() * np.float64(2), "lt": lambda T, t: t < np.float32(0.5),
    "lerp": lambda T, t: T.lerp(t, t * 2, np.float32(0.5)),
    "addcmul": lambda T, t: T.addcmul(t, t, t, value=np.float32(2)),
}


def test_numpy_scalar_operands():
    def program(T):
        t = T.from_numpy(uniform((2, 3), 50))
        out = {k: f(T, t) for k, f in NUMPY_SCALAR_CALLS.items()}
        dtypes = {k: str(v.dtype).split(".")[-1] for k, v in out.items()}
        w = T.from_numpy(uniform((3,), 51)).requires_grad_()
        ((w * np.float32(2) + np.int64(1)) / np.float32(4)).sum().backward()
        return {"values": {k: v.double() for k, v in out.items()}, "dtypes": dtypes, "grad": w.grad}
    run_both(program)


# -- the SDPA tutorial: attention biases are Tensor subclasses -------------------------------------------------------
def causal_biases(T):
    """causal_upper_left / causal_lower_right: one type, a Tensor subclass printing as its boolean mask, passed
    as attn_mask (upper-left equals is_causal=True, lower-right differs when the lengths differ)."""
    import importlib
    bias_module = importlib.import_module(T.nn.attention.__name__ + ".bias")  # (torch imports it on request)
    F = T.nn.functional
    upper_left_bias = bias_module.causal_upper_left(2, 10)
    lower_right_bias = bias_module.causal_lower_right(2, 10)
    q, k, v = (T.from_numpy(uniform(s, 60 + n)) for n, s in enumerate([(2, 2, 2, 4), (2, 2, 10, 4), (2, 2, 10, 4)]))
    out_upper_left = F.scaled_dot_product_attention(q, k, v, upper_left_bias)
    out_lower_right = F.scaled_dot_product_attention(q, k, v, lower_right_bias)
    out_is_causal = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return {"types": [float(type(upper_left_bias) == type(lower_right_bias)),
                      float(issubclass(type(upper_left_bias), T.Tensor)),
                      float(isinstance(lower_right_bias, T.Tensor))],
            "reprs": [repr(upper_left_bias), repr(lower_right_bias)],
            "outs": [out_upper_left, out_lower_right, out_is_causal],
            "materialized": lower_right_bias._materialize(device="cpu").int()}


def test_causal_bias_is_a_tensor():
    run_both(causal_biases)


# -- Intro to TorchScript / deployment: a scripted or traced module saves itself ----------------------------------
def torchscript_save(T, tmp_path):
    """torch.jit.trace(module, example) and torch.jit.script(module) give modules with .save(path); jit.load
    gives a module that runs (and saves) again; a traced cell still trains through plain autograd."""
    from tutorial_data import uniform

    class MyCell(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = T.nn.Linear(4, 4)

        def forward(self, x, h):
            new_h = T.tanh(self.linear(x) + h)
            return new_h, new_h

    cell = picklable(MyCell, T)()  # (tidal's jit.save pickles the module: its class must be importable)
    with T.no_grad():
        cell.linear.weight.copy_(T.from_numpy(uniform((4, 4), 70)))
        cell.linear.bias.copy_(T.from_numpy(uniform((4,), 71)))
    x, h = T.from_numpy(uniform((3, 4), 72)), T.from_numpy(uniform((3, 4), 73))
    traced = T.jit.trace(cell, (x, h))
    scripted = T.jit.script(T.nn.Sequential(T.nn.Linear(4, 2)))
    path = str(tmp_path / f"traced_{T.__name__}.pt")
    traced.save(path)
    scripted.save(str(tmp_path / f"scripted_{T.__name__}.pt"))
    loaded = T.jit.load(path)
    loaded.save(str(tmp_path / f"again_{T.__name__}.pt"))
    traced(x, h)[0].sum().backward()
    return {"out": traced(x, h)[0], "loaded": loaded(x, h)[0], "grad": cell.linear.weight.grad,
            "callable": float(callable(loaded.save))}


def test_torchscript_modules_save(tmp_path):
    run_both(torchscript_save, tmp_path=tmp_path)


# -- torch.utils.hooks ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_utils_hooks_removable_handle(T):
    """Code that keeps its own hook tables makes torch.utils.hooks.RemovableHandle(table, extra_dict=...); module
    hook handles are instances of it."""
    import importlib
    from collections import OrderedDict
    hooks_module = importlib.import_module(T.__name__ + ".utils.hooks") if T is real_torch else T.utils.hooks
    hooks, extra = OrderedDict(), OrderedDict()
    h = hooks_module.RemovableHandle(hooks)
    hooks[h.id] = print
    h2 = hooks_module.RemovableHandle(hooks, extra_dict=extra)
    hooks[h2.id] = extra[h2.id] = len
    assert h2.id != h.id and (len(hooks), len(extra)) == (2, 1)
    h2.remove()
    assert (len(hooks), len(extra)) == (1, 0)
    with h:
        pass
    assert not hooks
    assert isinstance(T.nn.Linear(2, 2).register_forward_hook(lambda *a: None), hooks_module.RemovableHandle)

    def hook(grad):
        return grad
    assert hooks_module.unserializable_hook(hook) is hook and hook.__torch_unserializable__


def test_measurement_repr_names_torchs_class_under_the_runner():
    """The benchmark recipe prints a Measurement: its first line names torch's class when `torch` is tidal (the
    runner sets the repr namespace, as for dtypes)."""
    import importlib
    from tidal.tensor.dtype import repr_namespace
    bench = importlib.import_module("torch.utils.benchmark")
    theirs = repr(bench.Timer(stmt="x * 2", globals={"x": real_torch.ones(3)}).timeit(3)).split(" object")[0]
    saved, repr_namespace[0] = repr_namespace[0], "torch"
    try:
        ours = repr(tidal_torch.utils.benchmark.Timer(stmt="x * 2", globals={"x": tidal_torch.ones(3)}).timeit(3))
    finally:
        repr_namespace[0] = saved
    assert ours.split(" object")[0] == theirs


# -- the swap_tensors recipe and torch.__future__'s conversion switches ---------------------------------------------
def swap_tensors_recipe(T):
    """torch.utils.swap_tensors exchanges two tensors' contents (and classes: a Parameter and a plain tensor);
    module conversions keep the Parameter objects under the swap switch and by default, and make new ones under
    the overwrite switch."""
    t1, t2 = T.arange(2), T.arange(3)
    T.utils.swap_tensors(t1, t2)
    p, q = T.nn.Parameter(T.ones(2)), T.zeros(3)
    T.utils.swap_tensors(p, q)
    x = T.ones(2, requires_grad=True)
    y, z = x * 2, T.zeros(2)
    T.utils.swap_tensors(y, z)
    out = {"swapped": [t1, t2], "classes": [type(p).__name__, type(q).__name__], "values": [p, q],
           "grad_fn": [float(z.grad_fn is not None), float(y.grad_fn is None), float(z.requires_grad)]}
    future = T.__future__
    for switch in ("swap", "overwrite", None):
        if switch:
            getattr(future, f"set_{switch}_module_params_on_conversion")(True)
        try:
            lin = T.nn.Linear(2, 2)
            w0 = lin.weight
            lin.double()
            out[str(switch)] = [float(lin.weight is w0), str(w0.dtype).split(".")[-1],
                                str(lin.weight.dtype).split(".")[-1]]
        finally:
            if switch:
                getattr(future, f"set_{switch}_module_params_on_conversion")(False)
    out["flags"] = [float(future.get_swap_module_params_on_conversion()),
                    float(future.get_overwrite_module_params_on_conversion())]
    import weakref
    a = T.ones(1)
    ref = weakref.ref(a)
    with pytest.raises(RuntimeError, match="Cannot swap t1 because it has weakref associated with it"):
        T.utils.swap_tensors(a, T.ones(2))
    del ref
    return out


def test_swap_tensors_and_conversion_switches():
    run_both(swap_tensors_recipe)


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_forward_mode_jacobian_refusals(T):
    """autograd.functional.jacobian/hessian with strategy="forward-mode": torch's messages for the combinations it
    does not implement."""
    F = T.autograd.functional
    with pytest.raises(NotImplementedError, match="^Computing Jacobian using forward-AD or forward-over-reverse "
                                                  r"Hessian isonly implemented for `vectorize=True`\.$"):
        F.jacobian(T.sin, T.ones(2), strategy="forward-mode")
    with pytest.raises(NotImplementedError, match="forward-over-reverse Hessian isonly implemented"):
        F.hessian(lambda x: (x ** 3).sum(), T.ones(2), outer_jacobian_strategy="forward-mode")
    with pytest.raises(NotImplementedError, match=r"`create_graph=True` and `strategy=\"forward-mode\"` are not "
                                                  "supported together"):
        F.jacobian(T.sin, T.ones(2), strategy="forward-mode", vectorize=True, create_graph=True)
    h = F.hessian(lambda x: (x ** 3).sum(), T.tensor([1.0, 2.0]), outer_jacobian_strategy="forward-mode",
                  vectorize=True)
    assert h.tolist() == [[6.0, 0.0], [0.0, 12.0]]


# -- storages: do two tensors share memory? -------------------------------------------------------------------------
def storages(T):
    """untyped_storage(): one address and size for every view of a memory, another for a copy; the typed
    storage() (deprecated: torch's warning) lists the elements; reprs as torch's."""
    x = T.arange(12, dtype=T.float32).view(3, 4)
    s = x.untyped_storage()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        typed = x[1:].storage()
    return {"nbytes": [s.nbytes(), len(s), x[1:].untyped_storage().nbytes()],
            "shared": [float(x[1:].untyped_storage().data_ptr() == s.data_ptr()),
                       float(x.t().untyped_storage().data_ptr() == s.data_ptr()),
                       float(x.clone().untyped_storage().data_ptr() == s.data_ptr()),
                       float(s.data_ptr() == x.data_ptr())],
            "typed": [typed.size(), typed[5], typed.tolist()[:3], typed.element_size()],
            "warning": [str(w.message) for w in caught],
            "reprs": [repr(T.arange(3, dtype=T.int16).untyped_storage()).replace("tidal.", "torch."),
                      repr(T.arange(2, dtype=T.int16).storage()).replace("tidal.", "torch.")]}


def test_storages():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run_both(storages)


def jit_surface(T):
    """What deployment code reaches for in torch.jit besides script/trace: isinstance(scripted, ScriptModule),
    freeze / optimize_for_inference (torch's refusals), Attribute and annotate, fork/wait, jit.isinstance with
    typing containers, TracerWarning as a warnings filter category, the legacy ScriptModule + script_method."""
    from typing import Dict, List, Optional, Tuple
    jit = T.jit
    lin = T.nn.Linear(2, 2)
    scripted = jit.script(lin)
    out = {"isinstance": [float(builtins_isinstance(scripted, jit.ScriptModule)),
                          float(builtins_isinstance(lin, T.nn.Linear)),
                          float(builtins_isinstance(T.nn.ReLU(), jit.ScriptModule))]}
    with pytest.raises(RuntimeError, match="Freezing expects a ScriptModule as input"):
        jit.freeze(T.nn.Linear(2, 2))
    with pytest.raises(RuntimeError, match="Freezing is currently only implemented for modules in eval mode"):
        jit.freeze(scripted)
    frozen = jit.freeze(scripted.eval())
    x = T.ones(1, 2)
    out["frozen"] = [float(builtins_isinstance(frozen, jit.ScriptModule)), float(T.equal(frozen(x), lin(x)))]
    out["optimized"] = float(builtins_isinstance(jit.optimize_for_inference(jit.script(T.nn.Linear(2, 2))),
                                                 jit.ScriptModule))
    out["annotate"] = jit.annotate(List[int], [])
    fut = jit.fork(lambda a, b: a * b, T.tensor([2.0]), 3)
    out["fork"] = jit.wait(fut)
    out["jit.isinstance"] = [float(jit.isinstance([1, 2], List[int])), float(jit.isinstance([1, "a"], List[int])),
                             float(jit.isinstance({"a": T.ones(1)}, Dict[str, T.Tensor])),
                             float(jit.isinstance((1, "a"), Tuple[int, str])),
                             float(jit.isinstance(None, Optional[int]))]
    with pytest.raises(RuntimeError, match="Attempted to use list without a contained type"):
        jit.isinstance([1], list)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=jit.TracerWarning)
        warnings.warn("traced", jit.TracerWarning)

    class Legacy(jit.ScriptModule):
        def __init__(self):
            super().__init__()
            self.scale = jit.Attribute(2.0, float)

        @jit.script_method
        def forward(self, x):
            return x * self.scale
    out["legacy"] = [Legacy()(T.ones(2)), Legacy().scale]
    out["strategy"] = [list(map(list, jit.set_fusion_strategy([("DYNAMIC", 3)]))),
                       list(map(list, jit.set_fusion_strategy([("STATIC", 2), ("DYNAMIC", 10)])))]
    return out


builtins_isinstance = isinstance


def test_jit_surface():
    run_both(jit_surface)


# -- Extending torch: a tensor-like with __torch_function__ (the docs' ScalarTensor) -----------------------------------
def scalar_tensor_program(T):
    """torch.mean / torch.add on ScalarTensor go to its handlers (registered by the public function objects);
    a function it does not handle is torch's TypeError; torch.overrides' helpers."""
    import functools
    handled = {}

    class ScalarTensor:
        def __init__(self, N, value):
            self._N, self._value = N, value

        def __repr__(self):
            return f"ScalarTensor(N={self._N}, value={self._value})"

        def tensor(self):
            return self._value * T.eye(self._N)

        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            if func not in handled or not all(issubclass(t, (T.Tensor, ScalarTensor)) for t in types):
                return NotImplemented
            return handled[func](*args, **kwargs)

    def implements(torch_function):
        def decorator(func):
            functools.update_wrapper(func, torch_function)
            handled[torch_function] = func
            return func
        return decorator

    @implements(T.mean)
    def mean(input):
        return float(input._value) / input._N

    def ensure_tensor(data):
        return data.tensor() if isinstance(data, ScalarTensor) else T.as_tensor(data)

    @implements(T.add)
    def add(input, other):
        try:
            if input._N == other._N:
                return ScalarTensor(input._N, input._value + other._value)
            raise ValueError("Shape mismatch!")
        except AttributeError:
            return T.add(ensure_tensor(input), ensure_tensor(other))

    s = ScalarTensor(2, 2)
    with pytest.raises(TypeError, match=r"^Multiple dispatch failed for 'torch.mul'; all __torch_function__ "
                                        r"handlers returned NotImplemented:\n\n  - tensor subclass <class"):
        T.mul(s, 3) if T is real_torch else _in_torch_namespace(lambda: T.mul(s, 3))
    overrides = T.overrides
    return {"mean": T.mean(ScalarTensor(5, 2)), "add": repr(T.add(s, s)),
            "mixed": T.add(s, T.tensor([[1, 1], [1, 1]])),
            "helpers": [float(overrides.has_torch_function((s,))), float(overrides.has_torch_function((T.ones(1),))),
                        float(overrides.is_tensor_like(s)), float(overrides.is_tensor_like(T.ones(1))),
                        float(overrides.is_tensor_like(3))]}


def _in_torch_namespace(fn):
    from tidal.tensor.dtype import repr_namespace
    saved, repr_namespace[0] = repr_namespace[0], "torch"
    try:
        return fn()
    finally:
        repr_namespace[0] = saved


def test_torch_function_tensor_like():
    run_both(scalar_tensor_program)


# -- torch.hub: checkpoints by URL (file:// here) and a local hubconf.py ----------------------------------------------
HUBCONF = '''
dependencies = ["numpy"]


def tiny(T, n=2):
    """A one-layer model."""
    return T.nn.Linear(n, 1)


def _private():
    pass
'''


def hub_program(T, tmp_path):
    """load_state_dict_from_url with a hash-named file (check_hash), cached on the second call; set_dir/get_dir;
    hub.load / list / help on a local hubconf.py; torch's refusals (unknown source, missing entrypoint)."""
    name = T.__name__.replace(".", "_")
    src = tmp_path / f"src_{name}"
    src.mkdir()
    (src / "hubconf.py").write_text(HUBCONF)
    state = {"weight": T.tensor([[1.0, 2.0]]), "bias": T.tensor([0.5])}
    raw = tmp_path / f"raw_{name}.pt"
    T.save(state, raw)
    import hashlib
    digest = hashlib.sha256(raw.read_bytes()).hexdigest()
    named = tmp_path / f"tiny-{digest[:8]}.pth"
    named.write_bytes(raw.read_bytes())
    previous = T.hub.get_dir()
    T.hub.set_dir(str(tmp_path / f"hub_{name}"))
    try:
        return _hub_calls(T, src, named, name)
    finally:
        T.hub.set_dir(previous)


def _hub_calls(T, src, named, name):
    sd = T.hub.load_state_dict_from_url(named.as_uri(), check_hash=True, weights_only=True)
    again = T.hub.load_state_dict_from_url(named.as_uri(), map_location="cpu")
    model = T.hub.load(str(src), "tiny", T, n=2, source="local")
    model.load_state_dict(sd)
    with pytest.raises(ValueError, match='Unknown source: "gitlab"'):
        T.hub.load(str(src), "tiny", source="gitlab")
    with pytest.raises(RuntimeError, match="Cannot find callable nope in hubconf"):
        T.hub.load(str(src), "nope", source="local")
    import importlib
    zoo = importlib.import_module(T.__name__ + ".utils.model_zoo") if T is real_torch else T.utils.model_zoo
    assert zoo.load_url(named.as_uri())["bias"].tolist() == [0.5]
    cached = sorted(os.listdir(os.path.join(T.hub.get_dir(), "checkpoints")))
    return {"out": model(T.ones(1, 2)), "again": again["weight"], "cached": [f.split("-")[0] for f in cached],
            "dir": float(T.hub.get_dir().endswith(f"hub_{name}"))}


def test_hub(tmp_path):
    run_both(hub_program, tmp_path=tmp_path)


# -- the performance tuning guide's switches -------------------------------------------------------------------
@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_tuning_guide_switches(T):
    """emit_nvtx/emit_itt blocks, profile(enabled=False), backends.cpu / opt_einsum, torch.__config__."""
    with T.autograd.profiler.emit_nvtx(enabled=False), T.autograd.profiler.emit_itt(enabled=False):
        y = T.ones(2) * 2
    with T.autograd.profiler.profile(enabled=False):
        y = y + 1
    assert y.tolist() == [3.0, 3.0]
    capability = T.backends.cpu.get_cpu_capability()
    theirs = real_torch.backends.cpu.get_cpu_capability()
    assert capability == theirs if theirs in ("AVX2", "DEFAULT") else capability.startswith("AVX")
    oe = T.backends.opt_einsum
    assert (oe.is_available(), oe.enabled, oe.strategy) == (real_torch.backends.opt_einsum.is_available(),
                                                           real_torch.backends.opt_einsum.enabled,
                                                           real_torch.backends.opt_einsum.strategy)
    info = T.__config__.parallel_info()
    assert f"at::get_num_threads() : {T.get_num_threads()}" in info and "OMP_NUM_THREADS" in info
    assert "built with" in T.__config__.show()


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_small_switches(T):
    """Names code built on torch reaches for: F.has_torch_function*, autograd.set_multithreading_enabled (a
    context manager that also takes effect at once), kineto_available."""
    F = T.nn.functional
    assert not F.has_torch_function_unary(T.ones(1)) and not F.has_torch_function_variadic(T.ones(1), 1)
    assert T.autograd.is_multithreading_enabled()
    with T.autograd.set_multithreading_enabled(False):
        assert not T.autograd.is_multithreading_enabled()
    assert T.autograd.is_multithreading_enabled()
    assert isinstance(T.autograd.kineto_available(), bool)


@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_cuda_memory_queries_without_cuda(T):
    """Memory bookkeeping a training script prints, on a build without CUDA: empty statistics, zero sizes with
    the deprecated names' FutureWarnings, no device generators, mem_get_info refused."""
    assert T.cuda.memory_stats() == collections.OrderedDict() and T.cuda.memory_stats_as_nested_dict() == {}
    with pytest.warns(FutureWarning, match="`torch.cuda.memory_cached` has been renamed to "
                                           "`torch.cuda.memory_reserved`"):
        assert T.cuda.memory_cached() == 0
    with pytest.warns(FutureWarning, match="renamed to `torch.cuda.max_memory_reserved`"):
        assert T.cuda.max_memory_cached() == 0
    assert T.cuda.get_rng_state_all() == [] and T.cuda.set_rng_state_all([]) is None
    with pytest.raises(AssertionError, match="Torch not compiled with CUDA enabled"):
        T.cuda.mem_get_info()


# -- the benchmark recipe's Fuzzer ---------------------------------------------------------------------------------
@pytest.mark.parametrize("T", FRAMEWORKS, ids=["torch", "tidal"])
def test_benchmark_fuzzer(T):
    """Fuzzer(parameters, tensors, seed).take(n): parameters within their bounds, tensors within the element bounds,
    properties with torch's keys, layout as reported; the same seed gives the same draws; unnormalized
    distributions refused (the values drawn are each framework's own)."""
    import importlib
    bench = importlib.import_module(T.__name__ + ".utils.benchmark") if T is real_torch else T.utils.benchmark
    fuzzer = lambda: bench.Fuzzer(  # noqa: E731
        parameters=[bench.FuzzedParameter("k0", minval=1, maxval=100, distribution="loguniform"),
                    bench.FuzzedParameter("k1", minval=1, maxval=100, distribution="loguniform")],
        tensors=[bench.FuzzedTensor("x", size=("k0", "k1"), min_elements=128, max_elements=1000,
                                    probability_contiguous=0.6)], seed=0)
    draws = list(fuzzer().take(6))
    assert len(draws) == 6
    for tensors, properties, params in draws:
        x = tensors["x"]
        assert 1 <= params["k0"] <= 100 and 1 <= params["k1"] <= 100 and 128 <= x.numel() <= 1000
        assert tuple(x.shape) == (params["k0"], params["k1"]) and x.dtype == T.float32
        assert set(properties["x"]) == {"numel", "order", "steps", "is_contiguous", "dtype"}
        assert properties["x"]["is_contiguous"] == x.is_contiguous() and properties["x"]["numel"] == x.numel()
    assert [p for _, _, p in fuzzer().take(6)] == [p for _, _, p in draws]
    assert any(not p["x"]["is_contiguous"] for _, p, _ in draws) or T is real_torch
    with pytest.raises(AssertionError, match="Unknown distribution: normal"):
        bench.FuzzedParameter("d", 1, 2, distribution="normal")
    if T is tidal_torch:  # (torch 2.13's check is inverted: it refuses normalized distributions and takes these)
        with pytest.raises(AssertionError, match="Distribution is not normalized"):
            bench.FuzzedParameter("d", distribution={1: 0.5, 2: 0.4})
        d = bench.FuzzedParameter("d", distribution={1: 0.3, 2: 0.4, 3: 0.3})
        assert {d.sample(np.random.RandomState(s)) for s in range(20)} <= {1, 2, 3}
        x = next(bench.op_fuzzers.binary.BinaryOpFuzzer(seed=0).take(1))[0]
        assert x["x"].shape == x["y"].shape


# -- Tensor subclasses: results keep the class; a subclass's __torch_function__ sees each call ------------------------
def tensor_subclasses(T):
    """The Extending-torch docs' subclass behaviour: methods, operators, indexing and torch functions on an
    instance give instances of its class; a LoggingTensor's __torch_function__ sees `x + 1` and torch.add as
    'add' and defers to super(); parameters stay plain."""
    class Meta(T.Tensor):
        pass

    class Named(Meta):
        def sum(self, *args, **kwargs):
            return "own sum"

    class Child(Named):
        pass

    calls = []

    class LoggingTensor(T.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            calls.append(func.__name__)
            return super().__torch_function__(func, types, args, kwargs or {})

    m = T.ones(2, 3).as_subclass(Meta)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch.tensor(a tensor): the copy-construct warning)
        copied = T.tensor(m)
    results = [m * 2, m.sum(), T.relu(m), m[0], m.t(), m.T, T.cat([m, m]), m.view(3, 2), 2 + m, copied,
               T.zeros_like(m), *T.split(m, 1)]
    x = T.ones(2).as_subclass(LoggingTensor)
    logged = [x + 1, T.add(x, 1)]
    p = T.nn.Parameter(T.ones(2))
    c = T.ones(2).as_subclass(Child)
    return {"types": [type(r).__name__ for r in results], "values": [r.as_subclass(T.Tensor) for r in results],
            "child": [c.sum(), type(c * 2).__name__, type(c.mean()).__name__],
            "reprs": [repr(m[0] * 2), str(T.arange(6.).view(2, 3).as_subclass(Child)), repr(p * 1)],
            "logged": [type(r).__name__ for r in logged], "calls": calls,
            "parameter": [type(p * 2).__name__, type(T.relu(p)).__name__]}


def test_tensor_subclasses_keep_their_class():
    run_both(tensor_subclasses)


def test_float_of_a_tensor_requiring_grad_warns_once():
    """'%.3f' % loss and float(loss) on a loss that requires grad: torch's warning, once per process, at the
    caller's line; int(), item() and format() do not warn."""
    from tidal.tensor import tensor as tensor_module
    tensor_module.SCALAR_WARNED.clear()
    y = tidal_torch.tensor(1.5, requires_grad=True) * 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        int(y), y.item(), f"{y:.2f}"
        assert not caught
        "%.1f" % y
        float(y)
    assert [(str(w.message), w.filename) for w in caught] == [
        ("Converting a tensor with requires_grad=True to a scalar may lead to unexpected behavior.\nConsider using "
         "tensor.detach() first.", __file__)]
