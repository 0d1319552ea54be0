"""Behaviour probed from PyTorch's own unit tests, part 3 (test_torch.py, test_shape_ops.py, test_autograd.py's
functional API, data utilities, hooks, pruning, distributions): see torch_probe_helpers."""
import copy
import io
import pickle
import warnings

import pytest
import torch
import torch.nn.utils.prune  # noqa: F401  (torch loads it only on import; tidal has it)

import tidal.compat as tc
from torch_probe_helpers import F, assert_same, registry
from torch_probe_helpers import errs as _errs
from torch_probe_helpers import run as _run

PROBES, probe = registry()


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
    # (torch's own default is `__debug__`; a torch.while_loop call, as in tests/test_torch_functions_more.py,
    # turns it off for the process)
    D.Distribution.set_default_validate_args(True)
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


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert_same(fn)


def test_index_select_out_of_range_as_torch():
    """torch's CPU index_select says RuntimeError 'INDICES element is out of DATA bounds' along dim 1 of an
    input of two or more dims, IndexError 'index out of range in self' elsewhere (tidal said the latter always)."""
    def f(t):
        calls = [lambda shape=shape, d=d, idx=idx: t.zeros(shape).index_select(d, t.tensor(idx))
                 for shape in [(2, 3), (3,), (2, 3, 4), (2, 3, 4, 5)] for d in range(len(shape))
                 for idx in ([shape[d]], [0, 5, -7], [-1])]
        return _errs(calls + [lambda: F(t).embedding(t.tensor([5]), t.ones(2, 3))])
    assert _run(f, tc) == _run(f, torch)


def test_size_of_0d_tensor_as_torch():
    """size(d)/stride(d) of a 0-d tensor: torch's IndexError 'Dimension specified as d but tensor has no
    dimensions' (tidal's said 'tuple index out of range'); bilinear of 0-d inputs reaches it."""
    def f(t):
        return _errs([lambda: t.ones(()).size(-1), lambda: t.ones(()).size(0), lambda: t.ones(()).size(1),
                      lambda: t.ones(()).stride(0), lambda: t.ones(2, 3).size(5),
                      lambda: F(t).bilinear(t.ones(()), t.ones(()), t.ones(5, 3, 4))])
    assert _run(f, tc) == _run(f, torch)


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


def test_linalg_cross_length_before_broadcast_as_torch():
    """linalg.cross checks the length 3 of `dim` before broadcasting (tidal's broadcast error came first)."""
    def f(t):
        return _errs([lambda: t.linalg.cross(t.ones(2, 3), t.ones(2, 2)),
                      lambda: t.linalg.cross(t.ones(1, 3), t.ones(2, 3)),
                      lambda: t.linalg.cross(t.ones(2, 3), t.ones(3, 3)),
                      lambda: t.linalg.cross(t.ones(4, 3), t.ones(2, 2), dim=0)])
    assert _run(f, tc) == _run(f, torch)
