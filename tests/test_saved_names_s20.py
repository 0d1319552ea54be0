"""Autograd bookkeeping as torch's (issue 15, session 20): composites hold the inputs torch's node saves (a write into
one before backward is refused with torch's error), `grad_fn._saved_<name>` on the nodes users meet most, and
`next_functions` with torch's edges; each run on real torch and on `tidal.compat`."""
import numpy as np
import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_programs_s11 import outcome
from tidal.autograd.saved_names import SAVED_NAMES

FRAMEWORKS = (real_torch, tidal_torch)


def both(program) -> tuple:
    """program(T)'s outcome on torch and on tidal."""
    return tuple(outcome(lambda: program(T)) for T in FRAMEWORKS)


def same_outcome(theirs: tuple, ours: tuple) -> None:
    """The same error (type and message), or values equal to float32 precision."""
    assert ours[0] == theirs[0], (theirs, ours)
    if theirs[0] == "ok":
        _agree(theirs[1], ours[1])
    else:
        assert ours[1] == theirs[1]


def _agree(theirs, ours) -> None:
    if isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), (theirs, ours)
        for a, b in zip(theirs, ours):
            _agree(a, b)
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=1e-5, abs=1e-6)
    else:
        assert ours == theirs


# -- composites hold the inputs torch's node saves ------------------------------------------------------------------
LOSSES = {
    "mse_loss": lambda F, a, b: F.mse_loss(a, b),
    "mse_loss_none": lambda F, a, b: F.mse_loss(a, b, reduction="none"),
    "mse_loss_sum": lambda F, a, b: F.mse_loss(a, b, reduction="sum"),
    "smooth_l1_loss": lambda F, a, b: F.smooth_l1_loss(a, b, beta=0.5),
    "smooth_l1_loss_none": lambda F, a, b: F.smooth_l1_loss(a, b, reduction="none"),
    "smooth_l1_loss_beta0": lambda F, a, b: F.smooth_l1_loss(a, b, beta=0.0),
    "huber_loss": lambda F, a, b: F.huber_loss(a, b, delta=0.4),
    "huber_loss_none": lambda F, a, b: F.huber_loss(a, b, reduction="none"),
    "l1_loss": lambda F, a, b: F.l1_loss(a, b),
    "cdist": lambda F, a, b: F.torch.cdist(a.reshape(2, 3), b.reshape(2, 3)),
    "cdist_p1": lambda F, a, b: F.torch.cdist(a.reshape(3, 2), b.reshape(3, 2), p=1.0),
    "cdist_mm": lambda F, a, b: F.torch.cdist(a.reshape(2, 3), b.reshape(2, 3), compute_mode="use_mm_for_euclid_dist"),
    "cdist_rows": lambda F, a, b: F.torch.cdist(a.reshape(6, 1).expand(6, 5).reshape(30, 1), b.reshape(6, 1)),
    "dist": lambda F, a, b: F.torch.dist(a, b),
    "dist_p3": lambda F, a, b: F.torch.dist(a, b, 3),
}


def _functional(T):
    F = T.nn.functional
    F.torch = T  # (the table's lambdas reach torch.cdist/dist through it)
    return F


@pytest.mark.parametrize("written", ["input", "target", "neither"])
@pytest.mark.parametrize("loss", LOSSES.values(), ids=LOSSES.keys())
def test_write_into_a_saved_input_after_the_loss(loss, written):
    """torch's node saves both inputs: a write into either before backward is refused (tidal computed it)."""
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45, 0.8, -0.1, 0.2], requires_grad=True)
        t = T.tensor([0.1, 0.2, -0.4, 0.9, 0.5, -0.3], requires_grad=True)
        a, b = x * 1, t * 1
        z = loss(_functional(T), a, b)
        if written != "neither":
            (a if written == "input" else b).add_(1)
        z.sum().backward()
        return [type(z.grad_fn).__name__, x.grad.tolist(), t.grad.tolist()]
    same_outcome(*both(program))


@pytest.mark.parametrize("written", ["input", "weight", "running_mean", "none"])
def test_eval_batch_norm_holds_what_torch_saves(written):
    """torch's eval-mode batch norm (NativeBatchNormBackward0) saves the input, weight and running statistics."""
    def program(T):
        leaf = _inputs(T)
        x, w = leaf(2, 3, 4), leaf(3)
        mean, var = T.zeros(3), T.ones(3)
        y, ww = x * 1, w * 1
        out = T.nn.functional.batch_norm(y, mean, var, ww, None, training=False)
        if written != "none":
            {"input": y, "weight": ww, "running_mean": mean}[written].add_(1)
        (out * out).sum().backward()
        return [type(out.grad_fn).__name__, x.grad.tolist(), w.grad.tolist()]
    same_outcome(*both(program))


@pytest.mark.parametrize("write", [True, False])
def test_instance_norm_holds_its_inputs_view_as_torch(write):
    """torch's instance norm runs batch norm on a (1, N*C, L) view of the input, which its node saves: a write into
    the input is refused, naming that view."""
    def program(T):
        leaf = _inputs(T)
        x, w, g = leaf(2, 3, 4), leaf(3), leaf(2, 3, 4).detach()
        y = x * 1
        out = T.nn.functional.instance_norm(y, weight=w)
        if write:
            y.add_(1)
        (out * g).sum().backward()
        return [type(out.grad_fn).__name__, x.grad.tolist(), w.grad.tolist()]
    same_outcome(*both(program))


def test_instance_norm_with_running_stats_refuses_a_write_into_its_input():
    """(torch names a (1, N*C, L) view of the input, tidal the input: the error, not its message, is compared)"""
    def program(T):
        x = _inputs(T)(2, 3, 4)
        y = x * 1
        out = T.nn.functional.instance_norm(y, T.zeros(3), T.ones(3), use_input_stats=False)
        y.add_(1)
        out.sum().backward()
    theirs, ours = both(program)
    assert ours[0] == theirs[0] == "RuntimeError"
    assert "modified by an inplace operation" in ours[1]


ONE_INPUT = {  # composites whose torch node saves their input (glu: tidal's product saved a half of it)
    "glu": lambda F, y: F.glu(y),
    "pdist": lambda F, y: F.pdist(y.reshape(2, 2)),
    "pdist_p0": lambda F, y: F.pdist(y.reshape(2, 2), 0),
    "grid_sample": lambda F, y: F.grid_sample(y.reshape(1, 1, 2, 2), F.torch.zeros(1, 2, 3, 2) + 0.25,
                                             align_corners=False),
}


@pytest.mark.parametrize("written", [0, 1])
@pytest.mark.parametrize("scale", [None, -0.5])
def test_attention_math_path_allows_writes_into_query_and_key(written, scale):
    """torch's math path (3-d inputs) multiplies scaled copies of query and key: writing into either before
    backward is allowed (tidal saved them and refused)."""
    def program(T):
        leaf = _inputs(T)
        leaves = [leaf(1, 3, 4), leaf(1, 2, 4), leaf(1, 2, 4)]
        q, k, v = (t * 1 for t in leaves)
        out = T.nn.functional.scaled_dot_product_attention(q, k, v, scale=scale)
        (q, k)[written].add_(1)
        (out * out).sum().backward()
        return [out.tolist()] + [t.grad.tolist() for t in leaves]
    same_outcome(*both(program))


@pytest.mark.parametrize("write", [True, False])
@pytest.mark.parametrize("op", ONE_INPUT.values(), ids=ONE_INPUT.keys())
def test_write_into_the_input_of_a_composite_torch_saves(op, write):
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45, 0.8], requires_grad=True)
        y = x * 1
        z = op(_functional(T), y)
        if write:
            y.add_(1)
        (z * z).sum().backward()
        return [type(z.grad_fn).__name__, x.grad.tolist()]
    same_outcome(*both(program))


def test_write_into_a_leaf_target_names_no_node():
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45], requires_grad=True)
        t = T.tensor([0.1, 0.2, -0.4])
        z = T.nn.functional.mse_loss(x * 2, t)
        t.mul_(2)
        z.backward()
    same_outcome(*both(program))


def test_write_through_a_view_of_a_held_input():
    def program(T):
        x = T.tensor([[0.3, -0.6], [0.45, 0.8]], requires_grad=True)
        y = x * 1
        z = T.nn.functional.smooth_l1_loss(y, T.zeros(2, 2))
        y[0].zero_()
        z.backward()
    same_outcome(*both(program))


def test_inference_target_refused_as_torch():
    def program(T):
        with T.inference_mode():
            t = T.ones(3)
        return T.nn.functional.mse_loss(T.zeros(3, requires_grad=True), t).item()
    same_outcome(*both(program))


def test_held_inputs_freed_after_backward():
    """torch frees the node's saved inputs with the rest: a second backward and a later `_saved_self` fail so."""
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45], requires_grad=True)
        z = T.nn.functional.huber_loss(x * 1, T.zeros(3))
        z.backward()
        z.grad_fn._saved_self
    def twice(T):
        x = T.tensor([0.3, -0.6, 0.45], requires_grad=True)
        z = T.cdist(x.reshape(3, 1) * 1, T.ones(2, 1))
        z.sum().backward()
        z.sum().backward()
    same_outcome(*both(program))
    same_outcome(*both(twice))


def test_training_loop_then_a_write_is_refused():
    """Steps repeated enough for the backward replay to take over; then a write into the prediction is refused."""
    def program(T):
        T.manual_seed(0)
        lin = T.nn.Linear(3, 2)
        with T.no_grad():
            lin.weight.copy_(T.tensor([[0.1, -0.2, 0.3], [0.4, 0.5, -0.6]]))
            lin.bias.copy_(T.tensor([0.05, -0.05]))
        opt = T.optim.SGD(lin.parameters(), lr=0.1)
        x, y = T.tensor([[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]]), T.tensor([[0.5, -0.5], [1.0, 0.0]])
        losses = []
        for step in range(12):
            opt.zero_grad()
            pred = lin(x)
            loss = T.nn.functional.mse_loss(pred, y)
            if step == 11:
                pred.mul_(2)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses
    theirs, ours = both(program)
    assert theirs[0] == "RuntimeError"
    same_outcome(theirs, ours)


def test_double_backward_through_a_holding_node():
    def program(T):
        x = T.tensor([0.3, -0.6, 0.45], requires_grad=True)
        t = T.tensor([0.1, 0.2, -0.4], requires_grad=True)
        z = T.nn.functional.mse_loss(x * x, t)
        gx, gt = T.autograd.grad(z, (x, t), create_graph=True)
        (gx.sum() + (gt * gt).sum()).backward()
        return [gx.tolist(), gt.tolist(), x.grad.tolist(), t.grad.tolist()]
    same_outcome(*both(program))


# -- grad_fn._saved_<name> as torch's -------------------------------------------------------------------------------
def _inputs(T):
    """The same float32 data on both frameworks (requires_grad leaves)."""
    rng = np.random.default_rng(7)
    def leaf(*shape):
        return T.tensor(rng.uniform(-1, 1, shape).astype(np.float32), requires_grad=True)
    return leaf


SAVED_CASES = {
    # name: (program(T, leaf) -> output, torch's names tidal does not give (see saved_names.py's docstring))
    "mm": (lambda T, leaf: leaf(2, 3) @ leaf(3, 4), ()),
    "mm_half_grad": (lambda T, leaf: T.mm(leaf(2, 3), leaf(3, 4).detach()), ()),
    "mm_first_without_grad": (lambda T, leaf: T.mm(leaf(2, 3).detach(), leaf(3, 4)), ()),
    "linear": (lambda T, leaf: T.nn.functional.linear(leaf(2, 3), leaf(4, 3)), ()),
    "bmm": (lambda T, leaf: T.bmm(leaf(2, 3, 4), leaf(2, 4, 5)), ()),
    "addmm": (lambda T, leaf: T.addmm(leaf(4), leaf(2, 3), leaf(3, 4), beta=0.5, alpha=2), ()),
    "sum": (lambda T, leaf: leaf(2, 3, 4).sum(), ()),
    "sum_dims": (lambda T, leaf: leaf(2, 3, 4).sum((0, 2), keepdim=True), ()),
    "mean": (lambda T, leaf: leaf(2, 3, 4).mean(), ()),
    "mean_dim": (lambda T, leaf: leaf(2, 3, 4).mean(1), ()),
    "max": (lambda T, leaf: leaf(2, 3).max(), ()),
    "var": (lambda T, leaf: leaf(2, 3).var(1, correction=0), ()),
    "std": (lambda T, leaf: leaf(2, 3).std(0, keepdim=True), ()),
    "vector_norm": (lambda T, leaf: T.linalg.vector_norm(leaf(2, 3), 3, dim=1), ("dim",)),
    "view": (lambda T, leaf: leaf(2, 3, 4).view(6, 4), ()),
    "reshape": (lambda T, leaf: leaf(2, 3, 4).reshape(4, 6), ()),
    "flatten": (lambda T, leaf: leaf(2, 3, 4).flatten(1), ()),
    "expand": (lambda T, leaf: leaf(1, 3).expand(4, 3), ()),
    "squeeze": (lambda T, leaf: leaf(2, 1, 3).squeeze(1), ("dim",)),
    "permute": (lambda T, leaf: leaf(2, 3, 4).permute(2, 0, 1), ()),
    "transpose": (lambda T, leaf: leaf(2, 3, 4).transpose(0, 2), ()),
    "index": (lambda T, leaf: leaf(3, 4)[T.tensor([2, 0])], ()),
    "index_second_dim": (lambda T, leaf: leaf(3, 4)[:, T.tensor([1, 3, 1])], ()),
    "gather": (lambda T, leaf: leaf(2, 3).gather(1, T.tensor([[0], [2]])), ()),
    "index_select": (lambda T, leaf: leaf(3, 2).index_select(0, T.tensor([2, 1])), ()),
    "embedding": (lambda T, leaf: T.nn.functional.embedding(T.tensor([1, 0]), leaf(3, 2), padding_idx=2), ()),
    "embedding_negative_padding": (lambda T, leaf: T.nn.functional.embedding(T.tensor([1]), leaf(3, 2),
                                                                             padding_idx=-1), ()),
    "masked_fill": (lambda T, leaf: leaf(2, 3).masked_fill(T.tensor([[True, False, True]]), 0.5), ()),
    "cat": (lambda T, leaf: T.cat([leaf(2, 3), leaf(1, 3)]), ()),
    "stack": (lambda T, leaf: T.stack([leaf(2, 3), leaf(2, 3)], 1), ()),
    "softmax": (lambda T, leaf: leaf(2, 3).softmax(1), ()),
    "softmax_last_dim": (lambda T, leaf: T.nn.functional.softmax(leaf(2, 3), dim=-1), ()),
    "log_softmax_negative_dim": (lambda T, leaf: leaf(2, 3, 4).log_softmax(-2), ()),
    "log_softmax": (lambda T, leaf: T.nn.functional.log_softmax(leaf(2, 3, 4), 0), ()),
    "mse_loss": (lambda T, leaf: T.nn.functional.mse_loss(leaf(2, 3), leaf(2, 3)), ("reduction",)),
    "mse_loss_none": (lambda T, leaf: T.nn.functional.mse_loss(leaf(2, 3), leaf(2, 3), reduction="none"),
                      ("reduction",)),
    # composites named after torch's node keep other values: their names are not given rather than wrong
    "linear_bias": (lambda T, leaf: T.nn.functional.linear(leaf(2, 3), leaf(4, 3), leaf(4)),
                    ("alpha", "beta", "mat1", "mat1_sym_sizes", "mat1_sym_strides", "mat2", "mat2_sym_sizes",
                     "mat2_sym_strides")),
    "instance_norm": (lambda T, leaf: T.nn.functional.instance_norm(leaf(1, 2, 3)), ("self_sym_sizes",)),
    "huber_loss": (lambda T, leaf: T.nn.functional.huber_loss(leaf(2, 3), leaf(2, 3)), ("reduction", "delta")),
    "smooth_l1_loss": (lambda T, leaf: T.nn.functional.smooth_l1_loss(leaf(4), leaf(4), reduction="sum"),
                       ("reduction", "beta")),
    "cdist": (lambda T, leaf: T.cdist(leaf(2, 3), leaf(4, 3)), ("p", "result")),
    "dist": (lambda T, leaf: T.dist(leaf(3), leaf(3)), ("p", "result")),
    "nll_loss": (lambda T, leaf: T.nn.functional.nll_loss(leaf(2, 3), T.tensor([0, 2]), ignore_index=-100),
                 ("self", "weight")),
    "nll_loss_sum": (lambda T, leaf: T.nn.functional.nll_loss(leaf(2, 3), T.tensor([0, 2]), reduction="sum",
                                                              ignore_index=1), ("self", "weight")),
    "conv2d": (lambda T, leaf: T.nn.functional.conv2d(leaf(1, 2, 5, 5), leaf(4, 1, 3, 3), stride=2, padding=1,
                                                      groups=2), ("bias_sym_sizes_opt",)),
    "conv1d": (lambda T, leaf: T.nn.functional.conv1d(leaf(1, 2, 6), leaf(3, 2, 2), dilation=2),
               ("bias_sym_sizes_opt",)),
    "layer_norm": (lambda T, leaf: T.nn.functional.layer_norm(leaf(2, 3, 4), (4,), leaf(4), leaf(4)),
                   ("normalized_shape", "bias")),
    "batch_norm": (lambda T, leaf: T.nn.functional.batch_norm(leaf(2, 3, 4), None, None, leaf(3), leaf(3),
                                                              training=True), ("running_mean", "running_var",
                                                                               "training")),
    "cumsum": (lambda T, leaf: leaf(2, 3, 4).cumsum(1), ()),
    "cumprod": (lambda T, leaf: leaf(2, 3, 4).cumprod(2), ()),
    "prod": (lambda T, leaf: leaf(2, 3).prod(), ()),
    "prod_dim": (lambda T, leaf: leaf(2, 3).prod(1, keepdim=True), ()),
    "amax": (lambda T, leaf: leaf(2, 3, 4).amax((0, 2)), ()),
    "amin": (lambda T, leaf: leaf(2, 3, 4).amin(1, keepdim=True), ()),
    "logsumexp": (lambda T, leaf: leaf(2, 3, 4).logsumexp(1), ()),
    "max_dim": (lambda T, leaf: leaf(2, 3, 4).max(1)[0], ()),
    "min_dim": (lambda T, leaf: leaf(2, 3, 4).min(2, keepdim=True)[0], ()),
    "median_dim": (lambda T, leaf: leaf(2, 3, 4).median(1)[0], ()),
    "kthvalue": (lambda T, leaf: leaf(2, 3, 4).kthvalue(2, 1)[0], ()),
    "sort": (lambda T, leaf: leaf(2, 3, 4).sort(1)[0], ()),
    "split": (lambda T, leaf: leaf(2, 3, 5).split(2, 2)[2], ()),
    "chunk": (lambda T, leaf: leaf(2, 3, 4).chunk(3, 1)[1], ()),
    "unbind": (lambda T, leaf: leaf(2, 3, 4).unbind(1)[0], ()),
    "flip": (lambda T, leaf: leaf(2, 3, 4).flip(1, 2), ()),
    "roll": (lambda T, leaf: leaf(2, 3, 4).roll((1, 2), (2, 0)), ()),
    "tril": (lambda T, leaf: leaf(3, 4).tril(), ()),
    "triu": (lambda T, leaf: leaf(3, 4).triu(1), ()),
    "dot": (lambda T, leaf: T.dot(leaf(4), leaf(4)), ()),
    "mv": (lambda T, leaf: T.mv(leaf(3, 4), leaf(4)), ()),
    "baddbmm": (lambda T, leaf: T.baddbmm(leaf(2, 3, 3), leaf(2, 3, 4), leaf(2, 4, 3), alpha=0.5), ()),
    "avg_pool2d": (lambda T, leaf: T.nn.functional.avg_pool2d(leaf(1, 2, 4, 4), 2, stride=1, padding=1),
                   ("ceil_mode", "count_include_pad", "divisor_override", "stride")),
    "max_pool2d": (lambda T, leaf: T.nn.functional.max_pool2d(leaf(1, 2, 5, 5), 3, stride=2, padding=1),
                   ("ceil_mode", "stride")),
    "leaky_relu": (lambda T, leaf: T.nn.functional.leaky_relu(leaf(2, 3), 0.2), ()),
    "elu": (lambda T, leaf: T.nn.functional.elu(leaf(2, 3), 0.5), ()),
    "selu": (lambda T, leaf: T.nn.functional.selu(leaf(2, 3)), ()),
    "softplus": (lambda T, leaf: T.nn.functional.softplus(leaf(2, 3), beta=2), ()),
    "hardtanh": (lambda T, leaf: T.nn.functional.hardtanh(leaf(2, 3), -0.5, 0.5), ()),
    "relu": (lambda T, leaf: T.relu(leaf(2, 3)), ()),
    "pow_number": (lambda T, leaf: leaf(3) ** 2.5, ()),
    "pow_tensor": (lambda T, leaf: leaf(3).abs() ** leaf(3), ()),
    "clamp": (lambda T, leaf: leaf(3).clamp(-0.2, 0.5), ()),
    "clamp_min": (lambda T, leaf: leaf(3).clamp_min(0.1), ()),
    "clamp_max": (lambda T, leaf: leaf(3).clamp_max(0.1), ()),
    "lerp": (lambda T, leaf: T.lerp(leaf(3), leaf(3), 0.3), ()),
    "polygamma": (lambda T, leaf: T.polygamma(1, leaf(3).abs() + 0.5), ()),
    "gelu_tanh": (lambda T, leaf: T.nn.functional.gelu(leaf(3), approximate="tanh"), ()),
    "gelu": (lambda T, leaf: T.nn.functional.gelu(leaf(3)), ()),
    "silu": (lambda T, leaf: T.nn.functional.silu(leaf(3)), ()),
    "mish": (lambda T, leaf: T.nn.functional.mish(leaf(3)), ()),
    "fmod": (lambda T, leaf: T.fmod(leaf(3), 0.3), ()),
    "celu": (lambda T, leaf: T.nn.functional.celu(leaf(3), 0.5), ()),
    "softshrink": (lambda T, leaf: T.nn.functional.softshrink(leaf(3), 0.3), ()),
    "sigmoid": (lambda T, leaf: leaf(3).sigmoid(), ()),
    "div": (lambda T, leaf: leaf(3) / leaf(3), ()),
    "atan2": (lambda T, leaf: T.atan2(leaf(3), leaf(3)), ()),
    "add_alpha": (lambda T, leaf: T.add(leaf(3), leaf(3), alpha=2), ("alpha",)),
    "addcmul": (lambda T, leaf: T.addcmul(leaf(3), leaf(3), leaf(3), value=0.5), ("tensor1", "tensor2", "value")),
    "logit": (lambda T, leaf: (leaf(3).abs() * 0.5 + 0.2).logit(1e-3), ("eps",)),
    "threshold": (lambda T, leaf: T.nn.functional.threshold(leaf(3), 0.1, 0.0), ("self", "threshold")),
    "hardswish": (lambda T, leaf: T.nn.functional.hardswish(leaf(3)), ("self",)),
    "mul": (lambda T, leaf: leaf(2, 3) * leaf(3), ()),
}


def _plain(value):
    if hasattr(value, "shape"):
        return ("tensor", tuple(value.shape), str(value.dtype).split(".")[-1],
                np.asarray(value.detach().double().tolist()))
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_plain(v) for v in value)
    return (type(value).__name__, value)


def _same(theirs, ours) -> None:
    assert len(theirs) == len(ours) and theirs[0] == ours[0], (theirs, ours)
    if theirs[0] == "tensor":
        assert theirs[1:3] == ours[1:3]
        np.testing.assert_allclose(ours[3], theirs[3], rtol=1e-5, atol=1e-6)
    elif theirs[0] in ("tuple", "list"):
        for a, b in zip(theirs[1:], ours[1:]):
            _same(a, b)
    elif theirs[0] == "float":  # (selu's alpha: tidal keeps alpha * scale in float32)
        assert ours == (theirs[0], pytest.approx(theirs[1], rel=1e-6))
    else:
        assert ours == theirs


@pytest.mark.parametrize("case", SAVED_CASES, ids=SAVED_CASES)
def test_saved_names_as_torch(case):
    """Every `_saved_<name>` torch's node has reads back the same value on tidal's (type, shape, values), except the
    few names listed; the node's class name is torch's."""
    program, not_given = SAVED_CASES[case]
    theirs_out, ours_out = (program(T, _inputs(T)) for T in FRAMEWORKS)
    theirs, ours = theirs_out.grad_fn, ours_out.grad_fn
    assert type(ours).__name__ == type(theirs).__name__
    names = sorted(n[len("_saved_"):] for n in dir(theirs) if n.startswith("_saved_"))
    missing = []
    for name in names:
        try:
            value = getattr(ours, "_saved_" + name)
        except AttributeError:
            missing.append(name)
            continue
        _same(_plain(getattr(theirs, "_saved_" + name)), _plain(value))
    assert sorted(missing) == sorted(not_given)
    extra = [n for n in SAVED_NAMES if n not in names and hasattr(ours, "_saved_" + n)]
    assert not extra, f"tidal's {type(ours).__name__} gives names torch's has not: {extra}"


def test_saved_names_absent_from_torch_node_raise():
    x = tidal_torch.ones(2, 3, requires_grad=True)
    node = x.sum(1).grad_fn
    with pytest.raises(AttributeError, match="'SumBackward1' object has no attribute '_saved_mat2'"):
        node._saved_mat2


def test_saved_names_after_backward_as_torch():
    """Saved tensors are freed by backward (torch's error on reading them); saved numbers stay readable."""
    def program(T):
        w = T.ones(3, 2, requires_grad=True)
        y = T.ones(4, 3) @ w
        y.sum().backward()
        return [y.grad_fn._saved_self_sym_sizes, y.grad_fn._saved_self.shape]
    same_outcome(*both(program))


# -- next_functions as torch's: no edge for an index or mask input ---------------------------------------------------
def _index(T):
    return T.tensor([1, 0])


EDGE_CASES = {
    "embedding": lambda T, leaf: T.nn.functional.embedding(_index(T), leaf(3, 2)),
    "embedding_sparse": lambda T, leaf: T.nn.functional.embedding(_index(T), leaf(3, 2), sparse=True),
    "masked_fill": lambda T, leaf: leaf(2, 3).masked_fill(T.tensor([True, False, True]), 0.0),
    "masked_fill_tensor": lambda T, leaf: leaf(2, 3).masked_fill(T.tensor([True, False, True]), T.tensor(1.0)),
    "masked_fill_tensor_grad": lambda T, leaf: leaf(2, 3).masked_fill(T.tensor([True, False, True]), leaf(())),
    "masked_select": lambda T, leaf: leaf(2, 3).masked_select(T.tensor([True, False, True])),
    "where": lambda T, leaf: T.where(T.tensor([True, False]), leaf(2), T.zeros(2)),
    "cat_constant": lambda T, leaf: T.cat([leaf(2), T.zeros(2), leaf(1)]),
    "conv_no_bias": lambda T, leaf: T.nn.functional.conv1d(leaf(1, 1, 4), leaf(1, 1, 2)),
    "pad_constant": lambda T, leaf: T.nn.functional.pad(leaf(1, 3), (1, 2), value=0.5),
    "pad_and_crop": lambda T, leaf: T.nn.functional.pad(leaf(2, 4), (-1, 2, 1, 0)),
    "pad_nothing": lambda T, leaf: T.nn.functional.pad(leaf(2, 4), (0, 0)),
    "gather": lambda T, leaf: leaf(2, 3).gather(1, T.tensor([[0], [1]])),
    "index_select": lambda T, leaf: leaf(3, 2).index_select(0, _index(T)),
    "getitem": lambda T, leaf: leaf(3, 2)[_index(T)],
    "getitem_mask": lambda T, leaf: leaf(3, 2)[T.tensor([True, False, True])],
    "nll_loss": lambda T, leaf: T.nn.functional.nll_loss(leaf(2, 3), _index(T)),
    "cross_entropy": lambda T, leaf: T.nn.functional.cross_entropy(leaf(2, 3), _index(T)),
    "repeat_interleave": lambda T, leaf: leaf(3).repeat_interleave(T.tensor([1, 2, 1])),
    "index_fill": lambda T, leaf: leaf(3, 2).index_fill(0, _index(T), 1.0),
    "scatter_value": lambda T, leaf: leaf(2, 3).scatter(1, T.tensor([[0], [1]]), 2.0),
    "index_put": lambda T, leaf: leaf(3, 2).index_put((_index(T),), leaf(2, 2)),
    "take": lambda T, leaf: leaf(2, 3).take(T.tensor([0, 5, 0])),
    "interpolate_nearest": lambda T, leaf: T.nn.functional.interpolate(leaf(1, 2, 3), scale_factor=2),
}


def _collected_leaves(T) -> tuple:
    """(the leaves made so far, a maker of leaves of a shape that keeps each)."""
    leaves, make_leaf = [], _inputs(T)

    def leaf(*shape):
        leaves.append(make_leaf(*shape))
        return leaves[-1]
    return leaves, leaf


def _edges(node) -> list:
    return [(None if n is None else type(n).__name__.replace("torch::autograd::", ""), k)
            for n, k in node.next_functions]


@pytest.mark.parametrize("make", EDGE_CASES.values(), ids=EDGE_CASES.keys())
def test_next_functions_as_torch(make):
    """Node names and output numbers of every edge, in torch's order; the gradients flowing through agree."""
    def program(T):
        leaves, leaf = _collected_leaves(T)
        out = make(T, leaf)
        edges = _edges(out.grad_fn)
        out.sum().backward()
        return [type(out.grad_fn).__name__, edges, [t.grad.to_dense().tolist() for t in leaves]]
    same_outcome(*both(program))


# -- arguments torch has no derivative for: refused at the call when they require grad -----------------------------
NOT_DIFFERENTIABLE = {
    "soft_margin_target": lambda F, L: F.soft_margin_loss(L(4), L(4)),
    "bce_weight": lambda F, L: F.binary_cross_entropy(L(4), L(4).detach(), weight=L(4)),
    "bce_logits_pos_weight": lambda F, L: F.binary_cross_entropy_with_logits(L(4), L(4).detach(), pos_weight=L(4)),
    "multi_margin_weight": lambda F, L: F.multi_margin_loss(L(2, 3), F.torch.tensor([0, 2]), weight=L(3)),
    "nll_weight": lambda F, L: F.nll_loss(L(2, 3), F.torch.tensor([0, 2]), weight=L(3)),
    "nll_weight_spatial": lambda F, L: F.nll_loss(L(2, 3, 2), F.torch.tensor([[0, 2], [1, 1]]), weight=L(3)),
    "cross_entropy_weight": lambda F, L: F.cross_entropy(L(2, 3), F.torch.tensor([0, 2]), weight=L(3),
                                                         label_smoothing=0.1),
    "cross_entropy_probabilities_weight": lambda F, L: F.cross_entropy(L(2, 3), L(2, 3).detach(), weight=L(3)),
    "kl_div_target": lambda F, L: F.kl_div(L(4), L(4), reduction="batchmean"),
}


@pytest.mark.parametrize("grad_mode", [True, False])
@pytest.mark.parametrize("loss", NOT_DIFFERENTIABLE.values(), ids=NOT_DIFFERENTIABLE.keys())
def test_not_differentiable_arguments_as_torch(loss, grad_mode):
    def program(T):
        leaf = _inputs(T)
        def positive(*shape):
            return (leaf(*shape).detach().abs() * 0.8 + 0.1).requires_grad_(True)
        with T.set_grad_enabled(grad_mode):
            return loss(_functional(T), positive).tolist()
    same_outcome(*both(program))


# out-of-place index ops with a source: one node edged to the input itself (tidal's clone is left out of the graph);
# the index's (None, 0) edge between input and source is left (its formulas return a gradient per input place)
SOURCE_EDGE_CASES = {
    "scatter": lambda T, leaf: leaf(2, 3).scatter(1, T.tensor([[0], [1]]), leaf(2, 1)),
    "scatter_add": lambda T, leaf: leaf(2, 3).scatter_add(1, T.tensor([[0], [1]]), leaf(2, 1)),
    "scatter_reduce": lambda T, leaf: leaf(2, 3).scatter_reduce(1, T.tensor([[0], [1]]), leaf(2, 1), "amax"),
    "index_add": lambda T, leaf: leaf(3, 2).index_add(0, _index(T), leaf(2, 2), alpha=2),
    "index_copy": lambda T, leaf: leaf(3, 2).index_copy(0, _index(T), leaf(2, 2)),
    "put": lambda T, leaf: leaf(2, 3).put(T.tensor([0, 5]), leaf(2)),
    "masked_scatter": lambda T, leaf: leaf(2, 3).masked_scatter(T.tensor([True, False, True]), leaf(6)),
}


@pytest.mark.parametrize("make", SOURCE_EDGE_CASES.values(), ids=SOURCE_EDGE_CASES.keys())
def test_out_of_place_index_ops_edge_to_their_input(make):
    def program(T):
        leaves, leaf = _collected_leaves(T)
        out = make(T, leaf)
        edges = _edges(out.grad_fn)
        (out * out).sum().backward()
        return [type(out.grad_fn).__name__, edges[0], edges[-1], [t.grad.tolist() for t in leaves]]
    same_outcome(*both(program))


def test_constant_pad_double_backward():
    """ConstantPadNdBackward0's gradient is the gradient padded back (cropped): differentiable again."""
    def program(T):
        x = _inputs(T)(2, 3, 4)
        w = _inputs(T)(2, 5, 3).detach()
        y = T.nn.functional.pad(x, (-1, 0, 1, 1), value=2.0)
        (g,) = T.autograd.grad((y * y * w).sum(), x, create_graph=True)
        (g * g).sum().backward()
        return [type(g.grad_fn).__name__, g.tolist(), x.grad.tolist()]
    same_outcome(*both(program))
