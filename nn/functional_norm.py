"""Normalization functions: layer_norm, rms_norm, group_norm, batch_norm, instance_norm, normalize.

Each is mean/variance arithmetic on tidal ops, run in float32 for 16-bit inputs and cast back. layer,
group and (training) batch norm are one autograd node each, as torch's native norms: the node saves the
input and the statistics, and its backward recomputes the normalized input. Running statistics
(batch_norm, instance_norm) are updated in place, outside the graph.
"""
from __future__ import annotations

import math

from .. import ops
from ..autograd import no_grad
from ..autograd.grad_mode import is_grad_enabled
from ..ops.rowwise import norm_rows
from ..ops.elementwise.plans import torch_name
from ..ops.movement.memory_format import in_format, suggest_memory_format
from ..ops.dispatch.node_names import torch_node
from ..ops.dispatch.primitive import Primitive
from ..tensor import Tensor
from ..tensor import dtype as dt
from ._util import opmath
from .functional_norm_half import HalfBatchNorm

_EPS = {dt.float32: 1.1920928955078125e-07, dt.float64: 2.220446049250313e-16}

__all__ = ["layer_norm", "rms_norm", "group_norm", "batch_norm", "instance_norm", "normalize",
           "local_response_norm"]


def _float_kernel(input: Tensor, kernel: str, complex_too: bool = False) -> None:
    """torch's NotImplementedError for an input its norm kernel has no code for (integers, bool; complex unless
    `complex_too`)."""
    if input.dtype.category != dt.FLOAT and not (complex_too and input.dtype.is_complex):
        raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(input.dtype)}'")


def _check_mixed(input: Tensor, *params) -> None:
    """torch's CPU rule for norm parameters (weight, bias, running stats) of another dtype than the input: only a
    float16/bfloat16 input may take them, and then only float32 ones."""
    first = next((p for p in params if p is not None), None)
    if first is None or first.dtype is input.dtype or input.device.type != "cpu":
        return
    if any(p is not None and p.dtype is not dt.float32 for p in params):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype not in (dt.float16, dt.bfloat16):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")


def _shape_tuple(shape) -> tuple:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def _affine(y: Tensor, weight: Tensor | None, bias: Tensor | None, shape: tuple | None = None) -> Tensor:
    if weight is not None:
        y = y * (weight if shape is None else weight.reshape(shape))
    if bias is not None:
        y = y + (bias if shape is None else bias.reshape(shape))
    return y


def _check_normalized_shape(input: Tensor, shape: tuple, star: str) -> None:
    k = len(shape)
    if k == 0:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one "
                           "element, but got normalized_shape = []")
    if input.dim() < k or tuple(input.shape[input.dim() - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[{star}{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}")


def layer_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize over the trailing `normalized_shape` dims, then scale by weight and shift by bias."""
    subclasses = ops.torch_function
    if subclasses.SUBCLASSES[0] and subclasses.first_is_subclass(input):  # (nested tensors answer it)
        handled, result = subclasses.dispatch_subclass(layer_norm, layer_norm,
                                                       (input, normalized_shape, weight, bias, eps), {})
        if handled:
            return result
    if ops.holds_global(input, weight, bias):
        # DTensors (sequence parallelism): run on local tensors, where the norm records its autograd node (the
        # composite below cannot attach one to a global tensor: its gradient was lost)
        return ops.global_dispatch("layer_norm", layer_norm, (input, normalized_shape, weight, bias, eps), {})
    shape = _shape_tuple(normalized_shape)
    _check_normalized_shape(input, shape, "*, ")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                               f"{list(t.shape)} and normalized_shape = {list(shape)}")
    _check_mixed(input, weight, bias)
    _float_kernel(input, "LayerNormKernelImpl")
    axes = tuple(range(-len(shape), 0))
    if _row_kernels_take(input, weight, bias):
        y, mean, rstd = norm_rows.layer_norm_rows(input, len(shape), eps, weight, bias)
        LAYER_NORM_ROWS.attach((input, weight, bias), (y,), (axes, eps, None, None), "native_layer_norm",
                               (input, mean, rstd, weight))
        return y
    return _normalized("native_layer_norm", input, axes, eps, weight, bias)[0]


def _row_kernels_take(input: Tensor, weight: Tensor | None, bias: Tensor | None) -> bool:
    """Whether ops/rowwise/norm_rows.py's kernels run this layer norm: a non-empty float32/float64 CPU tensor with
    parameters of its dtype (16-bit inputs, other devices, global and empty tensors take the composite)."""
    return (isinstance(input, Tensor) and input.dtype in (dt.float32, dt.float64) and input.device.type == "cpu"
            and input.numel() > 0 and all(t is None or isinstance(t, Tensor) and t.dtype is input.dtype
                                          for t in (weight, bias)))


def _layer_norm_rows_backward(node, g: Tensor) -> tuple:
    # one kernel; a create_graph backward (grad mode on) differentiates the composite's formula instead
    if is_grad_enabled():
        return _normalized_backward(node, g)
    input, mean, rstd, weight = node.saved_tensors
    k = len(node.attrs[0])
    grad_input, grad_weight, grad_bias = norm_rows.layer_norm_rows_backward(g, input, mean, rstd, weight, k)
    wants = [edge is not None for edge, _ in node.next_functions]
    return (grad_input if wants[0] else None, grad_weight if wants[1] and weight is not None else None,
            grad_bias if wants[2] and node.attrs[4] is not None else None)


def _normalized(name: str, input: Tensor, axes: tuple, eps: float, weight: Tensor | None, bias: Tensor | None,
                wshape: tuple | None = None, grouped: tuple | None = None, transform=None) -> tuple:
    """(x - mean) / sqrt(biased var + eps) over `axes` (of the input reshaped to `grouped`, if given), times
    weight plus bias (reshaped to `wshape`), as one autograd node `name` saving the input and the statistics,
    as torch's native norms (not a graph of its steps, whose saved intermediates would hold several
    input-sized tensors); (y, mean, var). `transform(x, mean, x - mean)`, if given, makes y instead (a 16-bit
    batch norm's rounded statistics: functional_norm_half)."""
    with no_grad():
        x = opmath(input) if grouped is None else opmath(input).reshape(grouped)
        mean = x.mean(axes, keepdim=True)
        centered = x - mean
        var = (centered * centered).mean(axes, keepdim=True)
        rstd = ops.rsqrt(var + eps)
        if transform is not None:
            y = transform(x, mean, centered)
        else:
            y = _affine((centered * rstd).reshape(tuple(input.shape)), weight, bias, wshape).to(input.dtype)
    NORMALIZED.attach((input, weight, bias), (y,), (axes, eps, wshape, grouped), name, (input, mean, rstd, weight))
    return y, mean, var


def _normalized_backward(node, g: Tensor) -> tuple:
    # the normalized input is recomputed (an elementwise group) rather than saved; under create_graph
    # the statistics are too, from the input, so that double backward sees them depend on it
    input, mean, rstd, weight = node.saved_tensors
    axes, eps, wshape, grouped, param = node.attrs
    shape = tuple(input.shape)
    x, g32 = opmath(input), opmath(g)
    if grouped is not None:
        x = x.reshape(grouped)
    if is_grad_enabled():
        mean = x.mean(axes, keepdim=True)
        centered = x - mean
        rstd = ops.rsqrt((centered * centered).mean(axes, keepdim=True) + eps)
    xhat = (x - mean) * rstd
    wants = [edge is not None for edge, _ in node.next_functions]
    grad_input = grad_weight = grad_bias = None
    if wants[0]:
        dy = g32 if weight is None else g32 * (weight if wshape is None else weight.reshape(wshape))
        if grouped is not None:
            dy = dy.reshape(grouped)
        grad_input = (rstd * (dy - dy.mean(axes, keepdim=True) - xhat * (dy * xhat).mean(axes, keepdim=True)))
        grad_input = grad_input.reshape(shape).to(input.dtype)
    if param is None:
        return grad_input, None, None
    # weight and bias gradients: summed over the dims they are broadcast along
    pshape, pdtype = param
    full = (1,) * (input.dim() - len(wshape or pshape)) + tuple(wshape or pshape)
    spread = tuple(d for d in range(input.dim()) if full[d] == 1)

    def reduced(t: Tensor) -> Tensor:  # (an empty dim list would sum over every dim)
        return (t.sum(spread) if spread else t).reshape(pshape).to(pdtype)
    if weight is not None and wants[1]:
        grad_weight = reduced(g32 * xhat.reshape(shape))
    if wants[2]:
        grad_bias = reduced(g32)
    return grad_input, grad_weight, grad_bias


def _norm_node_attrs(inputs: tuple, attrs: tuple) -> tuple:
    # the node's attrs: (axes, eps, wshape, grouped) and the parameters' (shape, dtype), which their gradients take
    weight, bias = inputs[1], inputs[2]
    param = weight if weight is not None else bias
    return attrs + (None if param is None else (tuple(param.shape), param.dtype),)


# the norms' nodes on (input, weight, bias), saving the input, the statistics and the weight (torch's
# NativeLayerNormBackward0, NativeGroupNormBackward0, NativeBatchNormBackward0 through node=): the row kernels'
# layer norm (its backward a kernel, but for create_graph) and the composite of every norm
LAYER_NORM_ROWS = Primitive("layer_norm", None, cpu=None, backward=_layer_norm_rows_backward,
                            node_attrs=_norm_node_attrs)
NORMALIZED = Primitive("native_norm", None, cpu=None, backward=_normalized_backward, node_attrs=_norm_node_attrs)


def rms_norm(input: Tensor, normalized_shape, weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """x / sqrt(mean(x^2) + eps) over the trailing dims, times weight."""
    shape = _shape_tuple(normalized_shape)
    _check_normalized_shape(input, shape, "*")
    _float_kernel(input, "rms_norm", complex_too=True)
    x = opmath(input)
    if eps is None:
        eps = _EPS[x.dtype.to_real()]  # machine epsilon of the compute dtype (its parts' for complex), as PyTorch
    dims = tuple(range(-len(shape), 0))
    y = (x * ops.rsqrt((x * x).mean(dims, keepdim=True) + eps)).to(input.dtype)
    return y if weight is None else y * weight


def group_norm(input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None,
               eps: float = 1e-5) -> Tensor:
    """Normalize each group of channels (dim 1) per sample, then an affine map per channel."""
    if ops.holds_global(input, weight, bias):
        # DTensors: on local tensors, as layer_norm (the composite cannot record a node for a global tensor)
        return ops.global_dispatch("group_norm", group_norm, (input, num_groups, weight, bias, eps), {})
    if input.dim() < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError("Expected number of channels in input to be divisible by num_groups, but got input of "
                           f"shape {list(input.shape)} and num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.dim() != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of channels in input, but "
                               f"got {name} of shape {list(t.shape)} and input of shape {list(input.shape)}")
    _check_mixed(input, weight, bias)
    _float_kernel(input, "GroupNormKernelImpl")
    # the group's size spelled out: -1 is ambiguous when the input is empty
    grouped = (n, num_groups, input.numel() // max(n * num_groups, 1))
    y = _normalized("native_group_norm", input, (2,), eps, weight, bias, (c,) + (1,) * (input.dim() - 2), grouped)[0]
    return in_format(y, suggest_memory_format(input))  # torch's kernel writes the format the input suggests


def _verify_batch_size(size) -> None:
    values = size[0]
    for s in size[2:]:
        values *= s
    if values == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")


def _check_features(name: str, features: int, t: Tensor | None) -> None:
    if t is not None and t.numel() != features:
        raise RuntimeError(f"{name} should contain {features} elements not {t.numel()}")


def _empty_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None) -> Tensor:
    """What PyTorch's batch_norm gives for an empty input: a copy, times weight[0], plus bias[0] (graph kept)."""
    out = input.clone()
    if weight is not None:
        out = out * weight[0]
    if bias is not None:
        out = out + bias[0]
    return out


def _update_running(running: Tensor | None, batch_value: Tensor, momentum: float) -> None:
    """running <- (1 - momentum) * running + momentum * batch_value, in place and outside the graph."""
    if running is None:
        return
    with no_grad():
        running.copy_(running * (1.0 - momentum) + batch_value.detach().to(running.dtype) * momentum)


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,
               weight: Tensor | None = None, bias: Tensor | None = None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each channel (dim 1) by batch statistics (training, updating the running ones) or running ones."""
    if ops.holds_global(input, weight, bias):
        # DTensors: on local tensors, as layer_norm (the composite cannot record a node for a global tensor)
        return ops.global_dispatch("batch_norm", batch_norm, (input, running_mean, running_var, weight, bias,
                                                              training, momentum, eps), {})
    if training:
        _verify_batch_size(input.shape)
        if eps <= 0.0:
            raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if input.numel() == 0:
        return _empty_norm(input, weight, bias)
    # PyTorch's checks, in its order; a 1-D input has 0 features
    c = input.shape[1] if input.dim() > 1 else 0
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is None and not training:
            raise RuntimeError(f"{name} must be defined in evaluation mode")
        _check_features(name, c, t)
    _check_features("weight", c, weight)
    _check_features("bias", c, bias)
    if input.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    _float_kernel(input, "batch_norm")
    _check_mixed(input, weight, bias, running_mean, running_var)
    bshape = (c,) + (1,) * (input.dim() - 2)
    if training:
        axes = (0,) + tuple(range(2, input.dim()))
        half = None
        if input.dtype in (dt.float16, dt.bfloat16) and input.device.type == "cpu":
            mixed = any(t is not None and t.dtype is dt.float32 for t in (weight, bias, running_mean, running_var))
            half = HalfBatchNorm(input, weight, bias, axes, bshape, eps, mixed)
        y, mean, var = _normalized("native_batch_norm", input, axes, eps, weight, bias, bshape, transform=half)
        if half is not None:
            with no_grad():
                half.update_running(running_mean, running_var, momentum)
            return y
        count = input.numel() // c
        _update_running(running_mean, mean.reshape(c), momentum)
        _update_running(running_var, var.reshape(c) * (count / max(count - 1, 1)), momentum)
        return y
    if running_mean is None or running_var is None:
        raise RuntimeError(f"running_{'mean' if running_mean is None else 'var'} must be defined in "
                           "evaluation mode")
    scale = ops.rsqrt(opmath(running_var).reshape(bshape) + eps)
    y = (opmath(input) - opmath(running_mean).reshape(bshape)) * scale
    # (torch's node saves the input, the weight and the running statistics: its composite's node holds them)
    return torch_node(_affine(y, weight, bias, bshape).to(input.dtype), "native_batch_norm", input, weight,
                      running_mean, running_var, bias)


def instance_norm(input: Tensor, running_mean: Tensor | None = None, running_var: Tensor | None = None,
                  weight: Tensor | None = None, bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """Normalize each (sample, channel) over its spatial dims; running stats average the batch's."""
    if use_input_stats and math.prod(input.shape[2:]) == 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size {input.shape}")
    if input.dim() < 2:
        raise IndexError("Dimension out of range (expected to be in range of [-1, 0], but got 1)")
    n, c = input.shape[0], input.shape[1]
    for name, t in (("running_mean", running_mean), ("running_var", running_var)):
        if t is not None and t.numel() != c:  # PyTorch checks the stats repeated once per sample
            raise RuntimeError(f"{name} should contain {n * c} elements not {n * t.numel()}")
    if input.numel() == 0:  # PyTorch repeats the weight per sample: none when the batch is empty
        per_sample = [None if t is None else t.repeat(n) for t in (weight, bias)]
        return _empty_norm(input, *per_sample)
    _float_kernel(input, "batch_norm")
    bshape = (c,) + (1,) * (input.dim() - 2)
    input = input.contiguous()  # torch normalizes a contiguous (1, n * c, ...) view: a row-major result
    x = opmath(input)
    if not use_input_stats:
        return torch_node(batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps), "view",
                          input, weight, bias)
    spatial = tuple(range(2, input.dim()))
    mean = x.mean(spatial, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(spatial, keepdim=True)
    count = input.numel() // (n * c)
    _update_running(running_mean, mean.reshape(n, c).mean(0), momentum)
    _update_running(running_var, var.reshape(n, c).mean(0) * (count / (count - 1)), momentum)
    y = centered * ops.rsqrt(var + eps)
    # torch's nodes: the view back from its batch norm over (1, n * c, ...), which saves that view of the input
    out = torch_node(_affine(y, weight, bias, bshape).to(input.dtype), "native_batch_norm",
                     input.view((1, n * c) + tuple(input.shape[2:])), None, None, None)
    return torch_node(out, "view", input, weight, bias)


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12, out: Tensor | None = None) -> Tensor:
    """input / max(||input||_p along dim, eps)."""
    denom = input.norm(p, dim, keepdim=True).clamp_min(eps)
    result = input / denom
    return result if out is None else out.copy_(result)


def local_response_norm(input: Tensor, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Tensor:
    """Normalize each element by the energy of its `size` neighbouring channels."""
    if input.dim() < 3:
        # torch's message carries the indentation of its source line's continuation
        raise ValueError(f"Expected 3D or higher dimensionality{' ' * 26}input (got {input.dim()} dimensions)")
    if input.numel() == 0:
        return input
    sq = (input * input).unsqueeze(1)  # (N, 1, C, ...)
    pad_front, pad_back = size // 2, (size - 1) // 2
    c = input.shape[1]
    zeros = [ops.zeros(tuple(sq.shape[:2]) + (n,) + tuple(sq.shape[3:]), dtype=sq.dtype, device=sq.device)
             for n in (pad_front, pad_back)]
    padded = ops.cat([zeros[0], sq, zeros[1]], 2)
    # the sum over a window of channels, divided by `size`, as avg_pool over the channel dim does
    window = sum(ops.narrow(padded, 2, i, c) for i in range(size)) / size
    div = (window.squeeze(1) * alpha + k) ** beta
    return input / div
