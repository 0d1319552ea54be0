"""torch's "limited support" for uint16, uint32 and uint64: the ops whose CPU kernels have no loop for them.

torch 2.13 runs these dtypes through copies and casts, creation (empty/zeros/ones/full, randint), views and
shape ops, cat/stack/roll/repeat, reads by slices and integer tensors, mul, eq/ne, bitwise and/or/xor,
floor/ceil/round/trunc, the floating functions (computed in the default float), sum/prod/cumsum/cumprod (into
int64) and sort/argsort/unique. Every other op refuses them with its kernel's NotImplementedError: the table
below (op -> torch's kernel name) is read where each op checks its dtypes, so tidal raises the same error.
Promotion with any dtype but a floating one is refused in tensor/dtype.py.
"""
from __future__ import annotations

from ...tensor import dtype as dt

__all__ = ["KERNELS", "FLOAT8_KERNELS", "COMPLEX32_KERNELS", "check"]

KERNELS = {
    # elementwise ops (ops/elementwise/declarations.py's names): checked on the promoted dtype
    "add": "add_stub", "sub": "add_stub", "floor_divide": "div_floor_cpu", "remainder": "remainder_cpu",
    "fmod": "fmod_cpu", "pow": "pow", "square": "pow", "maximum": "maximum_cpu", "minimum": "minimum_cpu",
    "fmax": "maximum_cpu", "fmin": "minimum_cpu", "hypot": "hypot_cpu", "logaddexp": "logaddexp_cpu",
    "logaddexp2": "logaddexp2_cpu", "nextafter": "nextafter_cpu", "lt": "lt_cpu", "le": "le_cpu", "gt": "gt_cpu",
    "ge": "ge_cpu", "logical_and": "logical_and_cpu", "logical_or": "logical_or_cpu",
    "logical_xor": "logical_xor_cpu", "logical_not": "logical_not_cpu", "bitwise_left_shift": "lshift_cpu",
    "bitwise_right_shift": "rshift_cpu", "bitwise_not": "bitwise_not_cpu", "neg": "neg_cpu", "sign": "sign_cpu",
    "sgn": "sign_cpu", "abs": "abs_cpu", "relu": "clamp_min_scalar_cpu", "clamp": "clamp_cpu",
    # (frac, hypot, logaddexp(2), nextafter and lerp refuse every integer type: elementwise.REAL_REJECT)
    # clamp with number bounds (ops/kernel_dtypes.check_clamp), div's trunc rounding
    "clamp_scalar": "clamp_scalar_cpu", "clamp_min_scalar": "clamp_min_scalar_cpu",
    "clamp_max_scalar": "clamp_max_scalar_cpu", "div_trunc": "div_trunc_cpu",
    # reductions (a sum-like op's dtype= argument: its kernel computes in that dtype)
    "max": "max_all", "min": "min_all", "amax": "max_values_cpu", "amin": "min_values_cpu", "max_dim": "max_cpu",
    "min_dim": "min_cpu", "argmax": "argmax_cpu", "argmin": "argmin_cpu", "aminmax": "aminmax_cpu",
    "count_nonzero": "nonzero_count_cpu", "nonzero": "nonzero_count_cpu", "cummax": "cummax_cpu",
    "cummin": "cummin_cpu", "median": "median_cpu",
    "kthvalue": "kthvalue_cpu", "mode": "mode_cpu", "topk": "topk_cpu", "histc": "aminmax_cpu",
    "bincount": "bincount_cpu", "median_dim": "median_out", "histc(min, max)": "linspace_cpu",
    "sum(dtype=)": "sum_cpu", "nansum(dtype=)": "sum_cpu",
    "prod(dtype=)": "prod_out_cpu", "cumsum(dtype=)": "cumsum_out_cpu", "cumprod(dtype=)": "cumprod_out_cpu",
    # (products: linalg.not_bool names their kernels)
    "gcd": "gcd_cpu", "lcm": "lcm_cpu", "heaviside": "heaviside_cpu", "addcmul": "addcmul_cpu_out",
    "threshold": "threshold_cpu",
    # indexing and movement
    "gather": "scatter_gather_tensor_cpu", "scatter": "scatter_gather_tensor_cpu",
    "scatter(value=)": "scatter_gather_scalar_cpu", "scatter_reduce(sum)": "scatter_gather_tensor_cpu",
    "scatter_reduce(prod)": "scatter_gather_tensor_cpu",
    "scatter_reduce(mean)": "scatter_gather_tensor_cpu_reduce_mean",
    "scatter_reduce(amax)": "scatter_gather_tensor_cpu_reduce_amax",
    "scatter_reduce(amin)": "scatter_gather_tensor_cpu_reduce_amin",
    "scatter_reduce(include_self=False)": "scatter_reduce_exclude_input_init", "index_reduce": "index_func_",
    "put_": "take_put_cpu",
    "index_select": "index_select", "index_add": "index_add_", "index_fill": "index_fill_cpu",
    "index_copy": "index_copy_cpu", "index_put": "index_put", "masked_fill": "masked_fill",
    "masked_select": "masked_select",
    "masked_scatter": "masked_scatter", "take": "take_cpu", "flip": "flip_cpu", "tril": "tril", "triu": "triu",
    "searchsorted": "searchsorted_out_cpu", "isin": "isin_default_cpu",
    # creation and random fills
    "arange": "arange_cpu", "linspace": "linspace_cpu", "logspace": "logspace_cpu", "eye": "eye",
    "randperm": "randperm", "uniform_": "check_uniform_bounds", "normal_": "normal_kernel_cpu",
    "bernoulli_": "bernoulli_scalar_cpu_", "bernoulli_(p tensor)": "bernoulli_tensor_cpu_self_",
}

# torch 2.13's float8 types run fewer kernels still: copies, casts, creation (empty/zeros/ones/full, eye), views
# and shape ops, cat/stack/roll/repeat, reads by slices, integer and boolean tensors, index_put, mul of two
# tensors, abs, eq/ne, isnan, where, any/all and mm; the others refuse them under these kernel names
FLOAT8_KERNELS = dict(KERNELS)
for _name in ("abs", "index_select", "index_put", "masked_select", "eye"):
    del FLOAT8_KERNELS[_name]
FLOAT8_KERNELS.update({
    "fmax": "fmax_cpu", "fmin": "fmin_cpu", "gather": "gather_expanded_index", "div": "div_cpu",
    "true_divide": "div_cpu", "reciprocal": "reciprocal_cpu", "sigmoid": "sigmoid_cpu_reduced_float",
    "isinf": "isinf", "isfinite": "isfinite", "lerp": "lerp_kernel_tensor", "sum": "sum_cpu", "mean": "sum_cpu",
    "nansum": "nansum_cpu", "nanmean": "nansum_cpu",
    "prod": "prod_out_cpu", "cumsum": "cumsum_out_cpu", "cumprod": "cumprod_out_cpu",
    "sort": "sorting_kernel_method_name", "argsort": "sorting_kernel_method_name", "unique": "unique", "unique_dim": "unique_dim", "std": "std_cpu",
    "norm": "norm_cpu", "dot": "dot", "mv": "addmv_impl_cpu", "bmm": "bmm", "softmax": "softmax_lastdim_kernel_impl",
    "equal": "equal_notnan_cpu", "rand": "check_uniform_bounds", "randn": "normal_kernel_cpu",
    **{name: f"{name}_vml_cpu" for name in ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
                                           "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
                                           "floor", "ceil", "round", "trunc", "erf", "erfc", "exp2")},
})


# torch 2.13's complex32 (ComplexHalf) runs copies and casts, creation (empty/zeros/ones/full, rand/randn and
# normal_/uniform_), views and shape ops, cat/stack/roll/repeat, reads and writes by index (index_select/add/fill/
# copy, index_put, masked_fill/select), where, tril/triu, add/sub/mul, neg/conj/sgn/abs, eq/ne, isnan/isinf/
# isfinite, nonzero/count_nonzero/any/all, norm/std/var, addcmul and isclose; of the ops it runs for complex64,
# these refuse it (ops that refuse every complex dtype keep their complex message, naming 'ComplexHalf')
COMPLEX32_KERNELS = {
    "div": "div_cpu", "div_trunc": "div_trunc_cpu", "pow": "pow", "square": "pow", "logaddexp": "logaddexp_cpu",
    "logical_and": "logical_and_cpu", "logical_or": "logical_or_cpu", "logical_xor": "logical_xor_cpu",
    "logical_not": "logical_not_cpu", "rsqrt": "rsqrt_cpu", "reciprocal": "reciprocal_cpu", "sigmoid": "sigmoid_cpu",
    "sinc": "sinc_cpu", "exp2": "exp2", "angle": "angle_cpu", "lerp": "lerp_kernel_tensor",
    "lerp(weight=number)": "lerp_kernel_scalar", "nan_to_num": "nan_to_num",
    **{name: f"{name}_vml_cpu" for name in ("exp", "expm1", "log", "log2", "log10", "log1p", "sqrt", "sin", "cos",
                                           "tan", "asin", "acos", "atan", "tanh")},
    **{name: f"{name}_cpu" for name in ("sinh", "cosh", "asinh", "acosh", "atanh")},
    # reductions and scans
    "sum": "sum_cpu", "mean": "sum_cpu", "prod": "prod_out_cpu", "cumsum": "cumsum_out_cpu",
    "cumprod": "cumprod_out_cpu", "logcumsumexp": "logcumsumexp_out_cpu", "max": "max_all", "min": "min_all",
    "amax": "max_values_cpu", "amin": "min_values_cpu", "aminmax": "aminmax_cpu", "histc": "aminmax_cpu",
    "cummax": "cummax_cpu", "cummin": "cummin_cpu", "median": "median_cpu", "median_dim": "median_out",
    "kthvalue": "kthvalue_cpu", "mode": "mode_cpu", "unique": "unique", "unique_dim": "unique_dim",
    "equal": "equal_notnan_cpu", "softmax": "softmax_lastdim_kernel_impl", "trace": "trace",
    "sum(dtype=)": "sum_cpu", "mean(dtype=)": "sum_cpu", "prod(dtype=)": "prod_out_cpu",
    "cumsum(dtype=)": "cumsum_out_cpu", "cumprod(dtype=)": "cumprod_out_cpu",
    # products
    "mm": "addmm_impl_cpu_", "addmm": "addmm_impl_cpu_", "mv": "addmv_impl_cpu", "dot": "dot", "vdot": "vdot",
    "bmm": "bmm", "cross": "cross", "addcdiv": "addcdiv_cpu_out",
    # indexing and movement
    "flip": "flip_cpu", "gather": "scatter_gather_tensor_cpu", "scatter": "scatter_gather_tensor_cpu",
    "scatter(value=)": "scatter_gather_scalar_cpu", "scatter_reduce(sum)": "scatter_gather_tensor_cpu",
    "scatter_reduce(prod)": "scatter_gather_tensor_cpu", "index_reduce": "index_func_", "take": "take_cpu",
    "put_": "take_put_cpu", "masked_scatter": "masked_scatter", "searchsorted": "searchsorted_out_cpu",
    "isin": "isin_default_cpu", "threshold": "threshold_cpu",
    # creation and random fills
    "arange": "arange_cpu", "linspace": "linspace_cpu", "eye": "eye", "randperm": "randperm",
    "bernoulli_": "bernoulli_scalar_cpu_",
}
_TABLES = {dt.complex32: COMPLEX32_KERNELS, **{d: FLOAT8_KERNELS for d in dt.FLOAT8}}


def check(op: str, d: dt.dtype) -> None:
    """torch's NotImplementedError when `op` has no kernel for `d` (a limited unsigned, float8 or complex32
    dtype)."""
    table = _TABLES.get(d, KERNELS)
    if d in dt.LIMITED and op in table:
        raise NotImplementedError(f'"{table[op]}" not implemented for \'{d.scalar_name}\'')
