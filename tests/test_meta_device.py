"""Issue 16: the meta device (shapes and dtypes, no data), against real torch: factories, `with device('meta')`,
ops and autograd giving meta results, torch's refusals of every read, copies, repr, and a GPT-like model built
on meta, moved with to_empty and trained one step."""
import threading

import numpy as np
import pytest
import torch

import tidal
import tidal.compat as tc

LIBS = (torch, tc)


def describe(x):
    """What a result is, comparable across torch and tidal: tensors by geometry and autograd, not values."""
    if isinstance(x, (torch.Tensor, tidal.Tensor)):
        fn = type(x.grad_fn).__name__ if x.grad_fn is not None else None
        return ("tensor", tuple(x.shape), str(x.dtype).split(".")[-1], str(x.device), x.requires_grad, fn)
    if isinstance(x, (torch.Size, tidal.Size)):
        return tuple(x)
    if isinstance(x, (tuple, list)):  # (torch's return types are structseqs, tidal's namedtuples)
        return type(x).__name__ if type(x) in (tuple, list) else "named", [describe(v) for v in x]
    if isinstance(x, (torch.dtype, tidal.dtype)):
        return str(x).split(".")[-1]
    if isinstance(x, (torch.device, tidal.device)):
        return str(x)
    return x


def outcome(fn, lib, message: bool = True):
    try:
        return "ok", describe(fn(lib))
    except Exception as exc:  # noqa: BLE001 - the outcome itself is compared
        return type(exc).__name__, str(exc) if message else None


def same(fn, message: bool = True):
    """fn(torch) and fn(tidal.compat) end alike: equal descriptions, or the same error (and message)."""
    got = [outcome(fn, lib, message) for lib in LIBS]
    assert got[0] == got[1], got
    return got[0]


# ---- devices and the default-device block (no meta VM needed) --------------------------------------
def test_meta_device_object():
    for text in ("meta", "meta:0"):
        same(lambda T: (str(T.device(text)), repr(T.device(text)).replace("torch.", ""), T.device(text).type,
                        T.device(text).index, hash(T.device(text))))


def test_cpu_tensor_is_not_meta():
    same(lambda T: (T.ones(2).is_meta, T.ones(2).is_cpu))


def test_cpu_block_inside_meta_block_makes_cpu_tensors():
    def fn(T):
        with T.device("meta"):
            with T.device("cpu"):
                return [T.ones(2), T.tensor([1.0]), T.nn.Linear(2, 3).weight, T.get_default_device()]
    same(fn)


def test_default_device_block_is_per_thread():
    entered, leave = threading.Event(), threading.Event()

    def hold_meta_block():
        with tidal.device("meta"):
            entered.set()
            leave.wait(10)
    worker = threading.Thread(target=hold_meta_block)
    worker.start()
    try:
        entered.wait(10)
        assert tidal.ones(2).device.type == "cpu" and tidal.tensor([1]).device.type == "cpu"
    finally:
        leave.set()
        worker.join()
    assert tc.get_default_device() == tidal.device("cpu")


# ---- factories on meta ------------------------------------------------------------------------------
_FACTORIES = {
    "empty": lambda T: T.empty(2, 3, device="meta"),
    "empty meta:0": lambda T: T.empty(2, device="meta:0"),
    "zeros f64": lambda T: T.zeros(2, dtype=T.float64, device="meta"),
    "ones grad": lambda T: T.ones(3, device="meta", requires_grad=True),
    "full int": lambda T: T.full((2,), 3, device="meta"),
    "randn": lambda T: T.randn(4, 2, device="meta"),
    "randint": lambda T: T.randint(0, 5, (3,), device="meta"),
    "arange": lambda T: T.arange(5, device="meta"),
    "linspace": lambda T: T.linspace(0, 1, 5, device="meta"),
    "eye": lambda T: T.eye(3, device="meta"),
    "tensor": lambda T: T.tensor([[1, 2]], device="meta"),
    "empty_like": lambda T: T.empty_like(T.empty(2, 3, device="meta")),
    "zeros_like cpu->meta": lambda T: T.zeros_like(T.ones(2), device="meta"),
    "huge": lambda T: T.empty(10 ** 6, 10 ** 6, device="meta"),
}


@pytest.mark.parametrize("name", sorted(_FACTORIES))
def test_factories_on_meta(name):
    same(_FACTORIES[name])


def test_meta_block_makes_factories_meta():
    def fn(T):
        with T.device("meta"):
            made = [T.ones(2), T.tensor([1]), T.arange(3), T.randn(2), T.as_tensor([1.0]), T.get_default_device()]
        return made + [T.zeros(1)]
    same(fn)


def test_meta_tensors_take_no_memory():
    tidal.sync()
    before = tidal.vm.memory_stats()["bytes_in_use"]
    x = tidal.empty(10 ** 5, 10 ** 5, device="meta", requires_grad=True)
    y = (x * 2 + 1).relu() @ tidal.empty(10 ** 5, 7, device="meta")
    y.sum().backward()
    assert tuple(x.grad.shape) == (10 ** 5, 10 ** 5) and x.grad.is_meta
    assert tidal.vm.memory_stats()["bytes_in_use"] == before


# ---- ops give meta results of the right shape and dtype ----------------------------------------------
def _m(T, *shape, dtype=None):
    return T.empty(shape, device="meta", dtype=dtype or T.float32)


_OPS = {
    "add scalar": lambda T: _m(T, 2, 3) + 1,
    "int + float promotes": lambda T: _m(T, 2, 3, dtype=T.int64) + 1.5,
    "cpu 0-d tensor operand": lambda T: _m(T, 2, 3) * T.tensor(2.0),
    "compare": lambda T: _m(T, 2, 3) > 0,
    "matmul": lambda T: _m(T, 2, 3) @ _m(T, 3, 4),
    "bmm": lambda T: T.bmm(_m(T, 5, 2, 3), _m(T, 5, 3, 4)),
    "sum dim": lambda T: _m(T, 2, 3).sum(0),
    "mean keepdim": lambda T: _m(T, 2, 3).mean(1, keepdim=True),
    "max dim": lambda T: _m(T, 2, 3).max(1),
    "argmax": lambda T: _m(T, 2, 3).argmax(),
    "softmax": lambda T: T.softmax(_m(T, 2, 3), -1),
    "cat": lambda T: T.cat([_m(T, 2, 3), _m(T, 2, 1)], 1),
    "stack": lambda T: T.stack([_m(T, 2), _m(T, 2)]),
    "where": lambda T: T.where(_m(T, 2, 3) > 0, _m(T, 2, 3), 0.0),
    "view transpose": lambda T: _m(T, 2, 3).view(3, 2).t(),
    "contiguous strides": lambda T: _m(T, 2, 3).t().contiguous().stride(),
    "slice": lambda T: _m(T, 4, 3)[1:, ::2],
    "index meta long": lambda T: _m(T, 4, 3)[T.tensor([1, 0, 1], device="meta")],
    "index list": lambda T: _m(T, 4, 3)[[0, 2]],
    "index python bool": lambda T: _m(T, 2, 3)[True],
    "sort indices": lambda T: _m(T, 2, 3).sort(1),
    "topk": lambda T: _m(T, 2, 5).topk(2),
    "embedding": lambda T: T.nn.functional.embedding(T.zeros(2, 3, dtype=T.int64, device="meta"), _m(T, 7, 4)),
    "layer_norm": lambda T: T.nn.functional.layer_norm(_m(T, 2, 3), (3,)),
    "conv2d": lambda T: T.nn.functional.conv2d(_m(T, 1, 2, 5, 5), _m(T, 4, 2, 3, 3), padding=1),
    "cross_entropy": lambda T: T.nn.functional.cross_entropy(_m(T, 4, 3), T.zeros(4, dtype=T.int64, device="meta")),
    "bce": lambda T: T.nn.functional.binary_cross_entropy(_m(T, 4), _m(T, 4)),
    "uniform_": lambda T: _m(T, 2).uniform_(),
    "fill_": lambda T: _m(T, 2).fill_(3.0),
    "meta.copy_(cpu)": lambda T: _m(T, 2, 3).copy_(T.ones(2, 3)),
    "clone": lambda T: _m(T, 2, 3).clone(),
    "cast": lambda T: _m(T, 2, dtype=T.float16).float(),
    "to meta:0": lambda T: T.ones(2).to("meta:0"),
    "to meta of a grad leaf": lambda T: T.ones(2, requires_grad=True).to("meta"),
    "module to meta": lambda T: T.nn.Linear(2, 3).to("meta").weight,
    "is_meta": lambda T: (_m(T, 1).is_meta, _m(T, 1).device.type, _m(T, 1).is_cpu, _m(T, 1).get_device()),
    "type name": lambda T: (_m(T, 1).type(), _m(T, 1, dtype=T.int64).type()),
}


@pytest.mark.parametrize("name", sorted(_OPS))
def test_ops_on_meta(name):
    same(_OPS[name])


def test_mixing_meta_and_cpu_is_refused():
    metas = {lib: _m(lib, 2, 3) for lib in LIBS}  # (made first: the refusal is the add's)
    assert same(lambda T: metas[T] + T.ones(2, 3), message=False)[0] == "RuntimeError"


def test_backward_on_meta_gives_meta_grads():
    def fn(T):
        w = T.empty(3, 4, device="meta", requires_grad=True)
        x = T.empty(2, 3, device="meta")
        loss = T.tanh(x @ w).pow(2).mean()
        loss.backward()
        return [loss, w.grad]
    same(fn)


# ---- reading values: torch's refusals --------------------------------------------------------------
_READS = {
    "tolist": lambda T: _m(T, 2, 3).tolist(),
    "cpu()": lambda T: _m(T, 2, 3).cpu(),
    "to cpu": lambda T: _m(T, 2, 3).to("cpu"),
    "to cpu float64": lambda T: _m(T, 2, 3).to("cpu", T.float64),
    "cpu.copy_(meta)": lambda T: T.zeros(2, 3).copy_(_m(T, 2, 3)),
}
_ITEM_READS = {
    "item": lambda T: _m(T).item(),
    "bool": lambda T: bool(_m(T)),
    "float": lambda T: float(_m(T)),
    "int": lambda T: int(_m(T, dtype=T.int64)),
    "allclose": lambda T: T.allclose(_m(T, 2), _m(T, 2)),
}
_NUMPY_READS = {"numpy": lambda T: _m(T, 2).numpy(), "np.array": lambda T: np.array(_m(T, 2)),
                "np.asarray": lambda T: np.asarray(_m(T, 2))}
_DATA_DEPENDENT = {  # torch's meta kernels refuse these (a NotImplementedError of their own words)
    "nonzero": lambda T: _m(T, 2, 3).nonzero(),
    "masked_select": lambda T: _m(T, 2, 3).masked_select(_m(T, 2, 3) > 0),
    "boolean mask index": lambda T: _m(T, 2, 3)[_m(T, 2, 3) > 0],
    "unique": lambda T: T.unique(_m(T, 4)),
}


@pytest.mark.parametrize("name", sorted(_READS))
def test_reading_meta_values_raises_as_torch(name):
    assert same(_READS[name]) == ("NotImplementedError", "Cannot copy out of meta tensor; no data!")


@pytest.mark.parametrize("name", sorted(_ITEM_READS))
def test_item_of_meta_raises_as_torch(name):
    assert same(_ITEM_READS[name]) == ("RuntimeError", "Tensor.item() cannot be called on meta tensors")


@pytest.mark.parametrize("name", sorted(_NUMPY_READS))
def test_numpy_of_meta_raises_as_torch(name):
    assert same(_NUMPY_READS[name])[0] == "TypeError"


@pytest.mark.parametrize("name", sorted(_DATA_DEPENDENT))
def test_data_dependent_ops_refuse_on_meta(name):
    assert same(_DATA_DEPENDENT[name], message=False)[0] == "NotImplementedError"


def test_meta_repr_and_data_ptr():
    def fn(T):
        x = T.ones(2, requires_grad=True, device="meta")
        made = [_m(T, 2, 3), _m(T), _m(T, 0, 3), _m(T, 2, dtype=T.float64), _m(T, 2, dtype=T.int64),
                _m(T, 2, dtype=T.bool), _m(T, 2, dtype=T.float16), _m(T, 2, dtype=T.complex64), x, x * 2,
                T.nn.Parameter(_m(T, 2))]
        return [repr(t).replace("torch.", "tidal.") for t in made] + [str(x * 2), x.data_ptr()]
    same(fn)


# ---- a GPT-like model built on meta, moved with to_empty, initialised and trained one step --------------
VOCAB, DIM, HEADS, LAYERS, CTX = 11, 8, 2, 2, 6


def gpt(T):
    """A small decoder (token and position embeddings, causal attention, MLP, tied head) in library T."""
    nn, F = T.nn, T.nn.functional

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(DIM), nn.LayerNorm(DIM)
            self.qkv, self.proj = nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)
            self.mlp = nn.Sequential(nn.Linear(DIM, 4 * DIM), nn.GELU(), nn.Linear(4 * DIM, DIM))

        def forward(self, x):
            b, n, d = x.shape
            q, k, v = (t.view(b, n, HEADS, d // HEADS).transpose(1, 2) for t in self.qkv(self.ln1(x)).split(d, -1))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, n, d))
            return x + self.mlp(self.ln2(x))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, DIM), nn.Embedding(CTX, DIM)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln = nn.LayerNorm(DIM)
            self.head = nn.Linear(DIM, VOCAB, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, idx):
            x = self.tok(idx) + self.pos(T.arange(idx.shape[1], device=idx.device))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln(x))

    with T.device("meta"):
        return GPT()


def _loss(T, model, idx, target):
    return T.nn.functional.cross_entropy(model(idx).view(-1, VOCAB), target.view(-1))


def test_gpt_on_meta_shapes_forward_backward():
    def fn(T):
        model = gpt(T)
        params = [(name, p) for name, p in model.named_parameters()]
        idx = T.randint(0, VOCAB, (2, 5), device="meta")
        out = model(idx)
        loss = _loss(T, model, idx, T.randint(0, VOCAB, (2, 5), device="meta"))
        loss.backward()
        return [params, out, loss, [p.grad for _, p in params]]
    same(fn)


def test_gpt_to_empty_then_init_trains_one_step_as_torch():
    rng = np.random.default_rng(16)
    idx, target = rng.integers(0, VOCAB, (2, 5)), rng.integers(0, VOCAB, (2, 5))
    results = []
    state = None
    for T in LIBS:
        model = gpt(T)
        assert all(p.is_meta for p in model.parameters())
        model.to_empty(device="cpu")
        model.head.weight = model.tok.weight  # (torch's to_empty unties shared parameters: tie again)
        assert all(p.device.type == "cpu" and not p.is_meta for p in model.parameters())
        with T.no_grad():
            if state is None:  # torch draws the initial values; tidal gets the same ones
                T.manual_seed(0)
                for p in model.parameters():
                    p.normal_(0.0, 0.2)
                state = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
            else:
                for k, v in model.state_dict().items():
                    v.copy_(T.tensor(state[k]))
        opt = T.optim.SGD(model.parameters(), lr=0.1, weight_decay=0.01)  # (Adam would blow up the key bias's
        # gradient, zero up to rounding: softmax ignores a shift of every score)
        loss = _loss(T, model, T.tensor(idx), T.tensor(target))
        loss.backward()
        grads = {k: p.grad.numpy().copy() for k, p in model.named_parameters()}
        opt.step()
        results.append((loss.item(), grads, {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}))
    (l0, g0, s0), (l1, g1, s1) = results
    assert l1 == pytest.approx(l0, rel=1e-5)
    assert g0.keys() == g1.keys() and s0.keys() == s1.keys()
    for k in g0:
        np.testing.assert_allclose(g1[k], g0[k], rtol=1e-4, atol=1e-6, err_msg=k)
    for k in s0:
        np.testing.assert_allclose(s1[k], s0[k], rtol=1e-5, atol=1e-6, err_msg=k)
