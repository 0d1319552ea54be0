"""Programs shaped like pytorch/examples' (word_language_model, time_sequence_prediction, dcgan,
fast_neural_style, gcn/gat, mnist_rnn/mnist_forward_forward, reinforcement_learning, imagenet's
utilities, llama2's RoPE), written here with the same torch calls made the same way: each runs once on
real torch and once on `tidal.compat` from NumPy-made weights and data, and every loss, output and
gradient must agree. Dropout is off (p=0, or eval mode) so that no random draw enters the numbers."""
import io
import math
import warnings
from collections import deque

import numpy as np
import pytest
import torch as real_torch

import tidal
import tidal.compat as tidal_torch

FRAMEWORKS = (real_torch, tidal_torch)


def init_weights(T, model, seed: int = 0) -> None:
    """Fill every parameter from NumPy, so both frameworks start from the same weights."""
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                values = rng.normal(0.0, 1.0 / np.sqrt(np.prod(p.shape[1:])), size=tuple(p.shape))
            elif name.endswith("weight"):
                values = 1.0 + rng.uniform(-0.1, 0.1, size=tuple(p.shape))
            else:
                values = rng.uniform(-0.1, 0.1, size=tuple(p.shape))
            p.copy_(T.from_numpy(values.astype(np.float64 if p.dtype == T.float64 else np.float32)))


def picklable(cls, T):
    """Make a class defined inside a program findable by pickle (torch.save(model) pickles the class)."""
    cls.__qualname__ = cls.__name__ = f"{cls.__name__}_{T.__name__.replace('.', '_')}"
    cls.__module__ = __name__
    globals()[cls.__qualname__] = cls
    return cls


def numbers(value):
    """A program's results as NumPy arrays / Python numbers, whichever framework made them."""
    if isinstance(value, dict):
        return {k: numbers(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [numbers(v) for v in value]
    if hasattr(value, "detach"):
        return value.detach().double().numpy()
    return value


def run_both(program, rtol: float = 1e-4, atol: float = 1e-5, **kwargs) -> dict:
    """Run `program(T, **kwargs)` on torch and on tidal.compat and check their results agree."""
    theirs, ours = (numbers(program(T, **kwargs)) for T in FRAMEWORKS)

    def agree(a, b, where):
        if isinstance(a, dict):
            assert a.keys() == b.keys(), where
            for k in a:
                agree(a[k], b[k], f"{where}.{k}")
        elif isinstance(a, list):
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b)):
                agree(x, y, f"{where}[{i}]")
        elif isinstance(a, str):
            assert a == b, where
        else:
            np.testing.assert_allclose(b, a, rtol=rtol, atol=atol, err_msg=where)

    agree(theirs, ours, program.__name__)
    return ours


# -- word_language_model ----------------------------------------------------------------------------------
def _rnn_model(T, rnn_type: str, ntoken: int, ninp: int, nhid: int, nlayers: int, tie: bool):
    nn = T.nn

    class RNNModel(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.0)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ("LSTM", "GRU"):
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=0.0)
            else:
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity={"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type])
            self.decoder = nn.Linear(nhid, ntoken)
            if tie:
                self.decoder.weight = self.encoder.weight

        def forward(self, input, hidden):
            output, hidden = self.rnn(self.drop(self.encoder(input)), hidden)
            decoded = self.decoder(self.drop(output)).view(-1, ntoken)
            return T.nn.functional.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if rnn_type == "LSTM":
                return weight.new_zeros(nlayers, bsz, nhid), weight.new_zeros(nlayers, bsz, nhid)
            return weight.new_zeros(nlayers, bsz, nhid)

    return picklable(RNNModel, T)()


def word_language_model_rnn(T, rnn_type: str):
    """Truncated BPTT with repackaged hidden states, clip_grad_norm_ and the manual p.data.add_ update;
    then torch.save(model) and torch.load under safe_globals naming torch.nn.modules.* classes."""
    model = _rnn_model(T, rnn_type, 30, 16, 16, 2, tie=rnn_type == "GRU")
    init_weights(T, model)
    data = T.from_numpy(np.random.default_rng(1).integers(0, 30, (11, 4)))

    def repackage_hidden(h):
        return h.detach() if isinstance(h, T.Tensor) else tuple(repackage_hidden(v) for v in h)

    criterion, hidden, losses = T.nn.NLLLoss(), model.init_hidden(4), []
    for i in range(0, data.size(0) - 1, 5):
        seq_len = min(5, len(data) - 1 - i)
        inputs, targets = data[i:i + seq_len], data[i + 1:i + 1 + seq_len].view(-1)
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(inputs, hidden)
        loss = criterion(output, targets)
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-20)
        losses.append(loss.item())
    buffer = io.BytesIO()
    T.save(model, buffer)
    buffer.seek(0)
    modules = T.nn.modules
    with T.serialization.safe_globals([type(model), modules.dropout.Dropout, modules.linear.Linear,
                                       modules.rnn.GRU, modules.rnn.LSTM, modules.rnn.RNN,
                                       modules.sparse.Embedding]):
        loaded = T.load(buffer)
    loaded.rnn.flatten_parameters()
    loaded.eval()
    with T.no_grad():
        output, _ = loaded(data[:5], loaded.init_hidden(4))
    return {"losses": losses, "eval": output, "hidden": hidden}


@pytest.mark.parametrize("rnn_type", ["LSTM", "GRU", "RNN_RELU"])
def test_word_language_model_rnn(rnn_type):
    run_both(word_language_model_rnn, rnn_type=rnn_type)


def word_language_model_transformer(T):
    """nn.Transformer subclassed, a PositionalEncoding buffer filled by strided slices, a
    log(tril(ones)) mask, AdamW; saved and loaded with torch.nn.modules.activation.MultiheadAttention
    and the other names the example lists."""
    nn, F = T.nn, T.nn.functional

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, max_len=64):
            super().__init__()
            self.dropout = nn.Dropout(p=0.0)
            pe = T.zeros(max_len, d_model)
            position = T.arange(0, max_len, dtype=T.float).unsqueeze(1)
            div_term = T.exp(T.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = T.sin(position * div_term)
            pe[:, 1::2] = T.cos(position * div_term)
            self.register_buffer("pe", pe.unsqueeze(0).transpose(0, 1))

        def forward(self, x):
            return self.dropout(x + self.pe[:x.size(0), :])

    class TransformerModel(nn.Transformer):
        def __init__(self, ntoken, ninp, nhead, nhid, nlayers):
            super().__init__(d_model=ninp, nhead=nhead, dim_feedforward=nhid, num_encoder_layers=nlayers)
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp)
            self.input_emb = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)

        def forward(self, src):
            if self.src_mask is None or self.src_mask.size(0) != len(src):
                self.src_mask = T.log(T.tril(T.ones(len(src), len(src)))).to(src.device)
            src = self.pos_encoder(self.input_emb(src) * math.sqrt(self.ninp))
            return F.log_softmax(self.decoder(self.encoder(src, mask=self.src_mask)), dim=-1)

    picklable(PositionalEncoding, T)
    model = picklable(TransformerModel, T)(30, 16, 2, 32, 1)
    init_weights(T, model)
    model.eval()  # nn.Transformer's own dropout (0.1) stays random in training mode
    data = T.from_numpy(np.random.default_rng(2).integers(0, 30, (7, 3)))
    optimizer = T.optim.AdamW(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = nn.NLLLoss()(model(data[:-1]).view(-1, 30), data[1:].reshape(-1))
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    buffer = io.BytesIO()
    T.save(model, buffer)
    buffer.seek(0)
    m = T.nn.modules
    with T.serialization.safe_globals([PositionalEncoding, TransformerModel, F.relu, m.activation.MultiheadAttention,
                                       m.container.ModuleList, m.dropout.Dropout, m.linear.Linear,
                                       m.linear.NonDynamicallyQuantizableLinear, m.normalization.LayerNorm,
                                       m.sparse.Embedding, m.transformer.TransformerEncoder,
                                       m.transformer.TransformerEncoderLayer]):
        loaded = T.load(buffer)
    with T.no_grad():
        return {"losses": losses, "eval": loaded(data[:4])}


def test_word_language_model_transformer():
    run_both(word_language_model_transformer)


def test_torch_nn_modules_files_hold_torchs_names():
    """Every class torch defines in a torch.nn.modules file is found in the same file under tidal.compat."""
    import importlib
    import inspect
    import pkgutil
    for info in pkgutil.iter_modules(real_torch.nn.modules.__path__):
        if info.name.startswith("_") or info.name.startswith("linear_cross_entropy"):
            continue
        theirs = importlib.import_module(f"torch.nn.modules.{info.name}")
        names = [n for n, v in vars(theirs).items()
                 if inspect.isclass(v) and v.__module__ == theirs.__name__ and not n.startswith("_")]
        if not names:
            continue
        ours = getattr(tidal_torch.nn.modules, info.name)
        for name in names:
            assert getattr(ours, name) is getattr(tidal_torch.nn, name), (info.name, name)
    for name in ("_single", "_pair", "_triple", "_quadruple"):  # torch.nn.modules.utils, which layers import
        for value in (3, (1, 2)):
            assert getattr(tidal_torch.nn.modules.utils, name)(value) == getattr(real_torch.nn.modules.utils,
                                                                                 name)(value)


# -- time_sequence_prediction -----------------------------------------------------------------------------
def time_sequence_prediction(T):
    """Two LSTMCells in float64 unrolled over input.split(1, dim=1), LBFGS with a closure, future steps."""
    nn = T.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1, self.lstm2, self.linear = nn.LSTMCell(1, 12), nn.LSTMCell(12, 12), nn.Linear(12, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t, c_t, h_t2, c_t2 = (T.zeros(input.size(0), 12, dtype=T.double) for _ in range(4))
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _ in range(future):
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return T.cat(outputs, dim=1)

    rng = np.random.default_rng(2)
    x = np.arange(10) + rng.integers(-8, 8, (5, 1))
    data = np.sin(x / 4.0)
    input, target = T.from_numpy(data[2:, :-1]), T.from_numpy(data[2:, 1:])
    seq = Sequence()
    seq.double()
    init_weights(T, seq)
    criterion = nn.MSELoss()
    optimizer = T.optim.LBFGS(seq.parameters(), lr=0.8, max_iter=3)
    losses = []

    def closure():
        optimizer.zero_grad()
        loss = criterion(seq(input), target)
        losses.append(loss.item())
        loss.backward()
        return loss

    optimizer.step(closure)
    with T.no_grad():
        pred = seq(T.from_numpy(data[:2, :-1]), future=4)
        test_loss = criterion(pred[:, :-4], T.from_numpy(data[:2, 1:]))
    return {"losses": losses, "pred": pred, "test": test_loss.item(),
            "n_iter": optimizer.state_dict()["state"][0]["n_iter"]}


def test_time_sequence_prediction():
    run_both(time_sequence_prediction, rtol=1e-7, atol=1e-9)


# -- dcgan --------------------------------------------------------------------------------------------------
def dcgan(T):
    """ConvTranspose2d/BatchNorm2d generator, LeakyReLU(inplace)/Sigmoid discriminator, BCELoss, Adam with
    betas (0.5, 0.999), the example's D and G steps with label.fill_ and fake.detach()."""
    nn = T.nn
    netG = nn.Sequential(nn.ConvTranspose2d(8, 16, 4, 1, 0, bias=False), nn.BatchNorm2d(16), nn.ReLU(True),
                         nn.ConvTranspose2d(16, 8, 4, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU(True),
                         nn.ConvTranspose2d(8, 3, 4, 2, 1, bias=False), nn.Tanh())
    netD = nn.Sequential(nn.Conv2d(3, 8, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                         nn.Conv2d(8, 16, 4, 2, 1, bias=False), nn.BatchNorm2d(16), nn.LeakyReLU(0.2, inplace=True),
                         nn.Conv2d(16, 1, 4, 1, 0, bias=False), nn.Sigmoid())
    init_weights(T, netG, 1)
    init_weights(T, netD, 2)
    rng = np.random.default_rng(3)
    real = T.from_numpy(rng.uniform(-1, 1, (4, 3, 16, 16)).astype(np.float32))
    noise = T.from_numpy(rng.normal(size=(4, 8, 1, 1)).astype(np.float32))
    criterion = nn.BCELoss()
    optD = T.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optG = T.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    steps = []
    for _ in range(2):
        netD.zero_grad()
        label = T.full((4,), 1, dtype=real.dtype)
        output = netD(real).view(-1, 1).squeeze(1)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        fake = netG(noise)
        label.fill_(0)
        output = netD(fake.detach()).view(-1, 1).squeeze(1)
        errD_fake = criterion(output, label)
        errD_fake.backward()
        optD.step()
        netG.zero_grad()
        label.fill_(1)
        output = netD(fake).view(-1, 1).squeeze(1)
        errG = criterion(output, label)
        errG.backward()
        optG.step()
        steps.append([(errD_real + errD_fake).item(), errG.item(), D_x, output.mean().item()])
    return {"steps": steps, "running_mean": netG[1].running_mean, "tracked": netG[1].num_batches_tracked.item(),
            "repr": repr(netD).replace("tidal.", "torch.")}


def test_dcgan():
    run_both(dcgan)


# -- fast_neural_style ------------------------------------------------------------------------------------
def fast_neural_style(T):
    """ReflectionPad2d convs, InstanceNorm2d(affine=True), residual blocks, nearest-upsampling convs; the
    example's normalize_batch (new_tensor mean/std, div_(255)) and gram_matrix (bmm of transposed features)."""
    nn = T.nn

    class ConvLayer(nn.Module):
        def __init__(self, cin, cout, kernel, stride):
            super().__init__()
            self.reflection_pad = nn.ReflectionPad2d(kernel // 2)
            self.conv2d = nn.Conv2d(cin, cout, kernel, stride)

        def forward(self, x):
            return self.conv2d(self.reflection_pad(x))

    class UpsampleConvLayer(ConvLayer):
        def forward(self, x):
            return super().forward(T.nn.functional.interpolate(x, mode="nearest", scale_factor=2))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1, self.in1 = ConvLayer(3, 4, 5, 1), nn.InstanceNorm2d(4, affine=True)
            self.conv2, self.in2 = ConvLayer(4, 8, 3, 2), nn.InstanceNorm2d(8, affine=True)
            self.res_conv, self.res_in = ConvLayer(8, 8, 3, 1), nn.InstanceNorm2d(8, affine=True)
            self.deconv1, self.in3 = UpsampleConvLayer(8, 4, 3, 1), nn.InstanceNorm2d(4, affine=True)
            self.deconv2 = ConvLayer(4, 3, 5, 1)
            self.relu = nn.ReLU()

        def forward(self, x):
            y = self.relu(self.in1(self.conv1(x)))
            y = self.relu(self.in2(self.conv2(y)))
            y = y + self.res_in(self.res_conv(y))
            y = self.relu(self.in3(self.deconv1(y)))
            return self.deconv2(y)

    def normalize_batch(batch):
        mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        batch = batch.div_(255.0)
        return (batch - mean) / std

    def gram_matrix(y):
        (b, ch, h, w) = y.size()
        features = y.view(b, ch, w * h)
        return features.bmm(features.transpose(1, 2)) / (ch * h * w)

    model = Net()
    init_weights(T, model)
    rng = np.random.default_rng(4)
    x = T.from_numpy(rng.uniform(0, 255, (2, 3, 12, 12)).astype(np.float32))
    style = T.from_numpy(rng.uniform(0, 255, (1, 3, 12, 12)).astype(np.float32))
    gram_style = gram_matrix(normalize_batch(style.repeat(2, 1, 1, 1)))
    y = model(x)
    content = T.nn.MSELoss()(normalize_batch(y.clone()), normalize_batch(x.clone()))
    style_loss = T.nn.MSELoss()(gram_matrix(normalize_batch(y)), gram_style[:2, :, :])
    (1e5 * content + 1e10 * style_loss).backward()
    # a bias whose shift an InstanceNorm downstream removes has a zero gradient, which both frameworks give as
    # rounding noise (~1e-8 of the others): those are left out; float32 sums of ~1e7-sized terms make each
    # gradient compared relative to its largest entry
    scale = max(float(p.grad.abs().max()) for p in model.parameters())
    grads = {n: p.grad / p.grad.abs().max() for n, p in model.named_parameters()
             if float(p.grad.abs().max()) > 1e-6 * scale}
    return {"y": y, "content": content, "style": style_loss, "grads": grads}


def test_fast_neural_style():
    run_both(fast_neural_style, rtol=2e-4, atol=1e-4)


# -- gcn / gat: sparse adjacency --------------------------------------------------------------------------
def graph_conv(T):
    """gcn's load_cora and GraphConv: sparse_coo_tensor from NumPy int32 edges, eye + sparse, diag(...)
    .to_sparse(), sparse @ dense @ sparse, torch.mm/spmm with a sparse operand; gat's masked attention."""
    rng = np.random.default_rng(5)
    V, E = 12, 30
    features = T.FloatTensor((rng.random((V, 6)) < 0.4).astype(np.int32))
    scale_vector = 1 / T.sum(features, dim=1)
    scale_vector[scale_vector == float("inf")] = 0
    features = T.diag(scale_vector).to_sparse() @ features
    edges = rng.integers(0, V, (E, 2)).astype(np.int32)
    adj = T.sparse_coo_tensor(edges.T, T.ones(E), (V, V), dtype=T.int64)
    facts = [adj.is_sparse, str(adj.layout), adj._nnz(), adj.is_coalesced(), adj.coalesce()._nnz()]
    adj = T.eye(V) + adj
    degree = T.sqrt(1 / T.sum(adj, dim=1))
    degree[degree == float("inf")] = 0
    degree = T.diag(degree).to_sparse()
    adj_norm = degree @ adj @ degree
    sparse_adj, sparse_features = adj_norm.to_sparse(), features.to_sparse()
    kernel = T.nn.Parameter(T.from_numpy(rng.normal(size=(6, 4)).astype(np.float32)))
    support = T.mm(sparse_features, kernel)
    out = T.nn.functional.log_softmax(T.spmm(sparse_adj, support), dim=1)
    out.sum().backward()
    coalesced = sparse_adj.coalesce()
    # gat: dense adjacency masks the attention scores
    e = T.nn.functional.leaky_relu(support @ support.t(), 0.2)
    e = T.where(adj > 0, e, -9e16 * T.ones_like(e))
    attention = T.nn.functional.elu(T.softmax(e, dim=-1) @ support)
    facts += [adj_norm.to_dense() is adj_norm, sparse_adj.to_dense().is_sparse]
    sums = [T.sparse.sum(sparse_adj, dim=1).to_dense(), T.sparse.mm(sparse_adj, support.detach())]
    return {"out": out, "grad": kernel.grad, "attention": attention, "facts": facts, "sums": sums,
            "indices": coalesced.indices(), "values": coalesced.values(), "dense": sparse_adj.to_dense()}


def test_graph_conv_sparse_adjacency():
    run_both(graph_conv)


def test_legacy_tensor_constructor():
    """gcn's GraphConv: nn.Parameter(torch.Tensor(input_dim, output_dim)), then an init in place."""
    for T in FRAMEWORKS:
        kernel = T.nn.Parameter(T.Tensor(6, 4))
        T.nn.init.zeros_(kernel)
        assert tuple(kernel.shape) == (6, 4) and str(kernel.dtype).endswith("float32")
        assert T.Tensor([1, 2]).tolist() == [1.0, 2.0] and T.Tensor().shape == (0,)
        assert tuple(T.Tensor(T.Size([2, 3])).shape) == (2, 3)


def test_sparse_coo_repr_and_errors():
    for T in FRAMEWORKS:
        s = T.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1., 2., 3.], (2, 3))
        with pytest.raises(RuntimeError, match="uncoalesced"):
            s.indices()
        with pytest.raises(RuntimeError, match=r"add\(sparse, dense\) is not supported"):
            s + T.ones(2, 3)
    theirs = repr(real_torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1, 2, 3], (2, 3)).coalesce())
    assert repr(tidal_torch.sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1, 2, 3], (2, 3)).coalesce()) == theirs


# -- mnist_rnn / mnist_forward_forward ----------------------------------------------------------------------
def mnist_rnn(T):
    """LSTM(batch_first) whose last step goes through Dropout2d on a 2-D input (torch warns and computes)."""
    nn, F = T.nn, T.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(input_size=7, hidden_size=16, batch_first=True)
            self.batchnorm = nn.BatchNorm1d(16)
            self.dropout1 = nn.Dropout2d(0.25)
            self.fc1 = nn.Linear(16, 10)

        def forward(self, input):
            input = input.reshape(-1, 7, 7)
            output, hidden = self.rnn(input)
            output = self.dropout1(self.batchnorm(output[:, -1, :]))
            return F.log_softmax(self.fc1(output), dim=1)

    model = Net()
    init_weights(T, model)
    rng = np.random.default_rng(6)
    data = T.from_numpy(rng.normal(size=(8, 1, 7, 7)).astype(np.float32))
    target = T.from_numpy(rng.integers(0, 10, 8))
    model.eval()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loss = F.nll_loss(model(data), target)
        T.nn.functional.dropout2d(T.ones(3, 4), 0.5, training=True)
    loss.backward()
    return {"loss": loss, "grad": model.fc1.weight.grad,
            "warned": [str(w.message).split(",")[0] for w in caught if "dropout2d" in str(w.message)]}


def test_mnist_rnn_dropout2d_on_2d_input():
    assert run_both(mnist_rnn)["warned"] == ["dropout2d: Received a 2-D input to dropout2d"] * 2


def forward_forward(T):
    """mnist_forward_forward's overlay (x_[range(n), y] = x.max()), goodness losses and Adam steps."""
    nn = T.nn
    rng = np.random.default_rng(7)
    x = T.from_numpy(rng.normal(size=(6, 20)).astype(np.float32))
    y = T.from_numpy(rng.integers(0, 10, 6))

    def overlay_y_on_x(x, y):
        x_ = x.clone()
        x_[:, :10] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        return x_

    layer = nn.Linear(20, 8)
    init_weights(T, layer)
    opt = T.optim.Adam(layer.parameters(), lr=0.03)
    x_pos, x_neg = overlay_y_on_x(x, y), overlay_y_on_x(x, (y + 3) % 10)
    losses = []
    for _ in range(3):
        def fwd(z):
            return T.relu(layer(z / (z.norm(2, 1, keepdim=True) + 1e-4)))
        g_pos, g_neg = fwd(x_pos).pow(2).mean(1), fwd(x_neg).pow(2).mean(1)
        loss = T.log(1 + T.exp(T.cat([-g_pos + 2.0, g_neg - 2.0]))).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"x_pos": x_pos, "losses": losses, "weight": layer.weight}


def test_mnist_forward_forward():
    run_both(forward_forward)


# -- vae / siamese_network ----------------------------------------------------------------------------------
def vae_and_siamese(T):
    """vae's reparameterised loss (binary_cross_entropy sum + KLD) with Adam; siamese_network's feature extractor
    as nn.Sequential(*list(resnet.children())[:-1]) with BatchNorm, BCELoss, Adadelta + StepLR, and
    torch.where(outputs > 0.5, 1, 0).eq(targets.view_as(pred)) in eval mode."""
    nn, F = T.nn, T.nn.functional
    rng = np.random.default_rng(11)
    fc1, fc21, fc22 = nn.Linear(64, 16), nn.Linear(16, 4), nn.Linear(16, 4)
    fc3, fc4 = nn.Linear(4, 16), nn.Linear(16, 64)
    vae = nn.ModuleList([fc1, fc21, fc22, fc3, fc4])
    init_weights(T, vae)
    x = T.from_numpy(rng.uniform(size=(8, 1, 8, 8)).astype(np.float32))
    eps = T.from_numpy(rng.normal(size=(8, 4)).astype(np.float32))
    optimizer = T.optim.Adam(vae.parameters(), lr=1e-3)
    vae_losses = []
    for _ in range(2):
        h1 = F.relu(fc1(x.view(-1, 64)))
        mu, logvar = fc21(h1), fc22(h1)
        recon = T.sigmoid(fc4(F.relu(fc3(mu + eps * T.exp(0.5 * logvar)))))
        loss = F.binary_cross_entropy(recon, x.view(-1, 64), reduction="sum") - 0.5 * T.sum(
            1 + logvar - mu.pow(2) - logvar.exp())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        vae_losses.append(loss.item())
    comparison = T.cat([x[:2], recon.view(8, 1, 8, 8)[:2]])

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn = nn.BatchNorm2d(cout)
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = self.bn(self.conv(x))
            out += self.down(x)
            return T.relu(out)

    backbone = nn.Sequential()
    backbone.conv1 = nn.Conv2d(3, 4, 3, 1, 1, bias=False)
    backbone.add_module("layer1", Block(4, 8, 2))
    backbone.avgpool = nn.AdaptiveAvgPool2d((1, 1))
    backbone.fc = nn.Linear(8, 10)
    backbone.conv1 = nn.Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False)
    features = nn.Sequential(*(list(backbone.children())[:-1]))
    head = nn.Sequential(nn.Linear(backbone.fc.in_features * 2, 8), nn.ReLU(inplace=True), nn.Linear(8, 1))
    model = nn.ModuleList([features, head])
    init_weights(T, model)

    def siamese(a, b):
        fa, fb = features(a), features(b)
        return T.sigmoid(head(T.cat((fa.view(fa.size()[0], -1), fb.view(fb.size()[0], -1)), 1)))

    a, b = (T.from_numpy(rng.normal(size=(6, 1, 8, 8)).astype(np.float32)) for _ in range(2))
    targets = T.from_numpy(rng.integers(0, 2, 6).astype(np.float32))
    optimizer = T.optim.Adadelta(model.parameters(), lr=1.0)
    scheduler = T.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    siamese_losses = []
    for _ in range(2):
        optimizer.zero_grad()
        loss = nn.BCELoss()(siamese(a, b).squeeze(), targets)
        loss.backward()
        optimizer.step()
        scheduler.step()
        siamese_losses.append(loss.item())
    model.eval()
    with T.no_grad():
        outputs = siamese(a, b).squeeze()
        pred = T.where(outputs > 0.5, 1, 0)
        correct = pred.eq(targets.view_as(pred)).sum().item()
    return {"vae": vae_losses, "comparison": comparison, "siamese": siamese_losses, "outputs": outputs,
            "pred": pred, "correct": correct, "running_var": features[1].bn.running_var, "lr": scheduler.get_last_lr()}


def test_vae_and_siamese_network():
    run_both(vae_and_siamese)


# -- reinforcement_learning -------------------------------------------------------------------------------
def policy_gradient(T):
    """reinforce/actor_critic: Categorical(probs).log_prob, returns gathered in a deque and normalised,
    torch.cat(policy_loss).sum() plus smooth_l1 value losses, Adam."""
    nn, F = T.nn, T.nn.functional
    Categorical = T.distributions.Categorical

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1, self.action_head, self.value_head = nn.Linear(4, 16), nn.Linear(16, 2), nn.Linear(16, 1)

        def forward(self, x):
            x = F.relu(self.affine1(x))
            return F.softmax(self.action_head(x), dim=-1), self.value_head(x)

    policy = Policy()
    init_weights(T, policy)
    optimizer = T.optim.Adam(policy.parameters(), lr=3e-2)
    rng = np.random.default_rng(8)
    log_probs, values, entropy = [], [], []
    for state, action in zip(rng.normal(size=(6, 4)).astype(np.float32), [0, 1, 1, 0, 1, 0]):
        probs, value = policy(T.from_numpy(state).float().unsqueeze(0))
        m = Categorical(probs)
        log_probs.append(m.log_prob(T.tensor([action])))
        values.append(value)
        entropy.append(m.entropy())
    R, returns = 0, deque()
    for r in [1.0, 0.0, 1.0, 1.0, 0.0, 1.0]:
        R = r + 0.99 * R
        returns.appendleft(R)
    returns = T.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + np.finfo(np.float32).eps.item())
    policy_losses, value_losses = [], []
    for log_prob, value, R in zip(log_probs, values, returns.tolist()):
        policy_losses.append(-log_prob * (R - value.item()))
        value_losses.append(F.smooth_l1_loss(value, T.tensor([[R]])))
    loss = T.cat(policy_losses).sum() + T.stack(value_losses).sum()
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return {"loss": loss, "returns": returns, "entropy": T.cat(entropy), "weight": policy.affine1.weight}


def test_reinforcement_learning_policy_gradient():
    run_both(policy_gradient)


# -- imagenet utilities / regression ----------------------------------------------------------------------
def imagenet_utilities(T):
    """accuracy() with topk/t()/eq/expand_as/reshape, a 0-dim tensor formatted by AverageMeter's
    '{val:6.2f}', StepLR and a checkpoint saved and resumed (model, optimizer and scheduler state)."""
    rng = np.random.default_rng(9)
    output = T.from_numpy(rng.normal(size=(16, 10)).astype(np.float32))
    target = T.from_numpy(rng.integers(0, 10, 16))
    with T.no_grad():
        _, pred = output.topk(5, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))
        acc = [correct[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / 16) for k in (1, 5)]
    text = "Acc@1 {val:6.2f} ({avg:6.2f})".format(val=acc[0][0], avg=acc[1][0])
    model = T.nn.Linear(10, 3)
    init_weights(T, model)
    optimizer = T.optim.SGD(model.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    scheduler = T.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.1)
    for _ in range(2):
        loss = T.nn.CrossEntropyLoss()(model(output), target % 3)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
    buffer = io.BytesIO()
    T.save({"epoch": 2, "state_dict": model.state_dict(), "best_acc1": acc[0][0],
            "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, buffer)
    buffer.seek(0)
    checkpoint = T.load(buffer, map_location="cpu")
    model2 = T.nn.Linear(10, 3)
    model2.load_state_dict(checkpoint["state_dict"])
    optimizer2 = T.optim.SGD(model2.parameters(), 0.1, momentum=0.9, weight_decay=1e-4)
    optimizer2.load_state_dict(checkpoint["optimizer"])
    scheduler2 = T.optim.lr_scheduler.StepLR(optimizer2, step_size=1, gamma=0.1)
    scheduler2.load_state_dict(checkpoint["scheduler"])
    loss = T.nn.CrossEntropyLoss()(model2(output), target % 3)
    loss.backward()
    optimizer2.step()
    return {"acc": acc, "text": text, "best": checkpoint["best_acc1"], "lr": scheduler2.get_last_lr(),
            "weight": model2.weight}


def test_imagenet_utilities():
    run_both(imagenet_utilities)


# -- llama2 (tensor_parallelism) ----------------------------------------------------------------------------
def llama_rope_rmsnorm(T):
    """precompute_freqs_cis with torch.polar, RoPE through view_as_complex/view_as_real, RMSNorm with rsqrt,
    trunc_normal_ init inside `with torch.device(...)`, causal scaled_dot_product_attention."""
    F = T.nn.functional
    dim, heads, seqlen = 16, 2, 6
    head_dim = dim // heads
    freqs = 1.0 / (10000.0 ** (T.arange(0, head_dim, 2)[: (head_dim // 2)].float() / head_dim))
    t = T.arange(seqlen * 2, device=freqs.device)
    freqs = T.outer(t, freqs).float()
    with T.device(freqs.device):
        freqs_cis = T.polar(T.ones_like(freqs), freqs)[:seqlen]
        w = T.empty(64, 64)
        T.nn.init.trunc_normal_(w, mean=0.0, std=0.02)  # random draws: only their spread is compared
    rng = np.random.default_rng(10)
    x = T.from_numpy(rng.normal(size=(2, seqlen, dim)).astype(np.float32)).requires_grad_()
    weight = T.nn.Parameter(T.ones(dim))
    h = x * T.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * weight
    q = h.view(2, seqlen, heads, head_dim)
    q_ = T.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == q_.ndim - 1 else 1 for i, d in enumerate(q_.shape)]
    q_out = T.view_as_real(q_ * freqs_cis.view(*shape)).flatten(3).type_as(q)
    k = q_out[:, :, :, None, :].expand(2, seqlen, heads, 2, head_dim).reshape(2, seqlen, heads * 2, head_dim)
    out = F.scaled_dot_product_attention(q_out.repeat(1, 1, 2, 1).transpose(1, 2), k.transpose(1, 2),
                                         k.transpose(1, 2), is_causal=True)
    out.transpose(1, 2).contiguous().view(2, seqlen, -1).sum().backward()
    return {"freqs_cis": T.view_as_real(freqs_cis), "out": out, "grad": x.grad,
            "spread": round(float(w.std()), 2)}


def test_llama2_rope_and_rmsnorm():
    assert run_both(llama_rope_rmsnorm)["spread"] == 0.02


# -- what scripts print under `python -m tidal.compat` --------------------------------------------------------
_PRINTS = """import io, numpy, torch
print(repr(torch.float64), repr(torch.zeros(2, dtype=torch.int8)))
print(repr(torch.ones(2, 3).shape))
saved = io.BytesIO()
torch.save(numpy.zeros(2), saved)
saved.seek(0)
try:
    torch.load(saved)
except Exception as e:
    print(type(e).__name__, "`torch.load`" in str(e),
          "torch.serialization.add_safe_globals([numpy._core.multiarray._reconstruct])" in str(e))
"""


@pytest.fixture(scope="module")
def runner_prints(tmp_path_factory) -> list:
    """The lines a small script prints under `python -m tidal.compat` (run once for this file)."""
    import subprocess
    import sys
    script = tmp_path_factory.mktemp("runner") / "prints.py"
    script.write_text(_PRINTS)
    done = subprocess.run([sys.executable, "-m", "tidal.compat", str(script)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_runner_prints_torch_dtypes(runner_prints):
    """Under the runner a script's `x.dtype` prints `torch.float64`, as it did under torch, and torch.load's
    refusal names torch's functions; in-process tidal keeps its own names."""
    assert runner_prints[0] == f"{real_torch.float64!r} {real_torch.zeros(2, dtype=real_torch.int8)!r}"
    assert runner_prints[2] == "UnpicklingError True True"
    assert repr(tidal.float64) == "tidal.float64"


def test_runner_prints_torch_size(runner_prints):
    assert runner_prints[1] == repr(real_torch.ones(2, 3).shape)


# -- mnist_hogwild: workers train one shared model --------------------------------------------------------
_HOGWILD = '''
import torch, torch.multiprocessing as mp, torch.nn as nn

def train(rank, model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.ones(4, 3) * (rank + 1)
    for _ in range(3):
        optimizer.zero_grad()
        model(x).sum().backward()
        optimizer.step()

if __name__ == "__main__":
    mp.set_start_method("spawn", force=True)
    model = nn.Linear(3, 2)
    with torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.fill_(0.1)
    model.share_memory()
    print(torch.__name__, model.weight.is_shared(), torch.ones(2).is_shared())
    processes = [mp.Process(target=train, args=(rank, model)) for rank in range(2)]
    for p in processes:
        p.start()
    for p in processes:
        p.join()
    print(*model.weight.data.reshape(-1).tolist(), *model.bias.data.tolist())
'''


def test_mnist_hogwild_shared_model(tmp_path):
    """model.share_memory() and spawned mp.Process workers updating it in place (the children run tidal too)."""
    import subprocess
    import sys
    script = tmp_path / "hogwild.py"
    script.write_text(_HOGWILD)
    done = subprocess.run([sys.executable, "-m", "tidal.compat", str(script)], capture_output=True, text=True,
                          timeout=180, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    head, values = done.stdout.splitlines()[-2:]
    assert head.split() == ["tidal.compat", "True", "False"]
    # the workers' gradients do not depend on the weights, so torch running them one after the other agrees
    model = real_torch.nn.Linear(3, 2)
    with real_torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.fill_(0.1)
    namespace = {"torch": real_torch, "nn": real_torch.nn}
    exec(_HOGWILD.split("if __name__")[0].replace("import torch, torch.multiprocessing as mp, torch.nn as nn", ""),
         namespace)
    for rank in range(2):
        namespace["train"](rank, model)
    expected = model.weight.data.reshape(-1).tolist() + model.bias.data.tolist()
    np.testing.assert_allclose([float(v) for v in values.split()], expected, rtol=1e-6)


def test_share_memory_pickles_by_name():
    """A shared tensor sent through multiprocessing's pickler maps the same memory."""
    from multiprocessing.reduction import ForkingPickler
    import pickle
    for T in FRAMEWORKS:
        shared = T.nn.Parameter(T.arange(6.0).reshape(2, 3))
        assert not shared.is_shared() and shared.share_memory_() is shared and shared.is_shared()
        twin = pickle.loads(ForkingPickler.dumps(shared))
        with T.no_grad():
            twin[1, 2] = 50.0
        assert type(twin) is type(shared) and twin.requires_grad and twin.is_shared()
        assert shared[1, 2].item() == 50.0


def test_default_backend_for_device():
    """distributed/ddp's example asks torch.distributed which backend goes with the accelerator's device."""
    for device in ("cpu", "cuda:1", real_torch.device("cpu")):
        ours = tidal_torch.distributed.get_default_backend_for_device(str(device))
        assert ours == real_torch.distributed.get_default_backend_for_device(device)
    for T in FRAMEWORKS:
        with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
            T.distributed.get_default_backend_for_device("foo")
