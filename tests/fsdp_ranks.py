"""Rank-side runs for FSDP2 (fully_shard) and distributed checkpoints on tidal (run by test_fsdp.py
through comm_ranks.RankPool); each returns what the test compares with torch."""
import numpy as np

import tidal
from comm_ranks import _me
from tidal import nn


def _model(weights: list):
    m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4), nn.Tanh(), nn.Linear(4, 3)).double()
    with tidal.no_grad():
        for p, w in zip(m.parameters(), weights):
            p.copy_(tidal.tensor(w))
    return m


def _sharded(weights: list, reshard_after_forward: bool = True, mesh_shape: tuple | None = None):
    from tidal.distributed.device_mesh import init_device_mesh
    from tidal.distributed.fsdp import fully_shard
    mesh = None if mesh_shape is None else init_device_mesh("cpu", mesh_shape)
    m = _model(weights)
    for layer in (m[0], m[2], m[4]):
        fully_shard(layer, mesh=mesh, reshard_after_forward=reshard_after_forward)
    return fully_shard(m, mesh=mesh, reshard_after_forward=reshard_after_forward)


def _mean_over_ranks(value: float) -> float:
    from tidal.comm import all_reduce
    t = tidal.tensor([value], dtype=tidal.float64)
    all_reduce(t)
    return t.item() / _me()[1]


def fsdp_training(weights: list, x: np.ndarray, y: np.ndarray, steps: int, reshard_after_forward: bool,
                  mesh_shape: tuple | None = None) -> dict:
    """Each rank trains on its slice of the batch with Adam; the losses averaged over ranks, the final
    whole weights, the layout, and what the module registers between forward and backward."""
    from tidal.distributed.fsdp import FSDPModule
    from tidal.distributed.tensor import DTensor
    rank, size = _me()
    model = _sharded(weights, reshard_after_forward, mesh_shape)
    opt = tidal.optim.Adam(model.parameters(), lr=0.05)
    rows = len(x) // size
    mine_x, mine_y = tidal.tensor(x[rank * rows:(rank + 1) * rows]), tidal.tensor(y[rank * rows:(rank + 1) * rows])
    losses, registered, norms = [], [], []
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(mine_x), mine_y)
        registered.append(type(model[0]._parameters["weight"]).__name__)
        opt.zero_grad()
        loss.backward()
        registered.append(type(model[0]._parameters["weight"]).__name__)
        norms.append(float(nn.utils.clip_grad_norm_(model.parameters(), 0.5)))   # over every rank's shards
        opt.step()
        losses.append(_mean_over_ranks(loss.item()))
    return {"losses": losses, "registered": registered, "norms": norms,
            "layout": {n: [repr(p) for p in q.placements] for n, q in model.named_parameters()},
            "local_shapes": {n: tuple(q.to_local().shape) for n, q in model.named_parameters()},
            "classes": [type(model).__name__, isinstance(model[0], FSDPModule),
                        all(isinstance(q, DTensor) for q in model.parameters())],
            "weights": [q.full_tensor().detach().numpy() for q in model.parameters()]}


def gathered_lifetime(weights: list, x: np.ndarray, y: np.ndarray) -> dict:
    """Whether the gathered weights of each layer outlive forward (with and without reshard_after_forward),
    and the whole gradients after backward in both modes."""
    import gc
    import weakref
    rank, size = _me()
    rows = len(x) // size
    mine_x, mine_y = tidal.tensor(x[rank * rows:(rank + 1) * rows]), tidal.tensor(y[rank * rows:(rank + 1) * rows])
    out = {}
    for reshard in (True, False):
        model = _sharded(weights, reshard)
        refs = []
        for layer in (model[0], model[2], model[4]):  # runs after fully_shard's own pre-hook has gathered
            layer.register_forward_pre_hook(lambda m, a: refs.append(weakref.ref(m._parameters["weight"]._v.blob)))
        loss = nn.functional.mse_loss(model(mine_x), mine_y)
        tidal.sync()  # queued kernels hold their operands until they run
        gc.collect()
        out[f"alive_{reshard}"] = [r() is not None for r in refs]
        loss.backward()
        out[f"grads_{reshard}"] = [q.grad.full_tensor().numpy() for q in model.parameters()]
    return out


def gradient_accumulation(weights: list, x: np.ndarray, y: np.ndarray) -> list:
    """Two micro-batches per rank, the first without gradient sync: the whole gradients afterwards."""
    rank, size = _me()
    model = _sharded(weights)
    rows = len(x) // size
    part_x, part_y = x[rank * rows:(rank + 1) * rows], y[rank * rows:(rank + 1) * rows]
    half = rows // 2
    for k, sync in enumerate((False, True)):
        model.set_requires_gradient_sync(sync)
        out = model(tidal.tensor(part_x[k * half:(k + 1) * half]))
        nn.functional.mse_loss(out, tidal.tensor(part_y[k * half:(k + 1) * half])).backward()
        if not sync and any(q.grad is not None for q in model.parameters()):
            return ["a backward without gradient sync wrote sharded gradients"]
    return [q.grad.full_tensor().numpy() for q in model.parameters()]


def save_checkpoint(weights: list, x: np.ndarray, y: np.ndarray, path: str) -> dict:
    """Train one Adam step under FSDP, save model + optimizer + a plain value with DCP; the whole values."""
    import tidal.distributed.checkpoint as dcp
    from tidal.distributed.checkpoint.state_dict import get_state_dict
    rank, size = _me()
    model = _sharded(weights)
    opt = tidal.optim.Adam(model.parameters(), lr=0.05)
    nn.functional.mse_loss(model(tidal.tensor(x)), tidal.tensor(y)).backward()
    opt.step()
    model_sd, optim_sd = get_state_dict(model, opt)
    dcp.save({"model": model_sd, "optim": optim_sd, "epoch": 7}, checkpoint_id=path)
    whole = {k: v.full_tensor().numpy() for k, v in model_sd.items()}
    exp_avg = {k: v["exp_avg"].full_tensor().numpy() for k, v in optim_sd["state"].items()}
    return {"model": whole, "exp_avg": exp_avg, "layouts": {k: repr(v["exp_avg"].placements)
                                                          for k, v in optim_sd["state"].items()}}


def load_checkpoint(weights: list, path: str) -> dict:
    """Load into a fresh FSDP model and optimizer (set_state_dict), and into DTensors of other layouts."""
    import tidal.distributed.checkpoint as dcp
    from tidal.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    from tidal.distributed import tensor as D
    _, size = _me()
    model = _sharded([w * 0 for w in weights])
    opt = tidal.optim.Adam(model.parameters(), lr=0.05)
    model_sd, optim_sd = get_state_dict(model, opt)
    state = {"model": model_sd, "optim": optim_sd, "epoch": 0}
    dcp.load(state, checkpoint_id=path)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    mesh = D.init_device_mesh("cpu", (size,))
    other = {"model": {"0.weight": D.distribute_tensor(tidal.zeros(8, 6, dtype=tidal.float64), mesh, [D.Shard(1)]),
                       "2.weight": D.distribute_tensor(tidal.zeros(4, 8, dtype=tidal.float64), mesh,
                                                       [D.Replicate()])}}
    dcp.load(other, checkpoint_id=path)
    return {"epoch": state["epoch"], "model": {k: v.full_tensor().numpy() for k, v in model.state_dict().items()},
            "exp_avg": {k: v["exp_avg"].full_tensor().numpy()
                        for k, v in get_state_dict(model, opt)[1]["state"].items()},
            "step": opt.state_dict()["state"][0]["step"],
            "other": {k: (v.to_local().numpy(), repr(v.placements)) for k, v in other["model"].items()}}


def mixed_precision(weights: list, x: np.ndarray, y: np.ndarray) -> dict:
    """float64 parameters computed in float32 (param_dtype) with float32 gradient reduction."""
    from tidal.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    rank, size = _me()
    model = fully_shard(_model(weights), mp_policy=MixedPrecisionPolicy(param_dtype=tidal.float32,
                                                                        reduce_dtype=tidal.float32))
    rows = len(x) // size
    out = model(tidal.tensor(x[rank * rows:(rank + 1) * rows]))   # float64 inputs are cast to float32
    nn.functional.mse_loss(out, tidal.tensor(y[rank * rows:(rank + 1) * rows], dtype=tidal.float32)).backward()
    return {"out_dtype": str(out.dtype), "param_dtypes": sorted({str(p.dtype) for p in model.parameters()}),
            "grad_dtypes": sorted({str(p.grad.dtype) for p in model.parameters()}),
            "grads": [p.grad.full_tensor().numpy() for p in model.parameters()]}


def prefetching(weights: list, x: np.ndarray, y: np.ndarray, steps: int) -> dict:
    """Training with explicit prefetch (each layer's forward prefetches the next, each layer's backward the one
    before) and without: the losses, what the next layer holds while a layer's forward runs, and the order of
    the all-gathers and gradient reductions in the first backward."""
    from tidal.distributed import fsdp as F
    rank, size = _me()
    rows = len(x) // size
    mine_x, mine_y = tidal.tensor(x[rank * rows:(rank + 1) * rows]), tidal.tensor(y[rank * rows:(rank + 1) * rows])
    real_gather, real_backward = F._gather, F._unshard_backward
    out = {}
    for prefetch in (True, False):
        model = _sharded(weights)
        layers = [model[0], model[2], model[4]]
        index = {id(m._fsdp_state): k for k, m in enumerate(layers)}
        if prefetch:
            for before, after in zip(layers, layers[1:]):
                before.set_modules_to_forward_prefetch([after])
                after.set_modules_to_backward_prefetch([before])
        seen, events = [], []
        for k in (0, 1):   # runs after fully_shard's own pre-hook
            layers[k].register_forward_pre_hook(
                lambda m, a, k=k: seen.append(type(layers[k + 1]._parameters["weight"]).__name__))
        F._gather = lambda p, state: events.append(("gather", index.get(id(state)))) or real_gather(p, state)
        F._unshard_backward = lambda node, grad: events.append(("reduce", index.get(id(node.attrs[1])))) or \
            real_backward(node, grad)
        try:
            opt = tidal.optim.Adam(model.parameters(), lr=0.05)
            losses = []
            for step in range(steps):
                loss = nn.functional.mse_loss(model(mine_x), mine_y)
                start = len(events)
                opt.zero_grad()
                loss.backward()
                if step == 0:
                    out[f"backward_{prefetch}"] = events[start:]
                nn.utils.clip_grad_norm_(model.parameters(), 0.5)   # as the torch run
                opt.step()
                losses.append(_mean_over_ranks(loss.item()))
        finally:
            F._gather, F._unshard_backward = real_gather, real_backward
        out[f"losses_{prefetch}"] = losses
        out[f"seen_{prefetch}"] = seen[:2]
    try:
        model[0].set_modules_to_forward_prefetch([nn.Linear(2, 2)])
        out["error"] = None
    except ValueError as err:
        out["error"] = str(err)
    return out


def _tp_mlp(values: list, tp_mesh, dp_mesh):
    """A Colwise -> Rowwise MLP holding `values` on `tp_mesh`, each layer and the root fully_shard-ed over `dp_mesh`."""
    from tidal.distributed.fsdp import fully_shard
    from tidal.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    m = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 3)).double()
    with tidal.no_grad():
        for p, w in zip(m.parameters(), values):
            p.copy_(tidal.tensor(w))
    parallelize_module(m, tp_mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
    for layer in (m[0], m[2]):
        fully_shard(layer, mesh=dp_mesh)
    return fully_shard(m, mesh=dp_mesh)


def _train_on_slice(model, x: np.ndarray, y: np.ndarray, part: int, parts: int, steps: int) -> list:
    """Adam steps on slice `part` of `parts` of the batch: the losses, each the mean over ranks."""
    rows = len(x) // parts
    mine_x, mine_y = tidal.tensor(x[part * rows:(part + 1) * rows]), tidal.tensor(y[part * rows:(part + 1) * rows])
    opt = tidal.optim.Adam(model.parameters(), lr=0.05)
    losses = []
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(mine_x), mine_y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(_mean_over_ranks(loss.item()))
    return losses


def _whole_weights(model) -> list:
    return [q.full_tensor().detach().numpy() for q in model.parameters()]


def _mesh_layouts(model) -> dict:
    return {n: (q.device_mesh.mesh_dim_names, [repr(p) for p in q.placements], tuple(q.to_local().shape))
            for n, q in model.named_parameters()}


def fsdp_over_tensor_parallel(weights: list, x: np.ndarray, y: np.ndarray, steps: int) -> dict:
    """A Colwise -> Rowwise MLP on mesh['tp'] of a (dp, tp) mesh, each layer and the root fully_shard-ed over
    mesh['dp'], trained with Adam on this dp rank's half of the batch: the losses (mean over dp), the final
    whole weights, and each parameter's layout."""
    from tidal.distributed.device_mesh import init_device_mesh
    _, size = _me()
    mesh = init_device_mesh("cpu", (2, size // 2), mesh_dim_names=("dp", "tp"))
    model = _tp_mlp(weights, mesh["tp"], mesh["dp"])
    losses = _train_on_slice(model, x, y, mesh.get_local_rank("dp"), 2, steps)
    return {"losses": losses, "weights": _whole_weights(model), "layout": _mesh_layouts(model)}


def hsdp_over_tensor_parallel(weights: list, x: np.ndarray, y: np.ndarray, steps: int, shape: tuple,
                              path: str) -> dict:
    """fsdp_over_tensor_parallel on a 3-D (dp_replicate, dp_shard, tp) mesh of `shape`, each layer and the root
    fully_shard-ed over mesh['dp_replicate', 'dp_shard'] (HSDP): losses, final whole weights and layouts; then
    the trained state saved with dcp and loaded into a fresh model as torch's tutorial does (dcp.load into its
    state dict, then load_state_dict), and loaded straight from the trained model's state dict."""
    import tidal.distributed.checkpoint as dcp
    from tidal.distributed.device_mesh import init_device_mesh
    mesh = init_device_mesh("cpu", shape, mesh_dim_names=("dp_replicate", "dp_shard", "tp"))
    dp_mesh = mesh["dp_replicate", "dp_shard"]
    model = _tp_mlp(weights, mesh["tp"], dp_mesh)
    dp = mesh.get_local_rank("dp_replicate") * shape[1] + mesh.get_local_rank("dp_shard")
    losses = _train_on_slice(model, x, y, dp, shape[0] * shape[1], steps)
    dcp.save({"model": model.state_dict()}, checkpoint_id=path)
    resumed = _tp_mlp([np.zeros_like(w) for w in weights], mesh["tp"], dp_mesh)
    state = {"model": resumed.state_dict()}
    dcp.load(state, checkpoint_id=path)
    resumed.load_state_dict(state["model"])
    copied = _tp_mlp([np.ones_like(w) for w in weights], mesh["tp"], dp_mesh)
    copied.load_state_dict(model.state_dict())
    return {"losses": losses, "weights": _whole_weights(model), "resumed": _whole_weights(resumed),
            "copied": _whole_weights(copied), "layout": _mesh_layouts(model)}


class _Scorer(nn.Module):
    """A module with a second method that reads its parameters (as generate/encode methods do)."""

    def __init__(self, weights: list):
        super().__init__()
        self.body = _model(weights)

    def forward(self, x):
        return self.body(x)

    def score(self, x, scale: float = 1.0):
        first = self.body[0]
        return (x @ first.weight.t() + first.bias).tanh().sum(1) * scale


def forward_method_and_unshard(weights: list, x: np.ndarray) -> dict:
    """register_fsdp_forward_method on a method that reads the parameters; an explicit unshard(async_op=True)
    that the next forward uses (the all-gathers counted); the errors torch raises."""
    import tidal.distributed.fsdp as F
    from tidal.distributed.fsdp import UnshardHandle, fully_shard, register_fsdp_forward_method
    model = fully_shard(_Scorer(weights))
    register_fsdp_forward_method(model, "score")
    score = model.score(tidal.tensor(x), scale=2.0)
    score.sum().backward()   # the gathered weights' gradients reduce-scatter into the shards
    out = {"score": score.detach().numpy(), "after": type(model.body[0].weight).__name__,
           "grad": model.body[0].weight.grad.full_tensor().numpy()}
    gathers, real = [], F._gather
    F._gather = lambda p, state: gathers.append(1) or real(p, state)
    try:
        with tidal.no_grad():
            handle = model.unshard(async_op=True)
            out["handle"] = isinstance(handle, UnshardHandle) and handle.wait() is None
            out["forward"] = model(tidal.tensor(x)).numpy()
        out["gathers"] = len(gathers)
    finally:
        F._gather = real
    plain = _Scorer(weights)
    register_fsdp_forward_method(plain, "score")         # not an FSDPModule: nothing changes
    out["plain_unchanged"] = "score" not in vars(plain)
    try:
        register_fsdp_forward_method(model, "decode")
        out["missing"] = None
    except ValueError as err:
        out["missing"] = str(err)
    return out
