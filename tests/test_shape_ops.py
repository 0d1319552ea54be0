"""Shape ops against torch: cat/stack families, splits, flips, rolls, repeats, triangles, broadcasting."""
from __future__ import annotations

import numpy as np
import pytest

import tidal
from pairs import as_numpy as _as_numpy, to_torch as _to_torch, values as _values

torch = pytest.importorskip("torch")

DTYPES = [(tidal.bool, torch.bool), (tidal.uint8, torch.uint8), (tidal.int8, torch.int8),
          (tidal.int16, torch.int16), (tidal.int32, torch.int32), (tidal.int64, torch.int64),
          (tidal.float16, torch.float16), (tidal.bfloat16, torch.bfloat16), (tidal.float32, torch.float32),
          (tidal.float64, torch.float64)]
TORCH_OF = dict(DTYPES)
IDS = [str(d) for d, _ in DTYPES]


def pair(rng, shape, dtype=tidal.float32, layout="contiguous"):
    """The same values as a tidal and a torch tensor with the same layout."""
    shape = tuple(shape)
    arr = _values(rng, int(np.prod(shape, dtype=np.int64)), dtype)
    if layout == "contiguous":
        arr = arr.reshape(shape)
        return tidal.tensor(arr), _to_torch(arr, dtype)
    arr = arr.reshape(shape[::-1])  # "transposed": memory in reversed dim order
    dims = tuple(range(len(shape)))[::-1]
    return tidal.tensor(arr).permute(dims), _to_torch(arr, dtype).permute(dims)


def check_same(ours, ref, *, strides: bool = True) -> None:
    """Same values, dtype, shape and (for non-empty results) strides."""
    if isinstance(ref, (tuple, list)):
        assert isinstance(ours, tuple) and len(ours) == len(ref)
        for a, b in zip(ours, ref):
            check_same(a, b, strides=strides)
        return
    assert tuple(ours.shape) == tuple(ref.shape)
    assert TORCH_OF[ours.dtype] == ref.dtype
    if strides and ref.numel():
        assert ours.stride() == ref.stride()
        assert ours.storage_offset() == ref.storage_offset()
    np.testing.assert_array_equal(_as_numpy(ours), _as_numpy(ref))


def lib(t):
    """The module a tensor belongs to, so one lambda runs on both."""
    return torch if isinstance(t, torch.Tensor) else tidal


def check_error(fn, ours, ref, prefix: bool = False) -> None:
    """`fn` raises the same exception type and message on tidal and torch."""
    with pytest.raises(Exception) as want:
        fn(ref)
    with pytest.raises(type(want.value)) as got:
        fn(ours)
    expected = str(want.value).splitlines()[0]
    assert str(got.value).startswith(expected) if prefix else str(got.value) == expected


# -- copies: every case runs on contiguous and transposed inputs -----------------------------------
COPY_CASES = [
    ("cat", (2, 3, 4), lambda t: lib(t).cat([t, t * 2, t.narrow(0, 0, 1)], 0)),
    ("cat_dim", (2, 3, 4), lambda t: lib(t).cat([t, t.narrow(2, 1, 2)], -1)),
    ("cat_one", (2, 3), lambda t: lib(t).cat((t,), 1)),
    ("cat_empty_part", (2, 3), lambda t: lib(t).cat([t, t.narrow(1, 0, 0), t], 1)),
    ("concat", (2, 3), lambda t: lib(t).concat([t, t], 1)),
    ("concatenate", (2, 3), lambda t: lib(t).concatenate([t, t], axis=0)),
    ("stack", (2, 3), lambda t: lib(t).stack([t, t, t])),
    ("stack_last", (2, 3), lambda t: lib(t).stack([t, t], -1)),
    ("stack_0d", (), lambda t: lib(t).stack([t, t])),
    ("hstack", (2, 3), lambda t: lib(t).hstack([t, t])),
    ("hstack_1d", (3,), lambda t: lib(t).hstack([t, t])),
    ("vstack", (3,), lambda t: lib(t).vstack([t, t])),
    ("row_stack", (2, 3), lambda t: lib(t).row_stack([t, t])),
    ("dstack", (2, 3), lambda t: lib(t).dstack([t, t])),
    ("dstack_0d", (), lambda t: lib(t).dstack([t, t])),
    ("column_stack", (3,), lambda t: lib(t).column_stack([t, t.unsqueeze(1)])),
    ("flip", (2, 3, 4), lambda t: t.flip(0, 2)),
    ("flip_list", (2, 3, 4), lambda t: lib(t).flip(t, [-1])),
    ("flip_none", (2, 3), lambda t: t.flip(())),
    ("flip_0d", (), lambda t: t.flip(())),
    ("fliplr", (2, 3), lambda t: t.fliplr()),
    ("flipud", (4,), lambda t: t.flipud()),
    ("roll_flat", (2, 3, 4), lambda t: t.roll(5)),
    ("roll_neg", (2, 3, 4), lambda t: t.roll(-7)),
    ("roll_dim", (2, 3, 4), lambda t: t.roll(1, 1)),
    ("roll_dims", (2, 3, 4), lambda t: t.roll((1, -5), (0, 2))),
    ("roll_zero", (2, 3, 4), lambda t: t.roll(3, 1)),
    ("roll_0d", (), lambda t: t.roll(2)),
    ("rot90", (2, 3), lambda t: t.rot90()),
    ("rot90_2", (2, 3, 4), lambda t: t.rot90(2, (0, 2))),
    ("rot90_3", (2, 3, 4), lambda t: lib(t).rot90(t, 3, (2, 1))),
    ("rot90_neg", (2, 3), lambda t: t.rot90(-1)),
    ("rot90_4", (2, 3), lambda t: t.rot90(4)),
    ("repeat", (2, 3), lambda t: t.repeat(2, 1, 3)),
    ("repeat_tuple", (2, 3), lambda t: t.repeat((1, 2))),
    ("repeat_zero", (2, 3), lambda t: t.repeat(0, 2)),
    ("repeat_0d", (), lambda t: t.repeat(3, 2)),
    ("repeat_kw", (2, 3), lambda t: t.repeat(repeats=(2, 1))),
    ("tile", (2, 3), lambda t: t.tile((2,))),
    ("tile_more", (2, 3), lambda t: lib(t).tile(t, (2, 1, 2))),
    ("repeat_interleave", (2, 3), lambda t: t.repeat_interleave(2)),
    ("repeat_interleave_dim", (2, 3), lambda t: t.repeat_interleave(3, dim=1)),
    ("repeat_interleave_0", (2, 3), lambda t: t.repeat_interleave(0, dim=0)),
    ("repeat_interleave_0d", (), lambda t: t.repeat_interleave(2)),
    ("repeat_interleave_counts", (2, 3), lambda t: t.repeat_interleave(lib(t).tensor([2, 0, 1]), dim=1)),
    ("repeat_interleave_flat_counts", (2, 2),
     lambda t: lib(t).repeat_interleave(t, lib(t).tensor([1, 2, 0, 3]))),
    ("repeat_interleave_one_count", (2, 3), lambda t: t.repeat_interleave(lib(t).tensor([2]), dim=0)),
    ("repeat_interleave_size", (2, 3),
     lambda t: t.repeat_interleave(lib(t).tensor([1, 2, 3]), dim=1, output_size=6)),
    ("tril", (3, 4), lambda t: t.tril()),
    ("tril_batch", (2, 3, 4), lambda t: lib(t).tril(t, -1)),
    ("triu", (4, 3), lambda t: t.triu(1)),
    ("triu_far", (2, 3, 4), lambda t: lib(t).triu(t, diagonal=-5)),
    ("narrow_copy", (3, 4), lambda t: t.narrow_copy(1, 1, 2)),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name,shape,fn", COPY_CASES, ids=[c[0] for c in COPY_CASES])
def test_copy_ops_match_torch(rng, name, shape, fn, layout):
    ours, ref = pair(rng, shape, layout=layout)
    got, want = fn(ours), fn(ref)
    check_same(got, want)
    assert got.untyped_storage_id() != ours.untyped_storage_id()


@pytest.mark.parametrize("dtype,torch_dtype", DTYPES, ids=IDS)
def test_every_dtype(rng, dtype, torch_dtype):
    ours, ref = pair(rng, (3, 4), dtype, layout="transposed")
    for fn in (lambda t: lib(t).cat([t, t], 1), lambda t: lib(t).stack([t, t], 1), lambda t: t.flip(0),
               lambda t: t.roll(2, 1), lambda t: t.repeat(2, 1), lambda t: t.repeat_interleave(2, 0),
               lambda t: t.repeat_interleave(lib(t).tensor([1, 0, 2]), 0), lambda t: t.tril(1),
               lambda t: t.triu(), lambda t: t.rot90(), lambda t: lib(t).hstack([t, t])):
        check_same(fn(ours), fn(ref))


@pytest.mark.parametrize("a", DTYPES, ids=IDS)
def test_cat_promotes_like_torch(rng, a):
    for b in DTYPES:
        x, tx = pair(rng, (2, 3), a[0])
        y, ty = pair(rng, (1, 3), b[0])
        check_same(tidal.cat([x, y]), torch.cat([tx, ty]))
        check_same(tidal.stack([x, x.to(b[0])], 1), torch.stack([tx, tx.to(b[1])], 1))


def test_cat_skips_legacy_empty(rng):
    x, tx = pair(rng, (2, 3))
    e, te = pair(rng, (0,), tidal.int64)
    check_same(tidal.cat([e, x, e], 1), torch.cat([te, tx, te], 1))
    check_same(tidal.cat([e, e]), torch.cat([te, te]))
    h, th = pair(rng, (0,), tidal.float16)
    check_same(tidal.cat([tidal.cat([h, e])]), torch.cat([torch.cat([th, te])]))


def test_cat_out(rng):
    x, tx = pair(rng, (2, 3))
    out = tidal.zeros(4, 3)
    assert tidal.cat([x, x], out=out) is out
    check_same(out, torch.cat([tx, tx]))


def test_cat_reads_pending_writes(rng):
    """A cat queued right after elementwise writes sees them (async VM ordering)."""
    x, tx = pair(rng, (64, 32))
    for _ in range(3):
        x = x * 2 + 1
        tx = tx * 2 + 1
    x.narrow(0, 0, 1).fill_(7)
    tx.narrow(0, 0, 1).fill_(7)
    check_same(tidal.cat([x.t(), x.t()], 1).flip(1), torch.cat([tx.t(), tx.t()], 1).flip(1))


def test_flip_keeps_layout_like_torch(rng):
    """flip's output follows the input's dim order, as torch's preserve format (random strides)."""
    base = np.arange(400, dtype=np.float32)
    for _ in range(100):
        n = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 4, n))
        strides = tuple(int(s) for s in rng.integers(0, 12, n))
        ours, ref = tidal.tensor(base).as_strided(shape, strides), torch.tensor(base).as_strided(shape, strides)
        dims = tuple(int(d) for d in rng.choice(n, int(rng.integers(0, n + 1)), replace=False))
        check_same(ours.flip(dims), ref.flip(dims))


# -- splits are views ------------------------------------------------------------------------------
SPLIT_CASES = [
    ("split", (5, 3), lambda t: t.split(2)),
    ("split_dim", (5, 3), lambda t: t.split(1, 1)),
    ("split_big", (5, 3), lambda t: t.split(9)),
    ("split_sizes", (5, 3), lambda t: t.split([1, 0, 4])),
    ("split_fn", (5, 3), lambda t: lib(t).split(t, [2, 1], dim=1)),
    ("split_with_sizes", (5, 3), lambda t: t.split_with_sizes([3, 2])),
    ("split_empty", (0, 3), lambda t: t.split(2)),
    ("split_zero", (0, 3), lambda t: t.split(0)),
    ("chunk", (5, 3), lambda t: t.chunk(2)),
    ("chunk_more", (5, 3), lambda t: t.chunk(4)),
    ("chunk_exact", (6, 3), lambda t: lib(t).chunk(t, 4, 0)),
    ("chunk_empty", (0, 3), lambda t: t.chunk(3)),
    ("tensor_split", (7, 3), lambda t: t.tensor_split(3)),
    ("tensor_split_idx", (7, 3), lambda t: t.tensor_split([1, 5])),
    ("tensor_split_unsorted", (7, 3), lambda t: t.tensor_split([5, 1, 9])),
    ("tensor_split_neg", (7, 3), lambda t: t.tensor_split([-1, -9, 2])),
    ("tensor_split_dim", (7, 3), lambda t: lib(t).tensor_split(t, 2, dim=1)),
    ("tensor_split_tensor", (7, 3), lambda t: t.tensor_split(lib(t).tensor([2, 3]))),
    ("tensor_split_tensor0d", (7, 3), lambda t: t.tensor_split(lib(t).tensor(3))),
    ("hsplit", (4, 6), lambda t: t.hsplit(3)),
    ("hsplit_1d", (6,), lambda t: lib(t).hsplit(t, [1, 4])),
    ("vsplit", (4, 6), lambda t: t.vsplit(2)),
    ("dsplit", (2, 3, 4), lambda t: lib(t).dsplit(t, [1])),
    ("unbind", (3, 4), lambda t: t.unbind()),
    ("unbind_dim", (3, 4), lambda t: lib(t).unbind(t, 1)),
]


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("name,shape,fn", SPLIT_CASES, ids=[c[0] for c in SPLIT_CASES])
def test_splits_are_views(rng, name, shape, fn, layout):
    ours, ref = pair(rng, shape, layout=layout)
    got, want = fn(ours), fn(ref)
    check_same(got, want)
    for piece, ref_piece in zip(got, want):
        assert piece.untyped_storage_id() == ours.untyped_storage_id()
        piece.fill_(9)
        ref_piece.fill_(9)
    check_same(ours, ref)


# -- broadcasting and rank -------------------------------------------------------------------------
def test_broadcast_to_and_tensors(rng):
    x, tx = pair(rng, (3, 1))
    y, ty = pair(rng, (4,), tidal.int32)
    check_same(x.broadcast_to((2, 3, 4)), tx.broadcast_to((2, 3, 4)))
    check_same(tidal.broadcast_to(x, (-1, 5)), torch.broadcast_to(tx, (-1, 5)))
    got, want = tidal.broadcast_tensors(x, y), torch.broadcast_tensors(tx, ty)
    check_same(got, want)
    assert got[0].untyped_storage_id() == x.untyped_storage_id()
    assert tidal.broadcast_tensors() == ()
    check_same(tidal.broadcast_tensors(x), torch.broadcast_tensors(tx))


def test_broadcast_shapes():
    for shapes in [((2, 3), (1,)), (), (3, (2, 1)), ((5, 1, 4), (3, 1), [1]), ((0,), (1,))]:
        got = tidal.broadcast_shapes(*shapes)
        assert isinstance(got, tidal.Size) and tuple(got) == tuple(torch.broadcast_shapes(*shapes))
    for shapes in [((2, 3), (4,)), ((2, -1), (4,))]:
        with pytest.raises(Exception) as want:
            torch.broadcast_shapes(*shapes)
        with pytest.raises(type(want.value), match=str(want.value).split("!")[0]):
            tidal.broadcast_shapes(*shapes)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (2, 3, 4), (1, 2, 3, 4)])
def test_atleast(rng, shape):
    x, tx = pair(rng, shape, layout="transposed")
    for name in ("atleast_1d", "atleast_2d", "atleast_3d"):
        got, want = getattr(tidal, name)(x), getattr(torch, name)(tx)
        check_same(got, want)
        assert got.untyped_storage_id() == x.untyped_storage_id()
        check_same(getattr(tidal, name)(x, x), getattr(torch, name)(tx, tx))
        check_same(getattr(tidal, name)([x]), getattr(torch, name)([tx]))


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0, 2)])
def test_empty_inputs(rng, shape):
    x, tx = pair(rng, shape)
    for fn in (lambda t: lib(t).cat([t, t], -1), lambda t: lib(t).stack([t, t]), lambda t: t.flip(0),
               lambda t: t.roll(1, 0), lambda t: t.roll(2), lambda t: t.repeat(2, *([1] * t.dim())),
               lambda t: t.repeat_interleave(2, 0), lambda t: t.chunk(2, -1), lambda t: t.split(1, -1),
               lambda t: t.tensor_split(2, 0)):
        check_same(fn(x), fn(tx), strides=False)
    if len(shape) >= 2:
        check_same(x.tril(), tx.tril(), strides=False)
        check_same(x.rot90(1, (0, 1)), tx.rot90(1, (0, 1)), strides=False)


def test_inplace_triangles(rng):
    x, tx = pair(rng, (2, 4, 3), layout="transposed")
    assert x.tril_(1) is x
    tx.tril_(1)
    check_same(x, tx)
    x.triu_(-1)
    tx.triu_(-1)
    check_same(x, tx)


def test_repeat_interleave_bad_counts_in_kernel(rng):
    """With output_size there is no sync: a negative count is reported by the kernel (at a sync point)."""
    x, _ = pair(rng, (3,))
    with pytest.raises(RuntimeError, match="repeats can not be negative"):
        x.repeat_interleave(tidal.tensor([1, -1, 2]), output_size=2).numpy()
    check_same(x.repeat_interleave(2), torch.from_numpy(x.numpy()).repeat_interleave(2))  # the VM goes on


ERRORS = [
    lambda t: lib(t).cat([t, t.select(0, 0)]),
    lambda t: lib(t).cat([t, t.narrow(1, 0, 2)], 2),
    lambda t: lib(t).cat([t, t], 3),
    lambda t: lib(t).cat([t.select(0, 0).select(0, 0).select(0, 0)]),
    lambda t: lib(t).cat(t),
    lambda t: lib(t).cat([t, 1]),
    lambda t: lib(t).cat([]),
    lambda t: lib(t).stack([]),
    lambda t: lib(t).stack([t, t.select(0, 0)]),
    lambda t: lib(t).stack([t, t], 4),
    lambda t: lib(t).hstack([]),
    lambda t: t.split(0),
    lambda t: t.split(-1),
    lambda t: t.split([1, 1], 1),
    lambda t: t.split([1, -1, 3], 1),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).split(1),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).split([1]),
    lambda t: t.chunk(0),
    lambda t: t.chunk(-1, 1),
    lambda t: t.tensor_split(0),
    lambda t: t.tensor_split(lib(t).tensor([1.0, 2.0])),
    lambda t: t.tensor_split(lib(t).tensor([[1, 2]])),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).tensor_split(2),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).unbind(),
    lambda t: lib(t).hsplit(t, 5),
    lambda t: lib(t).vsplit(t.select(0, 0).select(0, 0), 2),
    lambda t: lib(t).dsplit(t.select(0, 0), 2),
    lambda t: t.flip(0, 0),
    lambda t: t.flip(3),
    lambda t: t.select(0, 0).select(0, 0).fliplr(),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).flipud(),
    lambda t: t.roll(1, (0, 1)),
    lambda t: t.roll((1, 2), (0,)),
    lambda t: t.roll((1, 2)),
    lambda t: t.roll([], []),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).roll(1, 0),
    lambda t: t.repeat(2),
    lambda t: t.repeat(-1, 1, 1),
    lambda t: t.tile((-1, 1, 1)),
    lambda t: t.repeat_interleave(-1),
    lambda t: t.repeat_interleave(lib(t).tensor([1, 2]), 1),
    lambda t: t.repeat_interleave(lib(t).tensor([1, -2, 3]), 1),
    lambda t: t.repeat_interleave(lib(t).tensor([[1, 2, 3]]), 1),
    lambda t: t.repeat_interleave(lib(t).tensor([1.0, 2.0, 3.0]), 1),
    lambda t: lib(t).repeat_interleave(lib(t).tensor([[1, 2]])),
    lambda t: t.repeat_interleave(2, 1, output_size=5),
    lambda t: t.select(0, 0).select(0, 0).tril(),
    lambda t: t.select(0, 0).select(0, 0).select(0, 0).triu(),
    lambda t: t.broadcast_to((3, 4)),
    lambda t: lib(t).broadcast_tensors(t, t.narrow(2, 0, 3)),
    lambda t: lib(t).rot90(t, 1, (0, 0)),
    lambda t: lib(t).rot90(t, 1, (0,)),
    lambda t: lib(t).rot90(t, 1, (0, 5)),
    lambda t: lib(t).rot90(t.select(0, 0).select(0, 0), 1),
    lambda t: lib(t).rot90(t, 1, (0, -3)),
]


@pytest.mark.parametrize("fn", ERRORS)
def test_errors_match_torch(rng, fn):
    ours, ref = pair(rng, (2, 3, 4))
    check_error(fn, ours, ref, prefix=True)
