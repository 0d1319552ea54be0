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
    images, targets = uniform((40, 1, 28, 28), 1, 0, 1), labels(40, 10, 2)

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
    for t in range(3):
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
    (np.sum(np.multiply(losses, nums)) / np.sum(nums)); Mnist_CNN with F.avg_pool2d; nn.Sequential with a
    Lambda module and nn.AdaptiveAvgPool2d; a WrappedDataLoader and momentum SGD."""
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
    out["linear"] = fit(2, model, loss_func, optim.SGD(model.parameters(), lr=lr), train_dl, valid_dl)

    class Mnist_CNN(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 16, kernel_size=3, stride=2, padding=1)
            self.conv2 = nn.Conv2d(16, 16, kernel_size=3, stride=2, padding=1)
            self.conv3 = nn.Conv2d(16, 10, kernel_size=3, stride=2, padding=1)

        def forward(self, xb):
            xb = xb.view(-1, 1, 28, 28)
            xb = F.relu(self.conv1(xb))
            xb = F.relu(self.conv2(xb))
            xb = F.relu(self.conv3(xb))
            xb = F.avg_pool2d(xb, 4)
            return xb.view(-1, xb.size(1))

    model = Mnist_CNN()
    init_weights(T, model, 26)
    out["cnn"] = fit(1, model, loss_func, optim.SGD(model.parameters(), lr=lr, momentum=0.9), train_dl, valid_dl)

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
    out["sequential"] = fit(2, model, loss_func, opt, train_dl, valid_dl)
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
    for t in range(50):
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
    for t in range(50):
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
    for t in range(50):
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
    for t in range(50):
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
    for t in range(50):
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
            return f"y = {self.a.item():.4f} + {self.b.item():.4f} x + {self.c.item():.4f} x^2 + {self.d.item():.4f} x^3"

    model = Polynomial3()
    criterion = T.nn.MSELoss(reduction="sum")
    optimizer = T.optim.SGD(model.parameters(), lr=1e-6)
    for t in range(50):
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
