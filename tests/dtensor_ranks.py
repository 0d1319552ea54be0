"""Rank-side checks for torch.distributed.tensor on tidal (run by test_dtensor.py through
comm_ranks.RankPool). Each function returns a list of failures, or the values the test compares
with torch."""
import itertools

import numpy as np

import tidal
from comm_ranks import _me, expect_errors
from tidal import nn


def _dt():
    from tidal.distributed import tensor
    return tensor


def _check(failures: list, what: str, got, want, rtol: float = 1e-12) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape or not np.allclose(got, want, rtol=rtol, atol=1e-12):
        failures.append(f"{what}: got {got.shape} {got.ravel()[:4]}, want {want.shape} {want.ravel()[:4]}")


def _local_part(full: np.ndarray, placement, rank: int, size: int, rng_seed: int = 7) -> np.ndarray:
    """This rank's local tensor of `full` under one placement (Partial: integer summands)."""
    D = _dt()
    if isinstance(placement, D.Shard):
        return np.split(full, size, axis=placement.dim)[rank]
    if isinstance(placement, D.Partial):
        rng = np.random.default_rng(rng_seed)
        parts = [rng.integers(-4, 5, full.shape).astype(full.dtype) for _ in range(size - 1)]
        parts.append(full - sum(parts))
        return parts[rank]
    return full


def redistribute_every_pair() -> list:
    """Every pair of Shard(0), Shard(1), Replicate(), Partial(): values, local tensors and gradients."""
    D = _dt()
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    failures = []
    full = np.arange(6 * size * size, dtype=np.float64).reshape(2 * size, 3 * size) - 10
    weight = np.random.default_rng(3).integers(-3, 4, full.shape).astype(np.float64)
    kinds = [D.Shard(0), D.Shard(1), D.Replicate(), D.Partial()]
    for src, dst in itertools.product(kinds, repeat=2):
        what = f"{src}->{dst}"
        leaf = tidal.tensor(_local_part(full, src, rank, size), requires_grad=True)
        x = D.DTensor.from_local(leaf, mesh, [src])
        y = x.redistribute(mesh, [dst])
        if y.placements != (dst,) or tuple(y.shape) != full.shape or not isinstance(y, D.DTensor):
            failures.append(f"{what}: placements {y.placements} shape {tuple(y.shape)}")
        if not dst.is_partial():
            _check(failures, f"{what} local", y.to_local().detach().numpy(), _local_part(full, dst, rank, size))
        _check(failures, f"{what} full", y.full_tensor().detach().numpy(), full)
        (y * D.distribute_tensor(tidal.tensor(weight), mesh, [D.Replicate()])).sum().backward()
        grad_of = D.Replicate() if src.is_partial() else src
        _check(failures, f"{what} grad", leaf.grad.numpy(), _local_part(weight, grad_of, rank, size))
    # Shard(-1) means the last dim; distribute_tensor takes rank 0's value
    mine = tidal.tensor(full + rank)
    z = D.distribute_tensor(mine, mesh, [D.Shard(-1)])
    if z.placements != (D.Shard(1),):
        failures.append(f"Shard(-1) gave {z.placements}")
    _check(failures, "distribute_tensor from rank 0", z.full_tensor().numpy(), full)
    _check(failures, "distribute_tensor local", z.to_local().numpy(), np.split(full, size, axis=1)[rank])
    own = D.distribute_tensor(mine, mesh, [D.Replicate()], src_data_rank=None)
    _check(failures, "src_data_rank=None keeps each rank's", own.to_local().numpy(), full + rank)
    # to_local(grad_placements=[Partial()]): every rank's gradient of the local tensor is a summand
    leaf = tidal.tensor(full, requires_grad=True)
    r = D.DTensor.from_local(leaf, mesh, [D.Replicate()])
    (r.to_local(grad_placements=[D.Partial()]) * (rank + 1)).sum().backward()
    _check(failures, "grad_placements Partial", leaf.grad.numpy(), np.full(full.shape, sum(range(1, size + 1)),
                                                                           np.float64))
    return failures


def mesh_and_errors() -> list:
    """DeviceMesh members, a (1, n) 2-D mesh with names and sub-meshes, and the errors torch raises."""
    D = _dt()
    rank, size = _me()
    failures = []
    mesh = D.init_device_mesh("cpu", (size,))
    facts = (mesh.ndim, mesh.shape, mesh.size(), mesh.get_rank(), mesh.get_local_rank(), mesh.get_coordinate(),
             mesh.mesh.tolist(), repr(mesh), mesh.get_group().size())
    want = (1, (size,), size, rank, rank, (rank,), list(range(size)), f"DeviceMesh(({size},), 'cpu', stride=(1,))",
            size)
    if facts != want:
        failures.append(f"mesh facts {facts} != {want}")
    grid = D.init_device_mesh("cpu", (1, size), mesh_dim_names=("dp", "tp"))
    tp = grid["tp"]
    if tp.mesh_dim_names != ("tp",) or tp.shape != (size,) or grid.size("tp") != size or grid.get_local_rank("dp"):
        failures.append(f"sub-mesh {tp!r} {grid!r}")
    if repr(grid) != f"DeviceMesh((dp=1, tp={size}), 'cpu', stride=({size}, 1))":
        failures.append(f"grid repr {grid!r}")
    full = np.arange(2 * size * 3, dtype=np.float64).reshape(2 * size, 3)
    g = D.distribute_tensor(tidal.tensor(full), grid, [D.Replicate(), D.Shard(0)])
    _check(failures, "2-D mesh local", g.to_local().numpy(), np.split(full, size)[rank])
    if g.device_mesh is not grid or g.placements != (D.Replicate(), D.Shard(0)):
        failures.append(f"2-D DTensor {g.device_mesh!r} {g.placements}")
    with mesh:
        h = D.distribute_tensor(tidal.tensor(full), placements=[D.Shard(0)])
        if h.device_mesh is not mesh:
            failures.append("`with mesh:` was not the default mesh")
    expect_errors(failures, [
        (lambda: D.distribute_tensor(tidal.ones(2 * size), mesh, [D.Shard(0), D.Shard(0)]), ValueError,
         "`placements` must have the same length as `device_mesh.ndim`"),
        (lambda: D.distribute_tensor(tidal.ones(2), placements=[D.Shard(0)]), RuntimeError,
         "No device mesh is currently active!"),
        (lambda: grid.get_group(), RuntimeError, "`mesh_dim` needs to be specified"),
        (lambda: grid["pp"], KeyError, "does not exist"),
        (lambda: D.init_device_mesh("cpu", (size + 1,)), RuntimeError, "ranks but the world has"),
        (lambda: D.init_device_mesh("cpu", (size,), mesh_dim_names=("a", "b")), RuntimeError, "same length"),
        (lambda: D.Partial("mean"), ValueError, "reduce_op must be one of"),
        (lambda: D.DTensor.from_local(tidal.ones(rank + 1), mesh, [D.Shard(0)], run_check=True), ValueError,
         "Inconsistent tensor metadata"),
    ])
    return failures


def _mlp(weights: list, lib_nn):
    m = lib_nn.Sequential(lib_nn.Linear(6, 4 * _me()[1]), lib_nn.Tanh(), lib_nn.Linear(4 * _me()[1], 3)).double()
    with tidal.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(tidal.tensor(w))
    return m


def tensor_parallel_training(weights: list, x: np.ndarray, y: np.ndarray, steps: int) -> dict:
    """A Colwise -> Rowwise MLP trained with SGD: the losses and the final whole weights."""
    D = _dt()
    from tidal.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    _, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    model = parallelize_module(_mlp(weights, nn), mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    layout = {n: p.placements for n, p in model.named_parameters()}
    opt = tidal.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        out = model(tidal.tensor(x))
        loss = nn.functional.mse_loss(out, tidal.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "layout": {n: [repr(p) for p in v] for n, v in layout.items()},
            "out_type": type(out).__name__,
            "weights": [p.full_tensor().detach().numpy() for p in model.parameters()]}


def distribute_module_hooks(weights: list, x: np.ndarray) -> dict:
    """distribute_module with a partition_fn (column split) and input/output functions, and SequenceParallel."""
    D = _dt()
    from tidal.distributed.tensor.parallel import SequenceParallel, parallelize_module
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    model = _mlp(weights, nn)

    def partition(name, module, mesh):
        if name == "0":
            for key in ("weight", "bias"):
                module.register_parameter(key, nn.Parameter(D.distribute_tensor(getattr(module, key), mesh,
                                                                                [D.Shard(0)])))

    def inputs(module, args, mesh):
        return (D.DTensor.from_local(args[0], mesh, [D.Replicate()]),)

    def outputs(module, out, mesh):
        return out.redistribute(mesh, [D.Replicate()]).to_local()
    D.distribute_module(model, mesh, partition, inputs, outputs)
    layout = {n: repr(p.placements[0]) for n, p in model.named_parameters()}
    out = model(tidal.tensor(x))
    failures = []
    try:
        D.distribute_module(model, mesh)
        failures.append("a second distribute_module did not raise")
    except RuntimeError as e:
        if "only be called once" not in str(e):
            failures.append(str(e))
    norm = nn.LayerNorm(5).double()
    parallelize_module(norm, mesh, SequenceParallel())
    seq = np.arange(2 * 2 * size * 5, dtype=np.float64).reshape(2, 2 * size, 5) ** 1.5 / 7
    local_seq = np.split(seq, size, axis=1)[rank]
    normed = norm(tidal.tensor(local_seq))
    return {"layout": layout, "out": out.detach().numpy(), "failures": failures,
            "seq_placements": repr(normed.placements), "seq_full": normed.full_tensor().detach().numpy()}


FACTORY_LAYOUTS = ["S0", "S1", "R", "P"]


def _layout(spec: str):
    D = _dt()
    return {"S0": D.Shard(0), "S1": D.Shard(1), "R": D.Replicate(), "P": D.Partial()}[spec]


def factories_and_prepare(shape: tuple) -> dict:
    """DTensor factories (zeros/ones/full/empty; rand/randn) on every layout, and PrepareModuleInputOutput
    around a Tanh: what the module saw and what it gave back."""
    D = _dt()
    from tidal.distributed.tensor.parallel import PrepareModuleInputOutput, parallelize_module
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    out = {}
    for spec in FACTORY_LAYOUTS:
        made = {"zeros": D.zeros(shape, device_mesh=mesh, placements=[_layout(spec)]),
                "ones": D.ones(*shape, dtype=tidal.float64, device_mesh=mesh, placements=[_layout(spec)]),
                "full": D.full(shape, 2.5, requires_grad=True, device_mesh=mesh, placements=[_layout(spec)]),
                "empty": D.empty(shape, device_mesh=mesh, placements=[_layout(spec)])}
        out[spec] = {k: (repr(v.placements), tuple(v.shape), str(v.dtype).split(".")[-1], v.requires_grad,
                         v.to_local().detach().numpy() if k != "empty" else tuple(v.to_local().shape))
                     for k, v in made.items()}
        tidal.manual_seed(7)
        whole = D.randn(shape, device_mesh=mesh, placements=[D.Replicate()]).to_local().numpy()
        tidal.manual_seed(7)
        part = D.randn(*shape, device_mesh=mesh, placements=[_layout(spec)])
        tidal.manual_seed(7)
        uniform = D.rand(shape, device_mesh=mesh, placements=[_layout(spec)])
        out[spec]["randn"] = (whole, part.full_tensor().numpy(), repr(part.placements))
        out[spec]["rand"] = (uniform.full_tensor().numpy(), repr(uniform.placements))
    seen = []
    block = tidal.nn.Tanh()
    parallelize_module(block, mesh, PrepareModuleInputOutput(
        input_layouts=D.Shard(0), desired_input_layouts=D.Replicate(), output_layouts=D.Replicate(),
        desired_output_layouts=D.Shard(0)))
    block.register_forward_pre_hook(lambda mod, args: seen.append((type(args[0]).__name__,
                                                                  repr(args[0].placements))))
    rows = np.arange(2 * size * 3, dtype=np.float64).reshape(2 * size, 3) / 10
    got = block(tidal.tensor(np.split(rows, size)[rank]))
    out["prepared"] = {"seen": seen, "type": type(got).__name__, "value": got.numpy()}
    return out


LOSS_CASES = [("mean", False), ("sum", True), ("none", False), ("mean", True)]   # (reduction, class weights)


def parallel_loss(logits: np.ndarray, target: np.ndarray, weight: np.ndarray) -> dict:
    """loss_parallel: cross_entropy of logits sharded on the class dim (torch.chunk's parts), per LOSS_CASES:
    the loss, its placements, the local logits' gradient and the communicating boxing steps (no gather)."""
    from uneven_ops_ranks import _communicating_steps
    D = _dt()
    from tidal.distributed.tensor.parallel import loss_parallel
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    F = nn.functional
    original = F.cross_entropy
    out = {}
    for reduction, weighted in LOSS_CASES:
        leaf = tidal.tensor(logits).chunk(size, 1)[rank].clone().requires_grad_(True)
        x = D.DTensor.from_local(leaf, mesh, [D.Shard(1)], shape=logits.shape, stride=(logits.shape[1], 1))
        with loss_parallel():
            loss, steps = _communicating_steps(lambda: F.cross_entropy(
                x, tidal.tensor(target), weight=tidal.tensor(weight) if weighted else None, reduction=reduction,
                ignore_index=-1))
            (loss.sum() if reduction == "none" else loss).backward()
        out[(reduction, weighted)] = {"value": loss.full_tensor().detach().numpy(), "grad": leaf.grad.numpy(),
                                      "placements": repr(loss.placements), "steps": steps}
    with loss_parallel():
        x = D.DTensor.from_local(tidal.tensor(logits).chunk(size, 1)[rank], mesh, [D.Shard(1)], shape=logits.shape,
                                 stride=(logits.shape[1], 1))
        logp, steps = _communicating_steps(lambda: F.log_softmax(x, dim=1))
        module = nn.CrossEntropyLoss(ignore_index=-1)(x, tidal.tensor(target))
    out["log_softmax"] = {"placements": repr(logp.placements), "local": logp.to_local().numpy(), "steps": steps}
    out["module"] = module.full_tensor().item()
    out["restored"] = F.cross_entropy is original
    try:
        with loss_parallel():
            F.cross_entropy(D.DTensor.from_local(tidal.ones(4, 3), mesh, [D.Shard(0)]), tidal.tensor(target[:4]))
        out["wrong_layout"] = None
    except ValueError as err:
        out["wrong_layout"] = str(err)
    return out


def experimental_local_map(w: np.ndarray, x: np.ndarray, bias: np.ndarray) -> dict:
    """local_map of a plain-tensor matmul on a column-sharded W and a row-sharded X (its partial sums wrapped as
    Partial), with gradients; the placement checks; implicit_replication of a plain bias."""
    D = _dt()
    from tidal.distributed.tensor.experimental import implicit_replication, local_map
    rank, size = _me()
    mesh = D.init_device_mesh("cpu", (size,))
    col, row = [D.Shard(1)], [D.Shard(0)]
    leaf = tidal.tensor(w).chunk(size, 1)[rank].clone().requires_grad_(True)
    wd = D.DTensor.from_local(leaf, mesh, col)
    xd = D.distribute_tensor(tidal.tensor(x), mesh, row)
    seen = []

    @local_map(out_placements=[D.Partial()], in_placements=(col, row), device_mesh=mesh)
    def mm(a, b):
        seen.append((type(a).__name__, tuple(a.shape), tuple(b.shape)))
        return a @ b
    y = mm(wd, xd)
    full = y.full_tensor()
    full.sum().backward()
    out = {"placements": repr(y.placements), "full": full.detach().numpy(), "grad": leaf.grad.numpy(),
           "seen": seen}
    try:
        mm(xd, xd)
        out["mismatch"] = None
    except ValueError as err:
        out["mismatch"] = str(err)
    again = local_map(lambda a, b: a @ b, [D.Partial()], (col, row), redistribute_inputs=True)(
        D.distribute_tensor(tidal.tensor(w), mesh, [D.Replicate()]), xd)
    out["redistributed"] = again.full_tensor().numpy()
    shard = D.distribute_tensor(tidal.tensor(x), mesh, row)
    try:
        shard + tidal.tensor(bias)
        out["without"] = None
    except TypeError as err:
        out["without"] = type(err).__name__
    with implicit_replication():
        summed = shard + tidal.tensor(bias)
    out["implicit"] = (repr(summed.placements), summed.full_tensor().numpy())
    return out
