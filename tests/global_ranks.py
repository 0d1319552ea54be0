"""Rank-side checks for global tensors (run by test_global_tensor.py through comm_ranks.RankPool).

Each function builds the same NumPy data on every rank, makes global tensors from this rank's part,
and returns a list of failures (empty when everything matches NumPy)."""
import itertools

import numpy as np

import tidal
from comm_ranks import _me, expect_errors

S, B, P = tidal.sbp.split, tidal.sbp.broadcast, tidal.sbp.partial_sum


def _ints(shape, seed: int) -> np.ndarray:
    """Small integer values as float64: exact under any summation order."""
    return np.random.default_rng(seed).integers(-5, 6, size=shape).astype(np.float64)


def _part(full: np.ndarray, nd_sbp: tuple, coords: tuple, hierarchy: tuple, seed: int) -> np.ndarray:
    """The local part that rank `coords` holds of `full` under `nd_sbp` (partial sums: integer summands)."""
    value = full
    for axis, s in enumerate(nd_sbp):
        n, c = hierarchy[axis], coords[axis]
        if s == B:
            continue
        if s == P:
            summands = [_ints(value.shape, seed * 31 + axis * 7 + k) for k in range(n - 1)]
            value = summands[c] if c < n - 1 else value - sum(summands, np.zeros_like(value))
        else:
            value = np.split(value, n, axis=s.dim)[c]
    return value


def _global(full: np.ndarray, placement, nd_sbp, seed: int = 0, requires_grad: bool = False):
    rank, _ = _me()
    nd_sbp = nd_sbp if isinstance(nd_sbp, tuple) else (nd_sbp,)
    local = _part(full, nd_sbp, placement.coords(rank), placement.hierarchy, seed)
    t = tidal.tensor(np.ascontiguousarray(local), requires_grad=requires_grad)
    return t, t.to_global(placement, nd_sbp)


def _check(failures: list, what: str, got, want, rtol: float = 1e-10) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=1e-10):
        failures.append(f"{what}: got {got.shape} {got.ravel()[:5]}, want {want.shape} {want.ravel()[:5]}")


def _line(size: int):
    return tidal.placement("cpu", ranks=list(range(size)))


# -- boxing ---------------------------------------------------------------------------------------------
def boxing_pairs() -> list:
    """Every pair of S(0), S(1), B, P on a 1-D placement: values, local shards and gradients."""
    rank, size = _me()
    placement = _line(size)
    failures = []
    full = _ints((2 * size, 3 * size), 1)
    weight = _ints(full.shape, 2)
    for src, dst in itertools.product([S(0), S(1), B, P], repeat=2):
        leaf, x = _global(full, placement, src, seed=3, requires_grad=True)
        y = x.to_global(placement, dst)
        what = f"{src.short()}->{dst.short()}"
        if y.sbp != (dst,) or tuple(y.shape) != full.shape:
            failures.append(f"{what}: sbp {y.sbp} shape {y.shape}")
        if dst != P:
            _check(failures, f"{what} local", y.to_local().detach().numpy(),
                   _part(full, (dst,), (rank,), (size,), 0))
        _check(failures, f"{what} value", y.detach().numpy(), full)
        loss = (y * tidal.tensor(weight).to_global(placement, B)).sum()
        loss.backward()
        grad_sbp = B if src == P else src
        _check(failures, f"{what} grad", leaf.grad.numpy(), _part(weight, (grad_sbp,), (rank,), (size,), 0))
    return failures


def boxing_grid() -> list:
    """A 2x2 grid: nd-sbp boxings (including two axes splitting one dim) and an op, with gradients."""
    rank, size = _me()
    grid = tidal.placement("cpu", ranks=[[0, 1], [2, 3]])
    failures = []
    full = _ints((4, 8), 4)
    pairs = [((S(0), S(1)), (B, B)), ((B, B), (S(0), S(1))), ((S(0), S(0)), (S(1), B)), ((P, S(1)), (S(0), B)),
             ((P, P), (B, S(0))), ((S(1), P), (P, S(1))), ((S(0), B), (B, S(0))), ((B, S(1)), (S(1), S(0)))]
    weight = _ints(full.shape, 5)
    for src, dst in pairs:
        leaf, x = _global(full, grid, src, seed=6, requires_grad=True)
        y = x.to_global(grid, dst)
        what = f"{[s.short() for s in src]}->{[s.short() for s in dst]}"
        if P not in dst:
            _check(failures, f"{what} local", y.to_local().detach().numpy(),
                   _part(full, dst, grid.coords(rank), grid.hierarchy, 0))
        _check(failures, f"{what} value", y.detach().numpy(), full)
        (y * tidal.tensor(weight).to_global(grid, (B, B))).sum().backward()
        grad_sbp = tuple(B if s == P else s for s in src)
        _check(failures, f"{what} grad", leaf.grad.numpy(), _part(weight, grad_sbp, grid.coords(rank),
                                                                   grid.hierarchy, 0))
    a, b = _ints((4, 6), 7), _ints((6, 8), 8)
    la, ga = _global(a, grid, (S(0), B), requires_grad=True)
    lb, gb = _global(b, grid, (B, S(1)), requires_grad=True)
    out = ga @ gb
    if out.sbp != (S(0), S(1)):
        failures.append(f"grid matmul sbp {out.sbp}")
    _check(failures, "grid matmul", out.detach().numpy(), a @ b)
    g = _global(full, grid, (S(0), S(1)))[1]
    row = _global(full[0], grid, (B, S(0)))[1]
    both = g + row
    if both.sbp != (S(0), S(1)):
        failures.append(f"grid add sbp {both.sbp}")
    _check(failures, "grid add", both.numpy(), full + full[0])
    total = g.sum(1)
    if total.sbp != (S(0), P):
        failures.append(f"grid sum sbp {total.sbp}")
    _check(failures, "grid sum", total.numpy(), full.sum(1))
    out.sum().backward()
    coords = grid.coords(rank)
    _check(failures, "grid matmul grad a", la.grad.numpy(),
           _part(np.ones((4, 8)) @ b.T, (S(0), B), coords, grid.hierarchy, 0))
    _check(failures, "grid matmul grad b", lb.grad.numpy(),
           _part(a.T @ np.ones((4, 8)), (B, S(1)), coords, grid.hierarchy, 0))
    return failures


def subset_placement() -> list:
    """A placement of some ranks, listed out of order (run on ranks 1 and 3 only)."""
    rank, _ = _me()
    placement = tidal.placement("cpu", ranks=[3, 1])
    failures = []
    full = _ints((4, 2), 9)
    _, x = _global(full, placement, S(0))
    _check(failures, "subset shard", x.to_local().numpy(), full[:2] if rank == 3 else full[2:])
    _check(failures, "subset value", (x * 2).sum(0).numpy(), 2 * full.sum(0))
    _, p = _global(full, placement, P)
    _check(failures, "subset all_reduce", p.to_global(placement, B).to_local().numpy(), full)
    return failures


# -- ops ------------------------------------------------------------------------------------------------
def _op_case(failures, what, result, want, sbp=None):
    if sbp is not None and result.sbp != (sbp,):
        failures.append(f"{what}: sbp {[s.short() for s in result.sbp]}, want {sbp.short()}")
    _check(failures, what, result.detach().numpy(), want)


def elementwise_ops() -> list:
    """Elementwise ops under each signature, with broadcasting and a fallback op."""
    _, size = _me()
    placement = _line(size)
    failures = []
    a, b, bias = _ints((2 * size, 3), 10), _ints((2 * size, 3), 11), _ints((3,), 12)
    ga0, gb0 = _global(a, placement, S(0))[1], _global(b, placement, S(0))[1]
    _op_case(failures, "S0+S0", ga0 + gb0, a + b, S(0))
    _op_case(failures, "tidal.add(S0, S0, alpha=2)", tidal.add(ga0, gb0, alpha=2), a + 2 * b, S(0))
    _op_case(failures, "S0+B bias", ga0 + _global(bias, placement, B)[1], a + bias, S(0))
    gap, gbp = _global(a, placement, P, seed=1)[1], _global(b, placement, P, seed=2)[1]
    _op_case(failures, "P+P", gap + gbp, a + b, P)
    _op_case(failures, "P-P", gap - gbp, a - b, P)
    gbb = _global(b, placement, B)[1]
    _op_case(failures, "P*B", gap * gbb, a * b, P)
    _op_case(failures, "P/B", gap / (gbb.abs() + 1), a / (np.abs(b) + 1), P)
    _op_case(failures, "P*2", gap * 2, a * 2, P)
    _op_case(failures, "-P", -gap, -a, P)
    _op_case(failures, "P+B", gap + gbb, a + b, P)                       # B goes to P on the first rank
    _op_case(failures, "P+1", gap + 1, a + 1, S(0))  # a number: P is reduce-scattered first (cheapest)
    _op_case(failures, "relu(P)", tidal.relu(gap), np.maximum(a, 0), S(0))
    _op_case(failures, "exp(S0)", ga0.exp(), np.exp(a), S(0))
    _op_case(failures, "where", tidal.where(ga0 > 0, ga0, gb0), np.where(a > 0, a, b), S(0))
    _op_case(failures, "flip (fallback)", tidal.flip(ga0, [0]), a[::-1], B)
    _op_case(failures, "getitem across split (fallback)", ga0[1:3, ::2], a[1:3, ::2], B)
    _op_case(failures, "getitem keeps split", ga0[:, None, 1], a[:, None, 1], S(0))
    _op_case(failures, "getitem ellipsis", ga0[..., ::2], a[..., ::2], S(0))
    _op_case(failures, "getitem of P", gap[1], a[1], P)
    _op_case(failures, "getitem by mask (fallback)", ga0[ga0 > 0], a[a > 0], B)
    _op_case(failures, "narrow keeps split", ga0.narrow(1, 1, 2), a[:, 1:3], S(0))
    _op_case(failures, "select", ga0.select(1, 2), a[:, 2], S(0))
    g = _global(a, placement, S(0))[1]
    g += gb0
    _op_case(failures, "+= keeps sbp", g, a + b, S(0))
    g[0] = 7.0
    want = a + b
    want[0] = 7.0
    _op_case(failures, "setitem", g, want, S(0))
    return failures


def matmul_and_shapes() -> list:
    """Each matmul signature, reductions, views and softmax."""
    rank, size = _me()
    placement = _line(size)
    failures = []
    x, w = _ints((2 * size, 4 * size), 20), _ints((4 * size, 3 * size), 21)
    cases = [(S(0), B, S(0)), (B, S(1), S(1)), (S(1), S(0), P), (B, B, B), (P, B, P), (B, P, P)]
    for sx, sw, want in cases:
        lx, gx = _global(x, placement, sx, seed=1, requires_grad=True)
        lw, gw = _global(w, placement, sw, seed=2, requires_grad=True)
        out = tidal.matmul(gx, gw)
        what = f"matmul {sx.short()}x{sw.short()}"
        _op_case(failures, what, out, x @ w, want)
        (out * tidal.tensor(np.arange(out.numel(), dtype=np.float64).reshape(out.shape)).to_global(
            placement, B)).sum().backward()
        upstream = np.arange(out.numel(), dtype=np.float64).reshape(out.shape)
        for leaf, s, value, name in ((lx, sx, upstream @ w.T, "x"), (lw, sw, x.T @ upstream, "w")):
            _check(failures, f"{what} grad {name}", leaf.grad.numpy(),
                   _part(value, (B if s == P else s,), (rank,), (size,), 0))
    gx0 = _global(x, placement, S(0))[1]
    gx1 = _global(x, placement, S(1))[1]
    gxp = _global(x, placement, P, seed=3)[1]
    _op_case(failures, "sum over split", gx0.sum(0), x.sum(0), P)
    _op_case(failures, "sum over other", gx0.sum(1), x.sum(1), S(0))
    _op_case(failures, "sum keepdim", gx1.sum(0, keepdim=True), x.sum(0, keepdims=True), S(1))
    _op_case(failures, "sum all", gx1.sum(), x.sum(), P)
    _op_case(failures, "sum of P", gxp.sum(1), x.sum(1), P)
    avg = tidal.comm.placement_sbp.partial("avg")   # torch's DTensor: each rank's mean of an even split
    _op_case(failures, "mean over split", gx0.mean(0), x.mean(0), avg)
    _op_case(failures, "tidal.mean", tidal.mean(gx1), x.mean(), avg)
    _op_case(failures, "mean of a partial sum", gxp.mean(1), x.mean(1), P)
    _op_case(failures, "amax over other", gx0.amax(1), x.max(1), S(0))
    _op_case(failures, "amax over split (partial max, as torch's DTensor)", gx0.amax(0), x.max(0),
             tidal.comm.placement_sbp.partial("max"))
    values = gx1.max(0)
    _op_case(failures, "max values", values.values, x.max(0), S(0))
    _op_case(failures, "max indices", values.indices, x.argmax(0), S(0))
    soft = np.exp(x - x.max(1, keepdims=True))
    _op_case(failures, "softmax keeps split", tidal.softmax(gx0, 1), soft / soft.sum(1, keepdims=True), S(0))
    _op_case(failures, "softmax over split", gx0.softmax(0), np.exp(x) / np.exp(x).sum(0), S(1))
    _op_case(failures, "t", gx0.t(), x.T, S(1))
    _op_case(failures, "transpose", tidal.transpose(gx1, 0, 1), x.T, S(0))
    y = _ints((2 * size, 3, 4), 22)
    gy = _global(y, placement, S(0))[1]
    _op_case(failures, "permute", gy.permute(2, 0, 1), y.transpose(2, 0, 1), S(1))
    _op_case(failures, "reshape keeps split", gy.reshape(2 * size, 12), y.reshape(2 * size, 12), S(0))
    _op_case(failures, "view -1", gy.view(-1), y.reshape(-1), S(0))
    _op_case(failures, "flatten", tidal.flatten(gy, 1), y.reshape(2 * size, 12), S(0))
    _op_case(failures, "unsqueeze", gy.unsqueeze(0), y[None], S(1))
    _op_case(failures, "reshape across split", gy.reshape(3, -1), y.reshape(3, -1), B)
    _op_case(failures, "cat", tidal.cat([gx0, gx0], 1), np.concatenate([x, x], 1), S(0))
    return failures


def tensor_parallel_mlp() -> list:
    """Column-parallel then row-parallel Linear layers give the local model's outputs and gradients."""
    import copy
    from tidal import comm, nn
    _, size = _me()
    placement = _line(size)
    failures = []

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(6, 4 * size), nn.Linear(4 * size, 3)

        def forward(self, x):
            return self.fc2(tidal.relu(self.fc1(x)))

    tidal.manual_seed(0)
    local = MLP().to(tidal.float64)
    parallel = comm.distribute_parameters(copy.deepcopy(local), placement,
                                          {"fc1.weight": S(0), "fc1.bias": S(0), "fc2.weight": S(1)})
    from tidal.comm.global_tensor import GlobalParameter
    # nn.Parameter of a global tensor is a global parameter, and modules take it like any parameter
    parallel.fc2.bias = nn.Parameter(parallel.fc2.bias.detach())
    if not isinstance(parallel.fc2.bias, GlobalParameter) or not parallel.fc2.bias.requires_grad:
        failures.append(f"nn.Parameter(global) gave {type(parallel.fc2.bias).__name__}")
    if [n for n, _ in parallel.named_parameters()] != [n for n, _ in local.named_parameters()]:
        failures.append(f"parameter names {[n for n, _ in parallel.named_parameters()]}")
    x, target = _ints((5, 6), 30), _ints((5, 3), 31)
    want = local(tidal.tensor(x))
    loss = nn.functional.mse_loss(want, tidal.tensor(target))
    loss.backward()
    got = parallel(tidal.tensor(x).to_global(placement, B))
    _check(failures, "mlp output", got.detach().numpy(), want.detach().numpy())
    got_loss = nn.functional.mse_loss(got, tidal.tensor(target).to_global(placement, B))
    _check(failures, "mlp loss", got_loss.detach().numpy(), loss.detach().numpy())
    seen = []
    parallel.fc1.weight.register_hook(lambda grad: seen.append(grad.sbp))
    got_loss.backward()
    if seen != [(S(0),)]:
        failures.append(f"hook on a global parameter saw {seen}")
    for (name, p), q in zip(parallel.named_parameters(), local.parameters()):
        if not p.is_global:
            failures.append(f"{name} is not global")
            continue
        _check(failures, f"mlp grad {name} ({p.sbp[0].short()})", p.grad.numpy(), q.grad.numpy())
    # optimizers update the shards: the gradients of broadcast parameters are already summed
    tidal.optim.SGD(local.parameters(), lr=0.1).step()
    tidal.optim.SGD(parallel.parameters(), lr=0.1).step()
    with tidal.no_grad():
        _check(failures, "mlp after a step", parallel(tidal.tensor(x).to_global(placement, B)).numpy(),
               local(tidal.tensor(x)).numpy())
    return failures


def errors() -> list:
    """Wrong placements, split dims out of range and local tensors mixed in raise clear errors."""
    _, size = _me()
    placement = _line(size)
    failures = []
    g = tidal.ones(2 * size, 3).to_global(placement, S(0))
    local = tidal.ones(2 * size, 3)
    cases = [
        (lambda: tidal.ones(2).to_global(tidal.placement("cpu", ranks=list(range(size + 1))), B), RuntimeError,
         f"names rank {size}"),
        (lambda: tidal.ones(2, 3).to_global(placement, S(2)), RuntimeError, "split dim 2 is out of range"),
        (lambda: tidal.ones(2).to_global(placement, (B, B)), RuntimeError, "needs 1 entries"),
        (lambda: tidal.ones(2).to_global(placement, "B"), TypeError, "sbp must be"),
        (lambda: tidal.add(g, local), TypeError, "add(): expected all tensors to be global"),
        (lambda: g + local, TypeError, "__add__(): expected all tensors to be global"),
        (lambda: tidal.matmul(local.t(), g), TypeError, "matmul(): expected all tensors to be global"),
        (lambda: g.to_global(tidal.placement("cpu", ranks=list(reversed(range(size)))), B), RuntimeError,
         "not supported"),
        (lambda: tidal.ones(3, size + 1).to_global(placement, S(1)).to_global(placement, S(0)), RuntimeError,
         "cannot be split evenly"),
    ]
    expect_errors(failures, cases)
    if local.is_global or not g.is_global:
        failures.append("is_global")
    _check(failures, "still usable", (g * 2).sum().numpy(), 2.0 * 6 * size * size)  # the local part is a shard
    return failures
