"""torch.autograd.functional: Jacobians, Hessians and their products with vectors, from reverse mode.

Everything is built on `autograd.grad`. Forward-mode products (jvp, hvp) use forward_ad's core
(the transpose trick: g(u) = J^T u is linear in a dummy cotangent u, so differentiating g with
respect to u in the direction v gives J v), as torch's own jvp/hvp use the double backward.
`vectorize` is accepted: reverse-mode Jacobians take one backward pass per output element,
forward-mode ones one pass over a single linearization per input element.
"""
from __future__ import annotations

import functools
from typing import Callable

from .. import ops
from ..tensor import Tensor
from ..autograd.api import grad as _grad
from ..autograd.forward_ad import in_graph, linearize
from ..autograd.grad_mode import enable_grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _grad_on(fn: Callable) -> Callable:
    """`fn` run with grad mode on, as torch runs these functions (a caller's no_grad must not stop them: the
    Jacobian's rows are indexed out of the outputs after the user's function returns)."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with enable_grad():
            return fn(*args, **kwargs)
    return wrapper


def _as_tuple(x, arg: str, fn: str) -> tuple:
    """(was it a tuple, the tensors as a tuple); errors as torch for anything else."""
    is_tuple = isinstance(x, (tuple, list))
    items = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(items):
        if not isinstance(t, Tensor):
            if is_tuple:
                raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the "
                                f"value at index {i} has type {type(t)}.")
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of Tensors but the given "
                            f"{arg} has type {type(t)}.")
    return is_tuple, items


def _prepare(inputs: tuple, create_graph: bool) -> tuple:
    """Inputs to differentiate: connected to the caller's graph only when it is being built (create_graph)."""
    return tuple(t.view_as(t) if create_graph and t._requires_grad else t.detach().requires_grad_(True)
                 for t in inputs)


def _post(items: tuple, create_graph: bool) -> tuple:
    return items if create_graph else tuple(None if t is None else t.detach() for t in items)


def _vjp_raw(outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool) -> tuple:
    """sum_i J_i^T v_i per input (None where an input does not influence the outputs); keeps the graph."""
    pairs = [(o, v) for o, v in zip(outputs, cotangents) if o._requires_grad and v is not None]
    if not pairs:
        return (None,) * len(inputs)
    outs, vs = zip(*pairs)  # (in_graph: forward AD's own tensors report requires_grad False, as torch's)
    return _grad([in_graph(o) for o in outs], [in_graph(t) for t in inputs], vs, retain_graph=True,
                 create_graph=create_graph, allow_unused=True)


def _jvp_raw(outputs: tuple, inputs: tuple, tangents: tuple, create_graph: bool) -> tuple:
    """J v per output, by forward mode's transpose trick (None where an output does not depend on the inputs)."""
    return tuple(linearize(outputs, inputs, create_graph)(tangents))


def _zeros_for_none(grads: tuple, refs: tuple, strict: bool, what: Callable[[int], str]) -> tuple:
    out = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(what(i))
            g = ops.zeros_like(r)
        out.append(g)
    return tuple(out)


def _run(func: Callable, inputs: tuple, fn: str) -> tuple:
    with enable_grad():
        result = func(*inputs)
    return _as_tuple(result, "outputs of the user-provided function", fn)


def _check_v(v, like: tuple, fn: str, what: str, like_tuple: bool) -> tuple:
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the user-provided function returns a single "
                               "Tensor with a single element." if what == "outputs" else
                               "The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        return (ops.ones_like(like[0]),)
    _, vs = _as_tuple(v, "v", fn)
    # torch words these by whether the user gave `like` as a tuple (then it names the entry)
    if len(vs) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}."
                           if like_tuple else "The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(vs, like)):
        if a.shape != b.shape:
            entry = f"Entry {i} in " if like_tuple else ""
            raise RuntimeError(f"{entry}v has invalid size: should be {b.shape} but got {a.shape}.")
    return vs


@_grad_on
def vjp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs`."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
    inputs = _prepare(inputs, create_graph)
    out_tuple, outputs = _run(func, inputs, "vjp")
    _check_outputs_require_grad(outputs, strict)
    vs = _check_v(v, outputs, "vjp", "outputs", out_tuple)
    grads = _zeros_for_none(_vjp_raw(outputs, inputs, vs, create_graph), inputs, strict, lambda i: (
        f"The output of the user-provided function is independent of input {i}. This is not allowed in strict "
        "mode."))
    outputs, grads = _post(outputs, create_graph), _post(grads, create_graph)
    return (outputs if out_tuple else outputs[0]), (grads if is_tuple else grads[0])


@_grad_on
def jvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), J v): the Jacobian-vector product at `inputs`."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
    inputs = _prepare(inputs, create_graph)
    vs = _check_v(v, inputs, "jvp", "inputs", is_tuple)
    out_tuple, outputs = _run(func, inputs, "jvp")
    _check_outputs_require_grad(outputs, strict)
    grads = _zeros_for_none(_jvp_raw(outputs, inputs, vs, create_graph), outputs, strict, lambda i: (
        f"The output of the user-provided function is independent of input {i}. This is not allowed in strict "
        "mode."))
    outputs, grads = _post(outputs, create_graph), _post(grads, create_graph)
    return (outputs if out_tuple else outputs[0]), (grads if out_tuple else grads[0])


def _jacobian_of(outputs: tuple, inputs: tuple, create_graph: bool, strict: bool) -> list:
    """jac[i][j] = d outputs[i] / d inputs[j], of shape outputs[i].shape + inputs[j].shape."""
    jac = []
    for i, out in enumerate(outputs):
        rows: list = [[] for _ in inputs]
        flat = out.reshape(-1)
        for k in range(flat.numel()):
            grads = (None,) * len(inputs)
            if out._requires_grad:
                grads = _grad((in_graph(flat[k]),), [in_graph(t) for t in inputs], retain_graph=True,
                              create_graph=create_graph, allow_unused=True)
            for j, (g, x) in enumerate(zip(grads, inputs)):
                if g is None:
                    if strict:
                        raise RuntimeError(f"Output {i} of the user-provided function is independent of input {j}."
                                           " This is not allowed in strict mode.")
                    g = ops.zeros_like(x)
                rows[j].append(g)
        jac.append([ops.stack(r).reshape(*out.shape, *x.shape) if r else
                    ops.zeros(*out.shape, *x.shape, dtype=x.dtype, device=x.device) for r, x in zip(rows, inputs)])
    return jac


def _jacobian_forward(outputs: tuple, inputs: tuple) -> list:
    """jac[i][j] as _jacobian_of, by forward mode: column k of block j is J e_k for input j's element k."""
    jvp_of = linearize(outputs, inputs, create_graph=False)
    cols: list = [[[] for _ in inputs] for _ in outputs]
    for j, x in enumerate(inputs):
        basis = ops.eye(x.numel(), dtype=x.dtype, device=x.device)
        for k in range(x.numel()):
            res = jvp_of([basis[k].reshape(x.shape) if i == j else None for i in range(len(inputs))])
            for i, (o, g) in enumerate(zip(outputs, res)):
                cols[i][j].append(ops.zeros_like(o) if g is None else g)
    return [[ops.stack(c, -1).reshape(*o.shape, *x.shape) if c else
             ops.zeros(*o.shape, *x.shape, dtype=o.dtype, device=o.device) for c, x in zip(row, inputs)]
            for row, o in zip(cols, outputs)]


def _shape_jacobian(jac: list, out_tuple: bool, in_tuple: bool):
    if out_tuple:
        return tuple(tuple(row) if in_tuple else row[0] for row in jac)
    return tuple(jac[0]) if in_tuple else jac[0][0]


def _check_outputs_require_grad(outputs: tuple, strict: bool) -> None:
    """strict mode: torch refuses an output that does not require grad before differentiating anything."""
    for i, out in enumerate(outputs if strict else ()):
        if not out.requires_grad:
            raise RuntimeError(f"Output {i} of the user-provided function does not require gradients. The outputs "
                               "must be computed in a differentiable manner from the input when running in strict "
                               "mode.")


def _check_jacobian_requires_grad(grads: tuple, strict: bool) -> None:
    """strict mode, second derivatives: torch refuses a first derivative that does not depend on the inputs."""
    for i, g in enumerate(grads if strict else ()):
        if not g.requires_grad:
            raise RuntimeError(
                f"While computing the hessian, found that the jacobian of the user-provided function with respect "
                f"to input {i} is independent of the input. This is not allowed in strict mode. You should ensure "
                "that your function is twice differentiable and that the jacobian depends on the inputs (this would "
                "be violated by a linear function for example).")


@_grad_on
def jacobian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
             strategy: str = "reverse-mode"):
    """The Jacobian of `func` at `inputs` (nested tuples follow the tuple-ness of outputs, then inputs)."""
    if strategy not in ("forward-mode", "reverse-mode"):  # (torch asserts it)
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                           'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                           'Otherwise, prefer to use "reverse-mode".')
    if strategy == "forward-mode" and create_graph:
        raise NotImplementedError('torch.autograd.functional.jacobian: `create_graph=True` and '
                                  '`strategy="forward-mode"` are not supported together (yet). Please either set '
                                  '`create_graph=False` or `strategy="reverse-mode"`.')
    if strategy == "forward-mode" and not vectorize:  # (torch's text, its missing space included)
        raise NotImplementedError("Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
                                  "implemented for `vectorize=True`.")
    if strict and strategy == "forward-mode":
        raise RuntimeError('torch.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` are not '
                           'supported together (yet). Please either set `strict=False` or `strategy="reverse-mode"`.')
    if strict and vectorize:
        raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and `vectorized=True` are not "
                           "supported together. Please either set `strict=False` or `vectorize=False`.")
    in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    inputs = _prepare(inputs, create_graph)
    out_tuple, outputs = _run(func, inputs, "jacobian")
    _check_outputs_require_grad(outputs, strict)
    if strategy == "forward-mode":
        jac = _jacobian_forward(outputs, inputs)
    else:
        jac = _jacobian_of(outputs, inputs, create_graph, strict)
    if not create_graph:
        jac = [[t.detach() for t in row] for row in jac]
    return _shape_jacobian(jac, out_tuple, in_tuple)


@_grad_on
def hessian(func: Callable, inputs, create_graph: bool = False, strict: bool = False, vectorize: bool = False,
            outer_jacobian_strategy: str = "reverse-mode"):
    """The Hessian of the scalar function `func` at `inputs`."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")

    def jac_func(*inp):
        out = func(*inp)
        is_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_outputs_require_grad(outs, strict)
        if is_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if outs[0].numel() != 1:
            raise RuntimeError("The Tensor returned by the function given to hessian should contain a single element")
        if outs[0].dim() > 0:
            out = outs[0].squeeze()
        grads = _vjp_raw((out,), inp, (ops.ones_like(out),), create_graph=True)
        grads = _zeros_for_none(grads, inp, strict, lambda i: (
            f"The output of the user-provided function is independent of input {i}. This is not allowed in "
            "strict mode."))
        _check_jacobian_requires_grad(grads, strict)
        return grads

    hess = jacobian(jac_func, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                    strategy=outer_jacobian_strategy)
    return hess if in_tuple else hess[0][0]


def _scalar_and_grad(func: Callable, inputs: tuple, fn: str, strict: bool) -> tuple:
    out_tuple, outputs = _run(func, inputs, fn)
    _check_outputs_require_grad(outputs, strict)
    if out_tuple:
        raise RuntimeError(f"The function given to {fn} should return a single Tensor")
    if outputs[0].numel() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn} should contain a single element")
    out = outputs[0]
    grads = _zeros_for_none(_vjp_raw((out,), inputs, (ops.ones_like(out),), True), inputs, strict, lambda i: (
        f"The output of the user-provided function is independent of input {i}. This is not allowed in strict "
        "mode."))
    _check_jacobian_requires_grad(grads, strict)
    return out, grads


@_grad_on
def vhp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), v^T H): the vector-Hessian product of a scalar function."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "vhp")
    inputs = _prepare(inputs, create_graph)
    vs = _check_v(v, inputs, "vhp", "inputs", is_tuple)
    out, grads = _scalar_and_grad(func, inputs, "vhp", strict)
    res = _zeros_for_none(_vjp_raw(grads, inputs, vs, create_graph), inputs, strict, lambda i: (
        f"The hessian of the user-provided function with respect to input {i} is independent of the input. This "
        "is not allowed in strict mode."))
    out, res = _post((out,), create_graph)[0], _post(res, create_graph)
    return out, (res if is_tuple else res[0])


@_grad_on
def hvp(func: Callable, inputs, v=None, create_graph: bool = False, strict: bool = False) -> tuple:
    """(func(inputs), H v): the Hessian-vector product of a scalar function (double-vjp of its gradient)."""
    is_tuple, inputs = _as_tuple(inputs, "inputs", "hvp")
    inputs = _prepare(inputs, create_graph)
    vs = _check_v(v, inputs, "hvp", "inputs", is_tuple)
    out, grads = _scalar_and_grad(func, inputs, "hvp", strict)
    res = _zeros_for_none(_jvp_raw(grads, inputs, vs, create_graph), inputs, strict, lambda i: (
        f"The hessian of the user-provided function with respect to input {i} is independent of the input. This "
        "is not allowed in strict mode."))
    out, res = _post((out,), create_graph)[0], _post(res, create_graph)
    return out, (res if is_tuple else res[0])
