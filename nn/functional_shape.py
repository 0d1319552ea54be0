"""Lookups, padding, resampling and distances: embedding, one_hot, pad, interpolate, cosine_similarity...

Index arithmetic (which source element feeds which output element, with what weight) is
computed once on the host from shapes alone; the data movement is index_select and
elementwise ops, so it runs on the VM and differentiates through them.
"""
from __future__ import annotations

import math
import warnings

import numpy as np

from .. import ops
from ..autograd import no_grad
from ..autograd.graph import needs_grad
from ..tensor import Tensor
from ..tensor import dtype as dt
from ..ops.dispatch.node_names import torch_node
from ..ops.dispatch.primitive import Primitive
from ..ops.dispatch.user_frame import user_stacklevel
from ..ops.elementwise.plans import torch_name
from ..ops.factories.sparse_coo import sparse_grad
from ..ops.indexing.index_ops import embedding_rows
from ..ops.movement.memory_format import in_format, suggest_memory_format
from ..ops.movement.padding import pad
from ._util import opmath
from .interpolation_weights import (HALF, LINEAR_MODES, SINGLE, half_cubic_weights, half_weights,
                                    single_linear_weights)

__all__ = ["embedding", "one_hot", "pad", "interpolate", "upsample", "upsample_nearest", "upsample_bilinear",
           "cosine_similarity", "pairwise_distance", "pixel_shuffle", "pixel_unshuffle"]


# -- embedding -----------------------------------------------------------------------------------
def _embedding_backward(node, grad: Tensor):
    (flat,) = node.saved_tensors
    num_embeddings, padding_idx, scale_by_freq, sparse = node.attrs
    g = grad.reshape(-1, grad.shape[-1])
    if sparse:
        return (_embedding_sparse_grad(g, flat, num_embeddings, padding_idx, scale_by_freq),)
    if padding_idx >= 0:
        g = g * (flat != padding_idx).unsqueeze(1).to(g.dtype)
    if scale_by_freq:
        counts = ops.zeros(num_embeddings, dtype=g.dtype, device=g.device).index_add(
            0, flat, ops.ones(flat.shape[0], dtype=g.dtype, device=g.device))
        g = g / counts.index_select(0, flat).unsqueeze(1)
    grad_weight = ops.zeros((num_embeddings, g.shape[1]), dtype=g.dtype, device=g.device).index_add_(0, flat, g)
    return (grad_weight,)


def _embedding_sparse_grad(g: Tensor, flat: Tensor, num_embeddings: int, padding_idx: int, scale_by_freq: bool):
    """torch's embedding_sparse_backward: a sparse_coo gradient whose entries are the looked-up rows in
    order (uncoalesced), those of padding_idx left out."""
    if scale_by_freq:
        raise RuntimeError("embedding_backward: scale_grad_by_freq not supported with sparse gradients")
    if padding_idx >= 0:
        keep = flat != padding_idx
        flat, g = flat[keep], g[keep]
    flat = flat.to(dt.int64)
    dense = ops.zeros((num_embeddings, g.shape[1]), dtype=g.dtype, device=g.device).index_add(0, flat, g)
    return sparse_grad(dense, flat.reshape(1, -1), g)


def _renorm_rows(weight: Tensor, flat: Tensor, max_norm: float, norm_type: float) -> None:
    """Scale the rows of `weight` used by `flat` so their norm is at most max_norm (in place, no grad)."""
    with no_grad():
        rows_idx = ops.unique(flat)
        rows = weight.index_select(0, rows_idx)
        norms = rows.norm(norm_type, 1, keepdim=True)
        scale = ops.where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, rows_idx, rows * scale)


def _options_name(t: Tensor) -> str:
    """How torch's argument checks name a tensor's type: its legacy name, or CPU<ScalarType>Type for the dtypes
    whose messages have none (bool, uint16/32/64)."""
    return f"CPU{t.dtype.scalar_name}Type" if t.dtype is dt.bool_ or t.dtype in dt.LIMITED else t.type()


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None, max_norm: float | None = None,
              norm_type: float = 2.0, scale_grad_by_freq: bool = False, sparse: bool = False) -> Tensor:
    """Rows of `weight` picked by the integer `input`; the row at `padding_idx` gets no gradient."""
    subclasses = ops.torch_function
    if subclasses.SUBCLASSES[0] and subclasses.first_is_subclass(input):  # (nested token ids answer it)
        arguments = (input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)
        handled, result = subclasses.dispatch_subclass(embedding, embedding, arguments, {})
        if handled:
            return result
    if weight.dim() != 2:
        raise RuntimeError("'weight' must be 2-D")
    num = weight.shape[0]
    if padding_idx is not None:
        if padding_idx > 0 and padding_idx >= num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        if padding_idx < 0:
            if padding_idx < -num:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx += num
    else:
        padding_idx = -1
    if input.dtype not in (dt.int64, dt.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {_options_name(input)} instead "
                           "(while checking arguments for embedding)")
    if ops.holds_global(input, weight):
        # DTensors (a tensor-parallel embedding): run on the gathered weight, the result a global tensor
        return ops.global_dispatch("embedding", embedding, (input, weight, padding_idx, max_norm, norm_type,
                                                             scale_grad_by_freq, sparse), {})
    flat = input.reshape(-1)
    if max_norm is not None:
        _renorm_rows(weight, flat, max_norm, norm_type)
    with no_grad():
        out = embedding_rows(weight, flat).reshape(tuple(input.shape) + (weight.shape[1],))
    if weight.dtype.is_complex and needs_grad((weight,)):
        raise RuntimeError("embedding does not support automatic differentiation for outputs with complex dtype.")
    EMBEDDING_LOOKUP.attach((weight,), (out,), (num, padding_idx, scale_grad_by_freq, bool(sparse)), "embedding",
                            (flat,))
    return out


# embedding's node (torch's EmbeddingBackward0) on the weight alone (the indices get no edge, as in torch), saving the
# flattened indices: the rows are
# ops/indexing's embedding kernel (its record "embedding" has no node: this gradient is nn's)
EMBEDDING_LOOKUP = Primitive("embedding_lookup", None, cpu=None, backward=_embedding_backward)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    """A trailing dim of size num_classes with a 1 at each value's position (int64)."""
    if tensor.dtype is not dt.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    if tensor.numel() == 0:
        if num_classes <= 0:  # torch: nothing to infer from, and no explicit positive count
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
    else:
        lo, hi = (int(v) for v in ops.aminmax(tensor))  # PyTorch checks the values on the CPU too
        if lo < 0:
            raise RuntimeError("Class values must be non-negative.")
        if num_classes == -1:
            num_classes = hi + 1
        elif hi >= num_classes:
            raise RuntimeError("Class values must be smaller than num_classes.")
    classes = ops.arange(num_classes, device=tensor.device)
    return (tensor.unsqueeze(-1) == classes).long()


# -- padding: tidal.ops.padding.pad ----------------------------------------------------------------
def _in_input_format(out: Tensor, input: Tensor) -> Tensor:
    """`out` laid out in the memory format `input` suggests: torch's CPU kernels for padding, resampling and pixel
    shuffles write channels_last(_3d) results for such inputs (a copy that keeps the graph; none otherwise)."""
    return in_format(out, suggest_memory_format(input))


# -- resampling ----------------------------------------------------------------------------------
_INTERP_DIMS = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3, "lanczos": 2}
_AA_HALF_WIDTH = {"bilinear": 1.0, "bicubic": 2.0, "lanczos": 3.0}  # in input pixels, before stretching
_CUBIC_A = -0.75


def _taps(mode: str, n_in: int, n_out: int, scale: float | None, align_corners: bool) -> tuple:
    """(indices, weights) arrays of shape (n_out, taps): output k = sum_t w[k, t] * input[idx[k, t]]."""
    dst = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        # PyTorch's arithmetic: the scale in float32, nearest in float32, nearest-exact in float64
        s = np.float32(1.0 / scale) if scale else np.float32(n_in) / np.float32(n_out)
        if mode == "nearest-exact":
            src = np.floor((dst + 0.5) * np.float64(s)).astype(np.int64)
        elif n_out == n_in:
            src = np.arange(n_out)
        elif n_out == 2 * n_in:
            src = np.arange(n_out) >> 1
        else:
            src = np.floor(dst.astype(np.float32) * s).astype(np.int64)
        return np.minimum(src, n_in - 1)[:, None], None
    if mode == "area":
        k = np.arange(n_out)
        starts = (k * n_in) // n_out
        ends = ((k + 1) * n_in + n_out - 1) // n_out
        width = int((ends - starts).max()) if n_out else 1  # (an empty output takes no windows)
        span = starts[:, None] + np.arange(width)
        w = (span < ends[:, None]) / (ends - starts)[:, None]
        return np.minimum(span, n_in - 1), w
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        src = dst * s
    else:
        s = 1.0 / scale if scale else n_in / n_out
        src = (dst + 0.5) * s - 0.5
    if mode == "bicubic":
        base = np.floor(src)
        t = src - base
        a = _CUBIC_A
        w = np.stack([((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a,
                      ((a + 2) * t - (a + 3)) * t * t + 1,
                      ((a + 2) * (1 - t) - (a + 3)) * (1 - t) * (1 - t) + 1,
                      ((a * (2 - t) - 5 * a) * (2 - t) + 8 * a) * (2 - t) - 4 * a], axis=1)
        idx = np.clip(base.astype(np.int64)[:, None] + np.arange(-1, 3), 0, n_in - 1)
        return idx, w
    src = np.maximum(src, 0.0)
    i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
    i1 = np.minimum(i0 + 1, n_in - 1)
    frac = src - i0
    return np.stack([i0, i1], axis=1), np.stack([1.0 - frac, frac], axis=1)


def _aa_filter(mode: str, x: np.ndarray) -> np.ndarray:
    """PyTorch's antialiasing kernels: the triangle (bilinear), Keys' cubic with a = -0.5 (bicubic) and the
    3-lobe windowed sinc (lanczos)."""
    x = np.abs(x)
    if mode == "bilinear":
        return np.maximum(1.0 - x, 0.0)
    if mode == "lanczos":
        return np.where(x < 3.0, np.sinc(x) * np.sinc(x / 3.0), 0.0)
    a = -0.5
    near = ((a + 2) * x - (a + 3)) * x * x + 1
    far = ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return np.where(x < 1.0, near, np.where(x < 2.0, far, 0.0))


def _aa_taps(mode: str, n_in: int, n_out: int, scale: float | None, align_corners: bool) -> tuple:
    """(indices, weights) of antialiased resampling: when shrinking, the kernel is stretched by the scale, so
    each output averages every input it covers (PIL's method, as PyTorch); weights are normalized to sum 1."""
    if align_corners:
        s = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
    else:
        s = 1.0 / scale if scale else n_in / n_out
    half = _AA_HALF_WIDTH[mode]
    support = half * s if s >= 1.0 else half
    inv = 1.0 / s if s >= 1.0 else 1.0
    center = s * (np.arange(n_out) + 0.5)
    lo = np.maximum(np.trunc(center - support + 0.5).astype(np.int64), 0)
    hi = np.minimum(np.trunc(center + support + 0.5).astype(np.int64), n_in)
    width = max(int((hi - lo).max()), 1) if n_out else 1
    idx = lo[:, None] + np.arange(width)
    w = np.where(idx < hi[:, None], _aa_filter(mode, (idx - center[:, None] + 0.5) * inv), 0.0)
    total = w.sum(axis=1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1.0), 0.0)
    return np.minimum(idx, n_in - 1), w


def _resample_dim(x: Tensor, d: int, idx: np.ndarray, w: np.ndarray | None, fused: bool = False) -> Tensor:
    """Along dim d: out[k] = sum_t w[k, t] * x[idx[k, t]] (a plain gather when w is None). `fused`: two taps as
    torch's float32 linear kernel rounds them, fma(x0, w0, x1 * w1) (the product and sum in float64)."""
    if w is None:
        return x.index_select(d, Tensor._from_array(idx[:, 0]).to(device=x.device))
    bshape = [1] * x.dim()
    bshape[d] = idx.shape[0]
    terms = []
    for t in range(idx.shape[1]):
        picked = x.index_select(d, Tensor._from_array(np.ascontiguousarray(idx[:, t])).to(device=x.device))
        terms.append((picked, Tensor._from_array(w[:, t].reshape(bshape), x.dtype).to(device=x.device)))
    if fused and x.dtype is dt.float32 and len(terms) == 2:
        (x0, w0), (x1, w1) = terms
        return (x0.double() * w0.double() + (x1 * w1).double()).float()
    out = None
    for picked, weight in terms:
        term = picked * weight
        out = term if out is None else out + term
    return out


def _resample_image_dim(x: Tensor, d: int, idx: np.ndarray, w: np.ndarray) -> Tensor:
    """_resample_dim as torch's uint8 kernel computes it: int16 weights of the most fraction bits that fit, an
    integer sum rounded by a shift, saturated to 0..255 after each pass (float64 holds every sum exactly)."""
    bits = 0
    while bits < 22 and int(0.5 + max(w.max(), 0.0) * (1 << (bits + 1))) < (1 << 15):
        bits += 1
    scaled = w * (1 << bits)
    fixed = np.where(scaled < 0, np.ceil(scaled - 0.5), np.floor(scaled + 0.5))  # halves away from zero
    acc = _resample_dim(x, d, idx, fixed)
    return ((acc + (1 << bits >> 1)) / (1 << bits)).floor().clamp(0, 255)


def _output_size(input: Tensor, size, scale_factor, spatial: int) -> tuple:
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    if size is not None:
        out = tuple(size) if isinstance(size, (tuple, list)) else (size,) * spatial
        if len(out) != spatial:
            raise ValueError(f"Input and output must have the same number of spatial dimensions, but got input with "
                             f"spatial dimensions of {list(input.shape[2:])} and output size of {size}. Please "
                             "provide input tensor in (N, C, d1, d2, ...,dK) format and output size in "
                             "(o1, o2, ...,oK) format.")
        return tuple(int(s) for s in out), None
    if scale_factor is None:
        raise ValueError("either size or scale_factor should be defined")
    scales = tuple(scale_factor) if isinstance(scale_factor, (tuple, list)) else (scale_factor,) * spatial
    if len(scales) != spatial:
        raise ValueError(f"Input and scale_factor must have the same number of spatial dimensions, but got input "
                         f"with spatial dimensions of {list(input.shape[2:])} and scale_factor of shape "
                         f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                         "scale_factor in (s1, s2, ...,sK) format.")
    return tuple(int(math.floor(float(n) * s)) for n, s in zip(input.shape[2:], scales)), scales


def _check_positive_sizes(in_size: tuple, out_size: tuple) -> None:
    """torch's resampling kernels refuse an empty input or output size, naming each dim by letter."""
    if min(in_size + out_size) > 0:
        return
    names = "DHW"[-len(in_size):]

    def fmt(sizes: tuple) -> str:
        return ", ".join(f"{n}: {v}" for n, v in zip(names, sizes))
    joint = " and output" if len(in_size) == 1 else " output"  # the 1-d kernels' message says 'and'
    raise RuntimeError(f"Input and output sizes should be greater than 0, but got input ({fmt(in_size)}){joint} "
                       f"({fmt(out_size)})")


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners: bool | None = None,
                recompute_scale_factor: bool | None = None, antialias: bool = False) -> Tensor:
    """Resize the spatial dims (after N, C) by nearest, (bi/tri)linear, bicubic, area or (antialiased) lanczos."""
    modes = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "lanczos", "area", "nearest-exact")
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("align_corners option can only be set with the interpolating modes: "
                             "linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    if antialias and not (mode in _AA_HALF_WIDTH and input.dim() == 4):
        raise ValueError("Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires a 4-D "
                         "tensor as input")
    if mode == "lanczos" and input.dim() == 4:
        if align_corners:
            raise ValueError("Lanczos mode does not support align_corners=True")
        if not antialias:
            raise ValueError("Lanczos mode requires antialias=True")
    spatial = input.dim() - 2
    need = _INTERP_DIMS.get(mode)
    if isinstance(size, (tuple, list)) or isinstance(scale_factor, (tuple, list)):
        _output_size(input, size, scale_factor, spatial)  # torch compares a sequence's length to the dims first
    if mode not in modes or spatial not in (1, 2, 3) or (mode in ("bicubic", "lanczos") and spatial != 2):
        raise NotImplementedError(f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {input.dim()}D) for "
                                  f"the modes: nearest | linear | bilinear | bicubic | trilinear | lanczos | area | "
                                  f"nearest-exact (got {mode})")
    if need is not None and need != spatial:
        raise NotImplementedError(f"Got {input.dim()}D input, but {mode} mode needs {need + 2}D input")
    out_size, scales = _output_size(input, size, scale_factor, spatial)
    if mode != "area":  # (area is adaptive average pooling, which takes empty sizes)
        _check_positive_sizes(tuple(input.shape[2:]), out_size)
    if recompute_scale_factor:
        scales = None
    if mode == "area":
        scales = None  # adaptive average pooling uses the sizes only
    if input.dtype.is_complex and not (mode == "area" and all(o == 1 for o in out_size)):
        raise NotImplementedError(f"\"{_complex_kernel(mode, spatial)}\" not implemented for "
                                  f"'{torch_name(input.dtype)}'")
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        _check_integer_interpolation(input, mode, spatial)
    image = input.dtype is dt.uint8 and not mode.startswith("nearest")
    x = input if mode.startswith("nearest") else input.double() if image else opmath(input)
    # (torch's uint8 kernel and its float (bi/tri)linear one: the last dim first)
    last_first = image or input.dtype in SINGLE and mode in ("linear", "bilinear", "trilinear") and not antialias
    for k in (reversed(range(spatial)) if last_first else range(spatial)):
        d = 2 + k
        taps = _aa_taps if antialias else _taps
        scale = scales[k] if scales else None
        idx, w = taps(mode, input.shape[d], out_size[k], scale, align_corners)
        if input.dtype in SINGLE and not antialias:  # torch's float32 math (opmath) for the weights
            if mode in ("linear", "bilinear", "trilinear"):
                w = single_linear_weights(input.shape[d], out_size[k], scale, align_corners)
                if input.dtype in HALF and mode in LINEAR_MODES:
                    w = half_weights(w, input.dtype)
            elif mode == "bicubic":
                w = half_cubic_weights(input.shape[d], out_size[k], scale, align_corners, input.dtype)
        fused = input.dtype in SINGLE and mode in ("linear", "bilinear", "trilinear") and not antialias
        x = _resample_image_dim(x, d, idx, w) if image else _resample_dim(x, d, idx, w, fused)
    node = _INTERP_NODES.get(mode)
    if node is None:
        return _in_input_format(x.to(input.dtype), input)
    return _in_input_format(torch_node(x.to(input.dtype), node.format(spatial) + ("_aa" if antialias else ""), input),
                            input)


# torch's grad_fn for each mode ({} the number of spatial dims)
_INTERP_NODES = {"nearest": "upsample_nearest{}d", "nearest-exact": "upsample_nearest_exact{}d",
                 "linear": "upsample_linear{}d", "bilinear": "upsample_bilinear{}d", "bicubic": "upsample_bicubic{}d",
                 "trilinear": "upsample_trilinear{}d"}


def _complex_kernel(mode: str, spatial: int) -> str:
    """The torch kernel whose dtype check refuses complex input to interpolate (area to size 1 is a mean)."""
    if mode == "area":
        return "adaptive_avg_pool3d_cpu" if spatial == 3 else "adaptive_avg_pool2d"
    if spatial == 2 and mode in ("bilinear", "nearest", "nearest-exact"):
        return f"upsample_{'bilinear' if mode == 'bilinear' else 'nearest'}2d_channels_last"
    kind = {"bicubic": "cubic", "lanczos": "aa"}.get(mode, "nearest" if mode.startswith("nearest") else "linear")
    return "compute_indices_weights_" + kind


def _check_integer_interpolation(input: Tensor, mode: str, spatial: int) -> None:
    """torch's CPU kernels for integer images: uint8 only, and only for nearest, bilinear and bicubic."""
    if input.dtype is dt.uint8 and (mode.startswith("nearest") or mode in ("bilinear", "bicubic")):
        return
    if mode.startswith("nearest"):
        kernel = "upsample_nearest2d_channels_last" if spatial == 2 else "compute_indices_weights_nearest"
    elif mode == "area":
        kernel = "adaptive_avg_pool3d_cpu" if spatial == 3 else "adaptive_avg_pool2d"
    else:
        kernel = {"bilinear": "upsample_bilinear2d_channels_last",
                  "bicubic": "compute_indices_weights_cubic"}.get(mode, "compute_indices_weights_linear")
    raise NotImplementedError(f"\"{kernel}\" not implemented for '{torch_name(input.dtype)}'")


def upsample(input: Tensor, size=None, scale_factor=None, mode: str = "nearest", align_corners=None) -> Tensor:
    """Deprecated alias of interpolate."""
    warnings.warn("`nn.functional.upsample` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='nearest')."""
    warnings.warn("`nn.functional.upsample_nearest` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size=None, scale_factor=None) -> Tensor:
    """Deprecated: interpolate(mode='bilinear', align_corners=True)."""
    warnings.warn("`nn.functional.upsample_bilinear` is deprecated. Use `nn.functional.interpolate` instead.",
                  UserWarning, stacklevel=user_stacklevel())
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = upscale_factor
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be divisible by the square of "
                           f"upscale_factor, but input.size(-3)={c} is not divisible by {r * r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    out = torch_node(x.reshape(tuple(lead) + (c // (r * r), h * r, w * r)), "pixel_shuffle", input)
    return _in_input_format(out, input) if input.ndim == 4 else out


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = downscale_factor
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but got input with "
                           f"{input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    # torch checks height, then width, each in its own words
    for name, dim, size in (("height", -2, h), ("width", -1, w)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by downscale_factor, but "
                               f"input.size({dim})={size} is not divisible by {r}")
    n = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    out = torch_node(x.reshape(tuple(lead) + (c * r * r, h // r, w // r)), "pixel_unshuffle", input)
    return _in_input_format(out, input) if input.ndim == 4 else out


# -- distances -----------------------------------------------------------------------------------
def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    """sum(x1/|x1| * x2/|x2|) along dim, each norm clamped below at eps (the clamp passes gradients through)."""
    x1, x2 = ops.broadcast_tensors(x1, x2)
    if x1.dtype.is_complex:
        raise RuntimeError("expected common dtype to be floating point, yet common dtype is "
                           f"{torch_name(dt.promote_types(x1.dtype, x2.dtype))}")

    def unit(x: Tensor) -> Tensor:
        norm = x.norm(2, dim, keepdim=True)
        return x / (norm + (norm.clamp_min(eps) - norm).detach())
    return (unit(x1) * unit(x2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    """||x1 - x2 + eps||_p along the last dim."""
    diff = x1 - x2 + eps
    if diff.dim() == 0:
        return diff.abs()
    return diff.norm(p, -1, keepdim=keepdim)
