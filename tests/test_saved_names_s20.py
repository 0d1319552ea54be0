"""Autograd bookkeeping as torch's (issue 15, session 20): composites hold the inputs torch's node saves (a write into
one before backward is refused with torch's error), `grad_fn._saved_<name>` on the nodes users meet most, and
`next_functions` with torch's edges; each run on real torch and on `tidal.compat`."""
import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_programs_s11 import outcome

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
