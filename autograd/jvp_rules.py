"""Forward derivatives (jvp rules) of recorded ops: the output tangents of one node from its inputs' tangents.

forward_ad calls `output_tangents(node, inputs, outputs, tangents, create)` while a node is recorded on a tensor
that carries a tangent; it returns one tangent per output (None for an output that is not floating point).
Three kinds of rule, tried in this order:

- elementwise nodes (one rule for the whole family): their backward formulas (ops/elementwise/derivatives.py) are
  partial derivatives times the cotangent `g`, pointwise; with the input's tangent in place of `g` and no
  reduction over broadcast dimensions, formula_i(t_i) = d out / d in_i * t_i, and the jvp is their sum. Real
  dtypes only: a complex formula carries torch's conjugations (and non-holomorphic ops the second Wirtinger
  derivative), which the transpose below gets right without a table of its own;
- declared rules, keyed by node class (torch's names): the product rule for the matmul family, the op itself on
  the tangents for linear ops (sum and mean, cat and stack, copies, gather and index_select), the row rules of
  softmax, log_softmax, logsumexp and logcumsumexp, and for any view (an output sharing its one input's memory)
  the same strides taken of the input's tangent;
- every other node: its own backward, transposed. b(u) = J^T u is linear in a dummy cotangent u, so
  J t = d<b(u), t>/du at any u: one call of the node's backward on u, and one reverse pass over that small graph.
  Still eager and local: the pass never leaves the node (its saved tensors enter detached).

Rules run in tidal ops (tensor methods: autograd sits below ops), so with `create` (grad mode on and something
requiring grad) the tangents record a graph of their own and reverse-over-forward works.
"""
from __future__ import annotations

from typing import Callable

from ..tensor import Tensor
from . import hooks
from .api import grad as _grad
from .grad_mode import enable_grad
from . import graph
from .graph import output_alias


def output_tangents(node, inputs: tuple, outputs, tangents: list, create: bool) -> list:
    """The tangent of each of `outputs` (None where not floating point) of `node`, given each input's (None:
    zero); `create`: the tangents must be differentiable."""
    rule = _RULES.get(type(node).__name__)
    found = None
    if rule is not None:
        found = rule(node, inputs, outputs, tangents)
    elif node.backward_fn is hooks.elementwise_backward:
        found = _elementwise(node, inputs, outputs, tangents, create)
    elif len(inputs) == 1 and _is_view(inputs[0], outputs):
        found = [_view_tangent(tangents[0], inputs[0], o) for o in outputs]
    if found is None:
        found = _transposed(node, inputs, outputs, tangents, create)
    return [_fitted(t, o) for t, o in zip(found, outputs)]


def _fitted(t, out: Tensor):
    """`t` as `out`'s tangent: its dtype and shape (a zero tangent where a float output got none)."""
    if not out.dtype.is_floating_point:
        return None
    if t is None:
        return hooks.zeros_like(out)
    if t.dtype is not out.dtype:
        t = t.real if t.dtype.is_complex and not out.dtype.is_complex else t
        t = t if t.dtype is out.dtype else t.to(out.dtype)
    if tuple(t.shape) != tuple(out.shape):
        t = t.expand(out.shape).contiguous()
    return t


# -- elementwise: one rule from the backward formulas ---------------------------------------------
def _saved_now(node, inputs, outputs, create: bool) -> tuple:
    """The node's saved tensors as its backward will see them; an elementwise node saves its output only after
    recording (Node.save_output), so the output stands in at place 0 (attached to the node when differentiable)."""
    saved = node.saved_tensors
    if saved and saved[0] is None and node.backward_fn is hooks.elementwise_backward:
        out = outputs[0]
        if create:
            written = any(out is x for x in inputs)
            out = output_alias(out)
            out._requires_grad, out.grad_fn = True, node
            if written:  # an in-place op bumps the version after recording: what the tangent saves is a copy
                out = out.clone()
        saved = (out,) + tuple(saved[1:])
    return saved


def _elementwise(node, inputs, outputs, tangents, create: bool):
    if outputs[0].dtype.is_complex or any(t is not None and t.dtype.is_complex for t in tangents):
        return None
    out_dtype = outputs[0].dtype
    saved = _saved_now(node, inputs, outputs, create)
    total = None
    for fn, t in zip(node.attrs[2], tangents):
        if fn is None or t is None:
            continue
        term = fn(t if t.dtype is out_dtype else t.to(out_dtype), *saved)
        total = term if total is None else total + term
    return [total]


# -- declared rules -------------------------------------------------------------------------------
def _product(node, inputs, outputs, tangents):
    """matmul's family: (a + ta)(b + tb) = ab + ta b + a tb + ..., bilinear in its two operands."""
    (a, b), (ta, tb) = inputs[:2], tangents[:2]
    terms = ([ta @ b] if ta is not None else []) + ([a @ tb] if tb is not None else [])
    if not terms or any(x is None for x in inputs[:2]):
        return None
    return [terms[0] + terms[1] if len(terms) == 2 else terms[0]]


def _linear(apply: Callable) -> Callable:
    """A rule for an op linear in its one input: the op itself on the tangent, `apply(t, node, out)`."""
    def rule(node, inputs, outputs, tangents):
        t = tangents[0]
        return [None if t is None else apply(t, node, outputs[0])]
    return rule


def _reduced(method: str) -> Callable:
    """sum and mean: the same reduction of the tangent (a dtype or other extra argument: the transpose)."""
    def rule(node, inputs, outputs, tangents):
        spec, t = node.attrs, tangents[0]
        if t is None or tuple(t.shape) != tuple(spec.shape) or spec.extra is not None or not spec.axes:
            return None
        return [getattr(t, method)(dim=list(spec.axes), keepdim=spec.keepdim)]
    return rule


def _logcumsumexp(node, inputs, outputs, tangents):
    """y_i = log sum_{j<=i} exp(x_j): t_y,i = sum_{j<=i} exp(x_j - y_i) t_j, a cumsum scaled by the row's
    maximum (its backward splits the cotangent by sign in log space, which a zero dummy cannot transpose)."""
    t, spec = tangents[0], node.attrs
    x, y = node.saved_tensors
    if t is None or len(spec.axes) != 1 or x.dtype.is_complex or not x.dim():
        return None
    dim = spec.axes[0]
    top = x.amax(dim, keepdim=True)
    scaled = t * (x - top).exp()
    run = scaled.flip(dim).cumsum(dim).flip(dim) if spec.extra else scaled.cumsum(dim)
    return [run * (top - y).exp()]


def _softmax(log: bool) -> Callable:
    """softmax: y (t - sum(y t)); log_softmax: t - sum(exp(y) t), along the node's dim (its attrs)."""
    def rule(node, inputs, outputs, tangents):
        t, dim = tangents[0], node.attrs
        if t is None or not isinstance(dim, int) or outputs[0].dtype.is_complex:
            return None
        (y,) = node.saved_tensors
        t = t if t.dtype is y.dtype else t.to(y.dtype)
        if log:
            return [t - (y.exp() * t).sum(dim, keepdim=True)]
        return [y * (t - (y * t).sum(dim, keepdim=True))]
    return rule


def _logsumexp(node, inputs, outputs, tangents):
    """y = log sum exp(x): t_y = sum(exp(x - y) t) over the reduced dims."""
    t, spec = tangents[0], node.attrs
    x, y = node.saved_tensors
    if t is None or x.dtype.is_complex or not spec.axes or spec.extra is not None:
        return None
    axes = list(spec.axes)
    kept = y if spec.keepdim else y.reshape([1 if k in spec.axes else n for k, n in enumerate(x.shape)])
    return [(t * (x - kept).exp()).sum(axes, keepdim=spec.keepdim)]


def _picked(method: str) -> Callable:
    """gather and index_select: the same pick of the tangent (node.attrs: (input shape, dim); saved: the index)."""
    def rule(node, inputs, outputs, tangents):
        t = tangents[0]
        if t is None:
            return None
        index = node.saved_tensors[0]  # (gather also saves its input, as torch's)
        picked = getattr(t, method)(node.attrs[1], index) if tuple(t.shape) == tuple(node.attrs[0]) else None
        return None if picked is None or tuple(picked.shape) != tuple(outputs[0].shape) else [picked]
    return rule


def _joined(join: str) -> Callable:
    """cat and stack: the same join of the tangents, zeros for inputs without one."""
    def rule(node, inputs, outputs, tangents):
        dim = node.attrs[0] if join == "cat" else node.attrs
        if not isinstance(dim, int) or any(x is None for x in inputs):
            return None
        parts = [t if t is not None else hooks.zeros_like(x) for x, t in zip(inputs, tangents)]
        dtype = outputs[0].dtype
        parts = [p if p.dtype is dtype else p.to(dtype) for p in parts]
        joined = hooks.stack(parts, dim) if join == "stack" else _cat(parts, dim)
        return None if joined is None else [joined]
    return rule


def _cat(parts: list, dim: int) -> Tensor:
    """cat of equal `parts` along `dim`, as their stack with that dim merged (hooks has stack, not cat); None
    for unequal parts (the transpose serves them)."""
    if len({tuple(p.shape) for p in parts}) != 1 or not parts[0].dim():
        return None
    dim = dim % parts[0].dim()
    shape = list(parts[0].shape)
    shape[dim] *= len(parts)
    return hooks.stack(parts, dim).reshape(shape)


_RULES: dict = {
    **dict.fromkeys(("MmBackward0", "BmmBackward0", "MvBackward0", "DotBackward0", "MatmulBackward0",
                     "VdotBackward0"), _product),
    "SumBackward0": _reduced("sum"), "SumBackward1": _reduced("sum"),
    "MeanBackward0": _reduced("mean"), "MeanBackward1": _reduced("mean"),
    "LogcumsumexpBackward0": _logcumsumexp, "LogsumexpBackward0": _logsumexp,
    "SoftmaxBackward0": _softmax(False), "LogSoftmaxBackward0": _softmax(True),
    "GatherBackward0": _picked("gather"), "IndexSelectBackward0": _picked("index_select"),
    "CatBackward0": _joined("cat"), "StackBackward0": _joined("stack"),
    "CloneBackward0": _linear(lambda t, node, out: t.clone()),
    "ConjBackward0": _linear(lambda t, node, out: t.conj()),  # (torch's tangent: a conjugate view too)
    "ToCopyBackward0": _linear(lambda t, node, out: t.to(out.dtype) if t.dtype is not out.dtype else t.clone()),
}


# -- views ----------------------------------------------------------------------------------------
def _is_view(x, outputs) -> bool:
    """Whether every output is a view of input `x` of its dtype (same memory, strides as they are), not `x`
    itself written in place."""
    if not isinstance(x, Tensor):
        return False
    for o in outputs:
        if o is x or o._v.blob is not x._v.blob or o.dtype is not x.dtype:
            return False
    return True


def _view_tangent(t, x: Tensor, out: Tensor):
    """The tangent of view `out` of `x`: the same window of `t`, laid out as `x` is (a tangent laid out
    otherwise is first copied into `x`'s strides)."""
    if t is None:
        return None
    if tuple(t.stride()) != tuple(x.stride()) or tuple(t.shape) != tuple(x.shape):
        t = _laid_out_as(t, x)
    offset = t.storage_offset() + out.storage_offset() - x.storage_offset()
    return t.as_strided(tuple(out.shape), tuple(out.stride()), offset)


def _laid_out_as(t: Tensor, x: Tensor) -> Tensor:
    """`t`'s values in a tensor with `x`'s shape and strides (over a storage of its own)."""
    span = 1 + sum((n - 1) * s for n, s in zip(x.shape, x.stride()) if n > 0)
    flat = hooks.zeros((span if x.numel() else 0,), dtype=t.dtype, device=t.device)
    window = flat.as_strided(tuple(x.shape), tuple(x.stride()), 0)
    window.copy_(t)  # (differentiable in t where it requires grad: the write takes t's history)
    return window


# -- the transpose of the node's own backward -------------------------------------------------------
def _detached_saved(saved: tuple) -> tuple:
    """The saved tensors as leaves of their own: a formula that asks `requires_grad` gets the same answer, and
    the graph it records ends there."""
    out = []
    for s in saved:
        if isinstance(s, Tensor):
            alias = output_alias(s)
            alias._requires_grad = s._requires_grad
            s = alias
        out.append(s)
    return tuple(out)


def _fit_pair(g: Tensor, t: Tensor, meta) -> tuple:
    """(b_i(u) fitted to input i as the engine fits gradients, the input's tangent in its dtype)."""
    if meta is not None and tuple(g.shape) != tuple(meta[0]):
        g = g.sum_to_size(meta[0])
    if g.dtype.is_complex and not t.dtype.is_complex:
        g = g.real
    return g, (t if t.dtype is g.dtype else t.to(g.dtype))


def _transposed(node, inputs, outputs, tangents, create: bool) -> list:
    """J t from the node's backward b(u) = J^T u: J t = d<b(u), t>/du (see the module's docstring). The saved
    tensors enter as leaves of their own, so the reverse pass stays inside the node; with `create`, the edges
    into those leaves are then moved onto the saved tensors' own histories."""
    # (b is linear, so any u serves; zeros meet the checks some backwards make of their cotangent: linalg.eig's)
    dummies = [hooks.zeros_like(o).requires_grad_(True) if o.dtype.is_floating_point else None for o in outputs]
    start = next(graph._seq)  # the nodes made from here on are this rule's own
    old = (node._saved, node._saved_outputs)
    saved = _saved_now(node, inputs, outputs, create)
    leaves = _detached_saved(saved)
    node._saved, node._saved_outputs = leaves, ()
    try:
        with enable_grad():
            grads = node.backward_fn(node, *dummies)
            grads = grads if isinstance(grads, tuple) else (grads,)
            pairs = [_fit_pair(g, t, meta) for g, t, meta in zip(grads, tangents, node._input_meta)
                     if g is not None and t is not None and g._requires_grad]
    finally:
        node._saved, node._saved_outputs = old
    live = [d for d in dummies if d is not None]
    if not pairs or not live:
        return [None] * len(outputs)
    found = list(_grad([g for g, _ in pairs], live, [t for _, t in pairs], create_graph=create, allow_unused=True))
    if create:
        _reattach([f for f in found if f is not None and f.grad_fn is not None], leaves, saved, start)
    found = iter(found)
    return [next(found) if d is not None else None for d in dummies]


def _reattach(results: list, leaves: tuple, saved: tuple, start: int) -> None:
    """In the graph the rule made (nodes from sequence number `start` on), edges into the accumulators of the
    stand-in `leaves` go to the histories of the `saved` tensors they stood for instead."""
    moved = {}
    for leaf, real in zip(leaves, saved):
        ref = leaf.__dict__.get("_grad_acc") if isinstance(leaf, Tensor) else None
        acc = ref() if ref is not None else None
        if acc is not None:
            moved[acc] = (real.grad_fn, real._output_nr) if real.grad_fn is not None else (graph.gradient_edge(real), 0)
    if not moved:
        return
    seen, todo = set(), [r.grad_fn for r in results]
    while todo:
        n = todo.pop()
        if n is None or id(n) in seen or n.seq < start:
            continue
        seen.add(id(n))
        nexts = n.next_functions
        if any(nxt in moved for nxt, _ in nexts):
            n.next_functions = tuple([moved.get(nxt, (nxt, k)) for nxt, k in nexts])
        todo.extend(nxt for nxt, _ in nexts)
