"""A third hunt with real programs (issue 15, session 11): checkpoints (the legacy format both ways, torch's errors
for files that are not checkpoints, what cannot be pickled, where a checkpoint can go), each run on real torch and
on `tidal.compat`; values, dtypes and errors (type and message) must agree."""
import copy
import importlib
import io
import mmap
import pickle
import types
import warnings
import zipfile

import numpy as np
import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_programs_s9 import data, init, run_both

FRAMEWORKS = (real_torch, tidal_torch)


def outcome(call) -> tuple:
    """('ok', result) or the exception's type name and message (tidal's namespace printed as torch's)."""
    try:
        return "ok", call()
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return type(exc).__name__, str(exc).replace("tidal.", "torch.")


def plain(value):
    """Tensors as (dtype, shape, values); containers element by element."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        return str(value.dtype).split(".")[-1], tuple(value.shape), value.detach().float().tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value).__name__, [plain(v) for v in value]
    return value


# -- the legacy format (_use_new_zipfile_serialization=False) ------------------------------------------------------
def checkpoint(T) -> dict:
    x = T.arange(6.).reshape(2, 3)
    return {"x": x, "view": x[:, 1:], "int16": T.tensor([1, -2], dtype=T.int16), "empty": T.zeros(0, 2),
            "param": T.nn.Parameter(T.ones(2)), "frozen": T.nn.Parameter(T.ones(1), requires_grad=False),
            "bool": T.tensor([True, False]), "bf16": T.tensor([1.5], dtype=T.bfloat16),
            "f64": T.tensor(2.5, dtype=T.float64), "nested": [x, (3, "s", None)],
            "state": T.nn.Linear(2, 1).state_dict()}


def loaded(T, data: bytes, **kwargs) -> list:
    """What `T.load` makes of the bytes: values, types, and whether views still share their storage."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's FutureWarning about legacy checkpoints and weights_only
        obj = T.load(io.BytesIO(data), **kwargs)
    shapes = {k: plain(v)[:2] for k, v in obj["state"].items()}
    obj["x"][0, 1] = 100.0  # the view, and the list's tensor, share it
    return [plain({k: v for k, v in obj.items() if k != "state"}), shapes, type(obj["param"]).__name__,
            obj["param"].requires_grad, obj["frozen"].requires_grad, obj["nested"][0] is obj["x"],
            type(obj["state"]).__name__]


@pytest.mark.parametrize("writer", FRAMEWORKS, ids=lambda T: T.__name__)
def test_legacy_checkpoints_load_in_both(writer):
    buf = io.BytesIO()
    writer.save(checkpoint(writer), buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue()
    assert data[:2] == b"\x80\x02"  # five pickles in a row, not a zip archive
    theirs, ours = loaded(real_torch, data), loaded(tidal_torch, data)
    assert theirs[1:] == ours[1:]
    for key in theirs[0]:
        if key != "state":
            assert theirs[0][key] == ours[0][key], key
    assert loaded(tidal_torch, data, weights_only=False)[0] == ours[0]


def test_legacy_whole_module_round_trip(tmp_path):
    model = tidal_torch.nn.Sequential(tidal_torch.nn.Linear(2, 3), tidal_torch.nn.ReLU())
    tidal_torch.save(model, tmp_path / "m.pt", _use_new_zipfile_serialization=False)
    again = tidal_torch.load(tmp_path / "m.pt", weights_only=False)
    assert repr(again) == repr(model)
    x = tidal_torch.ones(4, 2)
    assert again(x).tolist() == model(x).tolist()


def test_legacy_load_to_a_missing_device_fails_as_torch():
    buf = io.BytesIO()
    tidal_torch.save(tidal_torch.ones(2), buf, _use_new_zipfile_serialization=False)
    data = buf.getvalue().replace(b"X\x03\x00\x00\x00cpu", b"X\x06\x00\x00\x00cuda:0")
    theirs = outcome(lambda: real_torch.load(io.BytesIO(data)))
    ours = outcome(lambda: tidal_torch.load(io.BytesIO(data)))
    assert theirs[0] == ours[0] == "RuntimeError"
    assert theirs[1].startswith("Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is "
                                "False") and ours[1].startswith(theirs[1][:80])
    assert plain(tidal_torch.load(io.BytesIO(data), map_location="cpu")) == plain(real_torch.ones(2))


# -- files that are not checkpoints --------------------------------------------------------------------------------
def _zip(records: dict) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, value in records.items():
            zf.writestr(name, value)
    return out.getvalue()


def _saved(T) -> bytes:
    buf = io.BytesIO()
    T.save({"a": T.ones(100)}, buf)
    return buf.getvalue()


BAD_FILES = {
    "garbage": b"not a checkpoint at all",
    "empty": b"",
    "plain_pickle": pickle.dumps({"a": 1}, protocol=2),
    "pickle_protocol_4": pickle.dumps({"a": 1}, protocol=4),
    "zip_signature_only": b"PK\x03\x04garbage",
    "two_bytes": b"PK",
    "truncated": _saved(real_torch)[:700],
    "tail_cut": _saved(real_torch)[:-10],
    "zip_without_pickle": _zip({"archive/version": "3\n"}),
    "zip_outside_a_folder": _zip({"top.txt": "a"}),
    "zip_of_two_folders": _zip({"x/version": "3\n", "y/data.pkl": ""}),
}


@pytest.mark.parametrize("weights_only", [True, False])
@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_files_fail_as_torch(name, weights_only, tmp_path):
    path = tmp_path / name
    path.write_bytes(BAD_FILES[name])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = outcome(lambda: real_torch.load(path, weights_only=weights_only))
        ours = outcome(lambda: tidal_torch.load(path, weights_only=weights_only))
        from_buffer = outcome(lambda: tidal_torch.load(io.BytesIO(BAD_FILES[name]), weights_only=weights_only))
    assert theirs[0] != "ok"
    assert ours == theirs
    assert from_buffer == theirs


def test_save_and_load_targets_as_torch(tmp_path):
    for T in FRAMEWORKS:
        T.save(T.arange(3), tmp_path / f"{T.__name__}.pt")
    for call in (lambda T: T.save(T.ones(1), 5), lambda T: T.load(5),
                 lambda T: T.save(T.ones(1), tmp_path / "no" / "x.pt"), lambda T: T.load(tmp_path / "missing.pt"),
                 lambda T: T.load(tmp_path)):
        assert outcome(lambda: call(tidal_torch)) == outcome(lambda: call(real_torch))
    with zipfile.ZipFile(tmp_path / "tidal.compat.pt") as ours, zipfile.ZipFile(tmp_path / "torch.pt") as theirs:
        names = sorted(n.split("/", 1)[1] for n in ours.namelist())
        assert names == sorted(n.split("/", 1)[1] for n in theirs.namelist())
        record = next(n for n in ours.namelist() if n.endswith("/.data/serialization_id"))
        assert len(ours.read(record)) == 40 and ours.read(record).isdigit()


_MODULE_LAMBDA = lambda: 1  # noqa: E731 - a lambda at module level: pickling looks '<lambda>' up and fails


def _orphan():
    """A function whose module cannot be imported."""


_ORPHAN = types.FunctionType(_orphan.__code__, {}, "_orphan")
_ORPHAN.__module__ = "a_module_that_is_not_there"


def test_unpicklable_objects_fail_as_torch():
    def local_class(T):
        class Local:
            pass
        T.save({"x": T.ones(1), "obj": Local()}, io.BytesIO())

    def lambda_in_a_state(T):
        T.save({"fn": lambda: 1}, io.BytesIO())

    def module_lambda(T):
        T.save({"fn": _MODULE_LAMBDA}, io.BytesIO())

    def function_of_a_missing_module(T):
        T.save([_ORPHAN], io.BytesIO())
    for program in (local_class, lambda_in_a_state, module_lambda, function_of_a_missing_module):
        theirs, ours = outcome(lambda: program(real_torch)), outcome(lambda: program(tidal_torch))
        assert ours == theirs, program.__name__


def test_numpy_values_in_checkpoints():
    for T in FRAMEWORKS:
        buf = io.BytesIO()
        T.save({"arr": np.arange(3), "scalar": np.float32(1.5)}, buf)
        buf.seek(0)
        assert outcome(lambda: T.load(buf))[0] == "UnpicklingError"
        buf.seek(0)
        obj = T.load(buf, weights_only=False)
        assert obj["arr"].tolist() == [0, 1, 2] and obj["scalar"] == np.float32(1.5)


# -- ops: signed zeros of remainder, logaddexp's gradient beside an infinity ----------------------------------------
def _signed(t) -> list:
    """Values with the sign of each zero (and NaN as None)."""
    a = t.detach().double().numpy()
    return [None if np.isnan(v) else (float(v), bool(np.signbit(v))) for v in a.ravel()]


def remainders(T) -> list:
    x = T.tensor([-2., 2., -0., 0., -3., 3., 5.5, -5.5, float("inf"), 1., -1., 1.])
    y = T.tensor([1., 1., 2., -2., -1., 3., 2., 2., 2., float("inf"), float("inf"), -float("inf")])
    out = [T.remainder(x, y), T.remainder(x.double(), -1.0), x % 2, T.remainder(x.half(), 1.0),
           T.remainder(-2., T.tensor(1.)), T.remainder(T.tensor([-4, 4, -3], dtype=T.int32), -2)]
    z = x.clone()
    z.remainder_(1.0)
    fused = (x * 1) % -2.0 * 1  # (the compiled path of a fused group)
    return [_signed(v) for v in out + [z, fused]]


def logaddexp_grads(T) -> list:
    inf = float("inf")
    out = []
    for fn in (T.logaddexp, T.logaddexp2):
        a = T.tensor([inf, 1., -inf, inf, 2., -3.], requires_grad=True)
        b = T.tensor([1., inf, -inf, -inf, 0.5, 40.], requires_grad=True)
        fn(a, b).sum().backward()
        out += [np.round(np.nan_to_num(g.numpy(), nan=-99.0), 6).tolist() for g in (a.grad, b.grad)]
    a = T.tensor([0.3, -1.2], dtype=T.float64, requires_grad=True)
    b = T.tensor([2.0, 0.1], dtype=T.float64, requires_grad=True)
    first = T.autograd.grad(T.logaddexp(a, b).sum(), (a, b), create_graph=True)
    second = T.autograd.grad(first[0].sum(), (a, b))
    return out + [np.round(g.detach().numpy(), 12).tolist() for g in first + second]


@pytest.mark.parametrize("program", [remainders, logaddexp_grads], ids=lambda p: p.__name__)
def test_signed_zeros_and_infinities_as_torch(program):
    assert program(tidal_torch) == program(real_torch)


# -- views a custom Function returns refuse in-place writes (torch's creation meta) --------------------------------
def custom_function_views(T) -> list:
    def function_of(forward):
        class F(T.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return forward(x)

            @staticmethod
            def backward(ctx, *grads):
                return grads[0]
        return F
    out = []
    for forward in (lambda x: x, lambda x: x[0], lambda x: x.view(2, 1), lambda x: (x, 3), lambda x: (x, x * 2),
                    lambda x: (x * 2, x), lambda x: (x, x[0])):
        outs = function_of(forward).apply(T.ones(2, requires_grad=True) * 1)
        for o in (outs if isinstance(outs, tuple) else (outs,)):
            if isinstance(o, T.Tensor):
                out.append(outcome(lambda: o.add_(1).tolist()))
    x = T.ones(2, requires_grad=True) * 1
    a = function_of(lambda x: x).apply(x)
    with T.no_grad():
        a.add_(1)  # (no graph: allowed)
    out.append(a.tolist())
    relu = T.nn.ReLU(inplace=True)
    relu.register_full_backward_hook(lambda module, grad_in, grad_out: None)  # its identity Function's views
    out.append(outcome(lambda: relu(T.ones(1, 2, requires_grad=True) * 1).tolist()))
    return out


def test_views_returned_by_custom_functions_refuse_inplace_writes():
    assert custom_function_views(tidal_torch) == custom_function_views(real_torch)


# -- an optimizer's state dict holds its live state (torch's references, not a snapshot) ---------------------------
def kept_state_dicts(T) -> list:
    out = []
    for name in ("Adam", "SGD", "NAdam", "Adagrad", "RMSprop", "ASGD", "Rprop"):
        p, q = T.nn.Parameter(T.tensor([1., -2., 3.])), T.nn.Parameter(T.tensor([1., 2.]))
        opt = getattr(T.optim, name)([p, q], lr=0.1)
        p.grad, q.grad = T.ones(3), T.ones(2)
        opt.step()
        best = opt.state_dict()  # kept, not copied, while training goes on
        frozen = copy.deepcopy(best)
        for _ in range(3):
            p.grad = T.ones(3)
            opt.step()
        steps = [float(s["step"]) for s in best["state"].values() if "step" in s]
        out.append((name, steps, [float(s["step"]) for s in frozen["state"].values() if "step" in s]))
        again = getattr(T.optim, name)([p, q], lr=0.1)
        again.load_state_dict(best)
        out.append([float(s["step"]) for s in again.state_dict()["state"].values() if "step" in s])
    return out


def test_kept_optimizer_state_dict_follows_later_steps():
    assert kept_state_dicts(tidal_torch) == kept_state_dicts(real_torch)


# -- training programs: resuming from a checkpoint, freezing, weight averaging, a custom optimizer, GradScaler ---------
def resume(T):
    """Train 6 steps straight vs 3 steps, checkpoint (model, optimizer, scheduler, epoch) to a file, rebuild everything
    fresh, load, 3 more steps: the same weights, lr and optimizer state either way."""
    X, Y = T.from_numpy(data((16, 4), 1)), T.from_numpy(data((16, 2), 2))
    def build():
        m = T.nn.Sequential(T.nn.Linear(4, 8), T.nn.LayerNorm(8), T.nn.GELU(), T.nn.Dropout(0.0), T.nn.Linear(8, 2))
        init(T, m, 3)
        decay = [p for n, p in m.named_parameters() if n.endswith("weight") and p.dim() > 1]
        no_decay = [p for n, p in m.named_parameters() if not (n.endswith("weight") and p.dim() > 1)]
        opt = T.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=0.01, betas=(0.9, 0.95))
        sched = T.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=6)
        return m, opt, sched
    def train(m, opt, sched, steps):
        losses = []
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = T.nn.functional.mse_loss(m(X), Y)
            loss.backward()
            T.nn.utils.clip_grad_norm_(m.parameters(), 0.5)
            opt.step(); sched.step()
            losses.append(loss.item())
        return losses
    m, opt, sched = build()
    straight = train(m, opt, sched, 6)
    m2, opt2, sched2 = build()
    first = train(m2, opt2, sched2, 3)
    path = io.BytesIO()
    T.save({"model": m2.state_dict(), "opt": opt2.state_dict(), "sched": sched2.state_dict(), "epoch": 3}, path)
    m3, opt3, sched3 = build()
    path.seek(0)
    ck = T.load(path)
    m3.load_state_dict(ck["model"]); opt3.load_state_dict(ck["opt"]); sched3.load_state_dict(ck["sched"])
    second = train(m3, opt3, sched3, 3)
    return {"straight": straight, "resumed": first + second, "w": [p for p in m3.parameters()],
            "w_straight": [p for p in m.parameters()], "lr": [g["lr"] for g in opt3.param_groups],
            "exp_avg": [opt3.state[p]["exp_avg"] for p in m3.parameters()], "epoch": ck["epoch"],
            "keys": sorted(ck["opt"]["state"][0]), "groups": [sorted(g) for g in ck["opt"]["param_groups"]],
            "sched_keys": sorted(ck["sched"])}


def freeze_and_finetune(T):
    """Freeze a backbone, train the head with a separate LR, then unfreeze with add_param_group."""
    X, Y = T.from_numpy(data((8, 3), 4)), T.from_numpy(np.array([0, 1, 2, 1, 0, 2, 1, 0]))
    back = T.nn.Sequential(T.nn.Linear(3, 6), T.nn.Tanh())
    head = T.nn.Linear(6, 3)
    init(T, back, 5); init(T, head, 6)
    back.requires_grad_(False)
    opt = T.optim.SGD(head.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    out = []
    for step in range(4):
        if step == 2:
            back.requires_grad_(True)
            opt.add_param_group({"params": back.parameters(), "lr": 0.01})
        opt.zero_grad()
        loss = T.nn.functional.cross_entropy(head(back(X)), Y, label_smoothing=0.1)
        loss.backward()
        out.append((loss.item(), back[0].weight.grad is None))
        opt.step()
    return {"trace": out, "back": back[0].weight, "head": head.weight,
            "groups": [(g["lr"], len(g["params"]), g["momentum"], g["nesterov"]) for g in opt.param_groups]}


def ema_and_swa(T):
    """Keep an exponential moving average of the weights (torch.optim.swa_utils.AveragedModel) and update BN."""
    X = T.from_numpy(data((12, 3), 7))
    m = T.nn.Sequential(T.nn.Linear(3, 4), T.nn.BatchNorm1d(4), T.nn.ReLU(), T.nn.Linear(4, 1))
    init(T, m, 8)
    ema = T.optim.swa_utils.AveragedModel(m, multi_avg_fn=T.optim.swa_utils.get_ema_multi_avg_fn(0.9))
    swa = T.optim.swa_utils.AveragedModel(m)
    opt = T.optim.SGD(m.parameters(), lr=0.05)
    sched = T.optim.swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=2)
    for _ in range(4):
        opt.zero_grad()
        m(X).pow(2).mean().backward()
        opt.step(); ema.update_parameters(m); swa.update_parameters(m); sched.step()
    loader = T.utils.data.DataLoader(T.utils.data.TensorDataset(X), batch_size=4)
    T.optim.swa_utils.update_bn(((x,) for (x,) in loader), swa)
    return {"ema": [p for p in ema.module.parameters()], "swa": [p for p in swa.module.parameters()],
            "n": ema.n_averaged, "swa_n": swa.n_averaged, "lr": opt.param_groups[0]["lr"],
            "bn": [swa.module[1].running_mean, swa.module[1].running_var], "keys": sorted(swa.state_dict())}


def custom_optimizer(T):
    class MySGD(T.optim.Optimizer):
        def __init__(self, params, lr=0.01, momentum=0.9):
            if lr < 0.0:
                raise ValueError(f"Invalid learning rate: {lr}")
            super().__init__(params, dict(lr=lr, momentum=momentum))

        @T.no_grad()
        def step(self, closure=None):
            loss = None
            if closure is not None:
                with T.enable_grad():
                    loss = closure()
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = T.clone(p.grad).detach()
                    else:
                        state["momentum_buffer"].mul_(group["momentum"]).add_(p.grad)
                    p.add_(state["momentum_buffer"], alpha=-group["lr"])
                    state["step"] = state.get("step", 0) + 1
            return loss

    class Lookahead:
        def __init__(self, base, k=2, alpha=0.5):
            self.base, self.k, self.alpha = base, k, alpha
            self.param_groups = base.param_groups
            self.slow = [[p.detach().clone() for p in g["params"]] for g in self.param_groups]
            self.count = 0
        def zero_grad(self):
            self.base.zero_grad()
        def step(self, closure=None):
            loss = self.base.step(closure)
            self.count += 1
            if self.count % self.k == 0:
                with T.no_grad():
                    for g, slows in zip(self.param_groups, self.slow):
                        for p, s in zip(g["params"], slows):
                            s.add_(p - s, alpha=self.alpha)
                            p.copy_(s)
            return loss
        def state_dict(self):
            return {"base": self.base.state_dict(), "slow": self.slow, "count": self.count}

    X, Y = T.from_numpy(data((10, 3), 11)), T.from_numpy(data((10, 1), 12))
    m = T.nn.Sequential(T.nn.Linear(3, 5), T.nn.SiLU(), T.nn.Linear(5, 1))
    init(T, m, 13)
    opt = Lookahead(MySGD(m.parameters(), lr=0.05))
    losses = []
    for _ in range(5):
        def closure():
            opt.zero_grad()
            loss = T.nn.functional.smooth_l1_loss(m(X), Y, beta=0.5)
            loss.backward()
            return loss
        losses.append(opt.step(closure).item())
    sd = opt.state_dict()
    fresh = MySGD(m.parameters(), lr=0.3)
    fresh.load_state_dict(copy.deepcopy(sd["base"]))
    refused = outcome(lambda: MySGD(m.parameters(), lr=-1))
    return {"losses": losses, "w": list(m.parameters()), "steps": [s.get("step") for s in sd["base"]["state"].values()],
            "buf": [s["momentum_buffer"] for s in sd["base"]["state"].values()], "groups": sd["base"]["param_groups"],
            "fresh_lr": fresh.param_groups[0]["lr"], "fresh_state": [s["step"] for s in fresh.state.values()],
            "refused": list(refused), "repr": repr(fresh).replace("tidal", "torch"), "defaults": fresh.defaults}


def grad_scaler_cpu(T):
    """GradScaler on the CPU (device='cpu'), bfloat16 autocast, gradient unscale and clipping."""
    X, Y = T.from_numpy(data((8, 4), 21)), T.from_numpy(data((8, 2), 22))
    m = T.nn.Linear(4, 2)
    init(T, m, 23)
    opt = T.optim.SGD(m.parameters(), lr=0.1)
    scaler = T.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)
    scales, norms = [], []
    for i in range(4):
        opt.zero_grad()
        with T.autocast("cpu", dtype=T.bfloat16):
            out = m(X)
            loss = ((out.float() - Y) ** 2).mean() * (1e30 if i == 1 else 1.0)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        norms.append(T.nn.utils.clip_grad_norm_(m.parameters(), 1.0).item())
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return {"scales": scales, "w": list(m.parameters()), "finite": [n == n and n != float("inf") for n in norms],
            "sd": {k: v for k, v in scaler.state_dict().items()}}


@pytest.mark.parametrize("program", [resume, freeze_and_finetune, ema_and_swa, custom_optimizer, grad_scaler_cpu],
                         ids=lambda p: p.__name__)
def test_training_programs(program):
    run_both(program, rtol=2e-3, atol=1e-4)


# -- torch's module paths that libraries import from (the names exist, and behave as torch's) ----------------------
OWN_PATHS = ["nn.init._no_grad_uniform_", "nn.init._no_grad_normal_", "nn.init._no_grad_trunc_normal_",
             "nn.init._no_grad_fill_", "nn.init._no_grad_zero_", "nn.modules.pooling._AdaptiveAvgPoolNd",
             "nn.modules.pooling._AdaptiveMaxPoolNd", "optim.optimizer.ParamsT", "optim.optimizer._get_value",
             "optim.optimizer._use_grad_for_differentiable", "optim.optimizer._default_to_fused_or_foreach",
             "optim.adamw.AdamW", "utils.data._utils.pin_memory.pin_memory", "serialization.DEFAULT_PROTOCOL",
             "serialization.LoadEndianness", "serialization.get_default_load_endianness",
             "serialization.set_default_mmap_options", "serialization.get_default_mmap_options",
             "serialization.location_tag", "serialization.default_restore_location", "serialization.register_package",
             "serialization.normalize_storage_type", "serialization.check_module_version_greater_or_equal",
             "serialization.get_unsafe_globals_in_checkpoint", "nn.parameter.UninitializedParameter",
             "nn.utils.clip_grad._get_total_norm", "nn.utils.clip_grad._clip_grads_with_norm_",
             "optim.lr_scheduler._enable_get_lr_call", "optim.lr_scheduler._warn_get_lr_called_within_step",
             "nn.modules.padding._ReflectionPadNd", "nn.modules.padding._ReplicationPadNd",
             "utils.data.backward_compatibility.worker_init_fn"]
COMPAT_PATHS = ["nn.modules.batchnorm._BatchNorm", "nn.modules.batchnorm._NormBase",
                "nn.modules.instancenorm._InstanceNorm", "nn.modules.conv._ConvNd", "nn.modules.conv._ConvTransposeNd",
                "nn.modules.module._addindent", "nn.modules.utils._reverse_repeat_tuple",
                "nn.modules.utils.consume_prefix_in_state_dict_if_present"]


def _resolve(root: str, path: str):
    module, _, name = f"{root}.{path}".rpartition(".")
    return getattr(importlib.import_module(module), name)


@pytest.mark.parametrize("path", OWN_PATHS)
def test_torch_module_paths(path):
    assert callable(_resolve("torch", path)) or _resolve("torch", path) is not None
    _resolve("tidal", path)


def test_torch_module_paths_under_compat():
    for path in COMPAT_PATHS:
        _resolve("torch", path)
        _resolve("tidal.compat", path)


def module_path_helpers(T) -> list:
    conv = T.nn.Conv2d(2, 4, 3)
    bn, inorm = T.nn.BatchNorm2d(2), T.nn.InstanceNorm2d(2)
    utils = importlib.import_module(f"{T.__name__}.nn.modules.utils")
    module = importlib.import_module(f"{T.__name__}.nn.modules.module")
    return [isinstance(conv, importlib.import_module(f"{T.__name__}.nn.modules.conv")._ConvNd),
            isinstance(bn, importlib.import_module(f"{T.__name__}.nn.modules.batchnorm")._BatchNorm),
            isinstance(inorm, importlib.import_module(f"{T.__name__}.nn.modules.instancenorm")._InstanceNorm),
            isinstance(inorm, importlib.import_module(f"{T.__name__}.nn.modules.batchnorm")._BatchNorm),
            utils._reverse_repeat_tuple((1, 2), 2), module._addindent("a\nb\n\nc", 2)]


def test_private_bases_and_helpers_as_torch():
    assert module_path_helpers(tidal_torch) == module_path_helpers(real_torch)


def serialization_options(T) -> list:
    S = T.serialization
    out = [S.DEFAULT_PROTOCOL, [e.name for e in S.LoadEndianness], S.get_default_load_endianness(),
           S.get_default_mmap_options(), outcome(lambda: S.set_default_load_endianness("little")),
           outcome(lambda: S.set_default_mmap_options(12345)), S.location_tag(T.ones(1).untyped_storage())]
    S.set_default_load_endianness(S.LoadEndianness.LITTLE)
    out.append(S.get_default_load_endianness().name)
    S.set_default_load_endianness(None)
    with S.set_default_mmap_options(mmap.MAP_SHARED):
        out.append(S.get_default_mmap_options() == mmap.MAP_SHARED)
    out.append(S.get_default_mmap_options() == mmap.MAP_PRIVATE)
    out.append(S.check_module_version_greater_or_equal(np, (1, 0)))
    out.append(outcome(lambda: S.check_module_version_greater_or_equal(types.SimpleNamespace(
        __name__="m", __version__="x.y"), (1, 0))))
    optimizer = importlib.import_module(f"{T.optim.__name__}.optimizer")
    out.append(optimizer._default_to_fused_or_foreach([T.ones(1)], False))
    out.append(optimizer._get_value(T.tensor(3.0)))
    return out


def test_serialization_options_as_torch():
    assert serialization_options(tidal_torch) == serialization_options(real_torch)


def ddp_checkpoint(T) -> list:
    """A checkpoint saved from a DistributedDataParallel wrapper ('module.' keys) loaded into a plain model."""
    utils = importlib.import_module(f"{T.__name__}.nn.modules.utils")
    wrapped = T.nn.Module()
    wrapped.module = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.BatchNorm1d(2))
    sd = wrapped.state_dict()
    utils.consume_prefix_in_state_dict_if_present(sd, "module.")
    model = T.nn.Sequential(T.nn.Linear(2, 2), T.nn.BatchNorm1d(2))
    return [list(sd), dict(sd._metadata), str(model.load_state_dict(sd))]


def test_ddp_checkpoint_prefix_as_torch():
    assert ddp_checkpoint(tidal_torch) == ddp_checkpoint(real_torch)


def scheduler_from_torch_code(T) -> list:
    """A scheduler written as torch's own are (its helpers imported from torch.optim.lr_scheduler)."""
    S = importlib.import_module(f"{T.optim.__name__}.lr_scheduler")

    class Halving(S.LRScheduler):
        def get_lr(self):
            S._warn_get_lr_called_within_step(self)
            return [group["lr"] * (0.5 if self.last_epoch else 1.0) for group in self.optimizer.param_groups]
    opt = T.optim.SGD([T.nn.Parameter(T.ones(2))], lr=1.0)
    sched = Halving(opt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            opt.step()
            sched.step()
        outside = sched.get_lr()
        with S._enable_get_lr_call(sched):
            inside = sched.get_lr()
    padding = importlib.import_module(f"{type(T.nn.ReflectionPad2d(1)).__module__}")  # (torch's file or tidal's)
    pads = [isinstance(T.nn.ReflectionPad2d(1), padding._ReflectionPadNd),
            isinstance(T.nn.ReplicationPad1d(1), padding._ReplicationPadNd)]
    return [opt.param_groups[0]["lr"], outside, inside, [str(w.message) for w in caught], pads]


def test_scheduler_from_torch_code():
    assert scheduler_from_torch_code(tidal_torch) == scheduler_from_torch_code(real_torch)


# -- sparse COO tensors in checkpoints (torch's _rebuild_sparse_tensor) -----------------------------------------------
def sparse_checkpoint(T) -> dict:
    s = T.sparse_coo_tensor(T.tensor([[0, 1, 1], [1, 0, 0]]), T.tensor([1., 2., 3.]), (2, 3))
    return {"s": s, "c": s.coalesce(), "dense": T.ones(2)}


def read_sparse(T, data: bytes) -> list:
    obj = T.load(io.BytesIO(data))
    return [(str(obj[k].layout).split(".")[-1], obj[k].is_coalesced(), obj[k]._indices().tolist(),
             obj[k]._values().tolist(), tuple(obj[k].shape), obj[k].to_dense().tolist()) for k in ("s", "c")]


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("writer", FRAMEWORKS, ids=lambda T: T.__name__)
def test_sparse_tensors_in_checkpoints(writer, legacy):
    buf = io.BytesIO()
    writer.save(sparse_checkpoint(writer), buf, _use_new_zipfile_serialization=not legacy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert read_sparse(tidal_torch, buf.getvalue()) == read_sparse(real_torch, buf.getvalue())


def many_workers(T) -> list:
    """A loader asking for more worker processes than the CPUs this process may use (built, not iterated)."""
    import os
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        T.utils.data.DataLoader(list(range(4)), batch_size=2, num_workers=len(os.sched_getaffinity(0)) + 1)
        T.utils.data.DataLoader(list(range(4)), batch_size=2, num_workers=1)
    return [(w.category.__name__, str(w.message)) for w in caught]


def test_too_many_workers_warn_as_torch():
    assert many_workers(tidal_torch) == many_workers(real_torch) != []
