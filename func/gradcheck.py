"""torch.autograd.gradcheck / gradgradcheck: analytical gradients against central finite differences.

The numerical Jacobian perturbs one input element at a time (func runs on fresh copies of the inputs);
the analytical one is one autograd.grad per output element. Slow by design: for small inputs, in tests.
"""
from __future__ import annotations

import warnings
from typing import Callable

import numpy as np

from ..tensor import Tensor
from .. import ops
from ..autograd import forward_ad as fwad
from ..autograd.api import grad as _grad

__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when the gradients do not match."""


def _tuple(x) -> tuple:
    return (x,) if isinstance(x, Tensor) else tuple(x)


def _outputs(func: Callable, inputs: tuple) -> list:
    return [o for o in _tuple(func(*inputs)) if isinstance(o, Tensor) and o.is_floating_point()]


def _numerical(func: Callable, inputs: tuple, wrt: list, eps: float) -> list:
    """[output][input] -> (numel(input), numel(output)) array of central differences."""
    base = [t.detach()._host_array().copy() if isinstance(t, Tensor) else t for t in inputs]  # (any dtype)

    def run(arrays) -> list:  # fresh leaves as the inputs were (gradgradcheck's func differentiates them)
        args = [ops.tensor(a, dtype=t.dtype).requires_grad_(t.requires_grad) if isinstance(t, Tensor) else t
                for a, t in zip(arrays, inputs)]
        return [o.detach()._host_array().astype(np.float64).ravel() for o in _outputs(func, args)]
    sizes = [o.size for o in run(base)]
    jac = [[np.zeros((inputs[i].numel(), n)) for i in wrt] for n in sizes]
    for col, i in enumerate(wrt):
        flat = base[i].reshape(-1)
        for j in range(flat.size):
            keep = flat[j]
            flat[j] = keep + eps
            plus = run(base)
            flat[j] = keep - eps
            minus = run(base)
            flat[j] = keep
            for k, (p, m) in enumerate(zip(plus, minus)):
                jac[k][col][j] = (p - m) / (2 * eps)
    return jac


def _analytical(func: Callable, inputs: tuple, wrt: list) -> list:
    """[output][input] -> (numel(input), numel(output)) array, one autograd.grad per output element."""
    outs = _outputs(func, inputs)
    jac = [[np.zeros((inputs[i].numel(), o.numel())) for i in wrt] for o in outs]
    targets = [inputs[i] for i in wrt]
    for k, o in enumerate(outs):
        if not o.requires_grad:
            continue
        for e in range(o.numel()):
            onehot = np.zeros(o.numel())
            onehot[e] = 1.0
            seed = ops.tensor(onehot.reshape(tuple(o.shape)), dtype=o.dtype)
            grads = _grad(o, targets, seed, retain_graph=True, allow_unused=True)
            for col, g in enumerate(grads):
                if g is not None:
                    jac[k][col][:, e] = g.detach()._host_array().astype(np.float64).ravel()
    return jac


def _forward_analytical(func: Callable, inputs: tuple, wrt: list) -> list:
    """[output][input] -> (numel(input), numel(output)) array, one forward-mode call per input element."""
    jac = None
    for col, i in enumerate(wrt):
        for e in range(inputs[i].numel()):
            onehot = np.zeros(inputs[i].numel())
            onehot[e] = 1.0
            with fwad.dual_level():
                tangent = ops.tensor(onehot.reshape(tuple(inputs[i].shape)), dtype=inputs[i].dtype)
                args = list(inputs)
                args[i] = fwad.make_dual(inputs[i].detach(), tangent)
                outs = _outputs(func, tuple(args))
                if jac is None:
                    jac = [[np.zeros((inputs[j].numel(), o.numel())) for j in wrt] for o in outs]
                for k, o in enumerate(outs):
                    t = fwad.unpack_dual(o).tangent
                    if t is not None:
                        jac[k][col][e] = t.detach()._host_array().astype(np.float64).ravel()
    return jac


def _compare(numerical: list, analytical: list, wrt: list, rtol: float, atol: float, raise_exception: bool,
             mode: str) -> bool:
    for k, (num_row, ana_row) in enumerate(zip(numerical, analytical)):
        for col, (num, ana) in enumerate(zip(num_row, ana_row)):
            if not np.allclose(ana, num, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                how = "" if mode == "backward" else " computed with forward mode"
                raise GradcheckError(f"Jacobian{how} mismatch for output {k} with respect to input {wrt[col]},\n"
                                     f"numerical:{_show(num)}\nanalytical:{_show(ana)}\n")
    return True


def gradcheck(func: Callable, inputs, *, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, nondet_tol: float = 0.0, check_undefined_grad: bool = True,
              check_grad_dtypes: bool = False, check_batched_grad: bool = False,
              check_batched_forward_grad: bool = False, check_forward_ad: bool = False,
              check_backward_ad: bool = True, fast_mode: bool = False, masked: bool | None = None) -> bool:
    """Whether func's gradients (for the inputs that require grad) match finite differences."""
    inputs = _tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but none of them have "
                         "requires_grad=True.")
    for i in wrt:
        if inputs[i].dtype.name != "float64" and not inputs[i].dtype.is_complex:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating point or complex. "
                          "This check will likely fail if all the inputs are not of double precision floating "
                          "point or complex. ", stacklevel=2)
    if not (check_backward_ad or check_forward_ad):
        return True
    numerical = _numerical(func, inputs, wrt, eps)
    if check_backward_ad and not _compare(numerical, _analytical(func, inputs, wrt), wrt, rtol, atol,
                                          raise_exception, "backward"):
        return False
    if check_forward_ad:
        return _compare(numerical, _forward_analytical(func, inputs, wrt), wrt, rtol, atol, raise_exception,
                        "forward")
    return True


def _show(a: np.ndarray) -> str:
    return repr(ops.tensor(a))


def gradgradcheck(func: Callable, inputs, grad_outputs=None, *, eps: float = 1e-6, atol: float = 1e-5,
                  rtol: float = 1e-3, gen_non_contig_grad_outputs: bool = False, raise_exception: bool = True,
                  nondet_tol: float = 0.0, check_undefined_grad: bool = True, check_grad_dtypes: bool = False,
                  check_batched_grad: bool = False, check_fwd_over_rev: bool = False,
                  check_rev_over_rev: bool = True, fast_mode: bool = False, masked: bool = False) -> bool:
    """gradcheck of the map (inputs, grad_outputs) -> the gradients of func: its second derivatives."""
    inputs = _tuple(inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(ops.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype).requires_grad_(True)
                             for o in _outputs(func, inputs) if o.requires_grad)
    grad_outputs = _tuple(grad_outputs)
    n = len(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]

    def first_grads(*args):
        outs = [o for o in _outputs(func, args[:n]) if o.requires_grad]
        grads = _grad(outs, [args[i] for i in wrt], args[n:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)
    if not check_rev_over_rev:
        return True
    return gradcheck(first_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception)
