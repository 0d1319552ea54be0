"""Issue 15 (correctness), session 6: requires_grad changes refused as torch refuses them, in-place writes into
inference tensors, views made under no_grad, retain_grad across in-place ops, `x.data`'s own version counter,
integer division by zero, and bad inputs a new user tries. Each case runs the same calls on torch and on
tidal.compat and asserts the same result, or the same error type and message."""
import numpy as np
import pytest
import torch

import tidal.compat as tc



def _norm(v):
    """A comparable form of a result: tensors as (dtype name, shape, values, requires_grad)."""
    if hasattr(v, "detach") and hasattr(v, "dtype"):
        values = np.asarray(v.detach().numpy())
        if values.dtype.kind in "fc":  # NaN compares equal to NaN here
            values = np.where(np.isnan(values), None, values.astype(object))
        return (str(v.dtype).split(".")[-1], tuple(v.shape), values.tolist(), bool(v.requires_grad))
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v).split(".")[-1]


def _run(fn, mod):
    try:
        return ("ok", _norm(fn(mod)))
    except Exception as e:  # compared by the caller: type and first line of the message
        return ("err", type(e).__name__, str(e).split("\n")[0])


def same(fn):
    """Run `fn(torch)` and `fn(tidal.compat)`; assert one answer, or one error."""
    want, got = _run(fn, torch), _run(fn, tc)
    assert got == want


def _setattr(t, name, value):
    setattr(t, name, value)
    return t


# -- 1. requires_grad changes -----------------------------------------------------------------------------------
def _nonleaf(t):
    return t.ones(3, requires_grad=True) * 2


@pytest.mark.parametrize("value", [True, False])
def test_set_requires_grad_on_nonleaf_refused(value):
    same(lambda t: _setattr(_nonleaf(t), "requires_grad", value))


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_set_requires_grad_on_integer_refused(dtype):
    same(lambda t: _setattr(t.ones(3, dtype=getattr(t, dtype)), "requires_grad", True))


@pytest.mark.parametrize("value", [1, 0, "yes", None])
def test_set_requires_grad_needs_a_bool(value):
    same(lambda t: _setattr(t.ones(3), "requires_grad", value))


def test_del_requires_grad_refused():
    def fn(t):
        x = t.ones(3)
        del x.requires_grad
    same(fn)


@pytest.mark.parametrize("value", [True, False])
def test_set_requires_grad_on_leaves_allowed(value):
    same(lambda t: _setattr(t.ones(3, requires_grad=not value), "requires_grad", value))
    same(lambda t: _setattr(t.ones(3, dtype=t.int64), "requires_grad", False))
    same(lambda t: _setattr(t.ones(2, dtype=t.complex64), "requires_grad", value).requires_grad)


def test_requires_grad_method_on_nonleaf():
    same(lambda t: _nonleaf(t).requires_grad_(True))  # allowed: it already requires grad
    same(lambda t: _nonleaf(t).requires_grad_(False))  # refused
    same(lambda t: t.ones(3, dtype=t.int64).requires_grad_())


def test_nonleaf_grad_flows_after_refused_set():
    """The refusal leaves the graph as it was: backward still reaches the leaf."""
    def fn(t):
        x = t.tensor([1., 2., 3.], requires_grad=True)
        y = x * x
        try:
            y.requires_grad = False
        except RuntimeError:
            pass
        y.sum().backward()
        return x.grad, y.requires_grad, y.is_leaf
    same(fn)


# -- 2. in-place writes into inference tensors ------------------------------------------------------------------
def _inference(t, shape=(3,)):
    with t.inference_mode():
        return t.ones(*shape)


_INPLACE_WRITES = {
    "add_": lambda t, i: i.add_(1),
    "mul_view": lambda t, i: i[:2].mul_(2),
    "clamp_": lambda t, i: i.clamp_(0, 1),
    "copy_": lambda t, i: i.copy_(t.zeros(3)),
    "out=": lambda t, i: t.add(t.ones(3), 1, out=i),
    "relu_": lambda t, i: t.relu_(i),
    "setitem": lambda t, i: i.__setitem__(0, 5.),
    "setitem_view": lambda t, i: i[1:].__setitem__(0, 5.),
    "unsqueeze_": lambda t, i: i.unsqueeze_(0),
    "requires_grad_": lambda t, i: i.requires_grad_(),
    "normal_": lambda t, i: i.normal_(),
    "uniform_": lambda t, i: i.uniform_(),
    "setitem_index": lambda t, i: i.__setitem__(t.tensor([0, 2]), 5.),
    "scatter_": lambda t, i: i.scatter_(0, t.tensor([1]), t.ones(1)),
    "masked_fill_": lambda t, i: i.masked_fill_(t.tensor([True, False, True]), 0.),
    "index_add_": lambda t, i: i.index_add_(0, t.tensor([0]), t.ones(1)),
}
_INPLACE_WRITES.update({
    "set_": lambda t, i: i.set_(t.ones(3)),
    "resize_same_shape": lambda t, i: i.resize_(3),
    "resize_other_shape": lambda t, i: i.resize_(4),
    "parameter": lambda t, i: t.nn.Parameter(i),
    "parameter_no_grad": lambda t, i: t.nn.Parameter(i, requires_grad=False).requires_grad,
})
_KERNEL_WRITES = {
    "fill_": lambda t, i: i.fill_(2),
    "zero_": lambda t, i: i.zero_(),
    "init.zeros_": lambda t, i: t.nn.init.zeros_(i),
    "matmul_out": lambda t, i: t.matmul(t.ones(3, 3), t.ones(3), out=i),
    "zeros_out": lambda t, i: t.zeros(3, out=i),
    "addmv_": lambda t, i: i.addmv_(t.ones(3, 3), t.ones(3)),
    "cumsum_": lambda t, i: i.cumsum_(0),
    "masked_scatter_": lambda t, i: i.masked_scatter_(t.tensor([True, False, True]), t.ones(3)),
    "tril_": lambda t, i: i.unsqueeze(0).tril_(),
}


_ALL_WRITES = {**_INPLACE_WRITES, **_KERNEL_WRITES}


@pytest.mark.parametrize("name", sorted(_ALL_WRITES))
def test_inplace_into_inference_tensor_refused(name):
    same(lambda t: _ALL_WRITES[name](t, _inference(t)))


@pytest.mark.parametrize("make", [lambda t: _inference(t), lambda t: _inference(t)[1:], lambda t: t.ones(3)],
                         ids=["inference", "inference_view", "normal"])
def test_version_of_inference_tensor_refused(make):
    """torch's inference tensors keep no version counter: `_version` raises (a normal tensor's is a number)."""
    same(lambda t: make(t)._version)


@pytest.mark.parametrize("name", sorted(_INPLACE_WRITES.keys() - {"requires_grad_"}))
def test_inplace_inside_inference_mode_allowed(name):
    """Inside inference_mode both inference and normal tensors take in-place writes."""
    def fn(t):
        i, n = _inference(t), t.ones(3)
        with t.inference_mode():
            _INPLACE_WRITES[name](t, n)
            _INPLACE_WRITES[name](t, i)
        return n.shape, i.shape
    same(fn)


def test_inference_tensor_reads_and_new_tensors_allowed():
    def fn(t):
        i = _inference(t)
        return i + 1, i.view(3), i[1:] * 2, i.clone().add_(1), t.cat([i, i])
    same(fn)


# -- 3. views made under no_grad of a tensor that requires grad ----------------------------------------------
_NOGRAD_VIEWS = {
    "slice": lambda x: x[:2],
    "select": lambda x: x[0],
    "view": lambda x: x.view(12),
    "unsqueeze": lambda x: x.unsqueeze(0),
    "transpose": lambda x: x.t(),
    "expand": lambda x: x[:1].expand(3, 4),
    "unbind": lambda x: x.unbind(0)[1],
    "narrow": lambda x: x.narrow(1, 1, 2),
    "nonleaf_slice": lambda x: x[1:],  # (x made a non-leaf first, by _nograd_view)
}


def _nograd_view(t, name):
    x = t.ones(3, 4, requires_grad=True)
    if name.startswith("nonleaf"):
        x = x * 2
    with t.no_grad():
        return x, _NOGRAD_VIEWS[name](x)


@pytest.mark.parametrize("name", sorted(_NOGRAD_VIEWS))
def test_nograd_view_requires_grad_as_torch(name):
    def fn(t):
        x, v = _nograd_view(t, name)
        return v.requires_grad, v.is_leaf, v.grad_fn is None
    same(fn)


@pytest.mark.parametrize("name", ["slice", "view", "nonleaf_slice"])
def test_nograd_view_passes_no_gradient(name):
    """A gradient reaches neither the view nor its base; backward through it runs without error."""
    def fn(t):
        x, v = _nograd_view(t, name)
        w = t.ones(v.shape, requires_grad=True)
        (v * w).sum().backward()
        return x.grad if x.is_leaf else None, v.grad, w.grad
    same(fn)


def test_nograd_view_detached_and_not_views_do_not_require_grad():
    def fn(t):
        x = t.ones(3, 4, requires_grad=True)
        with t.no_grad():
            return x.detach().requires_grad, x.clone().requires_grad, (x * 2).requires_grad, x.data[:2].requires_grad
    same(fn)


def test_nograd_view_keeps_requires_grad_when_set_false():
    same(lambda t: _setattr(_nograd_view(t, "slice")[1], "requires_grad", False).requires_grad)


_NOGRAD_WRITES = {
    "mul_": lambda t, v: v.mul_(2),
    "zero_": lambda t, v: v.zero_(),
    "copy_": lambda t, v: v.copy_(t.zeros(v.shape)),
    "unsqueeze_": lambda t, v: v.unsqueeze_(0),
    "normal_": lambda t, v: v.normal_(),
    "index_fill_": lambda t, v: v.index_fill_(0, t.tensor([0]), 1.),
    "setitem_select": lambda t, v: v.__setitem__(0, 3.),
    "setitem_slice": lambda t, v: v.__setitem__((0, slice(1, None)), 3.),
    "setitem_unsqueeze": lambda t, v: v.__setitem__((slice(None), None), 3.),
    "setitem_full": lambda t, v: v.__setitem__(Ellipsis, 3.),
    "setitem_index": lambda t, v: v.__setitem__(t.tensor([1]), 3.),
}


@pytest.mark.parametrize("name", sorted(_NOGRAD_WRITES))
def test_nograd_view_write_in_grad_mode_refused(name):
    """torch refuses the write, so the leaf keeps its values (tidal wrote through before)."""
    def fn(t):
        x, v = _nograd_view(t, "slice")
        try:
            _NOGRAD_WRITES[name](t, v)
        except RuntimeError as e:
            return str(e), x
        return "no error", x
    same(fn)


@pytest.mark.parametrize("name", sorted(_NOGRAD_WRITES))
def test_nograd_view_write_under_no_grad_allowed(name):
    def fn(t):
        x, v = _nograd_view(t, "slice")
        with t.no_grad():
            if name != "normal_":
                _NOGRAD_WRITES[name](t, v)
        return x.requires_grad, x.grad_fn is None, x.shape
    same(fn)


@pytest.mark.parametrize("index", [0, slice(1, None), (slice(None), 0), (0, slice(1, 3)), None, Ellipsis,
                                   slice(0, 5)], ids=repr)
def test_setitem_on_leaf_messages(index):
    def fn(t):
        x = t.ones(3, 4, requires_grad=True)
        x[index] = 3.
    same(fn)


# -- in-place random samplers in grad mode -------------------------------------------------------------------
_SAMPLERS = {"normal_": (), "uniform_": (), "bernoulli_": (), "exponential_": (), "random_": (), "cauchy_": (),
             "geometric_": (0.5,), "log_normal_": (), "random_5": (5,), "random_1_5": (1, 5)}


@pytest.mark.parametrize("name", sorted(_SAMPLERS))
def test_inplace_sampler_node_and_zero_gradient(name):
    """Sampling into a non-leaf gives torch's node (NormalBackward0...), and the old values get no gradient."""
    def fn(t):
        x = t.ones(3, requires_grad=True)
        y = x * 2
        getattr(y, name.split("_")[0] + "_" if name.startswith("random") else name)(*_SAMPLERS[name])
        kind = type(y.grad_fn).__name__
        y.sum().backward()
        return kind, x.grad
    same(fn)


@pytest.mark.parametrize("name", ["normal_", "uniform_", "bernoulli_", "exponential_"])
def test_inplace_sampler_on_leaf_refused(name):
    same(lambda t: getattr(t.ones(3, requires_grad=True), name)())
    same(lambda t: getattr(t.ones(3, requires_grad=True)[:2], name)())


def test_inplace_bernoulli_tensor_p_gets_zero_gradient():
    def fn(t):
        x = t.ones(3, requires_grad=True)
        p = t.full((3,), 0.5, requires_grad=True)
        y = x * 2
        y.bernoulli_(p)
        kind = type(y.grad_fn).__name__
        (y * 1).sum().backward()
        return kind, x.grad, p.grad
    same(fn)


def test_sampler_into_view_of_nonleaf():
    def fn(t):
        x = t.ones(4, requires_grad=True)
        y = x * 2
        y[1:3].uniform_()
        kind = type(y.grad_fn).__name__
        y.sum().backward()
        return kind, x.grad
    same(fn)


# -- 4. retain_grad follows the tensor through in-place ops -----------------------------------------------------
def _retained(t, write):
    x = t.tensor([1., 2., 3.], requires_grad=True)
    y = x * 2
    y.retain_grad()
    write(t, y)
    (y * y).sum().backward()
    return y.grad, x.grad, y.retains_grad


_RETAIN_WRITES = {
    "mul_": lambda t, y: y.mul_(3),
    "add_tensor_": lambda t, y: y.add_(t.tensor([1., 2., 3.], requires_grad=True)),
    "setitem": lambda t, y: y.__setitem__(0, 10.),
    "view_write": lambda t, y: y[1:].mul_(2),
    "copy_": lambda t, y: y.copy_(t.tensor([4., 5., 6.])),
    "twice": lambda t, y: (y.mul_(3), y.add_(1)),
}


@pytest.mark.parametrize("name", sorted(_RETAIN_WRITES))
def test_retain_grad_follows_inplace(name):
    same(lambda t: _retained(t, _RETAIN_WRITES[name]))


def test_retain_grad_on_view_follows_write_into_base():
    def fn(t):
        x = t.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        v = y[:2]
        v.retain_grad()
        y.add_(1)
        (v * v).sum().backward()
        return v.grad, x.grad
    same(fn)


def test_retain_grad_and_hooks_around_inplace():
    """A hook registered before the in-place op stays on the old node; retain_grad moves to the new one."""
    def fn(t):
        seen = []
        x = t.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.register_hook(lambda g: seen.append(g * 1))
        z = y * 5
        y.add_(1)
        y.register_hook(lambda g: seen.append(g * 10))
        (z.sum() + (y * y).sum()).backward()
        return y.grad, x.grad, seen
    same(fn)


def test_retain_grad_through_autograd_grad_and_twice():
    def fn(t):
        x = t.tensor([1., 2., 3.], requires_grad=True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward(retain_graph=True)
        first = y.grad.clone()
        (y * y).sum().backward()
        return first, y.grad, x.grad
    same(fn)


# -- 6. integer division by zero ---------------------------------------------------------------------------------
_INT = [1, -2, 3]

_DIV_ZERO = {
    "//": lambda t: t.tensor(_INT) // 0,
    "%": lambda t: t.tensor(_INT) % 0,
    "floor_divide": lambda t: t.floor_divide(t.tensor(_INT), 0),
    "remainder_kw": lambda t: t.remainder(input=t.tensor(_INT), other=0),
    "fmod": lambda t: t.fmod(t.tensor(_INT), 0),
    "div_floor": lambda t: t.div(t.tensor(_INT), 0, rounding_mode="floor"),
    "div_trunc": lambda t: t.div(t.tensor(_INT), 0, rounding_mode="trunc"),
    "divide_trunc": lambda t: t.divide(t.tensor(_INT), 0, rounding_mode="trunc"),
    "method": lambda t: t.tensor(_INT).remainder(0),
    "floor_divide_": lambda t: t.tensor(_INT).floor_divide_(0),
    "//=": lambda t: t.tensor(_INT).__ifloordiv__(0),
    "%=": lambda t: t.tensor(_INT).__imod__(0),
    "div_floor_": lambda t: t.tensor(_INT).div_(0, rounding_mode="floor"),
    "fmod_": lambda t: t.tensor(_INT).fmod_(0),
    "False": lambda t: t.tensor(_INT) // False,
    "numpy_zero": lambda t: t.tensor(_INT) % np.int64(0),
    "int8_wraps_256": lambda t: t.tensor(_INT, dtype=t.int8) // 256,
    "uint8": lambda t: t.tensor([1, 2], dtype=t.uint8) % 0,
    "bool_by_int": lambda t: t.tensor([True, False]) // 0,
}


@pytest.mark.parametrize("name", sorted(_DIV_ZERO))
def test_integer_division_by_number_zero_raises_at_the_call(name):
    """torch raises at the call; the op must raise before returning (no deferred error, no garbage)."""
    same(_DIV_ZERO[name])


_DIV_FINE = {
    "true_div": lambda t: t.div(t.tensor(_INT), 0),
    "true_divide": lambda t: t.true_divide(t.tensor(_INT), 0),
    "float_zero": lambda t: t.tensor(_INT) // 0.0,
    "float_tensor": lambda t: t.tensor([1., -2.]) % 0,
    "nonzero": lambda t: (t.tensor(_INT) // 2, t.tensor(_INT) % -2, t.fmod(t.tensor(_INT), 2)),
    "int8_257": lambda t: t.tensor(_INT, dtype=t.int8) // 257,
    "rounding_none": lambda t: t.div(t.tensor(_INT), 0, rounding_mode=None),
    "bool_by_bool": lambda t: t.tensor([True]) // False,
}


@pytest.mark.parametrize("name", sorted(_DIV_FINE))
def test_division_by_zero_that_torch_takes(name):
    same(_DIV_FINE[name])


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8", "uint8"])
def test_trunc_division_of_integers(dtype):
    def fn(t):
        kind = getattr(t, dtype)
        signed = dtype != "uint8"
        a = t.tensor([-7, 7, -7, 7, 0, 5, -128, 100] if signed else [249, 7, 3, 7, 0, 5, 200, 100], dtype=kind)
        b = t.tensor([2, -2, -2, 2, 3, 5, -1, 7] if signed else [2, 2, 2, 2, 3, 5, 1, 7], dtype=kind)
        return (t.div(a, b, rounding_mode="trunc"), t.div(a, 3, rounding_mode="trunc"),
                t.div(a, -3 if signed else 3, rounding_mode="trunc"), t.div(7, b, rounding_mode="trunc"))
    same(fn)


def test_trunc_division_of_large_int64_is_exact():
    """A float quotient loses the low digits of an int64 past 2**53 (tidal gave 1537228718622113792)."""
    same(lambda t: t.div(t.tensor([2 ** 62 + 1, -(2 ** 62 + 1), 2 ** 63 - 1]), 3, rounding_mode="trunc"))


def test_trunc_division_of_bools_refused():
    same(lambda t: t.div(t.tensor([True, False]), t.tensor([True, True]), rounding_mode="trunc"))


def test_trunc_division_out_and_inplace():
    def fn(t):
        out = t.zeros(2, dtype=t.int64)
        t.div(t.tensor([7, -7]), 2, rounding_mode="trunc", out=out)
        y = t.tensor([7, -7])
        y.div_(2, rounding_mode="trunc")
        return out, y, t.div(t.tensor([7, -7]), 2.5, rounding_mode="trunc")
    same(fn)


# -- 5. `x.data` has its own version counter (x.detach() shares x's) ----------------------------------------------


def test_data_has_its_own_version_counter():
    def fn(t):
        x = t.ones(3, requires_grad=True)
        d = x.data
        d.add_(1)
        d[1:].mul_(2)
        dd = d.detach()
        dd.sub_(1)
        return x._version, d._version, dd._version, x.data._version
    same(fn)


def test_write_through_data_keeps_saved_values_valid():
    """torch: a write through x.data is not seen by autograd (the gradient uses the new values)."""
    def fn(t):
        x = t.ones(3, requires_grad=True)
        y = x * x
        x.data.mul_(2)
        y.sum().backward()
        return x.grad
    same(fn)


def test_write_through_detach_invalidates_saved_values():
    def fn(t):
        x = t.ones(3, requires_grad=True)
        y = x * x
        x.detach().mul_(2)
        y.sum().backward()
    same(fn)


def test_detach_shares_the_version_counter():
    def fn(t):
        x = t.ones(3, requires_grad=True)
        x.detach().add_(1)
        x.detach()[0] = 5.
        return x._version
    same(fn)


# -- bad inputs a new user tries -------------------------------------------------------------------------------
_BAD_CALLS = {
    "add_shapes": lambda t: t.ones(2, 3) + t.ones(4, 5),
    "add_shapes_3d": lambda t: t.ones(2, 3, 4) + t.ones(5, 3, 1),
    "broadcast_shapes": lambda t: t.broadcast_shapes((2, 3), (4, 5)),
    "device_typo": lambda t: t.device("gpu"),
    "device_upper": lambda t: t.device("CPU"),
    "device_bad_index": lambda t: t.device("cuda:x"),
    "device_leading_zero": lambda t: t.device("cuda:01"),
    "device_empty": lambda t: t.device(""),
    "device_negative": lambda t: t.device("cuda", -1),
    "device_index_type": lambda t: t.device("cpu", "a"),
    "device_twice": lambda t: t.device("cuda:0", 1),
    "to_dtype_string": lambda t: t.ones(2).to("float99"),
    "linear_int_input": lambda t: t.nn.Linear(3, 2)(t.ones(2, 3, dtype=t.long)),
    "linear_long_bias": lambda t: t.nn.functional.linear(t.ones(2, 3), t.ones(4, 3), t.ones(4, dtype=t.long)),
    "linear_long_bias_1d": lambda t: t.nn.functional.linear(t.ones(3), t.ones(4, 3), t.ones(4, dtype=t.long)),
    "linear_bias_shape": lambda t: t.nn.functional.linear(t.ones(2, 3), t.ones(4, 3), t.ones(5)),
    "linear_bias_shape_3d": lambda t: t.nn.functional.linear(t.ones(2, 2, 3), t.ones(4, 3), t.ones(5)),
    "linear_bias_2d_ok": lambda t: t.nn.functional.linear(t.ones(2, 3), t.ones(4, 3), t.ones(1, 4)),
    "linear_input_shape": lambda t: t.nn.Linear(4, 2)(t.ones(2, 3)),
    "linear_0d": lambda t: t.nn.functional.linear(t.tensor(1.), t.ones(4, 3), t.ones(4)),
    "linear_ints": lambda t: t.nn.functional.linear(t.ones(2, 3).long(), t.ones(4, 3).long(), t.ones(4).long()),
    "ce_float_index_target": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([0., 1.])),
    "ce_long_prob_target": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.ones(2, 3).long()),
    "ce_int32_target": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([0, 1], dtype=t.int32)),
    "ce_uint8_target": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([0, 2], dtype=t.uint8)),
    "ce_batch": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3), t.tensor([0, 1, 1])),
    "ce_1d_input_target_1": lambda t: round(t.nn.functional.cross_entropy(t.tensor([1., 2., 3.]),
                                                                          t.tensor([1])).item(), 5),
    "ce_1d_input_target_2": lambda t: t.nn.functional.cross_entropy(t.tensor([1., 2., 3.]), t.tensor([1, 2])),
    "ce_3d_target_shape": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3, 4), t.ones(2, 5).long()),
    "ce_3d_target_dims": lambda t: t.nn.functional.cross_entropy(t.ones(2, 3, 4), t.ones(2).long()),
    "nll_multi_target": lambda t: t.nn.functional.nll_loss(t.ones(2, 3), t.tensor([[0], [1]])),
    "nll_float_target": lambda t: t.nn.functional.nll_loss(t.ones(2, 3), t.tensor([0., 1.])),
    "nll_4d_target_dims": lambda t: t.nn.functional.nll_loss(t.ones(2, 3, 4, 5), t.ones(2, 4).long()),
    "nll_4d_target_shape": lambda t: t.nn.functional.nll_loss(t.ones(2, 3, 4, 5), t.ones(2, 4, 6).long()),
    "nll_uint8": lambda t: t.nn.functional.nll_loss(t.ones(2, 3), t.tensor([0, 1], dtype=t.uint8)),
    "buffer_name_dot": lambda t: t.nn.Module().register_buffer("a.b", t.ones(1)),
    "parameter_name_dot": lambda t: t.nn.Module().register_parameter("a.b", None),
    "module_name_dot": lambda t: t.nn.Module().add_module("a.b", None),
    "groupnorm_groups": lambda t: t.nn.GroupNorm(4, 6),
    "layernorm_long": lambda t: t.nn.LayerNorm(3)(t.ones(2, 3).long()),
    "layer_norm_bool": lambda t: t.nn.functional.layer_norm(t.ones(2, 3).bool(), (3,)),
    "layer_norm_half_weight": lambda t: t.nn.functional.layer_norm(t.ones(2, 3), (3,), t.ones(3).half()),
    "layer_norm_half_input": lambda t: t.nn.functional.layer_norm(t.ones(2, 3).half(), (3,), t.ones(3), t.ones(3)),
    "layer_norm_bf16_half_bias": lambda t: t.nn.functional.layer_norm(t.ones(2, 3).bfloat16(), (3,), t.ones(3),
                                                                      t.ones(3).half()),
    "group_norm_double": lambda t: t.nn.functional.group_norm(t.ones(2, 4).double(), 2, t.ones(4)),
    "group_norm_long": lambda t: t.nn.functional.group_norm(t.ones(2, 4).long(), 2),
    "batch_norm_long": lambda t: t.nn.BatchNorm1d(3)(t.ones(2, 3).long()),
    "batch_norm_long_eval": lambda t: t.nn.BatchNorm1d(3).eval()(t.ones(2, 3).long()),
    "batch_norm_double_stats": lambda t: t.nn.functional.batch_norm(t.ones(2, 3).double(), t.zeros(3), t.ones(3)),
    "batch_norm_double_weight": lambda t: t.nn.functional.batch_norm(t.ones(2, 3).double(), t.zeros(3).double(),
                                                                     t.ones(3).double(), t.ones(3)),
    "instance_norm_long": lambda t: t.nn.functional.instance_norm(t.ones(2, 3, 4).long()),
    "rms_norm_long": lambda t: t.nn.functional.rms_norm(t.ones(2, 3).long(), (3,)),
    "bce_double_target": lambda t: t.nn.functional.binary_cross_entropy(t.ones(2) / 2, t.ones(2).double() / 2),
    "bce_bool_target": lambda t: t.nn.functional.binary_cross_entropy(t.ones(2) / 2, t.ones(2).bool()),
    "bce_long": lambda t: t.nn.functional.binary_cross_entropy(t.ones(2).long(), t.ones(2).long()),
    "bce_logits_long_input": lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(2).long(),
                                                                                        t.ones(2).long()),
    "bce_logits_int_target": lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(2), t.ones(2).int()),
    "bce_logits_bool_target": lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(2),
                                                                                         t.ones(2).bool()),
    "bce_logits_half_target": lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(2),
                                                                                         t.ones(2).half()).dtype,
    "contains_number": lambda t: (1 in t.ones(2, 3), 0 in t.ones(2, 3), True in t.ones(2), 1.0 in t.arange(3)),
    "contains_tensor": lambda t: (t.ones(1) in t.ones(2, 3), t.ones(3) in t.ones(2, 3), t.zeros(3) in t.ones(2, 3)),
    "contains_shape": lambda t: t.ones(2) in t.ones(2, 3),
    "contains_str": lambda t: "a" in t.ones(2),
    "type_unknown": lambda t: t.ones(2).type("torch.FooTensor"),
    "type_known": lambda t: t.ones(2).type("torch.LongTensor"),
    "threshold_bool": lambda t: t.nn.functional.threshold(t.ones(2).bool(), 0, 1),
    "threshold_long": lambda t: t.nn.functional.threshold(t.ones(2).long(), 0, 1),
    "glu_long": lambda t: t.nn.functional.glu(t.ones(2).long()),
    "bce_logits_float_target": lambda t: t.nn.functional.binary_cross_entropy_with_logits(t.ones(2).double(),
                                                                                          t.ones(2)).dtype,
}


@pytest.mark.parametrize("name", sorted(_BAD_CALLS))
def test_bad_call_as_torch(name):
    same(_BAD_CALLS[name])


def test_devices_still_parse():
    same(lambda t: (str(t.device("cpu")), str(t.device("cuda:1")), str(t.device("cuda", 0)), str(t.device("meta")),
                    str(t.ones(2).to("cpu").device)))




@pytest.mark.parametrize("convert, n", [(bool, 0), (bool, 2), (int, 0), (int, 2), (float, 0), (float, 2)])
def test_python_number_of_many_elements(convert, n):
    same(lambda t: convert(t.ones(n)))


def test_complex_of_many_elements():
    same(lambda t: complex(t.ones(2)))
    same(lambda t: complex(t.ones(1)))


# -- backward twice: torch refuses only where a node's saved tensors were freed ---------------------------------
_TWICE = {
    "mul_number": lambda x: x * 2,
    "mul": lambda x: x * x,
    "exp": lambda x: x.exp(),
    "div_number": lambda x: x / 2,
    "relu": lambda x: x.relu(),
    "add_number": lambda x: x + 1,
    "view": lambda x: x.view(2, 1),
    "slice": lambda x: x[0:1],
    "mean": lambda x: x.mean(),
    "neg": lambda x: -x,
    "expand": lambda x: x.expand(3, 2),
    "cat": lambda x: (torch if isinstance(x, torch.Tensor) else tc).cat([x, x]),
}


@pytest.mark.parametrize("name", sorted(_TWICE))
def test_backward_twice(name):
    def fn(t):
        x = t.ones(2, requires_grad=True)
        y = _TWICE[name](x).sum()
        y.backward()
        y.backward()
        return x.grad
    same(fn)


# -- anomaly mode checks every backward function for NaN ------------------------------------------------------------
@pytest.mark.parametrize("how", ["backward", "grad", "check_nan_off", "off"])
def test_anomaly_mode_finds_nan_in_builtin_backward(how):
    def fn(t):
        x = t.zeros(1, requires_grad=True)
        loss = (x.sqrt() * 0).sum()
        if how == "off":
            loss.backward()
            return x.grad
        with pytest.warns(UserWarning), t.autograd.detect_anomaly(check_nan=how != "check_nan_off"):
            if how == "grad":
                return t.autograd.grad(loss, x)
            loss.backward()
        return x.grad
    same(fn)


def test_anomaly_mode_leaves_no_hooks_behind():
    def fn(t):
        x = t.ones(2, requires_grad=True)
        y = (x * 2).sum()
        with pytest.warns(UserWarning), t.autograd.detect_anomaly():
            y.backward(retain_graph=True)
        x.grad = None
        y.backward()
        return x.grad, len(y.grad_fn._forward_hooks) if hasattr(y.grad_fn, "_forward_hooks") else 0
    same(fn)


def test_bool_tensor_as_index():
    same(lambda t: ([1, 2, 3][t.tensor(True)], [1, 2, 3][t.tensor(False)]))


def test_float_tensor_as_index_refused():
    same(lambda t: [1, 2][t.tensor(1.)])


@pytest.mark.parametrize("shape", [(2,), (1,)])
def test_format_spec_of_non_scalar_refused(shape):
    same(lambda t: f"{t.ones(*shape):.2f}")


def test_format_of_scalars_and_plain_format():
    same(lambda t: (f"{t.tensor(1.5):.2f}", f"{t.tensor(3):d}", format(t.ones(2), "").replace("tidal", "torch")))
