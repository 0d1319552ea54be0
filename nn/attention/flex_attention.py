"""torch.nn.attention.flex_attention: attention with a user score_mod and a block-sparse mask (BlockMask).

tidal runs what torch runs without torch.compile: the full score matrix, `score_mod` applied to it
with broadcast index tensors (b, h, q_idx, kv_idx) in place of torch's vmap, then the mask, a
softmax that gives zeros on fully masked rows, and the product with V. Everything is composed of
tidal ops, so gradients flow to q, k, v and to tensors a score_mod captures. A BlockMask keeps
torch's block-sparse layout (partial and full blocks per query-block row, and its transpose).
"""
from __future__ import annotations

import math
import warnings
from typing import Callable, NamedTuple

import numpy as np

from ... import ops
from ...ops.reductions.softmax import safe_softmax
from ...tensor import Tensor
from ...tensor import dtype as dt

__all__ = ["BlockMask", "flex_attention", "AuxOutput", "AuxRequest", "FlexKernelOptions", "create_block_mask",
           "create_mask", "or_masks", "and_masks", "noop_mask"]

FlexKernelOptions = dict  # backend tuning knobs (block sizes, warps...): accepted, nothing to tune here
_DEFAULT_SPARSE_BLOCK_SIZE = 128


class AuxRequest(NamedTuple):
    """Which auxiliary outputs flex_attention should return."""

    lse: bool = False
    max_scores: bool = False


class AuxOutput(NamedTuple):
    """Auxiliary outputs of flex_attention (None where not requested)."""

    lse: Tensor | None = None
    max_scores: Tensor | None = None


def noop_mask(batch: Tensor, head: Tensor, token_q: Tensor, token_kv: Tensor) -> Tensor:
    """A mask_mod that masks nothing."""
    return ops.ones((), dtype=dt.bool_, device=batch.device)


def _check_callables(mods: tuple) -> None:
    if not all(callable(m) for m in mods):
        raise RuntimeError(f"All inputs should be callable mask_mods: {mods}")


def and_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod that keeps a position only where every one of `mask_mods` does."""
    _check_callables(mask_mods)

    def and_mask(b, h, q_idx, kv_idx):
        result = ops.ones((), dtype=dt.bool_, device=b.device)
        for mod in mask_mods:
            result = result & mod(b, h, q_idx, kv_idx)
        return result
    return and_mask


def or_masks(*mask_mods: Callable) -> Callable:
    """A mask_mod that keeps a position where any one of `mask_mods` does."""
    _check_callables(mask_mods)

    def or_mask(b, h, q_idx, kv_idx):
        result = ops.zeros((), dtype=dt.bool_, device=b.device)
        for mod in mask_mods:
            result = result | mod(b, h, q_idx, kv_idx)
        return result
    return or_mask


def _indices(B: int, H: int, L: int, S: int, device) -> tuple:
    """(b, h, q_idx, kv_idx) as int32 tensors broadcasting to (B, H, L, S): what torch's vmap feeds a mod."""
    def axis(n: int, dim: int) -> Tensor:
        shape = [1, 1, 1, 1]
        shape[dim] = n
        return ops.arange(n, dtype=dt.int32, device=device).reshape(shape)
    return axis(B, 0), axis(H, 1), axis(L, 2), axis(S, 3)


def _is_score_mod(fn: Callable) -> bool:
    import inspect
    try:
        params = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty and
                  p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return False
    return len(params) == 5


def create_mask(mod_fn: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device=None) -> Tensor:
    """The dense boolean mask (B, H, Q_LEN, KV_LEN) a mask_mod (or a score_mod's -inf positions) gives."""
    B, H = B or 1, H or 1
    b, h, m, n = _indices(B, H, Q_LEN, KV_LEN, device or "cpu")
    if _is_score_mod(mod_fn):
        out = mod_fn(ops.zeros((B, H, Q_LEN, KV_LEN), device=device or "cpu"), b, h, m, n)
        return ~ops.isneginf(out)
    return ops.broadcast_to(mod_fn(b, h, m, n), (B, H, Q_LEN, KV_LEN)).to(dt.bool_)


def _ordered(dense: np.ndarray) -> tuple:
    """(counts, indices) of the nonzero blocks along the last dim, nonzero ones first in order (torch's)."""
    counts = dense.sum(-1).astype(np.int32)
    order = np.argsort(-dense.astype(np.int64), axis=-1, kind="stable").astype(np.int32)
    return counts, order


def _dense_from(counts: np.ndarray, indices: np.ndarray, cols: int) -> np.ndarray:
    """The 0/1 block matrix that (counts, indices) describe (indices past `cols`, which a cropped mask
    can list, are dropped as torch drops them)."""
    dense = np.zeros(indices.shape[:-1] + (cols,), np.int32)
    take = (np.arange(indices.shape[-1]) < counts[..., None]) & (indices < cols)
    lead = np.nonzero(take)
    dense[lead[:-1] + (indices[take],)] = 1
    return dense


def _int32(a: np.ndarray | None, device) -> Tensor | None:
    return None if a is None else ops.tensor(np.ascontiguousarray(a), dtype=dt.int32, device=device)


def _sliced_mask_mod_error(batch, head, token_q, token_kv):
    raise RuntimeError(
        "Cannot use mask_mod from a sliced BlockMask. When you slice a BlockMask using [], the mask_mod attribute "
        "is reset. You must set it from the original BlockMask's mask_mod.\n\nIncorrect usage:\n  base_mask = "
        "create_block_mask(my_mask_fn, ...)\n  sliced_mask = base_mask[:, :, block_idx]\n  sliced_mask.mask_mod = "
        "apply_offset(sliced_mask.mask_mod, offset)  # WRONG!\n\nCorrect usage:\n  base_mask = "
        "create_block_mask(my_mask_fn, ...)\n  sliced_mask = base_mask[:, :, block_idx]\n  sliced_mask.mask_mod = "
        "apply_offset(base_mask.mask_mod, offset)  # Use base_mask!")


class BlockMask:
    """A block-sparse attention mask: per (batch, head, query block), the key blocks to compute, split into
    partial ones (mask_mod applied inside) and full ones (all kept); plus the transposed (per key block) view."""

    def __init__(self, seq_lengths: tuple, kv_num_blocks: Tensor, kv_indices: Tensor,
                 full_kv_num_blocks: Tensor | None, full_kv_indices: Tensor | None, q_num_blocks: Tensor | None,
                 q_indices: Tensor | None, full_q_num_blocks: Tensor | None, full_q_indices: Tensor | None,
                 BLOCK_SIZE: tuple = (_DEFAULT_SPARSE_BLOCK_SIZE, _DEFAULT_SPARSE_BLOCK_SIZE),
                 mask_mod: Callable = noop_mask, **_dq_orders) -> None:
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        self.seq_lengths = tuple(seq_lengths)
        self.kv_num_blocks, self.kv_indices = kv_num_blocks, kv_indices
        self.full_kv_num_blocks, self.full_kv_indices = full_kv_num_blocks, full_kv_indices
        self.q_num_blocks, self.q_indices = q_num_blocks, q_indices
        self.full_q_num_blocks, self.full_q_indices = full_q_num_blocks, full_q_indices
        self.BLOCK_SIZE = tuple(BLOCK_SIZE)
        self.mask_mod = mask_mod

    @classmethod
    def from_kv_blocks(cls, kv_num_blocks: Tensor, kv_indices: Tensor, full_kv_num_blocks: Tensor | None = None,
                       full_kv_indices: Tensor | None = None, BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE,
                       mask_mod: Callable | None = None, seq_lengths: tuple | None = None,
                       compute_q_blocks: bool = True, **_dq_orders) -> "BlockMask":
        """A BlockMask from its key-block layout; the per-key-block (q) layout is derived from it."""
        if kv_indices.dim() < 2:
            raise RuntimeError("BlockMask must have at least 2 dimensions")
        if (full_kv_num_blocks is None) != (full_kv_indices is None):
            raise RuntimeError("full_kv_num_blocks and full_kv_indices must be both provided or omitted")
        block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
        rows, cols = kv_indices.shape[-2], kv_indices.shape[-1]
        device = kv_indices.device
        q_parts = [None] * 4
        if compute_q_blocks:
            partial = _dense_from(kv_num_blocks.numpy(), kv_indices.numpy(), cols).swapaxes(-1, -2)
            q_parts[:2] = [_int32(a, device) for a in _ordered(partial)]
            if full_kv_num_blocks is not None:
                full = _dense_from(full_kv_num_blocks.numpy(), full_kv_indices.numpy(), cols).swapaxes(-1, -2)
                q_parts[2:] = [_int32(a, device) for a in _ordered(full)]
        lengths = seq_lengths if seq_lengths is not None else (rows * block[0], cols * block[1])
        return cls(lengths, kv_num_blocks, kv_indices, full_kv_num_blocks, full_kv_indices, *q_parts,
                   BLOCK_SIZE=block, mask_mod=mask_mod if mask_mod is not None else noop_mask)

    @property
    def shape(self) -> tuple:
        """(B, H, Q_LEN, KV_LEN)."""
        return tuple(self.kv_indices.shape[:-2]) + self.seq_lengths

    def numel(self) -> int:
        """The number of (batch, head, query, key) positions the mask covers."""
        return math.prod(self.shape)

    def sparsity(self) -> float:
        """The percentage of positions whose blocks are not computed."""
        blocks = int(self.kv_num_blocks.sum().item())
        if self.full_kv_num_blocks is not None:
            blocks += int(self.full_kv_num_blocks.sum().item())
        return 100 * (1 - blocks * self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1] / self.numel())

    def _block_dense(self) -> tuple:
        """(partial, full) 0/1 block matrices, (..., query blocks, key blocks)."""
        cols = self.kv_indices.shape[-1]
        partial = _dense_from(self.kv_num_blocks.numpy(), self.kv_indices.numpy(), cols)
        full = None if self.full_kv_num_blocks is None else \
            _dense_from(self.full_kv_num_blocks.numpy(), self.full_kv_indices.numpy(), cols)
        return partial, full

    def to_dense(self) -> Tensor:
        """The blocks computed (partial or full) as a 0/1 int32 matrix per (batch, head)."""
        partial, full = self._block_dense()
        return _int32(partial if full is None else partial | full, self.kv_indices.device)

    def __getitem__(self, index) -> "BlockMask":
        """The mask of some batches/heads (query-block rows too); its mask_mod must be set again."""
        keep = tuple(slice(i, i + 1) if isinstance(i, int) else i for i in
                     (index if isinstance(index, tuple) else (index,)))
        full = (None, None) if self.full_kv_num_blocks is None else \
            (self.full_kv_num_blocks[keep], self.full_kv_indices[keep])
        return BlockMask.from_kv_blocks(self.kv_num_blocks[keep], self.kv_indices[keep], *full,
                                        BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=_sliced_mask_mod_error,
                                        seq_lengths=self.seq_lengths, compute_q_blocks=self.q_indices is not None)

    def _adjust(self, new_q_len: int, new_kv_len: int) -> "BlockMask":
        """The mask cropped to (new_q_len, new_kv_len) as torch crops it: each block row's index list is cut
        to the new number of key blocks (which suits masks like causal, not every mask_mod)."""
        rows, cols = -(-new_q_len // self.BLOCK_SIZE[0]), -(-new_kv_len // self.BLOCK_SIZE[1])
        device = self.kv_indices.device

        def crop(num: Tensor, indices: Tensor) -> tuple:
            idx = indices.numpy()[..., :rows, :cols]
            count = np.minimum(num.numpy()[..., :rows], cols)
            return _int32((idx < count[..., None]).sum(-1), device), _int32(idx, device)
        full = (None, None) if self.full_kv_num_blocks is None else crop(self.full_kv_num_blocks, self.full_kv_indices)
        return BlockMask.from_kv_blocks(*crop(self.kv_num_blocks, self.kv_indices), *full,
                                        BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod,
                                        seq_lengths=(new_q_len, new_kv_len),
                                        compute_q_blocks=self.q_indices is not None)

    def to(self, device) -> "BlockMask":
        """The mask with its tensors on `device`."""
        moved = [None if t is None else t.to(device) for t in
                 (self.kv_num_blocks, self.kv_indices, self.full_kv_num_blocks, self.full_kv_indices,
                  self.q_num_blocks, self.q_indices, self.full_q_num_blocks, self.full_q_indices)]
        return BlockMask(self.seq_lengths, *moved, BLOCK_SIZE=self.BLOCK_SIZE, mask_mod=self.mask_mod)

    def __repr__(self) -> str:
        def size(t):
            return None if t is None else t.shape
        names = ("kv_num_blocks", "kv_indices", "full_kv_num_blocks", "full_kv_indices", "q_num_blocks",
                 "q_indices", "full_q_num_blocks", "full_q_indices")
        lines = [f"    {n}={size(getattr(self, n))}," for n in names]
        mod = getattr(self.mask_mod, "__name__", repr(self.mask_mod))
        lines += [f"    BLOCK_SIZE={self.BLOCK_SIZE},", f"    shape={self.shape},",
                  f"    sparsity={self.sparsity():.2f}%,", f"    mask_mod={mod}"]
        return "BlockMask(\n" + "\n".join(lines) + "\n)"


def create_block_mask(mask_mod: Callable, B: int | None, H: int | None, Q_LEN: int, KV_LEN: int, device=None,
                      BLOCK_SIZE=_DEFAULT_SPARSE_BLOCK_SIZE, _compile: bool = False,
                      separate_full_blocks: bool = True, **_dq_orders) -> BlockMask:
    """The BlockMask of `mask_mod` over (B, H, Q_LEN, KV_LEN) (None for B or H: one mask for all)."""
    block = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    dense = create_mask(mask_mod, B, H, Q_LEN, KV_LEN, device).numpy()
    rows, cols = -(-Q_LEN // block[0]), -(-KV_LEN // block[1])
    padded = np.zeros(dense.shape[:2] + (rows * block[0], cols * block[1]), bool)  # padding is masked out
    padded[..., :Q_LEN, :KV_LEN] = dense
    tiles = padded.reshape(dense.shape[:2] + (rows, block[0], cols, block[1]))
    kept = tiles.sum(axis=(3, 5))
    full = kept == block[0] * block[1]
    partial = (kept > 0) & ~full if separate_full_blocks else kept > 0
    device = device or "cpu"
    kv = [_int32(a, device) for a in _ordered(partial)]
    fkv = [_int32(a, device) for a in _ordered(full)] if separate_full_blocks else [None, None]
    return BlockMask.from_kv_blocks(*kv, *fkv, BLOCK_SIZE=block, mask_mod=mask_mod, seq_lengths=(Q_LEN, KV_LEN))


def _validate(query: Tensor, key: Tensor, value: Tensor, enable_gqa: bool) -> None:
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise NotImplementedError("NYI: query, key, and value must be 4D tensors")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(f"Expect query and key/value to have the same embedding dimension but got "
                         f"E={query.shape[-1]} and E={key.shape[-1]}.")
    hq, hkv = query.shape[1], key.shape[1]
    if not enable_gqa and hq != hkv:
        raise ValueError(f"Expect query and key/value to have the same number of heads but got Hq={hq} and "
                         f"Hkv={hkv}. Try setting enable_gqa=True for GQA.")
    if enable_gqa and hq % hkv:
        raise ValueError(f"Expect number of query heads to be a multiple of kv heads for GQA but got Hq={hq} "
                         f"and Hkv={hkv}.")


def _block_mask_dense(block_mask: BlockMask, L: int, S: int, device) -> Tensor:
    """The boolean (B|1, H|1, L, S) mask a BlockMask stands for: full blocks kept, partial ones by mask_mod."""
    if block_mask.seq_lengths != (L, S):
        bigger = block_mask.seq_lengths[0] >= L and block_mask.seq_lengths[1] >= S
        advice = ("As the block mask was created for a larger length than you're using it for, you can either "
                  "1. create a new block mask with the correct length, or 2. 'adjust' the existing block mask to "
                  "the correct length by calling block_mask._adjust(q_len, kv_len). This essentially 'crops' the "
                  "block mask to the upper left corner, which does not work for all mask_mods!") if bigger else (
            "As the block mask was created for a smaller length than you're using it for, you likely need to "
            "create a new block mask.")
        raise ValueError(f"block_mask was created for block_mask.shape={block_mask.shape} but got q_len={L} and "
                         f"kv_len={S}. {advice}")
    partial, full = block_mask._block_dense()
    rb, cb = block_mask.BLOCK_SIZE

    def spread(blocks: np.ndarray) -> Tensor:
        return ops.tensor(blocks.repeat(rb, -2).repeat(cb, -1)[..., :L, :S].astype(bool), device=device)
    lead = tuple(partial.shape[:-2])
    b, h, m, n = _indices(lead[0], lead[1], L, S, device)
    inside = ops.broadcast_to(block_mask.mask_mod(b, h, m, n), lead + (L, S)).to(dt.bool_)
    keep = spread(partial) & inside
    return keep if full is None else keep | spread(full)


def flex_attention(query: Tensor, key: Tensor, value: Tensor, score_mod: Callable | None = None,
                   block_mask: BlockMask | None = None, scale: float | None = None, enable_gqa: bool = False,
                   return_lse: bool = False, kernel_options: dict | None = None, *,
                   return_aux: AuxRequest | None = None):
    """softmax(score_mod(Q K^T * scale) masked by block_mask) V; with return_aux, the log-sum-exp too."""
    if return_lse and return_aux is not None:
        raise ValueError("Cannot specify both return_lse and return_aux. return_lse is deprecated, please use "
                         "return_aux=AuxRequest(lse=True) instead.")
    if return_lse:
        warnings.warn("return_lse is deprecated and will be removed in v2.10. Please use "
                      "return_aux=AuxRequest(lse=True) instead.", FutureWarning, stacklevel=2)
    if return_aux is not None and return_aux.max_scores and query.device.type == "cpu":
        raise NotImplementedError("Returning max scores is not supported on CPU/MPS.")
    _validate(query, key, value, enable_gqa)
    B, Hq, L, E = query.shape
    S = key.shape[-2]
    if enable_gqa and key.shape[1] != Hq:
        groups = Hq // key.shape[1]
        key, value = key.repeat_interleave(groups, 1), value.repeat_interleave(groups, 1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = ops.matmul(query, key.transpose(-2, -1)) * scale
    if score_mod is not None:
        b, h, m, n = _indices(B, Hq, L, S, query.device)
        scores = score_mod(scores, b, h, m, n)
    if block_mask is not None:
        keep = _block_mask_dense(block_mask, L, S, query.device)
        scores = scores.masked_fill(~keep, float("-inf"))
    out = ops.matmul(safe_softmax(scores, -1), value)
    if not (return_lse or (return_aux is not None and return_aux.lse)):
        return out
    lse = ops.logsumexp(scores, -1)
    return (out, lse) if return_lse else (out, AuxOutput(lse=lse))
