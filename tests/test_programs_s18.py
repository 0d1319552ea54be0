"""A hunt with real programs after session 18's new autograd records and vmap batching rules (issue 15: the same
answer as torch, or torch's error at the same line): torch.func transforms over small models (per-sample gradients,
ensembling, Jacobians and Hessians, losses under vmap), training loops (packed LSTMs, masked Transformers, a GAN,
bfloat16 autocast, tied weights with gradient accumulation, parametrizations, checkpointing, hooks, custom
Functions), and the errors autograd and torch.func raise for programs they refuse; each run on real torch and on
`tidal.compat` from NumPy-made weights and data."""
import copy

import pytest
import torch as real_torch

import tidal.compat as tidal_torch
from test_programs_s9 import data, init, run_both

FRAMEWORKS = (real_torch, tidal_torch)


def outcome(call) -> tuple:
    """('ok', None) or the exception's type name and message (tidal's namespace printed as torch's)."""
    try:
        call()
        return "ok", None
    except Exception as exc:  # noqa: BLE001 - the comparison is the point
        return type(exc).__name__, str(exc).replace("tidal.", "torch.")


def _mlp(T, seed: int):
    m = T.nn.Sequential(T.nn.Linear(5, 8), T.nn.Tanh(), T.nn.Linear(8, 3))
    init(T, m, seed)
    return m


# -- torch.func over models -----------------------------------------------------------------------------------------
def per_sample_gradients(T):
    """vmap(grad) through functional_call: cross_entropy with label smoothing, and with ignore_index over a sequence."""
    F = T.func
    m = _mlp(T, 1)
    params = {k: v.detach() for k, v in m.named_parameters()}
    x, y = T.from_numpy(data((6, 5), 2)), T.tensor([0, 1, 2, 0, 1, 2])

    def smoothed(p, xb, yb):
        out = F.functional_call(m, p, (xb.unsqueeze(0),))
        return T.nn.functional.cross_entropy(out, yb.unsqueeze(0), label_smoothing=0.1)

    xs, ys = T.from_numpy(data((6, 4, 5), 3)), T.tensor([[0, 1, -100, 2]] * 6)

    def ignoring(p, xb, yb):
        return T.nn.functional.cross_entropy(F.functional_call(m, p, (xb,)), yb, ignore_index=-100)
    return [F.vmap(F.grad(smoothed), in_dims=(None, 0, 0))(params, x, y),
            F.vmap(F.grad_and_value(ignoring), in_dims=(None, 0, 0))(params, xs, ys)]


def cnn_per_sample_gradients(T):
    F, nn = T.func, T.nn
    m = nn.Sequential(nn.Conv2d(1, 3, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3 * 2 * 2, 2))
    init(T, m, 9)
    params = {k: v.detach() for k, v in m.named_parameters()}
    x, y = T.from_numpy(data((4, 1, 6, 6), 10)), T.tensor([0, 1, 1, 0])

    def loss(p, xb, yb):
        return nn.functional.cross_entropy(F.functional_call(m, p, (xb[None],)), yb[None])
    return F.vmap(F.grad(loss), in_dims=(None, 0, 0))(params, x, y)


def ensembling_and_jacobians(T):
    """stack_module_state over three MLPs run by vmap on a meta-device base; jacrev, jacfwd and hessian of one."""
    F = T.func
    models = [_mlp(T, 10 + i) for i in range(3)]
    params, buffers = F.stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")
    x = T.from_numpy(data((4, 5), 3))
    ensemble = F.vmap(lambda p, b, x: F.functional_call(base, (p, b), (x,)), in_dims=(0, 0, None))(params, buffers, x)
    m, v = models[0], T.from_numpy(data((5,), 4))
    return [ensemble, F.jacrev(m)(v), F.jacfwd(m)(v), F.hessian(lambda v: m(v).pow(2).sum())(v)]


def losses_under_vmap(T):
    """Each loss and its per-sample gradient under vmap."""
    F, nnF = T.func, T.nn.functional
    x, t = T.from_numpy(data((4, 6), 6)), T.from_numpy(data((4, 6), 7, 0, 1))
    fns = [lambda a, b: nnF.mse_loss(a, b), lambda a, b: nnF.huber_loss(a, b, delta=0.5),
           lambda a, b: nnF.binary_cross_entropy(a.sigmoid(), b), lambda a, b: nnF.binary_cross_entropy_with_logits(a, b),
           lambda a, b: nnF.layer_norm(a, (6,)).mul(b).sum(), lambda a, b: nnF.smooth_l1_loss(a, b, beta=0.3),
           lambda a, b: nnF.kl_div(a.log_softmax(-1), b, reduction="batchmean"), lambda a, b: T.cat([a, b]).norm(p=3),
           lambda a, b: (a.softmax(-1) * a.clamp(-0.5, 0.5)).norm() + T.where(a > 0, a, b).cumsum(0).sum()]
    return [[F.vmap(f)(x, t), F.vmap(F.grad(f))(x, t)] for f in fns]


@pytest.mark.parametrize("program", [per_sample_gradients, cnn_per_sample_gradients, ensembling_and_jacobians,
                                     losses_under_vmap], ids=lambda p: p.__name__)
def test_func_programs(program):
    run_both(program, rtol=1e-4, atol=1e-6)


# -- training loops -------------------------------------------------------------------------------------------------
def packed_bidirectional_lstm(T):
    """A 2-layer bidirectional LSTM over packed sequences, padded back to a longer total_length; gradient clipping."""
    nn, U = T.nn, T.nn.utils.rnn
    lstm, head = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True), nn.Linear(8, 2)
    init(T, lstm, 1)
    init(T, head, 2)
    opt = T.optim.Adam(list(lstm.parameters()) + list(head.parameters()), lr=0.01)
    x, lengths = T.from_numpy(data((3, 5, 3), 3)), T.tensor([5, 3, 2])
    losses = []
    for _ in range(3):
        opt.zero_grad()
        out, (h, _) = lstm(U.pack_padded_sequence(x, lengths, batch_first=True))
        pad, lens = U.pad_packed_sequence(out, batch_first=True, total_length=6)
        loss = head(pad).pow(2).sum() / lens.sum() + h.sum() * 0.1
        loss.backward()
        nn.utils.clip_grad_norm_(lstm.parameters(), 0.5)
        opt.step()
        losses.append(loss)
    return [losses, list(lstm.parameters()), lens]


def causal_encoder_with_padding(T):
    """A pre-norm TransformerEncoder with a causal mask and a key padding mask, AdamW and cosine annealing."""
    nn = T.nn
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True, norm_first=True)
    enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    init(T, enc, 6)
    x = T.from_numpy(data((2, 5, 8), 7))
    mask = nn.Transformer.generate_square_subsequent_mask(5)
    kpm = T.tensor([[False] * 5, [False, False, False, True, True]])
    opt = T.optim.AdamW(enc.parameters(), lr=1e-2, weight_decay=0.1)
    sched = T.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    losses = []
    for _ in range(3):
        opt.zero_grad()
        loss = enc(x, mask=mask, src_key_padding_mask=kpm, is_causal=True).pow(2).mean()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss)
    return [losses, mask, sched.get_last_lr()]


def tied_embedding_accumulation(T):
    """Weight tying (the decoder's weight is the embedding's), gradients accumulated over two micro-batches,
    clipped by value, centered RMSprop with momentum."""
    nn = T.nn
    emb = nn.Embedding(10, 4)
    init(T, emb, 17)
    lin = nn.Linear(4, 10, bias=False)
    lin.weight = emb.weight
    opt = T.optim.RMSprop(emb.parameters(), lr=0.01, centered=True, momentum=0.5)
    ids = T.tensor([[1, 2, 3], [4, 5, 1]])
    for step in range(4):
        (nn.functional.cross_entropy(lin(emb(ids)).view(-1, 10), ids.view(-1)) / 2).backward()
        if step % 2 == 1:
            nn.utils.clip_grad_value_(emb.parameters(), 0.05)
            opt.step()
            opt.zero_grad(set_to_none=False)
    return [emb.weight, emb.weight.grad, lin.weight is emb.weight]


@pytest.mark.parametrize("program", [packed_bidirectional_lstm, causal_encoder_with_padding,
                                     tied_embedding_accumulation], ids=lambda p: p.__name__)
def test_training_programs(program):
    run_both(program, rtol=1e-4, atol=1e-6)


# -- errors at the same line ----------------------------------------------------------------------------------------
def test_write_into_one_of_several_views_of_a_leaf_refused_as_torch():
    """torch names the multi-view creation (unbind, split) before the leaf: its fix (clone the output) is the one
    that applies."""
    def program(T, make):
        x = T.ones(4, requires_grad=True)
        make(x)[0].mul_(2)
    for make in (lambda x: x.unbind(0), lambda x: x.split(2), lambda x: x.chunk(2)):
        theirs, ours = outcome(lambda: program(real_torch, make)), outcome(lambda: program(tidal_torch, make))
        assert theirs[0] == "RuntimeError" and ours == theirs


FUNC_REFUSALS = {
    "jacrev_of_an_integer_output": lambda T: T.func.jacrev(lambda a: a.long())(T.ones(2)),
    "jacrev_of_a_bool_output": lambda T: T.func.jacrev(lambda a: a > 0)(T.ones(2)),
    "vjp_of_an_integer_output": lambda T: T.func.vjp(lambda a: (a * 2).long(), T.ones(2)),
    "vjp_of_a_tree_with_an_integer_leaf": lambda T: T.func.vjp(lambda a: (a, a.long()), T.ones(2)),
    "jacfwd_of_an_integer_input": lambda T: T.func.jacfwd(lambda a: a * 2)(T.tensor([1, 2])),
    "hessian_of_an_integer_input": lambda T: T.func.hessian(lambda a: a.sum())(T.tensor([1, 2])),
    "jvp_of_an_integer_primal": lambda T: T.func.jvp(lambda a: a * 2, (T.tensor([1, 2]),), (T.tensor([1, 2]),)),
}


@pytest.mark.parametrize("name", sorted(FUNC_REFUSALS))
def test_func_refuses_what_cannot_be_differentiated_as_torch(name):
    """vjp/jacrev refuse integer and bool outputs (tidal gave zero Jacobians); jacfwd/jvp refuse an integer primal
    with make_dual's ValueError."""
    call = FUNC_REFUSALS[name]
    theirs, ours = outcome(lambda: call(real_torch)), outcome(lambda: call(tidal_torch))
    assert theirs[0] != "ok" and ours == theirs


# -- graph introspection: next_functions ----------------------------------------------------------------------------
def _edges(t) -> tuple:
    """t's node name and the names of the nodes its edges lead to (None: no edge)."""
    fn = t.grad_fn
    return fn.name(), tuple(None if n is None else n.name() for n, _ in fn.next_functions)


NODE_INPUTS = {
    # a number is no input of torch's node where an overload of its own takes it (pow.Tensor_Scalar, rsub.Scalar,
    # clamp's Scalar bounds), and an input with no edge where torch wraps it in a tensor (x * 2, x - 1, where)
    "clone": lambda T, x, y: x.clone(), "contiguous": lambda T, x, y: x.t().contiguous(),
    "double": lambda T, x, y: x.double(), "to_bfloat16": lambda T, x, y: x.to(T.bfloat16),
    "type_as": lambda T, x, y: x.type_as(T.ones(1, dtype=T.float64)), "pow_number": lambda T, x, y: x ** 2,
    "number_pow": lambda T, x, y: 2 ** x, "pow_int": lambda T, x, y: x.pow(3), "rsub": lambda T, x, y: 1 - x,
    "sub_number": lambda T, x, y: x - 1, "mul_number": lambda T, x, y: 2 * x, "div_number": lambda T, x, y: x / 2,
    "add_alpha": lambda T, x, y: x.add(1, alpha=2), "clamp": lambda T, x, y: x.clamp(0, 1),
    "clamp_min": lambda T, x, y: x.clamp_min(0.5), "clip_max": lambda T, x, y: x.clip(max=1),
    "clamp_tensor_min": lambda T, x, y: x.clamp(y), "clamp_tensor_max": lambda T, x, y: x.clamp(max=y),
    "where_number": lambda T, x, y: T.where(x > 0, x, 0.0), "where_number_first": lambda T, x, y: T.where(x > 0, 0.0, x),
    "where": lambda T, x, y: T.where(x > 0, x, y), "lerp_number": lambda T, x, y: T.lerp(x, y, 0.3),
    "fmod": lambda T, x, y: x.fmod(2), "remainder_number": lambda T, x, y: x.remainder(2),
    "polygamma": lambda T, x, y: T.polygamma(1, x), "square": lambda T, x, y: x.square(),
    # and torch's class per overload: xlogy(2, y) XlogyBackward1, xlogy(x, 2) XlogyBackward2, a tensor weight's
    # LerpBackward1, a tensor divisor's FmodBackward1 and RemainderBackward1, a number sign's CopysignBackward1
    "xlogy_number": lambda T, x, y: T.xlogy(x, 2), "number_xlogy": lambda T, x, y: T.xlogy(2, y),
    "copysign_number": lambda T, x, y: T.copysign(x, -1), "copysign": lambda T, x, y: T.copysign(x, y),
    "lerp_tensor_weight": lambda T, x, y: T.lerp(x, y, y), "fmod_tensor": lambda T, x, y: x.fmod(y),
    "remainder_tensor": lambda T, x, y: x.remainder(y), "fmod_inplace": lambda T, x, y: x.clone().fmod_(y),
    "clamp_inplace": lambda T, x, y: x.clone().clamp_(0, 1), "clip_inplace": lambda T, x, y: x.clone().clip_(max=0.5),
    "clamp_inplace_tensor": lambda T, x, y: x.clone().clamp_(y),
    "clamp_min_inplace": lambda T, x, y: x.clone().clamp_min_(0.1),
    "clamp_max_inplace": lambda T, x, y: x.clone().clamp_max_(0.2),
    "walk": lambda T, x, y: (2 * x.sin() + 1).grad_fn.next_functions[0][0],
}


@pytest.mark.parametrize("name", sorted(NODE_INPUTS))
def test_next_functions_of_common_ops_as_torch(name):
    """What a program walking grad_fn.next_functions (a graph printer) sees: one edge per input of torch's node."""
    def program(T):
        x = T.from_numpy(data((3, 4), 1)).requires_grad_() * 1
        y = T.from_numpy(data((3, 4), 2)).requires_grad_() * 1
        out = NODE_INPUTS[name](T, x, y)
        node = out if not isinstance(out, T.Tensor) else None
        if node is not None:
            return node.name(), tuple(None if n is None else n.name() for n, _ in node.next_functions)
        return _edges(out)
    assert program(tidal_torch) == program(real_torch)


COMPOSITE_NODE_NAMES = {  # composites: torch's node name on the last node (their edges are the pieces', not torch's)
    "nan_to_num": lambda T, x: x.nan_to_num(), "nan_to_num_inplace": lambda T, x: (x * 1).nan_to_num_(),
    "addcmul": lambda T, x: T.addcmul(x, x, x.exp(), value=2), "addcdiv": lambda T, x: T.addcdiv(x, x, x.exp()),
    "addcmul_inplace": lambda T, x: (x * 1).addcmul_(x, x), "addcdiv_inplace": lambda T, x: (x * 1).addcdiv_(x, x + 2),
}


def test_composite_node_names_as_torch():
    """What `print(t)` shows as grad_fn: NanToNumBackward0, AddcmulBackward0, AddcdivBackward0 (were WhereBackward0
    and AddBackward0), out of place and in place; gradients against torch."""
    def program(T):
        x = T.tensor([1.5, float("nan"), float("inf"), -2.0], requires_grad=True)
        outs = [make(T, x) for make in COMPOSITE_NODE_NAMES.values()]
        T.stack([o.nan_to_num(0.0, 0.0, 0.0).sum() for o in outs]).sum().backward()
        return [o.grad_fn.name() for o in outs], x.grad.nan_to_num(-7.0, 7.0, -7.0).tolist()
    assert program(tidal_torch) == program(real_torch)


def test_gradients_through_the_narrowed_nodes():
    """The nodes that lost their edges for numbers still send each input its gradient (values against torch)."""
    def program(T):
        x = T.from_numpy(data((3, 4), 3, 0.1, 0.9)).requires_grad_()
        y = T.from_numpy(data((3, 4), 4, 0.1, 0.9)).requires_grad_()
        parts = [x ** 2, 2 ** x, 1 - x, x.clamp(0.2, 0.8), x.clamp(max=y), T.where(x > 0.5, x, 0.0), T.lerp(x, y, 0.3),
                 x.fmod(0.3), T.xlogy(x, 2), T.copysign(x, -1), x.double().float(), x.clone().to(T.bfloat16).float(),
                 x.square(), T.xlogy(2, y), T.lerp(x, y, y), x.fmod(y), x.remainder(y)]
        for k, p in enumerate(parts):
            p.mul(k + 1).sum().backward(retain_graph=True)
        z = x.clone()
        z.clamp_(0.3, 0.7).pow_(2)
        z.sum().backward()
        return [x.grad, y.grad]
    run_both(program, rtol=1e-5, atol=1e-6)


# -- in-place activations -------------------------------------------------------------------------------------------
INPLACE_ACTIVATIONS = ["silu", "mish", "hardswish", "hardsigmoid", "elu", "selu", "celu", "leaky_relu", "threshold",
                       "relu6", "hardtanh"]


def _inplace(T, name: str):
    F = T.nn.functional
    if name == "threshold":
        return lambda t: F.threshold(t, 0.1, 0.0, inplace=True)
    return lambda t: getattr(F, name)(t, inplace=True)


@pytest.mark.parametrize("name", INPLACE_ACTIVATIONS)
def test_inplace_activation_gradients_and_nodes_as_torch(name):
    """F.silu(x, inplace=True) (nn.SiLU(inplace=True), MobileNet's nn.Hardswish(inplace=True)) saved x inside a chain
    that the in-place write then invalidated: backward raised 'modified by an inplace operation' where torch
    computes the gradient; the others were named CopyBackwards. Now torch's node names and gradients, alone, then
    followed by an op that saves its input."""
    def program(T):
        x = T.linspace(-2, 2, 5, requires_grad=True)
        y = x * 1
        out = _inplace(T, name)(y)
        z = out.sin()
        z.pow(2).sum().backward()
        return out.grad_fn.name(), out is y, x.grad.tolist()
    theirs, ours = program(real_torch), program(tidal_torch)
    assert ours[:2] == theirs[:2]
    assert ours[2] == pytest.approx(theirs[2], rel=1e-5, abs=1e-6)


def mobilenet_block(T):
    """Linear -> Hardswish(inplace) -> Linear -> SiLU(inplace) -> Linear -> Mish(inplace), on a view too: two SGD steps."""
    nn, F = T.nn, T.nn.functional
    m = nn.Sequential(nn.Linear(3, 4), nn.Hardswish(inplace=True), nn.Linear(4, 4), nn.SiLU(inplace=True),
                      nn.Linear(4, 2), nn.Mish(inplace=True))
    init(T, m, 40)
    opt = T.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    x = T.from_numpy(data((5, 3), 41))
    losses = []
    for _ in range(2):
        opt.zero_grad()
        h = m(x) * 1
        F.silu(h[:, 1], inplace=True)
        F.threshold(h[0], 0.1, -1.0, inplace=True)
        loss = h.pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss)
    return [losses, list(m.parameters())]


def test_inplace_activations_in_a_network():
    run_both(mobilenet_block, rtol=1e-5, atol=1e-6)


# -- a write after an in-place op on a view that saved its result ---------------------------------------------------
SAVED_VIEW_WRITES = {
    "relu_on_a_view_then_the_base": lambda T, h: (h[:2].relu_(), h.mul_(2)),
    "relu_on_a_view_then_the_view": lambda T, h: (h[:2].relu_(), h[:2].mul_(2)),
    "sigmoid_on_a_row_then_the_base": lambda T, h: (h.view(2, 2)[0].sigmoid_(), h.add_(1)),
    "exp_on_a_view_then_another_view": lambda T, h: (h[1:].exp_(), h[:1].mul_(3)),
}


@pytest.mark.parametrize("name", sorted(SAVED_VIEW_WRITES))
def test_write_after_an_inplace_op_on_a_view_that_saved_its_result_refused_as_torch(name):
    """h[:2].relu_() saves the view (its result); a later write into the view or its base is refused at backward
    by torch ('modified by an inplace operation'); tidal kept a copy and gave a gradient."""
    def program(T):
        h = T.tensor([-1.0, 2.0, 3.0, 0.5], requires_grad=True) * 1
        SAVED_VIEW_WRITES[name](T, h)
        h.sum().backward()
    theirs, ours = outcome(lambda: program(real_torch)), outcome(lambda: program(tidal_torch))
    assert theirs[0] == "RuntimeError" and theirs[1].startswith("one of the variables needed for gradient computation "
                                                                "has been modified by an inplace operation")
    assert ours[0] == theirs[0] and ours[1][:120] == theirs[1][:120]


# -- more programs: a WGAN-GP critic (double backward), MAML's second-order step, a SAC policy (rsample through
# TanhTransform), a tied-weight GPT trained then sampled with top-k and multinomial ----------------------------------
def wgan_gp(T):
    nn = T.nn
    D = nn.Sequential(nn.Linear(3, 8), nn.LeakyReLU(0.2), nn.Linear(8, 8), nn.SiLU(), nn.Linear(8, 1)); init(T, D, 1)
    opt = T.optim.Adam(D.parameters(), lr=1e-3, betas=(0.0, 0.9))
    real, fake = T.from_numpy(data((4, 3), 2)), T.from_numpy(data((4, 3), 3))
    eps = T.from_numpy(data((4, 1), 4, 0, 1))
    out = []
    for _ in range(2):
        opt.zero_grad()
        xh = (eps * real + (1 - eps) * fake).requires_grad_(True)
        g, = T.autograd.grad(D(xh).sum(), xh, create_graph=True)
        gp = ((g.norm(2, dim=1) - 1) ** 2).mean()
        loss = D(fake).mean() - D(real).mean() + 10 * gp
        loss.backward(); opt.step(); out.append(loss)
    return out, list(D.parameters())


def maml(T):
    nn, F = T.nn, T.func
    m = nn.Sequential(nn.Linear(2, 6), nn.Tanh(), nn.Linear(6, 1)); init(T, m, 5)
    x, y = T.from_numpy(data((5, 2), 6)), T.from_numpy(data((5, 1), 7))
    params = dict(m.named_parameters())
    loss = nn.functional.mse_loss(F.functional_call(m, params, (x,)), y)
    grads = T.autograd.grad(loss, list(params.values()), create_graph=True)
    fast = {k: v - 0.1 * g for (k, v), g in zip(params.items(), grads)}
    meta = nn.functional.mse_loss(F.functional_call(m, fast, (x * 2,)), y)
    meta.backward()
    return meta, [p.grad for p in m.parameters()]


def sac_policy(T):
    nn, D = T.nn, T.distributions
    net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 4)); init(T, net, 1)
    opt = T.optim.Adam(net.parameters(), lr=3e-3)
    obs = T.from_numpy(data((5, 3), 2))
    T.manual_seed(0)
    out = []
    for _ in range(2):
        mu, log_std = net(obs).chunk(2, -1)
        std = log_std.clamp(-5, 2).exp()
        base = D.Normal(mu, std)
        dist = D.TransformedDistribution(base, [D.transforms.TanhTransform(cache_size=1)])
        a = dist.rsample()
        logp = dist.log_prob(a).sum(-1)
        q = (a ** 2).sum(-1)
        loss = (0.2 * logp - q).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        out += [a, logp, loss, base.entropy().sum()]
    return out, list(net.parameters())


def gpt_generate(T):
    nn, F = T.nn, T.nn.functional
    class GPT(nn.Module):
        def __init__(s):
            super().__init__()
            s.tok = nn.Embedding(11, 8); s.pos = nn.Parameter(T.zeros(1, 16, 8))
            layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True, activation='gelu')
            s.dec = nn.TransformerDecoder(layer, 2); s.ln = nn.LayerNorm(8); s.head = nn.Linear(8, 11, bias=False)
            s.head.weight = s.tok.weight
        def forward(s, idx):
            t = idx.shape[1]
            h = s.tok(idx) + s.pos[:, :t]
            mask = nn.Transformer.generate_square_subsequent_mask(t)
            h = s.dec(h, h, tgt_mask=mask, memory_mask=mask, tgt_is_causal=True)
            return s.head(s.ln(h))
    m = GPT(); init(T, m, 1)
    opt = T.optim.AdamW(m.parameters(), lr=3e-3, betas=(0.9, 0.95), weight_decay=0.1)
    data_ids = T.tensor([[1, 2, 3, 4, 5, 6, 7], [3, 4, 5, 6, 7, 8, 9]])
    losses = []
    for _ in range(3):
        logits = m(data_ids[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 11), data_ids[:, 1:].reshape(-1))
        opt.zero_grad(set_to_none=True); loss.backward(); nn.utils.clip_grad_norm_(m.parameters(), 1.0); opt.step(); losses.append(loss)
    m.eval(); T.manual_seed(123)
    idx = T.tensor([[1, 2]])
    with T.no_grad():
        for _ in range(6):
            lg = m(idx)[:, -1, :] / 0.8
            v, _ = T.topk(lg, 4)
            lg[lg < v[:, [-1]]] = -float('inf')
            probs = F.softmax(lg, dim=-1)
            nxt = T.multinomial(probs, num_samples=1)
            idx = T.cat((idx, nxt), dim=1)
    return losses, idx, list(m.parameters())[:3]


@pytest.mark.parametrize("program", [wgan_gp, maml, sac_policy, gpt_generate], ids=lambda p: p.__name__)
def test_more_programs(program):
    run_both(program, rtol=1e-4, atol=1e-6)


# -- which error an in-place op on a leaf meets first -----------------------------------------------------------------
LEAF_WRITES = {
    "add_broadcast_past_the_leaf": lambda T: T.ones(2, requires_grad=True).add_(T.ones(3, 2)),
    "add_complex_into_the_leaf": lambda T: T.ones(2, requires_grad=True).add_(T.ones(2, dtype=T.complex64)),
    "mul_the_leaf": lambda T: T.ones(2, requires_grad=True).mul_(2),
    "clamp_the_leaf": lambda T: T.ones(2, requires_grad=True).clamp_(0, 1),
    "copy_a_wider_source_into_the_leaf": lambda T: T.ones(2, requires_grad=True).copy_(T.ones(3)),
    "copy_into_the_leaf": lambda T: T.ones(2, requires_grad=True).copy_(T.zeros(2)),
}


@pytest.mark.parametrize("name", sorted(LEAF_WRITES))
def test_inplace_write_into_a_leaf_refused_before_the_kernel_checks(name):
    """torch's autograd refuses a leaf that requires grad before its kernel checks the broadcast shape or the cast."""
    theirs = outcome(lambda: LEAF_WRITES[name](real_torch))
    ours = outcome(lambda: LEAF_WRITES[name](tidal_torch))
    assert theirs[0] == "RuntimeError" and ours == theirs


VIEW_OF_LEAF_WRITES = {
    "add_into_an_expanded_leaf": lambda T: T.ones(2, requires_grad=True).expand(3, 2).add_(1),
    "add_broadcast_past_a_slice_of_a_leaf": lambda T: T.ones(2, requires_grad=True)[0:1].add_(T.ones(3)),
    "relu_inplace_on_an_expanded_leaf": lambda T: T.nn.functional.relu(T.ones(2, requires_grad=True).expand(2, 2),
                                                                       inplace=True),
}


@pytest.mark.parametrize("name", sorted(VIEW_OF_LEAF_WRITES))
def test_inplace_write_into_a_view_of_a_leaf_refused_before_the_kernel_checks(name):
    """A view of a leaf that requires grad: torch's 'a view of a leaf Variable...' comes before the overlap and
    broadcast-shape errors."""
    theirs = outcome(lambda: VIEW_OF_LEAF_WRITES[name](real_torch))
    ours = outcome(lambda: VIEW_OF_LEAF_WRITES[name](tidal_torch))
    assert theirs[0] == "RuntimeError" and ours == theirs


@pytest.mark.parametrize("op", ["gt_", "lt_", "ge_", "le_", "eq_", "ne_"])
def test_inplace_comparison_in_the_graph_as_torch(op):
    """y = x * 2; y.gt_(0): torch keeps y in the graph with GtBackward0 (zero gradient; GtBackward1 for a tensor
    operand); tidal left y's MulBackward0, so x got 2 instead of 0, and it wrote into a leaf without a word."""
    def program(T):
        x = T.tensor([1.0, -2.0, 3.0], requires_grad=True)
        w = T.tensor([0.5, 1.0, 1.0], requires_grad=True)
        y, z = x * 2, x * 3
        getattr(y, op)(0)
        getattr(z, op)(w * 1)
        (y.sum() + z.sum()).backward()
        leaf = outcome(lambda: getattr(T.ones(2, requires_grad=True), op)(0))
        return [y.grad_fn.name(), z.grad_fn.name(), len(z.grad_fn.next_functions), y.tolist(), x.grad.tolist(),
                w.grad.tolist(), leaf]
    assert program(tidal_torch) == program(real_torch)
