"""L-BFGS: quasi-Newton steps from a limited history of updates, with an optional strong-Wolfe line search.

The algorithm decides what to do from scalars (losses, directional derivatives), so unlike
the other optimizers its step reads values back from the device. torch keeps those scalars as 0-d
tensors of the parameters' dtype: each is read back as a NumPy scalar of that dtype, whose arithmetic
with Python numbers rounds as torch's does (float32 steps, not double), so the iterates stay torch's.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from ..ops.elementwise import arithmetic as M
from ..ops.movement import shape_ops
from ..ops.factories.creation import scalar_tensor
from ..ops.complex_numbers.tensors import view_as_real
from ..tensor import Tensor
from ..tensor import dtype as dt
from .optimizer import Optimizer
from .hyperparams import check_lr

__all__ = ["LBFGS"]


def _host(value):
    """A 0-d tensor as a NumPy scalar of its dtype (16-bit floats in float32); numbers unchanged."""
    if not isinstance(value, Tensor):
        return value
    kind = value.dtype.np if value.dtype in (dt.float32, dt.float64) else np.dtype(np.float32)
    return kind.type(value.item())


def _axpy(x: Tensor, alpha, y: Tensor) -> None:
    """x += alpha * y in place, rounded once as torch's add_ with alpha (a fused multiply-add) for float32: the
    product and sum in float64 (exact product; the sum's double rounding differs from one rounding about once in
    2**29). Other dtypes: add_ itself (float64 keeps an ulp of difference from torch's fused one)."""
    if x.dtype is dt.float32:
        a = float(np.float32(alpha))  # (torch casts alpha to the float32 kernel's type)
        x.copy_(M.add(x.double(), y.double(), alpha=a).float())
    else:
        x.add_(y, alpha=float(alpha))


def _loss_value(loss) -> float:
    """The closure's loss as a Python float, read without float()'s requires-grad warning (torch reads it
    under no_grad, where the warning is off)."""
    return float(loss.detach()) if isinstance(loss, Tensor) else float(loss)


def _kept(value, like: Tensor):
    """A NumPy scalar as the 0-d tensor torch keeps in the optimizer's state; numbers unchanged."""
    return scalar_tensor(value.item(), dtype=like.dtype) if isinstance(value, np.generic) else value


def _cubic_interpolate(x1: float, f1: float, g1: float, x2: float, f2: float, g2: float,
                       bounds: tuple | None = None) -> float:
    """The minimizer of the cubic through (x1, f1, g1) and (x2, f2, g2), clipped to `bounds`."""
    lo, hi = bounds if bounds is not None else (min(x1, x2), max(x1, x2))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if d2_square < 0:
        return (lo + hi) / 2.0
    d2 = np.sqrt(d2_square)
    if x1 <= x2:
        min_pos = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
    else:
        min_pos = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
    return min(max(min_pos, lo), hi)


def _strong_wolfe(evaluate: Callable, t: float, d: Tensor, f: float, g: Tensor, gtd: float, c1: float = 1e-4,
                  c2: float = 0.9, tolerance_change: float = 1e-9, max_ls: int = 25) -> tuple:
    """Search along `d` for a step `t` meeting the strong Wolfe conditions.

    A point is [t, loss, flat gradient, directional derivative]; `evaluate(t)` returns (loss, gradient).
    Returns (loss, gradient, t, number of evaluations)."""
    d_norm = _host(d.abs().max())

    def probe(step: float) -> list:
        loss, grad = evaluate(step)
        return [step, loss, grad, _host(grad.dot(d))]

    def sufficient_decrease(point: list) -> bool:
        return point[1] <= f + c1 * point[0] * gtd

    g = g.clone()
    prev, new = [0, f, g, gtd], probe(t)
    evals, ls_iter, done, bracket = 1, 0, False, None
    while ls_iter < max_ls:  # grow the step until an interval holds a good point
        if not sufficient_decrease(new) or (ls_iter > 1 and new[1] >= prev[1]):
            bracket = [prev, new]
            break
        if abs(new[3]) <= -c2 * gtd:
            bracket, done = [new], True
            break
        if new[3] >= 0:
            bracket = [prev, new]
            break
        lo, hi = new[0] + 0.01 * (new[0] - prev[0]), new[0] * 10
        step = _cubic_interpolate(prev[0], prev[1], prev[3], new[0], new[1], new[3], bounds=(lo, hi))
        prev, new = new, probe(step)
        evals += 1
        ls_iter += 1
    if ls_iter == max_ls:
        bracket = [[0, f, g, None], new]

    insufficient_progress = False
    low, high = (0, 1) if bracket[0][1] <= bracket[-1][1] else (1, 0)
    while not done and ls_iter < max_ls:  # zoom into the interval
        (t0, f0, _, g0), (t1, f1, _, g1) = bracket
        if abs(t1 - t0) * d_norm < tolerance_change:
            break
        step = _cubic_interpolate(t0, f0, g0, t1, f1, g1)
        top, bottom = max(t0, t1), min(t0, t1)
        margin = 0.1 * (top - bottom)
        if min(top - step, step - bottom) < margin:  # too close to an end: move inside, or note it
            if insufficient_progress or step >= top or step <= bottom:
                step = top - margin if abs(step - top) < abs(step - bottom) else bottom + margin
                insufficient_progress = False
            else:
                insufficient_progress = True
        else:
            insufficient_progress = False
        new = probe(step)
        evals += 1
        ls_iter += 1
        if not sufficient_decrease(new) or new[1] >= bracket[low][1]:
            bracket[high] = new
            low, high = (0, 1) if bracket[0][1] <= bracket[1][1] else (1, 0)
        else:
            if abs(new[3]) <= -c2 * gtd:
                done = True
            elif new[3] * (bracket[high][0] - bracket[low][0]) >= 0:
                bracket[high] = bracket[low]
            bracket[low] = new
    t, loss, grad, _ = bracket[low]
    return loss, grad, t, evals


class LBFGS(Optimizer):
    """L-BFGS, as torch.optim.LBFGS (one parameter group; `step` needs a closure)."""

    def __init__(self, params, lr: float = 1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9, history_size: int = 100,
                 line_search_fn: str | None = None) -> None:
        check_lr(lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval, tolerance_grad=tolerance_grad,
                        tolerance_change=tolerance_change, history_size=history_size, line_search_fn=line_search_fn)
        super().__init__(params, defaults)
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")
        self._params = self.param_groups[0]["params"]

    def _gather_flat_grad(self) -> Tensor:
        views = []
        for p in self._params:
            view = p.new_zeros(p.numel()) if p.grad is None else p.grad.reshape(-1)
            # a complex gradient enters as its real parts, as PyTorch's (the search runs in real space)
            views.append(view_as_real(view).reshape(-1) if view.dtype.is_complex else view)
        return shape_ops.cat(views, 0)

    def _add_grad(self, step_size: float, update: Tensor) -> None:
        offset = 0
        for p in self._params:
            if p.dtype.is_complex:
                p = view_as_real(p)
            n = p.numel()
            _axpy(p, step_size, update[offset:offset + n].view_as(p))
            offset += n

    def _directional_evaluate(self, closure: Callable, x: list, t: float, d: Tensor) -> tuple:
        self._add_grad(t, d)
        loss = _loss_value(self._evaluate(closure))
        flat_grad = self._gather_flat_grad()
        for p, saved in zip(self._params, x):
            p.copy_(saved)
        return loss, flat_grad

    def _direction(self, state: dict, flat_grad: Tensor, history_size: int) -> Tensor:
        """Update the curvature history with the last step, then apply the inverse-Hessian
        estimate to the negative gradient (the two-loop recursion)."""
        y = flat_grad.sub(state["prev_flat_grad"])
        s = state["d"].mul(state["t"])
        ys = _host(y.dot(s))
        dirs, steps, ro = state["old_dirs"], state["old_stps"], state["ro"]
        if ys > 1e-10:  # keep only pairs with positive curvature
            if len(dirs) == history_size:
                del dirs[0], steps[0], ro[0]
            dirs.append(y)
            steps.append(s)
            ro.append(_kept(1.0 / ys, y))
            state["H_diag"] = _kept(ys / _host(y.dot(y)), y)
        al = state.setdefault("al", [None] * history_size)
        q = flat_grad.neg()
        for i in reversed(range(len(dirs))):
            al[i] = _kept(_host(steps[i].dot(q)) * _host(ro[i]), q)
            _axpy(q, -_host(al[i]), dirs[i])
        r = M.mul(q, state["H_diag"])
        for i in range(len(dirs)):
            be_i = _host(dirs[i].dot(r)) * _host(ro[i])
            _axpy(r, _host(al[i]) - be_i, steps[i])
        return r

    def step(self, closure: Callable):
        """Run up to `max_iter` L-BFGS iterations; `closure` re-evaluates the loss and returns it."""
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        line_search_fn = group["line_search_fn"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = self._evaluate(closure)
        loss = _loss_value(orig_loss)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if _host(flat_grad.abs().max()) <= tolerance_grad:
            return orig_loss

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                state.update(d=flat_grad.neg(), old_dirs=[], old_stps=[], ro=[], H_diag=1)
            else:
                state["d"] = self._direction(state, flat_grad, group["history_size"])
            d = state["d"]
            if state.get("prev_flat_grad") is None:
                state["prev_flat_grad"] = flat_grad.clone()
            else:
                state["prev_flat_grad"].copy_(flat_grad)
            state["prev_loss"] = prev_loss = loss
            t = min(1.0, 1.0 / _host(flat_grad.abs().sum())) * lr if state["n_iter"] == 1 else lr
            gtd = _host(flat_grad.dot(d))
            if gtd > -tolerance_change:  # not a descent direction
                state["t"] = _kept(t, d)
                break

            evals = 0
            if line_search_fn is not None:
                if line_search_fn != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                start = [p.clone() for p in self._params]
                loss, flat_grad, t, evals = _strong_wolfe(
                    lambda step: self._directional_evaluate(closure, start, step, d), t, d, loss, flat_grad, gtd,
                    max_ls=max_eval - current_evals)
                self._add_grad(t, d)
                opt_cond = _host(flat_grad.abs().max()) <= tolerance_grad
            else:
                self._add_grad(t, d)
                if n_iter != max_iter:  # the last iteration's loss is left for the next step to compute
                    loss = _loss_value(self._evaluate(closure))
                    flat_grad = self._gather_flat_grad()
                    opt_cond = _host(flat_grad.abs().max()) <= tolerance_grad
                    evals = 1
            state["t"] = _kept(t, d)
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if _host(d.mul(t).abs().max()) <= tolerance_change or abs(loss - prev_loss) < tolerance_change:
                break
        return orig_loss
