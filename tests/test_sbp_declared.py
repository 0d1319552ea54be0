"""SBP families declared on the op records (comm/sbp_rules.py reads `Primitive.sbp` and `ElemOp.sbp`).

The table read off the declarations gives every public name the rule the hand-kept lists gave before it
(frozen below, name by name); a record declared with `sbp="reduction"` and nothing in tidal.comm runs on global
tensors under the reduction signatures (on real ranks: sbp_declared_ranks.py)."""
import pytest

import sbp_declared_ranks as R
import tidal
from comm_ranks import no_failures
from tidal.comm import sbp_rules
from tidal.ops.dispatch import kernel_launch
from tidal.ops.dispatch.primitive import PRIMITIVES, Primitive
from tidal.ops.elementwise.declarations import OPS

# The table before the families moved onto the records (session 18): family -> the public names it covered.
BEFORE = {
    "additive": ["__add__", "__radd__", "__rsub__", "__sub__", "add", "sub", "subtract"],
    "along_dim": ["cumprod", "cumsum", "log_softmax", "narrow", "softmax"],
    "averaging": ["mean"],
    "concat": ["cat", "concat", "concatenate"],
    "divisive": ["__truediv__", "div", "divide", "true_divide"],
    "elementwise": [
        "__abs__", "__and__", "__eq__", "__floordiv__", "__ge__", "__gt__", "__invert__", "__le__", "__lt__",
        "__mod__", "__ne__", "__or__", "__pow__", "__rpow__", "__rtruediv__", "__xor__", "abs", "absolute", "acos",
        "acosh", "addcdiv", "addcmul", "arctan2", "asin", "asinh", "atan", "atan2", "atanh", "bfloat16",
        "bitwise_and", "bitwise_left_shift", "bitwise_not", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
        "bool", "ceil", "celu", "clamp", "clamp_max", "clamp_min", "clip", "conj", "copysign", "cos", "cosh",
        "deg2rad", "digamma", "double", "elu", "eq", "erf", "erfc", "erfinv", "exp", "exp2", "expm1", "float",
        "float_power", "floor", "floor_divide", "fmax", "fmin", "fmod", "frac", "full_like", "ge", "gelu",
        "greater", "greater_equal", "gt", "half", "hardshrink", "hardsigmoid", "hardswish", "hardtanh",
        "heaviside", "hypot", "i0", "i1", "int", "isfinite", "isinf", "isnan", "isneginf", "isposinf", "le",
        "leaky_relu", "lerp", "less", "less_equal", "lgamma", "log", "log10", "log1p", "log2", "logaddexp",
        "logaddexp2", "logical_and", "logical_not", "logical_or", "logical_xor", "logit", "logsigmoid", "long",
        "lt", "maximum", "minimum", "mish", "nan_to_num", "ne", "nextafter", "not_equal", "ones_like", "pow",
        "rad2deg", "reciprocal", "relu", "relu6", "remainder", "round", "rsqrt", "selu", "sgn", "sigmoid",
        "sign", "signbit", "silu", "sin", "sinc", "sinh", "softplus", "softshrink", "softsign", "sqrt", "square",
        "tan", "tanh", "tanhshrink", "threshold", "to", "trunc", "type", "where", "xlogy"],
    "flatten": ["flatten"],
    "getitem": ["__getitem__"],
    "linear_unary": ["__neg__", "__pos__", "clone", "contiguous", "detach", "empty_like", "neg", "negative",
                     "positive", "zeros_like"],
    "matmul": ["__matmul__", "bmm", "matmul", "mm"],
    "movedim": ["moveaxis", "movedim"],
    "multiplicative": ["__mul__", "__rmul__", "mul", "multiply"],
    "normalization": ["group_norm", "layer_norm"],
    "permute": ["permute"],
    "reduction": ["all", "amax", "amin", "any", "argmax", "argmin", "count_nonzero", "logsumexp", "max", "min",
                  "nanmean", "prod"],
    "reshape": ["reshape", "view"],
    "select": ["select"],
    "squeeze": ["squeeze"],
    "summation": ["nansum", "sum"],
    "t": ["T", "t"],
    "transpose": ["swapaxes", "swapdims", "transpose"],
    "unsqueeze": ["unsqueeze"],
    "variance": ["std", "var"],
}
# Public names the declarations give a family that had none before: the records var and std run serve them too
NEW_PUBLIC = {"var_mean": "variance", "std_mean": "variance"}


def _public(name: str) -> bool:
    return any(hasattr(space, name) for space in (tidal, tidal.Tensor, tidal.nn.functional))


def test_every_name_keeps_its_rule():
    changed = {name: (family, sbp_rules.family_of(name)) for family, names in BEFORE.items() for name in names
               if sbp_rules.family_of(name) != family or sbp_rules.rule_for(name) is not sbp_rules.FAMILIES[family]}
    assert not changed, f"names whose family changed (was, now): {changed}"
    before = {name for names in BEFORE.values() for name in names}
    gained = {name: family for name, family in sbp_rules.table().items() if name not in before and _public(name)}
    assert gained == NEW_PUBLIC, "public ops given SBP signatures: check them on real ranks, then add them here"
    assert sbp_rules.rule_for("polygamma") is None and sbp_rules.rule_for("median") is None
    assert sbp_rules.rule_for("no_such_op") is None


def test_families_are_read_off_the_declarations():
    assert {PRIMITIVES[n].sbp for n in ("amax", "max", "max_all", "prod", "prod_half")} == {"reduction"}
    assert (PRIMITIVES["sum"].sbp, PRIMITIVES["mean"].sbp, PRIMITIVES["var_mean"].sbp) == \
        ("summation", "averaging", "variance")
    assert (PRIMITIVES["matmul"].sbp, PRIMITIVES["cat"].sbp, PRIMITIVES["cumsum"].sbp) == \
        ("matmul", "concat", "along_dim")
    assert PRIMITIVES["median"].sbp is None and PRIMITIVES["cummax"].sbp is None
    assert (OPS["exp"].sbp, OPS["add"].sbp, OPS["div"].sbp, OPS["neg"].sbp) == \
        ("elementwise", "additive", "divisive", "linear_unary")
    # an alias reads its target's declaration; a composite's family is its own
    assert sbp_rules.rule_for("mm") is sbp_rules.FAMILIES[PRIMITIVES["matmul"].sbp]
    assert sbp_rules.rule_for("__rsub__") is sbp_rules.FAMILIES[OPS["sub"].sbp]
    assert sbp_rules.family_of("layer_norm") == "normalization" and PRIMITIVES["layer_norm"].sbp is None
    # every family named anywhere has a rule
    families = {r.sbp for r in PRIMITIVES.values()} | {op.sbp for op in OPS.values()}
    families |= set(sbp_rules.COMPOSITES.values())
    assert families - {None} <= set(sbp_rules.FAMILIES)
    assert set(sbp_rules.ALIASES.values()) <= set(PRIMITIVES) | set(OPS)


def test_a_new_record_gets_its_family_with_no_edit_in_comm():
    name = "toy_sbp_record"
    assert sbp_rules.rule_for(name) is None
    Primitive(name, None, cpu=None, sbp="reduction")
    try:
        assert sbp_rules.rule_for(name) is sbp_rules.FAMILIES["reduction"]
        assert sbp_rules.table()[name] == "reduction"
    finally:   # (test_primitives checks every record a database reaches)
        del PRIMITIVES[name]
        for device_type in ("cpu", "cuda"):
            kernel_launch._kernels.pop((name, device_type), None)
    assert sbp_rules.rule_for(name) is None


@pytest.mark.timeout(120)
def test_declared_families_on_ranks(pool):
    no_failures(pool.run(R.declared_families, timeout=100))
