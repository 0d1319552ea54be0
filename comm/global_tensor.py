"""GlobalTensor: one logical tensor spread over the ranks of a placement, as OneFlow's.

Each rank holds a local shard (a Tensor) and knows the placement, the nd-sbp and the global
shape. Ops on global tensors go through `dispatch`: it looks up the op's SBP signatures (the
rule of the family its record declares, `sbp=`: tidal.comm.sbp_rules), picks the one needing
the fewest bytes of boxing, boxes the inputs (tidal.comm.boxing), runs the LOCAL op on the
shards and wraps the outputs with the signature's sbp. An op without signatures runs on
broadcast inputs and gives a broadcast output (always right, slower). Autograd runs on the shards
with the ordinary engine: boxing steps are autograd Functions, and a broadcast input feeding a
non-broadcast output gets its gradient all-reduced.
"""
from __future__ import annotations

import numpy as np

from .. import ops
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Size, Tensor
from . import boxing
from .placement_sbp import Placement, SbpKind, broadcast
from .process_group import default_group, is_initialized
from .sbp_rules import Call, Sig, rule_for

__all__ = ["GlobalTensor", "from_local", "dispatch", "distribute_parameters"]


# -- checking what the user gave ---------------------------------------------------------------------
def _check_placement(placement, name: str) -> Placement:
    if not isinstance(placement, Placement):
        raise TypeError(f"{name}(): argument 'placement' must be tidal.placement, not {type(placement).__name__}")
    if not is_initialized():
        raise RuntimeError(f"{name}(): global tensors need the process group: call "
                           "tidal.comm.init_process_group() first (or start with python -m tidal.comm.launch)")
    world = default_group()
    ranks = placement.flat_ranks()
    if max(ranks) >= world.size():
        raise RuntimeError(f"{name}(): {placement} names rank {max(ranks)} but the job has only {world.size()} "
                           f"ranks (0..{world.size() - 1})")
    if world.rank() not in ranks:
        raise RuntimeError(f"{name}(): this process (rank {world.rank()}) is not in {placement}; every rank "
                           "of a global tensor's placement runs its ops, and only those")
    return placement


def _check_sbp(sbp, placement: Placement, ndim: int, name: str) -> tuple:
    sbps = tuple(sbp) if isinstance(sbp, (tuple, list)) else (sbp,)
    if not sbps or not all(isinstance(s, SbpKind) for s in sbps):
        raise TypeError(f"{name}(): sbp must be a tidal.sbp (split(dim), broadcast, partial_sum) or a tuple of "
                        f"them, got {sbp!r}")
    if len(sbps) != placement.ndim:
        raise RuntimeError(f"{name}(): {placement} is a {placement.ndim}-D grid, so sbp needs {placement.ndim} "
                           f"entries, got {len(sbps)}")
    for s in sbps:
        if s.is_split and s.dim >= ndim:
            raise RuntimeError(f"{name}(): split dim {s.dim} is out of range for a tensor with {ndim} dims")
    return sbps


def _global_shape(local_shape, sbp: tuple, placement: Placement) -> tuple:
    shape = list(local_shape)
    for axis, s in enumerate(sbp):
        if s.is_split:
            shape[s.dim] *= placement.hierarchy[axis]
    return tuple(shape)


def _grad_sbp(sbp: tuple) -> tuple:
    return tuple(broadcast if s.is_partial else s for s in sbp)


def from_local(local: Tensor, placement: Placement, sbp) -> "GlobalTensor":
    """`local` as this rank's part of a global tensor: its shard (split), the whole value (broadcast), or a
    summand (partial_sum). Every rank's part must have the same shape."""
    if not isinstance(local, Tensor):
        raise TypeError(f"to_global(): expected a tidal.Tensor, got {type(local).__name__}")
    _check_placement(placement, "to_global")
    sbp = _check_sbp(sbp, placement, local.dim(), "to_global")
    return GlobalTensor(local, placement, sbp, _global_shape(local.shape, sbp, placement))


# -- the dispatcher ------------------------------------------------------------------------------------
def _walk(obj, visit):
    """`obj` with every GlobalTensor replaced by visit(g) (one level into lists and tuples); visit also
    sees local tensors (to reject them)."""
    if isinstance(obj, (GlobalTensor, Tensor)):
        return visit(obj)
    if isinstance(obj, (list, tuple)) and any(isinstance(o, (GlobalTensor, Tensor)) for o in obj):
        return type(obj)(visit(o) if isinstance(o, (GlobalTensor, Tensor)) else o for o in obj)
    return obj


def _substitute(args: tuple, kwargs: dict, visit) -> tuple:
    return tuple(_walk(a, visit) for a in args), {k: _walk(v, visit) for k, v in kwargs.items()}


def _inputs(name: str, args: tuple, kwargs: dict) -> list:
    found = []

    def visit(t):
        if not isinstance(t, GlobalTensor):
            raise TypeError(f"{name}(): expected all tensors to be global tensors, but got a local tensor of shape "
                            f"{list(t.shape)}; make it global with .to_global(placement, sbp)")
        found.append(t)
        return t
    _substitute(args, kwargs, visit)
    for g in found[1:]:
        if g.placement != found[0].placement:
            raise RuntimeError(f"{name}(): global tensors on different placements: {found[0].placement} and "
                               f"{g.placement}")
    return found


def _fits(sig: Sig, shapes: list, n: int) -> bool:
    if len(sig.ins) != len(shapes):
        return False
    return all(not s.is_split or (s.dim < len(shape) and _parts_fit(shape[s.dim], n, sig.parts))
               for s, shape in zip(sig.ins, shapes))


def _parts_fit(size: int, n: int, parts: str) -> bool:
    """Whether a dim of `size` split over n ranks has parts a signature of kind `parts` holds for."""
    if size % n == 0:
        return parts != "nonempty" or size > 0
    return parts == "any" or (parts == "nonempty" and boxing.chunk_span(size, n, n - 1)[1] > 0)


def _nbytes(g: "GlobalTensor") -> int:
    return g._local.numel() * g.dtype.itemsize


def _cost(g: "GlobalTensor", src: SbpKind, dst: SbpKind, n: int) -> float:
    """The boxing cost of one axis; moving an uneven split to another dim is a gather then a slice (so, as
    torch's DTensor does, an op that cannot keep an uneven split gathers it rather than moving it)."""
    if src.is_split and dst.is_split and src != dst and (g._shape[src.dim] % n or g._shape[dst.dim] % n):
        return boxing.step_cost(_nbytes(g), src, broadcast, n)
    return boxing.step_cost(_nbytes(g), src, dst, n)


def _choose(call: Call, sigs: list, placement: Placement) -> list:
    """Per grid axis, the cheapest signature that fits the inputs' shapes (everything broadcast if none)."""
    everything_broadcast = Sig((broadcast,) * len(call.inputs), broadcast)
    chosen = []
    for axis, n in enumerate(placement.hierarchy):
        options = [everything_broadcast] + [sig for sig in sigs if _fits(sig, call.shapes, n)]  # ties: B
        costs = [sum(_cost(g, g.sbp[axis], want, n) for g, want in zip(call.inputs, sig.ins)) for sig in options]
        chosen.append(options[costs.index(min(costs))])
    if placement.ndim > 1 and not _nested_fit(call, chosen, placement):
        chosen = [everything_broadcast] * placement.ndim
    return chosen


def _nested_fit(call: Call, chosen: list, placement: Placement) -> bool:
    """Whether splits of one dim by several grid axes still give parts the chosen signatures hold for."""
    parts = {sig.parts for sig in chosen if any(s.is_split for s in sig.ins)}
    for i, shape in enumerate(call.shapes):
        nd = tuple(sig.ins[i] for sig in chosen)
        if "even" in parts and not _divides(shape, nd, placement):
            return False
        if "nonempty" in parts and any(0 in [size for d, size in enumerate(boxing.shard_shape(shape, placement, nd, r))
                                             if any(s.is_split and s.dim == d for s in nd)]
                                       for r in placement.flat_ranks()):
            return False
    return True


def _divides(shape: tuple, nd: tuple, placement: Placement) -> bool:
    parts: dict = {}
    for axis, s in enumerate(nd):
        if s.is_split:
            parts[s.dim] = parts.get(s.dim, 1) * placement.hierarchy[axis]
    return all(shape[d] % k == 0 for d, k in parts.items())


def _split_sizes(call: Call, chosen: list) -> dict:
    """The global size of each output split dim whose signature holds for uneven parts: the size of the
    input dim it comes from (such signatures keep it), as the local sizes cannot tell it."""
    sizes = {}
    for sig in chosen:
        if sig.out.is_split and sig.parts != "even":
            i = next(i for i, s in enumerate(sig.ins) if s.is_split)
            sizes[sig.out.dim] = call.shapes[i][sig.ins[i].dim]
    return sizes


def _wrap(result, placement: Placement, sbp: tuple, sizes: dict | None = None):
    if isinstance(result, Tensor):
        shape = list(_global_shape(result.shape, sbp, placement))
        for d, size in (sizes or {}).items():
            shape[d] = size
        return GlobalTensor(result, placement, sbp, tuple(shape))
    if isinstance(result, tuple) and hasattr(result, "_fields"):
        return type(result)(*(_wrap(r, placement, sbp, sizes) for r in result))
    if isinstance(result, (list, tuple)):
        return type(result)(_wrap(r, placement, sbp, sizes) for r in result)
    return result


IMPLICIT_REPLICATION = [False]   # set by DTensor's implicit_replication(): local tensors count as broadcast


def _replicate_locals(args: tuple, kwargs: dict) -> tuple:
    """`args`/`kwargs` with each local tensor made a broadcast global tensor on the placement of the first
    global one (implicit_replication)."""
    found = []
    _substitute(args, kwargs, lambda t: found.append(t) or t)
    placement = next((t.placement for t in found if isinstance(t, GlobalTensor)), None)
    if placement is None:
        return args, kwargs
    return _substitute(args, kwargs, lambda t: t if isinstance(t, GlobalTensor) else
                       GlobalTensor(t, placement, (broadcast,) * placement.ndim, tuple(t.shape)))


def dispatch(name: str, fn, args: tuple, kwargs: dict):
    """Run op `name` (local function `fn`) on global tensors among `args`/`kwargs`."""
    if IMPLICIT_REPLICATION[0]:
        args, kwargs = _replicate_locals(args, kwargs)
    composite = _COMPOSITES.get(name)
    if composite is not None:
        result = composite(*args, **kwargs)
        if result is not NotImplemented:
            return result
    inputs = _inputs(name, args, kwargs)
    if not inputs:
        return fn(*args, **kwargs)
    if kwargs.get("out") is not None:
        raise RuntimeError(f"{name}(): out= is not supported with global tensors")
    if _is_inplace(name):
        return _inplace(name, fn, args, kwargs)
    placement = inputs[0].placement
    call = Call(name, args, kwargs, inputs, [tuple(g.shape) for g in inputs])
    rule = rule_for(name)
    chosen = _choose(call, rule(call) if rule is not None else [], placement)
    ins = [tuple(sig.ins[i] for sig in chosen) for i in range(len(inputs))]
    out = tuple(sig.out for sig in chosen)
    rewrite = next((sig.rewrite for sig in chosen if sig.rewrite is not None), None)
    grad = is_grad_enabled()
    shards = []
    for g, want in zip(inputs, ins):
        shard = boxing.box(g._local, placement, g.sbp, want, g._shape)
        if grad and shard.requires_grad:
            shard = boxing.reduce_gradient(shard, placement, [axis for axis, (s, o) in enumerate(zip(want, out))
                                                              if s is broadcast and o is not broadcast])
        shards.append(shard)
    feed = iter(shards)
    local_args, local_kwargs = _substitute(args, kwargs, lambda g: next(feed))
    if rewrite is not None:
        local_args, local_kwargs = rewrite(local_args, local_kwargs, out, placement.hierarchy)
    result = fn(*local_args, **local_kwargs)
    finishing = [axis for axis, sig in enumerate(chosen) if sig.finish is not None]
    if finishing:
        result = chosen[finishing[0]].finish(result, shards[0], _axes_group(placement, finishing))
    return _wrap(result, placement, out, _split_sizes(call, chosen))


def _axes_group(placement: Placement, axes: list):
    """The process group of the ranks that share this rank's coordinates on every grid axis but `axes`."""
    coords = placement.coords(default_group().rank())
    index = tuple(slice(None) if axis in axes else c for axis, c in enumerate(coords))
    return boxing.line_group(tuple(placement.ranks[index].ravel().tolist()))


_INPLACE_DUNDERS = {"__iadd__": "__add__", "__isub__": "__sub__", "__imul__": "__mul__", "__itruediv__": "__truediv__",
                    "__ifloordiv__": "__floordiv__", "__imod__": "__mod__", "__ipow__": "__pow__",
                    "__iand__": "__and__", "__ior__": "__or__", "__ixor__": "__xor__", "__setitem__": None}


def _is_inplace(name: str) -> bool:
    return name in _INPLACE_DUNDERS or (name.endswith("_") and not name.endswith("__"))


def _inplace(name: str, fn, args: tuple, kwargs: dict):
    """An in-place op: the out-of-place op (or, without one, the op on broadcast copies) redistributed to
    the target's sbp and copied into its shard, so autograd's in-place checks apply to the shard."""
    target = args[0]
    if not isinstance(target, GlobalTensor):
        raise TypeError(f"{name}(): cannot write a global result into a local tensor")
    twin = _INPLACE_DUNDERS.get(name, name[:-1])
    if twin is not None and rule_for(twin) is not None and hasattr(Tensor, twin):
        result = dispatch(twin, getattr(Tensor, twin), args, kwargs)
    else:
        full = {id(g): boxing.box(g._local, g.placement, g.sbp, (broadcast,) * g.placement.ndim, g._shape) for g in
                _inputs(name, args, kwargs)}
        local_args, local_kwargs = _substitute(args, kwargs, lambda g: full[id(g)])
        scratch = local_args[0].clone()
        fn(scratch, *local_args[1:], **local_kwargs)
        result = GlobalTensor(scratch, target.placement, (broadcast,) * target.placement.ndim, target._shape)
    if tuple(result.shape) != target._shape:
        raise RuntimeError(f"{name}(): output with shape {list(target._shape)} doesn't match the broadcast shape "
                           f"{list(result.shape)}")
    target._local.copy_(boxing.box(result._local, target.placement, result.sbp, target.sbp, target._shape))
    return target


def _mean(input, dim=None, keepdim: bool = False, *, dtype=None):
    """mean of a partial sum as sum / count, so it stays a partial sum; other layouts take the "mean" signatures
    (torch's: a split of a reduced dim gives Partial("avg") when it divides evenly, else it is gathered)."""
    if not isinstance(input, GlobalTensor) or not (dtype or input.dtype).is_floating_point or \
            not any(s.is_partial and s.op == "sum" for s in input.sbp):
        return NotImplemented
    dims = range(input.dim()) if dim is None or dim == () else ([dim] if isinstance(dim, int) else dim)
    count = 1
    for d in dims:
        count *= input._shape[d % max(input.dim(), 1)]
    total = input.sum(dim, keepdim, dtype=dtype) if dim is not None else input.sum(dtype=dtype)
    return total / count


def _copy_(target, src, non_blocking: bool = False):
    """copy_ between global tensors on one placement: the source redistributed to the target's layout and
    copied into its shard (load_state_dict of a DTensor state dict); anything else takes the general path."""
    if not (isinstance(target, GlobalTensor) and isinstance(src, GlobalTensor) and src.placement == target.placement
            and src._shape == target._shape):
        return NotImplemented
    target._local.copy_(boxing.box(src._local, src.placement, src.sbp, target.sbp, src._shape))
    return target


_COMPOSITES = {"mean": _mean, "copy_": _copy_}


# -- the class ------------------------------------------------------------------------------------------
class GlobalTensor:
    """A logical tensor over `placement`: this rank's shard `to_local()`, its `sbp` and its global `shape`."""

    __slots__ = ("_local", "placement", "sbp", "_shape", "__weakref__")
    __array_priority__ = 1001
    is_global = True

    def __init__(self, local: Tensor, placement: Placement, sbp: tuple, shape: tuple):
        self._local, self.placement, self.sbp, self._shape = local, placement, tuple(sbp), tuple(shape)

    # -- metadata ---------------------------------------------------------------------------------
    @property
    def shape(self) -> Size:
        """The global shape."""
        return Size(self._shape)

    def size(self, dim: int | None = None):
        """The global shape, or the global size of one dimension."""
        return Size(self._shape) if dim is None else self._shape[self._local._dim(dim, "size")]

    def dim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    ndimension = dim

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self._shape)

    def numel(self) -> int:
        """The global number of elements."""
        return Size(self._shape).numel()

    nelement = numel

    @property
    def dtype(self):
        """The element type."""
        return self._local.dtype

    @property
    def device(self):
        """The device of this rank's shard."""
        return self._local.device

    def is_floating_point(self) -> bool:
        """Whether the dtype is a floating type."""
        return self._local.is_floating_point()

    def element_size(self) -> int:
        """Bytes per element."""
        return self._local.element_size()

    # -- local <-> global -----------------------------------------------------------------------------
    def to_local(self) -> Tensor:
        """This rank's shard."""
        return self._local

    def to_global(self, placement: Placement | None = None, sbp=None) -> "GlobalTensor":
        """The same logical tensor with another sbp (boxing); the placement cannot change (yet)."""
        placement = self.placement if placement is None else placement
        if placement != self.placement:
            raise RuntimeError(f"to_global(): moving a global tensor from {self.placement} to {placement} is not "
                               "supported yet")
        sbp = self.sbp if sbp is None else _check_sbp(sbp, placement, self.dim(), "to_global")
        if not _divides(self._shape, sbp, placement):
            raise RuntimeError(f"to_global(): shape {list(self._shape)} cannot be split evenly as "
                               f"{tuple(s.short() for s in sbp)} over {placement}")
        return self._relayout(sbp)

    def _relayout(self, sbp: tuple) -> "GlobalTensor":
        # splits that do not divide give torch.chunk's parts (DTensor's uneven shards)
        return GlobalTensor(boxing.box(self._local, self.placement, self.sbp, sbp, self._shape), self.placement, sbp,
                            self._shape)

    def _full(self) -> Tensor:
        return boxing.box(self._local, self.placement, self.sbp, (broadcast,) * self.placement.ndim, self._shape)

    def numpy(self) -> np.ndarray:
        """The whole value (gathered on every rank)."""
        return self._full().numpy()

    def item(self):
        """The single value, as a Python number."""
        return self._full().item()

    def tolist(self):
        """The whole value as nested lists."""
        return self._full().tolist()

    def __array__(self, dtype=None, copy=None):
        arr = self.detach().numpy()
        return arr if dtype is None else arr.astype(dtype)

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(self._full())

    def __len__(self) -> int:
        if not self._shape:
            raise TypeError("len() of a 0-d tensor")
        return self._shape[0]

    def __hash__(self) -> int:
        return id(self)

    def __repr__(self) -> str:
        text = repr(self._full().detach())
        sbp = "(" + ", ".join(map(repr, self.sbp)) + ("," if len(self.sbp) == 1 else "") + ")"
        extra = f"placement={self.placement}, sbp={sbp}"
        if self.grad_fn is not None:
            extra += f", grad_fn=<{type(self.grad_fn).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        if "dtype=" in text:
            head, dtype_part = text[:-1].rsplit(", dtype=", 1)
            return f"{head}, {extra}, dtype={dtype_part})"
        return f"{text[:-1]}, {extra})"

    __str__ = __repr__

    # -- autograd: on the shard ---------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether gradients are recorded for this tensor."""
        return self._local.requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        self._local.requires_grad = value

    @property
    def _requires_grad(self) -> bool:
        """Whether the shard is in a graph (forward AD's tensors too: what internal code reads)."""
        return self._local._requires_grad

    def requires_grad_(self, requires_grad: bool = True) -> "GlobalTensor":
        """Set requires_grad in place; returns self."""
        self._local.requires_grad_(requires_grad)
        return self

    @property
    def grad(self) -> "GlobalTensor | None":
        """The gradient: split like this tensor, broadcast where this tensor is partial."""
        g = self._local.grad
        return None if g is None else GlobalTensor(g, self.placement, _grad_sbp(self.sbp), self._shape)

    @grad.setter
    def grad(self, value) -> None:
        if value is None:
            self._local.grad = None
        else:
            self._local.grad = boxing.box(value._local, value.placement, value.sbp, _grad_sbp(self.sbp), self._shape)

    @property
    def grad_fn(self):
        """The shard's grad_fn."""
        return self._local.grad_fn

    @property
    def is_leaf(self) -> bool:
        """Whether the shard is a leaf of the graph."""
        return self._local.is_leaf

    def retain_grad(self) -> None:
        """Keep .grad of this non-leaf tensor."""
        self._local.retain_grad()

    def register_hook(self, hook):
        """Call hook(grad) with this tensor's (global) gradient; a global tensor it returns replaces it."""
        def on_shard(grad):
            out = hook(GlobalTensor(grad, self.placement, _grad_sbp(self.sbp), self._shape))
            return None if out is None else boxing.box(out._local, out.placement, out.sbp, _grad_sbp(self.sbp),
                                                          self._shape)
        return self._local.register_hook(on_shard)

    def backward(self, gradient: "GlobalTensor | None" = None, retain_graph=None, create_graph: bool = False,
                 inputs=None) -> None:
        """Backpropagate on every rank (a scalar seeds 1 everywhere: the gradient of P is B)."""
        local_grad = None
        if gradient is not None:
            if not isinstance(gradient, GlobalTensor):
                raise TypeError("backward(): the gradient of a global tensor must be a global tensor")
            local_grad = boxing.box(gradient._local, gradient.placement, gradient.sbp, _grad_sbp(self.sbp),
                                   self._shape)
        local_inputs = None if inputs is None else [g._local for g in inputs]
        self._local.backward(local_grad, retain_graph=retain_graph, create_graph=create_graph, inputs=local_inputs)

    def detach(self) -> "GlobalTensor":
        """The same value outside the autograd graph."""
        return GlobalTensor(self._local.detach(), self.placement, self.sbp, self._shape)

    def as_parameter(self, requires_grad: bool = True) -> "GlobalParameter":
        """This value as a module parameter (what `nn.Parameter(global_tensor)` returns)."""
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require gradients")
        return GlobalParameter(self._local.detach().requires_grad_(requires_grad), self.placement, self.sbp,
                               self._shape)

    @property
    def data(self) -> "GlobalTensor":
        """The value outside the autograd graph, sharing memory."""
        return GlobalTensor(self._local.data, self.placement, self.sbp, self._shape)

    @data.setter
    def data(self, value: "GlobalTensor") -> None:
        """`p.data = new` (module.to_empty, .to(): the shard takes the new shard's memory, dtype and device; the
        object, and so a parameter's identity, stays)."""
        if not isinstance(value, GlobalTensor) or value.placement != self.placement:
            raise RuntimeError("data: expected a global tensor on the same placement (assigning a local tensor to a "
                               "global one's data is not supported)")
        self._local.data = value._local
        self.sbp, self._shape = value.sbp, value._shape

    # -- every other method: through the dispatcher ------------------------------------------------------------
    def __getattr__(self, name: str):
        member = getattr(Tensor, name, None) if not name.startswith("_") else None
        if member is None:
            raise AttributeError(f"'GlobalTensor' object has no attribute '{name}'")
        if isinstance(member, property):
            return dispatch(name, member.fget, (self,), {})
        def method(*args, **kwargs):
            return dispatch(name, member, (self,) + args, kwargs)
        return method


def _operator(name: str):
    local = getattr(Tensor, name)

    def op(self, *args, **kwargs):
        return dispatch(name, local, (self,) + args, kwargs)
    op.__name__ = name
    return op


for _name in ("__add__", "__radd__", "__iadd__", "__sub__", "__rsub__", "__isub__", "__mul__", "__rmul__", "__imul__",
              "__truediv__", "__rtruediv__", "__itruediv__", "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__",
              "__pow__", "__rpow__", "__matmul__", "__rmatmul__", "__neg__", "__pos__", "__abs__", "__invert__",
              "__and__", "__or__", "__xor__", "__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__",
              "__getitem__", "__setitem__"):
    if hasattr(Tensor, _name):
        setattr(GlobalTensor, _name, _operator(_name))


# -- parameters of nn modules ----------------------------------------------------------------------------
class GlobalParameter(GlobalTensor):
    """A global tensor registered as a Module parameter: its shard is the autograd leaf."""

    __slots__ = ()
    is_parameter = True

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def distribute_parameters(module, placement: Placement, sbps: dict | None = None):
    """Replace `module`'s parameters (the same full value on every rank) by global ones: `sbps` maps dotted
    names to sbp (default broadcast). E.g. a tensor-parallel MLP: {'0.weight': split(0), '0.bias': split(0),
    '2.weight': split(1)} for Sequential(Linear, ReLU, Linear). Returns `module`."""
    sbps = dict(sbps or {})
    for name, param in list(module.named_parameters()):
        owner = module
        *path, leaf = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        sbp = sbps.pop(name, broadcast)
        full = from_local(param.detach(), placement, (broadcast,) * placement.ndim)
        setattr(owner, leaf, full.to_global(placement, sbp).as_parameter(param.requires_grad))
    if sbps:
        raise KeyError(f"distribute_parameters(): no parameters named {sorted(sbps)}")
    return module


def _install() -> None:
    """Let tidal's public functions hand calls with global tensors to `dispatch`."""
    ops.global_dispatch = dispatch


_install()
