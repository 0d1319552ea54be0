"""Programs shaped like the official PyTorch tutorials (pytorch.org/tutorials: Learn the Basics, What is
torch.nn really, Learning PyTorch with Examples, the NLP-from-scratch char-RNNs and seq2seq, the spatial
transformer, word embeddings, the LSTM tagger and Bi-LSTM CRF, autograd mechanics, the Jacobian/Hessian
recipes, save/load recipes, performance-tuning recipes), written with the same torch calls made the same
way on synthetic data. Each runs once on real torch and once on `tidal.compat`, from NumPy-made weights
and data (torch's and tidal's random streams differ), and every loss, output and gradient must agree."""
import io
import math
import random

import numpy as np
import pytest
import torch as real_torch

import tidal
import tidal.compat as tidal_torch
from test_examples_programs import init_weights, picklable, run_both


def uniform(shape, seed: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """float32 data both frameworks share."""
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def labels(n: int, classes: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, classes, n)


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


# -- NLP from scratch --------------------------------------------------------------------------------------
ALL_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;'"
NAMES = {"Italian": ["Abandonato", "Rossi", "Bianchi"], "Scottish": ["Smith", "Brown", "MacDonald"],
         "Japanese": ["Abe", "Sato", "Suzuki"]}


def char_rnn_classification(T):
    """Classifying names with a character-level RNN: unicodeToAscii, one-hot letterToTensor/lineToTensor,
    the hand-made RNN (i2h over torch.cat((input, hidden), 1), LogSoftmax), NLLLoss, the manual
    p.data.add_(p.grad.data, alpha=-lr) update, categoryFromOutput by topk; then the newer version's
    nn.RNN reading hidden[0], clip_grad_norm_ and optim.SGD, and evaluate() under no_grad."""
    import unicodedata
    nn = T.nn
    n_letters, all_categories = len(ALL_LETTERS), list(NAMES)

    def unicodeToAscii(s):
        return "".join(c for c in unicodedata.normalize("NFD", s)
                       if unicodedata.category(c) != "Mn" and c in ALL_LETTERS)

    def letterToTensor(letter):
        tensor = T.zeros(1, n_letters)
        tensor[0][ALL_LETTERS.find(letter)] = 1
        return tensor

    def lineToTensor(line):
        tensor = T.zeros(len(line), 1, n_letters)
        for li, letter in enumerate(line):
            tensor[li][0][ALL_LETTERS.find(letter)] = 1
        return tensor

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, input, hidden):
            combined = T.cat((input, hidden), 1)
            hidden = T.tanh(self.i2h(combined))
            output = self.h2o(hidden)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return T.zeros(1, self.hidden_size)

    def categoryFromOutput(output):
        top_n, top_i = output.topk(1)
        category_i = top_i[0].item()
        return all_categories[category_i], category_i

    rnn = RNN(n_letters, 16, len(all_categories))
    init_weights(T, rnn, 50)
    criterion = nn.NLLLoss()
    out = {"ascii": unicodeToAscii("Ślusàrski"), "letter": letterToTensor("J").nonzero(),
           "line": lineToTensor("Jones").size()}
    losses = []
    for epoch in range(2):
        for category in all_categories:
            for line in NAMES[category]:
                category_tensor = T.tensor([all_categories.index(category)], dtype=T.long)
                line_tensor = lineToTensor(line)
                hidden = rnn.initHidden()
                rnn.zero_grad()
                for i in range(line_tensor.size()[0]):
                    output, hidden = rnn(line_tensor[i], hidden)
                loss = criterion(output, category_tensor)
                loss.backward()
                for p in rnn.parameters():
                    p.data.add_(p.grad.data, alpha=-0.05)
                losses.append(loss.item())
    out["losses"] = losses
    out["guess"] = categoryFromOutput(output)[1]

    class CharRNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.rnn = nn.RNN(input_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, line_tensor):
            rnn_out, hidden = self.rnn(line_tensor)
            output = self.h2o(hidden[0])
            output = self.softmax(output)
            return output

    rnn = CharRNN(n_letters, 16, len(all_categories))
    init_weights(T, rnn, 51)
    rnn.train()
    optimizer = T.optim.SGD(rnn.parameters(), lr=0.15)
    batch_losses = []
    for epoch in range(2):
        rnn.zero_grad()
        batch_loss = 0
        for category in all_categories:
            for line in NAMES[category]:
                output = rnn(lineToTensor(line))
                batch_loss += criterion(output, T.tensor([all_categories.index(category)], dtype=T.long))
        batch_loss.backward()
        nn.utils.clip_grad_norm_(rnn.parameters(), 3)
        optimizer.step()
        optimizer.zero_grad()
        batch_losses.append(batch_loss.item() / 9)
    confusion = T.zeros(len(all_categories), len(all_categories))
    rnn.eval()
    with T.no_grad():
        for category in all_categories:
            for line in NAMES[category]:
                guess_i = categoryFromOutput(rnn(lineToTensor(line)))[1]
                confusion[all_categories.index(category)][guess_i] += 1
    for i in range(len(all_categories)):
        denom = confusion[i].sum()
        if denom > 0:
            confusion[i] = confusion[i] / denom
    out["batch_losses"], out["confusion"] = batch_losses, confusion
    return out


def test_char_rnn_classification():
    run_both(char_rnn_classification)


def char_rnn_generation(T):
    """Generating names with a character-level RNN: category + input + hidden concatenated into i2h/i2o,
    o2o over their concatenation, Dropout(0.1) (off in eval mode here), a summed per-letter NLLLoss with
    target_line_tensor.unsqueeze_(-1), torch.LongTensor targets, and sample() by topk."""
    nn = T.nn
    n_letters, all_categories = len(ALL_LETTERS) + 1, list(NAMES)
    n_categories = len(all_categories)

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
            self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
            self.o2o = nn.Linear(hidden_size + output_size, output_size)
            self.dropout = nn.Dropout(0.1)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, category, input, hidden):
            input_combined = T.cat((category, input, hidden), 1)
            hidden = self.i2h(input_combined)
            output = self.i2o(input_combined)
            output_combined = T.cat((hidden, output), 1)
            output = self.o2o(output_combined)
            output = self.dropout(output)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return T.zeros(1, self.hidden_size)

    def categoryTensor(category):
        tensor = T.zeros(1, n_categories)
        tensor[0][all_categories.index(category)] = 1
        return tensor

    def inputTensor(line):
        tensor = T.zeros(len(line), 1, n_letters)
        for li in range(len(line)):
            tensor[li][0][ALL_LETTERS.find(line[li])] = 1
        return tensor

    def targetTensor(line):
        letter_indexes = [ALL_LETTERS.find(line[li]) for li in range(1, len(line))]
        letter_indexes.append(n_letters - 1)  # EOS
        return T.LongTensor(letter_indexes)

    rnn = RNN(n_letters, 24, n_letters)
    init_weights(T, rnn, 60)
    rnn.eval()  # the dropout draw differs between frameworks
    criterion = nn.NLLLoss()
    learning_rate = 0.0005
    losses = []
    for category in all_categories:
        for line in NAMES[category][:2]:
            category_tensor, input_line_tensor = categoryTensor(category), inputTensor(line)
            target_line_tensor = targetTensor(line)
            target_line_tensor.unsqueeze_(-1)
            hidden = rnn.initHidden()
            rnn.zero_grad()
            loss = T.Tensor([0])
            for i in range(input_line_tensor.size(0)):
                output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
                l = criterion(output, target_line_tensor[i])
                loss += l
            loss.backward()
            for p in rnn.parameters():
                p.data.add_(p.grad.data, alpha=-learning_rate)
            losses.append(loss.item() / input_line_tensor.size(0))

    def sample(category, start_letter="A", max_length=8):
        with T.no_grad():
            category_tensor = categoryTensor(category)
            input = inputTensor(start_letter)
            hidden = rnn.initHidden()
            output_name = start_letter
            for i in range(max_length):
                output, hidden = rnn(category_tensor, input[0], hidden)
                topv, topi = output.topk(1)
                topi = topi[0][0]
                if topi == n_letters - 1:
                    break
                else:
                    letter = ALL_LETTERS[topi]
                    output_name += letter
                input = inputTensor(letter)
            return output_name

    return {"losses": losses, "samples": [sample(c, s) for c in all_categories for s in "ABS"],
            "target": targetTensor("Abe")}


def test_char_rnn_generation():
    run_both(char_rnn_generation)


def seq2seq_translation(T):
    """Translation with a sequence to sequence network and attention: Embedding + GRU(batch_first) encoder,
    a decoder unrolled with teacher forcing (torch.empty(...).fill_(SOS_token), topk, squeeze(-1).detach(),
    torch.cat(decoder_outputs, dim=1), log_softmax), BahdanauAttention (Va(tanh(Wa(q) + Ua(k))),
    squeeze(2).unsqueeze(1), softmax, bmm), TensorDataset/RandomSampler/DataLoader batches, Adam and
    NLLLoss over view(-1, size)."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    SOS_token, EOS_token, MAX_LENGTH, device = 0, 1, 6, T.device("cpu")

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(T.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = T.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = T.empty(batch_size, 1, dtype=T.long, device=device).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs, attentions = [], []
            for i in range(MAX_LENGTH):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs)
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)  # teacher forcing
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()
            decoder_outputs = T.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = T.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = T.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    rng = np.random.default_rng(70)
    n_pairs, in_words, out_words, hidden_size = 6, 12, 10, 16
    input_ids = np.zeros((n_pairs, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n_pairs, MAX_LENGTH), dtype=np.int32)
    for idx in range(n_pairs):
        n = int(rng.integers(2, MAX_LENGTH))
        input_ids[idx, :n - 1], input_ids[idx, n - 1] = rng.integers(2, in_words, n - 1), EOS_token
        target_ids[idx, :n - 1], target_ids[idx, n - 1] = rng.integers(2, out_words, n - 1), EOS_token
    train_data = T.utils.data.TensorDataset(T.LongTensor(input_ids).to(device), T.LongTensor(target_ids).to(device))
    train_sampler = T.utils.data.SequentialSampler(train_data)
    train_dataloader = T.utils.data.DataLoader(train_data, sampler=train_sampler, batch_size=3)
    assert isinstance(T.utils.data.RandomSampler(train_data), T.utils.data.Sampler)
    encoder, decoder = EncoderRNN(in_words, hidden_size).to(device), AttnDecoderRNN(hidden_size, out_words).to(device)
    init_weights(T, encoder, 71)
    init_weights(T, decoder, 72)
    encoder.eval(), decoder.eval()  # dropout off: its draw differs between frameworks
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.001)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.001)
    criterion = nn.NLLLoss()
    losses = []
    for epoch in range(1):
        total_loss = 0
        for data in train_dataloader:
            input_tensor, target_tensor = data
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
            loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            total_loss += loss.item()
        losses.append(total_loss / len(train_dataloader))
    with T.no_grad():
        encoder_outputs, encoder_hidden = encoder(T.LongTensor(input_ids[:2]))
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()
    return {"losses": losses, "decoded": decoded_ids, "attn": decoder_attn, "hidden": decoder_hidden}


def test_seq2seq_translation():
    run_both(seq2seq_translation)


def seq2seq_classic_attention(T):
    """The earlier seq2seq tutorial's one-sentence-at-a-time loop: encoder_outputs = torch.zeros(max_length,
    hidden) filled row by row, AttnDecoderRNN with attn = Linear(2h, max_length) over torch.cat((embedded[0],
    hidden[0]), 1), bmm of attn_weights.unsqueeze(0) by encoder_outputs.unsqueeze(0), attn_combine, teacher
    forcing chosen by random.random(), the loss summed per step and divided by target_length."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    SOS_token, EOS_token, max_length, hidden_size = 0, 1, 6, 12

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size)

        def forward(self, input, hidden):
            embedded = self.embedding(input).view(1, 1, -1)
            output = embedded
            output, hidden = self.gru(output, hidden)
            return output, hidden

        def initHidden(self):
            return T.zeros(1, 1, self.hidden_size)

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=max_length):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attn = nn.Linear(hidden_size * 2, max_length)
            self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)
            self.dropout = nn.Dropout(dropout_p)
            self.gru = nn.GRU(hidden_size, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)

        def forward(self, input, hidden, encoder_outputs):
            embedded = self.embedding(input).view(1, 1, -1)
            embedded = self.dropout(embedded)
            attn_weights = F.softmax(self.attn(T.cat((embedded[0], hidden[0]), 1)), dim=1)
            attn_applied = T.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
            output = T.cat((embedded[0], attn_applied[0]), 1)
            output = self.attn_combine(output).unsqueeze(0)
            output = F.relu(output)
            output, hidden = self.gru(output, hidden)
            output = F.log_softmax(self.out(output[0]), dim=1)
            return output, hidden, attn_weights

    def train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
        encoder_hidden = encoder.initHidden()
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        input_length, target_length = input_tensor.size(0), target_tensor.size(0)
        encoder_outputs = T.zeros(max_length, encoder.hidden_size)
        loss = 0
        for ei in range(input_length):
            encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] = encoder_output[0, 0]
        decoder_input = T.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        use_teacher_forcing = random.random() < 0.5
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(decoder_output, target_tensor[di])
            if use_teacher_forcing:
                decoder_input = target_tensor[di]
            else:
                topv, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze().detach()
                if decoder_input.item() == EOS_token:
                    break
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        return loss.item() / target_length

    encoder, decoder = EncoderRNN(9, hidden_size), AttnDecoderRNN(hidden_size, 8)
    init_weights(T, encoder, 73)
    init_weights(T, decoder, 74)
    decoder.eval()
    encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.01)
    decoder_optimizer = optim.SGD(decoder.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    rng = np.random.default_rng(75)
    random.seed(1)
    losses = []
    for it in range(4):
        src = [int(v) for v in rng.integers(2, 9, 4)] + [EOS_token]
        tgt = [int(v) for v in rng.integers(2, 8, 3)] + [EOS_token]
        input_tensor = T.tensor(src, dtype=T.long).view(-1, 1)
        target_tensor = T.tensor(tgt, dtype=T.long).view(-1, 1)
        losses.append(train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer,
                            criterion))
    return {"losses": losses, "attn": decoder.attn.weight}


def test_seq2seq_classic_attention():
    run_both(seq2seq_classic_attention)


# -- Deep Learning for NLP with PyTorch ----------------------------------------------------------------------
TEST_SENTENCE = """When forty winters shall besiege thy brow, And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now, Will be a totter'd weed of small worth held""".split()


def word_embeddings(T):
    """N-gram language model: nn.Embedding looked up with torch.tensor([word_to_ix["hello"]], dtype=torch.long),
    embeds.view((1, -1)), relu, log_softmax, NLLLoss, SGD, total_loss += loss.item(); the embedding row of
    one word afterwards; then CBOW summing its context embeddings."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    CONTEXT_SIZE, EMBEDDING_DIM = 2, 6
    ngrams = [([TEST_SENTENCE[i - j - 1] for j in range(CONTEXT_SIZE)], TEST_SENTENCE[i])
              for i in range(CONTEXT_SIZE, len(TEST_SENTENCE))]
    vocab = sorted(set(TEST_SENTENCE))
    word_to_ix = {word: i for i, word in enumerate(vocab)}

    word_to_ix2 = {"hello": 0, "world": 1}
    embeds = nn.Embedding(2, 5)
    init_weights(T, embeds, 80)
    lookup_tensor = T.tensor([word_to_ix2["hello"]], dtype=T.long)
    hello_embed = embeds(lookup_tensor)

    class NGramLanguageModeler(nn.Module):
        def __init__(self, vocab_size, embedding_dim, context_size):
            super().__init__()
            self.embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.linear1 = nn.Linear(context_size * embedding_dim, 32)
            self.linear2 = nn.Linear(32, vocab_size)

        def forward(self, inputs):
            embeds = self.embeddings(inputs).view((1, -1))
            out = F.relu(self.linear1(embeds))
            out = self.linear2(out)
            log_probs = F.log_softmax(out, dim=1)
            return log_probs

    losses = []
    loss_function = nn.NLLLoss()
    model = NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
    init_weights(T, model, 81)
    optimizer = optim.SGD(model.parameters(), lr=0.001)
    for epoch in range(2):
        total_loss = 0
        for context, target in ngrams:
            context_idxs = T.tensor([word_to_ix[w] for w in context], dtype=T.long)
            model.zero_grad()
            log_probs = model(context_idxs)
            loss = loss_function(log_probs, T.tensor([word_to_ix[target]], dtype=T.long))
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        losses.append(total_loss)

    class CBOW(nn.Module):
        def __init__(self, vocab_size, embedding_dim):
            super().__init__()
            self.embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.linear = nn.Linear(embedding_dim, vocab_size)

        def forward(self, inputs):
            return F.log_softmax(self.linear(self.embeddings(inputs).sum(dim=0, keepdim=True)), dim=-1)

    def make_context_vector(context, word_to_ix):
        idxs = [word_to_ix[w] for w in context]
        return T.tensor(idxs, dtype=T.long)

    data = [([TEST_SENTENCE[i - 2], TEST_SENTENCE[i - 1], TEST_SENTENCE[i + 1], TEST_SENTENCE[i + 2]],
             TEST_SENTENCE[i]) for i in range(2, len(TEST_SENTENCE) - 2)]
    cbow = CBOW(len(vocab), EMBEDDING_DIM)
    init_weights(T, cbow, 82)
    optimizer = optim.SGD(cbow.parameters(), lr=0.01)
    cbow_loss = 0.0
    for context, target in data:
        optimizer.zero_grad()
        loss = loss_function(cbow(make_context_vector(context, word_to_ix)), T.tensor([word_to_ix[target]]))
        loss.backward()
        optimizer.step()
        cbow_loss += loss.item()
    return {"hello": hello_embed, "losses": losses, "beauty": model.embeddings.weight[word_to_ix["thy"]],
            "cbow": cbow_loss, "cbow_grad": cbow.embeddings.weight.grad}


def test_word_embeddings():
    run_both(word_embeddings)


def lstm_tagger(T):
    """Sequence models and LSTMs: stepping nn.LSTM one element at a time with a (h, c) tuple, then the whole
    sequence at once; the LSTMTagger (embeds.view(len(sentence), 1, -1), hidden2tag over
    lstm_out.view(len(sentence), -1), log_softmax), NLLLoss and SGD(lr=0.1), scores before/after under
    no_grad."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    lstm = nn.LSTM(3, 3)
    init_weights(T, lstm, 90)
    seq = uniform((5, 1, 3), 91)
    inputs = [T.from_numpy(seq[i]) for i in range(5)]
    hidden = (T.from_numpy(uniform((1, 1, 3), 92)), T.from_numpy(uniform((1, 1, 3), 93)))
    for i in inputs:
        out, hidden = lstm(i.view(1, 1, -1), hidden)
    step_out = [out, hidden[0], hidden[1]]
    inputs = T.cat(inputs).view(len(inputs), 1, -1)
    hidden = (T.from_numpy(uniform((1, 1, 3), 92)), T.from_numpy(uniform((1, 1, 3), 93)))
    out, hidden = lstm(inputs, hidden)

    def prepare_sequence(seq, to_ix):
        idxs = [to_ix[w] for w in seq]
        return T.tensor(idxs, dtype=T.long)

    training_data = [("The dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
                     ("Everybody read that book".split(), ["NN", "V", "DET", "NN"])]
    word_to_ix = {}
    for sent, tags in training_data:
        for word in sent:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"DET": 0, "NN": 1, "V": 2}

    class LSTMTagger(nn.Module):
        def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
            super().__init__()
            self.hidden_dim = hidden_dim
            self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim)
            self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

        def forward(self, sentence):
            embeds = self.word_embeddings(sentence)
            lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
            tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
            tag_scores = F.log_softmax(tag_space, dim=1)
            return tag_scores

    model = LSTMTagger(6, 6, len(word_to_ix), len(tag_to_ix))
    init_weights(T, model, 94)
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    with T.no_grad():
        before = model(prepare_sequence(training_data[0][0], word_to_ix))
    for epoch in range(4):
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = prepare_sequence(tags, tag_to_ix)
            tag_scores = model(sentence_in)
            loss = loss_function(tag_scores, targets)
            loss.backward()
            optimizer.step()
    with T.no_grad():
        after = model(prepare_sequence(training_data[0][0], word_to_ix))
    return {"step": step_out, "out": out, "hidden": list(hidden), "before": before, "after": after,
            "loss": loss.item()}


def test_lstm_tagger():
    run_both(lstm_tagger)


def bilstm_crf(T):
    """Advanced: Making Dynamic Decisions and the Bi-LSTM CRF: argmax via torch.max(vec, 1) and .item(),
    log_sum_exp with view(1, -1).expand, transitions as an nn.Parameter written through .data[...] = -10000,
    the forward algorithm over torch.full((1, n), -10000.) with alphas_t appended as view(1) tensors and
    torch.cat, _score_sentence indexing transitions[tags[i + 1], tags[i]], Viterbi decoding with
    backpointers, neg_log_likelihood trained with SGD(weight_decay=1e-4)."""
    nn, optim = T.nn, T.optim
    START_TAG, STOP_TAG, EMBEDDING_DIM, HIDDEN_DIM = "<START>", "<STOP>", 5, 4

    def argmax(vec):
        _, idx = T.max(vec, 1)
        return idx.item()

    def prepare_sequence(seq, to_ix):
        idxs = [to_ix[w] for w in seq]
        return T.tensor(idxs, dtype=T.long)

    def log_sum_exp(vec):
        max_score = vec[0, argmax(vec)]
        max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
        return max_score + T.log(T.sum(T.exp(vec - max_score_broadcast)))

    class BiLSTM_CRF(nn.Module):
        def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
            super().__init__()
            self.embedding_dim, self.hidden_dim = embedding_dim, hidden_dim
            self.vocab_size, self.tag_to_ix, self.tagset_size = vocab_size, tag_to_ix, len(tag_to_ix)
            self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
            self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
            self.transitions = nn.Parameter(T.randn(self.tagset_size, self.tagset_size))
            init_weights(T, self, 100)
            self.transitions.data[tag_to_ix[START_TAG], :] = -10000
            self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000
            self.hidden = self.init_hidden()

        def init_hidden(self):  # torch.randn in the tutorial: the same numbers for both frameworks here
            return (T.from_numpy(uniform((2, 1, self.hidden_dim // 2), 101)),
                    T.from_numpy(uniform((2, 1, self.hidden_dim // 2), 102)))

        def _forward_alg(self, feats):
            init_alphas = T.full((1, self.tagset_size), -10000.)
            init_alphas[0][self.tag_to_ix[START_TAG]] = 0.
            forward_var = init_alphas
            for feat in feats:
                alphas_t = []
                for next_tag in range(self.tagset_size):
                    emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                    trans_score = self.transitions[next_tag].view(1, -1)
                    next_tag_var = forward_var + trans_score + emit_score
                    alphas_t.append(log_sum_exp(next_tag_var).view(1))
                forward_var = T.cat(alphas_t).view(1, -1)
            terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
            return log_sum_exp(terminal_var)

        def _get_lstm_features(self, sentence):
            self.hidden = self.init_hidden()
            embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
            lstm_out, self.hidden = self.lstm(embeds, self.hidden)
            lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
            return self.hidden2tag(lstm_out)

        def _score_sentence(self, feats, tags):
            score = T.zeros(1)
            tags = T.cat([T.tensor([self.tag_to_ix[START_TAG]], dtype=T.long), tags])
            for i, feat in enumerate(feats):
                score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
            score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
            return score

        def _viterbi_decode(self, feats):
            backpointers = []
            init_vvars = T.full((1, self.tagset_size), -10000.)
            init_vvars[0][self.tag_to_ix[START_TAG]] = 0
            forward_var = init_vvars
            for feat in feats:
                bptrs_t, viterbivars_t = [], []
                for next_tag in range(self.tagset_size):
                    next_tag_var = forward_var + self.transitions[next_tag]
                    best_tag_id = argmax(next_tag_var)
                    bptrs_t.append(best_tag_id)
                    viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
                forward_var = (T.cat(viterbivars_t) + feat).view(1, -1)
                backpointers.append(bptrs_t)
            terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
            best_tag_id = argmax(terminal_var)
            path_score = terminal_var[0][best_tag_id]
            best_path = [best_tag_id]
            for bptrs_t in reversed(backpointers):
                best_tag_id = bptrs_t[best_tag_id]
                best_path.append(best_tag_id)
            start = best_path.pop()
            assert start == self.tag_to_ix[START_TAG]
            best_path.reverse()
            return path_score, best_path

        def neg_log_likelihood(self, sentence, tags):
            feats = self._get_lstm_features(sentence)
            forward_score = self._forward_alg(feats)
            gold_score = self._score_sentence(feats, tags)
            return forward_score - gold_score

        def forward(self, sentence):
            lstm_feats = self._get_lstm_features(sentence)
            score, tag_seq = self._viterbi_decode(lstm_feats)
            return score, tag_seq

    training_data = [("the wall street journal reported today that apple corporation made money".split(),
                      "B I I I O O O B I O O".split()),
                     ("georgia tech is a university in georgia".split(), "B I O O O O B".split())]
    word_to_ix = {}
    for sentence, tags in training_data:
        for word in sentence:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}
    model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, EMBEDDING_DIM, HIDDEN_DIM)
    optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
    with T.no_grad():
        precheck_sent = prepare_sequence(training_data[0][0], word_to_ix)
        before = model(precheck_sent)
    losses = []
    for epoch in range(1):
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = T.tensor([tag_to_ix[t] for t in tags], dtype=T.long)
            loss = model.neg_log_likelihood(sentence_in, targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with T.no_grad():
        after = model(precheck_sent)
    return {"before": list(before), "after": list(after), "losses": losses, "transitions": model.transitions}


def test_bilstm_crf():
    run_both(bilstm_crf)


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


@pytest.mark.xfail(strict=True, raises=RuntimeError, reason="tidal has no meta device (a backend that only "
                   "infers shapes) and `with torch.device(...)` only takes the CPU")
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
def test_tutorial_prints_match_torch():
    """tests/scripts/tutorial_prints.py (tensor creation, arithmetic, broadcasting errors, reductions, in-place
    ops, out=, clone/detach, squeeze/unsqueeze, the blitz's autograd and Net) prints what torch prints."""
    import os
    import re
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "tutorial_prints.py")
    runs = [subprocess.Popen([sys.executable, *args, script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True) for args in ([], ["-m", "tidal.compat"])]
    (theirs, their_err), (ours, our_err) = (run.communicate(timeout=180) for run in runs)
    assert runs[0].returncode == 0, their_err
    assert runs[1].returncode == 0, our_err
    mask = lambda text: re.sub(r"0x[0-9a-f]+", "0x", text).splitlines()  # noqa: E731
    for k, (a, b) in enumerate(zip(mask(theirs), mask(ours))):
        assert a == b, f"line {k + 1}: torch printed {a!r}, tidal {b!r}"
    assert len(mask(theirs)) == len(mask(ours)) > 250


# -- Chatbot tutorial: packed sequences, Luong attention, masked loss -------------------------------------------------
def chatbot(T):
    """The chatbot tutorial's pieces: zeroPadding with itertools.zip_longest, binaryMatrix -> torch.BoolTensor,
    an EncoderRNN over nn.utils.rnn.pack_padded_sequence / pad_packed_sequence with a bidirectional GRU whose
    halves are summed, Luong attention ('dot', 'general', 'concat'), LuongAttnDecoderRNN, maskNLLLoss with
    torch.gather and masked_select, clip_grad_norm_, two Adam optimizers, and GreedySearchDecoder."""
    import itertools
    nn, F = T.nn, T.nn.functional
    PAD_token, SOS_token, EOS_token, hidden_size, voc = 0, 1, 2, 8, 12

    def zeroPadding(l, fillvalue=PAD_token):
        return list(itertools.zip_longest(*l, fillvalue=fillvalue))

    def binaryMatrix(l):
        return [[0 if token == PAD_token else 1 for token in seq] for seq in l]

    rng = np.random.default_rng(170)
    inputs = sorted(([int(v) for v in rng.integers(3, voc, n)] + [EOS_token] for n in (5, 3, 4)), key=len,
                    reverse=True)
    outputs = [[int(v) for v in rng.integers(3, voc, n)] + [EOS_token] for n in (2, 4, 3)]
    lengths = T.tensor([len(s) for s in inputs])
    input_variable = T.LongTensor(zeroPadding(inputs))
    padded = zeroPadding(outputs)
    mask = T.BoolTensor(binaryMatrix(padded))
    target_variable = T.LongTensor(padded)
    max_target_len = max(len(s) for s in outputs)

    class EncoderRNN(nn.Module):
        def __init__(self, hidden_size, embedding, n_layers=1, dropout=0):
            super().__init__()
            self.n_layers, self.hidden_size, self.embedding = n_layers, hidden_size, embedding
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout),
                              bidirectional=True)

        def forward(self, input_seq, input_lengths, hidden=None):
            embedded = self.embedding(input_seq)
            packed = nn.utils.rnn.pack_padded_sequence(embedded, input_lengths)
            outputs, hidden = self.gru(packed, hidden)
            outputs, _ = nn.utils.rnn.pad_packed_sequence(outputs)
            outputs = outputs[:, :, :self.hidden_size] + outputs[:, :, self.hidden_size:]
            return outputs, hidden

    class Attn(nn.Module):
        def __init__(self, method, hidden_size):
            super().__init__()
            self.method, self.hidden_size = method, hidden_size
            if self.method == "general":
                self.attn = nn.Linear(self.hidden_size, hidden_size)
            elif self.method == "concat":
                self.attn = nn.Linear(self.hidden_size * 2, hidden_size)
                self.v = nn.Parameter(T.FloatTensor(hidden_size))

        def dot_score(self, hidden, encoder_output):
            return T.sum(hidden * encoder_output, dim=2)

        def general_score(self, hidden, encoder_output):
            return T.sum(hidden * self.attn(encoder_output), dim=2)

        def concat_score(self, hidden, encoder_output):
            energy = self.attn(T.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)).tanh()
            return T.sum(self.v * energy, dim=2)

        def forward(self, hidden, encoder_outputs):
            attn_energies = getattr(self, self.method + "_score")(hidden, encoder_outputs)
            attn_energies = attn_energies.t()
            return F.softmax(attn_energies, dim=1).unsqueeze(1)

    class LuongAttnDecoderRNN(nn.Module):
        def __init__(self, attn_model, embedding, hidden_size, output_size, n_layers=1, dropout=0.1):
            super().__init__()
            self.embedding = embedding
            self.embedding_dropout = nn.Dropout(dropout)
            self.gru = nn.GRU(hidden_size, hidden_size, n_layers, dropout=(0 if n_layers == 1 else dropout))
            self.concat = nn.Linear(hidden_size * 2, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)
            self.attn = Attn(attn_model, hidden_size)

        def forward(self, input_step, last_hidden, encoder_outputs):
            embedded = self.embedding_dropout(self.embedding(input_step))
            rnn_output, hidden = self.gru(embedded, last_hidden)
            attn_weights = self.attn(rnn_output, encoder_outputs)
            context = attn_weights.bmm(encoder_outputs.transpose(0, 1))
            rnn_output, context = rnn_output.squeeze(0), context.squeeze(1)
            concat_output = T.tanh(self.concat(T.cat((rnn_output, context), 1)))
            return F.softmax(self.out(concat_output), dim=1), hidden

    def maskNLLLoss(inp, target, mask):
        nTotal = mask.sum()
        crossEntropy = -T.log(T.gather(inp, 1, target.view(-1, 1)).squeeze(1))
        loss = crossEntropy.masked_select(mask).mean()
        return loss, nTotal.item()

    class GreedySearchDecoder(nn.Module):
        def __init__(self, encoder, decoder):
            super().__init__()
            self.encoder, self.decoder = encoder, decoder

        def forward(self, input_seq, input_length, max_length):
            encoder_outputs, encoder_hidden = self.encoder(input_seq, input_length)
            decoder_hidden = encoder_hidden[:self.decoder.gru.num_layers]
            decoder_input = T.ones(1, 1, dtype=T.long) * SOS_token
            all_tokens, all_scores = T.zeros([0], dtype=T.long), T.zeros([0])
            for _ in range(max_length):
                decoder_output, decoder_hidden = self.decoder(decoder_input, decoder_hidden, encoder_outputs)
                decoder_scores, decoder_input = T.max(decoder_output, dim=1)
                all_tokens = T.cat((all_tokens, decoder_input), dim=0)
                all_scores = T.cat((all_scores, decoder_scores), dim=0)
                decoder_input = T.unsqueeze(decoder_input, 0)
            return all_tokens, all_scores

    results = {"lengths": lengths, "mask": mask}
    for attn_model in ("dot", "general", "concat"):
        embedding = nn.Embedding(voc, hidden_size)
        encoder = EncoderRNN(hidden_size, embedding)
        decoder = LuongAttnDecoderRNN(attn_model, embedding, hidden_size, voc, dropout=0.0)
        init_weights(T, encoder, 171)
        init_weights(T, decoder, 172)
        encoder_optimizer = T.optim.Adam(encoder.parameters(), lr=1e-3)
        decoder_optimizer = T.optim.Adam(decoder.parameters(), lr=5e-3)
        encoder.train(), decoder.train()
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        encoder_outputs, encoder_hidden = encoder(input_variable, lengths)
        decoder_input = T.LongTensor([[SOS_token for _ in range(3)]])
        decoder_hidden = encoder_hidden[:decoder.gru.num_layers]
        loss, print_losses, n_totals = 0, [], 0
        for t in range(max_target_len):
            decoder_output, decoder_hidden = decoder(decoder_input, decoder_hidden, encoder_outputs)
            decoder_input = target_variable[t].view(1, -1)
            mask_loss, nTotal = maskNLLLoss(decoder_output, target_variable[t], mask[t])
            loss += mask_loss
            print_losses.append(mask_loss.item() * nTotal)
            n_totals += nTotal
        loss.backward()
        nn.utils.clip_grad_norm_(encoder.parameters(), 50.0)
        nn.utils.clip_grad_norm_(decoder.parameters(), 50.0)
        encoder_optimizer.step()
        decoder_optimizer.step()
        encoder.eval(), decoder.eval()
        with T.no_grad():
            tokens, scores = GreedySearchDecoder(encoder, decoder)(input_variable[:, :1], lengths[:1], 4)
        results[attn_model] = [sum(print_losses) / n_totals, encoder_outputs, tokens, scores,
                               decoder.concat.weight]
    return results


def test_chatbot():
    run_both(chatbot)


# -- Extending autograd, double backward, nn.Module internals --------------------------------------------------------
def extending_autograd(T):
    """Custom Functions as the docs' 'Extending torch.autograd' and the double-backward tutorial write them:
    LinearFunction with ctx.needs_input_grad, MulConstant with a non-tensor argument, a Function returning
    two outputs with mark_non_differentiable (sort), Square/Exp whose backward is differentiable (double
    backward through autograd.grad(create_graph=True)), once_differentiable, and gradcheck in float64."""
    from torch.autograd.function import once_differentiable as _real_once  # noqa: F401 (the docs' import)
    Function = T.autograd.Function

    class LinearFunction(Function):
        @staticmethod
        def forward(input, weight, bias):
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def setup_context(ctx, inputs, output):
            input, weight, bias = inputs
            ctx.save_for_backward(input, weight, bias)

        @staticmethod
        def backward(ctx, grad_output):
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class MulConstant(Function):
        @staticmethod
        def forward(ctx, tensor, constant):
            ctx.constant = constant
            return tensor * constant

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output * ctx.constant, None

    class Sort(Function):
        @staticmethod
        def forward(ctx, x):
            sorted_, idx = x.sort()
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(x, idx)
            return sorted_, idx

        @staticmethod
        def backward(ctx, g1, g2):
            x, idx = ctx.saved_tensors
            grad_input = T.zeros_like(x)
            grad_input.index_add_(0, idx, g1)
            return grad_input

    class Square(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 2 * x

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            result = T.exp(x)
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_out):
            result, = ctx.saved_tensors
            return grad_out * result

    class Cube(Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        @T.autograd.function.once_differentiable
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return grad_out * 3 * x ** 2

    x = T.tensor(uniform((4, 3), 180).astype(np.float64), requires_grad=True)
    w = T.tensor(uniform((2, 3), 181).astype(np.float64), requires_grad=True)
    b = T.tensor(uniform((2,), 182).astype(np.float64), requires_grad=True)
    out = {"gradcheck": T.autograd.gradcheck(LinearFunction.apply, (x, w, b), eps=1e-6, atol=1e-4)}
    y = LinearFunction.apply(x, w.detach(), b)
    y.sum().backward()
    out["linear"] = [y, x.grad, b.grad, w.grad is None]
    v = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
    m = MulConstant.apply(v, 2.5)
    m.backward(T.ones(3))
    out["mul_constant"] = [m, v.grad]
    s, idx = Sort.apply(T.tensor([3.0, 1.0, 2.0], requires_grad=True))
    out["sort"] = [s, idx, idx.requires_grad, s.requires_grad]
    z = T.tensor([0.5, 1.5], requires_grad=True)
    for fn in (Square, Exp):
        y = fn.apply(z)
        (g,) = T.autograd.grad(y.sum(), z, create_graph=True)
        (gg,) = T.autograd.grad(g.sum(), z)
        out[fn.__name__] = [y, g, gg, T.autograd.gradgradcheck(fn.apply, (z.detach().double().requires_grad_(),))]
    y = Cube.apply(z)
    (g,) = T.autograd.grad(y.sum(), z, create_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):  # torch's backward ran without a graph
        g.sum().backward()
    out["cube"] = [g, g.requires_grad]
    return out


def test_extending_autograd():
    run_both(extending_autograd)


def module_internals(T, tmp_path):
    """The nn.Module tutorial and the parametrization / pruning tutorials: a hand-written MyLinear with
    nn.Parameter and register_buffer (persistent or not), named_modules/named_buffers/state_dict keys, apply()
    of an init function, to(dtype), train/eval flags, forward pre/post hooks changing inputs and outputs, a
    Symmetric parametrization (with right_inverse) registered on a Linear, remove_parametrizations, and
    l1_unstructured/random_unstructured/ln_structured pruning with prune.remove."""
    import importlib
    nn = T.nn
    # `import torch.nn.utils.prune as prune` (the runner maps it; in-process tidal.compat has them as attributes)
    parametrize, prune = (importlib.import_module(f"torch.nn.utils.{name}") if T is real_torch
                          else getattr(nn.utils, name) for name in ("parametrize", "prune"))

    class MyLinear(nn.Module):
        def __init__(self, in_features, out_features):
            super().__init__()
            self.weight = nn.Parameter(T.from_numpy(uniform((in_features, out_features), 190)))
            self.bias = nn.Parameter(T.from_numpy(uniform((out_features,), 191)))
            self.register_buffer("running", T.zeros(out_features))
            self.register_buffer("scratch", T.ones(1), persistent=False)

        def forward(self, input):
            out = (input @ self.weight) + self.bias
            if self.training:
                self.running.add_(out.detach().mean(0))
            return out

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.l0 = MyLinear(4, 3)
            self.l1 = MyLinear(3, 1)

        def forward(self, x):
            return self.l1(T.relu(self.l0(x)))

    net = Net()
    x = T.from_numpy(uniform((5, 4), 192))
    calls = []
    pre = net.l0.register_forward_pre_hook(lambda m, inp: (inp[0] * 2,))
    post = net.register_forward_hook(lambda m, inp, output: output + 1)
    net.l1.register_forward_hook(lambda m, inp, output: calls.append(m.training))
    first = net(x)
    pre.remove()
    post.remove()
    net.eval()
    second = net(x)

    @T.no_grad()
    def init_weights_fn(m):
        if isinstance(m, MyLinear):
            m.weight.fill_(0.25)
            m.bias.zero_()

    net.apply(init_weights_fn)
    third = net.to(T.float64)(x.double())
    out = {"first": first, "second": second, "third": third, "calls": calls,
           "modules": [n for n, _ in net.named_modules()], "buffers": [n for n, _ in net.named_buffers()],
           "state": list(net.state_dict()), "dtype": str(net.l0.weight.dtype).split(".")[1]}

    class Symmetric(nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)

        def right_inverse(self, A):
            return A.triu()

    layer = nn.Linear(3, 3)
    init_weights(T, layer, 193)
    parametrize.register_parametrization(layer, "weight", Symmetric())
    W = layer.weight
    sym = [W, T.allclose(W, W.T), parametrize.is_parametrized(layer), type(layer).__name__,
           list(layer.state_dict())]
    layer(T.ones(2, 3)).sum().backward()
    sym.append(layer.parametrizations.weight.original.grad)
    layer.weight = T.from_numpy(uniform((3, 3), 194))
    sym.append(layer.parametrizations.weight.original)
    parametrize.remove_parametrizations(layer, "weight")
    sym += [type(layer).__name__, list(layer.state_dict()), layer.weight]
    out["parametrize"] = sym

    class LeNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 3, 3)
            self.fc1 = nn.Linear(12, 4)

        def forward(self, x):
            return self.fc1(T.flatten(T.relu(self.conv1(x)), 1))

    model = LeNet()
    init_weights(T, model, 195)
    module = model.conv1
    prune.l1_unstructured(module, name="bias", amount=1)
    prune.ln_structured(module, name="weight", amount=0.34, n=2, dim=0)
    prune.l1_unstructured(model.fc1, name="weight", amount=0.5)
    pruned = [sorted(n for n, _ in module.named_parameters()), sorted(n for n, _ in module.named_buffers()),
              module.bias_mask, module.weight_mask.sum(), float(T.sum(model.fc1.weight == 0)),
              list(module._forward_pre_hooks.keys()) != [], model(T.ones(1, 1, 4, 4))]
    prune.remove(module, "weight")
    pruned += [sorted(n for n, _ in module.named_parameters()), module.weight, list(model.state_dict())]
    out["prune"] = pruned
    return out


def test_module_internals(tmp_path):
    run_both(module_internals, tmp_path=tmp_path)


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


# -- text classification (EmbeddingBag), model ensembling (torch.func) -----------------------------------------------
def text_classification(T):
    """The text-classification tutorial: collate_batch building a flat text tensor with offsets from
    torch.tensor(offsets[:-1]).cumsum(dim=0), nn.EmbeddingBag(mode='mean') called with (text, offsets),
    init_weights with uniform_/zero_ (overwritten by the shared weights), CrossEntropyLoss, SGD,
    clip_grad_norm_(0.1), StepLR(1.0, gamma=0.1), random_split with a seeded generator, evaluate()."""
    nn = T.nn
    rng = np.random.default_rng(230)
    samples = [(int(rng.integers(0, 4)), [int(v) for v in rng.integers(0, 20, int(rng.integers(2, 7)))])
               for _ in range(12)]

    def collate_batch(batch):
        label_list, text_list, offsets = [], [], [0]
        for _label, _text in batch:
            label_list.append(_label)
            processed_text = T.tensor(_text, dtype=T.int64)
            text_list.append(processed_text)
            offsets.append(processed_text.size(0))
        label_list = T.tensor(label_list, dtype=T.int64)
        offsets = T.tensor(offsets[:-1]).cumsum(dim=0)
        text_list = T.cat(text_list)
        return label_list, text_list, offsets

    class TextClassificationModel(nn.Module):
        def __init__(self, vocab_size, embed_dim, num_class):
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
            self.fc = nn.Linear(embed_dim, num_class)
            self.init_weights()

        def init_weights(self):
            initrange = 0.5
            self.embedding.weight.data.uniform_(-initrange, initrange)
            self.fc.weight.data.uniform_(-initrange, initrange)
            self.fc.bias.data.zero_()

        def forward(self, text, offsets):
            return self.fc(self.embedding(text, offsets))

    model = TextClassificationModel(20, 8, 4)
    init_weights(T, model, 231)
    criterion = nn.CrossEntropyLoss()
    optimizer = T.optim.SGD(model.parameters(), lr=5)
    scheduler = T.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    loader = T.utils.data.DataLoader(samples, batch_size=4, shuffle=False, collate_fn=collate_batch)
    losses = []
    for epoch in range(2):
        model.train()
        for label, text, offsets in loader:
            optimizer.zero_grad()
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    model.eval()
    total_acc, total_count = 0, 0
    with T.no_grad():
        for label, text, offsets in loader:
            predicted_label = model(text, offsets)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    split = T.utils.data.random_split(samples, [9, 3], generator=T.Generator().manual_seed(42))
    return {"losses": losses, "acc": total_acc / total_count, "lr": scheduler.get_last_lr(),
            "split": [len(split[0]), len(split[1])], "offsets": collate_batch(samples[:3])[2],
            "bag": model.embedding(T.tensor([1, 2, 4, 5, 4, 3]), T.tensor([0, 2]))}


def test_text_classification():
    run_both(text_classification)


def model_ensembling(T):
    """The model-ensembling tutorial: stack_module_state of several MLPs, a 'meta' base model replaced here by
    copy.deepcopy (tidal has no meta device), functional_call vmapped over the stacked parameters, with
    in_dims=(0, 0, None) for one minibatch shared and (0, 0, 0) for one per model; results against a loop."""
    import copy
    nn, F, func = T.nn, T.nn.functional, T.func

    class SimpleMLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(12, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x.flatten(1))))

    num_models = 3
    models = []
    for k in range(num_models):
        m = SimpleMLP()
        init_weights(T, m, 240 + k)
        models.append(m)
    minibatches = T.from_numpy(uniform((num_models, 4, 3, 4), 245))
    minibatch = minibatches[0]
    predictions_diff_minibatch_loop = [model(mb) for model, mb in zip(models, minibatches)]
    predictions2 = [model(minibatch) for model in models]
    params, buffers = func.stack_module_state(models)
    base_model = copy.deepcopy(models[0])

    def fmodel(params, buffers, x):
        return func.functional_call(base_model, (params, buffers), (x,))

    predictions1_vmap = func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
    predictions2_vmap = func.vmap(fmodel)(params, buffers, minibatches)
    return {"loop1": predictions2, "vmap1": predictions1_vmap, "loop2": predictions_diff_minibatch_loop,
            "vmap2": predictions2_vmap, "keys": sorted(params), "shape": list(params["fc1.weight"].shape)}


def test_model_ensembling():
    run_both(model_ensembling)


# -- Language translation with nn.Transformer ------------------------------------------------------------------------
def transformer_translation(T):
    """The nn.Transformer translation tutorial: PositionalEncoding and TokenEmbedding modules, Seq2SeqTransformer
    (nn.Transformer with encode/decode), generate_square_subsequent_mask from triu(ones) == 1 turned into a float
    mask with masked_fill(-inf / 0.0), boolean padding masks (src == PAD_IDX).transpose(0, 1), cross_entropy with
    ignore_index, Adam(betas=(0.9, 0.98), eps=1e-9), and greedy_decode growing ys with
    torch.ones(1, 1).type_as(src.data).fill_(next_word)."""
    nn = T.nn
    PAD_IDX, BOS_IDX, EOS_IDX, SRC_V, TGT_V, EMB = 1, 2, 3, 15, 13, 16

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, dropout, maxlen=50):
            super().__init__()
            den = T.exp(- T.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = T.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = T.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = T.sin(pos * den)
            pos_embedding[:, 1::2] = T.cos(pos * den)
            pos_embedding = pos_embedding.unsqueeze(-2)
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("pos_embedding", pos_embedding)

        def forward(self, token_embedding):
            return self.dropout(token_embedding + self.pos_embedding[:token_embedding.size(0), :])

    class TokenEmbedding(nn.Module):
        def __init__(self, vocab_size, emb_size):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_size)
            self.emb_size = emb_size

        def forward(self, tokens):
            return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size,
                     tgt_vocab_size, dim_feedforward=32, dropout=0.0):
            super().__init__()
            self.transformer = nn.Transformer(d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                                              num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward,
                                              dropout=dropout)
            self.generator = nn.Linear(emb_size, tgt_vocab_size)
            self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
            self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
            self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                    memory_key_padding_mask):
            src_emb = self.positional_encoding(self.src_tok_emb(src))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
            outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask, tgt_padding_mask,
                                    memory_key_padding_mask)
            return self.generator(outs)

        def encode(self, src, src_mask):
            return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask)

        def decode(self, tgt, memory, tgt_mask):
            return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)

    def generate_square_subsequent_mask(sz):
        mask = (T.triu(T.ones((sz, sz))) == 1).transpose(0, 1)
        return mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, float(0.0))

    def create_mask(src, tgt):
        src_seq_len, tgt_seq_len = src.shape[0], tgt.shape[0]
        tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
        src_mask = T.zeros((src_seq_len, src_seq_len)).type(T.bool)
        src_padding_mask = (src == PAD_IDX).transpose(0, 1)
        tgt_padding_mask = (tgt == PAD_IDX).transpose(0, 1)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    rng = np.random.default_rng(250)

    def batch(vocab, lengths):
        seqs = [[BOS_IDX] + [int(v) for v in rng.integers(4, vocab, n)] + [EOS_IDX] for n in lengths]
        width = max(len(s) for s in seqs)
        return T.tensor([s + [PAD_IDX] * (width - len(s)) for s in seqs]).t().contiguous()  # (seq, batch)

    src, tgt = batch(SRC_V, (4, 2, 3)), batch(TGT_V, (3, 4, 1))
    transformer = Seq2SeqTransformer(1, 1, EMB, 2, SRC_V, TGT_V)
    init_weights(T, transformer, 251)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    optimizer = T.optim.Adam(transformer.parameters(), lr=0.0001, betas=(0.9, 0.98), eps=1e-9)
    transformer.train()
    losses = []
    for _ in range(2):
        tgt_input = tgt[:-1, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = transformer(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask,
                             src_padding_mask)
        optimizer.zero_grad()
        tgt_out = tgt[1:, :]
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

    def greedy_decode(model, src, src_mask, max_len, start_symbol):
        memory = model.encode(src, src_mask)
        ys = T.ones(1, 1).fill_(start_symbol).type(T.long)
        for i in range(max_len - 1):
            tgt_mask = generate_square_subsequent_mask(ys.size(0)).type(T.bool)
            out = model.decode(ys, memory, tgt_mask)
            out = out.transpose(0, 1)
            prob = model.generator(out[:, -1])
            _, next_word = T.max(prob, dim=1)
            next_word = next_word.item()
            ys = T.cat([ys, T.ones(1, 1).type_as(src.data).fill_(next_word)], dim=0)
            if next_word == EOS_IDX:
                break
        return ys

    transformer.eval()
    one = src[:, :1]
    decoded = greedy_decode(transformer, one, T.zeros(one.shape[0], one.shape[0]).type(T.bool), 5, BOS_IDX)
    return {"losses": losses, "mask": generate_square_subsequent_mask(4), "decoded": decoded.flatten()}


def test_transformer_translation():
    run_both(transformer_translation)


def transformer_warnings(T):
    """The warnings torch gives the transformer tutorials: enable_nested_tensor with a layer that rules out the
    fast path (batch_first False, norm_first, an odd head count), and padding and attention masks of different
    types (bool and float) in TransformerEncoder, TransformerEncoderLayer and MultiheadAttention."""
    import warnings
    nn = T.nn
    src = T.ones(3, 2, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1, enable_nested_tensor=False)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, batch_first=True, norm_first=True), 1)
        nn.TransformerEncoder(nn.TransformerEncoderLayer(9, 3, batch_first=True), 1)
        encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2, dropout=0.0), 1, enable_nested_tensor=False)
        encoder(src, mask=T.zeros(3, 3), src_key_padding_mask=T.zeros(2, 3).bool())
        encoder.layers[0](src, src_mask=T.zeros(3, 3).bool(), src_key_padding_mask=T.zeros(2, 3))
        nn.MultiheadAttention(8, 2)(src, src, src, key_padding_mask=T.zeros(2, 3).bool(), attn_mask=T.zeros(3, 3))
        nn.MultiheadAttention(8, 2)(src, src, src, key_padding_mask=T.zeros(2, 3).bool(),
                                    attn_mask=T.zeros(3, 3).bool())
    return [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def test_transformer_warnings():
    run_both(transformer_warnings)


def amp_recipe(T):
    """The Automatic Mixed Precision recipe's training loop on the CPU: autocast(bfloat16) around forward and
    loss, GradScaler scale/backward/unscale_/clip_grad_norm_/step/update, zero_grad(set_to_none=True), and the
    scaler's state_dict saved with the checkpoint."""
    nn = T.nn
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    init_weights(T, net, 228)
    opt = T.optim.SGD(net.parameters(), lr=0.01)
    scaler = T.amp.GradScaler("cpu")
    data, targets = T.from_numpy(uniform((3, 6, 8), 229)), T.from_numpy(uniform((3, 6, 4), 230))
    losses = []
    for inp, target in zip(data, targets):
        with T.autocast(device_type="cpu", dtype=T.bfloat16):
            output = net(inp)
            loss = nn.functional.mse_loss(output, target)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    state = scaler.state_dict()
    return {"losses": losses, "weight": net[0].weight, "scale": state["scale"], "dtype": str(output.dtype)[-8:]}


def test_amp_recipe():
    run_both(amp_recipe, rtol=1e-2, atol=1e-3)  # bfloat16 matmuls: rounding differs with the summation order


def compile_intro(T, tmp_path):
    """The torch.compile introduction as it runs eagerly: torch.compile(model) gives an OptimizedModule holding
    `_orig_mod` (state_dict keys prefixed '_orig_mod.', attributes read through, eval() reaching the original),
    a compiled function and decorator, mode/fullgraph/dynamic arguments, torch._dynamo.reset and config,
    torch.compiler.is_compiling; the TorchScript save/load round trip of the save-load tutorial."""
    import importlib
    nn = T.nn
    dynamo = importlib.import_module("torch._dynamo") if T is real_torch else T._dynamo
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    init_weights(T, model, 260)
    x = T.from_numpy(uniform((5, 3), 261))
    opt_model = T.compile(model)
    opt_model.eval()
    out = {"type": type(opt_model).__name__, "keys": list(opt_model.state_dict()), "out": opt_model(x),
           "training": [opt_model.training, model.training], "attr": getattr(opt_model, "0").weight,
           "repr": repr(opt_model).replace("tidal.", "torch."), "orig": opt_model._orig_mod is model}

    @T.compile
    def foo(a, b):
        return T.sin(a) + T.cos(b)

    opt_foo = T.compile(foo, mode="reduce-overhead", fullgraph=True, dynamic=False)
    out["foo"] = [foo(x, x), opt_foo(x, x)]
    dynamo.reset()
    dynamo.config.suppress_errors = True
    out["compiling"] = [T.compiler.is_compiling(), dynamo.is_compiling()]
    path = tmp_path / f"scripted_{T.__name__}.pt"
    model_scripted = T.jit.script(model)
    T.jit.save(model_scripted, path)
    loaded = T.jit.load(path)
    loaded.eval()
    out["jit"] = loaded(x)
    model2 = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    model2.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in opt_model.state_dict().items()})
    out["reloaded"] = model2(x)
    return out


def test_compile_intro(tmp_path):
    run_both(compile_intro, tmp_path=tmp_path)


def dataloader_tour(T):
    """The data tutorial's DataLoader features: dict/namedtuple/str samples collated, Subset/ConcatDataset/
    StackDataset, BatchSampler with and without drop_last, an IterableDataset splitting its range with
    get_worker_info across two workers, persistent workers with pin_memory (and torch's warning when no
    accelerator is there to pin for), SubsetRandomSampler, fractional random_split lengths."""
    import collections
    import warnings
    data = T.utils.data
    Point = collections.namedtuple("Point", "x y")

    class DictDS(data.Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return {"a": T.tensor([i, i + 1.0]), "b": i, "p": Point(i, float(i)), "s": f"s{i}"}

    class Ranged(data.IterableDataset):
        def __init__(self, start, end):
            self.start, self.end = start, end

        def __iter__(self):
            info = data.get_worker_info()
            if info is None:
                return iter(range(self.start, self.end))
            per = int(math.ceil((self.end - self.start) / float(info.num_workers)))
            s = self.start + info.id * per
            return iter(range(s, min(s + per, self.end)))

    ds = data.TensorDataset(T.arange(10.0).view(5, 2), T.arange(5))
    out = {"dict": [[b["a"], b["b"], list(b["p"]), b["s"]] for b in data.DataLoader(DictDS(), batch_size=2)],
           "subset": [len(data.Subset(ds, [0, 2])), list(data.Subset(ds, [0, 2])[1]), len(data.ConcatDataset([ds, ds])),
                      list(data.ConcatDataset([ds, ds])[7]), data.StackDataset(ds, ds)[1][0][1]],
           "batches": [list(data.BatchSampler(data.SequentialSampler(range(7)), batch_size=3, drop_last=d))
                       for d in (False, True)],
           "iterable": [list(data.DataLoader(Ranged(3, 7))), sorted(int(v) for v in
                                                                   data.DataLoader(Ranged(3, 11), num_workers=2))],
           "subset_sampler": len(list(data.DataLoader(ds, sampler=data.SubsetRandomSampler([0, 1, 2])))),
           "split": [len(s) for s in data.random_split(range(10), [0.7, 0.3], generator=T.Generator().manual_seed(0))]}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loader = data.DataLoader(ds, batch_size=2, drop_last=True, pin_memory=True, num_workers=2,
                                 persistent_workers=True)
        out["pinned"] = [[b[1] for b in loader], [b[1] for b in loader], len(loader)]
        list(data.DataLoader(ds, pin_memory=True, pin_memory_device="cpu"))
    out["warnings"] = [str(w.message) for w in caught]
    return out


def test_dataloader_tour():
    run_both(dataloader_tour)
