"""Behaviour probed from PyTorch's own unit tests, session 20 (test_reductions.py, test_indexing.py,
test_binary_ufuncs.py, test_unary_ufuncs.py, test_tensor_creation_ops.py, test_foreach.py,
test/nn/test_parametrization.py; test/nn/test_module_hooks.py, test_init.py, test_dropout.py and test_autograd.py were
probed alike and agreed): each
case runs the same calls on torch and on tidal.compat and compares values, dtypes, or the error's type and first
line (see torch_probe_helpers). The cases below are the places where tidal differed, fixed."""
import warnings

import pytest

from torch_probe_helpers import assert_same, registry
from torch_probe_helpers import errs


def _errs(calls) -> list:
    """Each call's result, or its error's type and first line (torch's argument errors list the overloads after)."""
    return [(o[0], o[1].split("\n")[0]) if isinstance(o, tuple) and len(o) == 2 and isinstance(o[1], str) else o
            for o in errs(calls)]

PROBES, probe = registry()
PATCHED, patched = registry()  # cases fixed by patches to lead-owned files (s20_torchtests_1..3)


# -- in-place results stored in a narrower dtype, read again in the same window (test_binary_ufuncs) -----------
def _narrow_then_read(t, dtype_name: str, other_name: str, write):
    x = (t.tensor([1.25, 3.3, -7.7, 0.1], dtype=t.float64) * 3).to(getattr(t, dtype_name))
    y = (t.tensor([2.5, 6.6, 15.4, 0.2], dtype=t.float64) / 3).to(getattr(t, other_name))
    write(x, y)
    return [x * 1, x.double() + 0, x.sum()]  # readers queued right after the write


@patched
def half_inplace_with_float_operand_is_rounded(t):
    out = []
    for low in ("float16", "bfloat16"):
        for write in (lambda x, y: x.add_(y), lambda x, y: x.mul_(y), lambda x, y: x.div_(y),
                      lambda x, y: x.addcmul_(y, y), lambda x, y: x.add_(y, alpha=-0.1),
                      lambda x, y: x.clamp_(min=y), lambda x, y: t.sub(x, y, out=x)):
            out.append(_narrow_then_read(t, low, "float32", write))
    return out


@patched
def float_inplace_with_double_operand_is_rounded(t):
    x = t.tensor([1.25, 2.0])
    x.add_(t.tensor([1e-9, 1 / 3], dtype=t.float64))
    return [(x.double() + 0).tolist(), x.sum().item()]  # tolist keeps all float64 digits


@patched
def small_int_inplace_wraps_before_a_reader(t):
    out = []
    for low in ("int8", "uint8", "int16"):
        x = t.tensor([100, 120, 30]).to(getattr(t, low))
        x.add_(t.tensor([100, 300, -50]))
        y = t.tensor([100, 120, 30]).to(getattr(t, low))
        y.mul_(t.tensor([3, 3, 3]))
        out += [x.float(), y.double() * 1]  # (a cast reads the stored value: x * 1 rounds by itself)
    return out


# -- logical ops between bool and float16/bfloat16 (test_binary_ufuncs) ------------------------------------------
@patched
def logical_ops_bool_with_half(t):
    flags = t.tensor([[1., -1., 2.]]) > 0
    out = []
    for low in (t.float16, t.bfloat16):
        h = t.tensor([[1.25, 0., 0.]], dtype=low)
        out += [t.logical_and(flags, h), t.logical_or(h, flags), t.logical_xor(flags, h),
                t.logical_and(t.tensor([2, 0, 1]), h)]
    return out


# -- complex to bool: nonzero, imaginary part included (test_unary_ufuncs, test_type_promotion) --------------------
@patched
def complex_to_bool_counts_the_imaginary_part(t):
    z = t.tensor([1j, 0j, 1 + 0j, -2j])
    return [z.bool(), z.to(t.bool), t.logical_not(z), t.logical_and(z, t.tensor([1j, 1j, 0j, 1j])), (z * 2).bool()]


@probe
def complex_to_bool_does_not_warn(t):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        t.tensor([0j, 2 + 0j]).bool()  # (torch warns once per process for a real cast: that one is not compared)
    return [str(w.message).split(" (Triggered")[0] for w in seen]


# -- unary functions' out= dtype rules (test_unary_ufuncs) ------------------------------------------------------
@probe
def unary_out_dtype_rules(t):
    inputs = {"float": t.tensor([1.5, -2.5, float("nan")]), "int": t.tensor([3, -4, 0]),
              "bool": t.tensor([True, False, True]),
              "half": t.tensor([1.5, -2.5, 0.], dtype=t.float16), "complex": t.tensor([1 + 1j, -2j, 0j])}
    names = ("abs", "neg", "sign", "sgn", "ceil", "floor", "round", "trunc", "frac", "bitwise_not", "fix",
             "conj_physical", "signbit", "isposinf", "isneginf", "isnan", "isinf", "isfinite", "positive", "relu",
             "nan_to_num", "exp", "sqrt", "logical_not", "square", "angle")
    out = []
    for name in names:
        for key, x in inputs.items():
            for dtype in (t.float64, t.int64, t.bool):
                target = t.zeros(3, dtype=dtype)
                out.append(_errs([lambda: (getattr(t, name)(x, out=target), target)[1]])[0])
    out += _errs([lambda: t.heaviside(t.tensor([-1., 0., 2.]), t.tensor([0.5]), out=t.zeros(3, dtype=t.float64)),
                  lambda: t.heaviside(t.tensor([-1., 0., 2.]), t.tensor([0.5]), out=t.zeros(3))])
    return out


# -- div with rounding_mode into an integer tensor (test_binary_ufuncs) --------------------------------------------
@probe
def trunc_division_in_place_refuses_a_lower_kind(t):
    return _errs([lambda: t.tensor([5, 7]).div_(t.tensor([2., 2.]), rounding_mode="trunc"),
                  lambda: t.tensor([True, False]).div_(t.tensor([2, 2]), rounding_mode="trunc"),
                  lambda: t.div(t.tensor([5, 7]), 2.5, rounding_mode="trunc", out=t.empty(2, dtype=t.int64)),
                  lambda: t.tensor([5., 7.]).div_(t.tensor([2, 2]), rounding_mode="trunc"),
                  lambda: t.tensor([5, -7], dtype=t.int32).div_(t.tensor([2, 2]), rounding_mode="trunc"),
                  lambda: t.tensor([5, 7]).div_(t.tensor([2., 2.]), rounding_mode="floor")])


@probe
def div_rounding_mode_name_is_checked(t):
    return _errs([lambda: t.div(t.ones(2), 2, rounding_mode="bad"), lambda: t.ones(2).div_(2, rounding_mode="x"),
                  lambda: t.div(t.ones(2, requires_grad=True), 2, rounding_mode="round")])


# -- numbers into small integer tensors: wrapped where torch's check lets them pass (test_indexing, scatter) --------
@probe
def small_int_fill_values_wrap_or_refuse(t):
    def filled(op, dtype, value):
        x = t.tensor([1, 2], dtype=dtype)
        if op == "index_fill":
            return x.index_fill(0, t.tensor([0]), value)
        if op == "scatter":
            return x.scatter(0, t.tensor([1]), value)
        return x.scatter_(0, t.tensor([0]), value, reduce="add")
    out = []
    for op in ("index_fill", "scatter", "scatter_add"):
        for dtype, value in ((t.uint8, -1), (t.uint8, -255), (t.uint8, -256), (t.uint8, 256), (t.int8, 127),
                             (t.int8, 200), (t.int8, -129), (t.int16, -1)):
            out.append(_errs([lambda: filled(op, dtype, value)])[0])
    return out


@probe
def bool_add_casts_alpha_to_bool(t):
    out = []
    for alpha in (2, 0, -1, True, False, 1, 2.5):
        for other in (t.tensor([True, False]), True, False, t.tensor(False)):
            out += _errs([lambda: t.add(t.tensor([True, False]), other, alpha=alpha)])
    return out


@probe
def special_kernels_refuse_the_dtypes_torch_lacks(t):
    dtypes = (t.bool, t.uint8, t.int64, t.float16, t.bfloat16, t.float32, t.complex64)
    kind = lambda call: _errs([lambda: call().dtype])[0]  # (the result's dtype or the refusal; values elsewhere)
    out = []
    for name in ("bessel_j0", "airy_ai", "erfcx", "ndtri", "log_ndtr", "i0e", "i1e", "entr"):
        for dtype in dtypes:
            out.append(kind(lambda: getattr(t.special, name)(t.ones(2, dtype=dtype))))
    for fn in (t.igamma, t.igammac, t.special.zeta, t.special.xlog1py, t.special.chebyshev_polynomial_t):
        for a in dtypes:
            for b in (t.int64, t.float16, t.bfloat16, t.float64):
                out.append(kind(lambda: fn(t.ones(2, dtype=a) * 2, t.ones(2, dtype=b))))
        out += [kind(lambda: fn(t.ones(2, dtype=t.int64), t.tensor(2.))),
                kind(lambda: fn(t.tensor(2.), t.ones(2, dtype=t.float16)))]
    return out


# -- gcd/lcm and ldexp result dtypes (test_binary_ufuncs) ---------------------------------------------------------
@probe
def gcd_lcm_zero_dim_operand_yields(t):
    a = t.tensor([4, 6, -9], dtype=t.int8)
    return _errs([lambda: t.gcd(a, t.tensor(2)), lambda: t.lcm(t.tensor(3), a), lambda: t.gcd(a, t.tensor([2, 4, 3])),
                  lambda: t.gcd(t.tensor(4, dtype=t.int16), t.tensor(6)), lambda: t.gcd(a, t.tensor(2.)),
                  lambda: t.lcm(t.tensor([5], dtype=t.uint8), t.tensor(3))])


@probe
def ldexp_result_dtypes(t):
    out = []
    for x in (t.tensor([1.5, -2.], dtype=t.float16), t.tensor(1.5, dtype=t.float64), t.tensor([3, 4]),
              t.tensor([1.5, 2.], dtype=t.bfloat16), t.tensor(2, dtype=t.int32), t.tensor([1.5 + 1j])):
        for e in (t.tensor([3, -1]), t.tensor(2, dtype=t.int8), t.tensor([1., 2.]), t.tensor([True, False]),
                  t.tensor([2., 1.], dtype=t.float64)):
            with warnings.catch_warnings():  # (torch's own resize deprecation for a 0-d input: not compared)
                warnings.simplefilter("ignore")
                out.append(_errs([lambda: t.ldexp(x, e)])[0])
    return out


# -- cat into an out= of a lower kind (test_tensor_creation_ops) ----------------------------------------------------
@probe
def cat_out_refuses_a_lower_kind(t):
    def into(dtype, *xs):
        out = t.empty(2 * len(xs), dtype=dtype)
        return t.cat(list(xs), out=out)
    return _errs([lambda: into(t.int64, t.ones(2), t.ones(2)), lambda: into(t.bool, t.ones(2, dtype=t.int64)),
                  lambda: into(t.float32, t.ones(2, dtype=t.complex64)),
                  lambda: into(t.float64, t.ones(2, dtype=t.int64)),
                  lambda: into(t.bool, t.ones(2, dtype=t.bool)), lambda: into(t.int8, t.ones(2, dtype=t.uint8))])


@probe
def factories_resize_their_out(t):
    out = []
    for make in (lambda o: t.arange(4, out=o), lambda o: t.eye(2, 3, out=o), lambda o: t.linspace(0, 1, 3, out=o),
                 lambda o: t.zeros(2, out=o), lambda o: t.full((2,), 3., out=o), lambda o: t.logspace(0, 1, 3, out=o),
                 lambda o: t.ones(2, 2, out=o), lambda o: t.arange(1., 2., 0.5, out=o)):
        for size in (0, 1, 5):
            target = t.zeros(size)
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                res = _errs([lambda: make(target) is target])[0]
            out += [res, target, [str(w.message).split(" (Triggered")[0] for w in seen]]
    return out


@probe
def complex_ranges(t):
    return _errs([lambda: t.linspace(1 + 1j, 2 + 2j, 3), lambda: t.linspace(0, 1j, 3), lambda: t.linspace(0, 1j, 1),
                  lambda: t.linspace(0, 1j, 0), lambda: t.linspace(t.tensor(1j), 2, 3),
                  lambda: t.linspace(0, 1, 3, dtype=t.complex128), lambda: t.linspace(0, 1j, 3, dtype=t.float64),
                  lambda: t.logspace(0, 1j, 3), lambda: t.logspace(1j, 1j, 1),
                  lambda: t.logspace(0, 2, 3, dtype=t.complex64),
                  lambda: t.logspace(0, 1j, 2, dtype=t.float32), lambda: t.arange(3, dtype=t.complex64),
                  lambda: t.arange(1j), lambda: t.arange(0, 3, 1j)])


# -- parametrizations (test/nn/test_parametrization.py) -------------------------------------------------------------
def _summing_inverse(t):
    class Identity(t.nn.Module):  # its right_inverse changes the stored original's shape
        def forward(self, x):
            return x

        def right_inverse(self, x):
            return x.sum()
    return Identity()


@probe
def parametrization_checks_the_shape_before_right_inverse(t):
    P = t.nn.utils.parametrize
    safe, unsafe = t.nn.Linear(3, 3), t.nn.Linear(3, 3)
    out = _errs([lambda: P.register_parametrization(safe, "weight", _summing_inverse(t))])
    P.register_parametrization(unsafe, "weight", _summing_inverse(t), unsafe=True)
    return [o if isinstance(o, tuple) else type(o).__name__ for o in out] + \
        [tuple(unsafe.weight.shape), tuple(unsafe.parametrizations.weight.original.shape)]


@probe
def parametrized_module_pickles_only_by_state_dict(t):
    import copy
    import io
    import pickle
    P = t.nn.utils.parametrize

    class Twice(t.nn.Module):
        def forward(self, x):
            return 2 * x
    m = t.nn.Linear(2, 2)
    with t.no_grad():
        m.weight.copy_(t.tensor([[1., 2.], [3., 4.]]))
    P.register_parametrization(m, "weight", Twice())
    twin = copy.deepcopy(m)
    with t.no_grad():
        twin.parametrizations.weight.original.fill_(0.5)  # the copy is its own
    return _errs([lambda: pickle.dumps(m), lambda: t.save(m, io.BytesIO()), lambda: type(twin).__name__,
                  lambda: twin.weight, lambda: m.weight, lambda: sorted(twin.state_dict())])


@probe
def all_any_into_uint8_out(t):
    out = []
    for dtype in (t.uint8, t.float32, t.bool, t.int64):
        for into in (t.uint8, t.bool, t.int64):
            x = t.tensor([[1, 0], [2, 3]]).to(dtype)
            out += _errs([lambda: t.all(x, 0, out=t.zeros(2, dtype=into)),
                          lambda: t.any(x, 1, out=t.zeros(2, dtype=into)),
                          lambda: t.any(x, out=t.zeros((), dtype=into))])
    return out


@probe
def index_fill_complex_number_and_unravel_shape_checks(t):
    out = []
    for dtype in (t.float32, t.int64, t.bool, t.complex64):
        for value in (1 + 1j, 2 + 0j):
            out += _errs([lambda: t.tensor([[1, 2]], dtype=dtype).index_fill_(1, t.tensor([0]), value)])
    for shape in (t.tensor([1, 2, 3]), (1, 2, 2.0), [2, 3], 2.5, (2, True), t.Size([2, 3]), (t.tensor(2), 3), 4):
        out += _errs([lambda: t.unravel_index(t.tensor([1]), shape)])
    return out


@probe
def deleting_an_item_is_a_type_error(t):
    x = t.ones(3)

    def delete():
        del x[0]
    return _errs([delete])


# -- median, nanmedian and mode into out= (test_reductions.py) --------------------------------------------------
@probe
def order_statistics_into_out(t):
    x = t.tensor([[3., 1., 2.], [5., 5., 0.], [1., float("nan"), 7.]])
    out = []
    for f in (t.median, t.nanmedian, t.mode):
        for values, indices in ((t.zeros(3, dtype=t.float64), t.zeros(3, dtype=t.long)),
                                (t.zeros(3), t.zeros(3, dtype=t.int32)), (t.zeros(0), t.zeros(0, dtype=t.long))):
            out += _errs([lambda: type(f(x, 1, out=(values, indices))).__name__]) + [values, indices]
        v, i = t.zeros(3, 2), t.zeros(3, 2, dtype=t.long)
        res = f(x, 0, out=(v[:, 1], i[:, 1]))  # (written through the views)
        out += [res[0] is not None, v, i]
        out += _errs([lambda: f(x, out=(t.zeros(0), t.zeros(0, dtype=t.long)))])
    out += _errs([lambda: t.mode(x, 1, out=t.zeros(3))])
    return out


# -- torch._foreach_* (test_foreach.py) ------------------------------------------------------------------------
def _three(t, dtype=None):
    xs = [t.arange(4.) - 1.5, t.arange(6.).view(2, 3) / 7, t.tensor(2.5)]
    return xs if dtype is None else [x.to(dtype) for x in xs]


@probe
def foreach_unary_forms(t):
    out = []
    for name in ("abs", "exp", "sqrt", "sigmoid", "neg", "round", "frac", "reciprocal", "lgamma", "sign"):
        for dtype in (None, t.float16, t.int64):
            out.append(_errs([lambda: getattr(t, f"_foreach_{name}")(_three(t, dtype))])[0])
            xs = _three(t, dtype)
            changed = _errs([lambda: getattr(t, f"_foreach_{name}_")(xs) is xs])[0]
            out += [changed, xs]
    return out


@probe
def foreach_binary_operand_kinds(t):
    out = []
    seconds = {"list": lambda: [x * 0 + 2 for x in _three(t)], "number": lambda: 2.0,
               "numbers": lambda: [1.0, 2, 3.5], "0-d": lambda: t.tensor(3.), "1-d": lambda: t.tensor([3.])}
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "clamp_min", "clamp_max"):
        for kind, other in seconds.items():
            xs = _three(t)
            out += _errs([lambda: getattr(t, f"_foreach_{name}")(_three(t), other()),
                          lambda: getattr(t, f"_foreach_{name}_")(xs, other())]) + [xs]
    out += _errs([lambda: t._foreach_add(_three(t), _three(t), alpha=2),
                  lambda: t._foreach_sub(_three(t), t.tensor(1.), alpha=3),
                  lambda: t._foreach_pow(2.0, _three(t)), lambda: t._foreach_add([t.ones(2, dtype=t.int64)], 1.5),
                  lambda: t._foreach_mul([t.ones(2, dtype=t.float16), t.ones(2)],
                                         [t.ones(2), t.ones(2, dtype=t.float64)])])
    return out


@probe
def foreach_pointwise_reductions_and_copies(t):
    ends = [x * 2 + 1 for x in _three(t)]
    xs, ys = _three(t), _three(t)
    return _errs([lambda: t._foreach_addcmul(_three(t), _three(t), ends, value=0.5),
                  lambda: t._foreach_addcdiv(_three(t), _three(t), ends, [1., 2., 3.]),
                  lambda: t._foreach_addcmul(_three(t), _three(t), ends, t.tensor([1., 2., 3.])),
                  lambda: t._foreach_addcdiv_(xs, ends, ends, 2) is xs, lambda: xs,
                  lambda: t._foreach_lerp(_three(t), ends, 0.3), lambda: t._foreach_lerp(_three(t), ends, _three(t)),
                  lambda: t._foreach_lerp_(ys, ends, [0.1, 0.2, 0.3]), lambda: t._foreach_norm(_three(t)),
                  lambda: t._foreach_norm(_three(t), 1), lambda: t._foreach_norm(_three(t), float("inf")),
                  lambda: t._foreach_norm(_three(t, t.float16), 2, dtype=t.float32), lambda: t._foreach_max(_three(t)),
                  lambda: t._foreach_max([t.ones(0)]), lambda: t._foreach_zero_(_three(t)),
                  lambda: t._foreach_copy_(_three(t), ends), lambda: t._foreach_clone(_three(t)),
                  lambda: t._foreach_mm([t.ones(2, 3)], [t.ones(3, 2)]), lambda: t._foreach_powsum(_three(t), 3)])


@probe
def foreach_list_checks(t):
    return _errs([lambda: t._foreach_add(_three(t), _three(t)[:2]), lambda: t._foreach_add([], []),
                  lambda: t._foreach_mul([], 1.), lambda: t._foreach_add(_three(t), [1., 2.]),
                  lambda: t._foreach_mul([t.ones(3), t.ones(2)], [t.ones(2), t.ones(2)]),
                  lambda: t._foreach_add_([t.ones(2, dtype=t.int64)], 1.5),
                  lambda: t._foreach_exp_([t.ones(2, dtype=t.int64)]),
                  lambda: t._foreach_neg([t.ones(2, dtype=t.bool)]),
                  lambda: t._foreach_addcmul(_three(t), _three(t), _three(t)[:1]),
                  lambda: t._foreach_add(_three(t), t.ones(2)), lambda: t._foreach_div(_three(t), t.tensor([2.]))])


@probe
def foreach_gradients(t):
    xs = [x.clone().requires_grad_() for x in _three(t)]
    ws = [x.clone().requires_grad_() for x in _three(t)]
    total = sum(y.sum() for y in t._foreach_mul(t._foreach_exp(xs), ws))
    total = total + sum(n for n in t._foreach_norm(ws))
    total.backward()
    return [x.grad for x in xs] + [w.grad for w in ws]


@probe
def amp_unscale_and_scale_update(t):
    grads = [t.tensor([1., 2.]), t.tensor([float("inf")]), t.tensor([4.], dtype=t.float16)]
    found, clean, clean_found = t.zeros(1), [t.tensor([1., 2.])], t.zeros(1)
    out = [t._amp_foreach_non_finite_check_and_unscale_(grads, found, t.tensor([0.5])), grads, found,
           t._amp_foreach_non_finite_check_and_unscale_(clean, clean_found, t.tensor([0.25])), clean, clean_found]
    out += _errs([lambda: t._amp_foreach_non_finite_check_and_unscale_(grads, t.zeros(2), t.tensor([0.5])),
                  lambda: t._amp_foreach_non_finite_check_and_unscale_(grads, t.zeros(1, dtype=t.float64), t.ones(1)),
                  lambda: t._amp_foreach_non_finite_check_and_unscale_(grads, t.zeros(1), t.ones(2))])
    scale, tracker = t.tensor([4.]), t.tensor([0], dtype=t.int32)
    for inf_seen in (1., 0., 0., 0., 1., 0., 0.):  # backoff, two clean steps grow it, ...
        out += [t._amp_update_scale_(scale, tracker, t.tensor([inf_seen]), 2.0, 0.5, 2) is scale, scale.clone(),
                tracker.clone()]
    huge, one = t.tensor([3e38]), t.tensor([1], dtype=t.int32)
    t._amp_update_scale_(huge, one, t.zeros(1), 2.0, 0.5, 2)  # (a grown scale that overflows is not taken)
    return out + [huge, one] + _errs([lambda: t._amp_update_scale_(scale, t.tensor([0]), t.zeros(1), 2.0, 0.5, 2)])


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert_same(fn)


@pytest.mark.parametrize("fn", PATCHED, ids=lambda fn: fn.__name__)
def test_same_as_torch_patched(fn):  # (patches s20_torchtests_1..3, applied at b2e2517)
    assert_same(fn)
