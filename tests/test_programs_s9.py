"""Training and evaluation programs of kinds the other program tests do not cover (a VAE, a seq2seq GRU with
attention over packed sequences, a ResNet block with OneCycleLR, an EmbeddingBag text classifier, a GAN step,
bfloat16 autocast, distillation, a contrastive loss, custom Functions, module hooks, a checkpoint round trip,
top-k evaluation, augmentation through views, integer/bool bookkeeping, scheduler surfaces), each run on real
torch and on `tidal.compat` from NumPy-made weights and data; every value, its dtype, every warning and every
error (type and message) must agree."""
import io
import warnings

import numpy as np
import pytest
import torch as real_torch

import tidal.compat as tidal_torch

FRAMEWORKS = (real_torch, tidal_torch)


def data(shape, seed: int, low: float = -1.0, high: float = 1.0) -> np.ndarray:
    """float32 data both frameworks share."""
    return np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)


def init(T, model, seed: int) -> None:
    """Fill every parameter from NumPy, so both frameworks start from the same weights."""
    rng = np.random.default_rng(seed)
    with T.no_grad():
        for p in model.parameters():
            p.copy_(T.from_numpy(rng.normal(0, 0.3, tuple(p.shape)).astype(np.float32)))


def plain(value):
    """A program's results as NumPy arrays (with their dtype's name) and Python values."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "detach"):
        v = value.detach()
        return (str(v.dtype).split(".")[-1], v.double().numpy())
    if isinstance(value, str):
        return value.replace("tidal.", "torch.")
    return value


def agree(theirs, ours, where: str, rtol: float, atol: float) -> None:
    assert type(theirs) is type(ours), f"{where}: {theirs!r} vs {ours!r}"
    if isinstance(theirs, dict):
        assert theirs.keys() == ours.keys(), where
        for k in theirs:
            agree(theirs[k], ours[k], f"{where}.{k}", rtol, atol)
    elif isinstance(theirs, list):
        assert len(theirs) == len(ours), where
        for i, (a, b) in enumerate(zip(theirs, ours)):
            agree(a, b, f"{where}[{i}]", rtol, atol)
    elif isinstance(theirs, tuple):  # (dtype name, values)
        assert theirs[0] == ours[0], f"{where}: dtype {theirs[0]} vs {ours[0]}"
        np.testing.assert_allclose(ours[1], theirs[1], rtol=rtol, atol=atol, err_msg=where)
    elif isinstance(theirs, float):
        assert ours == pytest.approx(theirs, rel=rtol, abs=atol), where
    else:
        assert theirs == ours, where


def run_both(program, rtol: float = 1e-5, atol: float = 1e-6):
    """Run `program(T)` on torch and on tidal.compat; the results must agree."""
    theirs, ours = (plain(program(T)) for T in FRAMEWORKS)
    agree(theirs, ours, program.__name__, rtol, atol)


# -- generative models ----------------------------------------------------------------------------------------------
def vae(T):
    """Reparameterization z = mu + eps * exp(logvar / 2), BCE(sum) + KL, Adam."""
    nn, F = T.nn, T.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = nn.Sequential(nn.Linear(12, 16), nn.ReLU())
            self.mu, self.logvar = nn.Linear(16, 4), nn.Linear(16, 4)
            self.dec = nn.Sequential(nn.Linear(4, 16), nn.Tanh(), nn.Linear(16, 12), nn.Sigmoid())

        def forward(self, x, eps):
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h)
            return self.dec(mu + eps * T.exp(0.5 * logvar)), mu, logvar

    model = VAE()
    init(T, model, 0)
    opt = T.optim.Adam(model.parameters(), lr=1e-2)
    x, eps = T.from_numpy(data((8, 12), 1, 0, 1)), T.from_numpy(data((8, 4), 2))
    losses = []
    for _ in range(4):
        recon, mu, logvar = model(x, eps)
        kld = -0.5 * T.sum(1 + logvar - mu.pow(2) - logvar.exp())
        loss = F.binary_cross_entropy(recon, x, reduction="sum") + kld
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "w": model.dec[2].weight}


def gan(T):
    """Two optimizers, fake.detach() for the discriminator step, BCEWithLogits (and pos_weight)."""
    nn, F = T.nn, T.nn.functional
    G = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 6), nn.Tanh())
    D = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    init(T, G, 7)
    init(T, D, 8)
    opt_g = T.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
    opt_d = T.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()
    real, z = T.from_numpy(data((5, 6), 9)), T.from_numpy(data((5, 4), 10))
    losses = []
    for _ in range(3):
        fake = G(z)
        d_loss = criterion(D(real), T.ones(5, 1)) + criterion(D(fake.detach()), T.zeros(5, 1))
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = criterion(D(fake), T.ones(5, 1))
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        losses += [d_loss.item(), g_loss.item()]
    weighted = F.binary_cross_entropy_with_logits(D(real), T.ones(5, 1) * 0.9, pos_weight=T.tensor([2.0]))
    return {"losses": losses, "weighted": weighted}


@pytest.mark.parametrize("program", [vae, gan], ids=lambda p: p.__name__)
def test_generative_models(program):
    run_both(program, rtol=1e-4, atol=1e-5)


# -- sequence models --------------------------------------------------------------------------------------------------
def seq2seq(T):
    """Bidirectional GRU encoder over a packed batch (enforce_sorted=False), a GRUCell decoder with masked dot
    attention, teacher forcing on every other step, CrossEntropy(ignore_index, label_smoothing), nesterov SGD."""
    nn, F, R = T.nn, T.nn.functional, T.nn.utils.rnn

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(20, 8, padding_idx=0)
            self.rnn = nn.GRU(8, 10, batch_first=True, bidirectional=True)

        def forward(self, x, lengths):
            packed = R.pack_padded_sequence(self.emb(x), lengths, batch_first=True, enforce_sorted=False)
            out, h = self.rnn(packed)
            out, lens = R.pad_packed_sequence(out, batch_first=True, total_length=x.size(1))
            return out, T.cat([h[0], h[1]], dim=1), lens

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.cell, self.out = nn.Embedding(20, 8), nn.GRUCell(28, 20), nn.Linear(20, 20)

        def forward(self, y, h, enc_out, mask):
            scores = T.bmm(enc_out, h.unsqueeze(2)).squeeze(2).masked_fill(~mask, float("-inf"))
            attn = F.softmax(scores, dim=1)
            context = T.bmm(attn.unsqueeze(1), enc_out).squeeze(1)
            h = self.cell(T.cat([self.emb(y), context], 1), h)
            return self.out(h), h, attn

    enc, dec = Encoder(), Decoder()
    init(T, enc, 1)
    init(T, dec, 2)
    src = T.tensor([[3, 4, 5, 6, 0], [7, 8, 0, 0, 0], [9, 10, 11, 0, 0]])
    tgt = T.tensor([[1, 5, 6, 2], [1, 7, 2, 0], [1, 9, 9, 2]])
    params = list(enc.parameters()) + list(dec.parameters())
    opt = T.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True)
    criterion = nn.CrossEntropyLoss(ignore_index=0, label_smoothing=0.1)
    losses = []
    for _ in range(3):
        enc_out, h, lens = enc(src, (src != 0).sum(1))
        mask = T.arange(src.size(1))[None, :] < lens[:, None]
        loss, y, attns = 0, tgt[:, 0], []
        for t in range(1, tgt.size(1)):
            logits, h, attn = dec(y, h, enc_out, mask)
            loss = loss + criterion(logits, tgt[:, t])
            attns.append(attn)
            y = tgt[:, t] if t % 2 == 1 else logits.argmax(1)
        loss = loss / (tgt.size(1) - 1)
        opt.zero_grad()
        loss.backward()
        norm = nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        losses.append(loss.item())
    return {"losses": losses, "norm": norm, "attn": T.stack(attns), "lens": lens}


def lstm_packed(T):
    """pack_sequence / pad_sequence / pad_packed_sequence(padding_value) through a 2-layer LSTM."""
    R = T.nn.utils.rnn
    lstm = T.nn.LSTM(3, 5, num_layers=2)
    init(T, lstm, 3)
    seqs = [T.from_numpy(data((n, 3), n)) for n in (4, 2, 3)]
    packed = R.pack_sequence(seqs, enforce_sorted=False)
    out, (h, c) = lstm(packed)
    unpacked, lens = R.pad_packed_sequence(out, padding_value=-1.0)
    (unpacked.sum() + h.sum()).backward()
    return {"unpacked": unpacked, "lens": lens, "h": h, "c": c, "batch_sizes": packed.batch_sizes,
            "sorted": packed.sorted_indices, "unsorted": packed.unsorted_indices, "grad": lstm.weight_hh_l1.grad,
            "padded_run": lstm(R.pad_sequence(seqs))[0]}


def embedding_bag_classifier(T):
    """nn.EmbeddingBag(mode='mean', padding_idx) with offsets, StepLR, clip_grad_norm_; functional sum/max bags
    and per_sample_weights."""
    nn, F = T.nn, T.nn.functional

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.EmbeddingBag(15, 6, mode="mean", padding_idx=0)
            self.fc = nn.Linear(6, 3)

        def forward(self, text, offsets):
            return self.fc(self.emb(text, offsets))

    model = Classifier()
    init(T, model, 6)
    text, offsets, y = T.tensor([1, 2, 0, 4, 5, 6, 0, 0, 9, 3]), T.tensor([0, 3, 5, 8]), T.tensor([0, 2, 1, 1])
    opt = T.optim.SGD(model.parameters(), lr=4.0)
    sched = T.optim.lr_scheduler.StepLR(opt, 1, gamma=0.1)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = F.cross_entropy(model(text, offsets), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        opt.step()
        sched.step()
        losses.append(loss.item())
    weight = model.emb.weight
    return {"losses": losses, "grad": weight.grad,
            "sum": F.embedding_bag(T.tensor([[1, 0, 2], [0, 0, 3]]), weight, mode="sum", padding_idx=0),
            "max": F.embedding_bag(text, weight, offsets, mode="max"),
            "weighted": F.embedding_bag(text, weight, offsets, mode="sum", per_sample_weights=T.from_numpy(data(10, 7)))}


@pytest.mark.parametrize("program", [seq2seq, lstm_packed, embedding_bag_classifier], ids=lambda p: p.__name__)
def test_sequence_models(program):
    run_both(program, rtol=1e-4, atol=1e-5)


# -- vision training loop -----------------------------------------------------------------------------------------
def resnet_one_cycle(T):
    """Two residual blocks with BatchNorm (train, then eval), SGD with weight decay, clip_grad_value_, OneCycleLR."""
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return F.relu(self.b2(self.c2(F.relu(self.b1(self.c1(x))))) + self.short(x))

    net = nn.Sequential(Block(3, 4, 1), Block(4, 8, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 5))
    init(T, net, 4)
    opt = T.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    sched = T.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=6)
    x, y = T.from_numpy(data((4, 3, 8, 8), 5)), T.tensor([0, 1, 2, 4])
    losses, lrs = [], []
    for _ in range(5):
        net.train()
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_value_(net.parameters(), 0.5)
        opt.step()
        sched.step()
        losses.append(loss.item())
        lrs += [sched.get_last_lr()[0], opt.param_groups[0]["momentum"]]
    net.eval()
    with T.no_grad():
        evaluated = net(x)
    bn = net[1].b1
    return {"losses": losses, "lrs": lrs, "eval": evaluated, "mean": bn.running_mean, "var": bn.running_var,
            "batches": bn.num_batches_tracked}


def test_resnet_one_cycle():
    run_both(resnet_one_cycle, rtol=1e-4, atol=1e-5)


def padding_modes(T):
    """Conv layers with padding='same'/'valid'/numbers and every padding_mode (the non-zero modes pad
    explicitly first: 'same' with an even kernel puts the extra column on the right), and their gradients."""
    nn = T.nn
    x = T.from_numpy(data((2, 4, 9, 8), 60)).requires_grad_()
    layers = [nn.Conv2d(4, 4, 3, padding="same", padding_mode="reflect"),
              nn.Conv2d(4, 2, (4, 3), padding="same", padding_mode="replicate", dilation=(1, 2)),
              nn.Conv2d(4, 2, 3, padding=2, padding_mode="circular"), nn.Conv2d(4, 2, 3, padding="valid"),
              nn.Conv2d(4, 2, 2, padding="same")]
    out = []
    for i, layer in enumerate(layers):
        init(T, layer, 61 + i)
        y = layer(x)
        y.pow(2).sum().backward()
        out += [y, layer.weight.grad, repr(layer)]
    conv1d = nn.Conv1d(4, 2, 4, padding="same", padding_mode="reflect")
    init(T, conv1d, 70)
    return out + [conv1d(x[:, :, 0]), x.grad]


def test_padding_modes():
    run_both(padding_modes, rtol=1e-4, atol=1e-5)


# -- reduced precision ------------------------------------------------------------------------------------------------
def autocast_bfloat16(T):
    """autocast(cpu, bfloat16) around a Linear with a bias: torch's fused addmm adds the bias in float32 and rounds
    once; then a disabled GradScaler steps the optimizer."""
    lin = T.nn.Linear(8, 4)
    init(T, lin, 11)
    x = T.from_numpy(data((3, 8), 12))
    with T.autocast(device_type="cpu", dtype=T.bfloat16):
        y = lin(x)
        batched = lin(x.view(3, 1, 8).expand(3, 2, 8).contiguous())
        product = T.mm(x, x.t())
        probs = T.softmax(y, -1)
    scaler = T.amp.GradScaler("cpu", enabled=False)
    scaler.scale(y.float().pow(2).mean()).backward()
    opt = T.optim.SGD(lin.parameters(), lr=0.1)
    scaler.step(opt)
    scaler.update()
    return {"y": y, "batched": batched, "product": product, "probs": probs, "w": lin.weight,
            "enabled": scaler.is_enabled()}


def bfloat16_linear(T):
    """F.linear on bfloat16 and float16 inputs of 1, 2 and 3 dims: one rounding, torch's node names."""
    out = {}
    for dtype in (T.bfloat16, T.float16):
        w, b = T.from_numpy(data((5, 7), 13)).to(dtype), T.from_numpy(data(5, 14)).to(dtype)
        for shape in ((7,), (4, 7), (2, 3, 7)):
            x = T.from_numpy(data(shape, 15)).to(dtype).requires_grad_()
            y = T.nn.functional.linear(x, w, b)
            y.float().sum().backward()
            out[f"{str(dtype)[-8:]}{shape}"] = [y, type(y.grad_fn).__name__, x.grad]
        strided = T.from_numpy(data((7, 4), 16)).to(dtype).t()  # 2-D: addmm all the same
        out[f"{str(dtype)[-8:]}.t"] = T.nn.functional.linear(strided, w, b)
        strided = T.from_numpy(data((2, 7, 4), 16)).to(dtype).transpose(1, 2)  # torch adds the bias after
        out[f"{str(dtype)[-8:]}.3t"] = T.nn.functional.linear(strided, w, b)
    return out


def half_products(T):
    """float16/bfloat16 products accumulate in float32 and round once (NumPy's float16 matmul would not)."""
    out = {}
    for dtype in (T.float16, T.bfloat16):
        a, b = T.from_numpy(data((6, 40), 1)).to(dtype), T.from_numpy(data((40, 5), 2)).to(dtype)
        v, batch = T.from_numpy(data(40, 3)).to(dtype), T.from_numpy(data((3, 6, 40), 4)).to(dtype)
        out[str(dtype)[-8:]] = [a @ b, a @ v, v @ v, T.bmm(batch, b.expand(3, 40, 5)), batch @ b,
                                T.addmm(b[0], a, b), T.einsum("ij,jk->ik", a, b)]
    return out


@pytest.mark.parametrize("program", [autocast_bfloat16, bfloat16_linear, half_products], ids=lambda p: p.__name__)
def test_reduced_precision(program):
    run_both(program, rtol=1e-6, atol=0)  # a bfloat16 ulp is 4e-3: one rounding more shows


# -- losses of distillation and contrastive learning --------------------------------------------------------------------
def distillation(T):
    """KLDivLoss(batchmean, log_target) with a temperature, kl_div with probabilities (and 'mean': it warns)."""
    F = T.nn.functional
    student = T.from_numpy(data((4, 5), 13)).requires_grad_()
    teacher = T.from_numpy(data((4, 5), 14))
    temp = 3.0
    kl = T.nn.KLDivLoss(reduction="batchmean", log_target=True)
    soft = kl(F.log_softmax(student / temp, 1), F.log_softmax(teacher / temp, 1)) * temp ** 2
    hard = F.kl_div(F.log_softmax(student, 1), F.softmax(teacher, 1), reduction="batchmean")
    (soft + hard).backward()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mean = F.kl_div(F.log_softmax(student, 1), F.softmax(teacher, 1))
    return {"soft": soft, "hard": hard, "mean": mean, "grad": student.grad,
            "none": F.kl_div(F.log_softmax(student, 1), F.softmax(teacher, 1), reduction="none"),
            "warnings": [str(w.message) for w in caught]}


def contrastive(T):
    """InfoNCE over normalized embeddings, cdist (p=2, p=1), logsumexp, triplet/cosine-embedding losses."""
    F = T.nn.functional
    a = T.from_numpy(data((6, 8), 15)).requires_grad_()
    b = T.from_numpy(data((6, 8), 16)).requires_grad_()
    logits = F.normalize(a, dim=1) @ F.normalize(b, dim=1).T / 0.1
    labels = T.arange(6)
    info_nce = (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2
    d2, d1 = T.cdist(a, b), T.cdist(a, b, p=1)
    lse = T.logsumexp(-d2, dim=1)
    triplet = F.triplet_margin_loss(a, b, b.flip(0), margin=0.5)
    cosine = F.cosine_embedding_loss(a, b, T.tensor([1, -1, 1, -1, 1, -1]))
    (info_nce + d2.mean() + d1.mean() + lse.sum() + triplet + cosine).backward()
    return {"info_nce": info_nce, "d2": d2, "lse": lse, "triplet": triplet, "cosine": cosine,
            "similarity": F.cosine_similarity(a, b), "pairwise": F.pairwise_distance(a, b), "ga": a.grad,
            "gb": b.grad}


@pytest.mark.parametrize("program", [distillation, contrastive], ids=lambda p: p.__name__)
def test_losses(program):
    run_both(program, rtol=1e-5, atol=1e-6)


# -- autograd extensions and module hooks --------------------------------------------------------------------------------
def custom_function(T):
    """ctx.save_for_backward, a non-tensor attribute on ctx, needs_input_grad deciding which grads to compute."""
    class Clamp(T.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, low):
            ctx.save_for_backward(x, w)
            ctx.low = low
            return (x * w).clamp(min=low)

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            mask = (x * w) > ctx.low
            gx = g * w * mask if ctx.needs_input_grad[0] else None
            gw = (g * x * mask).sum(0) if ctx.needs_input_grad[1] else None
            return gx, gw, None

    x = T.from_numpy(data((4, 3), 20)).requires_grad_()
    w = T.from_numpy(data(3, 21))
    w2 = w.clone().requires_grad_()
    y = Clamp.apply(x, w, 0.1)
    y.sum().backward()
    (Clamp.apply(x.detach().clone(), w2, -0.2) ** 2).sum().backward()
    return {"y": y, "gx": x.grad, "gw": w2.grad, "node": type(y.grad_fn).__name__, "w_grad": w.grad is None}


def module_hooks(T):
    """Forward hooks (one replacing the output), full backward hooks, a pre-hook, a tensor hook, with_kwargs."""
    nn = T.nn
    model = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2))
    init(T, model, 22)
    acts, grads, pre, kwargs_seen, tensor_grads = {}, {}, [], [], []

    def keep_backward(name):
        def hook(module, grad_in, grad_out):
            grads[name] = [None if g is None else g.clone() for g in grad_in] + [g.clone() for g in grad_out]
        return hook

    handles = [model[0].register_forward_hook(lambda m, i, o: acts.setdefault("l0", o.detach().clone())),
               model[2].register_full_backward_hook(keep_backward("l2")),
               model[1].register_full_backward_hook(keep_backward("relu")),
               model[0].register_forward_pre_hook(lambda m, i: pre.append(i[0].shape[0])),
               model[2].register_forward_hook(lambda m, i, o: o * 2)]
    x = T.from_numpy(data((3, 4), 23)).requires_grad_()
    hooked = model(x)
    hooked.sum().backward()
    for handle in handles:
        handle.remove()
    plain_out = model(x)
    x.register_hook(lambda g: tensor_grads.append(g.clone()))
    model(x).sum().backward()
    handle = model[0].register_forward_hook(lambda m, a, kw, o: kwargs_seen.append(sorted(kw)), with_kwargs=True)
    model[0](x)
    handle.remove()
    return {"acts": acts, "grads": grads, "pre": pre, "hooked": hooked, "plain": plain_out,
            "tensor_grads": tensor_grads, "kwargs": kwargs_seen}


@pytest.mark.parametrize("program", [custom_function, module_hooks], ids=lambda p: p.__name__)
def test_autograd_extensions(program):
    run_both(program)


# -- checkpoints, evaluation, data handling ----------------------------------------------------------------------------
def checkpoint_round_trip(T):
    """torch.save of model/optimizer/scheduler state to BytesIO mid-training, torch.load(weights_only=True) into
    fresh objects; both copies then train on identically."""
    nn, F = T.nn, T.nn.functional

    def make():
        m = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 3))
        init(T, m, 24)
        return m

    model = make()
    opt = T.optim.Adam(model.parameters(), lr=0.01, amsgrad=True)
    sched = T.optim.lr_scheduler.ExponentialLR(opt, 0.9)
    x, y = T.from_numpy(data((8, 4), 25)), T.tensor([0, 1, 2, 0, 1, 2, 0, 1])

    def step(m, o, s):
        loss = F.cross_entropy(m(x), y)
        o.zero_grad()
        loss.backward()
        o.step()
        s.step()
        return loss.item()

    before = [step(model, opt, sched) for _ in range(3)]
    buffer = io.BytesIO()
    T.save({"model": model.state_dict(), "opt": opt.state_dict(), "sched": sched.state_dict(), "epoch": 3}, buffer)
    buffer.seek(0)
    ck = T.load(buffer, weights_only=True)
    model2 = make()
    result = model2.load_state_dict(ck["model"])
    opt2 = T.optim.Adam(model2.parameters(), lr=0.5, amsgrad=True)
    opt2.load_state_dict(ck["opt"])
    sched2 = T.optim.lr_scheduler.ExponentialLR(opt2, 0.9)
    sched2.load_state_dict(ck["sched"])
    original, loaded = [step(model, opt, sched) for _ in range(2)], [step(model2, opt2, sched2) for _ in range(2)]
    state = opt2.state_dict()
    return {"before": before, "original": original, "loaded": loaded, "keys": list(ck["model"]),
            "result": str(result), "state_keys": sorted(state["state"][0]), "step": state["state"][0]["step"],
            "group_keys": sorted(state["param_groups"][0]), "lr": opt2.param_groups[0]["lr"],
            "batches": ck["model"]["1.num_batches_tracked"], "epoch": ck["epoch"]}


def evaluation(T):
    """eval() + inference_mode: argmax accuracy, top-k accuracy (imagenet's accuracy()), softmax confidence."""
    model = T.nn.Linear(6, 5)
    init(T, model, 26)
    x, y = T.from_numpy(data((10, 6), 27)), T.tensor([0, 1, 2, 3, 4, 0, 1, 2, 3, 4])
    model.eval()
    with T.inference_mode():
        out = model(x)
        correct = (out.argmax(dim=1) == y).sum().item()
        _, top3 = out.topk(3, dim=1, largest=True, sorted=True)
        top3_rate = (top3 == y.view(-1, 1).expand_as(top3)).any(dim=1).float().mean().item()
        inference = out.is_inference()
    with T.no_grad():
        probs = T.softmax(model(x), -1)
        conf, idx = probs.max(1)
        entropy = -(probs * probs.log()).sum(1)
    pred = out.topk(3, 1, True, True)[1].t()
    hits = pred.eq(y.view(1, -1).expand_as(pred))
    rates = [hits[:k].reshape(-1).float().sum(0, keepdim=True).mul_(100.0 / 10) for k in (1, 3)]
    return {"correct": correct, "top3": top3_rate, "inference": inference, "conf": conf, "idx": idx,
            "entropy": entropy, "rates": rates, "requires_grad": probs.requires_grad}


def augmentation(T):
    """In-place writes through views: cutout, a channel view scaled in place, strided clamp_, normalization,
    writes through a transpose and a diagonal."""
    x = T.from_numpy(data((2, 3, 6, 6), 28, 0, 1)).clone()
    x[:, :, 1:3, 2:4] = 0.0
    channel = x[:, 0]
    channel.mul_(0.5).add_(0.25)
    x[1, :, ::2].clamp_(0.2, 0.8)
    x.sub_(T.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)).div_(T.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1))
    flipped = T.flip(x, dims=[3])
    padded = T.nn.functional.pad(x[..., 1:5, 1:5].contiguous(), (1, 1, 1, 1), mode="reflect")
    x.transpose(2, 3)[..., 0] = -1
    x.add_(T.from_numpy(data((2, 3, 6, 6), 29)) * 0.01)
    x.diagonal(dim1=-2, dim2=-1).fill_(7)
    return {"x": x, "flipped": flipped, "padded": padded, "channel": channel}


def integer_bookkeeping(T):
    """Masks, cumsum of bool, bincount (weights, minlength), unique (inverse, counts), scatter_add_ histograms,
    nonzero/where, integer division and remainder signs, searchsorted/bucketize, mode/kthvalue/cummax."""
    lab = T.tensor([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])
    mask = lab > 3
    values, inverse, counts = T.unique(lab, return_inverse=True, return_counts=True)
    runs, run_counts = T.unique_consecutive(T.tensor([1, 1, 2, 2, 3, 1, 1]), return_counts=True)
    ordered, order = lab.sort(stable=True)
    return {"cumsum": mask.cumsum(0), "bincount": T.bincount(lab),
            "weighted": T.bincount(lab, weights=T.arange(11, dtype=T.float32), minlength=12),
            "unique": [values, inverse, counts], "runs": [runs, run_counts],
            "hist": T.zeros(10, dtype=T.long).scatter_add_(0, lab, T.ones_like(lab)),
            "hist2": T.zeros(3, 10).scatter_add_(1, lab.view(1, -1).expand(3, -1), T.ones(3, 11)),
            "nonzero": T.nonzero(mask), "as_tuple": list(mask.nonzero(as_tuple=True)),
            "where": T.where(mask, lab, -lab), "where1": list(T.where(mask)),
            "any_all": [mask.any().item(), mask.all().item(), (~mask).sum().item(), mask.float().mean().item()],
            "sorted": [ordered, order], "bits": (lab & 3) | (lab ^ 1) << 1,
            "division": [lab // 2, lab % 4, (-lab) // 3, (-lab) % 3, lab / 2,
                         T.div(lab, 4, rounding_mode="floor"), T.div(-lab, 4, rounding_mode="trunc")],
            "masked": T.masked_select(lab, mask), "count": T.count_nonzero(lab.view(1, 11) > 2, dim=1),
            "cummax": list(T.cummax(lab, 0)), "mode": list(T.mode(lab)), "kth": list(T.kthvalue(lab, 3)),
            "histc": T.histc(lab.float(), bins=5, min=0, max=10), "bucket": T.bucketize(lab, T.tensor([2, 4, 6])),
            "search": T.searchsorted(T.tensor([1, 3, 5, 7]), lab, right=True), "eq": T.eq(lab, 5).int().sum(),
            "sum_dtype": str(mask.sum().dtype)}


def gradient_accumulation(T):
    """Loss / accum backward over micro-batches, clip and step every accum steps, centered RMSprop."""
    nn, F = T.nn, T.nn.functional
    model = nn.Sequential(nn.Linear(5, 4), nn.GELU(), nn.LayerNorm(4), nn.Linear(4, 1))
    init(T, model, 30)
    opt = T.optim.RMSprop(model.parameters(), lr=0.01, momentum=0.5, centered=True)
    x, y = T.from_numpy(data((12, 5), 31)), T.from_numpy(data((12, 1), 32))
    accum, losses = 3, []
    opt.zero_grad(set_to_none=True)
    for i in range(6):
        rows = slice((i % 4) * 3, (i % 4) * 3 + 3)
        loss = F.smooth_l1_loss(model(x[rows]), y[rows], beta=0.5) / accum
        loss.backward()
        if (i + 1) % accum == 0:
            nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
            opt.step()
            opt.zero_grad()
        losses.append(loss.item())
    return {"losses": losses, "w": model[3].weight, "cleared": [p.grad is None for p in model.parameters()]}


@pytest.mark.parametrize("program", [checkpoint_round_trip, evaluation, augmentation, integer_bookkeeping,
                                     gradient_accumulation], ids=lambda p: p.__name__)
def test_training_utilities(program):
    run_both(program, rtol=1e-5, atol=1e-6)


# -- schedulers: get_lr() outside step warns, state dicts hold torch's keys --------------------------------------------
def scheduler_surface(T):
    """Every scheduler stepped a few times, then a program's `get_lr()` (torch's warning, torch's quirky values);
    the state dict's keys in torch's order; a program's own scheduler subclass calls get_lr silently."""
    L = T.optim.lr_scheduler

    def opt():
        return T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=0.1, momentum=0.9)

    makers = {"lambda": lambda: L.LambdaLR(opt(), lambda e: 0.9 ** e),
              "multiplicative": lambda: L.MultiplicativeLR(opt(), lambda e: 0.9),
              "step": lambda: L.StepLR(opt(), 2), "multistep": lambda: L.MultiStepLR(opt(), [1, 3]),
              "constant": lambda: L.ConstantLR(opt()), "linear": lambda: L.LinearLR(opt()),
              "exponential": lambda: L.ExponentialLR(opt(), 0.9), "polynomial": lambda: L.PolynomialLR(opt()),
              "cosine": lambda: L.CosineAnnealingLR(opt(), 5), "plateau": lambda: L.ReduceLROnPlateau(opt()),
              "onecycle": lambda: L.OneCycleLR(opt(), 1.0, total_steps=10),
              "cyclic": lambda: L.CyclicLR(opt(), 0.01, 0.1),
              "restarts": lambda: L.CosineAnnealingWarmRestarts(opt(), 3),
              "swa": lambda: T.optim.swa_utils.SWALR(opt(), 0.05)}
    out = {}
    for name, make in makers.items():
        sched = make()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(3):
                sched.optimizer.step()
                sched.step(1.0) if name == "plateau" else sched.step()
            lr = sched.get_lr() if hasattr(sched, "get_lr") and name != "plateau" else None
        out[name] = [list(sched.state_dict()), [str(w.message) for w in caught], lr]

    class Halving(L.LRScheduler):
        def get_lr(self):
            return [group["lr"] * 0.5 for group in self.optimizer.param_groups]

    own = Halving(opt())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out["own"] = own.get_lr()
    return out


def test_scheduler_surface():
    run_both(scheduler_surface)


# -- mistakes a program makes: torch's error type and message at the same call ----------------------------------------
MISTAKES = {
    "strings": lambda T: T.tensor(["a", "b"]),
    "nested strings": lambda T: T.tensor([["a"], ["b"]]),
    "string after a number": lambda T: T.tensor([1, "a"]),
    "bytes": lambda T: T.tensor([b"x"]),
    "lstm state as a 1-tuple": lambda T: T.nn.LSTM(4, 3)(T.ones(2, 3, 4), (T.zeros(1, 3, 3),)),
    "tensor.cuda()": lambda T: T.ones(2).cuda(),
    "tensor.to('cuda')": lambda T: T.ones(2).to("cuda"),
    "module.cuda()": lambda T: T.nn.Linear(2, 2).cuda(),
    "tensor(data, device='cuda')": lambda T: T.tensor([1.0], device="cuda"),
    "matmul shapes": lambda T: T.ones(2, 3) @ T.ones(4, 5),
    "cat shapes": lambda T: T.cat([T.ones(2, 3), T.ones(2, 4)]),
    "view of a transpose": lambda T: T.ones(2, 3).t().view(6),
    "float index": lambda T: T.ones(5)[T.tensor([0.0, 1.0])],
    "object array": lambda T: T.from_numpy(np.array([1, "a"], dtype=object)),
    "string array": lambda T: T.tensor(np.array(["a"])),
    "conv2d double input, float bias": lambda T: T.nn.Conv2d(1, 1, 2)(T.ones(1, 1, 3, 3, dtype=T.float64)),
    "conv2d float input, double layer": lambda T: T.nn.Conv2d(1, 1, 2).double()(T.ones(1, 1, 3, 3)),
    "conv2d no bias, double input": lambda T: T.nn.functional.conv2d(T.ones(1, 1, 3, 3, dtype=T.float64),
                                                                     T.ones(1, 1, 2, 2)),
    "conv2d batch (MKLDNN path)": lambda T: T.nn.functional.conv2d(T.ones(2, 1, 3, 3), T.ones(1, 1, 2, 2).double()),
    "conv2d bfloat16 weight (MKLDNN path)": lambda T: T.nn.functional.conv2d(T.ones(2, 1, 3, 3),
                                                                             T.ones(1, 1, 2, 2).bfloat16()),
    "conv2d long input": lambda T: T.nn.Conv2d(1, 1, 2)(T.ones(1, 1, 3, 3, dtype=T.long)),
    "conv_transpose2d int32": lambda T: T.nn.functional.conv_transpose2d(T.ones(1, 1, 3, 3, dtype=T.int32),
                                                                         T.ones(1, 1, 2, 2, dtype=T.int32)),
    "conv_transpose2d double": lambda T: T.nn.ConvTranspose2d(1, 1, 2)(T.ones(1, 1, 3, 3, dtype=T.float64)),
    "cross_entropy double weight": lambda T: T.nn.functional.cross_entropy(T.ones(3, 4), T.tensor([0, 1, 2]),
                                                                           weight=T.ones(4, dtype=T.float64)),
    "nll_loss float weight": lambda T: T.nn.functional.nll_loss(T.ones(3, 4, dtype=T.float64), T.tensor([0, 1, 2]),
                                                                weight=T.ones(4)),
    "GradScaler.step before scale": lambda T: T.amp.GradScaler("cpu").step(T.optim.SGD([T.nn.Parameter(T.ones(1))],
                                                                                   lr=0.1)),
    "GradScaler.update before scale": lambda T: T.amp.GradScaler("cpu").update(),
    "torch.load of a whole module": lambda T: _load_whole_module(T),
    "float targets": lambda T: T.nn.functional.cross_entropy(T.ones(3, 4), T.tensor([0.0, 1.0, 2.0])),
}


def _load_whole_module(T):
    buffer = io.BytesIO()
    T.save(T.nn.Linear(2, 2), buffer)
    buffer.seek(0)
    return T.load(buffer)  # weights_only by default since torch 2.6: the class is not allow-listed


def _raised(T, mistake) -> tuple:
    try:
        mistake(T)
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return type(exc).__name__, str(exc).replace("tidal.", "torch.")  # (the namespace tidal runs under)
    return None, None


@pytest.mark.parametrize("name", list(MISTAKES))
def test_mistakes_raise_as_torch(name):
    theirs, ours = (_raised(T, MISTAKES[name]) for T in FRAMEWORKS)
    assert theirs[0] is not None
    assert ours == theirs


def test_full_backward_hook_warning_points_at_the_callers_line():
    """The full backward hook's warning (no input requires grad) points at the program's backward() line."""
    model = tidal_torch.nn.Linear(3, 2)
    model.register_full_backward_hook(lambda m, gi, go: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model(tidal_torch.ones(1, 3)).sum().backward()
    assert [w.filename for w in caught] == [__file__]


def test_format_of_a_0d_tensor_is_its_number():
    """f"{loss}" prints the number in torch (Tensor.__format__ of a plain 0-d tensor); a Parameter or a 1-d tensor
    formats as object does."""
    def formats(T):
        x, p = T.tensor(0.5, requires_grad=True), T.nn.Parameter(T.tensor(2.0))
        out = [f"{x}", f"{x:.3f}", f"{x * 2}", f"{T.tensor(3)}", f"{T.tensor(3):04d}", f"{T.tensor(True)}",
               "{:>8}".format(T.tensor(1.5)), f"{T.tensor([1.0, 2.0])}", f"{p}"]
        for bad in (lambda: f"{p:.2f}", lambda: f"{T.ones(2):.2f}"):
            try:
                out.append(bad())
            except TypeError as exc:
                out.append(str(exc))
        return out
    assert formats(tidal_torch) == formats(real_torch)


@pytest.mark.parametrize("make", [lambda T: T.ones(2, device="cuda"), lambda T: T.nn.Linear(2, 2, device="cuda")],
                         ids=["ones", "Linear"])
def test_creation_on_cuda_raises_as_a_cpu_only_torch(make):
    theirs, ours = (_raised(T, make) for T in FRAMEWORKS)
    assert theirs[0] is not None
    assert ours == theirs


def optimizer_state_dicts(T):
    """What a program printing a checkpoint sees: the step count is a 0-d float32 tensor in torch's state dict
    (`sd["state"][0]["step"].item()` works), for every optimizer that counts steps."""
    out = {}
    for name in ("Adam", "AdamW", "NAdam", "RAdam", "Adamax", "ASGD", "RMSprop", "Rprop", "Adagrad", "Adadelta",
                 "SGD"):
        p = T.nn.Parameter(T.ones(2, 2))
        opt = getattr(T.optim, name)([p], lr=0.1, **({"momentum": 0.9} if name == "SGD" else {}))
        (p * p).sum().backward()
        opt.step()
        state = opt.state_dict()["state"][0]
        out[name] = [sorted(state), state.get("step"), state["step"].item() if "step" in state else None]
    return out


def test_optimizer_state_dicts():
    run_both(optimizer_state_dicts)


def scheduler_step_order(T):
    """torch's warnings on a scheduler's first step: stepped before the optimizer (a common slip, and what a skipped
    GradScaler step shows), or after the program replaced optimizer.step; none in the right order."""
    L = T.optim.lr_scheduler
    makers = {"step": lambda o: L.StepLR(o, 2), "onecycle": lambda o: L.OneCycleLR(o, 1.0, total_steps=10),
              "restarts": lambda o: L.CosineAnnealingWarmRestarts(o, 3),
              "chained": lambda o: L.ChainedScheduler([L.StepLR(o, 2), L.ExponentialLR(o, 0.9)])}
    out = {}
    for order in ("wrong", "right", "replaced"):
        for name, make in makers.items():
            opt = T.optim.SGD([T.nn.Parameter(T.ones(1))], lr=0.1, momentum=0.9)
            sched = make(opt)
            if order == "replaced":
                opt.step = lambda *args, **kwargs: None
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for _ in range(3):
                    if order != "wrong":
                        opt.step()
                    sched.step()
                    if order == "wrong":
                        opt.step()
            out[f"{order} {name}"] = [[str(w.message) for w in caught], opt.param_groups[0]["lr"],
                                      [w.filename == __file__ for w in caught]]
    return out


def test_scheduler_step_order():
    run_both(scheduler_step_order)


# -- warnings a program meets: torch's category and words (C++ warnings' "Triggered internally at" note aside) -----
WARNING_CALLS = {
    "autocast to float64": lambda T: T.autocast("cpu", dtype=T.float64).__enter__().__exit__(None, None, None),
    "F.upsample": lambda T: T.nn.functional.upsample(T.ones(1, 1, 2, 2), scale_factor=2),
    "F.upsample_nearest": lambda T: T.nn.functional.upsample_nearest(T.ones(1, 1, 2, 2), scale_factor=2),
    "F.upsample_bilinear": lambda T: T.nn.functional.upsample_bilinear(T.ones(1, 1, 2, 2), scale_factor=2),
    "weight_norm": lambda T: T.nn.utils.weight_norm(T.nn.Linear(2, 2)),
    "stft(return_complex=False)": lambda T: T.stft(T.ones(64), 16, window=T.ones(16), return_complex=False),
    "torch.lu": lambda T: T.lu(T.eye(2)),
    "torch.range": lambda T: T.range(0, 2),
    "softmax without dim": lambda T: T.nn.functional.softmax(T.ones(2, 3)),
    "tensor(tensor)": lambda T: T.tensor(T.ones(2)),
    "size_average": lambda T: T.nn.MSELoss(size_average=False),
    "torch.triangular_solve": lambda T: T.triangular_solve(T.eye(2), T.eye(2)),
    "torch.lu_solve": lambda T: T.lu_solve(T.ones(2, 1), *T.linalg.lu_factor(T.eye(2))),
}


def _warned(T, call) -> list:
    always = T.is_warn_always_enabled()
    T.set_warn_always(True)  # torch's deprecation warnings fire once per process otherwise (an earlier test's call)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call(T)
    finally:
        T.set_warn_always(always)
    # (tidal names its own namespace unless run by `python -m tidal.compat`)
    return [(w.category.__name__, str(w.message).split(" (Triggered internally at ")[0].replace("tidal.", "torch."))
            for w in caught]


@pytest.mark.parametrize("name", list(WARNING_CALLS))
def test_warnings_as_torch(name):
    theirs, ours = (_warned(T, WARNING_CALLS[name]) for T in FRAMEWORKS)
    assert theirs
    assert ours == theirs


def test_autocast_with_an_unsupported_dtype_is_off():
    """torch disables CPU autocast for a dtype other than bfloat16/float16 (tidal ran matmuls in float64)."""
    def program(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with T.autocast("cpu", dtype=T.float64):
                return [str(T.mm(T.ones(2, 2), T.ones(2, 2)).dtype), T.is_autocast_enabled("cpu")]
    run_both(program)


# -- what print(loss) and print(output) show: torch's grad_fn names ------------------------------------------------
def grad_fn_names(T):
    """The node a program prints with a result (`tensor(0.69, grad_fn=<DivBackward1>)`): losses with probability
    targets, pools that torch runs through others (1-d pools through 2-d ones and a squeeze, adaptive averages
    to one element as a mean), instance norm's view, and common ops that already agreed."""
    F = T.nn.functional
    x = T.from_numpy(data((4, 6), 1)).requires_grad_()
    y, probs = T.tensor([0, 1, 2, 3]), T.softmax(T.from_numpy(data((4, 6), 2)), 1)
    seq, img, vol = (T.ones(*shape, requires_grad=True) for shape in ((2, 3, 8), (2, 3, 4, 4), (2, 3, 4, 4, 4)))
    results = {
        "ce": F.cross_entropy(x, y), "ce soft": F.cross_entropy(x, probs), "ce soft sum": F.cross_entropy(x, probs, reduction="sum"),
        "ce soft smoothed": F.cross_entropy(x, probs, label_smoothing=0.1), "mse": F.mse_loss(x, probs),
        "max_pool1d": F.max_pool1d(seq, 2), "max_pool1d indices": F.max_pool1d(seq, 2, return_indices=True)[0],
        "avg_pool1d": F.avg_pool1d(seq, 2), "adaptive_avg_pool1d": T.nn.AdaptiveAvgPool1d(1)(seq),
        "adaptive_max_pool1d": F.adaptive_max_pool1d(seq, 2), "adaptive_avg_pool2d 1": T.nn.AdaptiveAvgPool2d((1, 1))(img),
        "adaptive_avg_pool2d 2": F.adaptive_avg_pool2d(img, 2), "adaptive_avg_pool3d 1": F.adaptive_avg_pool3d(vol, 1),
        "adaptive_avg_pool3d 2": F.adaptive_avg_pool3d(vol, 2), "avg_pool3d": F.avg_pool3d(vol, 2),
        "max_pool2d": F.max_pool2d(img, 2), "instance_norm": T.nn.InstanceNorm1d(3, affine=True)(seq),
        "instance_norm eval": F.instance_norm(seq, T.zeros(3), T.ones(3), use_input_stats=False),
        "linear": T.nn.Linear(6, 2)(x), "relu": F.relu(x), "mean": x.mean(), "view": x.view(-1),
    }
    return {k: type(v.grad_fn).__name__ for k, v in results.items()}


def test_grad_fn_names():
    run_both(grad_fn_names)


# -- operands a Tensor operator does not take: NotImplemented as torch, then Python's own answer ----------------------
OPERAND_CASES = ["x == None", "x != None", "x == 'a'", "x == [1.0, 2.0]", "None == x", "x in [None, x]",
                 "x in [None, 1]", "x + 'a'", "'a' + x", "x * None", "None * x", "x < None", "x + [1.0, 2.0]",
                 "[1.0, 2.0] + x", "x / 'a'", "x ** None", "x & None", "x // None", "x % None", "x << None",
                 "x + {}"]
ARRAY_CASES = ["x + np.ones(2)", "x - np.ones((3, 1))", "x @ np.ones(2)", "x == np.array([1.0, 3.0])",
               "np.array([1.0, 3.0]) == x", "x > np.ones(2)", "np.sin(x)", "np.maximum(x, 0.5)", "np.isnan(x)"]


def _evaluated(T, expression: str) -> str:
    x = T.ones(2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch's __array_wrap__ lacks NumPy 2's arguments)
            result = eval(expression, {"x": x, "np": np})
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return f"{type(exc).__name__}: {exc}".replace("torch._C.TensorBase", "Tensor")
    return f"{type(result).__name__} {result!r}".replace("tidal.compat", "torch").replace("tidal.", "torch.")


@pytest.mark.parametrize("expression", ["x @ None", "None @ x", "x @ 'a'", "np.float32(2) * x", "x * np.int64(3)"])
def test_operands_that_agree(expression):
    assert _evaluated(tidal_torch, expression) == _evaluated(real_torch, expression)


@pytest.mark.parametrize("expression", OPERAND_CASES)
def test_operator_operands_as_torch(expression):
    assert _evaluated(tidal_torch, expression) == _evaluated(real_torch, expression)


@pytest.mark.parametrize("expression", ARRAY_CASES)
def test_numpy_operands_as_torch(expression):
    assert _evaluated(tidal_torch, expression) == _evaluated(real_torch, expression)


def test_deepcopy_as_torch():
    """copy.deepcopy refuses a non-leaf tensor (torch's RuntimeError: a module holding a computed tensor) and
    takes a leaf's .grad along."""
    import copy

    def program(T):
        x = T.ones(2, requires_grad=True)
        out = []
        for t in (x * 2, x[0], x.detach()):
            try:
                out.append(copy.deepcopy(t).requires_grad)
            except RuntimeError as exc:
                out.append(str(exc))
        (x * 3).sum().backward()
        return out + [copy.deepcopy(x).grad]
    run_both(program)


def saturated_bce(T):
    """BCELoss after a saturated sigmoid (x == 1.0 or 0.0 exactly, as in GAN training): torch's log clamp at -100
    and its gradient formula (x - t) / max(x (1 - x), 1e-12) keep everything finite; every reduction, with a
    weight, and the target's gradient (torch's -logit(x))."""
    F = T.nn.functional
    out = []
    for red in ("mean", "sum", "none"):
        for weight in (None, T.tensor([2.0] * 6)):
            x = T.tensor([0.0, 1.0, 1.0, 0.5, 1e-8, 1 - 1e-7], requires_grad=True)
            t = T.tensor([1.0, 0.0, 1.0, 0.3, 0.0, 1.0], requires_grad=True)
            loss = F.binary_cross_entropy(x, t, weight=weight, reduction=red)
            out.append([loss, *T.autograd.grad(loss.sum(), (x, t)), type(loss.grad_fn).__name__])
    logits = T.tensor([20.0, -20.0, 0.5], requires_grad=True)
    loss = T.nn.BCELoss()(T.sigmoid(logits), T.tensor([1.0, 0.0, 1.0]))
    loss.backward()
    return out + [loss, logits.grad]


def test_saturated_bce():
    run_both(saturated_bce, rtol=1e-6, atol=0)


# -- gradients at the edges: ties, bounds, zeros ------------------------------------------------------------------
def _edge_grad(T, fn, values):
    x = T.tensor(values, requires_grad=True)
    y = fn(T, x)
    return [y, T.autograd.grad(y.sum(), x)[0], type(y.grad_fn).__name__]


def hardtanh_edges(T):
    """hardtanh/relu6 pass no gradient at their bounds (torch's hardtanh_backward; clamp's passes it there), but
    do at NaN; in place too (nn.ReLU6(inplace=True), MobileNet's)."""
    F = T.nn.functional
    values = [float("nan"), 0.0, 1.0, 6.0, -1.0, 3.0, 0.5, -2.0]
    return [_edge_grad(T, fn, values) for fn in (
        lambda T, x: F.hardtanh(x), lambda T, x: F.relu6(x), lambda T, x: F.hardtanh(x * 1, inplace=True),
        lambda T, x: T.nn.ReLU6(inplace=True)(x * 1), lambda T, x: F.hardtanh(x, -2.0, 0.5))]


def test_hardtanh_edges():
    run_both(hardtanh_edges)


def clamp_edges(T):
    """clamp with one bound passes the whole gradient where the input equals it (maximum would split a tie in
    halves), none at NaN; torch's node names for number and tensor bounds."""
    values, bound = [0.0, 1.0, -1.0, 2.0, float("nan")], T.zeros(5)
    return [_edge_grad(T, fn, values) for fn in (
        lambda T, x: x.clamp(min=0.0), lambda T, x: x.clamp(max=1.0), lambda T, x: x.clamp(0.0, 1.0),
        lambda T, x: x.clamp(min=bound), lambda T, x: T.clamp_min(x, 0.0), lambda T, x: T.clamp_max(x, 1.0),
        lambda T, x: x.clamp_min(bound), lambda T, x: x.clip(min=0.0))]


def test_clamp_edges():
    run_both(clamp_edges)


def pow_edges(T):
    """x ** 0 has no gradient at x = 0 (torch's pow_backward; 0 * 0 ** -1 was NaN), 0 ** e none for e >= 0,
    a number base (0.0 ** e crashed), atan2 at the origin."""
    e = [0.0, 0.5, -1.0, 2.0]
    out = [_edge_grad(T, fn, [0.0, 2.0, -1.5]) for fn in (
        lambda T, x: x ** 0, lambda T, x: x ** T.tensor([0.0, 0.0, 2.0]), lambda T, x: x ** 3)]
    out += [_edge_grad(T, fn, e) for fn in (lambda T, x: 0.0 ** x, lambda T, x: 2.0 ** x,
                                            lambda T, x: T.zeros(4) ** x)]
    a, b = T.tensor([0.0, 1.0, 0.0], requires_grad=True), T.tensor([0.0, 0.0, 2.0], requires_grad=True)
    # (values only: torch names pow's nodes by overload, PowBackward1 for a tensor exponent, 2 for a number base)
    return [o[:2] for o in out] + [T.autograd.grad(T.atan2(a, b).sum(), (a, b))[0]]


def test_pow_edges():
    run_both(pow_edges)


def test_linalg_return_type_names():
    """print(torch.linalg.eigh(A)) shows torch.return_types.linalg_eigh(...) (torch.qr's stays qr)."""
    def names(T):
        A = T.eye(2)
        return [repr(r).split("(")[0].replace("tidal.", "torch.") for r in (
            T.linalg.eigh(A), T.linalg.qr(A), T.linalg.eig(A), T.linalg.svd(A), T.linalg.slogdet(A), T.svd(A),
            T.linalg.lu_factor(A), T.aminmax(A))]
    assert names(tidal_torch) == names(real_torch)


def uint8_resize(T):
    """F.interpolate on uint8 images (torchvision's Resize on uint8 tensors): torch's uint8 kernel, int16
    weights and a rounding shift, saturated per pass (tidal truncated the weights to 0: all-black images)."""
    img = T.from_numpy(np.random.default_rng(0).integers(0, 256, (2, 3, 7, 9)).astype(np.uint8))
    F = T.nn.functional
    return [F.interpolate(img, mode=mode, **size, **kw) for mode, kw in (
        ("bilinear", {}), ("bilinear", dict(align_corners=True)), ("bilinear", dict(antialias=True)),
        ("bicubic", dict(antialias=True)), ("nearest", {}), ("nearest-exact", {}))
        for size in (dict(scale_factor=1.7), dict(size=(4, 5)), dict(size=(14, 3)))] + \
        [F.interpolate(img, size=(4, 5), mode="bicubic")]


def test_uint8_resize():
    run_both(uint8_resize, rtol=0, atol=0)


@pytest.mark.parametrize("mode", ["nearest", "linear", "bilinear", "bicubic", "area"])
@pytest.mark.parametrize("dtype", ["int64", "int8", "uint8", "bool"])
def test_interpolate_of_integers_refused_as_torch(mode, dtype):
    """torch's CPU kernels take uint8 images (nearest, bilinear, bicubic) and refuse other integer dtypes."""
    spatial = {"linear": 1, "bilinear": 2, "bicubic": 2}.get(mode, 2)
    theirs, ours = (_raised(T, lambda T: T.nn.functional.interpolate(
        T.ones((1, 1) + (3,) * spatial, dtype=getattr(T, dtype)), scale_factor=2, mode=mode)) for T in FRAMEWORKS)
    assert ours == theirs


def mixed_dtype_losses(T):
    """Where torch promotes or keeps a dtype: huber keeps the input's (mse and l1 promote), cross entropy with
    probability targets takes a float64 weight, a transposed conv adds a bias of another dtype."""
    F = T.nn.functional
    out = [F.huber_loss(T.ones(3), T.ones(3, dtype=T.float64) * 0.3), F.huber_loss(T.ones(3, dtype=T.float64), T.ones(3)),
           F.mse_loss(T.ones(3), T.ones(3, dtype=T.float64) * 0.3),
           F.cross_entropy(T.ones(3, 4), T.softmax(T.ones(3, 4), 1), weight=T.ones(4, dtype=T.float64)),
           F.conv_transpose2d(T.ones(1, 1, 3, 3, dtype=T.float64), T.ones(1, 1, 2, 2, dtype=T.float64), T.ones(1))]
    return out


def test_mixed_dtype_losses():
    run_both(mixed_dtype_losses)


def encoder_padding_in_eval(T):
    """A TransformerEncoder in eval under no_grad with a right-padded key_padding_mask: torch runs nested tensors,
    so the padded positions hold zeros before the final norm; a program pooling `out.mean(1)` without the mask
    sees them. Training mode, a gradient to record, a left-padded mask or an attention mask keep the plain path."""
    nn = T.nn
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(8))
    init(T, enc, 110)
    x = T.from_numpy(data((2, 4, 8), 111))
    right = T.tensor([[False, False, True, True], [False, False, False, False]])
    left = T.tensor([[True, False, False, False], [False, False, False, False]])
    out = [enc.use_nested_tensor]
    enc.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (torch's prototype warning comes once per process)
        with T.no_grad():
            out += [enc(x, src_key_padding_mask=right).mean(1), enc(x, src_key_padding_mask=left),
                    enc(x, mask=T.zeros(4, 4), src_key_padding_mask=right)]
        out.append(enc(x, src_key_padding_mask=right))  # (parameters require grad: no fast path)
        enc.train()
        with T.no_grad():
            out.append(enc(x, src_key_padding_mask=right))
    return out


def test_encoder_padding_in_eval():
    run_both(encoder_padding_in_eval, rtol=1e-4, atol=1e-5)


def test_reflected_and_pow_node_names():
    """print(1 - cos) shows grad_fn=<RsubBackward1>; 2 / x is torch's reciprocal times 2 (MulBackward0); pow's
    node follows its overload (PowBackward0 number exponent, 1 tensor exponent, 2 number base)."""
    def names(T):
        x, t = T.tensor([1.0, 2.0], requires_grad=True), T.tensor([2.0, 3.0])
        return [type(v.grad_fn).__name__ for v in (1 - x, 1.5 - x, 2 / x, x ** 2, x ** t, T.pow(x, t), x - 1)]
    assert names(tidal_torch) == names(real_torch)
