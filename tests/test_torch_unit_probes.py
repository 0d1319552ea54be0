"""Behaviour probed from PyTorch's own unit tests (test_autograd, test_view_ops, test_type_promotion):
each case runs the same calls on torch and on tidal.compat and asserts the same values, dtypes, or the
same error type and message."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc


def _norm(v):
    """A comparable form of a result: tensors as (dtype name, shape, values)."""
    if hasattr(v, "detach") and hasattr(v, "dtype"):
        return (str(v.dtype).split(".")[-1], tuple(v.shape), np.asarray(v.detach().numpy()).tolist())
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v).split(".")[-1]


def _run(fn, mod):
    try:
        return ("ok", _norm(fn(mod)))
    except Exception as e:  # compared below: type and message
        return ("err", type(e).__name__, str(e).split("\n")[0])


def same(fn):
    """Run `fn(torch)` and `fn(tidal.compat)`; assert one answer, or one error."""
    want, got = _run(fn, torch), _run(fn, tc)
    assert got == want


def _square(t):
    class Square(t.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g
    return Square


def _once_square(t):
    od = t.autograd.function.once_differentiable

    class Square(t.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @od
        def backward(ctx, g):
            x, = ctx.saved_tensors
            return 2 * x * g
    return Square


# -- Function subclasses -------------------------------------------------------------------------
def test_function_double_backward():
    def f(t):
        x = t.tensor([1., 2.], requires_grad=True)
        g, = t.autograd.grad(_square(t).apply(x).sum(), x, create_graph=True)
        g.sum().backward()
        return g, x.grad
    same(f)


def test_mark_dirty_bumps_version():
    def f(t):
        class Inc(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                x.add_(1)
                ctx.mark_dirty(x)
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 2
        a = t.ones(2, requires_grad=True)
        b = a * 1
        c = Inc.apply(b)
        c.sum().backward()
        return c is b, a.grad, b._version
    same(f)


def _doubling(t, grad_shape):
    """A Function of framework `t`: forward doubles, backward returns ones of `grad_shape`."""
    return type("F", (t.autograd.Function,), {"forward": staticmethod(lambda ctx, x: x * 2),
                                              "backward": staticmethod(lambda ctx, g: t.ones(grad_shape))})


def test_backward_returns_wrong_shape():
    def f(t):
        _doubling(t, (3,)).apply(t.ones(2, requires_grad=True)).sum().backward()
    same(f)


def test_backward_returns_broadcastable_grad():
    def f(t):
        x = t.ones(1, 2, requires_grad=True)
        _doubling(t, (3, 2)).apply(x).sum().backward()
        return x.grad
    same(f)


def test_save_for_backward_non_tensor():
    def f(t):
        class F(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x, None, 3)
                return x

            @staticmethod
            def backward(ctx, g):
                return g
        F.apply(t.ones(2, requires_grad=True))
    same(f)


def test_legacy_function_call():
    def f(t):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return _square(t)()(t.ones(2))
    same(f)


def test_once_differentiable_plain_grad():
    def f(t):
        x = t.tensor([1., 2.], requires_grad=True)
        g, = t.autograd.grad(_once_square(t).apply(x).sum(), x, create_graph=True)
        return g, g.requires_grad, g.grad_fn is None
    same(f)


def test_once_differentiable_twice():
    def f(t):
        x = t.tensor([1., 2.], requires_grad=True)
        y = _once_square(t).apply(x)
        gy = t.ones(2, requires_grad=True)
        g, = t.autograd.grad(y, x, grad_outputs=gy, create_graph=True)
        g.sum().backward()
    same(f)


def test_once_differentiable_import():
    from tidal.compat.autograd.function import once_differentiable  # noqa: F401
    from torch.autograd.function import once_differentiable as ref  # noqa: F401


# -- anomaly mode --------------------------------------------------------------------------------
def _nan_backward(t):
    """A Function of framework `t` whose backward returns NaN."""
    class F(t.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            return g * float("nan")
    return F


def test_anomaly_nan_in_function_backward():
    def f(t):
        x = t.ones(2, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with t.autograd.detect_anomaly():
                _nan_backward(t).apply(x).sum().backward()
    same(f)


def test_anomaly_nan_ignored_without_check_nan():
    def f(t):
        x = t.ones(2, requires_grad=True)
        with t.autograd.set_detect_anomaly(True, check_nan=False):
            _nan_backward(t).apply(x).sum().backward()
        return x.grad.isnan().all()
    same(f)


def test_set_detect_anomaly_modes():
    def f(t):
        a = t.is_anomaly_enabled()
        with t.autograd.set_detect_anomaly(True):
            b = t.is_anomaly_enabled()
        c = t.is_anomaly_enabled()
        t.autograd.set_detect_anomaly(True)
        d = t.is_anomaly_enabled()
        t.autograd.set_detect_anomaly(False)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            with t.autograd.detect_anomaly():
                e = t.is_anomaly_enabled()
        return a, b, c, d, e, t.is_anomaly_enabled(), [str(x.message) for x in w]
    same(f)


# -- .grad, detach_, backward arguments ------------------------------------------------------------
@pytest.mark.parametrize("value", ["int", "self", "shape", "dtype", "ok", "none"])
def test_grad_setter_checks(value):
    def f(t):
        x = t.ones(2, requires_grad=True)
        v = {"int": 3, "self": x, "shape": t.ones(2, 2), "dtype": t.ones(2, dtype=t.int64),
             "ok": t.full((2,), 3.), "none": None}[value]
        x.grad = v
        (x * 2).sum().backward()
        return x.grad
    same(f)


def test_grad_setter_grad_dtype_none_allows_any():
    def f(t):
        x = t.ones(2, requires_grad=True)
        x.grad_dtype = None
        x.grad = t.ones(2, dtype=t.float64)
        return x.grad
    same(f)


def test_non_leaf_grad_warns():
    def f(t):
        x = t.ones(3, requires_grad=True)
        y = x * 2
        z = x * 3
        z.retain_grad()
        (y + z).sum().backward()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            got = (y.grad, z.grad, x.grad)
        return got, [str(m.message)[:120] for m in w]
    same(f)


def test_detach_inplace_on_view():
    def f(t):
        x = t.ones(3, requires_grad=True)
        (x * 2)[:2].detach_()
    same(f)


def test_detach_inplace_on_non_view():
    def f(t):
        x = t.ones(3, requires_grad=True)
        y = x * 2
        y.detach_()
        return y.requires_grad, y.grad_fn, y.is_leaf
    same(f)


def test_backward_empty_inputs():
    same(lambda t: (t.ones(2, requires_grad=True) * 2).sum().backward(inputs=[]))


def test_backward_inputs_non_leaf():
    def f(t):
        x = t.ones(2, requires_grad=True)
        y = x * 2
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            (y * y).sum().backward(inputs=[y])
        return y.grad, x.grad, len(w)
    same(f)


# -- views -----------------------------------------------------------------------------------------
def test_is_view_and_base():
    def f(t):
        x = t.arange(6.)
        return (x.view(2, 3)._is_view(), x._is_view(), x.view(2, 3)._base is x, x.reshape(2, 3)._base is x,
                x.detach()._is_view())
    same(f)


def test_reshape_copy_is_not_a_view():
    def f(t):
        x = t.zeros(2, 3).t()
        r = x.reshape(6)
        fl = x.flatten()
        fl[0] = 1
        return r._base is None, r._is_view(), fl._base is None, x
    same(f)


def test_reshape_copy_grad():
    def f(t):
        x = t.arange(6., requires_grad=True)
        y = (x * 1).view(2, 3).t().reshape(6)
        y.mul_(t.arange(6.))
        y.sum().backward()
        return x.grad, y.grad_fn.name()
    same(f)


def test_inplace_into_no_grad_view():
    def f(t):
        x = t.ones(3, requires_grad=True).clone()
        with t.no_grad():
            v = x[:2]
        v.mul_(t.ones(2, requires_grad=True))
    same(f)


def test_view_of_leaf_inplace():
    same(lambda t: t.ones(3, requires_grad=True)[:2].mul_(2))


def test_unbind_output_inplace():
    def f(t):
        a, b = t.ones(2, 2, requires_grad=True).clone().unbind()
        a.mul_(2)
    same(f)


# -- type promotion --------------------------------------------------------------------------------
def test_promotion_zero_dim_and_scalars():
    def f(t):
        return ((t.ones(2, dtype=t.float32) + t.tensor(1., dtype=t.float64)).dtype,
                (t.ones(2, dtype=t.int32) + t.tensor(1., dtype=t.float64)).dtype,
                (t.ones(2, dtype=t.uint8) + t.ones(2, dtype=t.int8)).dtype,
                t.ones(2, dtype=t.int32) + 1.5, t.tensor([True, False]) + 1,
                t.result_type(t.tensor([1], dtype=t.int32), 1.0), t.promote_types(t.float16, t.bfloat16))
    same(f)


def test_promotion_inplace_cast_error():
    same(lambda t: t.ones(2, dtype=t.int32).add_(1.5))


# -- grad mode decorators, autograd.grad options ---------------------------------------------------
def test_no_grad_decorates_generator():
    def f(t):
        @t.no_grad()
        def gen(x):
            yield x * 2
            yield x * 3

        @t.enable_grad()
        def gen_on(x):
            yield x * 2
        x = t.ones(2, requires_grad=True)
        outs = list(gen(x))
        with t.no_grad():
            on = next(gen_on(x))
        return [o.requires_grad for o in outs], on.requires_grad, t.is_grad_enabled()
    same(f)


def test_grad_is_grads_batched():
    def f(t):
        x = t.tensor([1., 2.], requires_grad=True)
        y = x ** 3
        g, = t.autograd.grad(y, x, grad_outputs=t.eye(2), is_grads_batched=True)
        return g
    same(f)


@pytest.mark.parametrize("index", ["full_slice", "part_slice", "none", "int", "int_col", "ellipsis_int",
                                   "advanced", "int_advanced", "mask"])
def test_setitem_on_leaf_message(index):
    def f(t):
        y = t.ones(2, 3, requires_grad=True)
        key = {"full_slice": slice(0, 2), "part_slice": slice(0, 1), "none": None, "int": 0,
               "int_col": (slice(None), 0), "ellipsis_int": (Ellipsis, 0), "advanced": (slice(None), t.tensor([0])),
               "int_advanced": (0, t.tensor([0])), "mask": t.tensor([True, False])}[index]
        y[key] = 2.
    same(f)


def test_copy_node_name():
    def f(t):
        x = t.ones(2, requires_grad=True)
        y = t.zeros(2)
        y.copy_(x * 3)
        y.sum().backward()
        return x.grad, type(y.grad_fn).__name__, y.grad_fn.name()
    same(f)


def test_grad_empty_inputs_and_only_inputs():
    def f(t):
        x = t.ones(2, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            g = t.autograd.grad((x * 2).sum(), x, only_inputs=False)
        try:
            t.autograd.grad((x * 2).sum(), [])
        except RuntimeError as e:
            err = str(e)
        return g, [str(m.message) for m in w], err
    same(f)


def test_set_grad_enabled_type_check():
    same(lambda t: t.set_grad_enabled("a"))


def test_retain_grad_sees_hooks_registered_later():
    def f(t):
        x = t.ones(2, requires_grad=True)
        y = x * 2
        y.retain_grad()
        h = y.register_hook(lambda g: g * 10)
        (y * 1).sum().backward()
        first = (y.grad, x.grad)
        h.remove()
        y.grad = None
        (y * 1).sum().backward()
        return first, y.grad, x.grad
    same(f)


# -- more Function forms ---------------------------------------------------------------------------
def test_function_setup_context_style():
    def f(t):
        class F(t.autograd.Function):
            @staticmethod
            def forward(x, k):
                return x * k

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.k = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.k, None
        x = t.ones(2, requires_grad=True)
        F.apply(x, 3.).sum().backward()
        return x.grad
    same(f)


def test_function_returning_its_input():
    def f(t):
        class F(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return g * 5
        x = t.ones(2, requires_grad=True)
        y = F.apply(x)
        y.sum().backward()
        return y is x, x.is_leaf, x.grad_fn, x.grad, type(y.grad_fn).__name__, y._base is x
    same(f)


def test_function_non_tensor_output_and_vjp():
    def f(t):
        class F(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2, 5

            @staticmethod
            def vjp(ctx, g, _):
                return g * 7
        x = t.ones(2, requires_grad=True)
        y, k = F.apply(x)
        y.sum().backward()
        return k, x.grad
    same(f)


def test_function_gradient_for_non_tensor_input():
    def f(t):
        class F(t.autograd.Function):
            @staticmethod
            def forward(ctx, x, k):
                return x * k

            @staticmethod
            def backward(ctx, g):
                return g, g
        F.apply(t.ones(2, requires_grad=True), 2).sum().backward()
    same(f)


def test_function_both_backward_and_vjp():
    def f(t):
        class F(t.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g

            @staticmethod
            def vjp(ctx, g):
                return g
        F.apply(t.ones(2, requires_grad=True)).sum().backward()
    same(f)


@pytest.mark.parametrize("op, args", [("t_", ()), ("squeeze_", ()), ("unsqueeze_", (0,)), ("transpose_", (0, 1)),
                                      ("swapdims_", (0, 1)), ("as_strided_", ((3,), (1,)))])
def test_metadata_inplace_bumps_version(op, args):
    def f(t):
        x = t.zeros(1, 3)
        getattr(x, op)(*args)
        a = t.ones(1, 3, requires_grad=True)
        b = a * 1
        getattr(b, op)(*args)
        (b * b).sum().backward()
        return x._version, x.shape, a.grad
    same(f)


def test_grad_wrt_gradient_edges():
    def f(t):
        x = t.ones(2, requires_grad=True)
        y = x * 2
        z = (y * y).sum()
        edges = [t.autograd.graph.get_gradient_edge(y), t.autograd.graph.get_gradient_edge(x)]
        return (t.autograd.grad(z, edges[0], retain_graph=True), t.autograd.grad(z, edges))
    same(f)



def test_saved_input_modified_message():
    def f(t):
        x = t.ones(2, requires_grad=True)
        w = x * 1
        y = (w * w).sum()
        w.add_(1)
        y.backward()
    same(f)


def test_saved_leaf_modified_message():
    def f(t):
        x = t.ones(2, requires_grad=True)
        y = (x * x).sum()
        with t.no_grad():
            x.mul_(2)
        y.backward()
    same(f)


@pytest.mark.parametrize("leaf", [True, False])
@pytest.mark.parametrize("change", ["size", "dtype"])
def test_hook_changes_value(leaf, change):
    def f(t):
        x = t.ones(2, requires_grad=True)
        y = x if leaf else x * 2
        y.register_hook(lambda g: t.ones(3) if change == "size" else g.double())
        (y * 2).sum().backward()
    same(f)


def test_grad_output_shape_mismatch_message():
    same(lambda t: (t.ones(2, requires_grad=True) * 2).backward(t.ones(3)))


def test_unused_input_index_message():
    def f(t):
        x, z = t.ones(2, requires_grad=True), t.ones(2, requires_grad=True)
        t.autograd.grad((x * 2).sum(), [x, z])
    same(f)


# -- for /work/notes/unit_clone_node.patch (ops/elementwise/arithmetic.py) --------------------------------------
def test_clone_node_names():
    def f(t):
        x = t.ones(2, 3, requires_grad=True)
        r = x.t().reshape(6)
        return (x.clone().grad_fn.name(), x.t().contiguous().grad_fn.name(), x.to(t.float64).grad_fn.name(),
                r.grad_fn.name(), r.grad_fn.next_functions[0][0].name())
    same(f)


# -- for /work/notes/unit_inference_saved.patch (autograd/graph.py) -------------------------------
@pytest.mark.parametrize("op", ["add", "mul", "exp_mul", "plain"])
def test_inference_tensor_saved_for_backward(op):
    def f(t):
        with t.inference_mode():
            x = t.ones(2)
        y = t.ones(2, requires_grad=True)
        r = {"add": lambda: x + y, "mul": lambda: x * y, "exp_mul": lambda: y.exp() * x, "plain": lambda: x.exp()}[op]()
        return r.requires_grad
    same(f)
