"""Spatial transformers: affine_grid builds sampling grids from affine matrices, grid_sample reads an image at
grid points (bilinear/trilinear, nearest or bicubic, with zeros, border or reflection padding).

Both are composites of tidal ops (gathers, floors, weighted sums), so they differentiate in the image and in
the grid. Coordinates follow PyTorch: the grid's last dim is (x, y[, z]), i.e. the spatial dims reversed."""
from __future__ import annotations

import itertools
import warnings

import numpy as np

from .. import ops
from ..ops.complex_numbers.tensors import refuse_complex
from ..ops.dispatch.node_names import torch_node
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["affine_grid", "grid_sample"]

_ALIGN_WARNING = ("Default grid_sample and affine_grid behavior has changed to align_corners=False since 1.3.0. "
                  "Please specify align_corners=True if the old behavior is desired. See the documentation of "
                  "grid_sample for details.")


# -- affine_grid ---------------------------------------------------------------------------------
def _base_coords(steps: int, align_corners: bool, theta: Tensor) -> Tensor:
    """Normalized pixel coordinates in [-1, 1]: corner pixels' centers at +-1 with align_corners, else edges;
    computed in theta's dtype as torch does (a grid point that lands on a pixel exactly, or just beside it,
    decides which neighbours grid_sample's gradient reads)."""
    if steps <= 1:
        return ops.zeros(max(steps, 0), dtype=theta.dtype, device=theta.device)
    coords = ops.linspace(-1.0, 1.0, steps, dtype=theta.dtype, device=theta.device)
    return coords if align_corners else coords * (steps - 1) / steps


def affine_grid(theta: Tensor, size: list, align_corners: bool | None = None) -> Tensor:
    """The (N, H, W, 2) (or (N, D, H, W, 3)) grid of `theta` (N, 2, 3) (or (N, 3, 4)) applied to a base grid."""
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    if not theta.dtype.is_floating_point or theta.dtype.is_complex:
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    given, size = size, list(size)  # torch's messages show the size as the caller gave it
    if len(size) in (4, 5):
        spatial = len(size) - 2
        if theta.dim() != 3 or theta.shape[-2] != spatial or theta.shape[-1] != spatial + 1:
            raise ValueError(f"Expected a batch of {spatial}D affine matrices of shape Nx{spatial}x{spatial + 1} for "
                             f"size {given}. Got {theta.shape}.")
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D affine transforms, "
                                  f"respectively. Got size {given}.")
    extent = size[2:]
    if align_corners and min(extent) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size grids when "
                      "align_corners=True. This is not an intended use case of affine_grid. See the documentation "
                      "of affine_grid for details.", stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {given}")
    if theta.shape[0] != size[0]:  # torch multiplies a batch of size[0] base grids by theta with bmm
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{size[0]}, {spatial + 1}] "
                           f"but got: [{theta.shape[0]}, {spatial + 1}].")
    # base[..., k] is the k-th grid coordinate (x first, so the last spatial dim), then a column of ones
    axes = [_base_coords(n, align_corners, theta) for n in extent]
    mesh = ops.meshgrid(*axes, indexing="ij")
    base = ops.stack(list(mesh[::-1]) + [ops.ones_like(mesh[0])], dim=-1).reshape(-1, spatial + 1)
    grid = ops.matmul(base, theta.transpose(1, 2))              # (N, prod(extent), spatial)
    return torch_node(grid.reshape([size[0]] + extent + [spatial]), "affine_grid_generator", theta)


# -- grid_sample ---------------------------------------------------------------------------------
def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """[-1, 1] grid coordinates as pixel positions."""
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    if coord.dtype in (dt.float32, dt.float16, dt.bfloat16):
        # torch's kernel rounds (coord + 1) * size / 2 - 0.5 once (a fused multiply-add): a product of two
        # floats is exact in double, so one rounding back gives the same pixel position bit for bit
        return ((coord + 1).double() * (size / 2) - 0.5).to(coord.dtype)
    return ((coord + 1) * size - 1) / 2


def _clip(x: Tensor, size: int) -> Tensor:
    """Clamp into [0, size - 1]; the borders count as outside for the gradient, as PyTorch's."""
    return ops.where(x <= 0, 0.0, ops.where(x >= size - 1, float(size - 1), x))


def _reflect(x: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflect `x` into [twice_low / 2, twice_high / 2] as often as it takes."""
    if twice_low == twice_high:
        return ops.zeros_like(x)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = ops.where(x < low, low - x, x - low)
    extra = ops.fmod(x, span)
    flips = ops.floor(x / span)
    return ops.where(ops.fmod(flips, 2) == 0, extra + low, span - extra + low)


def _pad_coordinate(x: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    if padding_mode == "border":
        return _clip(x, size)
    if padding_mode == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if align_corners else _reflect(x, -1, 2 * size - 1)
        return _clip(x, size)
    return x


class _Image:
    """An (N, C, *spatial) image read at integer positions: out-of-range taps read zero."""

    def __init__(self, input: Tensor):
        self.n, self.c = input.shape[:2]
        self.sizes = tuple(input.shape[2:])
        self.flat = input.reshape(self.n, self.c, -1)
        self.strides = [int(np.prod(self.sizes[d + 1:])) for d in range(len(self.sizes))]

    def read(self, positions: list, weight: Tensor | None = None, weigh_outside: bool = False) -> Tensor:
        """Values at integer-valued (N, P) position tensors, one per spatial dim, times `weight` (N, P): (N, C, P).
        An outside tap (a NaN position among them) gives 0, or 0 * weight where `weigh_outside` (torch's vectorized
        2-D kernel multiplies its masked reads, so a NaN weight shows; its 3-D kernel skips outside taps)."""
        inside, index = None, None
        for pos, size, stride in zip(positions, self.sizes, self.strides):
            ok = (pos >= 0) & (pos <= size - 1)
            inside = ok if inside is None else inside & ok
            # an outside tap gathers position 0 (a NaN position cast to int64 would gather out of bounds)
            term = ops.where(ok, pos, 0).to(dt.int64) * stride
            index = term if index is None else index + term
        points = index.shape[1]
        values = self.flat.gather(2, index.unsqueeze(1).expand(self.n, self.c, points))
        inside = inside.unsqueeze(1)
        if weight is None:
            return ops.where(inside, values, 0)
        if weigh_outside:
            return ops.where(inside, values, 0) * weight.unsqueeze(1)
        return ops.where(inside, values * weight.unsqueeze(1), 0)


def _cubic_weights(t: Tensor) -> list:
    """PyTorch's cubic convolution coefficients (A = -0.75) for taps at -1, 0, 1, 2 from the floor."""
    a = -0.75

    def near(x):
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample(input: Tensor, grid: Tensor, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners: bool | None = None) -> Tensor:
    """`input` (N, C, [D,] H, W) read at the normalized points of `grid` (N, [Do,] Ho, Wo, 2 or 3)."""
    if mode not in ("bilinear", "nearest", "bicubic"):
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', 'nearest' or 'bicubic', but "
                         f"got: '{mode}'")
    if padding_mode not in ("zeros", "border", "reflection"):
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', 'border', or "
                         f"'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_ALIGN_WARNING, stacklevel=2)
        align_corners = False
    refuse_complex(input, ("\"grid_sampler3d_cpu\"" if input.dim() == 5 else "\"grid_sampler_2d_cpu_kernel_impl\"")
                   + " not implemented for '{name}'")
    if input.dtype is not grid.dtype:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have same dtype, but input has "
                           f"{input.type()} and grid has {grid.type()}")
    if input.dim() not in (4, 5) or grid.dim() != input.dim():
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number of dimensions, but "
                           f"got input with sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    spatial = input.dim() - 2
    if input.shape[0] != grid.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, but got input with "
                           f"sizes {list(input.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[-1] != spatial:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {spatial} in last dimension, but got grid "
                           f"with sizes {list(grid.shape)}")
    if mode == "bicubic" and spatial != 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    image = _Image(input)
    out_shape = tuple(grid.shape[1:-1])
    flat_grid = grid.reshape(grid.shape[0], -1, spatial)
    # pixel positions per spatial dim (D, H, W order); the grid lists them as (x, y, z)
    coords = [_unnormalize(flat_grid[:, :, spatial - 1 - d], size, align_corners)
              for d, size in enumerate(image.sizes)]
    if mode == "bicubic":
        out = _bicubic(image, coords, padding_mode, align_corners)
    else:
        coords = [_pad_coordinate(x, size, padding_mode, align_corners) for x, size in zip(coords, image.sizes)]
        if mode == "nearest":
            nearest = [ops.round(x) for x in coords]
            # a weight of exactly 1 whose gradient (round's) is zero: the grid gets zeros, not None, as in PyTorch
            one = nearest[0] - nearest[0].detach() + 1
            out = image.read(nearest, one)
        else:
            lows = [ops.floor(x) for x in coords]
            fracs = [x - low for x, low in zip(coords, lows)]
            out = None
            for corner in itertools.product((0, 1), repeat=spatial):
                weight = None
                for bit, frac in zip(corner, fracs):
                    w = frac if bit else 1 - frac
                    weight = w if weight is None else weight * w
                term = image.read([low + bit for low, bit in zip(lows, corner)], weight, weigh_outside=spatial == 2)
                out = term if out is None else out + term
    return torch_node(out.reshape((image.n, image.c) + out_shape), f"grid_sampler_{spatial}d", input, grid)


def _bicubic(image: _Image, coords: list, padding_mode: str, align_corners: bool) -> Tensor:
    """4x4-tap cubic convolution; padding applies to each tap's position, as PyTorch's."""
    (y, x), (h, w) = coords, image.sizes
    y0, x0 = ops.floor(y), ops.floor(x)
    wy, wx = _cubic_weights(y - y0), _cubic_weights(x - x0)
    out = None
    for i in range(4):
        ty = _pad_coordinate(y0 + (i - 1), h, padding_mode, align_corners)
        for j in range(4):
            tx = _pad_coordinate(x0 + (j - 1), w, padding_mode, align_corners)
            term = image.read([ty, tx]) * (wy[i] * wx[j]).unsqueeze(1)
            out = term if out is None else out + term
    return out
