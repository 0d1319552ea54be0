"""Rank-side runs for test_distributed_layouts.py (through comm_ranks.RankPool): DTensors with uneven
shards, Partial with reduce ops other than sum, and DTensor's repr. Each returns what the test compares
with torch (torch.chunk's parts, torch's reductions, torch's repr)."""
import numpy as np

import tidal
from comm_ranks import _me


def _dt():
    from tidal.distributed import tensor
    return tensor


def _placement(spec: str):
    D = _dt()
    return {"S0": D.Shard(0), "S1": D.Shard(1), "R": D.Replicate(), "P": D.Partial()}[spec]


def uneven_shards(full: np.ndarray, weight: np.ndarray, src: str) -> dict:
    """`full` sharded unevenly as `src`, then redistributed to every placement: local tensors, whole values and
    the gradient of sum(y * weight) for the source's local tensor."""
    D = _dt()
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    x = D.distribute_tensor(tidal.tensor(full), mesh, [_placement(src)])
    out = {"src_local": x.to_local().numpy(), "src_shape": tuple(x.shape)}
    for dst in ("S0", "S1", "R", "P"):
        leaf = x.to_local().detach().requires_grad_(True)
        g = D.DTensor.from_local(leaf, mesh, [_placement(src)], shape=full.shape, stride=(full.shape[1], 1))
        y = g.redistribute(mesh, [_placement(dst)])
        (y * D.distribute_tensor(tidal.tensor(weight), mesh, [D.Replicate()])).sum().backward()
        out[dst] = {"local": y.to_local().detach().numpy(), "full": y.full_tensor().detach().numpy(),
                    "placements": repr(y.placements), "shape": tuple(y.shape), "grad": leaf.grad.numpy()}
    # an op on uneven shards runs on the gathered value (elementwise: gradient flows back to the shards)
    leaf = x.to_local().detach().requires_grad_(True)
    g = D.DTensor.from_local(leaf, mesh, [_placement(src)], shape=full.shape, stride=(full.shape[1], 1))
    z = (g * g).sum()
    z.backward()
    out["op"] = {"value": z.full_tensor().item(), "grad": leaf.grad.numpy()}
    try:
        D.DTensor.from_local(tidal.ones(7, 7), mesh, [_placement(src)], shape=full.shape, stride=(full.shape[1], 1))
        out["wrong_shape"] = None
    except RuntimeError as err:
        out["wrong_shape"] = str(err)
    return out


def partial_ops(parts: list, weight, op: str) -> dict:
    """A Partial(op) DTensor made from each rank's part, redistributed to every placement (values, local
    tensors, gradients), an op on it, and Replicate -> Partial(op)."""
    D = _dt()
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    out = {}
    for dst in ("S0", "S1", "R", "P"):
        leaf = tidal.tensor(parts[rank], requires_grad=True)
        g = D.DTensor.from_local(leaf, mesh, [D.Partial(op)])
        y = g.redistribute(mesh, [_placement(dst)])
        (y * D.distribute_tensor(tidal.tensor(weight), mesh, [D.Replicate()])).sum().backward()
        out[dst] = {"local": y.to_local().detach().numpy(), "full": y.full_tensor().detach().numpy(),
                    "placements": repr(y.placements), "grad": leaf.grad.numpy()}
    g = D.DTensor.from_local(tidal.tensor(parts[rank]), mesh, [D.Partial(op)])
    out["placements"] = repr(g.placements)
    out["times_two"] = (g * 2).full_tensor().numpy()
    whole = D.distribute_tensor(tidal.tensor(parts[0]), mesh, [D.Replicate()])
    try:
        made = whole.redistribute(mesh, [D.Partial(op)])
        out["from_replicate"] = (made.to_local().numpy(), made.full_tensor().numpy())
    except ValueError as err:
        out["from_replicate"] = str(err)
    return out


def dtensor_reprs() -> dict:
    """repr and str of DTensors made through torch's API (the mesh's repr comes back for the expected strings),
    and of a global tensor on a placement no mesh was made for (tidal's own repr)."""
    D = _dt()
    from tidal.comm import placement
    from tidal.comm.placement_sbp import split
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    grid = D.init_device_mesh("cpu", (1, size), mesh_dim_names=("dp", "tp"))
    shard = D.DTensor.from_local(tidal.tensor([1.0, 2.5]), mesh, [D.Shard(0)])
    leaf = D.distribute_tensor(tidal.tensor([[1.0, 2.0]], requires_grad=True), mesh, [D.Replicate()])
    out = {"mesh": repr(mesh), "grid": repr(grid),
           "shard": (repr(shard), str(shard)), "leaf": repr(leaf), "computed": repr(leaf * 2),
           "param": repr(tidal.nn.Parameter(leaf)),
           "partial": repr(D.DTensor.from_local(tidal.tensor([1.0, 2.5], dtype=tidal.float64), grid,
                                                [D.Replicate(), D.Partial("max")]))}
    reversed_ranks = placement("cpu", ranks=list(reversed(range(size))))   # no DeviceMesh for this one
    native = tidal.tensor([1.0, 2.0]).to_global(reversed_ranks, split(0))   # each rank one shard
    out["native"] = repr(native)
    return out
