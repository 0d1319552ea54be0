"""DTensor layouts beyond even shards and sums, on 2 real ranks: uneven Shard (torch.chunk's parts,
the last rank smaller or empty) through every redistribution with gradients; the rank side lives in
layout_ranks.py. Expected values come from torch (torch.chunk, torch's reductions)."""
import numpy as np
import pytest
import torch

import layout_ranks as L
from tidal.comm.boxing import chunk_span, shard_shape
from tidal.comm.placement_sbp import Placement, broadcast, split

SIZE = 2


# -- single process -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_chunk_span_is_torch_chunk(n):
    for size in range(0, 12):
        parts = torch.arange(size).chunk(n) if size else ()
        lengths = [len(p) for p in parts] + [0] * (n - len(parts))
        offsets = [int(p[0]) if len(p) else size for p in parts] + [size] * (n - len(parts))
        assert [chunk_span(size, n, k) for k in range(n)] == list(zip(offsets, lengths)), size


def test_nested_shard_shapes_follow_torch_nesting():
    """A 2x2 grid splitting one dim twice: the outer axis's parts are split again (torch's nesting)."""
    grid = Placement("cpu", [[0, 1], [2, 3]])
    for rows in range(0, 9):
        full = torch.arange(rows * 3).reshape(rows, 3)
        for rank in range(4):
            outer, inner = divmod(rank, 2)
            first = full.chunk(2, 0)
            part = first[outer] if outer < len(first) else full[:0]
            second = part.chunk(2, 0)
            part = second[inner] if inner < len(second) else part[:0]
            assert shard_shape((rows, 3), grid, (split(0), split(0)), rank) == list(part.shape), (rows, rank)
            assert shard_shape((rows, 3), grid, (broadcast, split(1)), rank) == \
                [rows, [2, 1][inner]], (rows, rank)


# -- 2 ranks --------------------------------------------------------------------------------------------------
def _torch_part(full: np.ndarray, spec: str, rank: int) -> np.ndarray:
    if spec in ("R", "P"):
        return full
    dim = int(spec[1])
    parts = torch.tensor(full).chunk(SIZE, dim)
    return parts[rank].numpy() if rank < len(parts) else np.take(full, [], axis=dim)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("shape,src", [((5, 3), "S0"), ((1, 3), "S0"), ((3, 5), "S1"), ((5, 3), "P")],
                         ids=["rows-3-2", "rows-1-0", "cols-3-2", "partial-to-uneven"])
def test_uneven_shards_redistribute_as_torch(pool, shape, src):
    rng = np.random.default_rng(5)
    full = rng.integers(-5, 6, shape).astype(np.float64)
    weight = rng.integers(-3, 4, shape).astype(np.float64)
    for rank, got in enumerate(pool.run(L.uneven_shards, full, weight, src, timeout=100)):
        if src != "P":
            np.testing.assert_array_equal(got["src_local"], _torch_part(full, src, rank))
        assert got["src_shape"] == shape
        for dst in ("S0", "S1", "R", "P"):
            res = got[dst]
            assert res["shape"] == shape and res["placements"] == repr((L._placement(dst),))
            np.testing.assert_array_equal(res["full"], full)
            if dst != "P":
                np.testing.assert_array_equal(res["local"], _torch_part(full, dst, rank))
            # the gradient of sum(y * weight) reaches the source's local tensor laid out as the source
            np.testing.assert_array_equal(res["grad"], _torch_part(weight, "R" if src == "P" else src, rank))
        if src != "P":   # an op on uneven shards: value and gradient (on the shard) as torch's
            assert got["op"]["value"] == float((full * full).sum())
            np.testing.assert_array_equal(got["op"]["grad"], _torch_part(2 * full, src, rank))
        assert "torch.chunk's parts" in got["wrong_shape"]


# -- Partial(reduce_op) ------------------------------------------------------------------------------------
def test_partial_placements_match_torch():
    from torch.distributed.tensor import Partial as TP
    from tidal.distributed.tensor import Partial
    for op in ("sum", "avg", "max", "min", "product", "band", "bor", "bxor"):
        ours, theirs = Partial(op), TP(op)
        assert (repr(ours), str(ours), ours.reduce_op) == (repr(theirs), str(theirs), theirs.reduce_op)
        assert ours.is_partial(op) and not ours.is_partial("other") and ours.is_partial()
        assert ours == Partial(op) and hash(ours) == hash(Partial(op)) and (op == "sum") == (ours == Partial())
    with pytest.raises(ValueError, match="reduce_op must be one of"):
        Partial("mean")


_REDUCE = {"avg": lambda a: np.mean(a, 0), "max": lambda a: np.max(a, 0), "min": lambda a: np.min(a, 0),
           "product": lambda a: np.prod(a, 0)}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("op", ["avg", "max", "min", "product"])
def test_partial_reduce_ops_as_torch(pool, op):
    rng = np.random.default_rng(8)
    parts = [rng.integers(-6, 7, (3, 4)).astype(np.float64) for _ in range(SIZE)]
    weight = rng.integers(-3, 4, (3, 4)).astype(np.float64)
    want = _REDUCE[op](np.stack(parts))
    for rank, got in enumerate(pool.run(L.partial_ops, parts, weight, op, timeout=100)):
        assert got["placements"] == f"(Partial({op}),)"
        for dst in ("S0", "S1", "R", "P"):
            res = got[dst]
            assert res["placements"] == repr((L._placement(dst),))
            np.testing.assert_allclose(res["full"], want, rtol=1e-12)
            if dst != "P":
                np.testing.assert_allclose(res["local"], _torch_part(want, dst, rank), rtol=1e-12)
            # torch's convention: a Partial's gradient is Replicate, whatever its reduce op
            np.testing.assert_array_equal(res["grad"], weight)
        np.testing.assert_allclose(got["times_two"], 2 * want, rtol=1e-12)
        if op == "product":   # torch's Replicate -> Partial(product) refuses
            assert got["from_replicate"] == "Replicate to Partial(product) conversion is not supported."
        else:                 # avg/max/min: every rank holds the value (torch's _partition_value)
            local, full = got["from_replicate"]
            np.testing.assert_array_equal(local, parts[0])
            np.testing.assert_array_equal(full, parts[0])


# -- repr -----------------------------------------------------------------------------------------------------
def _torch_reprs() -> dict:
    """torch's DTensor reprs of the same tensors, on a 1-rank gloo group in this process, with the mesh's repr
    left as a slot."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        mesh = init_device_mesh("cpu", (1,))
        grid = init_device_mesh("cpu", (1, 1), mesh_dim_names=("dp", "tp"))
        shard = DTensor.from_local(torch.tensor([1.0, 2.5]), mesh, [Shard(0)])
        leaf = distribute_tensor(torch.tensor([[1.0, 2.0]], requires_grad=True), mesh, [Replicate()])
        got = {"shard": (repr(shard), str(shard)), "leaf": repr(leaf), "computed": repr(leaf * 2),
               "param": repr(torch.nn.Parameter(leaf)),
               "partial": repr(DTensor.from_local(torch.tensor([1.0, 2.5], dtype=torch.float64), grid,
                                                  [Replicate(), Partial("max")]))}
        slots = {"mesh": repr(mesh), "grid": repr(grid)}
    finally:
        dist.destroy_process_group()
    swap = lambda text: text.replace(slots["grid"], "{grid}").replace(slots["mesh"], "{mesh}")  # noqa: E731
    return {k: tuple(map(swap, v)) if isinstance(v, tuple) else swap(v) for k, v in got.items()}


@pytest.mark.timeout(120)
def test_dtensor_repr_as_torch(pool):
    want = _torch_reprs()
    for got in pool.run(L.dtensor_reprs, timeout=100):
        meshes = {"mesh": got["mesh"], "grid": got["grid"]}
        for key, text in want.items():
            expected = tuple(t.format(**meshes) for t in text) if isinstance(text, tuple) else text.format(**meshes)
            ours = tuple(t.replace("dtype=tidal.", "dtype=torch.") for t in got[key]) if isinstance(text, tuple) \
                else got[key].replace("dtype=tidal.", "dtype=torch.")   # tidal's tensors name their own dtypes
            assert ours == expected, key
        # a global tensor on a placement without a mesh keeps tidal's repr (the whole value, placement, sbp)
        native = "tensor([" + ", ".join(["1., 2."] * SIZE) + "], placement=tidal.placement("
        assert got["native"].startswith(native) and "sbp=(tidal.sbp.split(dim=0),)" in got["native"]
