"""Backward formulas of the elementwise ops, one per input, written in tidal ops.

Like PyTorch's derivatives.yaml: `FORMULAS[name]` holds, for each input, a function
`(g, o, *inputs) -> gradient` (None: no gradient). `o` is the op's output. A node saves
only the tensors that the formulas of inputs requiring grad actually read (found from
the formulas' code), so `y.mul_(3)` keeps nothing and `y.mul_(y)` is caught as in torch.
Broadcasting and dtype are fitted by the engine; formulas run on the VM and fuse.
"""
from __future__ import annotations

import dis
import math

from ...autograd import graph
from ...autograd.graph import _NO_EDGE, Node, node_class
from ...tensor import Tensor
from ...tensor.dtype import COMPLEX
from . import plans as ew
from . import copies, arithmetic as M

ap = ew.apply
_LN2, _LN10, _2_SQRTPI = math.log(2.0), math.log(10.0), 2.0 / math.sqrt(math.pi)


def _zero(g: Tensor) -> Tensor:
    return copies.fill_(copies.convert(g, g.dtype), 0)


def _not_implemented(op: str, error: type = RuntimeError, message: str = "derivative for aten::{op} is not "
                     "implemented"):
    """A formula that raises torch's error for an op without a derivative, when backward reaches its node."""
    def formula(g, *_):
        raise error(message.format(op=op))
    return formula


def _tie_share(a, b, g, loses):
    # PyTorch splits the gradient evenly between equal inputs of maximum/minimum and takes it from the input that
    # loses: where a NaN is compared, neither loses and both get the whole gradient
    return M.where(ap("eq", a, b), g * 0.5, M.where(loses, _zero(g), g))


_max_a = lambda g, o, a, b: _tie_share(a, b, g, ap("lt", a, b))  # noqa: E731
_max_b = lambda g, o, a, b: _tie_share(a, b, g, ap("gt", a, b))  # noqa: E731
_min_a = lambda g, o, a, b: _tie_share(a, b, g, ap("gt", a, b))  # noqa: E731
_min_b = lambda g, o, a, b: _tie_share(a, b, g, ap("lt", a, b))  # noqa: E731


def _fpick(first_wins, b):
    # fmax/fmin take the first input where it wins or ties, and wherever the second is NaN
    return ap("logical_or", first_wins, ap("isnan", b))

_zero_grad = lambda g, o, a: _zero(g)  # noqa: E731
_zero_grad3 = lambda g, o, a, b, c: _zero(g)  # noqa: E731
_SQRT1_2, _INV_SQRT_2PI = math.sqrt(0.5), 1.0 / math.sqrt(2.0 * math.pi)
_GELU_BETA, _GELU_KAPPA = math.sqrt(2.0 / math.pi), 0.044715


def _gelu_grad(g, o, a):
    # d/dx x*Phi(x) = Phi(x) + x*phi(x), from the input alone (torch saves only the input too)
    cdf = (ap("erf", a * _SQRT1_2) + 1) * 0.5
    return g * (cdf + a * ap("exp", a * a * -0.5) * _INV_SQRT_2PI)


def _gelu_tanh_grad(g, o, a):
    t = ap("tanh", (a + a * a * a * _GELU_KAPPA) * _GELU_BETA)
    right = a * 0.5 * (1 - t * t) * _GELU_BETA * (a * a * (3 * _GELU_KAPPA) + 1)
    return g * ((t + 1) * 0.5 + right)


def _pow_base_grad(g, o, a, b):
    """torch's pow_backward_self: none where the exponent is 0 (not 0 * 0 ** -1 = nan)."""
    if not isinstance(b, Tensor):
        return _zero(g) if b == 0 else g * b * ap("pow", a, b - 1)
    return M.where(ap("eq", b, 0), 0.0, g * b * ap("pow", a, b - 1))


def _pow_exponent_grad(g, o, a, b):
    """torch's pow_backward_exponent: none where the base is 0 and the exponent >= 0 (0 ** -1 keeps -inf)."""
    if not isinstance(a, Tensor):  # a number base (2 ** t)
        if a == 0:
            return M.where(ap("ge", b, 0), 0.0, g * o * -math.inf)
        return g * o * (math.log(a) if a > 0 else math.nan)
    return M.where(ap("logical_and", ap("eq", a, 0), _real_nonnegative(b)), 0.0, g * o * ap("log", a))


def _real_nonnegative(b):
    """exponent >= 0 (torch's test; a complex exponent counts when it is real)."""
    if not isinstance(b, Tensor):
        return b.real >= 0 and b.imag == 0 if isinstance(b, complex) else b >= 0
    if b.dtype.is_complex:
        return ap("logical_and", ap("eq", b.imag, 0), ap("ge", b.real, 0))  # (Tensor.real/imag: complex_numbers' ops)
    return ap("ge", b, 0)


FORMULAS = {
    "add": (lambda g, o, a, b: g, lambda g, o, a, b: g),
    "sub": (lambda g, o, a, b: g, lambda g, o, a, b: -g),
    "mul": (lambda g, o, a, b: g * b, lambda g, o, a, b: g * a),
    "div": (lambda g, o, a, b: g / b, lambda g, o, a, b: -g * a / (b * b)),
    "maximum": (_max_a, _max_b),
    "minimum": (_min_a, _min_b),
    # fmax/fmin give the whole gradient to the input chosen (the first on ties), as torch does
    "fmax": (lambda g, o, a, b: g * _fpick(ap("ge", a, b), b), lambda g, o, a, b: g * ~_fpick(ap("ge", a, b), b)),
    "fmin": (lambda g, o, a, b: g * _fpick(ap("le", a, b), b), lambda g, o, a, b: g * ~_fpick(ap("le", a, b), b)),
    "nextafter": (lambda g, o, a, b: g, lambda g, o, a, b: _zero(g)),
    "pow": (_pow_base_grad, _pow_exponent_grad),
    # torch's: 0 at the origin
    "atan2": (lambda g, o, a, b: M.where(ap("eq", a * a + b * b, 0), 0.0, g * b / (a * a + b * b)),
              lambda g, o, a, b: M.where(ap("eq", a * a + b * b, 0), 0.0, -g * a / (a * a + b * b))),
    "hypot": (lambda g, o, a, b: g * a / o, lambda g, o, a, b: g * b / o),
    # torch's forms, from the inputs alone: a finite input beside an infinite one gets 0 or 1, not NaN
    "logaddexp": (lambda g, o, a, b: g / (1 + ap("exp", b - a)), lambda g, o, a, b: g / (1 + ap("exp", a - b))),
    "logaddexp2": (lambda g, o, a, b: g / (1 + ap("exp2", b - a)), lambda g, o, a, b: g / (1 + ap("exp2", a - b))),
    "remainder": (lambda g, o, a, b: g, lambda g, o, a, b: -g * M.div(a, b, rounding_mode="floor")),
    "fmod": (lambda g, o, a, b: g, lambda g, o, a, b: -g * ap("trunc", a / b)),
    # torch has no derivative for floor_divide: its NotImplemented node raises when backward reaches it
    "floor_divide": (_not_implemented("floor_divide"),) * 2,
    "floor_divide_": (_not_implemented("floor_divide_"),) * 2,
    "copysign": (lambda g, o, a, b: g * ap("sign", a) * ap("sign", o), lambda g, o, a, b: _zero(g)),
    # torch's: xlogy(a != 0, b), 0 where a is 0 even if log(b) is infinite
    "xlogy": (lambda g, o, a, b: g * ap("xlogy", ap("ne", a, 0), b), lambda g, o, a, b: g * a / b),
    "neg": (lambda g, o, a: -g,),
    "positive": (lambda g, o, a: g,),
    "abs": (lambda g, o, a: g * ap("sign", a),),
    "sign": (_zero_grad,),
    "square": (lambda g, o, a: g * 2 * a,),
    "floor": (_zero_grad,),
    "ceil": (_zero_grad,),
    "trunc": (_zero_grad,),
    "round": (_zero_grad,),
    "frac": (lambda g, o, a: g,),
    "relu": (lambda g, o, a: ap("threshold_backward", g, o, 0),),
    # torch's derivatives: the same mask for the gradient, none through the saved values
    "threshold_backward": (lambda g, o, gr, a, th: ap("threshold_backward", g, a, th), _zero_grad3, None),
    "exp": (lambda g, o, a: g * o,),
    "exp2": (lambda g, o, a: g * o * _LN2,),
    "expm1": (lambda g, o, a: g * (o + 1),),
    "log": (lambda g, o, a: g / a,),
    "log2": (lambda g, o, a: g / (a * _LN2),),
    "log10": (lambda g, o, a: g / (a * _LN10),),
    "log1p": (lambda g, o, a: g / (a + 1),),
    "sqrt": (lambda g, o, a: g / (2 * o),),
    "rsqrt": (lambda g, o, a: g * -0.5 * o * o * o,),
    "reciprocal": (lambda g, o, a: -g * o * o,),
    "sin": (lambda g, o, a: g * ap("cos", a),),
    "cos": (lambda g, o, a: -g * ap("sin", a),),
    "tan": (lambda g, o, a: g * (o * o + 1),),
    "asin": (lambda g, o, a: g * ap("rsqrt", 1 - a * a),),
    "acos": (lambda g, o, a: -g * ap("rsqrt", 1 - a * a),),
    "atan": (lambda g, o, a: g / (a * a + 1),),
    "sinh": (lambda g, o, a: g * ap("cosh", a),),
    "cosh": (lambda g, o, a: g * ap("sinh", a),),
    "tanh": (lambda g, o, a: g * (1 - o * o),),
    "asinh": (lambda g, o, a: g * ap("rsqrt", a * a + 1),),
    "acosh": (lambda g, o, a: g * ap("rsqrt", a * a - 1),),
    "atanh": (lambda g, o, a: g / (1 - a * a),),
    "sigmoid": (lambda g, o, a: g * o * (1 - o),),
    "gelu": (_gelu_grad,),
    "gelu_tanh": (_gelu_tanh_grad,),
    "erf": (lambda g, o, a: g * _2_SQRTPI * ap("exp", -(a * a)),),
    "erfc": (lambda g, o, a: -g * _2_SQRTPI * ap("exp", -(a * a)),),
    "lgamma": (lambda g, o, a: g * ap("digamma", a),),
    # (from the input, as torch's: its in-place form saves the original, so a later write into the result is allowed)
    "erfinv": (lambda g, o, a: g * (math.sqrt(math.pi) / 2) * ap("exp", ap("erfinv", a) ** 2),),
    "digamma": (lambda g, o, a: g * ap("polygamma", a, 1),),
    "polygamma": (lambda g, o, a, n: g * ap("polygamma", a, n + 1), None),
    "i0": (lambda g, o, a: g * ap("i1", a),),
    "i1": (lambda g, o, a: g * (ap("i0", a) - M.where(ap("eq", a, 0), 0.5, o / a)),),
    "deg2rad": (lambda g, o, a: g * (math.pi / 180),),
    "rad2deg": (lambda g, o, a: g * (180 / math.pi),),
    # torch's: NaN outside [0, 1] (the formula alone is finite there)
    "logit": (lambda g, o, a: M.where(ap("logical_or", ap("lt", a, 0), ap("gt", a, 1)), math.nan,
                                      g / (a * (1 - a))),),
    # torch's sinc_backward, from the input alone
    "sinc": (lambda g, o, a: M.where(ap("eq", a * a * math.pi, 0), 0.0,
                                     g * (a * math.pi * ap("cos", a * math.pi) - ap("sin", a * math.pi))
                                     / (a * a * math.pi)),),
    # clamp = min(max(a, lo), hi): when lo > hi every element is hi
    "clamp": (lambda g, o, a, lo, hi: g * ap("logical_and", ap("ge", a, lo), ap("le", a, hi)),
              lambda g, o, a, lo, hi: g * ap("logical_and", ap("lt", a, lo), ap("le", lo, hi)),
              lambda g, o, a, lo, hi: g * ap("logical_or", ap("gt", a, hi), ap("gt", lo, hi))),
    "where": (None, lambda g, o, c, a, b: M.where(c, g, 0.0), lambda g, o, c, a, b: M.where(c, 0.0, g)),
    "lerp": (lambda g, o, a, end, w: g * (1 - w), lambda g, o, a, end, w: g * w,
             lambda g, o, a, end, w: g * (end - a)),
}

# a comparison written in place into a floating tensor (x.gt_(0)) keeps it in the graph with a zero gradient for both
# operands, as torch's GtBackward0 (torch's derivatives.yaml: zeros_like); out of place the result is bool
_compare_grad = lambda g, o, a, b: _zero(g)  # noqa: E731
FORMULAS.update({name: (_compare_grad, _compare_grad) for name in ("eq", "ne", "lt", "le", "gt", "ge")})

# in-place forms whose torch node is not the out-of-place one's: acosh_ (AcoshBackward1) has no derivative, and
# floor_divide_'s error names the in-place op; record() reads the table under the in-place name
_OWN_INPLACE = {name: name + "_" for name in ("acosh", "asinh", "atanh", "floor_divide")}
FORMULAS.update({f"{name}_": (_not_implemented(name, NotImplementedError, "the derivative for 'inplace version of "
                                               "{op}' is not implemented."),) for name in ("acosh", "asinh", "atanh")})
_NOT_IMPLEMENTED = type("NotImplemented", (Node,), {"__slots__": (),
                                                    "name": lambda self: "torch::autograd::NotImplemented"})
graph._node_classes["floor_divide"] = graph._node_classes["floor_divide_"] = _NOT_IMPLEMENTED


def _reads(fn) -> frozenset:
    """Which parameters (by position, 0 = g, 1 = out, 2.. = inputs) a formula reads."""
    if fn is None:
        return frozenset()
    names = fn.__code__.co_varnames[:fn.__code__.co_argcount]
    loaded = {ins.argval for ins in dis.get_instructions(fn) if ins.opname.startswith("LOAD_FAST")}
    # closures read everything their inner formula reads: be conservative
    if fn.__code__.co_freevars:
        return frozenset(range(len(names)))
    return frozenset(k for k, n in enumerate(names) if n in loaded)


_READS = {name: tuple(_reads(fn) for fn in fns) for name, fns in FORMULAS.items()}


_NODE_NAMES = {"gelu_tanh": "gelu", "square": "pow"}  # ops that share one PyTorch backward node (GeluBackward0)


def _node_name(name: str, wanted: tuple) -> str:
    """The node name of op `name` with these arguments (`wanted` None at a number): torch's class per overload,
    as XlogyBackward2 for xlogy(x, 2) or LerpBackward1 for a tensor weight."""
    k = 0
    if name == "lerp":
        k = wanted[2] is not None
    elif name in ("remainder", "fmod") or name in _COMPARISONS:  # (x.gt_(y): GtBackward1)
        k = wanted[1] is not None
    elif name == "xlogy":
        k = 1 if wanted[0] is None else 2 if wanted[1] is None else 0
    elif name == "copysign":
        k = wanted[1] is None
    elif name in ("acosh_", "asinh_", "atanh_"):
        name, k = name[:-1], 1
    name = _NODE_NAMES.get(name, name)
    return M.overload(name, int(k)) if k else name


# name -> the formulas for a complex gradient, where they differ (ops/complex_numbers/grad.py)
COMPLEX_FORMULAS: dict = {}


# ops whose number arguments torch takes through an overload of their own (pow.Tensor_Scalar, clamp's Scalar bounds,
# rsub.Scalar...): its node has no input for them. Elsewhere torch wraps a number in a tensor, an input without an
# edge (x * 2's MulBackward0 has two; where's number too)
_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})
_SCALAR_OVERLOADS = frozenset({"pow", "clamp", "fmod", "remainder", "lerp", "xlogy", "copysign",
                               "polygamma", "floor_divide", "floor_divide_"}) | _COMPARISONS


def _node_inputs(name: str, wanted: tuple) -> tuple | None:
    """The argument places that are inputs of torch's node (None: all of them); `wanted` is None at a number.
    where's condition is not one (not differentiable); clamp with a tensor bound takes both bounds
    (ClampBackward0), with numbers neither (ClampBackward1); 1 - x is rsub.Scalar, x - 1 sub with a wrapped 1."""
    if name == "where":
        keep: tuple = (1, 2)
    elif name == "clamp" and (wanted[1] is not None or wanted[2] is not None):
        return None
    elif name in _SCALAR_OVERLOADS or (name == "sub" and wanted[0] is None):
        keep = tuple([k for k, w in enumerate(wanted) if w is not None])
    else:
        return None
    return None if len(keep) == len(wanted) else keep


def _backward(node, g):
    # node.attrs: (op name, which arguments want a gradient, the formulas of the node's inputs (None where none
    # wants one), the argument place of each node input or None when they are all the arguments)
    saved = node.saved_tensors  # (the output's place, then the inputs: a formula's (out, *inputs))
    attrs = node.attrs
    formulas = attrs[2] if g.dtype.category != COMPLEX else _kept(_wanted(attrs[0], attrs[1], True), attrs[3])
    grads = []  # (a loop: a generator is a call of its own per input)
    for fn in formulas:
        grads.append(None if fn is None else fn(g, *saved))
    return tuple(grads)


def _wanted(name: str, wanted: tuple, complex_grad: bool = False) -> tuple:
    """Op `name`'s formulas for the inputs that want a gradient, else None (complex: its complex table)."""
    formulas = (COMPLEX_FORMULAS.get(name) if complex_grad else None) or FORMULAS[name]
    return tuple([fn if want else None for fn, want in zip(formulas, wanted)])


def _kept(per_argument: tuple, keep: tuple | None) -> tuple:
    """The entries of the arguments that are node inputs (`keep`: their places; None: all)."""
    return per_argument if keep is None else tuple([per_argument[k] for k in keep])


def _read_inputs(name: str, args: tuple) -> set:
    # the parameters op `name`'s formulas read for the inputs that want a gradient
    reads: set = set()
    for a, used in zip(args, _READS[name]):
        if isinstance(a, Tensor) and a._requires_grad:
            reads |= used
    return reads


def originals(name: str, args: tuple, out: Tensor) -> dict | None:
    """For an in-place op about to overwrite `out` (its first input): a copy of that input when a
    formula reads it, made before the write is queued, as torch saves the original self. The
    same tensor passed again as another input is saved as it is (torch then refuses backward)."""
    if name not in FORMULAS or not args or args[0] is not out or 2 not in _read_inputs(name, args):
        return None
    return {0: out.detach().clone()}


_new = object.__new__
_NODE_INIT = Node.__init__  # (saved_hooks swaps Node.__init__ while a hooks block is open)
_seq = graph._seq
_record_plans: dict = {}  # (op name, which inputs want a gradient) -> (pick, node class, attrs, saves output)


def _record_plan(name: str, args: tuple, wanted: tuple) -> tuple:
    if name not in FORMULAS:
        raise RuntimeError(f"the derivative for '{name}' is not implemented.")
    reads = _read_inputs(name, args)
    # what the node saves, picked from the arguments by one expression made once: the output's place (filled
    # after the op, when a formula reads it), then each input the formulas read, else None
    picked = "".join(f"a[{k}], " if k + 2 in reads else "None, " for k in range(len(args)))
    pick = eval(f"lambda a: (None, {picked})")  # noqa: S307 - built from ints only
    keep = _node_inputs(name, wanted)
    tensors = tuple([k + 1 for k in range(len(args)) if k + 2 in reads and wanted[k] is not None])  # (in `saved`)
    plan = _record_plans[name, wanted] = (pick, node_class(_node_name(name, wanted)),
                                          (name, wanted, _kept(_wanted(name, wanted), keep), keep), 1 in reads,
                                          tensors)
    return plan


def record(name: str, args: tuple, out: Tensor, inplace: bool, original: dict | None = None,
           meta: tuple | None = None) -> None:
    """Attach op `name`'s node to `out` (a floating result); for in-place ops, bump the version after saving
    inputs (`original`: copies of inputs that are `out`, taken before the write; see `originals`;
    `meta`: the arguments' (shape, dtype), made once by the caller's plan; see graph.record). The node is made
    here rather than by graph.record: every elementwise op with a gradient passes, and its plan fixes the rest."""
    wanted = []  # (loops, not comprehensions: a comprehension is a function call of its own on Python 3.11)
    nexts = []  # the node's edges, made in the same pass (Node.__init__ then skips its own)
    for a in args:
        if isinstance(a, Tensor):
            if a._requires_grad:
                wanted.append(True)
                fn = a.grad_fn
                nexts.append((fn, a._output_nr) if fn is not None else (graph.gradient_edge(a), 0))
            else:
                wanted.append(False)
                nexts.append(_NO_EDGE)
        else:  # a number: no input of the node
            wanted.append(None)
            nexts.append(_NO_EDGE)
    wanted = tuple(wanted)
    if inplace and name in _OWN_INPLACE:
        name = _OWN_INPLACE[name]
    plan = _record_plans.get((name, wanted)) or _record_plan(name, args, wanted)
    pick, cls, attrs, saves_out, tensors = plan
    saved = pick(tuple([original.get(k, a) for k, a in enumerate(args)]) if original else args)
    keep = attrs[3]
    inputs = args
    if keep is not None:  # (numbers or non-differentiable arguments among them: the node's inputs are the others)
        inputs, nexts = tuple([args[k] for k in keep]), [nexts[k] for k in keep]
        if meta is not None:
            meta = [meta[k] for k in keep]
    # (made as object.__new__ + Node.__init__: a class call costs twice a function call on CPython 3.11; the
    # node classes have no __init__ of their own, and saved_tensors_hooks swaps Node.__init__ itself)
    node = _new(cls)
    if meta is None:
        Node.__init__(node, _backward, inputs, saved, attrs, 1)
    elif Node.__init__ is not _NODE_INIT:  # (saved-tensor hooks are active: their init packs what is saved)
        Node.__init__(node, _backward, inputs, saved, attrs, 1, meta, tuple(nexts))
    else:  # Node.__init__'s fields set here, the saved tensors' places known from the plan (keep in step with it)
        node.backward_fn = _backward
        node.attrs = attrs
        node.seq = next(_seq)
        node.n_outputs = 1
        node._freed = False
        node._saved_outputs = ()
        node.next_functions = tuple(nexts)
        node._input_meta = meta
        node._saved = saved
        if tensors:
            versions = []
            for k in tensors:
                t = saved[k]
                if t._inference:
                    raise RuntimeError(graph.INFERENCE_SAVED)
                versions.append((k, (t._vc or t._v.blob).version))
            node._versions = tuple(versions)
        else:
            node._versions = ()
    if graph._dual_levels:
        graph._carry_duals(node, inputs, (out,))
    out._requires_grad = True
    out.grad_fn = node
    if inplace:
        (out._vc or out._v.blob).version += 1
        out.__dict__.pop("_output_nr", None)  # (a later output of another node, var_mean's mean: now this one's)
    if saves_out:  # the output is saved as it is after the op
        node.save_output(0, out)


ew.register_derivatives(record, originals)  # plans.apply records elementwise nodes through these
