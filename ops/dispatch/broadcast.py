"""Broadcasting of shapes, as NumPy and PyTorch define it."""
from __future__ import annotations

_cache: dict = {}


def broadcast_shapes(*shapes: tuple) -> tuple:
    """The shape all `shapes` broadcast to; RuntimeError naming the mismatched dimension."""
    hit = _cache.get(shapes)
    if hit is not None:
        return hit
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for shape in shapes:
        for i in range(len(shape) - 1, -1, -1):  # from the last dim, as torch's infer_size (the error names it)
            size = shape[i]
            j = ndim - len(shape) + i
            cur = out[j]
            if cur == 1:
                out[j] = size
            elif size != 1 and size != cur:
                raise RuntimeError(f"The size of tensor a ({cur}) must match the size of tensor b ({size}) "
                                   f"at non-singleton dimension {j}")
    result = tuple(out)
    if len(_cache) < 8192:
        _cache[shapes] = result
    return result
