"""Behaviour probed from PyTorch's own unit tests, part 1 (test/nn/test_pooling.py, test_nn.py's Module API,
test/nn/test_embedding.py, loss and shape functions): see torch_probe_helpers."""
import warnings

import pytest

from torch_probe_helpers import F, assert_same, registry
from torch_probe_helpers import errs as _errs

PROBES, probe = registry()


# -- test/nn/test_pooling.py -----------------------------------------------------------------------
@probe
def adaptive_pooling_size_none(t):
    out = []
    for numel in (2, 3):
        for kind in ("Max", "Avg"):
            m = getattr(t.nn, f"Adaptive{kind}Pool{numel}d")((2,) * (numel - 1) + (None,))
            out.append(tuple(m(t.ones((4,) * (numel + 1))).shape))
    return out


@probe
def max_unpool2d_output_size(t):
    m, mu = t.nn.MaxPool2d(3, stride=2, return_indices=True), t.nn.MaxUnpool2d(3, stride=2)
    big = t.rand(1, 1, 6, 6)
    big[0][0][4][4] = 100
    out = _errs([lambda: mu(*m(big))])
    small = t.rand(1, 1, 5, 5)
    for i in range(0, 4, 2):
        for j in range(0, 4, 2):
            small[:, :, i, j] = 100
    o, idx = m(small)
    for h in range(3, 10):
        for w in range(3, 10):
            if 4 <= h <= 6 and 4 <= w <= 6:
                out.append(tuple(mu(o, idx, output_size=(h, w) if h != 6 else (1, 1, h, w)).shape))
            else:
                out += _errs([lambda: mu(o, idx, (h, w))])
    return out


@probe
def avg_pool2d_divisor_override(t):
    x = t.arange(9., dtype=t.double).reshape(1, 3, 3)
    return [F(t).avg_pool2d(x, (i, j), divisor_override=d) for i in (1, 2, 3) for j in (1, 2, 3) for d in (1, 7)]


@probe
def avg_pool_ceil_mode(t):
    return (F(t).avg_pool1d(t.arange(64.).reshape(1, 16, 4), ceil_mode=True, count_include_pad=True,
                            kernel_size=1, stride=2),
            F(t).avg_pool2d(t.arange(256.).reshape(1, 16, 4, 4), ceil_mode=True, count_include_pad=True,
                            kernel_size=(1, 2), padding=(0, 1), stride=2),
            F(t).avg_pool3d(t.arange(1024.).reshape(1, 16, 4, 4, 4), ceil_mode=True, count_include_pad=True,
                            kernel_size=(1, 2, 3), stride=2))


@probe
def fractional_max_pool_size_checks(t):
    cases = [(3, (1, 1, 4, 4, 4), 2, (3, 3, 3)), (3, (1, 1, 4, 4, 4), 2, (2, 3, 2)), (3, (1, 1, 4, 4, 4), 2, (2, 2, 3)),
             (2, (1, 1, 4, 4), 2, (3, 3)), (3, (1, 4, 4, 4), 2, (2, 2, 2)), (2, (1, 2, 4, 4), 2, (5, 5)),
             (2, (1, 2, 4, 4), 2, (3, 4)), (2, (1, 2, 4, 4), (2, 3), (3, 3)), (3, (1, 1, 4, 4, 4), 2, (4, 3, 3)),
             (3, (1, 1, 5, 5, 5), 2, (3, 3, 3))]
    return _errs([lambda n=n, x=x, k=k, o=o: getattr(F(t), f"fractional_max_pool{n}d")(t.ones(x), k,
                                                                                         output_size=o).shape
                   for n, x, k, o in cases])


@probe
def adaptive_avg_pool_nhwc(t):
    x = (t.arange(4 * 8 * 8 * 8.) % 7).reshape(4, 8, 8, 8).contiguous(memory_format=t.channels_last)
    x.requires_grad_()
    out = t.nn.AdaptiveAvgPool2d((7, 7))(x)
    out.backward((t.arange(4 * 8 * 7 * 7.) % 5).reshape(4, 8, 7, 7))
    return out, x.grad, out.is_contiguous(memory_format=t.channels_last)


@probe
def adaptive_pooling_lower_precision(t):
    out = []
    for dtype in (t.bfloat16, t.float16):
        for mod in (t.nn.AdaptiveAvgPool2d, t.nn.AdaptiveMaxPool2d):
            x = (t.arange(3 * 19 * 8 * 8.) % 9).reshape(3, 19, 8, 8).to(dtype).requires_grad_()
            o = mod((7, 7))(x)
            o.sum().backward()
            out.append((o.dtype, x.grad.dtype, o.float().sum().item()))
    return out


# -- test_nn.py: the Module API ----------------------------------------------------------------------
def _net(t):
    class Net(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = t.nn.Linear(2, 3), t.nn.Linear(3, 1)
            self.register_buffer("b", t.zeros(2))
            self.register_buffer("nb", t.ones(1), persistent=False)
            self.seq = t.nn.Sequential(t.nn.ReLU(), t.nn.Linear(1, 1))
    return Net()


@probe
def named_members(t):
    n = _net(t)
    return ([k for k, _ in n.named_parameters()], [k for k, _ in n.named_buffers()], list(n.state_dict()),
            [k for k, _ in n.named_modules()], [k for k, _ in n.named_children()],
            [k for k, _ in n.named_parameters(prefix="x", recurse=False)],
            [k for k, _ in n.seq.named_parameters(prefix="p")], repr(n))


@probe
def train_invalid_mode(t):
    _net(t).train("True")


@probe
def add_module_and_register_checks(t):
    m = t.nn.Module()
    m.attr = 1
    lin = t.nn.Linear(1, 1)
    return _errs([lambda: m.add_module("a.b", lin), lambda: m.add_module("", lin), lambda: m.add_module(1, lin),
                  lambda: m.add_module("x", 3), lambda: m.add_module("attr", lin),
                  lambda: m.register_parameter("a.b", t.nn.Parameter(t.ones(1))),
                  lambda: m.register_parameter("", t.nn.Parameter(t.ones(1))),
                  lambda: m.register_parameter(1, None), lambda: m.register_parameter("x", t.ones(1)),
                  lambda: m.register_buffer("a.b", t.ones(1)), lambda: m.register_buffer("", t.ones(1)),
                  lambda: m.register_buffer(1, None)])


@probe
def load_state_dict_checks(t):
    m = t.nn.Linear(2, 2)
    sd = m.state_dict()
    extra = dict(sd, extra=t.ones(1))
    del extra["bias"]
    res = m.load_state_dict(extra, strict=False)
    return _errs([lambda: m.load_state_dict(extra), lambda: m.load_state_dict(dict(sd, weight=t.ones(3, 3))),
                  lambda: m.load_state_dict([1])]) + [list(res.missing_keys), list(res.unexpected_keys),
                                                      str(res), str(m.load_state_dict(sd))]


@probe
def parameter_list(t):
    pl = t.nn.ParameterList([t.nn.Parameter(t.ones(1)) for _ in range(3)])
    pl.append(t.nn.Parameter(t.zeros(2)))
    pl.extend([t.nn.Parameter(t.zeros(3))])
    pl += [t.nn.Parameter(t.zeros(4))]
    out = [len(pl), repr(pl), [k for k, _ in pl.named_parameters()], tuple(pl[-1].shape), len(pl[1:3])]
    pl.append(3)
    out.append(pl[-1])
    pl.append(t.ones(2))
    return out + [type(pl[-1]).__name__]


@probe
def parameter_dict(t):
    pd = t.nn.ParameterDict({"a": t.nn.Parameter(t.ones(1)), "b": t.nn.Parameter(t.zeros(1))})
    pd["c"] = t.nn.Parameter(t.ones(2))
    pd.update({"d": t.nn.Parameter(t.ones(3))})
    out = [list(pd.keys()), len(pd), "a" in pd, repr(pd)]
    pd.pop("a")
    out += [list(pd.keys()), pd.get("zz", 5), list(pd.fromkeys(["x", "y"]).keys()),
            list((pd | {"e": t.nn.Parameter(t.ones(1))}).keys())]
    pd.setdefault("f", t.nn.Parameter(t.ones(1)))
    del pd["b"]
    out.append(list(pd))
    pd.clear()
    return out + [len(pd)]


@probe
def sequential_container(t):
    s = t.nn.Sequential(t.nn.ReLU(), t.nn.Tanh(), t.nn.Sigmoid())
    out = [type(s[1]).__name__, len(s[1:]), type(s[-1]).__name__]
    s.append(t.nn.ELU())
    s.insert(1, t.nn.GELU())
    out.append([type(m).__name__ for m in s])
    del s[0]
    out += [list(s._modules), len(s + t.nn.Sequential(t.nn.ReLU())), list((s * 2)._modules),
            type(s.pop(1)).__name__]
    out += _errs([lambda: s[10]])
    s.extend([t.nn.ReLU()])
    return out + [len(s)]


@probe
def module_list_and_dict(t):
    ml = t.nn.ModuleList([t.nn.ReLU(), t.nn.Tanh()])
    ml.append(t.nn.ELU())
    ml.extend([t.nn.GELU()])
    ml.insert(0, t.nn.Sigmoid())
    out = [[type(m).__name__ for m in ml], len(ml[1:3]), repr(ml)]
    del ml[1:3]
    out += [[type(m).__name__ for m in ml], list(ml._modules), len(ml + t.nn.ModuleList([t.nn.ReLU()])),
            type(ml.pop(0)).__name__]
    out += _errs([lambda: ml.append(3)])
    md = t.nn.ModuleDict({"a": t.nn.ReLU(), "b": t.nn.Tanh()})
    md.update([("c", t.nn.ELU())])
    md["d"] = t.nn.GELU()
    out += [list(md.keys()), len(md), repr(md), "a" in md, type(md.pop("a")).__name__, list(md)]
    return out + _errs([lambda: md.update(3), lambda: md.update([[1]])])


@probe
def zero_grad_set_to_none(t):
    m = t.nn.Linear(2, 2)
    m(t.ones(1, 2)).sum().backward()
    m.zero_grad()
    first = m.weight.grad
    m(t.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    return first, m.weight.grad


@probe
def attribute_assignment_checks(t):
    m = t.nn.Module()
    m.p = t.nn.Parameter(t.ones(1))
    out = [len(list(m.parameters()))] + _errs([lambda: setattr(m, "p", t.ones(1))])
    m.p = None
    out.append(len(list(m.parameters())))
    m.register_buffer("b", t.ones(1))
    out += _errs([lambda: setattr(m, "b", 3)])
    m.b = None
    out.append(list(m.state_dict()))
    m.sub = t.nn.ReLU()
    out += _errs([lambda: setattr(m, "sub", 3)])
    del m.sub
    return out + [hasattr(m, "sub")]


@probe
def module_reprs(t):
    return [repr(m) for m in [
        t.nn.Conv2d(1, 2, 3, stride=2, padding=1, bias=False), t.nn.BatchNorm2d(3),
        t.nn.LSTM(2, 3, 2, batch_first=True), t.nn.Embedding(3, 4, padding_idx=0), t.nn.Dropout(0.3),
        t.nn.LayerNorm([3, 4]), t.nn.MaxPool2d(2), t.nn.Upsample(scale_factor=2), t.nn.Flatten(),
        t.nn.Unflatten(1, (2, 2)), t.nn.LeakyReLU(0.2, inplace=True), t.nn.Softmax(dim=1),
        t.nn.TransformerEncoderLayer(4, 2), t.nn.ConvTranspose2d(2, 3, 3, output_padding=1, stride=2),
        t.nn.GroupNorm(2, 4), t.nn.PReLU(), t.nn.Identity(3), t.nn.Bilinear(2, 3, 4), t.nn.CrossEntropyLoss(),
        t.nn.GRUCell(2, 3), t.nn.AdaptiveAvgPool2d((1, None)), t.nn.PixelShuffle(2), t.nn.ZeroPad2d(1),
        t.nn.ReflectionPad1d((1, 2))]]


@probe
def module_dtype_casts(t):
    m = t.nn.Linear(2, 2)
    out = []
    for cast in (m.double, m.half, lambda: m.to(t.float32), lambda: m.type(t.float64), m.bfloat16):
        cast()
        out.append(m.weight.dtype)
    m2 = t.nn.Module()
    m2.register_buffer("i", t.ones(2, dtype=t.long))
    m2.double()
    return out + [m2.i.dtype] + _errs([lambda: m.to(t.int32)])


@probe
def requires_grad_and_get_submodule(t):
    m = t.nn.Linear(2, 2)
    m.requires_grad_(False)
    out = [p.requires_grad for p in m.parameters()]
    m.requires_grad_()
    out += [p.requires_grad for p in m.parameters()]
    n = _net(t)
    out += [type(n.get_submodule("seq.1")).__name__, tuple(n.get_parameter("seq.1.weight").shape),
            tuple(n.get_buffer("b").shape)]
    return out + _errs([lambda: n.get_submodule("seq.9"), lambda: n.get_submodule("zz"),
                        lambda: n.get_parameter("l1.zz"), lambda: n.get_buffer("l1.weight"),
                        lambda: n.get_parameter("b")])


# -- test_nn.py / test/nn/test_embedding.py: functions -------------------------------------------------
@probe
def pad_modes_and_checks(t):
    x = t.arange(6.).reshape(1, 2, 3)
    cases = [("constant", (1, 2)), ("reflect", (2, 2)), ("reflect", (3, 0)), ("replicate", (1, 1)),
             ("circular", (1, 2)), ("circular", (4, 0)), ("constant", (1,)), ("zeros", (1, 1)),
             ("constant", (-1, 1))]
    return _errs([lambda m=m, p=p: F(t).pad(x, p, mode=m) for m, p in cases]
                 + [lambda: F(t).pad(x, (1, 1), mode="reflect", value=2)])


@probe
def distances(t):
    a, b = t.arange(6.).reshape(2, 3), t.ones(2, 3)
    return (F(t).pairwise_distance(a, b), F(t).pairwise_distance(a, b, p=1, keepdim=True),
            F(t).pairwise_distance(a[0], b[0]), F(t).pairwise_distance(a, b, p=0),
            F(t).cosine_similarity(a, t.zeros(2, 3)), F(t).cosine_similarity(a, a + 1, dim=0),
            F(t).cosine_similarity(t.ones(1, 3), a), _errs([lambda: F(t).cosine_similarity(a, t.ones(2, 4))]))


@probe
def cosine_similarity_grad(t):
    a = t.tensor([[1., 2., 3.]], requires_grad=True)
    b = t.tensor([[0.5, 1., -1.]], requires_grad=True)
    F(t).cosine_similarity(a, b).sum().backward()
    return a.grad, b.grad


@probe
def pdist_norms_and_grad(t):
    a = t.arange(12.).reshape(4, 3).requires_grad_()
    out = [F(t).pdist(a), F(t).pdist(a, p=1), F(t).pdist(a, p=float("inf")), F(t).pdist(a, p=0)]
    F(t).pdist(a).sum().backward()
    return out + [a.grad]


@probe
def normalize_and_softmin(t):
    a = t.arange(6.).reshape(2, 3)
    return (F(t).normalize(a), F(t).normalize(a, p=1, dim=0), F(t).normalize(t.zeros(2, 3)),
            F(t).normalize(a, dim=-1, eps=100.), F(t).softmin(a, dim=1), F(t).softmin(a, dim=0, dtype=t.float64),
            t.nn.Softmin(1)(a))


@probe
def one_hot_checks(t):
    empty = t.tensor([], dtype=t.long)
    return _errs([lambda: F(t).one_hot(t.tensor([0, 2, 1])), lambda: F(t).one_hot(t.tensor([0, 2]), 5),
                  lambda: F(t).one_hot(t.tensor([[0], [1]])), lambda: F(t).one_hot(t.tensor([0, 3]), 3),
                  lambda: F(t).one_hot(t.tensor([-1])), lambda: F(t).one_hot(t.tensor([0.])),
                  lambda: F(t).one_hot(empty), lambda: F(t).one_hot(empty, 0), lambda: F(t).one_hot(empty, -2),
                  lambda: F(t).one_hot(empty, 3), lambda: F(t).one_hot(t.tensor([1]), 0),
                  lambda: F(t).one_hot(t.tensor([1]), -2)])


@probe
def embedding_from_pretrained(t):
    w = t.arange(6.).reshape(2, 3)
    e, e2 = t.nn.Embedding.from_pretrained(w), t.nn.Embedding.from_pretrained(w, freeze=False, padding_idx=1)
    eb = t.nn.EmbeddingBag.from_pretrained(w, mode="sum")
    return e.weight.requires_grad, e2.weight.requires_grad, e(t.tensor([1, 0])), eb(t.tensor([[0, 1]])), repr(e2)


@probe
def embedding_max_norm(t):
    e = t.nn.Embedding(3, 2, max_norm=1.0)
    with t.no_grad():
        e.weight.copy_(t.arange(6.).reshape(3, 2))
    return e(t.tensor([1, 2, 1])), e.weight


@probe
def embedding_padding_idx_grad(t):
    e = t.nn.Embedding(4, 2, padding_idx=2)
    with t.no_grad():
        e.weight.copy_(t.arange(8.).reshape(4, 2))
    e(t.tensor([[0, 2, 2, 1]])).sum().backward()
    return e.weight.grad, e.weight[2]


@probe
def embedding_checks(t):
    return _errs([lambda: t.nn.Embedding(3, 2, padding_idx=3), lambda: t.nn.Embedding(3, 2, padding_idx=-4),
                  lambda: t.nn.Embedding(3, 2, padding_idx=-1).padding_idx,
                  lambda: t.nn.Embedding(3, 2)(t.tensor([3])), lambda: t.nn.Embedding(3, 2)(t.tensor([1.])),
                  lambda: t.nn.Embedding.from_pretrained(t.ones(3))])


@probe
def threshold_and_prelu(t):
    m = t.nn.PReLU()
    m.weight.requires_grad = False
    x = t.tensor([-1., 2.], requires_grad=True)
    m(x).sum().backward()
    return [F(t).threshold(t.tensor([-3, 0, 3]), 1, 99), t.nn.Threshold(0.5, 20)(t.tensor([0.1, 0.7])),
            x.grad, m.weight.grad] + _errs([lambda: t.nn.PReLU(3)(t.ones(2, 4)),
                                           lambda: t.nn.PReLU(3)(-t.ones(2, 3, 2)), lambda: t.nn.PReLU()(-t.ones(3)),
                                           lambda: t.nn.PReLU(3)(t.ones(()))])


@probe
def binary_cross_entropy_cases(t):
    x = t.tensor([[0.3, -1.2, 2.]], requires_grad=True)
    loss = F(t).binary_cross_entropy_with_logits(x, t.tensor([[1., 0., 1.]]), weight=t.tensor([1., 2., 3.]),
                                                 pos_weight=t.tensor([2., 1., 0.5]))
    loss.backward()
    return [loss, x.grad, F(t).binary_cross_entropy(t.tensor([0., 1., 1e-12, 1 - 1e-7]), t.tensor([0., 1., 0., 1.])),
            F(t).binary_cross_entropy(t.tensor([0.5, 0.]), t.tensor([1., 1.]), reduction="none")] + _errs([
        lambda: F(t).binary_cross_entropy_with_logits(t.ones(3), t.ones(2)),
        lambda: F(t).binary_cross_entropy(t.ones(3) / 2, t.ones(2)),
        lambda: F(t).binary_cross_entropy(t.ones(3) * 2, t.ones(3))])


@probe
def margin_ranking_loss(t):
    a = t.tensor([1., 2., 3.], requires_grad=True)
    b, y = t.tensor([2., 2., 1.]), t.tensor([1., -1., 1.])
    loss = F(t).margin_ranking_loss(a, b, y, margin=0.5)
    loss.backward()
    return loss, a.grad, F(t).margin_ranking_loss(a, b, y, reduction="none")


@probe
def poisson_nll_loss_modes(t):
    x, y = t.tensor([0.5, 1., 2.]), t.tensor([1., 2., 0.])
    return [F(t).poisson_nll_loss(x, y, log_input=li, full=fu, reduction=r)
            for li in (True, False) for fu in (True, False) for r in ("mean", "sum", "none")] + _errs([
        lambda: F(t).poisson_nll_loss(x, y, reduction="foo")])


@probe
def gaussian_nll_loss_cases(t):
    x, y, v = t.tensor([[0.5, 1.], [2., 3.]]), t.tensor([[1., 2.], [0., 1.]]), t.tensor([[1.], [2.]])
    return [F(t).gaussian_nll_loss(x, y, v), F(t).gaussian_nll_loss(x, y, v, full=True, reduction="none"),
            F(t).gaussian_nll_loss(x, y, t.tensor([1., 2.]))] + _errs([
        lambda: F(t).gaussian_nll_loss(x, y, t.ones(2, 3)), lambda: F(t).gaussian_nll_loss(x, y, -t.ones(2, 2)),
        lambda: F(t).gaussian_nll_loss(x, y, v, reduction="x")])


@probe
def kl_div_reductions(t):
    x, y = t.log(t.tensor([[0.2, 0.8], [0.5, 0.5]])), t.tensor([[0.1, 0.9], [0., 1.]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mean = F(t).kl_div(t.zeros(2), t.ones(2) / 2)
    return ([F(t).kl_div(x, y, reduction=r) for r in ("batchmean", "sum", "none")]
            + [F(t).kl_div(x, y.log(), reduction="sum", log_target=True), mean, [str(w.message) for w in caught]])


@probe
def triplet_margin_losses(t):
    a = t.tensor([[0., 1.], [2., 0.]], requires_grad=True)
    p, n = t.tensor([[0., 1.5], [1., 0.]]), t.tensor([[1., 1.], [2., 0.5]])
    loss = F(t).triplet_margin_loss(a, p, n, swap=True)
    loss.backward()
    return (loss, a.grad, F(t).triplet_margin_loss(a, p, n, p=1, reduction="none"),
            F(t).triplet_margin_with_distance_loss(a, p, n, distance_function=lambda u, v: (u - v).abs().sum(-1),
                                                   margin=2.))


@probe
def pixel_and_channel_shuffle(t):
    x = t.arange(32.).reshape(1, 8, 2, 2)
    y = t.ones(1, 4, 2, 3)
    return [F(t).pixel_shuffle(x, 2), F(t).pixel_unshuffle(F(t).pixel_shuffle(x, 2), 2), F(t).channel_shuffle(x, 2),
            t.nn.ChannelShuffle(4)(x)] + _errs([
        lambda: F(t).pixel_shuffle(x, 3), lambda: F(t).pixel_unshuffle(x, 3), lambda: F(t).pixel_shuffle(t.ones(4), 2),
        lambda: F(t).pixel_unshuffle(y, 2), lambda: F(t).pixel_unshuffle(y, 0), lambda: F(t).pixel_unshuffle(y, -1),
        lambda: F(t).pixel_unshuffle(t.ones(2, 2), 1), lambda: F(t).pixel_shuffle(y, 0),
        lambda: F(t).pixel_shuffle(y, -2), lambda: F(t).pixel_shuffle(t.ones(4, 2), 2),
        lambda: F(t).pixel_unshuffle(t.ones(1, 4, 3, 2), 2), lambda: F(t).channel_shuffle(y, 3),
        lambda: F(t).channel_shuffle(y, 0), lambda: F(t).channel_shuffle(t.ones(4), 2),
        lambda: F(t).channel_shuffle(t.ones(4), 0)])


@probe
def flatten_unflatten(t):
    x = t.arange(24.).reshape(2, 3, 4)
    return [t.nn.Flatten()(x).shape, t.nn.Flatten(0, -1)(x).shape, t.nn.Unflatten(2, (2, 2))(x).shape,
            t.nn.Unflatten(-1, (-1, 2))(x).shape] + _errs([
        lambda: t.nn.Unflatten(1, (2, 2))(x), lambda: t.nn.Unflatten(1, 5), lambda: t.nn.Unflatten(1, [2.0, 3]),
        lambda: t.nn.Unflatten(1, (2, (3,))), lambda: t.nn.Unflatten(1, "ab"), lambda: repr(t.nn.Unflatten(1, [2, 3]))])


@probe
def fold_unfold(t):
    x = t.arange(32.).reshape(1, 2, 4, 4)
    u, u2 = F(t).unfold(x, 2, stride=2), F(t).unfold(x, (2, 3), dilation=1, padding=1, stride=(1, 2))
    return [u, u2, F(t).fold(u, (4, 4), 2, stride=2), F(t).fold(u2, (4, 4), (2, 3), padding=1, stride=(1, 2))] + _errs([
        lambda: F(t).fold(t.ones(1, 5, 4), (4, 4), 2), lambda: F(t).fold(t.ones(1, 4, 5), (4, 4), 2)])



@probe
def local_response_norm_checks(t):
    x = t.arange(24.).reshape(1, 4, 2, 3)
    return [F(t).local_response_norm(x, 2), t.nn.LocalResponseNorm(3, alpha=0.1)(x)] + _errs([
        lambda: F(t).local_response_norm(t.ones(2, 2), 2)])


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert_same(fn)
