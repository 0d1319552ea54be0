"""Behaviour probed from PyTorch's own unit tests (test/nn/test_pooling.py, test_nn.py's TestNN module API,
test/nn/test_embedding.py, loss and shape functions): each case runs the same calls on torch and on
tidal.compat and asserts the same values, dtypes, or the same error type and message. tidal names itself
where torch does ('tidal.float32'); messages are compared with that one spelling made torch's."""
import copy
import pickle
import warnings

import numpy as np
import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch loads it only on import; tidal has it)

import tidal.compat as tc

PROBES = []


def probe(fn):
    """Register `fn(framework)` as a case run on torch and on tidal.compat."""
    PROBES.append(fn)
    return fn


def _norm(v):
    """A comparable form of a result: tensors as (dtype name, shape, values rounded, NaN as a string)."""
    if hasattr(v, "detach") and hasattr(v, "dtype"):
        a = v.detach()
        if a.dtype.is_floating_point and not a.dtype.is_complex:  # (tidal's dtype attribute counts complex)
            vals = np.round(np.asarray(a.float().numpy(), dtype=np.float64), 4)
            vals = np.where(np.isnan(vals), None, vals).tolist() if vals.size else vals.tolist()
        else:
            vals = np.asarray(a.numpy()).tolist()
        return (str(v.dtype).split(".")[-1], tuple(v.shape), vals)
    if isinstance(v, (list, tuple)):
        return tuple(_norm(x) for x in v)
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, str):
        return v.replace("tidal.", "torch.")
    if v is None or isinstance(v, (bool, int, float)):
        return v
    return str(v).split(".")[-1]


def _run(fn, mod):
    torch.manual_seed(0)
    tc.manual_seed(0)
    try:
        return ("ok", _norm(fn(mod)))
    except Exception as e:  # compared: type and first line of the message
        return ("err", type(e).__name__, str(e).split("\n")[0].replace("tidal.", "torch."))


def _errs(calls):
    """Each call's result, or its error's type and message."""
    out = []
    for call in calls:
        try:
            out.append(call())
        except Exception as e:  # compared by the caller
            out.append((type(e).__name__, str(e)))
    return out


def F(t):
    return t.nn.functional


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


# -- test_nn.py: utilities, recurrent and normalization layers ----------------------------------------
def _linear(t, n_in, n_out):
    m = t.nn.Linear(n_in, n_out)
    with t.no_grad():
        m.weight.copy_(t.arange(float(n_in * n_out)).reshape(n_out, n_in) / (n_in * n_out))
        m.bias.fill_(0.1)
    return m


@probe
def clip_grad_norm_and_value(t):
    m = _linear(t, 10, 10)
    m(t.ones(2, 10)).pow(2).sum().backward()
    norms = [t.nn.utils.clip_grad_norm_(m.parameters(), 1.0),
             t.nn.utils.clip_grad_norm_(m.parameters(), 0.5, norm_type="inf"),
             t.nn.utils.clip_grad_norm_(m.parameters(), 0.5, norm_type=1), t.nn.utils.clip_grad_norm_([], 1.0),
             t.nn.utils.clip_grad_norm_(m.weight, 1.0), m.weight.grad]
    p = t.nn.Parameter(t.ones(3))
    p.grad = t.tensor([-3., 0.5, 2.])
    t.nn.utils.clip_grad_value_(p, 1.0)
    q = t.nn.Parameter(t.ones(2))
    q.grad = t.tensor([float("inf"), 1.])
    return norms + [p.grad, t.nn.utils.get_total_norm([t.tensor([3., 4.]), t.tensor([[1., 2.]])], 1.0)] + _errs([
        lambda: t.nn.utils.clip_grad_value_(p, -1.0),
        lambda: t.nn.utils.clip_grad_norm_([q], 1.0, error_if_nonfinite=True)])


@probe
def parameters_vector_roundtrip(t):
    m = t.nn.Linear(2, 3)
    v = t.nn.utils.parameters_to_vector(m.parameters())
    t.nn.utils.vector_to_parameters(t.arange(9.), m.parameters())
    return [v.shape, m.weight, m.bias] + _errs([
        lambda: t.nn.utils.vector_to_parameters(t.ones(2, 2), m.parameters()),
        lambda: t.nn.utils.parameters_to_vector(m.weight)])


@probe
def weight_and_spectral_norm(t):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = t.nn.utils.weight_norm(_linear(t, 3, 2))
    out = [sorted(k for k, _ in m.named_parameters()), m.weight_g, m.weight_v,
           sorted(k for k, _ in t.nn.utils.remove_weight_norm(m).named_parameters())]
    m = t.nn.utils.parametrizations.weight_norm(_linear(t, 3, 2), dim=None)
    out += [sorted(k for k, _ in m.named_parameters()), m.weight, m.parametrizations.weight.original0]
    m = t.nn.utils.parametrizations.spectral_norm(_linear(t, 3, 2))
    return out + [sorted(k for k, _ in m.named_parameters()), sorted(k for k, _ in m.named_buffers()),
                  t.linalg.matrix_norm(m.weight, 2).round(decimals=2)]


@probe
def parametrize_register_remove(t):
    class Sym(t.nn.Module):
        def forward(self, X):
            return X.triu() + X.triu(1).transpose(-1, -2)
    P = t.nn.utils.parametrize
    m = _linear(t, 3, 3)
    P.register_parametrization(m, "weight", Sym())
    out = [m.weight, P.is_parametrized(m), P.is_parametrized(m, "bias"), type(m).__name__, sorted(m.state_dict())]
    with P.cached():
        out.append(m.weight is m.weight)
    P.remove_parametrizations(m, "weight", leave_parametrized=True)
    return out + [m.weight, type(m).__name__] + _errs([lambda: P.remove_parametrizations(m, "weight")])


def _hidden(t, mod, *shape):
    return (t.ones(shape), t.ones(shape)) if mod in (t.nn.LSTM, t.nn.LSTMCell) else t.ones(shape)


@probe
def recurrent_argument_checks(t):
    out = []
    for mod in (t.nn.RNN, t.nn.LSTM, t.nn.GRU):
        m = mod(3, 4, 2)
        out += _errs([lambda: m(t.ones(5, 2, 4)), lambda: m(t.ones(5, 2, 3), _hidden(t, mod, 2, 3, 4)),
                      lambda: m(t.ones(5, 2, 3), _hidden(t, mod, 1, 2, 4)), lambda: m(t.ones(2, 3, 3, 3)),
                      lambda: m(t.ones(5, 3))[0].shape])
    for mod in (t.nn.RNNCell, t.nn.LSTMCell, t.nn.GRUCell):
        m = mod(3, 4)
        out += _errs([lambda: m(t.ones(2, 5)), lambda: m(t.ones(2, 3), _hidden(t, mod, 3, 4)),
                      lambda: m(t.ones(2, 2, 3))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return out + _errs([
            lambda: t.nn.RNN(3, 4, nonlinearity="foo"), lambda: t.nn.LSTM(3, 4, dropout=2),
            lambda: t.nn.LSTM(3, 4, proj_size=4), lambda: t.nn.LSTM(3, 4, proj_size=-1), lambda: t.nn.GRU(3, 0),
            lambda: t.nn.GRU(3, 4, num_layers=0), lambda: t.nn.RNN(3, 4, 1, dropout=0.5), lambda: t.nn.LSTM(3, 4.5),
            lambda: t.nn.RNNCell(3, 4, nonlinearity="x"),
            lambda: repr(t.nn.LSTM(3, 4, proj_size=2, bidirectional=True)),
            lambda: [k for k, _ in t.nn.LSTM(3, 4, proj_size=2).named_parameters()]])


@probe
def normalization_checks(t):
    return _errs([
        lambda: t.nn.BatchNorm1d(10)(t.ones(1, 10)), lambda: t.nn.BatchNorm2d(10)(t.ones(1, 10, 1, 1)),
        lambda: t.nn.BatchNorm1d(10).eval()(t.ones(1, 10)).shape, lambda: t.nn.InstanceNorm1d(10)(t.ones(2, 10, 1)),
        lambda: t.nn.BatchNorm1d(3)(t.ones(2, 4)), lambda: t.nn.BatchNorm2d(3)(t.ones(2, 3, 4)),
        lambda: t.nn.GroupNorm(3, 4), lambda: t.nn.GroupNorm(2, 4)(t.ones(2, 6)),
        lambda: t.nn.LayerNorm(3)(t.ones(2, 4)),
        lambda: t.nn.InstanceNorm2d(3)(t.ones(3, 2, 2)).shape])


@probe
def batchnorm_running_stats(t):
    m = t.nn.BatchNorm1d(3, momentum=None)
    x = t.arange(12.).reshape(4, 3)
    m(x)
    m(x * 2)
    out = [m.running_mean, m.running_var, m.num_batches_tracked]
    m2 = t.nn.BatchNorm1d(3, track_running_stats=False)
    out += [m2.running_mean, m2(x), list(t.nn.BatchNorm1d(3, affine=False).state_dict())]
    m.reset_running_stats()
    return out + [m.running_mean, m.num_batches_tracked]


@probe
def layer_norm_double_backward(t):
    x = t.arange(6.).reshape(2, 3).requires_grad_()
    m = t.nn.LayerNorm(3)
    y = m(x)
    g, = t.autograd.grad(y.pow(3).sum(), x, create_graph=True)
    g.sum().backward()
    return y, g, x.grad, m.weight.grad


@probe
def rms_norm(t):
    x = t.arange(6.).reshape(2, 3)
    return t.nn.RMSNorm(3)(x), t.nn.RMSNorm([2, 3], eps=1.)(x), F(t).rms_norm(x, (3,)), repr(t.nn.RMSNorm(3))



# -- test_optim.py / test/optim/test_lrscheduler.py ------------------------------------------------
def _param(t, n=3):
    return t.nn.Parameter(t.arange(float(n)) / 2)


@probe
def optimizer_constructor_checks(t):
    p, o = [_param(t)], t.optim
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the duplicate-parameter warning
        return _errs([
            lambda: o.SGD(p, lr=-1), lambda: o.SGD(p, lr=0.1, momentum=-1), lambda: o.SGD(p, lr=0.1, weight_decay=-1),
            lambda: o.SGD(p, lr=0.1, nesterov=True), lambda: o.Adam(p, betas=(1.0, 0.9)),
            lambda: o.Adam(p, betas=(0.9, -0.1)), lambda: o.Adam(p, eps=-1), lambda: o.Adam(p, weight_decay=-1),
            lambda: o.AdamW(p, lr=-0.1), lambda: o.RMSprop(p, alpha=-1), lambda: o.RMSprop(p, momentum=-1),
            lambda: o.Adagrad(p, lr_decay=-1), lambda: o.Adagrad(p, initial_accumulator_value=-1),
            lambda: o.Adadelta(p, rho=1.5), lambda: o.Adamax(p, betas=(0.9, 1.0)),
            lambda: o.NAdam(p, momentum_decay=-0.2), lambda: o.RAdam(p, eps=-1), lambda: o.ASGD(p, weight_decay=-1),
            lambda: o.Rprop(p, etas=(1.0, 0.5)), lambda: o.Rprop(p, etas=(0.5, 1.0)),
            lambda: o.SGD([], lr=0.1), lambda: o.SGD(t.ones(2), lr=0.1),
            lambda: o.SGD([t.ones(2, requires_grad=True) * 2], lr=0.1),
            lambda: o.SGD([{"params": p}, {"params": p}], lr=0.1),
            lambda: len(o.SGD([p[0], p[0]], lr=0.1).param_groups),
            lambda: o.SGD({p[0]}, lr=0.1), lambda: o.SGD([1], lr=0.1)])


@probe
def optimizer_param_groups_and_state(t):
    a, b = _param(t), _param(t, 2)
    o = t.optim.SGD([a], lr=0.1, momentum=0.9)
    o.add_param_group({"params": b, "lr": 0.5})
    out = [len(o.param_groups), o.param_groups[1]["momentum"], o.param_groups[1]["lr"], sorted(o.param_groups[1])]
    out += _errs([lambda: o.add_param_group({"params": a}), lambda: o.add_param_group({"lr": 1.0}),
                  lambda: o.add_param_group([b]), lambda: o.add_param_group({"params": {_param(t)}})])
    a = _param(t)
    o = t.optim.Adam([a], lr=0.1)
    a.grad = t.ones(3)
    o.step()
    sd = o.state_dict()
    out += [sorted(sd), sd["param_groups"], sorted(sd["state"][0]), sd["state"][0]["step"], sd["state"][0]["exp_avg"]]
    b = _param(t)
    o2 = t.optim.Adam([b], lr=0.5)
    o2.load_state_dict(sd)
    out += [o2.param_groups[0]["lr"], o2.state[b]["exp_avg"], repr(o), repr(t.optim.SGD([a], lr=0.1))]
    return out + _errs([lambda: t.optim.Adam([_param(t), _param(t)], lr=0.1).load_state_dict(sd),
                        lambda: t.optim.Adam([_param(t, 4)]).load_state_dict(sd)])


@probe
def optimizer_closure_and_lbfgs(t):
    a = _param(t)
    o = t.optim.SGD([a], lr=0.1)

    def closure():
        o.zero_grad()
        loss = (a ** 2).sum()
        loss.backward()
        return loss
    out = [o.step(closure), a.clone()]
    o.zero_grad(set_to_none=False)
    out.append(a.grad)
    b = _param(t)
    lb = t.optim.LBFGS([b], lr=1, max_iter=5, line_search_fn="strong_wolfe")

    def closure2():
        lb.zero_grad()
        loss = ((b - 1) ** 2).sum() + (b[0] * b[1]) ** 2
        loss.backward()
        return loss
    for _ in range(2):
        lb.step(closure2)
    return out + [b]


def _sched_rows(t, makers, steps=7):
    rows = []
    for make in makers:
        o = t.optim.SGD([_param(t)], lr=1.0, momentum=0.9)
        s = make(o)
        row = [s.get_last_lr()]
        for _ in range(steps):
            o.step()
            s.step()
            row.append([round(x, 6) for x in s.get_last_lr()])
        rows.append(row)
    return rows


@probe
def lr_schedulers(t):
    S = t.optim.lr_scheduler
    return _sched_rows(t, [
        lambda o: S.StepLR(o, 2, gamma=0.5), lambda o: S.MultiStepLR(o, [2, 4], 0.1), lambda o: S.ExponentialLR(o, 0.9),
        lambda o: S.CosineAnnealingLR(o, 4, eta_min=0.1), lambda o: S.LambdaLR(o, lambda e: 1 / (e + 1)),
        lambda o: S.MultiplicativeLR(o, lambda e: 0.9), lambda o: S.ConstantLR(o, 0.5, total_iters=3),
        lambda o: S.LinearLR(o, 0.25, 1.0, total_iters=4), lambda o: S.PolynomialLR(o, 4, 2.0),
        lambda o: S.CosineAnnealingWarmRestarts(o, 2, 2, eta_min=0.01),
        lambda o: S.CyclicLR(o, 0.1, 1.0, step_size_up=2),
        lambda o: S.OneCycleLR(o, 1.0, total_steps=8),
        lambda o: S.SequentialLR(o, [S.ConstantLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)], milestones=[2]),
        lambda o: S.ChainedScheduler([S.ConstantLR(o, 0.5, total_iters=2), S.ExponentialLR(o, 0.9)])])


@probe
def lr_scheduler_checks_and_warnings(t):
    S = t.optim.lr_scheduler
    o = t.optim.SGD([_param(t)], lr=1.0)
    s = S.StepLR(o, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        s.step()
    return [str(w.message)[:120] for w in caught] + _errs([
        lambda: S.StepLR(t.optim.SGD([_param(t)], lr=1.0), 2, last_epoch=3), lambda: S.StepLR(3, 2),
        lambda: S.ConstantLR(o, factor=2),
        lambda: S.LinearLR(o, start_factor=0), lambda: S.OneCycleLR(o, 1.0),
        lambda: S.OneCycleLR(o, 1.0, total_steps=-1),
        lambda: S.CosineAnnealingWarmRestarts(o, 0), lambda: S.CosineAnnealingWarmRestarts(o, 2, T_mult=0.5),
        lambda: S.LambdaLR(o, [lambda e: 1, lambda e: 2]), lambda: S.CyclicLR(o, 0.1, 1.0, mode="x"),
        lambda: S.SequentialLR(o, [S.ConstantLR(o)], milestones=[2]),
        lambda: S.OneCycleLR(o, 1.0, total_steps=4, anneal_strategy="x")])


@probe
def reduce_lr_on_plateau(t):
    o = t.optim.SGD([_param(t)], lr=1.0)
    s = t.optim.lr_scheduler.ReduceLROnPlateau(o, patience=1, factor=0.5, cooldown=1, min_lr=0.1)
    out = []
    for metric in [1, 1, 1, 1, 1, 0.5, 1, 1, 1, 1, 1, 1]:
        s.step(metric)
        out.append(o.param_groups[0]["lr"])
    R = t.optim.lr_scheduler.ReduceLROnPlateau
    return out + [s.get_last_lr()] + _errs([lambda: R(o, mode="x"), lambda: R(o, factor=1.0),
                                            lambda: R(o, threshold_mode="y")])


@probe
def swa_utils(t):
    m = _linear(t, 2, 2)
    am = t.optim.swa_utils.AveragedModel(m)
    for _ in range(2):
        with t.no_grad():
            m.weight.add_(2)
        am.update_parameters(m)
    o = t.optim.SGD(m.parameters(), lr=1.0)
    s = t.optim.swa_utils.SWALR(o, swa_lr=0.1, anneal_epochs=3)
    out = [am.module.weight, am.n_averaged, s.get_last_lr()]
    for _ in range(4):
        o.step()
        s.step()
        out.append([round(x, 6) for x in s.get_last_lr()])
    ema = t.optim.swa_utils.AveragedModel(m, multi_avg_fn=t.optim.swa_utils.get_ema_multi_avg_fn(0.5))
    with t.no_grad():
        m.weight.add_(4)
    ema.update_parameters(m)
    return out + [ema.module.weight]



# -- test_torch.py / test_shape_ops.py: indexing, shapes, clamps, cumulative ops ----------------------
@probe
def movedim_diagonal_flip_roll(t):
    x, m = t.arange(24).reshape(2, 3, 4), t.arange(12).reshape(3, 4)
    return _errs([
        lambda: t.movedim(x, 0, 2), lambda: t.movedim(x, (0, 1), (2, 0)), lambda: t.moveaxis(x, [0], [-1]),
        lambda: t.movedim(x, (0, 0), (1, 2)), lambda: t.movedim(x, (0, 1), (1, 1)), lambda: t.movedim(x, (0,), (1, 2)),
        lambda: t.movedim(x, 3, 0), lambda: t.diagonal(x, 1, -1, 0), lambda: t.diagonal(x, -5, 1, 2),
        lambda: t.diagonal(x, 0, 1, 1), lambda: t.diag_embed(t.arange(6.).reshape(2, 3), 1, 0, 2),
        lambda: t.diag(t.arange(3.), -1), lambda: t.diag(x), lambda: t.diagflat(t.arange(4.).reshape(2, 2), 1),
        lambda: t.flip(m, [0, 0]), lambda: t.flip(m, [2]), lambda: t.fliplr(t.arange(3)),
        lambda: t.roll(m, (1, -1), (0, 1)), lambda: t.roll(m, (1, 2), 0), lambda: t.roll(t.ones(0, 2), 1, 0),
        lambda: t.rot90(m, -3, [1, 0]), lambda: t.rot90(m, 1, [0, 0]), lambda: t.rot90(m, 1, [0]),
        lambda: t.rot90(t.arange(3))])


@probe
def clamp_nonzero_where(t):
    x, y = t.arange(6.) - 2, t.tensor([[0, 1, 2], [3, 0, 0]])
    return _errs([
        lambda: t.clamp(x, min=t.tensor(0.)), lambda: t.clamp(x), lambda: t.clamp(x, 2, 1),
        lambda: t.clamp(t.arange(6), 1.5, 3), lambda: t.clamp(t.arange(6), t.tensor(1.5)),
        lambda: x.clone().clamp_(min=t.tensor([1.])), lambda: t.clamp(t.tensor([float("nan"), 1.]), 0, 0.5),
        lambda: t.nonzero(y, as_tuple=True), lambda: y.nonzero_static(size=5, fill_value=-2),
        lambda: t.where(y > 0, y, 1.5), lambda: t.where(y > 0, 2, 1.5), lambda: t.where(y, y, y),
        lambda: t.nonzero(t.tensor(3)), lambda: t.count_nonzero(y, dim=(0, 1))])


@probe
def index_and_scatter_ops(t):
    x, src = t.zeros(3, 4), t.arange(8.).reshape(2, 4)
    s12, idx = t.arange(12.).reshape(3, 4), t.tensor([[0, 1, 2, 0], [2, 0, 0, 1]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # index_reduce's beta and scatter's reduce= deprecation warnings
        return _errs([
            lambda: x.clone().index_add_(0, t.tensor([0, 2]), src, alpha=2),
            lambda: x.clone().index_add(0, t.tensor([[0, 2]]), src),
            lambda: x.clone().index_copy_(0, t.tensor([2, 0]), src),
            lambda: x.clone().index_fill_(1, t.tensor([1]), t.tensor([2.])),
            lambda: x.clone().index_reduce_(0, t.tensor([0, 0]), src, "prod", include_self=False),
            lambda: x.clone().index_reduce_(0, t.tensor([0, 0]), src, "foo"),
            lambda: t.index_select(src, 1, t.tensor([[0]])), lambda: t.index_select(src, 0, t.tensor([0.])),
            lambda: x.clone().index_add_(0, t.tensor([0, 2]), src.long()),
            lambda: x.clone().index_copy_(0, t.tensor([0]), src), lambda: x.clone().scatter_(0, idx, 1.5),
            lambda: x.clone().scatter_(0, idx, 2., reduce="multiply"),
            lambda: x.clone().scatter_reduce_(0, idx, s12, "amin", include_self=False),
            lambda: x.clone().scatter_reduce_(0, idx, s12, "mean"),
            lambda: t.gather(s12, 1, t.tensor([[4]])), lambda: t.gather(s12, 1, t.tensor([0])),
            lambda: t.gather(s12, 0, t.tensor([[0]], dtype=t.int32)), lambda: x.clone().scatter_(0, idx.float(), s12),
            lambda: x.clone().scatter_(0, t.tensor([[3]]), s12), lambda: x.clone().scatter_(0, idx, s12.long()),
            lambda: x.clone().scatter_(0, idx, s12, reduce="sum"), lambda: t.take_along_dim(s12, t.tensor([5, 0])),
            lambda: t.take(s12, t.tensor([[11, -1]])), lambda: t.take(s12, t.tensor([12]))])


@probe
def masked_ops(t):
    x = t.arange(6.).reshape(2, 3)
    m = t.tensor([[True, False, True], [False, False, True]])
    return _errs([
        lambda: x.masked_fill(m, t.tensor(2.)),
        lambda: x.masked_fill(m, t.tensor([2.])), lambda: x.masked_fill(m.long(), 1),
        lambda: x.masked_fill(m[0], 0), lambda: t.masked_select(x, m[0]),
        lambda: x.clone().masked_scatter_(m, t.arange(10., 16.)),
        lambda: x.clone().put_(t.tensor([0, 0]), t.tensor([9., 8.]), accumulate=True),
        lambda: x.clone().put_(t.tensor([6]), t.tensor([1.])), lambda: t.arange(6).reshape(2, 3).masked_fill(m, 1.5)])


@probe
def cumulative_ops(t):
    x = t.tensor([[1, 3, 2], [4, 0, 5]])
    return _errs([
        lambda: t.cumsum(x, 0, dtype=t.float32), lambda: t.cumprod(x, 1), lambda: t.cummax(x, 1),
        lambda: t.cummin(x.float(), 0),
        lambda: t.logcumsumexp(x.float(), 1), lambda: t.cumsum(t.tensor([True, True]), 0),
        lambda: t.cumsum(x, 2), lambda: t.logcumsumexp(x, 1), lambda: t.cumulative_trapezoid(x.float()),
        lambda: t.trapezoid(x.float(), dx=2), lambda: t.diff(x, n=2, prepend=t.tensor([[0], [0]])),
        lambda: t.diff(t.tensor([True, False, False]))])


@probe
def join_and_split(t):
    a, b = t.arange(6).reshape(2, 3), t.arange(3.)
    return _errs([
        lambda: t.cat([a, b.reshape(1, 3)]), lambda: t.cat([a, t.ones(2, 2)]), lambda: t.cat([a, t.tensor([])]),
        lambda: t.cat([]), lambda: t.cat([a, b]), lambda: t.stack([a, a.T]), lambda: t.stack([]),
        lambda: t.column_stack([b, a.T]), lambda: t.split(t.arange(7), [3, 3]), lambda: t.tensor_split(t.arange(7), 3),
        lambda: t.tensor_split(t.arange(7), t.tensor(3)),
        lambda: t.chunk(t.arange(7), 4), lambda: t.chunk(t.arange(7), 0),
        lambda: t.hsplit(a, 2), lambda: t.cat((a, a), dim=-3)])


@probe
def view_and_shape_checks(t):
    x = t.arange(24).reshape(2, 3, 4)
    return _errs([
        lambda: x.view(-1, 5), lambda: x.view(4, -1, -1), lambda: x.reshape(5, -1), lambda: x.transpose(0, 2).view(24),
        lambda: x.flatten(2, 1), lambda: x.squeeze((0, 1)), lambda: x.unsqueeze(4), lambda: x.expand(3, 3, 4),
        lambda: x.expand(-1, 3), lambda: x.permute(0, 0, 1), lambda: x.permute(0, 1), lambda: t.ones(3).mT,
        lambda: x.narrow(2, 3, 2), lambda: x.narrow(2, -1, 1), lambda: x.unfold(2, 5, 1), lambda: x.repeat(2, 1),
        lambda: t.repeat_interleave(t.tensor([1, 2])), lambda: t.broadcast_shapes((2, 1), (3,)),
        lambda: t.broadcast_shapes((2, 2), (3,))])



# -- test_nn.py / test/nn/test_convolution.py, interpolation, grids, attention, losses, init -------------
@probe
def convolution_checks(t):
    w = t.ones(4, 2, 3, 3)
    x = t.ones(1, 2, 5, 5)
    return _errs([
        lambda: F(t).conv2d(t.ones(1, 3, 5, 5), w), lambda: F(t).conv2d(t.ones(1, 2, 2, 2), w),
        lambda: F(t).conv2d(t.ones(2, 5, 5), w).shape, lambda: F(t).conv2d(t.ones(1, 4, 5, 5), w, groups=2).shape,
        lambda: F(t).conv2d(t.ones(1, 4, 5, 5), w, groups=3), lambda: F(t).conv2d(x, w, stride=0),
        lambda: F(t).conv2d(x, w, padding=-1), lambda: F(t).conv2d(x, w, padding="same", stride=2),
        lambda: F(t).conv2d(x, w, padding="foo"), lambda: F(t).conv2d(x, w, bias=t.ones(3)),
        lambda: F(t).conv2d(x.double(), w), lambda: F(t).conv1d(t.ones(1, 2, 5), w),
        lambda: F(t).conv_transpose2d(t.ones(1, 4, 3, 3), w, output_padding=2, stride=2),
        lambda: F(t).conv_transpose2d(t.ones(1, 4, 3, 3), w, stride=2, output_padding=1).shape,
        lambda: t.nn.Conv2d(3, 4, 3, groups=2), lambda: t.nn.Conv2d(4, 3, 3, groups=2),
        lambda: t.nn.Conv2d(4, 4, 3, padding="same", stride=2),
        lambda: t.nn.Conv2d(4, 4, 3, padding="valid")(t.ones(1, 4, 5, 5)).shape,
        lambda: t.nn.ConvTranspose2d(2, 2, 3, padding_mode="reflect"), lambda: t.nn.Conv2d(0, 2, 3),
        lambda: t.nn.Conv1d(2, 2, 3, groups=0),
        lambda: t.nn.ConvTranspose1d(2, 2, 3, stride=2)(t.ones(1, 2, 4), output_size=[10]).shape,
        lambda: t.nn.ConvTranspose1d(2, 2, 3, stride=2)(t.ones(1, 2, 4), output_size=[12])])


@probe
def conv_transpose_output_size(t):
    calls = []
    for m, x in [(t.nn.ConvTranspose2d(2, 2, 3, stride=2), t.ones(1, 2, 4, 4)),
                 (t.nn.ConvTranspose2d(2, 2, 3, stride=2), t.ones(2, 4, 4)),
                 (t.nn.ConvTranspose1d(2, 2, 3, stride=3, padding=1, dilation=2), t.ones(1, 2, 4)),
                 (t.nn.ConvTranspose3d(1, 1, 2, stride=2), t.ones(1, 1, 2, 2, 2))]:
        for size in ([10, 9], [2, 9, 9], [1, 2, 9, 9], [9], t.Size([12, 9]), (11,), [10], [8, 8, 8], (5, 4, 5),
                     [1, 1, 5, 5, 5], None):
            calls.append(lambda m=m, x=x, size=size: m(x, output_size=size).shape)
    return _errs(calls + [lambda: t.nn.ConvTranspose2d(2, 2, 3, stride=2)(t.ones(1, 2, 4, 4), [10, 10]).shape])


@probe
def interpolate_checks(t):
    x = t.arange(16.).reshape(1, 1, 4, 4)
    return _errs([
        lambda: F(t).interpolate(x, scale_factor=0.5, mode="bilinear"),
        lambda: F(t).interpolate(x, size=3, mode="bicubic", align_corners=True),
        lambda: F(t).interpolate(x, size=(3, 5), mode="nearest-exact"),
        lambda: F(t).interpolate(x, scale_factor=1.5, mode="area"),
        lambda: F(t).interpolate(x, size=2, scale_factor=2),
        lambda: F(t).interpolate(x), lambda: F(t).interpolate(x, size=2, mode="foo"),
        lambda: F(t).interpolate(x, size=2, mode="nearest", align_corners=True),
        lambda: F(t).interpolate(x, size=2, mode="linear"),
        lambda: F(t).interpolate(x, size=(2, 2, 2)), lambda: F(t).interpolate(x, size=[2, 2, 2]),
        lambda: F(t).interpolate(x, scale_factor=(2, 2, 2)), lambda: F(t).interpolate(x, scale_factor=[2, 2, 2]),
        lambda: F(t).interpolate(x, scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
        lambda: F(t).interpolate(x, scale_factor=1.7, mode="bilinear"), lambda: F(t).interpolate(x[0, 0], size=2),
        lambda: F(t).interpolate(x, scale_factor=2, mode="bilinear", antialias=True).shape,
        lambda: F(t).interpolate(x, size=2, mode="bilinear", antialias=True),
        lambda: t.nn.Upsample(size=3, mode="trilinear")(x), lambda: F(t).upsample(x, scale_factor=2).shape])


@probe
def interpolate_empty_sizes(t):
    return _errs([
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0), lambda: F(t).interpolate(t.ones(1, 1, 4), size=0),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4, 4), size=(1, 0, 2)),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=(0, 2), mode="bilinear"),
        lambda: F(t).interpolate(t.ones(1, 1, 4), size=0, mode="linear"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="bicubic"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="nearest-exact"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="area"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4, 4), size=0, mode="trilinear"),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), scale_factor=0.1),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=-1),
        lambda: F(t).interpolate(t.ones(1, 1, 4, 4), size=0, mode="bilinear", antialias=True),
        lambda: F(t).interpolate(t.ones(1, 1, 0, 4), size=2)])


@probe
def affine_grid_and_grid_sample(t):
    x = t.arange(16.).reshape(1, 1, 4, 4)
    th = t.tensor([[[0.8, 0.1, 0.05], [-0.1, 0.9, 0.]]])
    g = F(t).affine_grid(th, (1, 1, 3, 3), align_corners=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # align_corners' default warning
        return _errs([
            lambda: g, lambda: F(t).grid_sample(x, g, align_corners=False),
            lambda: F(t).grid_sample(x, g, mode="nearest", padding_mode="border", align_corners=True),
            lambda: F(t).grid_sample(x, g * 1.5, padding_mode="reflection", align_corners=False),
            lambda: F(t).grid_sample(x, g, mode="bicubic", align_corners=False),
            lambda: F(t).affine_grid(th, (1, 1, 3)), lambda: F(t).affine_grid(th, [1, 1, 3]),
            lambda: F(t).affine_grid(t.ones(1, 3, 3), (1, 1, 3, 3)), lambda: F(t).grid_sample(x, g, mode="foo"),
            lambda: F(t).grid_sample(x, g[..., :1]), lambda: F(t).affine_grid(th, (2, 1, 3, 3)),
            lambda: F(t).affine_grid(t.ones(3, 2, 3), (2, 1, 3, 3)),
            lambda: F(t).affine_grid(t.ones(1, 3, 4), (2, 1, 3, 3, 3)),
            lambda: F(t).affine_grid(th, (1, 1, 0, 3)), lambda: F(t).grid_sample(x, g, padding_mode="x"),
            lambda: F(t).affine_grid(th, (1, 1, 1, 3), align_corners=True)])


@probe
def multihead_attention_checks(t):
    m = t.nn.MultiheadAttention(4, 2)
    m2 = t.nn.MultiheadAttention(4, 2, kdim=3, vdim=5)
    q = t.ones(3, 2, 4)
    return _errs([
        lambda: t.nn.MultiheadAttention(5, 2), lambda: m(q, q, q)[0].shape, lambda: m(q, q, q)[1].shape,
        lambda: m(q, q, q, average_attn_weights=False)[1].shape, lambda: m(q, q, q, need_weights=False)[1],
        lambda: m(q, t.ones(3, 2, 5), q), lambda: m(q, q, t.ones(4, 2, 4)), lambda: m(q, q, q, attn_mask=t.ones(2, 2)),
        lambda: m(q, q, q, key_padding_mask=t.ones(2, 4, dtype=t.bool)),
        lambda: m(q, q, q, attn_mask=t.zeros(3, 3, dtype=t.bool))[0].shape,
        lambda: m(t.ones(3, 4), t.ones(3, 4), t.ones(3, 4))[0].shape,
        lambda: m(t.ones(3, 4), t.ones(3, 4), t.ones(2, 4)),
        lambda: m2(q, t.ones(3, 2, 3), t.ones(3, 2, 5))[0].shape, lambda: m2(q, t.ones(3, 2, 3), t.ones(4, 2, 5)),
        lambda: [k for k, _ in m.named_parameters()],
        lambda: [k for k, _ in t.nn.MultiheadAttention(4, 2, kdim=3, vdim=5, bias=False,
                                                       add_bias_kv=True).named_parameters()],
        lambda: m(q, q, q, is_causal=True), lambda: t.nn.MultiheadAttention(4, 2, batch_first=True)(q, q, q)[0].shape])


@probe
def transformer_checks(t):
    T = t.nn.Transformer
    return _errs([
        lambda: T(4, 2, 1, 1, 8)(t.ones(3, 2, 4), t.ones(3, 3, 4)),
        lambda: T(4, 2, 1, 1, 8)(t.ones(3, 2, 4), t.ones(5, 2, 5)),
        lambda: T(4, 2, 1, 1, 8)(t.ones(3, 2, 4), t.ones(5, 2, 4)).shape, lambda: T.generate_square_subsequent_mask(3),
        lambda: t.nn.TransformerEncoderLayer(4, 2, activation="foo"), lambda: t.nn.TransformerEncoderLayer(4, 3),
        lambda: [k for k, _ in t.nn.TransformerDecoderLayer(4, 2, 8).named_parameters()],
        lambda: len(t.nn.TransformerEncoder(t.nn.TransformerEncoderLayer(4, 2, 8), 2,
                                            enable_nested_tensor=False).layers)])


@probe
def loss_checks(t):
    x = t.arange(12.).reshape(3, 4) / 10
    y = t.tensor([0, 3, 1])
    return _errs([
        lambda: F(t).nll_loss(x, t.tensor([0, 4, 1])), lambda: F(t).nll_loss(x, t.tensor([0, 1])),
        lambda: F(t).nll_loss(x, t.tensor([0., 1., 2.])),
        lambda: F(t).nll_loss(x, t.tensor([0, 1, 2]), weight=t.ones(3)),
        lambda: F(t).nll_loss(x, t.tensor([0, -100, 2])), lambda: F(t).nll_loss(x, t.tensor([-100] * 3)),
        lambda: F(t).nll_loss(x, t.tensor([-100] * 3), reduction="sum"),
        lambda: F(t).cross_entropy(x, y, label_smoothing=0.2),
        lambda: F(t).cross_entropy(x, y, label_smoothing=1.5),
        lambda: F(t).cross_entropy(x, x.softmax(1), label_smoothing=0.1),
        lambda: F(t).cross_entropy(x, y, weight=t.tensor([1., 2., 3., 4.]), label_smoothing=0.3, ignore_index=3),
        lambda: F(t).cross_entropy(x[0], t.tensor(2)), lambda: F(t).cross_entropy(x, y, reduction="foo"),
        lambda: F(t).mse_loss(x, t.ones(4)), lambda: F(t).l1_loss(x, t.ones(2, 4)),
        lambda: F(t).huber_loss(x, t.zeros(3, 4), delta=0.5), lambda: F(t).smooth_l1_loss(x, t.zeros(3, 4), beta=-1),
        lambda: F(t).soft_margin_loss(x, t.ones(3, 4)), lambda: F(t).multilabel_soft_margin_loss(x, t.ones(3, 4)),
        lambda: F(t).hinge_embedding_loss(x, t.ones(3, 4), margin=0.5),
        lambda: F(t).cosine_embedding_loss(x, x.flip(0), t.tensor([1, -1, 1])),
        lambda: F(t).cosine_embedding_loss(x, x, t.tensor([1, -1])),
        lambda: t.nn.CrossEntropyLoss(reduce=False)(x, t.tensor([0, 1, 2])).shape])


@probe
def ctc_loss_cases(t):
    lp = (t.arange(5 * 2 * 4.).reshape(5, 2, 4) / 10).log_softmax(2).requires_grad_()
    tg, il, tl = t.tensor([[1, 2, 2], [1, 3, 0]]), t.tensor([5, 4]), t.tensor([3, 2])
    loss = F(t).ctc_loss(lp, tg, il, tl)
    loss.backward()
    return [loss, lp.grad] + _errs([
        lambda: F(t).ctc_loss(lp, tg, il, tl, reduction="none"),
        lambda: F(t).ctc_loss(lp, tg, il, tl, reduction="sum", zero_infinity=True),
        lambda: F(t).ctc_loss(lp, tg, t.tensor([6, 4]), tl), lambda: F(t).ctc_loss(lp, tg, il, t.tensor([4, 2])),
        lambda: F(t).ctc_loss(lp, t.tensor([1, 2, 2, 1, 3]), il, tl), lambda: F(t).ctc_loss(lp, tg, il, tl, blank=4),
        lambda: F(t).ctc_loss(lp, tg, il, t.tensor([3, 4]), zero_infinity=True)])


@probe
def dropout_checks(t):
    x = t.ones(4, 4)
    return _errs([
        lambda: F(t).dropout(x, 1.5), lambda: F(t).dropout(x, -0.1),
        lambda: t.nn.Dropout(2), lambda: F(t).dropout(x, 1.0),
        lambda: F(t).dropout(x, 0.0),
        lambda: F(t).dropout(x, 0.5, training=False), lambda: F(t).dropout2d(t.ones(2, 3)).shape,
        lambda: F(t).alpha_dropout(x, 1.0), lambda: F(t).feature_alpha_dropout(x, 0.0),
        lambda: F(t).dropout1d(t.ones(2, 2, 2, 2)), lambda: F(t).dropout3d(t.ones(2, 2)).shape,
        lambda: t.nn.Dropout(0.5).eval()(x), lambda: repr(t.nn.AlphaDropout(0.2)),
        lambda: F(t).dropout(t.ones(3, dtype=t.long), 0.5)])


@probe
def init_checks(t):
    init = t.nn.init
    return _errs([
        lambda: init.xavier_uniform_(t.ones(3)),
        lambda: init.kaiming_normal_(t.empty(0, 3)), lambda: init.orthogonal_(t.ones(3)),
        lambda: init.sparse_(t.ones(3, 3, 3), 0.1),
        lambda: init.eye_(t.ones(3, 3, 3)), lambda: init.dirac_(t.ones(3, 3)),
        lambda: init.calculate_gain("leaky_relu", 0.2),
        lambda: init.calculate_gain("foo"), lambda: init.calculate_gain("tanh"),
        lambda: init.calculate_gain("selu"), lambda: init.calculate_gain("leaky_relu", "x"),
        lambda: init.kaiming_uniform_(t.ones(3, 3), mode="foo"), lambda: init.constant_(t.ones(2), 3.),
        lambda: init.eye_(t.ones(2, 3)), lambda: init.dirac_(t.ones(4, 2, 3), groups=2),
        lambda: init.dirac_(t.ones(3, 2, 3), groups=2),
        lambda: bool(init.trunc_normal_(t.ones(1000), a=-0.1, b=0.1).abs().max() <= 0.1),
        lambda: init._calculate_fan_in_and_fan_out(t.ones(3, 4, 5)),
        lambda: init._calculate_fan_in_and_fan_out(t.ones(3)),
        lambda: init.xavier_normal_(t.ones(2, 3), gain=2.).shape])



# -- test_torch.py / test_nn.py / test_autograd.py: tensors, dtypes, data, hooks, rnn utils ---------------
@probe
def factories(t):
    return _errs([lambda: t.tensor([[1, 2], [3]]), lambda: t.tensor([1, "a"]), lambda: t.tensor([]).shape,
               lambda: t.tensor([[]]).shape, lambda: t.tensor(3.5, dtype=t.int32), lambda: t.tensor([True, 2]),
                 lambda: t.tensor([1, 2.5]).dtype, lambda: t.tensor([1 + 2j]).dtype,
                 lambda: t.tensor([t.tensor(1.), t.tensor(2.)]),
                 lambda: t.tensor([t.ones(2), t.ones(2)]), lambda: t.zeros(2, -1),
                 lambda: t.ones((2, 3), dtype=t.int8), lambda: t.full((2,), 3).dtype, lambda: t.full((2,), True).dtype,
                 lambda: t.full((2,), 1.5, dtype=t.int64), lambda: t.arange(0, 1, 0.3), lambda: t.arange(5, 1),
                 lambda: t.arange(0, 5, 0), lambda: t.arange(1, 4, dtype=t.float16), lambda: t.linspace(0, 1, 5),
                 lambda: t.linspace(0, 1, -1), lambda: t.logspace(0, 2, 3, base=2),
                 lambda: t.eye(2, 3), lambda: t.eye(-1),
                 lambda: t.empty(2, 3).shape, lambda: t.zeros_like(t.ones(2), dtype=t.int32),
                 lambda: t.full_like(t.ones(2, dtype=t.int32), 2.7),
                 lambda: t.randint(3, 10, (2,)).dtype, lambda: t.randint(5, (0,)),
                 lambda: t.randint(5, 3, (2,)), lambda: t.randperm(0), lambda: t.tril_indices(3, 3),
                 lambda: t.triu_indices(3, 4, 1),
                 lambda: t.as_tensor([1, 2], dtype=t.float64), lambda: t.scalar_tensor(3),
                 lambda: t.range(0, 3) if False else t.arange(3.), lambda: t.zeros(2, 3, names=None).shape,
                 lambda: t.zeros([2, 3]).shape, lambda: t.zeros(t.Size([2])).shape, lambda: t.zeros((2, 3.0))])


@probe
def tensor_methods(t):
    x = t.arange(6.).reshape(2, 3)
    return _errs([lambda: x.tolist(), lambda: x[0, 1].item(), lambda: x.item(),
               lambda: x.new_zeros(2), lambda: x.new_full((2,), 7),
               lambda: x.new_tensor([1, 2]).dtype, lambda: x.new_empty((0,)).dtype,
                 lambda: x.new_ones(2, dtype=t.int32), lambda: x.type(), lambda: x.type(t.int32),
                 lambda: x.int().type(), lambda: x.type("torch.DoubleTensor").dtype, lambda: x.is_floating_point(),
                 lambda: x.element_size(), lambda: x.nelement(), lambda: x.dim(), lambda: x.size(1),
                 lambda: x.size(-3), lambda: x.stride(), lambda: x.t().stride(), lambda: x.t().is_contiguous(),
                 lambda: x.storage_offset(), lambda: x[1:].storage_offset(), lambda: x.is_same_size(t.ones(2, 3)),
                 lambda: x.numel(), lambda: x.ndimension(),
                 lambda: x.is_complex(), lambda: x.data_ptr() == x.data_ptr(),
                 lambda: bool(t.tensor([1])), lambda: bool(t.tensor([1, 2])), lambda: int(t.tensor(2.7)),
                 lambda: float(t.tensor([3])), lambda: int(t.ones(2)), lambda: complex(t.tensor(1.)),
                 lambda: len(x), lambda: len(t.tensor(1.)), lambda: list(t.tensor(1.)),
                 lambda: x.__index__() if False else t.tensor(3).__index__(),
                 lambda: t.tensor(3.).__index__(), lambda: [1, 2, 3][t.tensor(1)],
                 lambda: hash(x) == hash(x), lambda: x.__array__().dtype.name,
                 lambda: x.apply_(lambda v: v * 2) if False else x.clone().apply_(lambda v: v * 2),
                 lambda: x.clone().map_(x, lambda a, b: a + b),
                 lambda: x.clone().resize_(3, 3).shape, lambda: x.clone().resize_as_(t.ones(1, 2)),
                 lambda: x.clone().zero_(),
                 lambda: x.clone().fill_(t.tensor(2)), lambda: x.clone().fill_(t.tensor([2, 3])),
                 lambda: x.clone().copy_(t.ones(3)), lambda: x.clone().copy_(t.ones(4)),
                 lambda: x.clone().set_(t.ones(4)).shape, lambda: x.dim_order(), lambda: x.t().dim_order(),
                 lambda: x.clone(memory_format=t.channels_last), lambda: x.nbytes, lambda: x.itemsize,
                 lambda: x.H.shape, lambda: x.real.shape, lambda: x.imag])


@probe
def dtype_conversions(t):
    x = t.tensor([-1.7, 0.5, 300.2])
    return _errs([lambda: x.int(), lambda: x.to(t.uint8), lambda: x.char(), lambda: x.bool(),
               lambda: x.half(), lambda: x.bfloat16(), lambda: x.to(t.complex64), lambda: t.tensor([1 + 2j]).float(),
                 lambda: t.tensor([1 + 2j]).real,
                 lambda: x.to("cpu", t.float64), lambda: x.to(t.ones(1, dtype=t.int16)),
                 lambda: x.to(dtype=t.int64, copy=True), lambda: x.to(x) is x, lambda: x.to(t.float32) is x,
                 lambda: x.to(t.float32, copy=True) is x, lambda: x.to("foo"),
                 lambda: x.type(t.bool),
                 lambda: t.tensor([float("nan"), float("inf")]).int(), lambda: t.tensor([2 ** 40]).int()])


@probe
def finfo_iinfo(t):
    return _errs([lambda: (t.finfo(t.float16).max, t.finfo(t.float16).eps, t.finfo(t.float16).tiny,
                           t.finfo(t.bfloat16).resolution, t.finfo().dtype, t.finfo(t.float64).bits),
                 lambda: (t.iinfo(t.int8).min, t.iinfo(t.uint8).max, t.iinfo(t.int64).bits), lambda: t.iinfo(t.float32),
                 lambda: t.finfo(t.int32), lambda: str(t.finfo(t.float32)), lambda: str(t.iinfo(t.int16)),
                 lambda: t.promote_types(t.int8, t.uint8), lambda: t.promote_types(t.bool, t.float16),
                 lambda: t.can_cast(t.float32, t.int32),
                 lambda: t.can_cast(t.int32, t.float32), lambda: t.result_type(t.tensor([1]), 1.5),
                 lambda: t.result_type(2, 3.), lambda: t.get_default_dtype(), lambda: t.is_tensor(3),
                 lambda: t.is_floating_point(t.ones(1)),
                 lambda: t.is_nonzero(t.tensor([0.])), lambda: t.is_nonzero(t.tensor([1, 2])),
                 lambda: t.numel(t.ones(2, 3)), lambda: t.float32.is_floating_point, lambda: t.int32.is_signed,
                 lambda: t.uint8.is_signed, lambda: t.complex64.to_real(),
                 lambda: t.float32.to_complex(), lambda: t.float16.itemsize])


@probe
def save_load(t):
    buf = io.BytesIO()
    x = t.arange(6.).reshape(2, 3)
    t.save({"a": x, "b": [x[0], 3], "c": t.nn.Linear(2, 2).state_dict()["bias"].shape}, buf)
    buf.seek(0)
    d = t.load(buf)
    v = x[:, 1]
    buf2 = io.BytesIO()
    t.save([x, v], buf2)
    buf2.seek(0)
    a, b = t.load(buf2)
    b[0] = 100.
    return d["a"], d["b"], d["c"], a, b


@probe
def rng_state(t):
    t.manual_seed(3)
    s = t.get_rng_state()
    a = t.rand(3)
    t.set_rng_state(s)
    b = t.rand(3)
    g = t.Generator().manual_seed(5)
    c = t.rand(2, generator=g)
    g2 = t.Generator()
    g2.manual_seed(5)
    d = t.rand(2, generator=g2)
    return (bool((a == b).all()), bool((c == d).all()), s.dtype, t.initial_seed(), g.initial_seed(),
            _errs([lambda: t.Generator(device="foo"), lambda: t.manual_seed(-1) is None,
                   lambda: t.manual_seed(2 ** 64)]))


@probe
def data_utils(t):
    D = t.utils.data
    ds = D.TensorDataset(t.arange(10.), t.arange(10))
    dl = D.DataLoader(ds, batch_size=4, drop_last=False)
    r = [len(ds), len(dl), [b[1].tolist() for b in dl], len(D.DataLoader(ds, batch_size=4, drop_last=True))]
    a, b = D.random_split(range(10), [7, 3], generator=t.Generator().manual_seed(0))
    r += [len(a), len(b)]
    c = D.random_split(range(10), [0.5, 0.3, 0.2])
    r.append([len(x) for x in c])
    r += _errs([lambda: D.random_split(range(10), [5, 4]), lambda: D.TensorDataset(t.ones(3), t.ones(4)),
               lambda: D.DataLoader(ds, batch_size=0), lambda: D.DataLoader(ds, shuffle=True, sampler=[0]),
               lambda: D.DataLoader(ds, batch_sampler=[[0]], batch_size=2),
               lambda: list(D.BatchSampler(range(5), 2, False)),
               lambda: list(D.BatchSampler(range(5), 2, True)), lambda: len(D.ConcatDataset([ds, ds])),
               lambda: D.ConcatDataset([ds, ds])[15][1].item(),
               lambda: D.Subset(ds, [1, 3])[1][1].item(),
               lambda: D.default_collate([{"a": 1, "b": t.ones(2)}, {"a": 2, "b": t.zeros(2)}]),
               lambda: D.default_collate([(1, 2.0), (3, 4.0)]), lambda: D.default_collate(["a", "b"]),
               lambda: D.default_collate([t.ones(2), t.ones(3)]), lambda: list(D.SequentialSampler(range(3))),
               lambda: D.WeightedRandomSampler([0.1, 0.9], 3).num_samples,
               lambda: D.WeightedRandomSampler([0.1], -1), lambda: list(D.DataLoader(range(5), batch_size=None)),
               lambda: len(D.DataLoader(D.TensorDataset(t.ones(5)), batch_size=2)),
               lambda: next(iter(D.DataLoader([{"x": t.ones(2)}] * 3, batch_size=2)))["x"].shape,
               lambda: D.ConcatDataset([]), lambda: type(D.ChainDataset([])).__name__,
               lambda: D.RandomSampler(range(3), num_samples=0),
               lambda: D.DataLoader(ds, num_workers=-1), lambda: D.Subset(ds, [1, 3]).indices])
    return r



@probe
def module_hooks(t):
    m = t.nn.Linear(2, 2)
    log = []
    with t.no_grad():
        m.weight.copy_(t.tensor([[1., 2.], [3., 4.]]))
        m.bias.zero_()
    h1 = m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
    h2 = m.register_forward_hook(lambda mod, args, out: out + 1)
    h3 = m.register_forward_pre_hook(lambda mod, args, kwargs: log.append(("pre_kw", sorted(kwargs))), with_kwargs=True)
    h4 = m.register_forward_hook(lambda mod, args, kwargs, out: log.append(("fwd_kw", len(args))), with_kwargs=True,
                                 prepend=True)
    h5 = m.register_full_backward_hook(lambda mod, gi, go: log.append(
        ("bwd", [g.shape if g is not None else None for g in gi], [g.shape for g in go])))
    h6 = m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    x = t.ones(1, 2, requires_grad=True)
    y = m(x)
    y.sum().backward()
    r = [y, x.grad, list(log)]
    for h in (h1, h2, h3, h4, h5, h6):
        h.remove()
    r.append(m(t.ones(1, 2)))
    gh = t.nn.modules.module.register_module_forward_hook(lambda mod, a, o: o * 0)
    r.append(m(t.ones(1, 2)))
    gh.remove()
    return r


@probe
def state_dict_hooks(t):
    m = t.nn.Linear(2, 2)
    m.register_state_dict_post_hook(lambda mod, sd, prefix, local_metadata: sd.__setitem__(prefix + "extra", t.ones(1)))
    m.register_load_state_dict_pre_hook(lambda mod, sd, prefix, *a: sd.pop(prefix + "extra", None))
    sd = m.state_dict()
    r = [sorted(sd)]
    r.append(str(m.load_state_dict(sd)))
    m2 = t.nn.Linear(2, 2)
    m2.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    r.append(str(m2.load_state_dict({"weight": t.ones(2, 2)}, strict=True)))
    return r


@probe
def module_misc(t):
    m = t.nn.Sequential(t.nn.Linear(2, 2), t.nn.ReLU())
    r = _errs([lambda: m.register_module("x", t.nn.Tanh()) or list(m._modules),
               lambda: m.to_empty(device="cpu")[0].weight.shape,
               lambda: m.get_extra_state(), lambda: m.set_submodule("0", t.nn.Identity()) or type(m[0]).__name__,
              lambda: m.set_submodule("9.a", t.nn.Identity()), lambda: m.training, lambda: m.eval().training,
              lambda: m.train(False)[1].training,
              lambda: m.share_memory() is m,
              lambda: m.half().float()[0].__class__.__name__ if hasattr(m[0], "weight") else "id",
              lambda: [n for n, _ in m.named_modules(remove_duplicate=False)], lambda: t.nn.Module().forward(1),
              lambda: t.nn.Linear(2, 2).extra_repr(), lambda: dir(t.nn.Linear(1, 1)).count("weight"),
              lambda: t.nn.Linear(2, 2, bias=False).bias, lambda: t.nn.Linear(0, 2)(t.ones(3, 0)),
              lambda: t.nn.Identity(1, a=2)(t.ones(1)), lambda: t.nn.Linear(2, 2).compile if False else 1])
    return r


@probe
def rnn_utils(t):
    U = t.nn.utils.rnn
    seqs = [t.arange(3.), t.arange(1.), t.arange(2.) + 5]
    p = U.pad_sequence(seqs, batch_first=True, padding_value=-1)
    r = [p, U.pad_sequence(seqs), U.pad_sequence(seqs, padding_side="left", batch_first=True)]
    packed = U.pack_padded_sequence(p, [3, 1, 2], batch_first=True, enforce_sorted=False)
    r += [packed.data, packed.batch_sizes, packed.sorted_indices, packed.unsorted_indices]
    out, lens = U.pad_packed_sequence(packed, batch_first=True, total_length=4)
    r += [out, lens]
    ps = U.pack_sequence(seqs, enforce_sorted=False)
    r += [ps.data, [x.tolist() for x in U.unpad_sequence(p, t.tensor([3, 1, 2]), batch_first=True)],
          [x.tolist() for x in U.unpack_sequence(ps)]]
    r += _errs([lambda: U.pack_padded_sequence(p, [3, 1, 2], batch_first=True),
               lambda: U.pack_padded_sequence(p, [3, 1, 0], batch_first=True, enforce_sorted=False),
               lambda: U.pad_packed_sequence(packed, total_length=2),
               lambda: U.pack_padded_sequence(p, t.tensor([3, 2]), batch_first=True), lambda: U.pad_sequence([])])
    lstm = t.nn.LSTM(1, 2, batch_first=True)
    o, (h, c) = lstm(U.pack_padded_sequence(p.unsqueeze(-1), [3, 1, 2], batch_first=True, enforce_sorted=False))
    r += [type(o).__name__, tuple(h.shape), tuple(U.pad_packed_sequence(o, batch_first=True)[0].shape)]
    return r


def _cube_sum(x):
    return (x ** 3).sum()


def _mul(x, y):
    return x * y


@probe
def autograd_functional(t):
    AF = t.autograd.functional
    x = t.tensor([1., 2.])
    y = t.tensor([3., 4.])
    return _errs([lambda: AF.jacobian(_mul, (x, y)), lambda: AF.hessian(_cube_sum, x), lambda: AF.vjp(_cube_sum, x),
               lambda: AF.jvp(_mul, (x, y), (t.ones(2), t.ones(2))),
               lambda: AF.vhp(_cube_sum, x, t.ones(2)), lambda: AF.hvp(_cube_sum, x, t.ones(2)),
                 lambda: AF.jacobian(lambda a: a.exp(), x, vectorize=True, strategy="forward-mode"),
                 lambda: AF.jacobian(lambda a: a.exp(), x, create_graph=True)[0].requires_grad,
                 lambda: AF.vjp(_mul, (x, y)),
                 lambda: AF.jacobian(lambda a: 3, x),
                 
                 lambda: AF.jacobian(lambda a: t.zeros(2), x),
                 lambda: AF.hessian(_cube_sum, x, strict=True)])


@probe
def checkpoint_grad(t):
    cp = t.utils.checkpoint
    lin = t.nn.Linear(2, 2)
    with t.no_grad():
        lin.weight.copy_(t.tensor([[1., 2.], [3., 4.]]))
        lin.bias.zero_()
    x = t.ones(1, 2, requires_grad=True)
    y = cp.checkpoint(lambda a: lin(a).tanh(), x, use_reentrant=False)
    y.sum().backward()
    r = [y, x.grad, lin.weight.grad]
    x2 = t.ones(1, 2, requires_grad=True)
    y2 = cp.checkpoint_sequential(t.nn.Sequential(lin, t.nn.Tanh(), lin), 2, x2, use_reentrant=False)
    y2.sum().backward()
    r += [y2, x2.grad]
    return r


@probe
def bilinear_checks(t):
    cases = [((2, 3), (3, 4), (5, 3, 4)), ((2, 2, 3), (2, 3, 4), (5, 3, 4)), ((3,), (2, 4), (5, 3, 4)),
             ((2, 3), (2, 4), (5, 3, 4), (4,)), ((2, 3), (2, 4), (5, 4, 4)), ((2, 3), (2, 5), (5, 3, 4)),
             ((2, 3), (2, 4), (3, 4)), ((2, 3), (2, 4), (5, 3, 4), (1, 5)), ((3,), (4,), (5, 3, 4)),
             ((2, 3), (2, 4), (5, 3, 4), (5,))]
    dtypes = [(t.float64, t.float32, t.float32, None), (t.float32, t.float32, t.float32, t.float16),
              (t.float32, t.int64, t.float32, None)]
    x1 = t.arange(6.).reshape(2, 3).requires_grad_()
    y = F(t).bilinear(x1, t.arange(8.).reshape(2, 4), t.arange(60.).reshape(5, 3, 4) / 10, t.ones(5))
    y.sum().backward()
    return [y, x1.grad] + _errs(
        [lambda a=a: F(t).bilinear(*[t.ones(s) for s in a]) for a in cases]
        + [lambda d=d: F(t).bilinear(t.ones(2, 3, dtype=d[0]), t.ones(2, 4, dtype=d[1]), t.ones(5, 3, 4, dtype=d[2]),
                                     None if d[3] is None else t.ones(5, dtype=d[3])) for d in dtypes])



# -- test_torch.py reductions, sorting, products; test_nn.py pruning, copies, functional_call; distributions --
@probe
def reductions(t):
    x = t.tensor([[1., 5., 3.], [4., 2., 6.]])
    return _errs([lambda: t.std(x, 1, correction=0),
               lambda: t.var(x, dim=(0, 1), unbiased=False), lambda: t.std_mean(x, 0),
               lambda: t.var(t.ones(1)), lambda: x.var(correction=2), lambda: t.var(x, 1, correction=3),
                 lambda: t.norm(x), lambda: t.norm(x, p="fro", dim=1), lambda: t.norm(x, p="nuc"),
                 lambda: t.norm(x, p=0), lambda: t.norm(x, dim=(0, 1), p=3), lambda: t.linalg.vector_norm(x, ord=-1),
                 lambda: t.linalg.norm(x, ord=2),
                 lambda: t.linalg.matrix_norm(x, ord=3), lambda: t.linalg.vector_norm(t.arange(3)),
                 lambda: t.median(x), lambda: t.median(x, 1), lambda: t.nanmedian(t.tensor([1., float("nan"), 3.])),
                 lambda: t.mode(t.tensor([1, 2, 2, 3, 3])), lambda: t.kthvalue(x, 2, 1),
                 lambda: t.kthvalue(x, 4, 1),
                 lambda: t.quantile(x, 0.3, dim=1, interpolation="midpoint"), lambda: t.quantile(x, 1.5),
                 lambda: t.quantile(x.long(), 0.5), lambda: t.nanquantile(x, t.tensor([0.1, 0.9])),
                 lambda: t.logsumexp(x, 1),
                 lambda: t.logsumexp(t.tensor([float("-inf")] * 2), 0), lambda: t.prod(x, 1, dtype=t.int64),
                 lambda: t.sum(t.tensor([True, True])),
                 lambda: t.mean(t.arange(3)), lambda: t.mean(t.arange(3), dtype=t.float32),
                 lambda: t.amax(x, (0, 1)), lambda: t.amax(x, ()), lambda: t.max(x, 1, keepdim=True),
                 lambda: t.max(t.ones(0)), lambda: t.max(t.ones(0, 3), 1), lambda: t.argmax(x),
                 lambda: t.argmax(x, 0, keepdim=True), lambda: t.aminmax(x, dim=1),
                 lambda: t.all(x, 1), lambda: t.any(t.tensor([0, 2])),
                 lambda: t.all(x, (0, 1)), lambda: t.nansum(t.tensor([1., float("nan")])),
                 lambda: t.nanmean(t.tensor([float("nan")])), lambda: t.count_nonzero(x > 2), lambda: t.sum(x, dim=5)])


@probe
def sort_search(t):
    x = t.tensor([3., 1., 2., 1.])
    return _errs([lambda: t.sort(x, stable=True), lambda: t.sort(x, descending=True), lambda: t.argsort(x, stable=True),
               lambda: t.topk(x, 2), lambda: t.topk(x, 5), lambda: t.topk(x, 2, largest=False, sorted=True),
                 lambda: t.msort(t.tensor([[2, 1], [0, 3]])), lambda: t.unique(x),
                 lambda: t.unique(x, return_inverse=True, return_counts=True),
                 lambda: t.unique(t.tensor([[1, 2], [1, 2], [0, 1]]), dim=0),
                 lambda: t.unique_consecutive(t.tensor([1, 1, 2, 2, 1]), return_counts=True),
                 lambda: t.bincount(t.tensor([0, 2, 2])),
                 lambda: t.bincount(t.tensor([0, 1]), weights=t.tensor([0.5, 2.])),
                 lambda: t.bincount(t.tensor([-1])), lambda: t.bincount(t.tensor([0.])), lambda: t.histc(x, 3),
                 lambda: t.histc(x, 3, 5, 1),
                 lambda: t.histogram(x, 2), lambda: t.searchsorted(t.tensor([1, 3, 5]), t.tensor([3, 4])),
                 lambda: t.searchsorted(t.tensor([1, 3, 5]), t.tensor([3]), right=True),
                 lambda: t.searchsorted(t.tensor([1, 3, 5]), 3, side="left"),
                 lambda: t.searchsorted(t.tensor([1, 3, 5]), t.tensor([3]), side="right", right=False),
                 lambda: t.bucketize(t.tensor([3, 6]), t.tensor([1, 3, 5])),
                 lambda: t.bucketize(t.tensor([3]), t.tensor([[1, 3]])),
                 lambda: t.isin(t.tensor([1, 2, 3]), t.tensor([2])), lambda: t.isin(t.tensor([1, 2]), 2, invert=True),
                 lambda: t.sort(t.tensor(3.)), lambda: t.topk(t.tensor(3.), 1),
                 lambda: t.unique(t.tensor([2, 1]), sorted=False), lambda: t.histc(t.arange(3), 3)])


@probe
def linalg_like(t):
    a = t.arange(6.).reshape(2, 3)
    b = t.arange(12.).reshape(3, 4)
    return _errs([lambda: t.matmul(a, a), lambda: t.mm(a, b.T), lambda: t.bmm(a, b),
               lambda: t.mv(a, t.ones(2)),
               lambda: t.dot(t.ones(3), t.ones(2)), lambda: t.dot(t.ones(3), t.ones(3, dtype=t.float64)),
                 lambda: t.matmul(t.ones(3), t.ones(3)),
                 lambda: t.matmul(t.ones(()), t.ones(3)), lambda: t.einsum("ij,jk->ik", a, b),
                 lambda: t.einsum("ij,jk", a, a),
                 lambda: t.einsum("ii", a), lambda: t.einsum("i,i->", t.ones(3), t.ones(3)),
                 lambda: t.einsum("...j,jk->...k", a, b),
                 lambda: t.einsum("ij->ji", [a]), lambda: t.einsum("ij,j", a, t.ones(2)),
                 lambda: t.tensordot(a, b, 1),
                 lambda: t.tensordot(a, b, ([1], [1])), lambda: t.tensordot(a, b, dims=([1], [0])),
                 lambda: t.kron(a, t.eye(2)), lambda: t.outer(t.ones(2), t.arange(3)),
                 lambda: t.cross(t.ones(3), t.arange(3.), dim=0),
                 lambda: t.cdist(a, a, p=1),
                 lambda: t.cdist(a, t.ones(2, 4)), lambda: t.trace(b), lambda: t.trace(t.ones(2, 2, 2)),
                 lambda: t.tril(b, -1),
                 lambda: t.triu(t.ones(3)), lambda: t.addmm(t.ones(2, 4), a, b, beta=0.5, alpha=2),
                 lambda: t.addmv(t.ones(2), a, t.ones(3)),
                 lambda: t.baddbmm(t.ones(1, 2, 4), a[None], b[None]), lambda: t.linalg.multi_dot([a, b, t.ones(4)]),
                 lambda: t.meshgrid(t.arange(2), t.arange(3), indexing="xy")[0],
                 lambda: t.cartesian_prod(t.arange(2), t.arange(2)),
                 lambda: t.combinations(t.arange(3), 2, with_replacement=True),
                 lambda: t.vander(t.tensor([1, 2, 3]), 3),
                 lambda: t.block_diag(t.ones(1, 2), t.ones(2, 1)), lambda: t.cov(a),
                 lambda: t.corrcoef(a), lambda: t.allclose(a, a + 1e-9), lambda: t.equal(a, a.clone()),
                 lambda: t.isclose(a, a + 1e-3, atol=1e-2), lambda: t.matmul(a.long(), b),
                 lambda: t.inner(a, a), lambda: t.vdot(t.ones(2), t.ones(2))])

def _small_linear(t):
    m = t.nn.Linear(3, 2)
    with t.no_grad():
        m.weight.copy_(t.tensor([[0.1, -0.5, 0.3], [0.2, 0.05, -0.9]]))
        m.bias.copy_(t.tensor([0.1, -0.2]))
    return m


@probe
def prune_basic(t):
    P = t.nn.utils.prune
    m = _small_linear(t)
    P.l1_unstructured(m, "weight", amount=2)
    r = [sorted(n for n, _ in m.named_parameters()), sorted(n for n, _ in m.named_buffers()), m.weight,
         m.weight_mask, P.is_pruned(m)]
    P.random_unstructured(m, "bias", amount=0.0)
    r.append(m.bias_mask)
    P.remove(m, "weight")
    r += [sorted(n for n, _ in m.named_parameters()), m.weight]
    m2 = _small_linear(t)
    P.ln_structured(m2, "weight", amount=1, n=2, dim=0)
    r.append(m2.weight)
    m3 = _small_linear(t)
    P.global_unstructured([(m3, "weight"), (m3, "bias")], pruning_method=P.L1Unstructured, amount=3)
    r += [m3.weight, m3.bias]
    m4 = _small_linear(t)
    P.custom_from_mask(m4, "weight", t.tensor([[1., 0, 1], [0, 1, 1]]))
    r.append(m4.weight)
    r += _errs([lambda: P.l1_unstructured(_small_linear(t), "weight", amount=10),
               lambda: P.l1_unstructured(_small_linear(t), "weight", amount=-0.5),
               lambda: P.l1_unstructured(_small_linear(t), "foo", amount=1),
               lambda: P.remove(_small_linear(t), "weight"),
               lambda: P.l1_unstructured(_small_linear(t), "weight", amount=1.5)])
    return r


@probe
def deepcopy_pickle(t):
    m = _small_linear(t)
    m2 = copy.deepcopy(m)
    r = [m2.weight, m2.weight is m.weight, type(m2.weight).__name__, m2.weight.requires_grad]
    m3 = pickle.loads(pickle.dumps(m))
    r += [m3.bias, type(m3).__name__]
    x = t.ones(2, requires_grad=True)
    y = x * 2
    r += _errs([lambda: copy.deepcopy(y), lambda: copy.deepcopy(x).requires_grad,
               lambda: pickle.loads(pickle.dumps(t.arange(3))),
               lambda: copy.copy(t.nn.Parameter(t.ones(1))).__class__.__name__])
    return r


@probe
def functional_call(t):
    m = _small_linear(t)
    p = {"weight": t.ones(2, 3), "bias": t.zeros(2)}
    fc = t.func.functional_call
    r = [fc(m, p, (t.ones(1, 3),)), m.weight, fc(m, {"bias": t.ones(2)}, t.ones(1, 3)),
         t.nn.utils.stateless.functional_call(m, p, t.ones(1, 3))]
    r += _errs([lambda: fc(m, {"foo": t.ones(1)}, (t.ones(1, 3),), strict=True),
               lambda: fc(m, {"weight": t.ones(2, 3)}, (t.ones(1, 3),), strict=True)])
    return r


@probe
def distributions(t):
    D = t.distributions
    n = D.Normal(t.tensor([0., 1.]), t.tensor([1., 2.]))
    r = [n.log_prob(t.tensor([0.5, 0.5])), n.entropy(), n.cdf(t.tensor([0., 1.])), n.mean, n.stddev, n.batch_shape,
         n.event_shape, repr(n)]
    c = D.Categorical(probs=t.tensor([0.2, 0.8]))
    r += [c.log_prob(t.tensor(1)), c.entropy(), c.logits, repr(c)]
    b = D.Bernoulli(logits=t.tensor([0.3]))
    r += [b.probs, b.log_prob(t.tensor([1.]))]
    mvn = D.MultivariateNormal(t.zeros(2), t.eye(2) * 2)
    r += [mvn.log_prob(t.ones(2)), mvn.entropy()]
    r.append(D.kl_divergence(D.Normal(0., 1.), D.Normal(1., 2.)))
    r += _errs([lambda: D.Normal(0., -1.), lambda: D.Categorical(probs=t.tensor([-0.1, 1.1])),
               lambda: D.Normal(0., 1.).log_prob(t.tensor([[1.]])).shape,
               lambda: D.Bernoulli(probs=0.5, logits=0.), lambda: D.Bernoulli(),
               lambda: D.Uniform(1., 0.), lambda: D.Normal(t.zeros(2), 1.).log_prob(t.zeros(3)),
               lambda: D.Beta(2., 3.).mean,
               lambda: D.Gamma(2., 3.).log_prob(t.tensor(1.)), lambda: D.Poisson(3.).log_prob(t.tensor(2.)),
               lambda: D.Independent(D.Normal(t.zeros(2), 1.), 1).event_shape,
               lambda: D.Exponential(2.).cdf(t.tensor(1.)),
               lambda: D.Dirichlet(t.tensor([1., 2.])).mean,
               lambda: D.Binomial(5, t.tensor(0.3)).log_prob(t.tensor(2.)),
               lambda: D.Normal(0., 1.).log_prob(t.tensor(float("nan"))),
               lambda: D.Categorical(logits=t.tensor([0., 1.])).log_prob(t.tensor(2)),
               lambda: D.Normal(0., 1., validate_args=False).log_prob(t.tensor(1.))])
    return r

def test_index_select_out_of_range_as_torch():
    """torch's CPU index_select says RuntimeError 'INDICES element is out of DATA bounds' along dim 1 of an
    input of two or more dims, IndexError 'index out of range in self' elsewhere (tidal said the latter always)."""
    def f(t):
        calls = [lambda shape=shape, d=d, idx=idx: t.zeros(shape).index_select(d, t.tensor(idx))
                 for shape in [(2, 3), (3,), (2, 3, 4), (2, 3, 4, 5)] for d in range(len(shape))
                 for idx in ([shape[d]], [0, 5, -7], [-1])]
        return _errs(calls + [lambda: F(t).embedding(t.tensor([5]), t.ones(2, 3))])
    assert _run(f, tc) == _run(f, torch)


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert _run(fn, tc) == _run(fn, torch)


def test_conv_negative_dilation_as_torch():
    """torch refuses a negative dilation with 'dilation should be greater than zero' (tidal said 'non-positive
    dilation is not supported', torch's oneDNN words for a zero dilation of a batched input, kept for zeros)."""
    def f(t):
        shapes = {"conv1d": ((2, 2, 5), (4, 2, 3)), "conv2d": ((2, 2, 5, 5), (4, 2, 3, 3)),
                  "conv3d": ((2, 2, 5, 5, 5), (4, 2, 3, 3, 3)), "conv_transpose2d": ((2, 4, 5, 5), (4, 2, 3, 3))}
        return _errs([lambda name=name, xs=xs, ws=ws, d=d: getattr(F(t), name)(t.ones(xs), t.ones(ws), dilation=d)
                      for name, (xs, ws) in shapes.items() for d in (-1, (1, -2)[:len(xs) - 2] or -1)]
                     + [lambda: F(t).conv2d(t.ones(2, 2, 5, 5), t.ones(4, 2, 3, 3), dilation=0),
                        lambda: F(t).conv2d(t.ones(2, 2, 5, 5), t.ones(4, 2, 3, 3), padding=-1, dilation=-1)])
    assert _run(f, tc) == _run(f, torch)


@pytest.mark.xfail(strict=True, reason="needs s10_probe_size_0d.patch")
def test_size_of_0d_tensor_as_torch():
    """size(d)/stride(d) of a 0-d tensor: torch's IndexError 'Dimension specified as d but tensor has no
    dimensions' (tidal's said 'tuple index out of range'); bilinear of 0-d inputs reaches it."""
    def f(t):
        return _errs([lambda: t.ones(()).size(-1), lambda: t.ones(()).size(0), lambda: t.ones(()).size(1),
                      lambda: t.ones(()).stride(0), lambda: t.ones(2, 3).size(5),
                      lambda: F(t).bilinear(t.ones(()), t.ones(()), t.ones(5, 3, 4))])
    assert _run(f, tc) == _run(f, torch)


@pytest.mark.xfail(strict=True, reason="needs s10_probe_functional_v.patch")
def test_functional_checks_as_torch():
    """autograd.functional's checks in torch's words: v's entry named only where the outputs/inputs were a
    tuple, jacobian's strategy asserted, hessian/vhp/hvp's single-element check, strict mode's checks of
    outputs that do not require grad and of first derivatives independent of the inputs."""
    def f(t):
        AF, x, y = t.autograd.functional, t.tensor([1., 2.]), t.tensor([3., 4.])
        return _errs([
            lambda: AF.vjp(lambda a, b: (a * b, a), (x, y), (t.ones(3), t.ones(2))),
            lambda: AF.jvp(lambda a: a * 2, x, t.ones(3)), lambda: AF.jvp(_mul, (x, y), (t.ones(2), t.ones(3))),
            lambda: AF.vhp(lambda a: a.sum(), x, t.ones(3)), lambda: AF.vjp(lambda a: a, x, (t.ones(2), t.ones(2))),
            lambda: AF.vjp(lambda a: (a * 2,), x, t.ones(3)), lambda: AF.jvp(lambda a: a, (x,), (t.ones(2), t.ones(2))),
            lambda: AF.hvp(lambda a: a.sum(), (x,), (t.ones(3),)), lambda: AF.vjp(_cube_sum, x, t.ones(2)),
            lambda: AF.vhp(lambda a: a * 2, x, t.ones(2)), lambda: AF.hvp(lambda a: (a.sum(),), x, t.ones(2)),
            lambda: AF.hessian(lambda a: a, x), lambda: AF.hessian(lambda a: (a.sum(),), x),
            lambda: AF.jacobian(lambda a: t.zeros(2), x, strict=True),
            lambda: AF.jacobian(lambda a: (a * 2, t.zeros(2)), x, strict=True),
            lambda: AF.jacobian(lambda a: a * 2, x, strategy="foo"),
            lambda: AF.hessian(lambda a: (a * 2).sum(), x, strict=True),
            lambda: AF.hessian(lambda a: (x ** 2).sum(), x, strict=True),
            lambda: AF.vhp(lambda a: (a * 2).sum(), x, t.ones(2), strict=True),
            lambda: AF.hvp(lambda a: (a * 2).sum(), x, t.ones(2), strict=True),
            lambda: AF.vjp(lambda a: t.zeros(2), x, t.ones(2), strict=True),
            lambda: AF.jvp(lambda a: (a * 2, t.zeros(2)), x, t.ones(2), strict=True)])
    assert _run(f, tc) == _run(f, torch)


@pytest.mark.xfail(strict=True, reason="needs s10_probe_functional_call.patch")
def test_functional_call_repeated_keys_as_torch():
    """functional_call with several dicts names every key given more than once, as a list (tidal named the
    first only, bare)."""
    def f(t):
        m, fc = t.nn.Linear(3, 2), t.func.functional_call
        dicts = [({"weight": t.ones(2, 3), "bias": t.ones(2)}, {"bias": t.ones(2), "weight": t.ones(2, 3)}),
                 ({"weight": t.ones(2, 3)}, {"bias": t.ones(2)}, {"weight": t.ones(2, 3)}),
                 ({"weight": t.ones(2, 3)}, {"bias": t.zeros(2)})]
        return _errs([lambda d=d: fc(m, d, (t.ones(1, 3),)) for d in dicts])
    assert _run(f, tc) == _run(f, torch)


@pytest.mark.xfail(strict=True, reason="needs s10_probe_linalg_cross.patch")
def test_linalg_cross_length_before_broadcast_as_torch():
    """linalg.cross checks the length 3 of `dim` before broadcasting (tidal's broadcast error came first)."""
    def f(t):
        return _errs([lambda: t.linalg.cross(t.ones(2, 3), t.ones(2, 2)),
                      lambda: t.linalg.cross(t.ones(1, 3), t.ones(2, 3)),
                      lambda: t.linalg.cross(t.ones(2, 3), t.ones(3, 3)),
                      lambda: t.linalg.cross(t.ones(4, 3), t.ones(2, 2), dim=0)])
    assert _run(f, tc) == _run(f, torch)
