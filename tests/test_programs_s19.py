"""A hunt with real programs after session 18 (issue 15: the same answer as torch, or torch's error at the same line):
which tensors a node saves (a later in-place write is refused at backward exactly when torch refuses it), ops torch
gives no derivative (floor_divide, in-place acosh/asinh/atanh), in-place activations that save their result
(elu_, celu_, selu_, leaky_relu_), rounded division's zero gradient, sort's keyword-only `stable`, and an optimizer
state dict that follows the optimizer that loaded it; each run on real torch and on `tidal.compat`."""
import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_programs_s9 import data, init, run_both
from test_programs_s11 import outcome

FRAMEWORKS = (real_torch, tidal_torch)


def both(program) -> tuple:
    """program(T)'s outcome on torch and on tidal."""
    return tuple(outcome(lambda: program(T)) for T in FRAMEWORKS)


# -- what a node saves: a write after the op is refused at backward exactly where torch refuses it --------------------
SAVED_WRITES = {
    # torch saves the input alone: the result may be written afterwards
    "abs_then_write_the_result": lambda T, y: T.abs(y).add_(1),
    "erfinv_then_write_the_result": lambda T, y: T.erfinv(y).add_(1),
    "erfinv_inplace_then_write": lambda T, y: y.erfinv_().add_(1),
    "sinc_then_write_the_result": lambda T, y: T.sinc(y).add_(1),
    "sinc_inplace_then_write": lambda T, y: y.sinc_().add_(1),
    # ... and a write into the input is refused
    "erfinv_then_write_the_input": lambda T, y: (T.erfinv(y), y.add_(1))[0],
    # torch's in-place elu family saves the result (EluBackward1): a later write is refused
    "elu_inplace_then_write": lambda T, y: T.nn.functional.elu_(y, 0.7).mul_(2),
    "elu_inplace_flag_then_write_a_slice": lambda T, y: (lambda z: (z[:2].mul_(2), z)[1])(
        T.nn.functional.elu(y, inplace=True)),
    "celu_inplace_then_write": lambda T, y: T.nn.functional.celu_(y, 0.5).add_(1),
    "selu_inplace_then_write": lambda T, y: T.nn.functional.selu_(y).add_(1),
    "leaky_relu_inplace_then_write": lambda T, y: T.nn.functional.leaky_relu_(y, 0.2).add_(1),
    "rrelu_inplace_eval_then_write": lambda T, y: T.nn.functional.rrelu_(y, training=False).add_(1),
    # the ones that save their input still allow it
    "hardswish_inplace_then_write": lambda T, y: T.nn.functional.hardswish(y, inplace=True).add_(1),
    "silu_inplace_then_write": lambda T, y: T.nn.functional.silu(y, inplace=True).add_(1),
}


@pytest.mark.parametrize("write", SAVED_WRITES.values(), ids=SAVED_WRITES.keys())
def test_write_after_the_op_as_torch(write):
    """tidal's abs saved its result, erfinv and sinc formulas read the result, and elu_ saved a copy of its input:
    abs/erfinv/sinc raised at backward where torch runs, elu_ and its kin ran where torch refuses."""
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45, 0.8], requires_grad=True)
        z = write(T, x * 1)
        z.sum().backward()
        return x.grad.tolist()
    theirs, ours = both(program)
    assert theirs[0] == ours[0], (theirs, ours)
    if theirs[0] == "ok":
        assert ours[1] == pytest.approx(theirs[1], rel=1e-5, abs=1e-6)
    else:
        assert ours[1] == theirs[1]


def test_inplace_activations_that_save_their_result():
    """Node names, one edge to the old history, values and first and second gradients of the in-place elu family."""
    def program(T):
        F = T.nn.functional
        x = T.from_numpy(data((6,), 1, -2, 2)).double().requires_grad_()
        ys = [F.elu_(x * 1, 0.7), F.celu_(x * 1, 0.5), F.selu_(x * 1), F.leaky_relu_(x * 1, 0.2),
              F.elu(x * 1, inplace=True), F.leaky_relu(x * 1, inplace=True)]
        w = x * 1
        F.elu_(w[1:4], 1.3)  # a slice: its base's node is CopySlices
        g, = T.autograd.grad(sum((y * y).sum() for y in ys + [w]), x, create_graph=True)
        gg, = T.autograd.grad(g.sum(), x)
        return [[y.grad_fn.name() for y in ys], [len(y.grad_fn.next_functions) for y in ys], w.grad_fn.name(),
                ys, w, g, gg]
    run_both(program, rtol=1e-10, atol=1e-12)


def test_inplace_elu_on_a_leaf_refused_as_torch():
    theirs, ours = both(lambda T: T.nn.functional.elu_(T.ones(2, requires_grad=True)))
    assert theirs[0] == "RuntimeError" and ours == theirs


# -- ops without a derivative ------------------------------------------------------------------------------------------
NO_DERIVATIVE = {
    "floor_divide": lambda T, y: T.floor_divide(y, 0.3),
    "floordiv_operator": lambda T, y: y // 0.3,
    "rfloordiv_operator": lambda T, y: 3 // y,
    "floor_divide_tensors": lambda T, y: T.floor_divide(y, y * 2),
    "floor_divide_inplace": lambda T, y: y.floor_divide_(0.3),
    "ifloordiv": lambda T, y: y.__ifloordiv__(0.3),
    "acosh_inplace": lambda T, y: (y + 2).acosh_(),
    "asinh_inplace": lambda T, y: y.asinh_(),
    "atanh_inplace": lambda T, y: (y * 0.5).atanh_(),
}


@pytest.mark.parametrize("name", sorted(NO_DERIVATIVE))
def test_no_derivative_refused_at_backward_as_torch(name):
    """torch has no derivative for floor_divide (a NotImplemented node) nor for in-place acosh/asinh/atanh
    (AcoshBackward1...): the forward runs, backward raises. tidal gave zeros and acosh's gradient."""
    def program(T):
        x = T.tensor([0.3, 0.6, 0.45, 0.8], requires_grad=True)
        z = NO_DERIVATIVE[name](T, x * 1)
        return [z.grad_fn.name(), len(z.grad_fn.next_functions), outcome(lambda: z.sum().backward())], z.tolist()
    theirs, ours = program(real_torch), program(tidal_torch)
    assert theirs[0][2][0] != "ok" and ours[0] == theirs[0]
    assert ours[1] == pytest.approx(theirs[1], rel=1e-6)


def test_rounded_division_has_a_zero_gradient_as_torch():
    """div(rounding_mode='floor'|'trunc') is torch's DivBackward2 with a zero gradient, out of place, in place and
    through a view; remainder's second derivative goes through it (it went through floor_divide)."""
    def program(T):
        x = T.tensor([1.5, -2.0, 0.7], requires_grad=True)
        y = x * 1
        y.div_(0.4, rounding_mode="floor")
        w = x * 1
        w[1:].div_(T.tensor(0.3), rounding_mode="trunc")
        outs = [T.div(x, 0.7, rounding_mode="trunc"), x.div(x * 0.3, rounding_mode="floor"), y, w]
        g, = T.autograd.grad(sum(o.sum() for o in outs) + T.remainder(x, x * 0.3).pow(2).sum(), x, create_graph=True)
        gg, = T.autograd.grad(g.sum(), x)
        return [[o.grad_fn.name() for o in outs], outs, g, gg,
                outcome(lambda: T.ones(2, requires_grad=True).div_(2, rounding_mode="floor"))]
    run_both(program)


# -- sort's `stable` is keyword-only, as its dim and descending then ---------------------------------------------------
SORT_CALLS = {
    "method_dim": lambda T, x: x.sort(0, stable=True),
    "method_dim_unstable": lambda T, x: x.sort(0, stable=False),
    "method_dim_descending": lambda T, x: x.sort(0, True, stable=True),
    "method_dim_descending_keyword": lambda T, x: x.sort(0, descending=True, stable=True),
    "function_dim": lambda T, x: T.sort(x, 0, stable=True),
    "function_dim_descending": lambda T, x: T.sort(x, 0, True, stable=True),
    "function_dim_descending_keyword": lambda T, x: T.sort(x, 0, descending=True, stable=True),
    "argsort_method_dim": lambda T, x: x.argsort(0, stable=True),
    "argsort_method_dim_descending": lambda T, x: x.argsort(0, True, stable=True),
    "argsort_function_dim": lambda T, x: T.argsort(x, 0, stable=True),
    "argsort_function_dim_descending": lambda T, x: T.argsort(x, 0, True, stable=True),
    "keywords": lambda T, x: T.sort(x, dim=0, descending=True, stable=True).indices,
    "positional_without_stable": lambda T, x: x.sort(0, True).indices,
    "argsort_keywords": lambda T, x: x.argsort(dim=0, stable=True),
}


@pytest.mark.parametrize("name", sorted(SORT_CALLS))
def test_sort_stable_with_a_positional_dim_as_torch(name):
    theirs, ours = both(lambda T: SORT_CALLS[name](T, T.tensor([3.0, 1.0, 2.0, 1.0])).tolist())
    assert ours == theirs


# -- optimizer state dicts ---------------------------------------------------------------------------------------------
def test_loaded_state_dict_follows_the_loading_optimizer():
    """torch's loaded optimizer counts on in the state dict's own step tensors: a state dict kept after
    load_state_dict sees the new step counts (tidal's stayed at the loaded count)."""
    def program(T):
        model = T.nn.Linear(3, 2)
        init(T, model, 3)
        opt = T.optim.Adam(model.parameters(), lr=0.1)
        x = T.from_numpy(data((4, 3), 4))
        steps = []
        for o in (opt, None):
            if o is None:
                saved = opt.state_dict()
                o = T.optim.Adam(model.parameters(), lr=0.1)
                o.load_state_dict(saved)
            for _ in range(2):
                o.zero_grad()
                model(x).pow(2).sum().backward()
                o.step()
            steps.append(o.state_dict()["state"][0]["step"].item())
        return [steps, saved["state"][0]["step"].item(), saved["state"][1]["step"].item(), list(model.parameters())]
    run_both(program, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("write", [lambda T, y: T.nn.functional.elu_(y).add_(1), lambda T, y: T.pow(2, y).add_(1),
                                   lambda T, y: T.nn.functional.leaky_relu_(y[1:]).mul_(2)],
                         ids=["EluBackward1", "PowBackward2", "LeakyReluBackward1"])
def test_modified_saved_tensor_message_names_the_overload(write):
    """torch's message names the node without 'Backward' but with a non-zero overload: 'output 0 of Elu1'."""
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45, 0.8], requires_grad=True)
        write(T, x * 1).sum().backward()
    theirs, ours = both(program)
    assert theirs[0] == "RuntimeError" and ours == theirs


# -- an in-place write into a later output of a multi-output node ----------------------------------------------------
MEAN_WRITES = {
    "add_": lambda T, m: m.add_(1), "exp_": lambda T, m: m.exp_(), "clamp_": lambda T, m: m.clamp_(0, 0.2),
    "relu_": lambda T, m: m.relu_(), "elu_": lambda T, m: T.nn.functional.elu_(m),
    "index_add_": lambda T, m: m.index_add_(0, T.tensor([0]), T.ones(1)),
    "masked_fill_": lambda T, m: m.masked_fill_(m > 0.2, 0.0), "zero_": lambda T, m: m.zero_(),
    "div_floor": lambda T, m: m.div_(0.3, rounding_mode="floor"), "unsqueeze_": lambda T, m: m.unsqueeze_(0),
    "copy_": lambda T, m: m.copy_(T.ones(2) * T.tensor(2.0, requires_grad=True)),
    "cumsum_": lambda T, m: m.cumsum_(0),
    "addmv_": lambda T, m: m.addmv_(T.ones(2, 2), T.ones(2)),
    "hardtanh_": lambda T, m: T.nn.functional.hardtanh_(m),
}


@pytest.mark.parametrize("write", MEAN_WRITES.values(), ids=MEAN_WRITES.keys())
def test_inplace_write_into_var_means_mean_as_torch(write):
    """var, mean = var_mean(x): writing into the mean (output 1) gave it a one-output node while it kept output
    number 1, so backward indexed past the node's outputs (IndexError); and var_mean saved the mean, so a write
    into it was refused at backward where torch (which saves the input alone) runs."""
    def program(T):
        x = T.tensor([[0.3, -0.6, 0.45], [0.8, -0.2, 0.1]], requires_grad=True)
        var, mean = T.var_mean(x * 1, 1)
        out = write(T, mean)
        (out * T.arange(1.0, 1.0 + out.numel()).reshape(out.shape)).sum().backward()
        return [out, x.grad, var]
    run_both(program)


def test_var_and_std_gradients_with_the_mean_recomputed():
    """var/std/var_mean/std_mean gradients, first and second, against torch (the backward now recomputes the mean
    from the input, as torch's var_backward does); writing into std_mean's std is refused as torch refuses it."""
    def program(T):
        x = T.from_numpy(data((3, 4), 1)).double().requires_grad_()
        outs = [x.var(1), x.var(), x.std(0, keepdim=True), *T.var_mean(x, 1), *T.std_mean(x, (0, 1), correction=0),
                x.var(1, correction=2), x[0, 0].var(correction=0)]
        total = sum((o * (T.arange(o.numel()).reshape(o.shape) + 1.0)).sum() for o in outs)
        g, = T.autograd.grad(total, x, create_graph=True)
        gg, = T.autograd.grad((g * g).sum(), x)
        std, _ = T.std_mean(x * 1, 1)
        std.mul_(2)
        return [outs, g, gg, outcome(lambda: std.sum().backward())]
    run_both(program, rtol=1e-9, atol=1e-12)


# -- which inputs a node saves: writes into an input after the op ------------------------------------------------------
INPUT_WRITES = {
    # torch saves the input: the write is refused at backward
    "leaky_relu": lambda T, y, w: (T.nn.functional.leaky_relu(y, 0.2), y.add_(1))[0],
    "hardtanh": lambda T, y, w: (T.nn.functional.hardtanh(y, -0.5, 0.5), y.add_(1))[0],
    "relu6": lambda T, y, w: (T.nn.functional.relu6(y), y.mul_(2))[0],
    # ... and not the result: a write into it is allowed (tidal's hardtanh saved the result)
    "hardtanh_then_write_the_result": lambda T, y, w: T.nn.functional.hardtanh(y, -0.5, 0.5).add_(1),
    "relu6_then_write_the_result": lambda T, y, w: T.nn.functional.relu6(y).mul_(2),
    "hardtanh_inplace_then_write": lambda T, y, w: T.nn.functional.hardtanh_(y, -0.5, 0.5).add_(1),
    "take": lambda T, y, w: (y.take(T.tensor([0, 5])), y.add_(1))[0],
    "gather": lambda T, y, w: (y.gather(1, T.tensor([[0], [2]])), y.add_(1))[0],
    "reflect_pad": lambda T, y, w: (T.nn.functional.pad(y, (1, 2), mode="reflect"), y.add_(1))[0],
    "replicate_pad": lambda T, y, w: (T.nn.functional.pad(y[None], (1, 1, 1, 0), mode="replicate"), y.add_(1))[0],
    "masked_select": lambda T, y, w: (y.masked_select(T.tensor([True, False, True])), y.mul_(2))[0],
    "cummax": lambda T, y, w: (y.cummax(1).values, y.add_(1))[0],
    "cummin": lambda T, y, w: (y.cummin(0).values, y.add_(1))[0],
    "max_pool": lambda T, y, w: (T.nn.functional.max_pool2d(y[None, None], 2), y.add_(1))[0],
    "adaptive_max_pool": lambda T, y, w: (T.nn.functional.adaptive_max_pool2d(y[None, None], 1), y.mul_(2))[0],
    "avg_pool": lambda T, y, w: (T.nn.functional.avg_pool2d(y[None, None], (1, 2)), y.add_(1))[0],
    "adaptive_avg_pool": lambda T, y, w: (T.nn.functional.adaptive_avg_pool2d(y[None], (2, 2)), y.add_(1))[0],
    # ... torch's adaptive average to one element is a mean, which saves nothing: the write is allowed
    "adaptive_avg_pool_to_one": lambda T, y, w: (T.nn.functional.adaptive_avg_pool2d(y[None], 1), y.add_(1))[0],
    # ... where torch saves only the input's shape, the write is allowed
    "index_select": lambda T, y, w: (y.index_select(1, T.tensor([0, 2])), y.add_(1))[0],
    "embedding": lambda T, y, w: (T.nn.functional.embedding(T.tensor([1]), y), y.add_(1))[0],
    # kron's operands are torch's _unsafe_views: a later write into either input is not seen
    "kron_then_write_the_first": lambda T, y, w: (T.kron(y, w), y.add_(1))[0],
    "kron_then_write_the_second": lambda T, y, w: (T.kron(y, w), w.mul_(2))[0],
}


@pytest.mark.parametrize("write", INPUT_WRITES.values(), ids=INPUT_WRITES.keys())
def test_write_into_an_input_after_the_op_as_torch(write):
    def program(T):
        x = T.tensor([[0.3, -0.6, 0.45], [0.8, -0.2, 0.1]], requires_grad=True)
        v = T.tensor([[0.5, 0.7], [-0.2, 0.9]], requires_grad=True)
        z = write(T, x * 1, v * 1)
        z.sum().backward()
        return [z.grad_fn.name(), len(z.grad_fn.next_functions), x.grad.flatten().tolist(),
                [] if v.grad is None else v.grad.flatten().tolist()]
    theirs, ours = both(program)
    assert ours[0] == theirs[0]
    if theirs[0] == "ok":  # (the node's name; its edge count differs where an index input shows as a None edge)
        assert ours[1][0] == theirs[1][0]
        assert ours[1][2] + ours[1][3] == pytest.approx(theirs[1][2] + theirs[1][3], rel=1e-6)
    else:
        assert ours[1] == theirs[1]


def test_leaky_relu_and_hardtanh_nodes_and_gradients():
    """leaky_relu is torch's LeakyReluBackward0 (one edge; NaN and 0 take the negative slope's side, as torch's),
    hardtanh_ in place keeps one edge; first and second gradients against torch."""
    def program(T):
        F = T.nn.functional
        x = T.tensor([1.5, -2.0, 0.0, float("nan"), 0.5, -0.5], dtype=T.float64, requires_grad=True)
        ys = [F.leaky_relu(x * 1, 0.2), F.leaky_relu(x * 1), F.hardtanh_(x * 1, -0.5, 0.5), F.relu6(x * 4, True),
              F.hardtanh(x, -1.0, 1.0)]
        w = x * 1
        F.hardtanh_(w[1:4])
        g, = T.autograd.grad(sum((y * y).sum() for y in ys + [w]), x, create_graph=True)
        gg, = T.autograd.grad(g.sum(), x)
        return [[y.grad_fn.name() for y in ys], [len(y.grad_fn.next_functions) for y in ys], w.grad_fn.name(),
                ys, g, gg, F.leaky_relu(x.detach().half(), 0.1)]
    run_both(program, rtol=1e-10, atol=1e-12)


# -- writes through views ------------------------------------------------------------------------------------------
VIEW_WRITES = {
    "copy_a_constant_into_a_row": lambda T, y: y[1].copy_(T.zeros(3)),
    "copy_a_detached_value_into_a_row": lambda T, y: y[1].copy_(y[1].detach() * 3),
    "copy_into_the_transpose": lambda T, y: y.t().copy_(T.zeros(3, 2)),
    "copy_into_a_column_of_a_tensor_with_views": lambda T, y: (y[0], y[:, 1].copy_(T.ones(2)))[1],
    "copy_into_a_tensor_with_views": lambda T, y: (y[0], y.copy_(T.ones(2, 3, dtype=T.float64)))[1],
    "copy_a_tensor_that_requires_grad_into_a_row": lambda T, y: y[1].copy_(T.ones(3, requires_grad=True) * 2),
    "fill_a_row": lambda T, y: y[1].fill_(2.0),
    "index_fill_through_a_dtype_view": lambda T, y: y.view(y.dtype).index_fill_(0, T.tensor([0]), 2.0),
}


@pytest.mark.parametrize("write", VIEW_WRITES.values(), ids=VIEW_WRITES.keys())
def test_write_through_a_view_as_torch(write):
    """copy_ of a source without a gradient into a view left the overwritten region's gradient flowing to the old
    values (a silent wrong gradient: y[1].copy_(zeros) gave x.grad[1] = 4, 5, 6 where torch gives 0); a dtype view
    was a view for autograd (torch's is not), so index_fill_ through it was refused as a no_grad view."""
    def program(T):
        x = T.tensor([[0.3, -0.6, 0.45], [0.8, -0.2, 0.1]], requires_grad=True)
        y = x * 1
        write(T, y)
        (y * T.arange(1.0, 7.0).reshape(2, 3)).sum().backward()
        return [y, x.grad, y.grad_fn.name(), y._version]
    run_both(program)


def test_dtype_view_is_no_view_for_autograd():
    def program(T):
        x = T.tensor([[0.3, -0.6, 0.45], [0.8, -0.2, 0.1]], requires_grad=True)
        a = T.ones(4)
        v, w, b = (x * 1).view(T.float32), x.detach().view(T.int32), a[1:].view(T.int32)
        b.fill_(0)
        return [v._base is None, v._is_view(), v.requires_grad, w._is_view(), b._base is None, a.tolist(), a._version]
    assert program(tidal_torch) == program(real_torch)


# -- one output of several views, after its base was written -------------------------------------------------------
STALE_PIECES = {
    "split": lambda T, x: (lambda a, b: (x.add_(1), (a * 2).sum())[1])(*x.split(2)),
    "unbind": lambda T, x: (lambda a, b: (x.mul_(2), a.sum())[1])(*x.view(2, 2).unbind(0)),
    "chunk_second": lambda T, x: (lambda a, b: (x.add_(1), (b * b).sum())[1])(*x.chunk(2)),
    "split_with_sizes": lambda T, x: (lambda a, b: (x[1:].mul_(3), (b * 1).sum())[1])(*x.split([1, 3])),
    # used before the write: its graph is the split's, and backward runs
    "split_used_before_the_write": lambda T, x: (lambda a, b: (lambda y: (x.add_(1), y)[1])((a * 2).sum()))(
        *x.split(2)),
}


@pytest.mark.parametrize("program", STALE_PIECES.values(), ids=STALE_PIECES.keys())
def test_split_output_after_a_write_into_its_base_refused_as_torch(program):
    """torch refuses an output of split/unbind/chunk once its base is written in place ('Output 0 of Split is a view
    and its base ... has been modified inplace'); tidal computed a gradient. It now refuses when backward reaches
    the view (torch refuses at the view's next use in grad mode: the same error, a later line)."""
    def run(T):
        w = T.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
        loss = program(T, w * 1)
        loss.backward()
        return [loss.item(), w.grad.tolist()]
    theirs, ours = both(run)
    assert ours == theirs


MASKED_FILL_REFUSALS = {
    "mask_wider": lambda T: T.ones(2).masked_fill_(T.tensor([True, False, True]), 1.0),
    "mask_taller": lambda T: T.ones(2, 3).masked_fill_(T.ones(3, 3).bool(), 1.0),
    "tensor_value": lambda T: T.ones(2).masked_fill_(T.tensor([True, False, True]), T.tensor(1.0)),
    "mask_broadcast_past_self": lambda T: T.ones(1).masked_fill_(T.tensor([True, False, True]), 1.0),
    "leaf_first": lambda T: T.ones(2, requires_grad=True).masked_fill_(T.tensor([True, False, True]), 1.0),
}


@pytest.mark.parametrize("name", sorted(MASKED_FILL_REFUSALS))
def test_masked_fill_inplace_shape_errors_as_torch(name):
    """In place, torch names self first in the broadcast error ('tensor a (2) ... tensor b (3)'); tidal named the
    mask first, as where() does (the out-of-place masked_fill's order, which torch keeps there)."""
    theirs, ours = both(MASKED_FILL_REFUSALS[name])
    assert theirs[0] == "RuntimeError" and ours == theirs


def _gan_step_with_the_discriminator_stepped_first(T):
    """The classic GAN mistake: the generator's loss goes through D, D steps, then the generator's backward."""
    G, D = T.nn.Linear(2, 3), T.nn.Linear(3, 1)
    init(T, G, 1)
    init(T, D, 2)
    opt_d = T.optim.Adam(D.parameters(), 0.01)
    fake = G(T.from_numpy(data((4, 2), 3)))
    loss_g = -D(fake).mean()
    loss_d = D(fake.detach()).mean()
    opt_d.zero_grad()
    loss_d.backward()
    opt_d.step()
    loss_g.backward()


def _weight_view_written_under_no_grad(T):
    w = T.ones(3, 2, requires_grad=True)
    z = w.t() * w.t()
    with T.no_grad():
        w.mul_(2)
    z.sum().backward()


@pytest.mark.parametrize("program", [_gan_step_with_the_discriminator_stepped_first, _weight_view_written_under_no_grad],
                         ids=["gan_step", "no_grad_write"])
def test_modified_saved_view_named_as_torch(program):
    """A saved view (the weight's transpose a linear layer saves) written since: torch names its regenerated node,
    'output 0 of AsStrided'; tidal named the view's own node ('output 0 of T')."""
    theirs, ours = both(program)
    assert theirs[0] == "RuntimeError" and ours == theirs
