"""Elementwise ops, each declared once as a scalar expression template.

`_declare(rule, arity, {name: template})` adds ops to OPS; the tables after them give the templates where
complex, integer or 16-bit inputs compute otherwise, and the dtypes torch's kernels refuse. Dispatch (plans.py)
plans a call from its op's record and the public functions (arithmetic.py) are made from OPS; each op's
backward formula is in derivatives.py.
"""
from __future__ import annotations

from ...tensor import dtype as dt


class ElemOp:
    """One elementwise op: template, arity and dtype rule.

    rule: 'same' (promoted dtype), 'float' (ints become the default float), 'bool' (comparison:
    computes in the promoted dtype, returns bool), 'logical' (inputs as bool, returns bool),
    'int' (integers and bool only), 'keep' (unary: the input's dtype), 'where' (promotes inputs 1
    and 2; input 0 is the bool condition).
    sbp: the family of SBP signatures it runs under on global tensors (comm/sbp_rules.py): "elementwise",
    or a wider family where the op is linear in an operand (SBP_FAMILIES below).
    """

    __slots__ = ("name", "template", "nin", "rule", "no_bool", "sbp")

    def __init__(self, name: str, template: str, nin: int, rule: str, no_bool: bool = False):
        self.name, self.template, self.nin, self.rule, self.no_bool = name, template, nin, rule, no_bool
        self.sbp = "elementwise"


OPS: dict[str, ElemOp] = {}


def _declare(rule: str, nin: int, table: dict, no_bool: bool = False) -> None:
    for name, template in table.items():
        OPS[name] = ElemOp(name, template, nin, rule, no_bool)


# relu and clamp keep the input where it equals a bound (relu(-0.0) is -0.0, as torch's clamp kernels): NumPy's
# maximum returns its second operand on such a tie and numba's its first, so neither spells them; a NaN bound
# gives NaN (torch's clamp with a number bound), and with min > max every element is max
_RELU = "where({0} < 0, 0, {0})"
_AT_LEAST = "where(({0} < {1}) | ({1} != {1}), {1}, {0})"
_CLAMP = f"where(({{2}} < {_AT_LEAST}) | ({{2}} != {{2}}), {{2}}, {_AT_LEAST})"
_declare("same", 2, {"add": "{0} + {1}", "mul": "{0} * {1}", "maximum": "np.maximum({0}, {1})",
                     "minimum": "np.minimum({0}, {1})",
                     # torch's fmax/fmin keep the first operand on a tie (-0.0 and 0.0), as NumPy's do not
                     "fmax": "where(({0} < {1}) | ({0} != {0}), {1}, {0})",
                     "fmin": "where(({1} < {0}) | ({0} != {0}), {1}, {0})"})
_declare("same", 2, {"sub": "{0} - {1}", "floor_divide": "np.floor_divide({0}, nonzero_divisor({1}))",
                     "remainder": "remainder_torch({0}, nonzero_divisor({1}))",  # (torch's signed zeros)
                     "fmod": "np.fmod({0}, nonzero_divisor({1}))",
                     "pow": "np.power({0}, {1})"}, no_bool=True)
_declare("float", 2, {"div": "{0} / {1}", "atan2": "np.arctan2({0}, {1})", "hypot": "np.hypot({0}, {1})",
                      "logaddexp": "np.logaddexp({0}, {1})", "logaddexp2": "np.logaddexp2({0}, {1})",
                      "copysign": "np.copysign({0}, {1})", "nextafter": "np.nextafter({0}, {1})",
                      # (0 * log(y) is +0 for either zero, as torch's `if (x == 0) return 0`)
                      "xlogy": "where(np.isnan({1}), {1}, where({0} == 0, {0} - {0}, {0} * np.log({1})))",
                      "polygamma": "polygamma({1}, {0})"})
_declare("bool", 2, {"eq": "{0} == {1}", "ne": "{0} != {1}", "lt": "{0} < {1}", "le": "{0} <= {1}",
                     "gt": "{0} > {1}", "ge": "{0} >= {1}"})
_declare("logical", 2, {"logical_and": "{0} & {1}", "logical_or": "{0} | {1}", "logical_xor": "{0} ^ {1}"})
_declare("logical", 1, {"logical_not": "~{0}"})
_declare("int", 2, {"bitwise_and": "{0} & {1}", "bitwise_or": "{0} | {1}", "bitwise_xor": "{0} ^ {1}",
                    "bitwise_left_shift": "np.left_shift({0}, {1})",
                    "bitwise_right_shift": "np.right_shift({0}, {1})"})
_declare("int", 1, {"bitwise_not": "np.invert({0})"})
_declare("keep", 1, {"neg": "-{0}", "sign": "sgn({0})", "square": "{0} * {0}"})
_declare("keep", 1, {"abs": "np.abs({0})", "floor": "np.floor({0})", "ceil": "np.ceil({0})",
                     "trunc": "np.trunc({0})", "round": "np.rint({0})", "frac": "{0} - np.trunc({0})",
                     "relu": _RELU, "positive": "{0}"}, no_bool=True)
_declare("bool", 1, {"isnan": "np.isnan({0})", "isinf": "np.isinf({0})", "isfinite": "np.isfinite({0})",
                     "isposinf": "np.isinf({0}) & ({0} > 0)", "isneginf": "np.isinf({0}) & ({0} < 0)",
                     "signbit": "np.signbit({0})"})
_declare("float", 1, {
    "exp": "np.exp({0})", "exp2": "np.exp2({0})", "expm1": "np.expm1({0})", "log": "np.log({0})",
    "log2": "np.log2({0})", "log10": "np.log10({0})", "log1p": "np.log1p({0})", "sqrt": "np.sqrt({0})",
    "rsqrt": "1 / np.sqrt({0})", "reciprocal": "1 / {0}", "sin": "np.sin({0})", "cos": "np.cos({0})",
    "tan": "np.tan({0})", "asin": "np.arcsin({0})", "acos": "np.arccos({0})", "atan": "np.arctan({0})",
    "sinh": "np.sinh({0})", "cosh": "np.cosh({0})", "tanh": "np.tanh({0})", "asinh": "np.arcsinh({0})",
    "acosh": "np.arccosh({0})", "atanh": "np.arctanh({0})", "sigmoid": "1 / (1 + np.exp(-{0}))",
    "erf": "erf({0})", "erfc": "erfc({0})", "lgamma": "lgamma({0})", "deg2rad": "np.deg2rad({0})",
    "rad2deg": "np.rad2deg({0})", "sinc": "np.sinc({0})", "logit": "np.log({0} / (1 - {0}))",
    "erfinv": "erfinv({0})", "digamma": "digamma({0})", "i0": "bessel_i0({0})", "i1": "bessel_i1({0})"})
_declare("same", 3, {"clamp": _CLAMP})
# PyTorch's two-sided lerp: exact at both ends, and the same rounding as torch's
_declare("float", 3, {"lerp": "where(np.abs({2}) < 0.5, {0} + {2} * ({1} - {0}), {1} - ({1} - {0}) * (1 - {2}))"})
_declare("where", 3, {"where": "where({0}, {1}, {2})"})
# relu's backward in one pass (torch's threshold_backward): 0 where the input is at or below the threshold,
# else the gradient (a NaN input passes it, as torch's) (`{2} - {2}`: a zero of the computing dtype, exact even
# where the gradient is NaN)
_declare("same", 3, {"threshold_backward": "where({1} <= {2}, {2} - {2}, {0})"}, no_bool=True)
# sgn: sign, and z/|z| for complex inputs (COMPLEX_TEMPLATES); conj: the identity for real inputs
_declare("keep", 1, {"sgn": "sgn({0})", "conj": "np.conj({0})"})
# Global tensors: the ops with more SBP signatures than the elementwise ones, as they are linear in an operand
# (add/sub: P + P -> P; mul: P times broadcast -> P; div: P over broadcast -> P; neg/positive: P -> P).
# polygamma (the order n first) declares none yet: it runs on broadcast inputs, as before.
SBP_FAMILIES = {"add": "additive", "sub": "additive", "mul": "multiplicative", "div": "divisive",
                "neg": "linear_unary", "positive": "linear_unary", "polygamma": None}
for _name, _family in SBP_FAMILIES.items():
    OPS[_name].sbp = _family

# Complex inputs: templates where NumPy's complex spelling differs, and the ops torch refuses
# (exception type, message; {t} is the dtype's C++ name). Complex groups run on the NumPy path.
COMPLEX_TEMPLATES = {"sgn": "where({0} == 0, {0} * 0, {0} / np.abs({0}))",
                     # torch's: the larger real part plus log1p(exp(other - it)), its imaginary part unwrapped
                     "logaddexp": "where(np.real({0}) >= np.real({1}), {0} + np.log1p(np.exp({1} - {0})), "
                                  "{1} + np.log1p(np.exp({0} - {1})))"}
# Integer inputs: round is the identity (np.rint would go through float64: int64 past 2**53 would change)
INT_TEMPLATES = {"round": "{0}"}
# float16/bfloat16 inputs where torch's kernel rounds an intermediate to the 16-bit dtype ({R}: that cast):
# xlogy's std::log of a Half/BFloat16 returns one
HALF_TEMPLATES = {"xlogy": "where(np.isnan({1}), {1}, where({0} == 0, {0} - {0}, {0} * {R}(np.log({1}))))"}
_NOT_FOR = "{op} is not supported for complex inputs"
COMPLEX_REJECT = {name: (NotImplementedError, f'"{kernel}" not implemented for \'{{t}}\'')
                  for name, kernel in dict(
                      floor_divide="div_floor_cpu", remainder="remainder_cpu", fmod="fmod_cpu", atan2="atan2_cpu",
                      hypot="hypot_cpu", logaddexp2="logaddexp2_cpu", copysign="copysign_cpu",
                      nextafter="nextafter_cpu", xlogy="xlogy_cpu", polygamma="trigamma", lt="lt_cpu", le="le_cpu",
                      gt="gt_cpu", ge="ge_cpu", bitwise_and="bitwise_and_cpu", bitwise_or="bitwise_or_cpu",
                      bitwise_xor="bitwise_xor_cpu", bitwise_left_shift="lshift_cpu",
                      bitwise_right_shift="rshift_cpu", bitwise_not="bitwise_not_cpu", round="round_vml_cpu",
                      frac="frac_cpu", erf="erf_vml_cpu", erfc="erfc_vml_cpu", lgamma="lgamma_vml_cpu",
                      logit="logit_cpu", erfinv="erfinv_vml_cpu", digamma="digamma", i0="i0_vml_cpu",
                      i1="i1_cpu").items()}
COMPLEX_REJECT.update({name: (RuntimeError, f"{name} not implemented for complex tensors.")
                       for name in ("maximum", "minimum", "fmax", "fmin")})
COMPLEX_REJECT.update({name: (NotImplementedError, f"{name} is not supported for complex inputs")
                       for name in ("floor", "ceil", "trunc")})
COMPLEX_REJECT.update({name: (NotImplementedError, "clamp is not supported for complex types")
                       for name in ("relu", "clamp")})
COMPLEX_REJECT.update({name: (RuntimeError, f"{name} does not support complex inputs.")
                       for name in ("isposinf", "isneginf")})
COMPLEX_REJECT.update({name: (RuntimeError, f"{name} is not supported for complex tensors.")
                       for name in ("deg2rad", "rad2deg")})
COMPLEX_REJECT.update(
    sign=(NotImplementedError, "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use "
                               "torch.sgn instead."),
    signbit=(NotImplementedError, "signbit is not implemented for complex tensors."))
_REAL_RESULT = ("abs",)  # complex in, real out
# Real dtypes torch's CPU kernels have no loop for: op -> (refused categories, exception, message), {t} the
# promoted dtype's C++ name as in COMPLEX_REJECT (kernel_dtypes checks clamp's number bounds, lerp's dtypes)
_NOT_IMPLEMENTED = '"{}" not implemented for \'{{t}}\''
REAL_REJECT = {name: (kinds, NotImplementedError, _NOT_IMPLEMENTED.format(kernel)) for kinds, kernels in (
    ((dt.FLOAT,), dict(bitwise_and="bitwise_and_cpu", bitwise_or="bitwise_or_cpu", bitwise_xor="bitwise_xor_cpu",
                       bitwise_not="bitwise_not_cpu")),
    ((dt.BOOL, dt.FLOAT), dict(bitwise_left_shift="lshift_cpu", bitwise_right_shift="rshift_cpu")),
    ((dt.BOOL,), dict(abs="abs_cpu", floor="floor_vml_cpu", ceil="ceil_vml_cpu", trunc="trunc_vml_cpu",
                      round="round_vml_cpu", floor_divide="div_floor_cpu", remainder="remainder_cpu", fmod="fmod_cpu",
                      pow="pow", clamp="clamp_cpu")),
    ((dt.BOOL, dt.INT), dict(frac="frac_cpu", hypot="hypot_cpu", logaddexp="logaddexp_cpu",
                             logaddexp2="logaddexp2_cpu", nextafter="nextafter_cpu", lerp="lerp_kernel_tensor")))
    for name, kernel in kernels.items()}
REAL_REJECT["positive"] = ((dt.BOOL,), RuntimeError, "The `+` operator, on a bool tensor is not supported.")
REAL_REJECT["neg"] = ((dt.BOOL,), RuntimeError, "Negation, the `-` operator, on a bool tensor is not supported. If you "
                      "are trying to invert a mask, use the `~` or `logical_not()` operator instead.")
_EXACT = ("nextafter",)  # computed in the result's own dtype (the next float16 is not float32's, rounded)
