"""torch.func's differentiation transforms: grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian.

Each transform runs the function on its own fresh leaves (or, for an argument that already
requires grad, on a view of it, so an outer transform or the caller's autograd still sees through)
and differentiates with `autograd.grad`, building the graph of the gradient itself while grad mode
is on, so transforms nest: grad(grad(f)), jacrev(jacrev(f)), vmap(grad(f)). A result that depends
on nothing outside the transform is returned detached, as torch.func does. Forward mode (jvp,
jacfwd, linearize) runs on dual tensors of tidal.autograd.forward_ad at a level of its own.
"""
from __future__ import annotations

from typing import Any, Callable

from .. import ops
from ..autograd import enable_grad, is_grad_enabled
from ..autograd import forward_ad as fw
from .autograd_functional import _vjp_raw
from ..autograd.graph import AccumulateGrad, _seq
from ..autograd.graph_walk import walk
from ..tensor import Tensor
from . import batching
from .batching import TENSORS
from ._pytree import tree_flatten, tree_map, tree_unflatten

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "linearize", "functionalize"]


class _Level:
    """One transform's view of its inputs: lifted leaves, and the rule for detaching results."""

    def __init__(self) -> None:
        self.start = next(_seq)
        self.create_graph = is_grad_enabled()
        self.own: set = set()

    def lift(self, t):
        """A differentiable stand-in for `t` (non-tensors pass through); inside vmap, for its batched value."""
        if batching.LEVELS:
            return batching.lift(t, self._lift_plain)
        return self._lift_plain(t)

    def _lift_plain(self, t):
        if not isinstance(t, Tensor):
            return t
        if not t.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        if t._requires_grad and self.create_graph:
            return t.view_as(t)  # stays connected to the outer graph
        leaf = t.detach().requires_grad_(True)
        self.own.add(id(leaf))
        return leaf

    def _reaches_outside(self, t: Tensor) -> bool:
        """Whether `t`'s graph reaches a leaf this transform did not make, or a node recorded before it."""
        return any(id(node.variable) not in self.own if isinstance(node, AccumulateGrad) else node.seq < self.start
                   for node in walk([t.grad_fn]))

    def settle(self, tree) -> None:
        """Build the gradient's own graph only if the function's graph reaches past this transform (an
        outer transform or the caller's autograd may differentiate it); otherwise it would be dropped."""
        leaves = [t for t in tree_flatten(tree)[0] if isinstance(t, TENSORS) and t._requires_grad]
        self.create_graph = self.create_graph and any(self._reaches_outside(t) for t in leaves)

    def finish(self, tree):
        """`tree` with each tensor detached unless its graph reaches past this transform."""
        def fix(t):
            if isinstance(t, TENSORS) and t._requires_grad and not (self.create_graph and self._reaches_outside(t)):
                return t.detach()
            return t
        return tree_map(fix, tree)


def _argnums_tuple(argnums, nargs: int, fn: str) -> tuple:
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{fn}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{fn}: argnums must be int or Tuple[int, ...], got: {type(argnums)}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnums={n}, but only {nargs} positional inputs")
    return tuple(n % nargs for n in nums)


def _lift_args(lift: Callable, args: tuple, argnums, fn: str) -> tuple:
    """(args with each tensor of the differentiated ones replaced by lift(tensor), the lifted trees as
    given by argnums)."""
    nums = _argnums_tuple(argnums, len(args), fn)
    args = list(args)
    for n in nums:
        args[n] = tree_map(lift, args[n])
    chosen = tuple(args[n] for n in nums) if isinstance(argnums, tuple) else args[nums[0]]
    return tuple(args), chosen


def _tensor_leaves(tree, message: str) -> tuple:
    """(leaves, spec) of the pytree `tree`, whose leaves must all be tensors (else RuntimeError(message + the
    type found), torch.func's wording for each transform)."""
    leaves, spec = tree_flatten(tree)
    for x in leaves:
        if not isinstance(x, TENSORS):
            raise RuntimeError(f"{message}{type(x)}")
    return leaves, spec


def _split_aux(out, has_aux: bool, fn: str) -> tuple:
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn}(f, ...)(*args): output of function f should be a tuple: (output, aux) if "
                           "has_aux is True")
    return out


def _grads_for(level: _Level, outputs: list, cotangents: list, chosen) -> Any:
    """The gradient of `outputs` (weighted by cotangents) for every tensor of the tree `chosen`."""
    leaves, spec = tree_flatten(chosen)
    tensors = [x for x in leaves if isinstance(x, TENSORS)]
    grads = iter(_vjp(tuple(outputs), tuple(tensors), tuple(cotangents), level.create_graph))
    out = []
    for x in leaves:
        if isinstance(x, TENSORS):
            g = next(grads)
            out.append(ops.zeros_like(x) if g is None else g)
        else:
            out.append(None)
    return tree_unflatten(out, spec)


def _differentiable_outputs(leaves: list) -> None:
    """torch's refusal (vjp, and jacrev, which runs it) of an output no gradient can flow from."""
    for o in leaves:
        if not (o.dtype.is_floating_point or o.dtype.is_complex):
            raise RuntimeError("vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype torch.{o.dtype.name}")


def _vjp(outputs: tuple, inputs: tuple, cotangents: tuple, create_graph: bool) -> tuple:
    """_vjp_raw, on batched values inside vmap (one backward pass gives each sample's gradient)."""
    if batching.LEVELS:
        return batching.vjp(_vjp_raw, outputs, inputs, cotangents, create_graph)
    return _vjp_raw(outputs, inputs, cotangents, create_graph)


def grad_and_value(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning (gradient of func's scalar output with respect to `argnums`, the output)."""
    def wrapper(*args, **kwargs):
        level = _Level()
        with enable_grad():
            args, chosen = _lift_args(level.lift, args, argnums, "grad_and_value")
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "grad_and_value")
            if not isinstance(output, TENSORS):
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                                   f"{type(output)}")
            if output.dim() != 0:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got "
                                   f"tensor with {output.dim()} dims. Maybe you wanted to use the vjp or jacrev "
                                   "APIs instead?")
            level.settle(output)
            grads = _grads_for(level, [output], [ops.ones_like(output)], chosen)
        grads, output = level.finish(grads), level.finish(output)
        if has_aux:
            return grads, (output, level.finish(aux))
        return grads, output
    return wrapper


def grad(func: Callable, argnums=0, has_aux: bool = False) -> Callable:
    """A function returning the gradient of func's scalar output with respect to the `argnums` inputs."""
    both = grad_and_value(func, argnums, has_aux)

    def wrapper(*args, **kwargs):
        grads, value = both(*args, **kwargs)
        return (grads, value[1]) if has_aux else grads
    return wrapper


def vjp(func: Callable, *primals, has_aux: bool = False) -> tuple:
    """(func(*primals), vjp_fn[, aux]); vjp_fn(cotangents) gives a tuple of gradients, one per primal."""
    level = _Level()
    with enable_grad():
        lifted = tuple(tree_map(level.lift, p) for p in primals)
        output, aux = _split_aux(func(*lifted), has_aux, "vjp")
    level.settle(output)
    out_leaves, out_spec = _tensor_leaves(output, "vjp(f, *primals): Expected f to return a tensor or a pytree of "
                                                  "tensors, got ")
    _differentiable_outputs(out_leaves)

    def vjp_fn(cotangents):
        cot_leaves, cot_spec = tree_flatten(cotangents)
        if len(cot_leaves) != len(out_leaves):
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of "
                               f"outputs to the function. cotangents: {cot_spec}, primal output: {out_spec}")
        for c, o in zip(cot_leaves, out_leaves):
            if c.shape != o.shape:
                raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of {c.shape} and output[0] has "
                                   f"a shape of {o.shape}.")
        with enable_grad():
            grads = _grads_for(level, out_leaves, cot_leaves, lifted)
        return level.finish(grads)

    result = (level.finish(output), vjp_fn)
    return result + (level.finish(aux),) if has_aux else result


def _dualize(lvl, t, tangent, fn: str):
    """`t` as a dual tensor of level `lvl` (non-tensors pass through; make_dual refuses an integer one with torch's
    ValueError); inside vmap, the tensor under a batched value (or one with a batched tangent) made dual, wrapped
    again."""
    if batching.LEVELS and (isinstance(t, batching.BatchedTensor) or isinstance(tangent, batching.BatchedTensor)):
        return batching.dualize(t, tangent, lambda p, v: _dualize(lvl, p, v, fn))
    if not isinstance(t, Tensor):
        return t
    return fw.make_dual(t, tangent if tangent is not None else ops.zeros_like(t), level=lvl)


def _primal(t, lvl, keep: bool = True):
    """`t` without the tangent of level `lvl`, detached unless `keep` (the caller's grad mode); other leaves
    of a tree pass through."""
    if isinstance(t, batching.BatchedTensor):
        return batching.rewrap(_primal(batching.physical(t), lvl, keep))
    if not isinstance(t, Tensor):
        return t
    return fw.unpack_dual(t, level=lvl).primal if keep else t.detach()


def _linearize(out_leaves: list, duals: list, create: bool) -> Callable:
    """forward_ad.linearize over the duals' handles; inside vmap, over the plain tensors under the batched values."""
    if batching.LEVELS:
        return batching.linearize(fw.linearize, fw._dual_handle, out_leaves, duals, create)
    return fw.linearize(out_leaves, [fw._dual_handle(d) for d in duals], create)


def _outer(out_leaves: list, lvl) -> bool:
    """forward_ad._outer, on the plain tensors under batched outputs inside vmap."""
    return fw._outer([batching.physical(o) for o in out_leaves] if batching.LEVELS else out_leaves, lvl)


def jvp(func: Callable, primals, tangents, *, strict: bool = False, has_aux: bool = False) -> tuple:
    """(func(*primals), the directional derivative along `tangents`[, aux]), by forward-mode AD."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError(f"jvp(f, primals, tangents): Expected primals to be a tuple. E.g. it should be valid to "
                           f"call f(*primals).")
    p_leaves, p_spec = tree_flatten(primals)
    t_leaves, t_spec = tree_flatten(tangents)
    if len(p_leaves) != len(t_leaves):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same python "
                           f"structure. For example, if primals is a tuple of 3 tensors, tangents also must be. "
                           f"Got primals with structure {p_spec} and tangents with structure {t_spec}")
    for leaves, what in ((p_leaves, "primals"), (t_leaves, "tangents")):
        _tensor_leaves(leaves, f"jvp(f, primals, tangents): Expected {what} to only contain Tensors, got ")
    for p, t in zip(p_leaves, t_leaves):
        if p.shape != t.shape:
            raise RuntimeError(f"jvp(f, primals, tangents): Expected primals and tangents to have the same shape. "
                               f"Got primals.shape={p.shape} and tangents.shape={t.shape}")
    keep = is_grad_enabled()
    # eager tangents (computed as f's ops run) where no other transform is live; nested or under vmap, the lazy
    # level: its tangents come from the recorded graph, which the other levels' tangents flow through too
    eager = not batching.LEVELS and not fw._levels
    with enable_grad(), fw._internal_level(eager) as lvl:
        duals = [_dualize(lvl, p, t, "jvp") for p, t in zip(p_leaves, t_leaves)]
        output, aux = _split_aux(func(*tree_unflatten(duals, p_spec)), has_aux, "jvp")
        out_leaves, out_spec = _tensor_leaves(output, "jvp(f, primals, tangents): expected f(*primals) to return "
                                                      "only tensors, got unsupported type ")
        create = keep and (_outer(out_leaves, lvl) or any(t._requires_grad for t in t_leaves))
        if eager:
            res = [fw.unpack_dual(o, level=lvl).tangent for o in out_leaves]
            res = [g if g is None or create else g.detach() for g in res]
        else:
            res = _linearize(out_leaves, duals, create)(t_leaves)
        if strict and any(g is None for g in res):
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                               "This is not allowed with strict=True.")
        tangent_out = [ops.zeros_like(o) if g is None else g for o, g in zip(out_leaves, res)]
        primal_out = [_primal(o, lvl, keep) for o in out_leaves]
        aux = tree_map(lambda t: _primal(t, lvl, keep), aux)
    result = (tree_unflatten(primal_out, out_spec), tree_unflatten(tangent_out, out_spec))
    return result + (aux,) if has_aux else result


def _jacobian(func: Callable, argnums, has_aux: bool, fn: str) -> Callable:
    def wrapper(*args, **kwargs):
        level = _Level()
        with enable_grad():
            args, chosen = _lift_args(level.lift, args, argnums, fn)
            output, aux = _split_aux(func(*args, **kwargs), has_aux, fn)
            level.settle(output)
            out_leaves, out_spec = _tensor_leaves(output, f"{fn}(f, ...): Expected f to return a Tensor or a "
                                                          "pytree of Tensors, got ")
            _differentiable_outputs(out_leaves)
            in_leaves, in_spec = tree_flatten(chosen)
            jac = []
            for o in out_leaves:
                rows: list = [[] for _ in in_leaves]
                flat = o.reshape(-1)
                for k in range(flat.numel()):
                    grads = (None,) * len(in_leaves)
                    if o._requires_grad:
                        grads = _vjp((flat[k],), tuple(in_leaves), (ops.ones_like(flat[k]),), level.create_graph)
                    for j, (g, x) in enumerate(zip(grads, in_leaves)):
                        rows[j].append(ops.zeros_like(x) if g is None else g)
                blocks = [ops.stack(r).reshape(*o.shape, *x.shape) if r else
                          ops.zeros(*o.shape, *x.shape, dtype=x.dtype, device=x.device)
                          for r, x in zip(rows, in_leaves)]
                jac.append(tree_unflatten(blocks, in_spec))
        jac = level.finish(tree_unflatten(jac, out_spec))
        return (jac, level.finish(aux)) if has_aux else jac
    return wrapper


def jacrev(func: Callable, argnums=0, *, has_aux: bool = False, chunk_size: int | None = None,
           _preallocate_and_copy: bool = False) -> Callable:
    """A function returning the Jacobian of `func` with respect to `argnums`, one backward pass per output element."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jacobian(func, argnums, has_aux, "jacrev")


def jacfwd(func: Callable, argnums=0, has_aux: bool = False, *, randomness: str = "error") -> Callable:
    """A function returning the Jacobian of `func` with respect to `argnums` by forward mode: one
    Jacobian-vector product per input element, all over one linearization."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got "
                           f"{randomness}")

    def wrapper(*args, **kwargs):
        keep = is_grad_enabled()
        with enable_grad(), fw._internal_level() as lvl:
            args, chosen = _lift_args(lambda t: _dualize(lvl, t, None, "jacfwd"), args, argnums, "jacfwd")
            output, aux = _split_aux(func(*args, **kwargs), has_aux, "jacfwd")
            out_leaves, out_spec = _tensor_leaves(output, "jacfwd(f, ...): Expected f to return a Tensor or a pytree "
                                                          "of Tensors, got ")
            in_leaves, in_spec = tree_flatten(chosen)
            duals = [x for x in in_leaves if isinstance(x, TENSORS)]
            create = keep and _outer(out_leaves, lvl)
            jvp_of = _linearize(out_leaves, duals, create)
            blocks: list = [[] for _ in out_leaves]  # blocks[i][j]: d out i / d input j
            for j, x in enumerate(duals):
                cols: list = [[] for _ in out_leaves]
                basis = ops.eye(x.numel(), dtype=x.dtype, device=x.device)
                for k in range(x.numel()):
                    tangents = [basis[k].reshape(x.shape) if i == j else None for i in range(len(duals))]
                    for i, (o, g) in enumerate(zip(out_leaves, jvp_of(tangents))):
                        cols[i].append(ops.zeros_like(o) if g is None else g)
                for i, o in enumerate(out_leaves):
                    blocks[i].append(ops.stack(cols[i], -1).reshape(*o.shape, *x.shape) if cols[i] else
                                     ops.zeros(*o.shape, *x.shape, dtype=o.dtype, device=o.device))
            jac = [tree_unflatten(_fill(in_leaves, row), in_spec) for row in blocks]
            aux = tree_map(lambda t: _primal(t, lvl, keep), aux)
        jac = tree_unflatten(jac, out_spec)
        return (jac, aux) if has_aux else jac
    return wrapper


def _fill(leaves: list, tensors: list) -> list:
    """`leaves` with each tensor replaced by the next of `tensors` (non-tensors become None)."""
    it = iter(tensors)
    return [next(it) if isinstance(x, TENSORS) else None for x in leaves]


def hessian(func: Callable, argnums=0) -> Callable:
    """A function returning the Hessian of the scalar `func` with respect to `argnums`."""
    return jacfwd(jacrev(func, argnums), argnums)


def linearize(func: Callable, *primals) -> tuple:
    """(func(*primals), jvp_fn) where jvp_fn(*tangents) is the Jacobian-vector product at `primals`; func runs
    once and each jvp_fn call is one pass over the linearization."""
    keep = is_grad_enabled()
    p_leaves, p_spec = tree_flatten(primals)
    with enable_grad(), fw._internal_level() as lvl:
        duals = [_dualize(lvl, p, None, "linearize") for p in p_leaves]
        output = func(*tree_unflatten(duals, p_spec))
        out_leaves, out_spec = tree_flatten(output)
        jvp_of = _linearize(out_leaves, [d for d in duals if isinstance(d, TENSORS)], keep and _outer(out_leaves, lvl))
        output = tree_unflatten([_primal(o, lvl, keep) for o in out_leaves], out_spec)

    def jvp_fn(*tangents):
        t_leaves, t_spec = tree_flatten(tangents)
        if repr(t_spec) != repr(p_spec):
            raise RuntimeError(f"Expected the tangents {t_spec} to have the same argspec as the primals {p_spec}")
        for k, (p, t) in enumerate(zip(p_leaves, t_leaves)):
            if isinstance(p, TENSORS) and t.shape != p.shape:
                raise RuntimeError(f"tangent:{k} with shape {t.shape} in flattened pytree doesn't match the shape "
                                   f"{p.shape} of the corresponding primal.")
            if isinstance(p, TENSORS) and t.dtype is not p.dtype:
                raise RuntimeError(f"tangent:{k} with dtype {t.dtype} in flattened pytree doesn't match the dtype "
                                   f"{p.dtype} of the corresponding primal.")
        res = jvp_of([t for p, t in zip(p_leaves, t_leaves) if isinstance(p, TENSORS)])
        return tree_unflatten([ops.zeros_like(o) if g is None else g for o, g in zip(out_leaves, res)], out_spec)
    return output, jvp_fn


def functionalize(func: Callable, *, remove: str = "mutations") -> Callable:
    """`func` itself: functionalize changes how a program is traced, not what it computes, and tidal runs
    every program eagerly."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return func
