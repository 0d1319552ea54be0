"""How symbolic tracing records a torch.nn.functional call, as torch's tracer does (torch.fx).

torch's functional wrappers hand a traced call to `__torch_function__` with their own argument list, so its
graph shows `torch.nn.functional.relu(x, inplace = False)` or `dropout(x, p = 0.1, training = True, inplace =
False)`: the parameters the wrapper passes positionally, then the rest by keyword with their defaults filled in.
The functions torch implements in C read `torch._C._nn.gelu(x)` with the arguments as given, and a few
wrappers just call a Tensor method (`F.sigmoid(x)` records `x.sigmoid()`). RULES says which, per function:
a `(parameters, recorded positionally, recorded by keyword)` triple, 'C:<torch spelling>' or 'M:<method>'.
It was read off torch 2.13's torch/nn/functional.py (each wrapper's `handle_torch_function` call).

A few tidal functions are one object under both names (`F.relu is torch.relu`): which name the program used
is read from the calling instruction's receiver (`F.relu`, `nn.functional.relu` vs `torch.relu`).
"""
from __future__ import annotations

import dis
import inspect
import os
import sys
from typing import Any

from ..nn import functional

__all__ = ["RULES", "recorded_call", "c_spellings"]

RULES: dict = {
    'adaptive_avg_pool1d': 'C:torch.adaptive_avg_pool1d',
    'adaptive_avg_pool2d': ('input, output_size', 'input output_size', ''),
    'adaptive_avg_pool3d': ('input, output_size', 'input output_size', ''),
    'adaptive_max_pool1d': ('input, output_size, return_indices=False', 'input output_size', 'return_indices'),
    'adaptive_max_pool1d_with_indices': (
        'input, output_size, return_indices=False',
        'input output_size',
        'return_indices'),
    'adaptive_max_pool2d': ('input, output_size, return_indices=False', 'input output_size', 'return_indices'),
    'adaptive_max_pool2d_with_indices': (
        'input, output_size, return_indices=False',
        'input output_size',
        'return_indices'),
    'adaptive_max_pool3d': ('input, output_size, return_indices=False', 'input output_size', 'return_indices'),
    'adaptive_max_pool3d_with_indices': (
        'input, output_size, return_indices=False',
        'input output_size',
        'return_indices'),
    'affine_grid': ('theta, size, align_corners=None', 'theta size', 'align_corners'),
    'alpha_dropout': ('input, p=0.5, training=False, inplace=False', 'input', 'p training inplace'),
    'avg_pool1d': 'C:torch.avg_pool1d',
    'avg_pool2d': 'C:torch._C._nn.avg_pool2d',
    'avg_pool3d': 'C:torch._C._nn.avg_pool3d',
    'batch_norm': (
        'input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05',
        'input running_mean running_var',
        'weight bias training momentum eps'),
    'bilinear': 'C:torch.bilinear',
    'binary_cross_entropy': (
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean'",
        'input target',
        'weight size_average reduce reduction'),
    'binary_cross_entropy_with_logits': (
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean', pos_weight=None",
        'input target',
        'weight size_average reduce reduction pos_weight'),
    'celu': ('input, alpha=1.0, inplace=False', 'input', 'alpha inplace'),
    'celu_': 'C:torch.celu_',
    'channel_shuffle': 'C:torch.channel_shuffle',
    'conv1d': 'C:torch.conv1d',
    'conv2d': 'C:torch.conv2d',
    'conv3d': 'C:torch.conv3d',
    'conv_tbc': 'C:torch.conv_tbc',
    'conv_transpose1d': 'C:torch.conv_transpose1d',
    'conv_transpose2d': 'C:torch.conv_transpose2d',
    'conv_transpose3d': 'C:torch.conv_transpose3d',
    'cosine_embedding_loss': (
        "input1, input2, target, margin=0, size_average=None, reduce=None, reduction='mean'",
        'input1 input2 target',
        'margin size_average reduce reduction'),
    'cosine_similarity': 'C:torch.cosine_similarity',
    'cross_entropy': (
        'input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, '
        "reduction='mean', label_smoothing=0.0",
        'input target',
        'weight size_average ignore_index reduce reduction label_smoothing'),
    'ctc_loss': (
        "log_probs, targets, input_lengths, target_lengths, blank=0, reduction='mean', zero_infinity=False",
        'log_probs targets input_lengths target_lengths',
        'blank reduction zero_infinity'),
    'dropout': ('input, p=0.5, training=True, inplace=False', 'input', 'p training inplace'),
    'dropout1d': ('input, p=0.5, training=True, inplace=False', 'input', 'p training inplace'),
    'dropout2d': ('input, p=0.5, training=True, inplace=False', 'input', 'p training inplace'),
    'dropout3d': ('input, p=0.5, training=True, inplace=False', 'input', 'p training inplace'),
    'elu': ('input, alpha=1.0, inplace=False', 'input', 'alpha inplace'),
    'elu_': 'C:torch._C._nn.elu_',
    'embedding': (
        'input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False',
        'input weight',
        'padding_idx max_norm norm_type scale_grad_by_freq sparse'),
    'embedding_bag': (
        'input, weight, offsets=None, max_norm=None, norm_type=2, scale_grad_by_freq=False, '
        "mode='mean', sparse=False, per_sample_weights=None, include_last_offset=False, "
        'padding_idx=None',
        'input weight',
        'offsets max_norm norm_type scale_grad_by_freq mode sparse per_sample_weights '
        'include_last_offset padding_idx'),
    'feature_alpha_dropout': ('input, p=0.5, training=False, inplace=False', 'input', 'p training inplace'),
    'fold': (
        'input, output_size, kernel_size, dilation=1, padding=0, stride=1',
        'input output_size kernel_size',
        'dilation padding stride'),
    'fractional_max_pool2d': (
        'input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None',
        'input kernel_size',
        'output_size output_ratio return_indices _random_samples'),
    'fractional_max_pool2d_with_indices': (
        'input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None',
        'input kernel_size',
        'output_size output_ratio return_indices _random_samples'),
    'fractional_max_pool3d': (
        'input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None',
        'input kernel_size',
        'output_size output_ratio return_indices _random_samples'),
    'fractional_max_pool3d_with_indices': (
        'input, kernel_size, output_size=None, output_ratio=None, return_indices=False, _random_samples=None',
        'input kernel_size',
        'output_size output_ratio return_indices _random_samples'),
    'gaussian_nll_loss': (
        "input, target, var, full=False, eps=1e-06, reduction='mean'",
        'input target var',
        'full eps reduction'),
    'gelu': 'C:torch._C._nn.gelu',
    'glu': ('input, dim=-1', 'input', 'dim'),
    'grid_sample': (
        "input, grid, mode='bilinear', padding_mode='zeros', align_corners=None",
        'input grid',
        'mode padding_mode align_corners'),
    'group_norm': ('input, num_groups, weight=None, bias=None, eps=1e-05', 'input num_groups', 'weight bias eps'),
    'gumbel_softmax': ('logits, tau=1, hard=False, eps=1e-10, dim=-1', 'logits', 'tau hard eps dim'),
    'hardshrink': 'C:torch.hardshrink',
    'hardsigmoid': ('input, inplace=False', 'input', 'inplace'),
    'hardswish': ('input, inplace=False', 'input', 'inplace'),
    'hardtanh': ('input, min_val=-1.0, max_val=1.0, inplace=False', 'input', 'min_val max_val inplace'),
    'hardtanh_': 'C:torch._C._nn.hardtanh_',
    'has_torch_function': 'C:torch._C._has_torch_function',
    'has_torch_function_unary': 'C:torch._C._has_torch_function_unary',
    'has_torch_function_variadic': 'C:torch._C._has_torch_function_variadic',
    'hinge_embedding_loss': (
        "input, target, margin=1.0, size_average=None, reduce=None, reduction='mean'",
        'input target',
        'margin size_average reduce reduction'),
    'huber_loss': (
        "input, target, reduction='mean', delta=1.0, weight=None",
        'input target',
        'reduction delta weight'),
    'instance_norm': (
        'input, running_mean=None, running_var=None, weight=None, bias=None, use_input_stats=True, '
        'momentum=0.1, eps=1e-05',
        'input',
        'running_mean running_var weight bias use_input_stats momentum eps'),
    'interpolate': (
        "input, size=None, scale_factor=None, mode='nearest', align_corners=None, "
        'recompute_scale_factor=None, antialias=False',
        'input',
        'size scale_factor mode align_corners recompute_scale_factor antialias'),
    'kl_div': (
        "input, target, size_average=None, reduce=None, reduction='mean', log_target=False",
        'input target',
        'size_average reduce reduction log_target'),
    'l1_loss': (
        "input, target, size_average=None, reduce=None, reduction='mean', weight=None",
        'input target',
        'size_average reduce reduction'),
    'layer_norm': (
        'input, normalized_shape, weight=None, bias=None, eps=1e-05',
        'input normalized_shape',
        'weight bias eps'),
    'leaky_relu': ('input, negative_slope=0.01, inplace=False', 'input', 'negative_slope inplace'),
    'leaky_relu_': 'C:torch._C._nn.leaky_relu_',
    'linear': 'C:torch._C._nn.linear',
    'linear_cross_entropy': (
        "input, linear_weight, target, *, linear_bias=None, weight=None, reduction='mean', "
        'ignore_index=None, label_smoothing=0.0, options=None',
        'input linear_weight target',
        'linear_bias weight reduction ignore_index label_smoothing options'),
    'local_response_norm': ('input, size, alpha=0.0001, beta=0.75, k=1.0', 'input size', 'alpha beta k'),
    'log_softmax': ('input, dim=None, _stacklevel=3, dtype=None', 'input', 'dim _stacklevel dtype'),
    'logsigmoid': 'C:torch._C._nn.log_sigmoid',
    'lp_pool1d': (
        'input, norm_type, kernel_size, stride=None, ceil_mode=False',
        'input norm_type kernel_size',
        'stride ceil_mode'),
    'lp_pool2d': (
        'input, norm_type, kernel_size, stride=None, ceil_mode=False',
        'input norm_type kernel_size',
        'stride ceil_mode'),
    'lp_pool3d': (
        'input, norm_type, kernel_size, stride=None, ceil_mode=False',
        'input norm_type kernel_size',
        'stride ceil_mode'),
    'margin_ranking_loss': (
        "input1, input2, target, margin=0, size_average=None, reduce=None, reduction='mean'",
        'input1 input2 target',
        'margin size_average reduce reduction'),
    'max_pool1d': (
        'input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False',
        'input kernel_size',
        'stride padding dilation ceil_mode return_indices'),
    'max_pool1d_with_indices': (
        'input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False',
        'input kernel_size',
        'stride padding dilation ceil_mode return_indices'),
    'max_pool2d': (
        'input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False',
        'input kernel_size',
        'stride padding dilation ceil_mode return_indices'),
    'max_pool2d_with_indices': (
        'input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False',
        'input kernel_size',
        'stride padding dilation ceil_mode return_indices'),
    'max_pool3d': (
        'input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False',
        'input kernel_size',
        'stride padding dilation ceil_mode return_indices'),
    'max_pool3d_with_indices': (
        'input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False',
        'input kernel_size',
        'stride padding dilation ceil_mode return_indices'),
    'max_unpool1d': (
        'input, indices, kernel_size, stride=None, padding=0, output_size=None',
        'input indices kernel_size',
        'stride padding output_size'),
    'max_unpool2d': (
        'input, indices, kernel_size, stride=None, padding=0, output_size=None',
        'input indices kernel_size',
        'stride padding output_size'),
    'max_unpool3d': (
        'input, indices, kernel_size, stride=None, padding=0, output_size=None',
        'input indices kernel_size',
        'stride padding output_size'),
    'mish': ('input, inplace=False', 'input', 'inplace'),
    'mse_loss': (
        "input, target, size_average=None, reduce=None, reduction='mean', weight=None",
        'input target',
        'size_average reduce reduction weight'),
    'multi_head_attention_forward': (
        'query, key, value, embed_dim_to_check, num_heads, in_proj_weight, in_proj_bias, bias_k, '
        'bias_v, add_zero_attn, dropout_p, out_proj_weight, out_proj_bias, training=True, '
        'key_padding_mask=None, need_weights=True, attn_mask=None, use_separate_proj_weight=False, '
        'q_proj_weight=None, k_proj_weight=None, v_proj_weight=None, static_k=None, static_v=None, '
        'average_attn_weights=True, is_causal=False',
        'query key value embed_dim_to_check num_heads in_proj_weight in_proj_bias bias_k bias_v '
        'add_zero_attn dropout_p out_proj_weight out_proj_bias',
        'training key_padding_mask need_weights attn_mask is_causal use_separate_proj_weight '
        'q_proj_weight k_proj_weight v_proj_weight static_k static_v average_attn_weights'),
    'multi_margin_loss': (
        "input, target, p=1, margin=1.0, weight=None, size_average=None, reduce=None, reduction='mean'",
        'input target',
        'p margin weight size_average reduce reduction'),
    'multilabel_margin_loss': (
        "input, target, size_average=None, reduce=None, reduction='mean'",
        'input target',
        'size_average reduce reduction'),
    'multilabel_soft_margin_loss': (
        "input, target, weight=None, size_average=None, reduce=None, reduction='mean'",
        'input target',
        'weight size_average reduce reduction'),
    'native_channel_shuffle': 'C:torch.native_channel_shuffle',
    'nll_loss': (
        "input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction='mean'",
        'input target',
        'weight size_average ignore_index reduce reduction'),
    'normalize': ('input, p=2.0, dim=1, eps=1e-12, out=None', 'input', 'p dim eps out'),
    'one_hot': 'C:torch._C._nn.one_hot',
    'pad': ("input, pad, mode='constant', value=None", 'input pad', 'mode value'),
    'pairwise_distance': 'C:torch.pairwise_distance',
    'pdist': 'C:torch.pdist',
    'pixel_shuffle': 'C:torch.pixel_shuffle',
    'pixel_unshuffle': 'C:torch.pixel_unshuffle',
    'poisson_nll_loss': (
        "input, target, log_input=True, full=False, size_average=None, eps=1e-08, reduce=None, reduction='mean'",
        'input target',
        'log_input full size_average eps reduce reduction'),
    'prelu': 'C:torch.prelu',
    'relu': ('input, inplace=False', 'input', 'inplace'),
    'relu6': ('input, inplace=False', 'input', 'inplace'),
    'relu_': 'C:torch.relu_',
    'rms_norm': ('input, normalized_shape, weight=None, eps=None', 'input normalized_shape', 'weight eps'),
    'rrelu': (
        'input, lower=0.125, upper=0.3333333333333333, training=False, inplace=False',
        'input',
        'lower upper training inplace'),
    'rrelu_': 'C:torch.rrelu_',
    'scaled_dot_product_attention': 'C:torch._C._nn.scaled_dot_product_attention',
    'selu': ('input, inplace=False', 'input', 'inplace'),
    'selu_': 'C:torch.selu_',
    'sigmoid': 'M:sigmoid',
    'silu': ('input, inplace=False', 'input', 'inplace'),
    'smooth_l1_loss': (
        "input, target, size_average=None, reduce=None, reduction='mean', beta=1.0",
        'input target',
        'size_average reduce reduction beta'),
    'soft_margin_loss': (
        "input, target, size_average=None, reduce=None, reduction='mean'",
        'input target',
        'size_average reduce reduction'),
    'softmax': ('input, dim=None, _stacklevel=3, dtype=None', 'input', 'dim _stacklevel dtype'),
    'softmin': ('input, dim=None, _stacklevel=3, dtype=None', 'input', 'dim _stacklevel dtype'),
    'softplus': 'C:torch._C._nn.softplus',
    'softshrink': 'C:torch._C._nn.softshrink',
    'softsign': ('input', 'input', ''),
    'tanh': 'M:tanh',
    'tanhshrink': ('input', 'input', ''),
    'threshold_': 'C:torch.threshold_',
    'triplet_margin_loss': (
        'anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, size_average=None, '
        "reduce=None, reduction='mean'",
        'anchor positive negative',
        'margin p eps swap size_average reduce reduction'),
    'triplet_margin_with_distance_loss': (
        "anchor, positive, negative, *, distance_function=None, margin=1.0, swap=False, reduction='mean'",
        'anchor positive negative',
        'distance_function margin swap reduction'),
    'unfold': (
        'input, kernel_size, dilation=1, padding=0, stride=1',
        'input kernel_size',
        'dilation padding stride'),
}

_SIGNATURES: dict = {}


def _signature(name: str, params: str) -> inspect.Signature:
    sig = _SIGNATURES.get(name)
    if sig is None:
        sig = _SIGNATURES[name] = inspect.signature(eval(f"lambda {params}: None"))  # noqa: S307 - literals only
    return sig


def _functional():
    return functional


def _original(space: Any, name: str) -> Any:
    """space.<name>, seen through the wrapper a trace installs on it."""
    value = getattr(space, name, None)
    return getattr(value, "__fx_original__", value)


def _user_frame():
    """The innermost frame outside tidal's package (the tests count as user code)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
    tests = os.path.join(root, "tests") + os.sep
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(root) and \
            not frame.f_code.co_filename.startswith(tests):
        frame = frame.f_back
    return frame


def _called_as_functional(name: str) -> bool:
    """For an F function that is also torch.<name>: whether the user's call spelled it through a functional
    module: the receiver of the nearest load of `name` before the calling instruction (`F.relu`,
    `nn.functional.relu`, or a bare `relu` imported from it; a same-named call nested in the arguments can
    mislead this reading, which then records torch's other spelling)."""
    F = _functional()
    frame = _user_frame()
    if frame is None:
        return False
    instructions = [i for i in dis.get_instructions(frame.f_code) if i.offset <= frame.f_lasti]
    for k in range(len(instructions) - 1, 0, -1):
        inst = instructions[k]
        if inst.opname in ("LOAD_ATTR", "LOAD_METHOD") and inst.argval == name:
            prev = instructions[k - 1]
            if prev.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                return prev.argval == "functional"
            if prev.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF"):
                return {**frame.f_globals, **frame.f_locals}.get(prev.argval) is F  # (F or torch.nn.functional)
            return False
        if inst.opname in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_DEREF") and inst.argval == name:
            return True  # a bare name: imported from torch.nn.functional, as scripts usually do
    return False


def recorded_call(fn: Any, args: tuple, kwargs: dict) -> tuple | None:
    """(op, target, args, kwargs, spelling) as torch's tracer records a call of `fn` (a tidal.nn.functional
    function), or None to record it as called; `spelling`, when not None, is how the node's target must read
    (node.meta["torch_spelling"]): the F name of a function that is also torch.<name>."""
    name = getattr(fn, "__name__", None)
    rule = RULES.get(name)
    if rule is None or _original(_functional(), name) is not fn or isinstance(rule, str) and rule.startswith("C:"):
        return None
    import tidal.compat as compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
    spelling = None
    if getattr(compat, name, None) is fn:
        if not _called_as_functional(name):
            return None  # torch.<name>(...): recorded as called
        spelling = f"torch.nn.functional.{name}"  # (the object's other name, torch.<name>, would print otherwise)
    if isinstance(rule, str):  # 'M:<method>': the wrapper calls a Tensor method on its input
        if len(args) != 1 or kwargs:
            return None
        return "call_method", rule[2:], args, {}, None
    params, positional, keyword = rule
    try:
        bound = _signature(name, params).bind(*args, **kwargs)
    except TypeError:
        return None  # a call torch would refuse: recorded as made, so running it raises the same error
    bound.apply_defaults()
    values = bound.arguments
    return ("call_function", fn, tuple(values[p] for p in positional.split()),
            {k: values[k] for k in keyword.split()}, spelling)


def c_spellings() -> dict:
    """id(tidal function) -> (torch spelling, function) for the F functions torch implements in C."""
    F = _functional()
    import tidal.compat as compat  # compat sits above: KNOWN_UPWARD in tests/test_layers.py
    out = {}
    for name, rule in RULES.items():
        if not (isinstance(rule, str) and rule.startswith("C:")):
            continue
        fn = getattr(F, name, None)
        spelled = rule[2:]
        if fn is None or getattr(compat, name, None) is fn and not spelled.startswith("torch._C."):
            continue
        if spelled.startswith("torch._C.") or getattr(compat, spelled.rsplit(".", 1)[-1], None) is not None:
            out[id(fn)] = (spelled, fn)
    return out
