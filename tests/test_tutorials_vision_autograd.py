"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): The spatial transformer, DCGAN's init, autograd mechanics,
the Jacobian/Hessian recipes."""
import math
import random


from test_examples_programs import init_weights, run_both
from tutorial_data import labels, uniform


# -- Spatial transformer networks, DCGAN ------------------------------------------------------------------------
def spatial_transformer(T):
    """The STN tutorial's Net: localization Sequential (Conv2d, MaxPool2d(2, stride=2), ReLU(True)), fc_loc with
    its last Linear zeroed and its bias set to the identity by .data.copy_, F.affine_grid(theta, x.size()) and
    F.grid_sample, Dropout2d and F.dropout (eval mode), nll_loss with reduction='sum', output.max(1,
    keepdim=True)[1] and pred.eq(target.view_as(pred)); then a rotated theta through both samplers."""
    nn, F, optim = T.nn, T.nn.functional, T.optim

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
            self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
            self.conv2_drop = nn.Dropout2d()
            self.fc1 = nn.Linear(320, 50)
            self.fc2 = nn.Linear(50, 10)
            self.localization = nn.Sequential(
                nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
                nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
            self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
            init_weights(T, self, 110)
            self.fc_loc[2].weight.data.zero_()
            self.fc_loc[2].bias.data.copy_(T.tensor([1, 0, 0, 0, 1, 0], dtype=T.float))

        def stn(self, x):
            xs = self.localization(x)
            xs = xs.view(-1, 10 * 3 * 3)
            theta = self.fc_loc(xs)
            theta = theta.view(-1, 2, 3)
            grid = F.affine_grid(theta, x.size())
            x = F.grid_sample(x, grid)
            return x

        def forward(self, x):
            x = self.stn(x)
            x = F.relu(F.max_pool2d(self.conv1(x), 2))
            x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
            x = x.view(-1, 320)
            x = F.relu(self.fc1(x))
            x = F.dropout(x, training=self.training)
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    model = Net()
    model.eval()  # the dropout draws differ between frameworks
    optimizer = optim.SGD(model.parameters(), lr=0.05)
    data, target = T.from_numpy(uniform((8, 1, 28, 28), 111, 0, 1)), T.from_numpy(labels(8, 10, 112))
    losses = []
    for step in range(3):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    with T.no_grad():
        output = model(data)
        test_loss = F.nll_loss(output, target, reduction="sum").item()
        pred = output.max(1, keepdim=True)[1]
        correct = pred.eq(target.view_as(pred)).sum().item()
        transformed = model.stn(data[:2]).cpu()
    angle = 0.3
    theta = T.tensor([[[math.cos(angle), -math.sin(angle), 0.1], [math.sin(angle), math.cos(angle), -0.2]]],
                     requires_grad=True)
    image = T.from_numpy(uniform((1, 2, 7, 9), 113)).requires_grad_()
    results = {"losses": losses, "test_loss": test_loss, "correct": correct, "transformed": transformed,
               "loc_grad": model.fc_loc[2].weight.grad}
    for align in (False, True):
        for mode, padding in (("bilinear", "zeros"), ("nearest", "border"), ("bilinear", "reflection")):
            grid = F.affine_grid(theta, [1, 2, 5, 6], align_corners=align)
            sampled = F.grid_sample(image, grid, mode=mode, padding_mode=padding, align_corners=align)
            (sampled * T.arange(60.0).view(1, 2, 5, 6)).sum().backward()
            results[f"{mode}-{padding}-{align}"] = [sampled, theta.grad.clone(), image.grad.clone()]
            theta.grad, image.grad = None, None
    return results


def test_spatial_transformer():
    run_both(spatial_transformer)


def dcgan_tutorial_init(T):
    """The DCGAN tutorial's weights_init applied with netG.apply: it finds 'Conv' and 'BatchNorm' in
    m.__class__.__name__ and calls nn.init.normal_/constant_ on .data; the draws are random, so what must
    agree is which modules it touched and the statistics it left; then a Generator forward on fixed
    weights with torch.full labels and BCELoss."""
    nn = T.nn
    nz, ngf, nc = 8, 4, 3
    T.manual_seed(999)
    touched = []

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            nn.init.normal_(m.weight.data, 0.0, 0.02)
            touched.append(classname)
        elif classname.find("BatchNorm") != -1:
            nn.init.normal_(m.weight.data, 1.0, 0.02)
            nn.init.constant_(m.bias.data, 0)
            touched.append(classname)

    class Generator(nn.Module):
        def __init__(self, ngpu):
            super().__init__()
            self.ngpu = ngpu
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, nc, 4, 2, 1, bias=False), nn.Tanh())

        def forward(self, input):
            return self.main(input)

    netG = Generator(0)
    netG.apply(weights_init)
    stats = [abs(netG.main[0].weight.std().item() - 0.02) < 0.004, netG.main[1].bias.abs().sum().item(),
             abs(netG.main[1].weight.mean().item() - 1.0) < 0.02]
    init_weights(T, netG, 120)
    fixed_noise = T.from_numpy(uniform((4, nz, 1, 1), 121))
    fake = netG(fixed_noise)
    label = T.full((4,), 1.0, dtype=T.float)
    errG = nn.BCELoss()(fake.mean((1, 2, 3)).sigmoid(), label)
    errG.backward()
    return {"touched": touched, "stats": stats, "fake": fake, "errG": errG, "grad": netG.main[0].weight.grad,
            "running_var": netG.main[4].running_var}


def test_dcgan_tutorial_init():
    run_both(dcgan_tutorial_init)


# -- autograd mechanics, hooks, higher-order derivatives ------------------------------------------------------------
def autograd_mechanics(T):
    """The autograd tutorials' and notes' small programs: a tensor hook doubling the gradient, a hook on a
    non-leaf with retain_grad, grads accumulating over two backward(retain_graph=True) calls, requires_grad_
    on a frozen backbone (finetuning), no_grad/enable_grad/set_grad_enabled nesting, detach sharing storage,
    y.backward(v) with a vector (the vector-Jacobian product of the blitz tutorial's doubling loop),
    torch.autograd.grad with create_graph for a second derivative, next_functions down to the leaf, and
    the module forward-pre, forward and full-backward hooks."""
    nn = T.nn
    out = {}
    x = T.from_numpy(uniform((3,), 130)).requires_grad_()
    y = x * 2
    while y.data.norm() < 100:
        y = y * 2
    v = T.tensor([0.1, 1.0, 0.0001], dtype=T.float)
    y.backward(v)
    out["vjp"] = [y, x.grad]

    a = T.tensor([2.0, 3.0], requires_grad=True)
    b = a * a
    b.retain_grad()
    seen = []
    h = b.register_hook(lambda grad: seen.append(grad.clone()) or grad * 2)
    c = (b * 3).sum()
    c.backward(retain_graph=True)
    first = a.grad.clone()
    h.remove()
    c.backward()
    out["hooks"] = [first, a.grad, b.grad, seen]
    out["flags"] = [b.is_leaf, a.is_leaf, b.requires_grad, b.grad_fn is not None]

    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    init_weights(T, model, 131)
    for param in model[0].parameters():
        param.requires_grad_(False)
    model[2] = nn.Linear(3, 2)
    init_weights(T, model[2], 132)
    optimizer = T.optim.SGD(model[2].parameters(), lr=1e-2, momentum=0.9)
    inp = T.from_numpy(uniform((5, 4), 133))
    loss = model(inp).pow(2).mean()
    loss.backward()
    optimizer.step()
    out["finetune"] = [model[0].weight.grad is None, model[2].weight.grad, model[2].bias,
                       [n for n, p in model.named_parameters() if p.requires_grad]]

    x = T.ones(2, requires_grad=True)
    with T.no_grad():
        y1 = x * 2
        with T.enable_grad():
            y2 = x * 2
    with T.set_grad_enabled(False):
        y3 = x * 2
    T.set_grad_enabled(True)
    y4 = x * 2
    d = y4.detach()
    d.zero_()
    out["modes"] = [y1.requires_grad, y2.requires_grad, y3.requires_grad, y4.requires_grad, y4,
                    T.is_grad_enabled()]

    x = T.tensor([0.5, 1.5, -2.0], requires_grad=True)
    y = x ** 3 + x.sin()
    (g,) = T.autograd.grad(y.sum(), x, create_graph=True)
    (g2,) = T.autograd.grad(g.sum(), x)
    out["second"] = [g, g2]
    e = x.exp()
    out["graph"] = [type(e.grad_fn).__name__, e.grad_fn.next_functions[0][0].variable is x]

    lin = nn.Linear(3, 2)
    init_weights(T, lin, 134)
    record = []
    lin.register_forward_pre_hook(lambda m, args: record.append(("pre", args[0].shape[0])))
    lin.register_forward_hook(lambda m, args, output: record.append(("fwd", output.sum().item())))
    lin.register_full_backward_hook(lambda m, gin, gout: record.append(("bwd", gin[0], gout[0])))
    inp = T.from_numpy(uniform((4, 3), 135)).requires_grad_()
    lin(inp).pow(2).sum().backward()
    out["module_hooks"] = [[r[0] for r in record], record[1][1], record[2][1], record[2][2]]
    return out


def test_autograd_mechanics():
    run_both(autograd_mechanics)


def jacobians_hessians(T):
    """The Jacobians, Hessians, hvp, vhp tutorial (torch.func) and torch.autograd.functional: jacrev and
    jacfwd of predict(weight, bias, x) in argnums 2 and (0, 1), vmap over a batch, hessian, hvp built as
    jvp of grad, vjp; the autograd.functional jacobian/hessian/vjp/jvp/hvp twins; forward-mode AD with
    dual_level/make_dual/unpack_dual."""
    F, func, AF = T.nn.functional, T.func, T.autograd.functional
    D = 5
    weight = T.from_numpy(uniform((D, D), 140))
    bias = T.from_numpy(uniform((D,), 141))
    x = T.from_numpy(uniform((D,), 142))

    def predict(weight, bias, x):
        return F.linear(x, weight, bias).tanh()

    out = {"jacrev": func.jacrev(predict, argnums=2)(weight, bias, x),
           "jacfwd": func.jacfwd(predict, argnums=2)(weight, bias, x),
           "jac_wb": list(func.jacrev(predict, argnums=(0, 1))(weight, bias, x))}
    xs = T.from_numpy(uniform((3, D), 143))
    out["batched"] = func.vmap(func.jacrev(predict, argnums=2), in_dims=(None, None, 0))(weight, bias, xs)
    out["batched_fwd"] = func.jacfwd(predict, argnums=2)(weight, bias, xs).sum(2)

    def f(x):
        return x.sin().sum()

    out["hessian"] = func.hessian(f)(x)
    out["hvp"] = func.jvp(func.grad(f), (x,), (T.ones_like(x),))[1]
    _, vjp_fn = func.vjp(lambda x: predict(weight, bias, x), x)
    out["vjp"] = vjp_fn(T.ones(D))[0]
    out["af_jacobian"] = AF.jacobian(lambda x: predict(weight, bias, x), x)
    out["af_hessian"] = AF.hessian(f, x)
    out["af_vjp"] = list(AF.vjp(lambda x: predict(weight, bias, x), x, T.ones(D)))
    out["af_jvp"] = list(AF.jvp(lambda x: predict(weight, bias, x), x, T.ones(D)))
    out["af_hvp"] = list(AF.hvp(f, x, T.ones(D)))
    import torch.autograd.forward_ad as _real_fwad  # noqa: F401 (the tutorial imports it by this name)
    fwAD = T.autograd.forward_ad
    primal, tangent = T.from_numpy(uniform((D,), 144)), T.from_numpy(uniform((D,), 145))
    with fwAD.dual_level():
        dual_input = fwAD.make_dual(primal, tangent)
        dual_output = predict(weight, bias, dual_input)
        jvp = fwAD.unpack_dual(dual_output).tangent
    out["forward_ad"] = jvp
    return out


def test_jacobians_hessians():
    run_both(jacobians_hessians)
