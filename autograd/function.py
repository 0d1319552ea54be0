"""Custom differentiable functions: subclass Function, write forward and backward."""
from __future__ import annotations

from ..tensor import Tensor
from .anomaly import check_nan
from . import hooks
from . import view_inplace
from .api import grad
from .grad_mode import no_grad
from .grad_mode import is_grad_enabled
from .grad_mode import enable_grad
from .dual_marks import mark_fw_only
from .graph import Node, increment_version, needs_grad


class FunctionCtx:
    """The `ctx` of a custom Function: saved tensors and flags passed from forward to backward."""

    def __init__(self):
        self._to_save: tuple = ()
        self._node: Node | None = None
        self.needs_input_grad: tuple = ()
        self.materialize_grads = True
        self._non_differentiable: set = set()
        self._dirty: tuple = ()
        self._in_jvp = False

    def save_for_forward(self, *tensors) -> None:
        """Keep tensors for `jvp`, which reads them as ctx.saved_tensors."""
        for t in tensors:
            if not (isinstance(t, Tensor) or t is None):
                raise AssertionError("save_for_forward expects all arguments to be tensors; you should save "
                                     "non-tensors as attributes on ctx.")
        self.saved_for_forward = tensors

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors for backward (checked against in-place changes when read)."""
        for k, t in enumerate(tensors):
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"save_for_backward can only save variables, but argument {k} is of type "
                                f"{type(t).__name__}")
        self._to_save = tensors

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to save_for_backward (inside jvp: those given to save_for_forward, if any)."""
        if self._in_jvp and hasattr(self, "saved_for_forward"):
            return self.saved_for_forward
        if self._node is None:
            return self._to_save
        return self._node.saved_tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that get no gradient."""
        self._non_differentiable.update(id(t) for t in tensors)

    def mark_dirty(self, *tensors) -> None:
        """Inputs the forward modified in place."""
        self._dirty = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """Whether missing output gradients are passed as zeros (default) or None."""
        self.materialize_grads = value


class _FunctionMeta(type):
    def __init__(cls, name, bases, ns):
        super().__init__(name, bases, ns)
        cls._node_cls = type(f"{name}Backward", (Node,), {"__slots__": ()})


class Function(metaclass=_FunctionMeta):
    """Base class: `forward(ctx, *args)` and `backward(ctx, *grads)` as static methods; call `.apply`."""

    def __call__(self, *args, **kwargs):
        """Calling an instance is the pre-0.4 API, which torch rejects."""
        raise RuntimeError("Legacy autograd function with non-static forward method is deprecated. Please use "
                           "new-style autograd function with static forward method. (Example: "
                           "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        """Compute the outputs (runs without recording a graph)."""
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Gradients for each forward input (None for non-tensors)."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def vjp(ctx, *grad_outputs):
        """Another name for backward: define one of them."""
        raise NotImplementedError("You must implement either the backward or vjp method for your custom "
                                  "autograd.Function to use it with backward mode AD.")

    @staticmethod
    def setup_context(ctx, inputs: tuple, output) -> None:
        """Optional: fill `ctx` from the inputs and output when forward takes no ctx."""
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward and, if any input requires grad, record a node running backward."""
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a._requires_grad for a in args)
        record_graph = needs_grad(args)
        with no_grad():
            if cls.setup_context is Function.setup_context:
                result = cls.forward(ctx, *args, **kwargs)
            else:  # the forward(*args) + setup_context(ctx, inputs, output) style
                result = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, result)
        outs = result if isinstance(result, tuple) else (result,)
        _check_dirty(ctx._dirty, outs, record_graph)
        if ctx._dirty:  # torch counts mark_dirty as one more in-place write
            increment_version(ctx._dirty)
        if not record_graph:
            return result
        user_backward = _backward_of(cls) if _has_backward(cls) or getattr(cls, "jvp", None) is None else \
            _transposed_jvp(cls, ctx, args)
        if any(isinstance(o, Tensor) and any(o is a for a in args) and not any(o is d for d in ctx._dirty)
               for o in outs):  # an input returned as it is: the output is a new view of it, as in torch
            with no_grad():
                outs = tuple(o.view_as(o) if isinstance(o, Tensor) and any(o is a for a in args) and
                             not any(o is d for d in ctx._dirty) else o for o in outs)
            result = outs if isinstance(result, tuple) else outs[0]

        def run_backward(node, *grads):
            if ctx.materialize_grads:
                grads = tuple(hooks.zeros_like(o) if g is None and isinstance(o, Tensor) else g
                              for g, o in zip(grads, meta))
            res = user_backward(ctx, *grads)
            res = res if isinstance(res, tuple) else (res,)
            if len(res) > len(args) and all(g is None for g in res[len(args):]):
                res = res[:len(args)]  # torch drops extra trailing Nones (and refuses too few gradients)
            if len(res) != len(args):
                raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                   f"(expected {len(args)}, got {len(res)})")
            for k, (g, a) in enumerate(zip(res, args)):
                if g is not None and not isinstance(a, Tensor):
                    raise RuntimeError(f"function {cls.__name__}Backward returned a gradient different than None "
                                       f"at position {k + 1}, but the corresponding forward input was not a "
                                       "Variable")
            _check_grad_shapes(cls.__name__, res, args)
            check_nan(f"{cls.__name__}Backward", res)
            return res

        node = cls._node_cls(run_backward, args, ctx._to_save, None, len(outs))
        ctx._node = node
        # False: only forward AD's own tensors (requires_grad False, as torch's) made this node; so are its outputs
        real = is_grad_enabled() and any(isinstance(a, Tensor) and a.requires_grad for a in args)
        meta = []
        for k, out in enumerate(outs):
            if isinstance(out, Tensor) and id(out) not in ctx._non_differentiable and out.dtype.is_floating_point:
                out._requires_grad = True
                out.grad_fn = node
                out._output_nr = k
                if real:
                    out.__dict__.pop("_fw_only", None)
                else:
                    mark_fw_only(out)
            meta.append(out.detach() if isinstance(out, Tensor) else out)
        several = sum(isinstance(o, Tensor) for o in outs) > 1
        for k, out in enumerate(outs):  # views it returns refuse in-place writes, as torch's (view_inplace)
            if isinstance(out, Tensor) and out.grad_fn is node and out._base is not None and \
                    not any(out is d for d in ctx._dirty):
                out.__dict__["_custom_function_view"] = (k, cls.__name__, several)
        for d in ctx._dirty:  # modified in place: their bases (or views) take the new history, as in torch
            _rebase_dirty(d)
        return result


def _backward_of(cls) -> object:
    """The user's backward: `backward` or its other name `vjp` (not both)."""
    has_backward, has_vjp = cls.backward is not Function.backward, cls.vjp is not Function.vjp
    if has_backward and has_vjp:
        raise RuntimeError("Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You should "
                           "only implement one of them.")
    return cls.vjp if has_vjp else cls.backward


def _has_backward(cls) -> bool:
    return cls.backward is not Function.backward or cls.vjp is not Function.vjp


# forward mode's internal reverse passes (autograd.forward_ad.linearize) raise this while they run
TRANSPOSING = [0]


def _transposed_jvp(cls, ctx, args: tuple):
    """The backward of a Function that defines only `jvp`: forward mode (forward_ad) computes tangents by
    transposing reverse passes, and the transpose of the linear map t -> jvp(ctx, t) is its reverse pass at
    dummy tangents. It is computed once per node (a jvp may `del` what it read from ctx); plain backward
    through such a Function raises torch's error."""
    cache = []

    def backward(ctx, *grads):
        if not TRANSPOSING[0]:
            return cls.backward(ctx, *grads)  # torch's NotImplementedError
        if not cache:
            with enable_grad():
                dummies = [a.detach().new_zeros(a.shape).requires_grad_() if isinstance(a, Tensor) and
                           a.dtype.is_floating_point else None for a in args]
                ctx._in_jvp = True
                try:
                    outs = cls.jvp(ctx, *dummies)
                finally:
                    ctx._in_jvp = False
            cache.append((dummies, outs if isinstance(outs, tuple) else (outs,)))
        dummies, outs = cache[0]
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and g is not None]
        wrt = [d for d in dummies if d is not None]
        if not pairs or not wrt:
            return (None,) * len(args)
        with enable_grad():
            found = iter(grad([o for o, _ in pairs], wrt, [g for _, g in pairs], retain_graph=True,
                              create_graph=True, allow_unused=True))
        return tuple(next(found) if d is not None else None for d in dummies)
    return backward


def _check_dirty(dirty: tuple, outs: tuple, grad: bool) -> None:
    """torch's errors for `ctx.mark_dirty` tensors: returned as outputs, and not leaves that require grad."""
    for d in dirty:
        if not any(d is o for o in outs):
            raise RuntimeError("Some elements marked as dirty during the forward method were not returned as output. "
                               "The inputs that are modified inplace must all be outputs of the Function.")
        if grad and d.requires_grad and d.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad has been used in an in-place operation.")


def _check_grad_shapes(name: str, grads: tuple, args: tuple) -> None:
    """torch's error when a backward returned a gradient that cannot be summed to its input's shape."""
    for k, (g, a) in enumerate(zip(grads, args)):
        if isinstance(g, Tensor) and isinstance(a, Tensor) and tuple(g.shape) != tuple(a.shape):
            gs, as_ = tuple(g.shape), tuple(a.shape)
            fits = len(as_) <= len(gs) and all(d == 1 or d == e for d, e in zip(as_[::-1], gs[::-1]))
            if not fits:
                raise RuntimeError(f"Function {name}Backward returned an invalid gradient at index {k} - got "
                                   f"{list(gs)} but expected shape compatible with {list(as_)}")


def _rebase_dirty(d: Tensor) -> None:
    base = d._base
    if base is None or base is d:
        view_inplace.refresh_views(d)
        return
    view_inplace.check_view_write(d)
    standin = Tensor._make(d._v, d.dtype, d.device, d._vm)  # carries the Function's node into CopySlices
    standin._requires_grad, standin.grad_fn, standin._output_nr = d._requires_grad, d.grad_fn, d._output_nr
    view_inplace.rebase(base, d, standin)


class _DelayedError(Function):
    """Passes its inputs through; differentiating them raises (what once_differentiable wraps outputs in)."""

    @staticmethod
    def forward(ctx, anchor, *tensors):
        # `anchor` (a gradient that requires grad) links the node into the graph
        return tuple(t.clone() if isinstance(t, Tensor) else t for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("trying to differentiate twice a function that was marked with @once_differentiable")


def once_differentiable(fn):
    """Decorate a Function's backward that is not itself differentiable: it runs without recording, and a
    second differentiation through its results raises."""
    import functools


    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            outputs = fn(ctx, *args)
        anchor = next((a for a in args if isinstance(a, Tensor) and a._requires_grad), None)
        if not is_grad_enabled() or anchor is None:
            return outputs
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        wrapped = _DelayedError.apply(anchor, *outs)
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        return wrapped[0] if single else wrapped
    return wrapper
