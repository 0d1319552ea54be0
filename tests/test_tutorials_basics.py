"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): Learn the Basics (quickstart, building a model, autograd),
What is torch.nn really, Learning PyTorch with Examples."""
import math
import random

import numpy as np

from test_examples_programs import init_weights, picklable, run_both
from tutorial_data import labels, uniform


# -- Learn the Basics: quickstart ------------------------------------------------------------------------
def quickstart(T, tmp_path):
    """A Dataset of (image, label) pairs, DataLoader batches, nn.Flatten + nn.Sequential, CrossEntropyLoss,
    SGD, the train()/test() loops as written, state_dict save/load and whole-model save/load."""
    nn = T.nn
    from_numpy = T.from_numpy
    images, targets = uniform((24, 1, 28, 28), 1, 0, 1), labels(24, 10, 2)

    class FakeFashion(T.utils.data.Dataset):
        def __init__(self, transform=None, target_transform=None):
            self.transform, self.target_transform = transform, target_transform

        def __len__(self):
            return len(targets)

        def __getitem__(self, idx):
            image, label = from_numpy(images[idx]), int(targets[idx])
            if self.transform:
                image = self.transform(image)
            if self.target_transform:
                label = self.target_transform(label)
            return image, label

    class NeuralNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.flatten = nn.Flatten()
            self.linear_relu_stack = nn.Sequential(
                nn.Linear(28 * 28, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            x = self.flatten(x)
            logits = self.linear_relu_stack(x)
            return logits

    device = T.accelerator.current_accelerator().type if T.accelerator.is_available() else "cpu"
    model = picklable(NeuralNetwork, T)().to(device)
    init_weights(T, model)
    one_hot = FakeFashion(target_transform=lambda y: T.zeros(10, dtype=T.float).scatter_(0, T.tensor(y), value=1))
    assert one_hot[3][1].tolist() == np.eye(10)[targets[3]].tolist()
    train_dataloader = T.utils.data.DataLoader(FakeFashion(), batch_size=16)
    test_dataloader = T.utils.data.DataLoader(FakeFashion(), batch_size=16)
    X, y = next(iter(test_dataloader))
    shapes = [list(X.shape), list(y.shape), str(y.dtype).split(".")[1]]
    loss_fn = nn.CrossEntropyLoss()
    optimizer = T.optim.SGD(model.parameters(), lr=1e-1)
    losses = []

    def train(dataloader, model, loss_fn, optimizer):
        size = len(dataloader.dataset)
        model.train()
        for batch, (X, y) in enumerate(dataloader):
            X, y = X.to(device), y.to(device)
            pred = model(X)
            loss = loss_fn(pred, y)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            loss, current = loss.item(), (batch + 1) * len(X)
            losses.append(loss)
            assert current <= size

    def test(dataloader, model, loss_fn):
        size = len(dataloader.dataset)
        num_batches = len(dataloader)
        model.eval()
        test_loss, correct = 0, 0
        with T.no_grad():
            for X, y in dataloader:
                X, y = X.to(device), y.to(device)
                pred = model(X)
                test_loss += loss_fn(pred, y).item()
                correct += (pred.argmax(1) == y).type(T.float).sum().item()
        return test_loss / num_batches, correct / size

    results = []
    for t in range(2):
        train(train_dataloader, model, loss_fn, optimizer)
        results.append(test(test_dataloader, model, loss_fn))
    path = tmp_path / f"model_{T.__name__}.pth"
    T.save(model.state_dict(), path)
    model2 = picklable(NeuralNetwork, T)().to(device)
    model2.load_state_dict(T.load(path, weights_only=True))
    model2.eval()
    with T.no_grad():
        pred = model2(X[:2])
        predicted = pred[0].argmax(0)
    T.save(model, path)
    whole = T.load(path, weights_only=False)
    return {"losses": losses, "results": results, "shapes": shapes, "pred": pred, "predicted": predicted.item(),
            "whole": whole(X[:2]), "keys": list(model2.state_dict())}


def test_quickstart(tmp_path):
    run_both(quickstart, tmp_path=tmp_path)


def build_model_tour(T):
    """Build the Neural Network: nn.Softmax(dim=1) over logits, the layer-by-layer tour (Flatten, Linear,
    ReLU, Sequential) and named_parameters' names, sizes and first rows."""
    nn = T.nn
    input_image = T.from_numpy(uniform((3, 28, 28), 3, 0, 1))
    flatten = nn.Flatten()
    flat_image = flatten(input_image)
    layer1 = nn.Linear(in_features=28 * 28, out_features=20)
    init_weights(T, layer1, 4)
    hidden1 = nn.ReLU()(layer1(flat_image))
    seq_modules = nn.Sequential(flatten, layer1, nn.ReLU(), nn.Linear(20, 10))
    init_weights(T, seq_modules, 5)
    logits = seq_modules(input_image)
    pred_probab = nn.Softmax(dim=1)(logits)
    y_pred = pred_probab.argmax(1)
    params = [(name, list(param.size()), param[:2]) for name, param in seq_modules.named_parameters()]
    return {"flat": list(flat_image.size()), "hidden1": hidden1, "probab": pred_probab, "y_pred": y_pred,
            "params": params, "repr": repr(seq_modules)}


def test_build_model_tour():
    run_both(build_model_tour)


def autograd_basics(T):
    """Automatic differentiation with torch.autograd: BCE-with-logits on x @ w + b, grad_fn names,
    requires_grad under no_grad and detach, and the Jacobian product of (inp + 1).pow(2).t() with
    grad accumulation and zero_."""
    x = T.ones(5)
    y = T.zeros(3)
    w = T.from_numpy(uniform((5, 3), 6)).requires_grad_()
    b = T.tensor(uniform((3,), 7), requires_grad=True)
    z = T.matmul(x, w) + b
    loss = T.nn.functional.binary_cross_entropy_with_logits(z, y)
    names = [type(z.grad_fn).__name__, type(loss.grad_fn).__name__]
    loss.backward()
    with T.no_grad():
        z2 = T.matmul(x, w) + b
    z_det = (T.matmul(x, w) + b).detach()
    inp = T.eye(4, 5, requires_grad=True)
    out = (inp + 1).pow(2).t()
    out.backward(T.ones_like(out), retain_graph=True)
    first = inp.grad.clone()
    out.backward(T.ones_like(out), retain_graph=True)
    second = inp.grad.clone()
    inp.grad.zero_()
    out.backward(T.ones_like(out), retain_graph=True)
    return {"w": w.grad, "b": b.grad, "loss": loss, "names": names, "flags": [z.requires_grad, z2.requires_grad,
            z_det.requires_grad], "first": first, "second": second, "third": inp.grad}


def test_autograd_basics():
    run_both(autograd_basics)


# -- What is torch.nn really? ------------------------------------------------------------------------------
def nn_really_from_scratch(T):
    """MNIST from scratch: hand-made weights with requires_grad_(), log_softmax as x - x.exp().sum(-1).log()
    .unsqueeze(-1), nll by fancy indexing input[range(n), target], accuracy, the manual update under
    no_grad with grad.zero_(); then F.cross_entropy in their place."""
    F = T.nn.functional
    x_train = T.from_numpy(uniform((64, 784), 10, 0, 1))
    y_train = T.from_numpy(labels(64, 10, 11))
    n, c = x_train.shape
    weights = T.from_numpy(uniform((784, 10), 12)) / math.sqrt(784)
    weights.requires_grad_()
    bias = T.zeros(10, requires_grad=True)

    def log_softmax(x):
        return x - x.exp().sum(-1).log().unsqueeze(-1)

    def model(xb):
        return log_softmax(xb @ weights + bias)

    def nll(input, target):
        return -input[range(target.shape[0]), target].mean()

    def accuracy(out, yb):
        preds = T.argmax(out, dim=1)
        return (preds == yb).float().mean()

    bs, lr, epochs = 16, 0.5, 2
    loss_func = nll
    preds = model(x_train[0:bs])
    first = [preds[0], preds.shape, loss_func(preds, y_train[0:bs]), accuracy(preds, y_train[0:bs])]
    for epoch in range(epochs):
        for i in range((n - 1) // bs + 1):
            start_i = i * bs
            end_i = start_i + bs
            xb = x_train[start_i:end_i]
            yb = y_train[start_i:end_i]
            pred = model(xb)
            loss = loss_func(pred, yb)
            loss.backward()
            with T.no_grad():
                weights -= weights.grad * lr
                bias -= bias.grad * lr
                weights.grad.zero_()
                bias.grad.zero_()
    after = [loss_func(model(x_train), y_train), accuracy(model(x_train), y_train)]
    loss_func = F.cross_entropy

    def model2(xb):
        return xb @ weights + bias

    return {"first": first, "after": after, "ce": loss_func(model2(x_train), y_train), "weights": weights,
            "bias": bias}


def test_nn_really_from_scratch():
    run_both(nn_really_from_scratch)


def nn_really_refactored(T):
    """The refactoring steps: an nn.Module holding nn.Parameters updated by `p -= p.grad * lr` and
    model.zero_grad(); nn.Linear with optim.SGD; TensorDataset/DataLoader with get_data, loss_batch and fit
    (np.sum(np.multiply(losses, nums)) / np.sum(nums)); the CNN as nn.Sequential with a Lambda module and
    nn.AdaptiveAvgPool2d; a WrappedDataLoader and momentum SGD."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    TensorDataset, DataLoader = T.utils.data.TensorDataset, T.utils.data.DataLoader
    x_train, y_train = T.from_numpy(uniform((48, 784), 20, 0, 1)), T.from_numpy(labels(48, 10, 21))
    x_valid, y_valid = T.from_numpy(uniform((32, 784), 22, 0, 1)), T.from_numpy(labels(32, 10, 23))
    bs, lr, loss_func = 16, 0.1, F.cross_entropy
    out = {}

    class Mnist_Logistic(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.Parameter(T.from_numpy(uniform((784, 10), 24)) / math.sqrt(784))
            self.bias = nn.Parameter(T.zeros(10))

        def forward(self, xb):
            return xb @ self.weights + self.bias

    model = Mnist_Logistic()
    for i in range((48 - 1) // bs + 1):
        xb, yb = x_train[i * bs:i * bs + bs], y_train[i * bs:i * bs + bs]
        loss = loss_func(model(xb), yb)
        loss.backward()
        with T.no_grad():
            for p in model.parameters():
                p -= p.grad * lr
            model.zero_grad()
    out["logistic"] = [loss_func(model(x_train), y_train), model.bias, model.weights.grad is None]

    def get_data(train_ds, valid_ds, bs):
        return DataLoader(train_ds, batch_size=bs, shuffle=False), DataLoader(valid_ds, batch_size=bs * 2)

    def loss_batch(model, loss_func, xb, yb, opt=None):
        loss = loss_func(model(xb), yb)
        if opt is not None:
            loss.backward()
            opt.step()
            opt.zero_grad()
        return loss.item(), len(xb)

    def fit(epochs, model, loss_func, opt, train_dl, valid_dl):
        history = []
        for epoch in range(epochs):
            model.train()
            for xb, yb in train_dl:
                loss_batch(model, loss_func, xb, yb, opt)
            model.eval()
            with T.no_grad():
                losses, nums = zip(*[loss_batch(model, loss_func, xb, yb) for xb, yb in valid_dl])
            history.append(np.sum(np.multiply(losses, nums)) / np.sum(nums))
        return history

    train_ds, valid_ds = TensorDataset(x_train, y_train), TensorDataset(x_valid, y_valid)
    train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
    assert len(train_ds[0]) == 2 and train_ds[3][1].item() == y_train[3].item()

    class Mnist_Linear(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(784, 10)

        def forward(self, xb):
            return self.lin(xb)

    model = Mnist_Linear()
    init_weights(T, model, 25)
    out["linear"] = fit(1, model, loss_func, optim.SGD(model.parameters(), lr=lr), train_dl, valid_dl)

    class Lambda(nn.Module):
        def __init__(self, func):
            super().__init__()
            self.func = func

        def forward(self, x):
            return self.func(x)

    def preprocess(x, y):
        return x.view(-1, 1, 28, 28), y

    class WrappedDataLoader:
        def __init__(self, dl, func):
            self.dl = dl
            self.func = func

        def __len__(self):
            return len(self.dl)

        def __iter__(self):
            for b in self.dl:
                yield self.func(*b)

    train_dl, valid_dl = get_data(train_ds, valid_ds, bs)
    train_dl, valid_dl = WrappedDataLoader(train_dl, preprocess), WrappedDataLoader(valid_dl, preprocess)
    model = nn.Sequential(
        nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), Lambda(lambda x: x.view(x.size(0), -1)))
    init_weights(T, model, 27)
    opt = optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    out["sequential"] = fit(1, model, loss_func, opt, train_dl, valid_dl)
    out["momentum"] = opt.state_dict()["state"][0]["momentum_buffer"]
    return out


def test_nn_really_refactored():
    run_both(nn_really_refactored)


# -- Learning PyTorch with Examples ------------------------------------------------------------------------
def polynomial_fits(T):
    """y = sin(x) fitted by a + b x + c x^2 + d x^3: with tensors and hand-written gradients, with autograd
    and a manual update, with a custom autograd.Function (LegendrePolynomial3), with nn.Sequential +
    nn.Flatten(0, 1) and MSELoss(reduction='sum'), with optim.RMSprop, and as an nn.Module."""
    dtype, device = T.float, T.device("cpu")
    x = T.linspace(-math.pi, math.pi, 200, device=device, dtype=dtype)
    y = T.sin(x)
    start = [float(v) for v in uniform((4,), 30, -0.5, 0.5)]
    out = {}
    a, b, c, d = (T.tensor(v, device=device, dtype=dtype) for v in start)
    learning_rate = 1e-5
    for t in range(25):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum().item()
        grad_y_pred = 2.0 * (y_pred - y)
        grad_a = grad_y_pred.sum()
        grad_b = (grad_y_pred * x).sum()
        grad_c = (grad_y_pred * x ** 2).sum()
        grad_d = (grad_y_pred * x ** 3).sum()
        a -= learning_rate * grad_a
        b -= learning_rate * grad_b
        c -= learning_rate * grad_c
        d -= learning_rate * grad_d
    out["tensors"] = [loss, a.item(), b.item(), c.item(), d.item()]

    a, b, c, d = (T.tensor(v, device=device, dtype=dtype, requires_grad=True) for v in start)
    for t in range(25):
        y_pred = a + b * x + c * x ** 2 + d * x ** 3
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with T.no_grad():
            a -= learning_rate * a.grad
            b -= learning_rate * b.grad
            c -= learning_rate * c.grad
            d -= learning_rate * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    out["autograd"] = [loss.item(), a, b, c, d]

    class LegendrePolynomial3(T.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            ctx.save_for_backward(input)
            return 0.5 * (5 * input ** 3 - 3 * input)

        @staticmethod
        def backward(ctx, grad_output):
            input, = ctx.saved_tensors
            return grad_output * 1.5 * (5 * input ** 2 - 1)

    a, b, c, d = (T.full((), v, device=device, dtype=dtype, requires_grad=True) for v in (0.0, -1.0, 0.0, 0.3))
    for t in range(25):
        P3 = LegendrePolynomial3.apply
        y_pred = a + b * P3(c + d * x)
        loss = (y_pred - y).pow(2).sum()
        loss.backward()
        with T.no_grad():
            a -= 5e-6 * a.grad
            b -= 5e-6 * b.grad
            c -= 5e-6 * c.grad
            d -= 5e-6 * d.grad
            a.grad = None
            b.grad = None
            c.grad = None
            d.grad = None
    out["function"] = [loss.item(), a, b, c, d, type(y_pred.grad_fn).__name__]

    p = T.tensor([1, 2, 3])
    xx = x.unsqueeze(-1).pow(p)
    model = T.nn.Sequential(T.nn.Linear(3, 1), T.nn.Flatten(0, 1))
    init_weights(T, model, 31)
    loss_fn = T.nn.MSELoss(reduction="sum")
    for t in range(25):
        y_pred = model(xx)
        loss = loss_fn(y_pred, y)
        model.zero_grad()
        loss.backward()
        with T.no_grad():
            for param in model.parameters():
                param -= learning_rate * param.grad
    linear_layer = model[0]
    out["nn"] = [loss.item(), linear_layer.bias.item(), linear_layer.weight[:, 0].item(),
                 linear_layer.weight[:, 1].item(), linear_layer.weight[:, 2].item(), xx.dtype == T.float32]

    model = T.nn.Sequential(T.nn.Linear(3, 1), T.nn.Flatten(0, 1))
    init_weights(T, model, 31)
    optimizer = T.optim.RMSprop(model.parameters(), lr=1e-3)
    for t in range(25):
        loss = loss_fn(model(xx), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    out["optim"] = [loss.item(), model[0].weight, model[0].bias]

    class Polynomial3(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c, self.d = (T.nn.Parameter(T.tensor(v)) for v in start)

        def forward(self, x):
            return self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3

        def string(self):
            return (f"y = {self.a.item():.4f} + {self.b.item():.4f} x + {self.c.item():.4f} x^2 + "
                    f"{self.d.item():.4f} x^3")

    model = Polynomial3()
    criterion = T.nn.MSELoss(reduction="sum")
    optimizer = T.optim.SGD(model.parameters(), lr=1e-6)
    for t in range(25):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    out["module"] = [loss.item(), model.string()]
    return out


def test_polynomial_fits():
    run_both(polynomial_fits)


def dynamic_net(T):
    """DynamicNet: a module whose forward reuses one Parameter a random number (Python's random) of times;
    SGD with momentum."""
    class DynamicNet(T.nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.c, self.d, self.e = (T.nn.Parameter(T.tensor(v))
                                                      for v in uniform((5,), 40, -0.3, 0.3).tolist())

        def forward(self, x):
            y = self.a + self.b * x + self.c * x ** 2 + self.d * x ** 3
            for exp in range(4, random.randint(4, 6)):
                y = y + self.e * x ** exp
            return y

    random.seed(0)
    x = T.linspace(-math.pi, math.pi, 100)
    y = T.sin(x)
    model = DynamicNet()
    criterion = T.nn.MSELoss(reduction="sum")
    optimizer = T.optim.SGD(model.parameters(), lr=1e-8, momentum=0.9)
    losses = []
    for t in range(30):
        loss = criterion(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return {"losses": losses, "e": model.e}


def test_dynamic_net():
    run_both(dynamic_net)
