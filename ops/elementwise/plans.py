"""Elementwise dispatch: the plan of a call (result dtype, shape and layout, the expression with its scalars),
the NumPy vocabulary templates evaluate in, and the instruction an op queues, with its autograd node.

The ops themselves are declared in declarations.py. A template such as "{0} + {1}" is evaluated on whole
arrays by NumPy (single ops, cold groups) and compiled into fused loops by the VM (hot groups). Type promotion,
broadcasting and every user error happen here, at the call, before anything is queued.
"""
from __future__ import annotations

import math
import re

import numpy as np

from ...tensor import Tensor, contiguous_strides, numel_of
from ...tensor import dtype as dt
from ...tensor.tensor import INFERENCE
from ...vm import Instruction, codegen, compute_instruction, fresh_view, get_vm
from ...vm.replay import head as replay_head, layout_id
from ...autograd.grad_mode import is_grad_enabled
from ...autograd.graph import needs_grad
from ...autograd.view_inplace import NO_GRAD_VIEW, check_view_write, needs_rebase, write_through_view
from ..dispatch.mem_overlap import check_out
from ..dispatch import limited_dtypes
from ..movement import many_dims
from ..movement.stride_rules import elementwise_strides
from .float8 import cast as float8_cast
from ..complex_numbers.half import cast as complex32_cast, is_complex32
from ..dispatch.broadcast import broadcast_shapes
from ..dispatch.number_args import typed_number
from .special import NUMPY_FUNCS as SPECIAL_NUMPY_FUNCS
from .declarations import (COMPLEX_REJECT, COMPLEX_TEMPLATES, HALF_TEMPLATES, INT_TEMPLATES, OPS, REAL_REJECT, _CLAMP,
                           _EXACT, _REAL_RESULT, _RELU, ElemOp)


# -- the NumPy vocabulary (the compiled one is ops/elementwise/scalar_kernels.py) ---------------------------
# dtypes whose NumPy astype is not torch's cast: float8 (rounding, special values) and complex32, which NumPy
# can't cast at all (float16 pairs: ops/complex_half)
_TORCH_CASTS = frozenset([d.np for d in dt.FLOAT8] + [dt.COMPLEX32_NP])


def _torch_cast(x: np.ndarray, target) -> np.ndarray:
    return complex32_cast(x, target) if is_complex32(x.dtype) or is_complex32(target) else float8_cast(x, target)


def _caster(np_dtype):
    if is_complex32(np_dtype):
        return lambda x: complex32_cast(x, np_dtype)
    if np.dtype(np_dtype).kind == "c":
        def cast_complex(x):
            x = np.asarray(x)
            return complex32_cast(x, np_dtype) if is_complex32(x.dtype) else x.astype(np_dtype, copy=False)
        return cast_complex

    target = np.dtype(np_dtype)
    ndarray = np.ndarray
    special = target in _TORCH_CASTS

    def cast(x):
        if x.__class__ is ndarray and x.dtype is target:  # the usual case: nothing to do
            return x
        x = np.asarray(x)
        if special or x.dtype in _TORCH_CASTS:
            return _torch_cast(x, target)
        if x.dtype.kind == "c":  # torch's cast keeps the real part (NumPy would warn); to bool, whether it is nonzero
            return x != 0 if target.kind == "b" else x.real.astype(np_dtype, copy=False)
        return x.astype(np_dtype, copy=False)
    return cast


NUMPY_VOCAB = {f"as_{d.name}": _caster(d.np) for d in dt.ALL}
NUMPY_VOCAB["as_bool"] = _caster(np.bool_)
NUMPY_VOCAB.update(where=np.where, math=math, exp_single=np.exp)
NUMPY_VOCAB.update(SPECIAL_NUMPY_FUNCS)  # erf, digamma, sgn...: lazily vectorized scalar_kernels code
# (also the functions numba computes one element at a time 2-3.5x slower than NumPy's vectorized
# loops, measured on 1M float32: a group using them runs as NumPy, in cache-sized pieces)
codegen.register_vocabulary(NUMPY_VOCAB, "tidal.ops.elementwise.scalar_kernels",
                            numpy_only=("as_float16", "as_bfloat16", "as_complex32", "as_complex64", "as_complex128",
                                        "np.tanh", "np.sin", "np.cos", *(f"as_{d.name}" for d in dt.FLOAT8)),
                            imports=("tidal.ops.elementwise.special",))

_CAST_NAME = {d: ("as_bool" if d is dt.bool_ else f"as_{d.name}") for d in dt.ALL}
# a number going into a float16/bfloat16 op: its value rounded to that dtype, held in float32 (the compute dtype)
ROUNDED = {d: (lambda v, _np=d.np: np.float32(np.array(v).astype(_np))) for d in (dt.float16, dt.bfloat16)}
_SCALAR_KEPT = ("mul", "div", "floor_divide")
# float32 computes erf and exp with formulas of its own that compiled loops vectorize (scalar_kernels'
# erf_single and exp_single; the NumPy path runs special.erf_single and NumPy's own exp)
_SINGLE_FORMULAS = {"erf": "erf_single(", "np.exp": "exp_single("}
_SINGLE_CALLS = re.compile(r"(?<![\w.])(erf|np\.exp)\(")


# float32 (and bfloat16, computed in float32) templates where torch's kernel fuses a multiply-add: lerp is
# fmadd(w, end - self, self) or fmadd(w - 1, end - self, end); in float64 the product is exact and the sum
# rounds once more only on a float32 tie (about once in 2**29). (torch's float16 lerp rounds twice.)
_SINGLE_TEMPLATES = {OPS["lerp"].template: "where(np.abs({2}) < 0.5, as_float64({0}) + as_float64({2}) * "
                                           "as_float64({1} - {0}), as_float64({1}) + as_float64({2} - 1) * "
                                           "as_float64({1} - {0}))"}


def _single_formulas(template: str, out: dt.dtype) -> str:
    exact = _SINGLE_TEMPLATES.get(template) if out is not dt.float16 else None
    return exact if exact is not None else _SINGLE_CALLS.sub(lambda m: _SINGLE_FORMULAS[m.group(1)], template)


# -- planning: dtypes, shapes, the expression ---------------------------------------------------
class Plan:
    """What dispatch needs for one signature: result shape, dtype and layout, expression, scalar
    types, and the device and VM the result lives on."""

    __slots__ = ("shape", "dtype", "expr", "scalar_types", "strides", "nbytes", "device", "vm", "tensors_only",
                 "np_dtype", "differentiable", "pow_exprs", "direct", "layout", "head", "grad_meta", "plain")

    def __init__(self, shape, dtype, expr, scalar_types):
        self.shape, self.dtype, self.expr, self.scalar_types = shape, dtype, expr, scalar_types
        self.np_dtype = dtype.np
        self.differentiable = dtype.category >= dt.FLOAT  # floating or complex
        self.strides = contiguous_strides(shape)
        self.layout = layout_id(shape, self.strides, 0, self.np_dtype)  # the result's, for replay signatures
        self.nbytes = numel_of(shape) * dtype.itemsize
        self.device = self.vm = None
        self.tensors_only = not any(scalar_types) if scalar_types else True
        self.pow_exprs = None  # tensor ** number: exponent -> the expression PyTorch's kernel uses
        self.direct = None     # a CPU kernel running the op alone as one NumPy ufunc call, if it is one
        # its instructions' replay-signature head (vm/replay.head), made once here
        self.head = replay_head(expr, None, "compute", len(scalar_types or ()), 1)
        self.grad_meta = None  # the arguments' (shape, dtype) for autograd nodes, made on first record
        # 4-d/5-d results: (index, row-major strides) of each tensor argument, which memory_format's
        # elementwise_strides compares by identity to see a channels_last input; None: always row-major
        self.plain = None


_plans: dict = {}


def torch_name(d: dt.dtype) -> str:
    """PyTorch's C++ name of a dtype, as its error messages print it."""
    return d.scalar_name


def _signature_dtype(op: ElemOp, dtypes: list, ndims: list):
    dim = zero = wrapped = None
    for d, nd in zip(dtypes, ndims):
        if nd is None:
            wrapped = d if wrapped is None else dt.promote_types(wrapped, d)
        elif nd == 0:
            zero = d if zero is None else dt.promote_types(zero, d)
        else:
            dim = d if dim is None else dt.promote_types(dim, d)
    return dt.result_type_of(dim, zero, wrapped)


def _plan(op: ElemOp, args: tuple) -> Plan:
    dtypes, ndims, shapes = [], [], []
    for a in args:
        if isinstance(a, Tensor):
            dtypes.append(a.dtype)
            ndims.append(a.ndim)
            shapes.append(a._v.shape)
        else:
            dtypes.append(dt.scalar_dtype(a))
            ndims.append(None)
    shape = broadcast_shapes(*shapes) if len(shapes) > 1 else (shapes[0] if shapes else ())
    rule = op.rule
    promoted_args = range(1, 3) if rule == "where" else range(len(args))
    common = _signature_dtype(op, [dtypes[i] for i in promoted_args], [ndims[i] for i in promoted_args])
    # torch's pow(Tensor, Scalar) returns the input for exponent 1 and ones for 0 before its kernel's checks
    bool_power = op.name == "pow" and common is dt.bool_ and ndims[1] is None
    if common in dt.LIMITED:  # uint16/32/64: torch has kernels for a few ops only
        limited_dtypes.check(op.name, common)
        if op.name == "mul" and common in dt.FLOAT8 and (None in ndims[:2] or numel_of(shapes[-1]) == 1):
            # torch's float8 mul has no loop for a second operand that is one number (broadcast); a
            # Python number is its second operand either way (torch's reflected mul swaps them)
            raise NotImplementedError(f'"mul_cpu_reduced_float" not implemented for \'{common.scalar_name}\'')
    refused = REAL_REJECT.get(op.name)
    if refused is not None and common.category in refused[0] and not bool_power:
        raise refused[1](refused[2].format(t=torch_name(common)))
    if op.no_bool and all(d is dt.bool_ for d in dtypes) and not bool_power:
        raise RuntimeError(f"{op.name}: bool tensors are not supported; use logical ops or convert "
                           "them with .int() first")
    if common.category == dt.COMPLEX and op.name in COMPLEX_REJECT:
        kind, message = COMPLEX_REJECT[op.name]
        raise kind(message.format(t=torch_name(common)))
    if rule == "logical":
        compute = out = dt.bool_
    elif rule == "bool":
        compute, out = common.compute, dt.bool_
    elif rule == "float" and common.category < dt.FLOAT:
        compute = out = dt.get_default_dtype()
    elif common.category == dt.COMPLEX and op.name in _REAL_RESULT:
        compute, out = common.compute, common.to_real()
    elif op.name in _EXACT:
        compute = out = common
    else:
        compute, out = common.compute, common
    if rule == "where":
        if dtypes[0] is not dt.bool_ and dtypes[0] is not dt.uint8:
            raise RuntimeError(f"where expected condition to be a boolean tensor, but got a tensor with "
                               f"dtype {torch_name(dtypes[0])}")
    names = []
    scalar_types = []
    narrow = common if common in ROUNDED and op.nin == 2 else None
    for k, (d, nd) in enumerate(zip(dtypes, ndims)):
        want = dt.bool_ if (rule == "where" and k == 0) else compute
        # torch's TensorIterator casts an operand of another dtype (a number, an integer or 0-d tensor) to a
        # 16-bit common dtype before its kernel computes in float32; mul's, div's and floor_divide's kernels take a
        # number or 0-d tensor second operand at its own value instead (their reduced-float scalar paths)
        through = narrow is not None and d is not narrow and not (k == 1 and op.name in _SCALAR_KEPT and not nd)
        if nd is None:
            scalar_types.append(ROUNDED[narrow] if through else want.np.type)
            names.append(f"{{{k}}}")
        else:
            scalar_types.append(None)
            name = f"{_CAST_NAME[narrow]}({{{k}}})" if through else f"{{{k}}}"
            # (a narrowed value is held in the 16-bit dtype: cast again where the op computes in another, bool)
            held = d.compute is want and d is want and not (through and narrow.compute is not want)
            names.append(name if held else f"{_CAST_NAME[want]}({name})")
    base = COMPLEX_TEMPLATES.get(op.name, op.template) if compute.category == dt.COMPLEX else \
        INT_TEMPLATES.get(op.name, op.template) if compute.category == dt.INT else op.template
    if out in ROUNDED and op.name in HALF_TEMPLATES:
        base = HALF_TEMPLATES[op.name].replace("{R}", _CAST_NAME[out])
    template = _single_formulas(base, out) if compute is dt.float32 else base
    body = template.format(*names)
    expr = f"{_CAST_NAME[out]}({body})"
    plan = Plan(shape, out, expr, tuple(scalar_types))
    if all(n == f"{{{k}}}" for k, n in enumerate(names)) and (out is compute or rule == "bool"):
        plan.direct = _ufunc_kernel(base)  # no casts: one NumPy ufunc call can write the result
    if op.name == "pow" and ndims[0] is not None and ndims[1] is None:
        table = _POW_FLOAT if compute.category == dt.FLOAT else _POW_BOOL if bool_power else _POW_INT
        plan.pow_exprs = {e: f"{_CAST_NAME[out]}({t.format(names[0])})" for e, t in table.items()}
    return plan


_OPERATOR_UFUNCS = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.true_divide, "==": np.equal,
                    "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                    "&": np.bitwise_and, "|": np.bitwise_or, "^": np.bitwise_xor}
_BINARY_TEMPLATE = re.compile(r"^\{0\} (\S+) \{1\}$")
_CALL_TEMPLATE = re.compile(r"^np\.(\w+)\(\{0\}(?:, (\{1\}|-?\d+))?\)$")
_direct_kernels: dict = {}


def _where_kernel(ins, outs, attrs) -> None:
    # where(c, a, b) into its result as two copies: the NumPy path's np.where makes a temporary it then copies
    # (the template has no casts, so a and b already hold the result's type)
    np.copyto(outs[0], ins[2], casting="unsafe")
    np.copyto(outs[0], ins[1], casting="unsafe", where=ins[0])


def _relu_kernel(ins, outs, attrs) -> None:
    # NumPy's maximum returns its second operand on a tie of zeros (checked at import: _SECOND_ON_TIES), so
    # maximum(0, x) keeps -0.0 as torch's relu does
    np.maximum(0, ins[0], out=outs[0], casting="unsafe")


def _clamp_kernel(ins, outs, attrs) -> None:
    # min(max, max(min, x)) with the input second: a tie keeps it, a NaN bound gives NaN, min > max gives max
    np.maximum(ins[1], ins[0], out=outs[0], casting="unsafe")
    np.minimum(ins[2], outs[0], out=outs[0], casting="unsafe")


_ZEROS = (np.zeros(17, np.float32), np.full(17, -0.0, np.float32))
_SECOND_ON_TIES = all((np.signbit(f(a[0], b)) == np.signbit(b)).all()  # contiguous, and a scalar first
                      for f in (np.maximum, np.minimum) for a, b in (_ZEROS, _ZEROS[::-1]))
_SPECIAL_DIRECT = {_RELU: _relu_kernel, _CLAMP: _clamp_kernel} if _SECOND_ON_TIES else {}


def _ufunc_kernel(template: str):
    """The kernel `ufunc(inputs..., out=out)` when `template` is exactly one NumPy ufunc call (the
    single-op NumPy path then makes no temporary and no copy), or a plain `where`, relu or clamp, else None."""
    if template in _direct_kernels:
        return _direct_kernels[template]
    if template in _SPECIAL_DIRECT:
        _direct_kernels[template] = _SPECIAL_DIRECT[template]
        return _SPECIAL_DIRECT[template]
    if template == "where({0}, {1}, {2})":
        _direct_kernels[template] = _where_kernel
        return _where_kernel
    ufunc, const = None, None
    match = _BINARY_TEMPLATE.match(template)
    if match:
        ufunc = _OPERATOR_UFUNCS.get(match.group(1))
    elif template == "-{0}":
        ufunc = np.negative
    elif template == "~{0}":
        ufunc = np.invert
    else:
        match = _CALL_TEMPLATE.match(template)
        if match and isinstance(getattr(np, match.group(1), None), np.ufunc):
            ufunc = getattr(np, match.group(1))
            if match.group(2) and match.group(2) != "{1}":
                const = int(match.group(2))
    kernel = None
    if ufunc is not None:
        if const is None:
            def kernel(ins, outs, attrs):
                ufunc(*ins, out=outs[0], casting="unsafe")  # as the copy the NumPy path ends with
        else:
            def kernel(ins, outs, attrs):
                ufunc(ins[0], const, out=outs[0], casting="unsafe")
    _direct_kernels[template] = kernel
    return kernel


# PyTorch computes these scalar powers with multiplications, sqrt or a division (bitwise, and
# numba's np.power is several times slower than NumPy's); other exponents use np.power
_POW_INT = {2: "{0} * {0}", 3: "{0} * {0} * {0}"}
_POW_FLOAT = {**_POW_INT, 0.5: "np.sqrt({0})", -1: "1 / {0}", -2: "1 / ({0} * {0})"}
_POW_BOOL = {1: "{0}", 0: "{0} | True"}  # a bool exponent: the input, or ones


def _expr(plan: Plan, args: tuple) -> str:
    if plan.pow_exprs is not None:
        return plan.pow_exprs.get(args[1], plan.expr)
    return plan.expr


_scalars: dict = {}  # (NumPy scalar type, Python number) -> the typed scalar (a loop's constants)


def _typed_scalar(st, value):
    """`value` as the NumPy scalar type `st`, cached: -0.0 and nan are not (they would alias 0.0 or
    never hit), nor are values past the cache's size."""
    key = (st, value)
    typed = _scalars.get(key)
    if typed is None:
        try:
            if value.__class__ is float and not -1e38 < value < 1e38:  # (0.0 and nan are never cached: no errstate)
                with np.errstate(over="ignore"):  # a float past float32's range is its infinity (pow's exponent)
                    typed = st(value)
            else:
                typed = st(value)
        except OverflowError:  # an int past the kernel type's range wraps, as torch converts it
            typed = typed_number(st, value)
        if value and value == value and len(_scalars) < 4096:
            _scalars[key] = typed
    return typed


def plan_for(op: ElemOp, args: tuple) -> Plan:
    """The cached plan for `op` on these argument types, shapes and devices (errors raised here)."""
    # the VM stands for the device in keys: one per device, and hashed by identity (devices hash in Python)
    n = len(args)
    a = args[0] if n else None
    if n == 2 and isinstance(a, Tensor):  # the common cases, as flat keys built in one go
        b = args[1]
        key = (op, a.dtype, a._v.shape, a._vm, b.dtype, b._v.shape, b._vm) if isinstance(b, Tensor) \
            else (op, a.dtype, a._v.shape, a._vm, type(b))
    elif n == 1 and isinstance(a, Tensor):
        key = (op, a.dtype, a._v.shape, a._vm)
    elif n == 3 and a.__class__ is Tensor and args[1].__class__ is Tensor:
        b, c = args[1], args[2]  # (where, lerp, addcmul... on three tensors; threshold_backward's number)
        key = (op, a.dtype, a._v.shape, a._vm, b.dtype, b._v.shape, b._vm, c.dtype, c._v.shape, c._vm) \
            if c.__class__ is Tensor else (op, a.dtype, a._v.shape, a._vm, b.dtype, b._v.shape, b._vm, type(c))
    else:
        key = (op,) + tuple((a.dtype, a._v.shape, a._vm) if isinstance(a, Tensor) else type(a) for a in args)
    plan = _plans.get(key)
    if plan is None:
        for a in args:
            if not isinstance(a, (Tensor, int, float, bool, complex)):
                if isinstance(a, (np.number, np.bool_)):  # NumPy scalars count as the Python numbers they hold
                    plan = _plans[key] = plan_for(op, tuple([x.item() if isinstance(x, np.generic) else x
                                                             for x in args]))
                    return plan
                raise TypeError(f"{op.name}(): expected Tensor or Number arguments, got {type(a).__name__}")
        if not any(isinstance(a, Tensor) for a in args):  # torch's functions take numbers beside a tensor
            raise TypeError(f"{op.name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(args[0]).__name__}")
        plan = _plan(op, args)
        if len(plan.shape) in (4, 5):  # channels_last(_3d) inputs give results in their layout (torch's)
            plan.plain = tuple([(k, contiguous_strides(a._v.shape)) for k, a in enumerate(args)
                                if isinstance(a, Tensor)])
        if len(plan.shape) > many_dims.MAX_NDIM:  # never cached: apply runs it on collapsed views
            raise many_dims.TooManyDims(plan.shape)
        plan.device = _device_of(op, args)
        plan.vm = get_vm(plan.device)
        if plan.device is not None and plan.device.type != "cpu":
            plan.direct = None  # NumPy ufuncs are the CPU's kernels
        if len(_plans) < 65536:
            _plans[key] = plan
    return plan


def _device_of(op: ElemOp, args: tuple):
    dev = None
    for a in args:
        if isinstance(a, Tensor):
            if dev is None:
                dev = a.device
            elif a.device != dev and a.ndim:
                raise RuntimeError("Expected all tensors to be on the same device, but found at least "
                                   f"two devices, {dev} and {a.device}! ({op.name})")
    return dev


# -- the nodes: recorded by ops/elementwise/derivatives.py, which registers here when it loads ----------------
def _unregistered(*args, **kwargs):
    raise RuntimeError("elementwise nodes: ops/elementwise/derivatives.py has not registered yet (tidal.ops loads it "
                       "before any op runs)")


_record_node = _originals = _unregistered  # (its formulas are elementwise ops applied here: it sits above this file)


def register_derivatives(record, originals) -> None:
    """Take the recorder of elementwise nodes and the copier of the originals an in-place op's formulas read
    (ops/elementwise/derivatives.py calls this once, when it loads)."""
    global _record_node, _originals
    _record_node, _originals = record, originals


def apply(name: str, *args, out: Tensor | None = None) -> Tensor:
    """Dispatch elementwise op `name`; `out` (an existing tensor) makes it in-place."""
    op = OPS[name]
    try:
        plan = plan_for(op, args)
    except many_dims.TooManyDims as e:  # more dims than a NumPy array holds
        return many_dims.elementwise(apply, name, args, out, e.shape)
    except NotImplementedError:  # a kernel without a loop for the result dtype: torch refuses the cast first
        if out is not None:
            _check_cast(op, args, out)
        raise
    if out is None:
        # the hot path: a new tensor whose memory is allocated when the kernel first writes it
        return _emit(name, plan, _instruction_inputs(plan, args), args, needs_grad(args),
                     None if plan.pow_exprs is None else _expr(plan, args))
    if out.__class__ is not Tensor and hasattr(out, "_lazy_view"):  # out= a conj view: through its writer (lazy_views)
        return out.copy_(apply(name, *args))
    # (a comparison written into a floating tensor stays in its graph, with a zero gradient: x.gt_(0))
    grad = (plan.differentiable or (op.rule == "bool" and out.dtype.category >= dt.FLOAT)) and \
        needs_grad(args + (out,))
    if grad:  # (torch's autograd refuses a leaf, or a view of one, before its kernel checks shapes and overlap)
        check_leaf_inplace(out)
    check_inplace(op.name, out, plan)
    check_overlap(out, args)
    if grad:
        if needs_rebase(out):  # writing through a view of a tensor in the graph
            return write_through_view(out, apply(name, *args))
    originals = _originals(name, args, out) if grad else None  # copies made before the write
    ins = _instruction_inputs(plan, args)
    expr = _expr(plan, args)
    if plan.dtype is not out.dtype:  # the stored value, rounded to out's dtype, is what a fused reader sees
        expr = f"{_CAST_NAME[out.dtype]}({expr})"  # (complex32: NumPy would copy a number into both parts)
    # the plan's replay head serves the in-place instruction too (same expression and arity; the signature
    # tells the write into an input apart by its view numbers)
    out._vm.push(compute_instruction(name, None, ins, (out._v,), None, expr, None,
                                     plan.head if expr is plan.expr else None))
    if grad:
        _record_node(name, args, out, True, originals)  # saves inputs, then bumps the version
    else:
        (out._vc or out._v.blob).version += 1
    return out


def _instruction_inputs(plan: Plan, args: tuple) -> tuple:
    """What an instruction reads: each tensor's view, each number typed as the plan computes it."""
    if plan.tensors_only:
        return (args[0]._v, args[1]._v) if len(args) == 2 else tuple([a._v for a in args])
    if len(args) == 2 and plan.scalar_types[0] is None:  # tensor op number: the common case
        return (args[0]._v, _typed_scalar(plan.scalar_types[1], args[1]))
    return tuple([a._v if st is None else _typed_scalar(st, a) for a, st in zip(args, plan.scalar_types)])


_new = object.__new__


def _emit(name: str, plan: Plan, ins: tuple, args: tuple, grad: bool, pow_expr: str | None = None) -> Tensor:
    # the result and its instruction, for a plan whose arguments were checked when it was made
    # (`pow_expr`: the expression a number exponent chose; it runs without the direct kernel)
    vm = plan.vm
    view = fresh_view(plan.nbytes, vm, plan.shape, plan.strides, plan.np_dtype, plan.layout)
    if plan.plain is not None:  # a 4-d or 5-d result: a channels_last(_3d) input gives TensorIterator's layout
        for k, plain in plan.plain:  # (compared by identity: a row-major result carries the very tuple)
            if args[k]._v.strides is not plain:
                view.strides, view.layout = elementwise_strides(plan, args), None
                break
    out = _new(Tensor)
    out._v, out.dtype, out.device, out._vm = view, plan.dtype, plan.device, vm
    if INFERENCE.active and INFERENCE.now():  # made under inference_mode (as Tensor._make marks)
        out._inference = True
    if pow_expr is None:
        vm.push(compute_instruction(name, plan.direct, ins, (view,), None, plan.expr, None, plan.head))
    else:
        vm.push(Instruction(name, None, ins, (view,), None, pow_expr))
    if grad and plan.differentiable and (is_grad_enabled() or needs_grad(args)):  # (dual tensors: no_grad)
        meta = plan.grad_meta
        if meta is None:  # the plan fixes every argument's shape and dtype: made once
            meta = plan.grad_meta = tuple([(a._v.shape, a.dtype) if isinstance(a, Tensor) else None for a in args])
        _record_node(name, args, out, False, meta=meta)
    return out


def operator(name: str, general, guard=None):
    """Tensor operator `name` (self op other) with a fast path: when the plan for these argument types
    and shapes is cached (so the arguments were checked once) and `guard(self, other)` allows, the
    result and its instruction are made here directly; anything else goes to `general`."""
    op = OPS[name]
    plans = _plans

    def fast(self, other):
        if self.__class__ is not Tensor:  # a subclass, or a number (an unbound reflected call): the general path
            return general(self, other)
        if other.__class__ is Tensor:
            key = (op, self.dtype, self._v.shape, self._vm, other.dtype, other._v.shape, other._vm)
            grad = self._requires_grad or other._requires_grad
        else:
            key = (op, self.dtype, self._v.shape, self._vm, other.__class__)
            grad = self._requires_grad
        plan = plans.get(key)
        if plan is None or plan.pow_exprs is not None or (guard is not None and not guard(self, other)):
            return general(self, other)
        if plan.tensors_only:
            return _emit(name, plan, (self._v, other._v), (self, other), grad)
        if plan.scalar_types[0] is None:
            return _emit(name, plan, (self._v, _typed_scalar(plan.scalar_types[1], other)), (self, other), grad)
        return general(self, other)
    fast.__name__ = fast.__qualname__ = f"{name}_operator"
    fast.__doc__ = f"self {name} other, with broadcasting and type promotion."
    return fast


def unary_method(name: str, general):
    """Tensor method `name` (self) with the fast path of `operator`; other cases go to `general`."""
    op = OPS[name]
    plans = _plans

    def fast(self):
        plan = plans.get((op, self.dtype, self._v.shape, self._vm))
        if plan is None or self.__class__ is not Tensor or not plan.tensors_only:
            return general(self)
        return _emit(name, plan, (self._v,), (self,), self._requires_grad)
    fast.__name__ = fast.__qualname__ = name
    fast.__doc__ = general.__doc__
    return fast


def check_leaf_inplace(out: Tensor) -> None:
    """PyTorch's error for an in-place op on a leaf that requires grad (in grad mode)."""
    if out._requires_grad and out.grad_fn is None:
        if "_nograd_view" in out.__dict__:  # a view made under no_grad (ops/views.make_view)
            raise RuntimeError(NO_GRAD_VIEW)
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation.")
    base = out._base
    if base is not None and base is not out and base._requires_grad and base.grad_fn is None:
        check_view_write(out)  # a view of such a leaf: refused here too, before the kernel's checks (as torch)


def check_inplace(name: str, out: Tensor, plan: Plan) -> None:
    """Raise PyTorch's errors when a result can't be written into `out` (the caller bumps its version)."""
    if plan.shape != out._v.shape:
        raise RuntimeError(f"output with shape {list(out._v.shape)} doesn't match the broadcast shape "
                           f"{list(plan.shape)}")
    if plan.dtype.category > out.dtype.category:
        raise RuntimeError(f"result type {torch_name(plan.dtype)} can't be cast to the desired output "
                           f"type {torch_name(out.dtype)}")


def _check_cast(op: ElemOp, args: tuple, out: Tensor) -> None:
    """torch's RuntimeError when op's result dtype can't be cast into `out` (checked before its kernels' dtypes)."""
    if op.rule in ("bool", "logical"):
        return
    dtypes = [a.dtype if isinstance(a, Tensor) else dt.scalar_dtype(a) for a in args]
    ndims = [a.ndim if isinstance(a, Tensor) else None for a in args]
    first = 1 if op.rule == "where" else 0
    result = _signature_dtype(op, dtypes[first:], ndims[first:])
    if op.rule == "float" and result.category < dt.FLOAT:
        result = dt.get_default_dtype()
    if result.category > out.dtype.category:
        raise RuntimeError(f"result type {torch_name(result)} can't be cast to the desired output type "
                           f"{torch_name(out.dtype)}")


def check_overlap(out: Tensor, args: tuple) -> None:
    """PyTorch's error when `out` overlaps itself (expanded) or partly overlaps an input."""
    check_out(out, args, elementwise=True)

