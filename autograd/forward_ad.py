"""Forward-mode AD (torch.autograd.forward_ad): dual tensors whose tangents are computed as ops run.

Design: `make_dual(primal, tangent)` returns a tensor sharing `primal`'s memory whose grad_fn is a
MakeDualBackward0 node (an identity on the primal's own history) that carries the level and the tangent.
While a level is live, graph.record hands each node it makes to `_carry_tangents` (free otherwise: record
tests one list). An op on tensors with tangents at an eager level (public levels, an outermost func.jvp's)
gets its outputs' tangents at once, from the node's jvp rule (jvp_rules.py: one rule for every elementwise
op from its backward formulas, declared rules for matmul, views, reductions, rows and joins, and the node's
own backward transposed for every other op), and keeps them on the node: a tensor's tangent is that of its
grad_fn's output, so it follows the tensor wherever autograd moves its history (in-place writes, writes
through views). `unpack_dual` reads it. A later in-place write into a saved tensor leaves computed tangents
alone, as in torch.

Grad mode: tangents are computed without recording unless something requires grad for its own sake (a
`_fw_only` mark tells tensors that require grad only because they carry a tangent) or a tangent requires
grad; then they record a graph and reverse-over-forward works. Backward passes with create_graph run
ops that record, so gradients carry tangents too (forward-over-reverse: Hessian-vector products).

Lazy levels: tidal's other transforms (jacfwd, linearize, autograd.functional.jvp/hvp, and func.jvp when
nested in another transform or under vmap) enter levels of their own, whose tangents come from the recorded
graph by the transpose trick (`linearize`: one reverse pass with create_graph makes b(u) = J^T u, linear in
a dummy cotangent u, and each further reverse pass of b gives a J t), so a Jacobian's many products share one
linearization. An outermost func.jvp takes an eager level. Custom Functions make their nodes without
graph.record: their outputs' tangents come the same lazy way at any level.

Under no_grad, as in torch, tangents still flow: dual tensors carry a flag (make_dual sets it, records
copy it to outputs while a level is live), so `needs_grad` records ops on them, keeping only the edges
towards the duals. Under inference_mode nothing is recorded and tangents are dropped, as in torch.

Cost: the products torch's forward mode issues (a 4-layer MLP's jvp: two matmuls per layer, about 2.1x the
plain forward's wall time at 64x256, where the lazy transposes took 4x); the elementwise rule issues a
formula's few ops per input with a tangent, which fuse.

requires_grad: ops record a graph on dual tensors (the transposes and lazy levels need it), but tensors in it
for forward AD's sake alone carry the `_fw_only` mark and report requires_grad=False, as torch's: duals of
primals that do not require grad, results computed only from such tensors (under no_grad, every result but a
write into a tensor that requires grad for its own sake), a custom Function's outputs unless an input requires
grad for its own sake. So backward, autograd.grad, retain_grad and register_hook refuse them with torch's
errors; requires_grad_() makes one want its gradient (kept in .grad), as on torch's leaf. Internal code that
decides what to record reads `_requires_grad`, and internal reverse passes reach such tensors through
`in_graph` aliases. When the last level exits they become plain tensors (no grad_fn).

Known differences from torch: inside a level such a tensor still has its grad_fn (torch's is None); until
patch s19_reqgrad_2, is_leaf is False (an optimizer refuses it) and repr shows the grad_fn. A write of a dual
under no_grad into a tensor in a real graph keeps requires_grad but drops the edge to its earlier history
(torch's backward ignores the write).
"""
from __future__ import annotations

import collections
import contextlib
import weakref
from typing import Callable, Sequence

from ..tensor import Tensor
from .api import grad as _grad
from . import hooks
from .dual_marks import mark_fw_only, unmark_all
from .function import Function
from .function import TRANSPOSING
from . import graph
from . import jvp_rules
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .graph import _NO_EDGE, AccumulateGrad, _dual_levels, _live_duals, _tangents_paused, gradient_edge, no_tangents
from .graph import record
from .graph_walk import leaves_reached, roots_of, walk

__all__ = ["UnpackedDualTensor", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "dual_level"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "The (primal, tangent) pair unpack_dual returns; tangent is None for a non-dual tensor."

_NESTED = "Nested forward mode AD is not supported at the moment"


class _Level:
    """One dual level: alive between enter and exit; `public` if entered by enter_dual_level. An `eager` level's
    tangents are computed as ops run and kept on their nodes (`nodes` holds those, to free at exit): public levels
    and func.jvp's; the other transforms' levels are lazy (one linearization serves many tangents: `linearize`)."""

    __slots__ = ("index", "alive", "public", "eager", "nodes")

    def __init__(self, index: int, public: bool, eager: bool):
        self.index, self.alive, self.public, self.eager, self.nodes = index, True, public, eager, []


_levels: list = _dual_levels  # the live levels, innermost last (graph.record reads the same list)


def _push(public: bool, eager: bool = True) -> _Level:
    level = _Level(len(_levels), public, eager)
    _levels.append(level)
    return level


def _pop(level: _Level) -> None:
    if not _levels or _levels[-1] is not level:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    level.alive = False
    _levels.pop()
    for ref in level.nodes:  # the level's tangents die with it, as torch's
        node = ref()
        if node is not None:
            node.__dict__.pop("_fw_out", None)
    level.nodes = []
    if not _levels:
        unmark_all()


def enter_dual_level() -> int:
    """Enter a new forward-AD level (only one at a time, as in torch); returns its index."""
    if _levels:
        raise RuntimeError(_NESTED)
    return _push(public=True).index


def exit_dual_level(*, level: int | None = None) -> None:
    """Exit the current forward-AD level: dual tensors made in it lose their tangent."""
    current = _levels[-1].index if _levels else -1
    if level is None:
        level = current
    if level != current:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. This is "
                           "not supported.")
    if level < 0:
        raise RuntimeError("Dual level must be a positive number.")
    _pop(_levels[-1])


class dual_level(contextlib.ContextDecorator):
    """Context manager (or decorator) for one forward-AD level: `with dual_level(): ...`."""

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> bool:
        exit_dual_level()
        return False


@contextlib.contextmanager
def _internal_level(eager: bool = False):
    """A level for tidal's own transforms (func.jvp, jacfwd): these may nest, unlike public levels; `eager`: its
    tangents are computed as ops run (an outermost level: the rules' own ops carry no other level's tangent)."""
    level = _push(public=False, eager=eager)
    try:
        yield level
    finally:
        _pop(level)


def _resolve(level, fn: str) -> _Level:
    if isinstance(level, _Level):
        return level
    if level is None:
        if not _levels:
            raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                               "enter_dual_level() first.")
        return _levels[-1]
    if not isinstance(level, int) or not 0 <= level < len(_levels):
        raise RuntimeError(f"Invalid level given to {fn}")
    return _levels[level]


# -- dual tensors -------------------------------------------------------------------------------
def _make_dual_backward(node, grad):
    return (grad,)


def _dual_info(node):
    """(level, tangent, handle) for a live MakeDualBackward0 node, else None."""
    info = node.__dict__.get("_fw_dual") if node is not None and hasattr(node, "__dict__") else None
    if info is None or not info[0].alive:
        return None
    return info


def _check_dtype(t: Tensor, what: str) -> None:
    if not t.dtype.is_floating_point:
        raise ValueError(f"Expected {what} to be floating point or complex, but got: {_torch_name(t.dtype)}")


def _torch_name(dtype) -> str:
    return f"torch.{dtype.name}" if hasattr(dtype, "name") else str(dtype)


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A dual tensor: `tensor`'s values (sharing its memory) with `tangent` as forward gradient."""
    lvl = _resolve(level, "_make_dual")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        bad = tensor if not isinstance(tensor, Tensor) else tangent
        raise TypeError(f"make_dual(): argument '{'tensor' if bad is tensor else 'tangent'}' must be Tensor, not "
                        f"{type(bad).__name__}")
    _check_dtype(tensor, "primal")
    _check_dtype(tangent, "tangent")
    if tuple(tensor.shape) != tuple(tangent.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tensor.device != tangent.device:
        raise RuntimeError(f"Expected tangent to be on the same device as the primal: {tangent.device} vs "
                           f"{tensor.device}.")
    if (_input_tangent(tensor, lvl) is not None) if lvl.eager else (lvl in _reached(tensor)[0]):
        raise RuntimeError("Making a dual Tensor based on a Tensor that already has a forward gradient at the same "
                           f"level {lvl.index} is not supported.")
    dual = Tensor._make(tensor._v, tensor.dtype, tensor.device, tensor._vm)
    node = record("make_dual", _make_dual_backward, (tensor,), (dual,))
    # a plain alias (no grad_fn): the node may hold it without a reference cycle
    node.__dict__["_fw_dual"] = (lvl, tangent, Tensor._make(tensor._v, tensor.dtype, tensor.device, tensor._vm))
    if lvl.eager:
        _keep(node, lvl, [tangent])
    dual.__dict__["_fw_levels"] = dual.__dict__.get("_fw_levels", ()) + (lvl,)
    if not tensor._requires_grad or tensor.__dict__.get("_fw_only"):
        mark_fw_only(dual)  # requires grad for forward AD's sake alone
    return dual


def _keep(node, lvl: _Level, tangents: list) -> None:
    """Keep `tangents` (one per output) on `node` for level `lvl`, until the level exits."""
    node.__dict__["_fw_out"] = (lvl, tangents)
    nodes = lvl.nodes
    nodes.append(weakref.ref(node))
    if len(nodes) >= 4096 and not len(nodes) & 4095:  # a long level: forget the nodes already freed
        nodes[:] = [ref for ref in nodes if ref() is not None]


def _input_tangent(t, lvl: _Level):
    """The eager tangent of `t` at level `lvl` (None: none), kept on its node; a custom Function's output
    (its node made without graph.record) gets its tangent from the graph, as the lazy levels do."""
    fn = t.grad_fn if isinstance(t, Tensor) else None
    if fn is None:
        return None
    info = fn.__dict__.get("_fw_out")
    if info is not None:
        return info[1][t._output_nr] if info[0] is lvl else None
    if type(fn).__name__[-8:] != "Backward":  # (custom Functions' node classes; Backward0: tidal's own ops)
        return None
    found, leaf = _reached(t)
    nodes = found.get(lvl)
    if not nodes:
        return None
    with no_tangents():  # (the transposes' own ops carry no tangent)
        return _tangent(t, lvl, nodes, leaf or any(other is not lvl for other in found))


def _carry_tangents(node, inputs: tuple, outputs) -> None:
    """graph.record's forward-AD step (while a dual level is live): outputs of an op on tensors with tangents
    carry the levels' flag, and at eager levels their tangents, from the node's jvp rule; under
    no_grad the node keeps only the edges towards those tensors (the graph serves the tangents alone)."""
    if _tangents_paused:  # the rules' own ops (and tidal's internal writes) carry no tangent
        return
    flags = []  # per input, the live levels it carries: its flag, or (a tensor made without one: a saved output
    found: dict = {}  # restored by backward, a view's stand-in) the level of the tangent its node keeps
    for t in inputs:
        f = _live_duals(t)
        fn = t.grad_fn if f == () and isinstance(t, Tensor) else None
        if fn is not None:
            info = fn.__dict__.get("_fw_out")
            if info is not None and info[0].alive:
                f = (info[0],)
        flags.append(f)
        for lvl in f:
            found[lvl] = None
    levels = tuple(found)
    if not levels:
        levels = tuple([lvl for lvl in _levels if lvl.eager and _custom_input(inputs, lvl)])
        if not levels:
            return
    grad_mode = is_grad_enabled()
    only = True  # every input requiring grad does so for forward AD alone (under no_grad, all of them: as torch's)
    for t in inputs if grad_mode else ():
        if isinstance(t, Tensor) and t._requires_grad and not t.__dict__.get("_fw_only"):
            only = False
            break
    for out in outputs:
        out.__dict__["_fw_levels"] = levels
        if only and (grad_mode or not _was_real(out, inputs, node.next_functions)):
            mark_fw_only(out)
        else:  # (an in-place write of a real input into a forward-AD-only tensor makes it require grad)
            out.__dict__.pop("_fw_only", None)
    if not grad_mode:
        node.next_functions = tuple([e if f else _NO_EDGE for e, f in zip(node.next_functions, flags)])
    for lvl in levels:
        if lvl.eager:
            _eager_tangents(node, inputs, outputs, lvl, not only)


def _was_real(out: Tensor, inputs: tuple, edges: tuple) -> bool:
    """Under no_grad: whether `out`, written in place, required grad for its own sake before (torch's no_grad
    writes leave its requires_grad as it was)."""
    for t, edge in zip(inputs, edges):
        if t is out:
            return edge[0] is not None and "_fw_only" not in out.__dict__
    return False


def _custom_input(inputs: tuple, lvl: _Level) -> bool:
    for t in inputs:
        if isinstance(t, Tensor) and t._requires_grad and t.grad_fn is not None and \
                type(t.grad_fn).__name__[-8:] == "Backward" and _input_tangent(t, lvl) is not None:
            return True
    return False


def _eager_tangents(node, inputs: tuple, outputs, lvl: _Level, real: bool) -> None:
    """Compute and keep the tangents of `node`'s outputs at `lvl` (jvp_rules); `real`: an input requires grad
    for its own sake, so in grad mode the tangents are differentiable (reverse over forward)."""
    tangents = []
    seen = False
    for t in inputs:
        tangent = _input_tangent(t, lvl)
        tangents.append(tangent)
        seen = seen or tangent is not None
    if not seen:
        return
    create = is_grad_enabled() and (real or any(t is not None and t._requires_grad for t in tangents))
    with (contextlib.nullcontext() if create else no_grad()), no_tangents():
        found = jvp_rules.output_tangents(node, inputs, outputs, tangents, create)
    _keep(node, lvl, found)


def _handle(node) -> Tensor:
    """A tensor through which autograd.grad captures the gradient reaching dual node `node`; it stays valid
    after the dual is written in place (which gives the dual a new grad_fn)."""
    alias = node.__dict__["_fw_dual"][2]
    handle = Tensor._make(alias._v, alias.dtype, alias.device, alias._vm)
    handle._requires_grad, handle.grad_fn = True, node
    return handle


def _reached(t: Tensor) -> tuple:
    """({level: [dual nodes]} over the live dual nodes `t`'s graph reaches, whether it reaches a leaf
    or a dual node of another level, i.e. whether its tangent must stay differentiable)."""
    found: dict = {}
    if not isinstance(t, Tensor) or not t._requires_grad:
        return found, False
    leaf = t.grad_fn is None
    custom = []
    for node in walk([t.grad_fn]):
        if isinstance(node, AccumulateGrad):
            leaf = True
            continue
        info = _dual_info(node)
        if info is not None:
            found.setdefault(info[0], []).append(node)
        elif type(node).__name__[-8:] == "Backward":  # custom Functions' node classes (Backward0: built-in ops)
            custom.append(node)
    if custom and found:
        _refuse_custom_without_jvp(custom, found)
    return found, leaf


def _refuse_custom_without_jvp(nodes: list, found: dict) -> None:
    """torch's error for a custom Function without `jvp` between a dual tensor and the result."""
    classes, todo = {}, [Function]
    while todo:
        cls = todo.pop()
        classes[cls.__dict__.get("_node_cls")] = cls
        todo.extend(cls.__subclasses__())
    duals = {id(n) for ns in found.values() for n in ns}
    for node in nodes:
        cls = classes.get(type(node))
        if cls is None or getattr(cls, "jvp", None) is not None:
            continue  # with a jvp, the transpose of its (differentiable) backward gives the same tangent
        if any(id(n) in duals for n in walk([node])):
            raise NotImplementedError("You must implement the jvp function for custom autograd.Function to use "
                                      "it with forward mode AD.")


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """(primal, tangent) of `tensor` at `level` (the current one by default); tangent None if not dual."""
    if not isinstance(tensor, Tensor):
        raise TypeError(f"_unpack_dual(): argument 'dual' (position 1) must be Tensor, not {type(tensor).__name__}")
    if level is None and not _levels:
        return UnpackedDualTensor(tensor, None)
    lvl = _resolve(level, "_unpack_dual")
    if lvl.eager:
        tangent = _input_tangent(tensor, lvl)
        if tangent is None:
            return UnpackedDualTensor(tensor, None)
        if tensor._requires_grad and not tensor.__dict__.get("_fw_only") and is_grad_enabled():
            with no_tangents():  # (a view of the tensor without its tangent, in its history)
                primal = tensor.view_as(tensor)
        else:
            primal = tensor.detach()
        return UnpackedDualTensor(primal, tangent)
    found, leaf = _reached(tensor)
    nodes = found.get(lvl)
    if not nodes:
        return UnpackedDualTensor(tensor, None)
    outer = leaf or any(other is not lvl for other in found)
    primal = tensor.view_as(tensor) if outer and is_grad_enabled() else tensor.detach()
    return UnpackedDualTensor(primal, _tangent(tensor, lvl, nodes, outer))


def _tangent(y: Tensor, lvl: _Level, nodes: list, outer: bool) -> Tensor:
    info = _dual_info(y.grad_fn)
    if info is not None and info[0] is lvl and not y._output_nr:
        return info[1]  # the dual itself, unchanged: its own tangent
    key = (y.grad_fn, y._output_nr, y._version)
    cached = y.__dict__.get("_fw_cache")
    if cached is not None and cached[0] is lvl and cached[1] == key:
        return cached[2]
    infos = [n.__dict__["_fw_dual"] for n in nodes]
    tangents = [t for _, t, _ in infos]
    keep = is_grad_enabled() and (outer or any(t._requires_grad for t in tangents))
    try:
        out = linearize([y], [_handle(n) for n in nodes], keep)(tangents)[0]
    except RuntimeError as err:
        if "modified by an inplace operation" not in str(err):
            raise
        raise RuntimeError("unpack_dual: tidal computes tangents from the recorded graph when they are unpacked, "
                           "and a tensor this one's tangent needs was modified in place after it was used. Unpack "
                           f"the tangent before the in-place write. ({err})") from None
    if out is None:  # y depends on the duals only through ops without a derivative
        out = hooks.zeros_like(y)
    y.__dict__["_fw_cache"] = (lvl, key, out)
    return out


def _dual_handle(dual: Tensor) -> Tensor:
    """The tensor autograd.grad captures a fresh dual's gradient through (see _handle)."""
    return _handle(dual.grad_fn)


def _outer(outputs: Sequence, lvl: _Level) -> bool:
    """Whether any of `outputs` reaches a leaf or another level's dual (so results must stay differentiable)."""
    for o in outputs:
        found, leaf = _reached(o)
        if leaf or any(other is not lvl for other in found):
            return True
    return False


# -- the transpose trick ------------------------------------------------------------------------
def linearize(outputs: Sequence[Tensor], inputs: Sequence[Tensor], create_graph: bool) -> Callable:
    """A function mapping tangents of `inputs` (None: zero) to the tangents J t of `outputs` (None where an
    output does not depend on the inputs), built from one reverse pass with create_graph; each call is one
    reverse pass over that pass's graph."""
    outs = [(k, in_graph(o)) for k, o in enumerate(outputs) if o._requires_grad]
    dummies = [hooks.zeros_like(o).requires_grad_(True) for _, o in outs]
    TRANSPOSING[0] += 1  # custom Functions that define only jvp may be transposed in this pass
    try:
        with enable_grad(), _quiet([o for _, o in outs]):
            back = _grad([o for _, o in outs], [in_graph(t) for t in inputs], dummies, retain_graph=True,
                         create_graph=True, allow_unused=True) if outs else (None,) * len(inputs)
    finally:
        TRANSPOSING[0] -= 1
    live = [j for j, b in enumerate(back) if b is not None and b._requires_grad]
    reached = [False] * len(outputs)
    if live:  # an output is reached where its dummy is in the graph of some b
        seen = {id(d) for d in dummies}
        hit = _leaves_hit([back[j] for j in live], seen)
        for (k, _), d in zip(outs, dummies):
            reached[k] = id(d) in hit

    def apply(tangents: Sequence) -> list:
        found = [None] * len(dummies)
        pairs = [(in_graph(back[j]), tangents[j]) for j in live if tangents[j] is not None]
        if pairs:
            bs = [b for b, _ in pairs]
            ts = [t if t.dtype is b.dtype else t.to(b.dtype) for b, t in pairs]
            with enable_grad(), _quiet(bs):
                found = _grad(bs, dummies, ts, retain_graph=True, create_graph=create_graph, allow_unused=True)
        res = [hooks.zeros_like(o) if hit else None for o, hit in zip(outputs, reached)]
        for (k, _), g in zip(outs, found):
            if g is not None:
                res[k] = g if create_graph else g.detach()
        return res
    return apply


def in_graph(t: Tensor) -> Tensor:
    """`t`, or where it requires grad for forward AD's sake alone (requires_grad False, so autograd.grad would
    refuse it) an alias in the same place of its graph that reports requires_grad."""
    if t.__class__ is not Tensor or "_fw_only" not in t.__dict__:
        return t
    alias = Tensor._make(t._v, t.dtype, t.device, t._vm)
    alias._requires_grad, alias.grad_fn, alias._output_nr = True, t.grad_fn, t._output_nr
    return alias


def _leaves_hit(roots: list, wanted: set) -> set:
    """The ids of the leaves among `wanted` whose accumulators the graphs of `roots` reach."""
    hit = {id(r) for r in roots if id(r) in wanted}
    hit.update(id(v) for v in leaves_reached(roots_of(roots)) if id(v) in wanted)
    return hit


@contextlib.contextmanager
def _quiet(roots: Sequence[Tensor]):
    """For one internal reverse pass from `roots`: the user's hooks (tensor hooks, retain_grad, node hooks)
    stay silent, as torch's forward mode never runs them. (The pass, an autograd.grad, runs only the nodes
    from which its inputs can be reached, and their formulas skip the gradients that cannot reach them.)"""
    saved = []
    try:
        for node in walk([gradient_edge(r) for r in roots]):
            if isinstance(node, AccumulateGrad):
                hooks = node.variable.__dict__.pop("_hooks_list", None)
                if hooks is not None:
                    saved.append((node, hooks))
            if node._pre_hooks or node._hooks:
                saved.append((node, (node._pre_hooks, node._hooks)))
                node._pre_hooks, node._hooks = {}, ()
        yield
    finally:
        for node, old in reversed(saved):
            if isinstance(old, list):
                node.variable.__dict__["_hooks_list"] = old
            else:
                node._pre_hooks, node._hooks = old


graph._carry_duals = _carry_tangents  # graph.record calls it while a level is live (see its hook there)
