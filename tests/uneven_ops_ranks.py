"""Rank side of test_dtensor_uneven_ops.py (run through comm_ranks.RankPool): ops on DTensors sharded
unevenly (torch.chunk's parts), written as torch code and evaluated with `torch` bound to tidal.compat.
The test evaluates the same strings with real torch (a fake two-rank process group for the placements
and local tensors, plain tensors for the whole values)."""
import numpy as np

from comm_ranks import _me

# Expressions of `x` (the sharded DTensor), `y` (a Replicate DTensor of x's shape), `w` (a Replicate row
# that broadcasts against x) and `m` (a Replicate matrix x can multiply).
OPS = ["x * x + 1", "torch.sin(x) - x / 2", "x + y", "x * w", "torch.where(x > 3, x, -x)",
       "torch.nn.functional.gelu(x)", "x.sum()", "x.sum(0)", "x.sum(1)", "x.sum(1, keepdim=True)", "x.mean(0)",
       "x.mean(1)", "x.amax()", "x.amin(0)", "x.amax(1)", "x.max()", "x.min()", "x.max(0).values",
       "x.max(1).values", "x.prod()", "(x > 3).any()", "(x > 3).all()", "x.argmax(1)", "x.softmax(1)",
       "x.cumsum(0)", "x.var(1)", "x.std()", "x.logsumexp(0)", "x.t()", "x.unsqueeze(0)", "x[:, 1:]", "x @ m"]
# Scalar losses whose gradient reaches the shard (the local op's autograd, or the gathered value's).
# amax/amin/max()/min()/prod over the split dim stay Partial under autograd too; a max's gradient reaches only
# the global extremum, shared among its ties on every rank, a product's takes in the other ranks' factors.
LOSSES = ["(x * x + 1).sin().sum()", "(x.softmax(1) * x).sum()", "x.sum(1).pow(2).sum()", "x.amax()", "x.min()",
          "(x.amax(0) * w).sum()", "x.amin(1).sum()", "(x.mean(0) * w).sum()", "(x @ m).tanh().sum()",
          "(x / 4).prod()", "(x.prod(0) * w).sum()", "x.mean()"]
# reductions whose placements (with autograd) the test compares with torch's
RECORDED = ["x.amax()", "x.min()", "x.amax(0)", "x.amin(1)", "x.sum(0)", "x.prod()", "x.mean(0)", "x.mean()"]


def inputs(full: np.ndarray) -> dict:
    """The Replicate operands beside x (the same on every rank and in torch)."""
    rows, cols = full.shape
    return {"y": np.cos(full), "w": np.linspace(-1.0, 2.0, cols).reshape(1, cols),
            "m": np.arange(cols * 4, dtype=np.float64).reshape(cols, 4) / 40}


def _communicating_steps(run) -> tuple:
    """run()'s result and the boxing steps that moved data between ranks (gathers, reductions, all-to-alls;
    a local slice of a replicated value does not count)."""
    from tidal.comm import boxing
    seen, step = [], boxing._step

    def counted(x, group, src, dst, line):
        if src.kind != "B":
            seen.append(f"{src.short()}->{dst.short()}")
        return step(x, group, src, dst, line)
    boxing._step = counted
    try:
        out = run()
    finally:
        boxing._step = step
    return out, seen


def uneven_ops(full: np.ndarray, dim: int) -> dict:
    """Every expression of OPS on `full` sharded as Shard(dim) (no gradient): placements, global shape, this
    rank's local tensor, the whole value, and the communicating boxing steps the op took."""
    import tidal.compat as torch
    from tidal.distributed.tensor import DTensor, Replicate, Shard, init_device_mesh
    rank, size = _me()
    mesh = init_device_mesh("cpu", (size,))
    local = torch.tensor(full).chunk(size, dim)[rank]
    x = DTensor.from_local(local, mesh, [Shard(dim)], shape=full.shape, stride=(full.shape[1], 1))
    names = {"torch": torch, "x": x}
    for key, value in inputs(full).items():
        names[key] = DTensor.from_local(torch.tensor(value), mesh, [Replicate()])
    out = {}
    with torch.no_grad():
        for expr in OPS:
            got, steps = _communicating_steps(lambda: eval(expr, names))
            out[expr] = {"placements": repr(got.placements), "shape": tuple(got.shape), "steps": steps,
                         "local": got.to_local().numpy(), "full": got.full_tensor().numpy()}
    return out


def uneven_grads(full: np.ndarray, dim: int) -> dict:
    """Each loss of LOSSES on `full` sharded as Shard(dim): its value and placements and the gradient of the
    local tensor."""
    import tidal.compat as torch
    from tidal.distributed.tensor import DTensor, Replicate, Shard, init_device_mesh
    rank, size = _me()
    mesh = init_device_mesh("cpu", (size,))
    out = {}
    for expr in LOSSES:
        leaf = torch.tensor(full).chunk(size, dim)[rank].clone().requires_grad_(True)
        names = {"torch": torch, "x": DTensor.from_local(leaf, mesh, [Shard(dim)], shape=full.shape,
                                                         stride=(full.shape[1], 1))}
        for key, value in inputs(full).items():
            names[key] = DTensor.from_local(torch.tensor(value), mesh, [Replicate()])
        loss = eval(expr, names)
        loss.backward()
        out[expr] = {"value": loss.full_tensor().item(), "grad": leaf.grad.numpy()}
    out["recorded"] = {expr: repr(eval(expr, names).placements) for expr in RECORDED}
    return out
