"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): Transfer learning, the performance-tuning recipe,
autocast."""


import tidal
from test_examples_programs import init_weights, run_both
from tutorial_data import labels, uniform


# -- transfer learning loop, performance-tuning recipe, ensembling ---------------------------------------------------
def transfer_learning(T):
    """The transfer-learning tutorial's train_model with a small stand-in backbone: requires_grad = False on
    the backbone, a new model.fc = nn.Linear(num_ftrs, 2), SGD(momentum) on the new layer, lr_scheduler.StepLR,
    phases with model.train()/eval() and torch.set_grad_enabled(phase == 'train'), torch.max(outputs, 1),
    running_corrects += torch.sum(preds == labels.data), .double() / size, copy.deepcopy(state_dict) of the
    best weights reloaded at the end."""
    import copy
    nn = T.nn

    class TinyResNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(4)
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(4, 10)

        def forward(self, x):
            x = self.pool(T.relu(self.bn(self.conv(x))))
            return self.fc(T.flatten(x, 1))

    model_conv = TinyResNet()
    init_weights(T, model_conv, 200)
    for param in model_conv.parameters():
        param.requires_grad = False
    num_ftrs = model_conv.fc.in_features
    model_conv.fc = nn.Linear(num_ftrs, 2)
    init_weights(T, model_conv.fc, 201)
    criterion = nn.CrossEntropyLoss()
    optimizer_conv = T.optim.SGD(model_conv.fc.parameters(), lr=0.1, momentum=0.9)
    exp_lr_scheduler = T.optim.lr_scheduler.StepLR(optimizer_conv, step_size=2, gamma=0.1)
    data = {phase: [(T.from_numpy(uniform((4, 3, 8, 8), 202 + 2 * k + (phase == "val"))),
                     T.from_numpy(labels(4, 2, 210 + 2 * k + (phase == "val")))) for k in range(2)]
            for phase in ("train", "val")}
    dataset_sizes = {phase: 8 for phase in data}
    best_model_wts, best_acc, history = copy.deepcopy(model_conv.state_dict()), 0.0, []
    for epoch in range(3):
        for phase in ["train", "val"]:
            if phase == "train":
                model_conv.train()
            else:
                model_conv.eval()
            running_loss, running_corrects = 0.0, 0
            for inputs, labels_ in data[phase]:
                optimizer_conv.zero_grad()
                with T.set_grad_enabled(phase == "train"):
                    outputs = model_conv(inputs)
                    _, preds = T.max(outputs, 1)
                    loss = criterion(outputs, labels_)
                    if phase == "train":
                        loss.backward()
                        optimizer_conv.step()
                running_loss += loss.item() * inputs.size(0)
                running_corrects += T.sum(preds == labels_.data)
            if phase == "train":
                exp_lr_scheduler.step()
            epoch_loss = running_loss / dataset_sizes[phase]
            epoch_acc = running_corrects.double() / dataset_sizes[phase]
            history.append([epoch_loss, epoch_acc.item(), exp_lr_scheduler.get_last_lr()[0]])
            if phase == "val" and epoch_acc > best_acc:
                best_acc = epoch_acc
                best_model_wts = copy.deepcopy(model_conv.state_dict())
    model_conv.load_state_dict(best_model_wts)
    return {"history": history, "best": float(best_acc), "fc": model_conv.fc.weight,
            "bn_mean": model_conv.bn.running_mean, "frozen": model_conv.conv.weight.grad is None}


def test_transfer_learning():
    run_both(transfer_learning)


def performance_recipe(T):
    """The performance-tuning recipe's CPU-side switches: zero_grad(set_to_none=True) vs False, channels_last
    for inputs and the model (the values; tidal keeps row-major strides), torch.inference_mode, cudnn.benchmark set,
    set_detect_anomaly(False) (autocast: test_autocast_dtypes)."""
    with T.backends.cudnn.flags(enabled=True, benchmark=True):  # (the recipe's global switch, scoped: torch's
        return _performance_recipe(T)                           # own tests may have frozen the global flags)


def _performance_recipe(T):
    nn = T.nn
    T.autograd.set_detect_anomaly(False)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 3))
    init_weights(T, model, 220)
    x = T.from_numpy(uniform((2, 3, 6, 6), 221))
    opt = T.optim.SGD(model.parameters(), lr=0.1)
    model(x).sum().backward()
    opt.zero_grad(set_to_none=False)
    kept = [p.grad is not None and float(p.grad.abs().sum()) == 0.0 for p in model.parameters()]
    opt.zero_grad(set_to_none=True)
    gone = [p.grad is None for p in model.parameters()]
    x_cl = x.to(memory_format=T.channels_last)
    model_cl = model.to(memory_format=T.channels_last)
    out_cl = model_cl(x_cl)
    with T.inference_mode():
        inf = model(x)
    # (torch gives x_cl NHWC strides; tidal keeps every tensor row-major: only the values are compared)
    return {"kept": kept, "gone": gone, "out": out_cl, "inference": [inf, inf.requires_grad, inf.is_inference()]}


def test_performance_recipe():
    run_both(performance_recipe)


def autocast_dtypes(T):
    """The AMP recipe's asserts, on the CPU with bfloat16: inside autocast a Linear's output is bfloat16 and
    the loss float32, the parameters' gradients float32; matmul/bmm/conv/attention in bfloat16, elementwise ops
    and float64 untouched, a nested autocast(enabled=False) block in float32, custom_fwd(cast_inputs=float32);
    outside, float32 again."""
    nn, F = T.nn, T.nn.functional
    name = lambda t: str(t.dtype).split(".")[1]  # noqa: E731
    net = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    init_weights(T, net, 223)
    x = T.from_numpy(uniform((5, 4), 224))
    img, kernel = T.from_numpy(uniform((1, 2, 5, 5), 225)), T.from_numpy(uniform((3, 2, 3, 3), 226))
    q = T.from_numpy(uniform((1, 2, 4, 8), 227))

    class Scale(T.autograd.Function):
        @staticmethod
        @T.amp.custom_fwd(device_type="cpu", cast_inputs=T.float32)
        def forward(ctx, a):
            return a * 2

        @staticmethod
        @T.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            return g * 2

    with T.autocast(device_type="cpu", dtype=T.bfloat16):
        output = net(x)
        loss = nn.MSELoss()(output, T.zeros(5, 2))
        ce = F.cross_entropy(output, T.tensor([0, 1, 0, 1, 1]))
        inside = [name(output), name(loss), name(ce), T.is_autocast_enabled("cpu"), T.is_autocast_enabled(),
                  str(T.get_autocast_dtype("cpu")), name(x @ x.t()), name(T.mm(x, x.t())),
                  name(T.bmm(x[None], x.t()[None])), name(F.conv2d(img, kernel)), name(x * 2), name(x.exp()),
                  name(x.double() @ x.double().t()), name(F.scaled_dot_product_attention(q, q, q)),
                  name(Scale.apply(x.bfloat16()))]
        with T.autocast(device_type="cpu", enabled=False):
            inside += [name(net(x)), T.is_autocast_enabled("cpu")]
        inside.append(name(net(x)))
    loss.backward()
    return {"inside": [str(v).split(".")[-1] for v in inside], "outside": [name(net(x)), T.is_autocast_enabled("cpu")],
            "loss": loss, "grad_dtype": name(net[0].weight.grad), "grad": net[0].weight.grad}


def test_autocast_dtypes():
    run_both(autocast_dtypes, rtol=2e-2, atol=2e-2)
