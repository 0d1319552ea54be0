"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): Save/load recipes, grad_fn names, the NumPy bridge, the
tensor tutorial's printed output."""

import numpy as np
import pytest
import torch as real_torch

import tidal
import tidal.compat as tidal_torch
from test_examples_programs import init_weights, run_both
from tutorial_data import labels, uniform


# -- saving and loading -------------------------------------------------------------------------------------------
def save_load_recipes(T, tmp_path):
    """The save/load recipes: state_dict for inference (load_state_dict(torch.load(PATH, weights_only=True))),
    a general checkpoint dict with the optimizer's state resumed (the resumed run must continue exactly),
    several models in one file, warmstarting with strict=False (missing/unexpected keys reported), map_location,
    the serialization notes' view sharing (a saved slice and its base stay one storage after loading) and
    load_state_dict(assign=True) of an mmap'd checkpoint."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    tag = T.__name__.replace(".", "_")

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.pool = nn.MaxPool2d(2, 2)
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc1 = nn.Linear(16 * 5 * 5, 32)
            self.fc2 = nn.Linear(32, 10)

        def forward(self, x):
            x = self.pool(F.relu(self.conv1(x)))
            x = self.pool(F.relu(self.conv2(x)))
            x = T.flatten(x, 1)
            return self.fc2(F.relu(self.fc1(x)))

    inputs, targets = T.from_numpy(uniform((4, 3, 32, 32), 150)), T.from_numpy(labels(4, 10, 151))
    criterion = nn.CrossEntropyLoss()

    def train_steps(net, optimizer, n):
        losses = []
        for _ in range(n):
            optimizer.zero_grad()
            loss = criterion(net(inputs), targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    net = Net()
    init_weights(T, net, 152)
    optimizer = optim.SGD(net.parameters(), lr=0.001, momentum=0.9)
    first = train_steps(net, optimizer, 2)
    PATH = tmp_path / f"model_{tag}.pt"
    T.save({"epoch": 2, "model_state_dict": net.state_dict(), "optimizer_state_dict": optimizer.state_dict(),
            "loss": first[-1]}, PATH)
    continued = train_steps(net, optimizer, 2)

    model = Net()
    optimizer = optim.SGD(model.parameters(), lr=0.001, momentum=0.9)
    checkpoint = T.load(PATH, weights_only=True)
    model.load_state_dict(checkpoint["model_state_dict"])
    optimizer.load_state_dict(checkpoint["optimizer_state_dict"])
    epoch, loss = checkpoint["epoch"], checkpoint["loss"]
    model.train()
    resumed = train_steps(model, optimizer, 2)
    assert resumed == continued or np.allclose(resumed, continued, rtol=1e-6), (resumed, continued)

    path_sd = tmp_path / f"sd_{tag}.pt"
    T.save(model.state_dict(), path_sd)
    inference = Net()
    inference.load_state_dict(T.load(path_sd, weights_only=True, map_location=T.device("cpu")))
    inference.eval()

    netA, netB = Net(), Net()
    init_weights(T, netA, 153)
    both = tmp_path / f"both_{tag}.pt"
    T.save({"modelA_state_dict": netA.state_dict(), "modelB_state_dict": netB.state_dict(),
            "optimizerA_state_dict": optim.SGD(netA.parameters(), lr=0.1).state_dict()}, both)
    loaded = T.load(both, weights_only=True)
    netB.load_state_dict(loaded["modelA_state_dict"])

    class NetB(nn.Module):  # warmstarting: a model sharing some layers only
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 6, 5)
            self.fc3 = nn.Linear(10, 2)

    warm = NetB()
    result = warm.load_state_dict(T.load(path_sd, weights_only=True), strict=False)
    with pytest.raises(RuntimeError, match="Missing key"):
        NetB().load_state_dict(T.load(path_sd, weights_only=True))

    numbers = T.arange(1, 10)
    evens = numbers[1::2]
    shared = tmp_path / f"views_{tag}.pt"
    T.save([numbers, evens], shared)
    loaded_numbers, loaded_evens = T.load(shared)
    loaded_evens *= 2
    small = tmp_path / f"small_{tag}.pt"
    T.save(evens.clone(), small)

    with T.device("cpu"):
        meta_model = Net()  # the recipe builds it on the meta device: see test_meta_device_load_recipe
    meta_model.load_state_dict(T.load(path_sd, weights_only=True, mmap=True), assign=True)
    with T.no_grad():
        outputs = [inference(inputs), netB(inputs), meta_model(inputs)]
    return {"first": first, "continued": continued, "resumed": resumed, "epoch": epoch, "loss": loss,
            "outputs": outputs, "missing": sorted(result.missing_keys), "unexpected": sorted(result.unexpected_keys),
            "warm": warm.conv1.weight, "numbers": loaded_numbers, "small": T.load(small),
            "meta_device": str(meta_model.fc1.weight.device), "opt_keys": sorted(loaded["optimizerA_state_dict"])}


def test_save_load_recipes(tmp_path):
    run_both(save_load_recipes, tmp_path=tmp_path)
    # torch can read what tidal wrote and the other way round
    for writer, reader in ((tidal_torch, real_torch), (real_torch, tidal_torch)):
        path = tmp_path / f"cross_{writer.__name__}.pt"
        model = writer.nn.Sequential(writer.nn.Linear(3, 2), writer.nn.BatchNorm1d(2))
        init_weights(writer, model, 154)
        opt = writer.optim.Adam(model.parameters(), lr=0.1)
        model(writer.ones(4, 3)).sum().backward()
        opt.step()
        writer.save({"model": model.state_dict(), "opt": opt.state_dict()}, path)
        got = reader.load(path, weights_only=True)
        twin = reader.nn.Sequential(reader.nn.Linear(3, 2), reader.nn.BatchNorm1d(2))
        twin.load_state_dict(got["model"])
        twin_opt = reader.optim.Adam(twin.parameters(), lr=0.1)
        twin_opt.load_state_dict(got["opt"])
        np.testing.assert_allclose(twin[0].weight.detach().numpy(), model[0].weight.detach().numpy())
        np.testing.assert_allclose(twin_opt.state_dict()["state"][0]["exp_avg"].numpy(),
                                   opt.state_dict()["state"][0]["exp_avg"].numpy())
        assert twin[1].num_batches_tracked.item() == 1


def meta_device_load(T, tmp_path):
    """The module_load_state_dict_tips recipe: build the model on the meta device (no memory), then
    load_state_dict(torch.load(..., mmap=True), assign=True) gives it the checkpoint's tensors."""
    nn = T.nn
    path = tmp_path / f"meta_{T.__name__}.pt"
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    init_weights(T, model, 155)
    T.save(model.state_dict(), path)
    with T.device("meta"):
        new_m = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    before = [str(new_m[0].weight.device), list(new_m[0].weight.shape)]
    new_m.load_state_dict(T.load(path, mmap=True, weights_only=True), assign=True)
    return {"before": before, "after": str(new_m[0].weight.device), "out": new_m(T.ones(2, 3))}


def test_meta_device_load_recipe(tmp_path):
    run_both(meta_device_load, tmp_path=tmp_path)


# -- what the tutorials print: grad_fn names -------------------------------------------------------------------------
def _grad_fn_names(T) -> dict:
    """The class of the last node of the ops the tutorials print `.grad_fn` of (losses, activations, padding,
    resampling, spatial transformers); tidal composes them, naming the composite's last node as torch's."""
    F = T.nn.functional
    x = T.tensor(uniform((3, 4), 160), requires_grad=True)
    p, t = T.from_numpy(uniform((3, 4), 161, 0, 1)), T.tensor([1, 0, 2])
    img = T.tensor(uniform((1, 2, 5, 6), 162), requires_grad=True)
    vol = T.tensor(uniform((1, 1, 3, 4, 5), 163), requires_grad=True)
    cases = {
        "mse": lambda: F.mse_loss(x, p), "mse_none": lambda: F.mse_loss(x, p, reduction="none"),
        "nll": lambda: F.nll_loss(x, t), "nll_sum": lambda: F.nll_loss(x, t, reduction="sum"),
        "ce": lambda: F.cross_entropy(x, t), "ce_weight": lambda: F.cross_entropy(x, t, weight=p[0]),
        "ce_1d": lambda: F.cross_entropy(x[0], t[0]), "ce_2d": lambda: F.cross_entropy(img, T.zeros(1, 5, 6).long()),
        "nll_3d": lambda: F.nll_loss(img[0], T.zeros(2, 6).long()),
        "bce": lambda: F.binary_cross_entropy(x.sigmoid(), p),
        "bce_w": lambda: F.binary_cross_entropy(x.sigmoid(), p, p),
        "bce_logits": lambda: F.binary_cross_entropy_with_logits(x, p),
        "bce_logits_pw": lambda: F.binary_cross_entropy_with_logits(x, p, pos_weight=p[0]),
        "smooth_l1": lambda: F.smooth_l1_loss(x, p), "huber": lambda: F.huber_loss(x, p),
        "soft_margin": lambda: F.soft_margin_loss(x, p.sign()), "multi_margin": lambda: F.multi_margin_loss(x, t),
        "multilabel_margin": lambda: F.multilabel_margin_loss(x, T.tensor([[1, -1, 0, 0]] * 3)),
        "leaky_relu": lambda: F.leaky_relu(x, 0.2), "silu": lambda: F.silu(x), "mish": lambda: F.mish(x),
        "elu": lambda: F.elu(x), "selu": lambda: F.selu(x), "celu": lambda: F.celu(x),
        "softplus": lambda: F.softplus(x),
        "hardtanh": lambda: F.hardtanh(x), "relu6": lambda: F.relu6(x), "logsigmoid": lambda: F.logsigmoid(x),
        "hardswish": lambda: F.hardswish(x), "hardsigmoid": lambda: F.hardsigmoid(x),
        "hardshrink": lambda: F.hardshrink(x), "softshrink": lambda: F.softshrink(x),
        "threshold": lambda: F.threshold(x, 0.1, 2.0), "glu": lambda: F.glu(x), "prelu": lambda: F.prelu(x, p[0, :1]),
        "pad": lambda: F.pad(img, (1, 1)), "pad_reflect": lambda: F.pad(img, (1, 1, 1, 1), mode="reflect"),
        "pad_replicate": lambda: F.pad(vol, (1, 1, 1, 1, 1, 1), mode="replicate"),
        "nearest": lambda: F.interpolate(img, scale_factor=2), "bilinear": lambda: F.interpolate(img, size=(7, 8),
                                                                                               mode="bilinear"),
        "nearest_exact": lambda: F.interpolate(img, scale_factor=2, mode="nearest-exact"),
        "trilinear": lambda: F.interpolate(vol, scale_factor=2, mode="trilinear"),
        "affine_grid": lambda: F.affine_grid(x[:2, :3].reshape(1, 2, 3), [1, 1, 3, 3], align_corners=False),
        "grid_sample": lambda: F.grid_sample(img, p[:2, :].reshape(1, 2, 2, 2) * 2 - 1, align_corners=False),
        "batch_norm_eval": lambda: F.batch_norm(img, T.zeros(2), T.ones(2), T.ones(2), T.zeros(2), training=False),
        "pixel_shuffle": lambda: F.pixel_shuffle(img[:, :1].expand(1, 4, 5, 6), 2),
        "pixel_unshuffle": lambda: F.pixel_unshuffle(img[..., :4, :4], 2),
        "linear": lambda: F.linear(x, p, p[0, :3]), "linear_1d": lambda: F.linear(x[0], p, p[0, :3]),
        "linear_3d": lambda: F.linear(img[0], img[0, 0, :2], p[0, :2]), "linear_nobias_1d": lambda: F.linear(x[0], p),
        "matmul_3d_2d": lambda: img[0] @ img[0, 0].t(), "matmul_2d_3d": lambda: x[:, :2] @ img[0, :, :2],
        "matmul_1d_2d": lambda: x[0] @ p.t(), "matmul_4d": lambda: img @ img.transpose(-1, -2),
    }
    return {k: type(f().grad_fn).__name__ for k, f in cases.items()}


def test_grad_fn_names_of_composites():
    run_both(_grad_fn_names)
    ours = _grad_fn_names(tidal_torch)
    assert ours["mse"] == "MseLossBackward0" and ours["ce"] == "NllLossBackward0"
    assert ours["ce_2d"] == "NllLoss2DBackward0"
    # the renamed node still differentiates as before
    x = tidal_torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    y = tidal_torch.nn.functional.leaky_relu(x, 0.2)
    y.backward(tidal_torch.ones(3))
    np.testing.assert_allclose(x.grad.numpy(), [1.0, 0.2, 1.0])


def test_grad_fn_names_title_cased():
    """torch title-cases each part of an op's name: Log1PBackward0, Deg2RadBackward0, MaxPool2DWithIndices..."""
    def names(T):
        x = T.tensor(uniform((1, 1, 4, 4), 164, 0, 1), requires_grad=True)
        F = T.nn.functional
        return [type(y.grad_fn).__name__ for y in (x.log1p(), x.deg2rad(), F.max_pool2d(x, 2), F.avg_pool2d(x, 2),
                                                   F.adaptive_max_pool2d(x, 2), F.unfold(x, 2))]
    run_both(names)


# -- Tensors: the bridge with NumPy ------------------------------------------------------------------------------------
def numpy_bridge(T):
    """from_numpy and .numpy() share memory both ways, and an op sees the values of the moment it is called:
    a later write through NumPy does not reach a result already computed, and a tensor write is visible to
    the NumPy array at once (no sync point in between)."""
    out = []
    n = np.ones(5, dtype=np.float32)
    t = T.from_numpy(n)
    y, s = t * 2, t.sum()
    n[0] = 100
    out += [y, s, t]
    a = T.linspace(0, 1, 6).view(2, 3)
    n = a.numpy()
    a[1, 1] = 17
    out.append(n.copy())
    a = T.zeros(6)
    n = a.numpy()
    a.add_(1)
    out.append(n.copy())
    t = T.ones(3)
    y = t * 2
    n = t.numpy()
    n[0] = 5
    out += [y, t]
    n = np.arange(6.0).reshape(2, 3)
    v = T.from_numpy(n)[:, 1]
    v.mul_(10)
    out.append(n.copy())
    n = np.ones(3, dtype=np.float32)
    t = T.as_tensor(n)
    z = (t + 1) * 2
    np.add(n, 1, out=n)
    out += [z, t]
    return out


def test_numpy_bridge_sees_values_at_the_call():
    run_both(numpy_bridge, rtol=0, atol=0)


# -- what the tutorials print, as scripts under the runner -----------------------------------------------------------
_NUMBER = r"-?\d+\.\d+(?:e[+-]\d+)?"


def _same_print(theirs: str, ours: str) -> bool:
    """The same line, but for a float printed one unit off in its last digit (float32 sums are rounded
    differently by other BLAS kernels, so a value near a rounding boundary may print either way)."""
    import re
    if theirs == ours:
        return True
    if re.split(_NUMBER, theirs) != re.split(_NUMBER, ours):
        return False
    for a, b in zip(re.findall(_NUMBER, theirs), re.findall(_NUMBER, ours)):
        unit = 10.0 ** -len(a.split("e")[0].split(".")[1])
        if len(a) != len(b) or abs(float(a.split("e")[0]) - float(b.split("e")[0])) > 1.5 * unit or \
                a.partition("e")[2] != b.partition("e")[2]:
            return False
    return True


def test_tutorial_prints_match_torch():
    """tests/scripts/tutorial_prints.py (tensor creation, arithmetic, broadcasting errors, reductions, in-place
    ops, out=, clone/detach, squeeze/unsqueeze, the blitz's autograd and Net) prints what torch prints."""
    import os
    import re
    import subprocess
    import sys
    import torch_reference
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "tutorial_prints.py")
    run_key = torch_reference.key("tutorial_prints")  # (torch's output, from the other VM mode's pass)
    reference = torch_reference.lookup(run_key)
    runs = [subprocess.Popen([sys.executable, *args, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for args in ([["-m", "tidal.compat"]] + ([[]] if reference is None else []))]
    ours, our_err = runs[0].communicate(timeout=180)
    if reference is None:
        theirs, their_err = runs[1].communicate(timeout=180)
        assert runs[1].returncode == 0, their_err
        reference = torch_reference.store(run_key, {"stdout": theirs})
    theirs = reference["stdout"]
    assert runs[0].returncode == 0, our_err
    mask = lambda text: re.sub(r"0x[0-9a-f]+", "0x", text).splitlines()  # noqa: E731
    for k, (a, b) in enumerate(zip(mask(theirs), mask(ours))):
        assert _same_print(a, b), f"line {k + 1}: torch printed {a!r}, tidal {b!r}"
    assert len(mask(theirs)) == len(mask(ours)) > 250
