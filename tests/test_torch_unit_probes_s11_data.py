"""Behaviour probed from PyTorch's own unit tests, session 11, part 2 (test_optim.py and test_lr_scheduler.py:
tensor lrs under schedulers, older state dicts, betas checks; test_dataloader.py: iterable lengths, collate maps,
__getitems__, NumPy leaves, loader attributes, samplers, typing; test_serialization.py: containers, shared views,
parameters, weights_only and the allow-list, map_location, mmap, the legacy format, pickling): see
torch_probe_helpers."""
import collections
import collections.abc
import copy
import io
import os
import pickle
import tempfile
import typing
import warnings

import numpy as np
import pytest

from torch_probe_helpers import assert_same, registry
from torch_probe_helpers import errs as _errs

PROBES, probe = registry()


# -- test_optim.py / test_lr_scheduler.py: tensor lrs under schedulers, older state dicts, betas checks ---------
def P(t):
    """A parameter of three values."""
    return t.nn.Parameter(t.tensor([1., -2., 3.]))


@probe
def tensor_lr(t):
    out = []
    for name in ("Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "NAdam", "RAdam", "Adamax"):
        p = P(t)
        kw = {"lr": t.tensor(0.05)}
        if name == "SGD": kw["momentum"] = 0.9
        o = getattr(t.optim, name)([p], **kw)
        s = t.optim.lr_scheduler.StepLR(o, 1, 0.5)
        lr_obj = o.param_groups[0]["lr"]
        for _ in range(3):
            p.grad = t.tensor([0.5, -1., 2.]); o.step(); s.step()
        out.append((name, p, o.param_groups[0]["lr"], o.param_groups[0]["lr"] is lr_obj,
                    s.get_last_lr()[0] is o.param_groups[0]["lr"]))
        sd = o.state_dict()
        o2 = getattr(t.optim, name)([P(t)], lr=0.1)
        o2.load_state_dict(sd)
        out.append((type(o2.param_groups[0]["lr"]).__name__, o2.param_groups[0]["lr"]))
    return out


@probe
def older_state_dict(t):
    p = P(t)
    o = t.optim.Adam([p], lr=0.1)
    p.grad = t.ones(3); o.step()
    sd = copy.deepcopy(o.state_dict())
    for k in ("foreach", "maximize", "differentiable", "capturable", "fused", "amsgrad", "decoupled_weight_decay"):
        sd["param_groups"][0].pop(k, None)
    sd["state"][0]["step"] = 1  # an int step, as older versions saved
    q = P(t)
    o2 = t.optim.Adam([q], lr=0.1)
    o2.load_state_dict(sd)
    q.grad = t.ones(3); o2.step()
    p.grad = t.ones(3); o.step()
    return [sorted(o2.param_groups[0]), q, p, float(o2.state_dict()["state"][0]["step"])]


@probe
def weights_only_roundtrip(t):
    p = P(t)
    o = t.optim.Adam([p], lr=t.tensor(0.1), betas=(t.tensor(0.9), t.tensor(0.99)))
    p.grad = t.ones(3); o.step()
    buf = io.BytesIO(); t.save(o.state_dict(), buf); buf.seek(0)
    sd = t.load(buf, weights_only=True)
    return [sd["param_groups"], sorted(sd["state"][0]), sd["state"][0]["step"], sd["state"][0]["exp_avg"]]


@probe
def deepcopy_optimizer(t):
    p = P(t)
    o = t.optim.SGD([p], lr=0.1, momentum=0.9)
    p.grad = t.ones(3); o.step()
    c = copy.deepcopy(o)
    return [sorted(k for k in vars(c) if not k.startswith("_")), c.param_groups[0]["params"][0] is p,
            c.state[c.param_groups[0]["params"][0]]["momentum_buffer"], repr(c)]


@probe
def lr_tensor_errors(t):
    p = P(t)
    return _errs([lambda: t.optim.SGD([p], lr=t.tensor([0.1])),
                  lambda: t.optim.Adam([p], lr=t.tensor(0.1), foreach=False, capturable=True),
                  lambda: t.optim.SGD([p], lr=t.tensor(0.1, dtype=t.float64)).param_groups[0]["lr"].dtype,
                  lambda: t.optim.Adam([p], betas=(t.tensor([0.9]), 0.99)),
                  lambda: t.optim.Adam([p], betas=(t.tensor(0.9), 0.99)).param_groups[0]["betas"],
                  lambda: t.optim.Adam([p], betas=(0, 0.99)), lambda: t.optim.AdamW([p], betas=(0.9, 0)),
                  lambda: t.optim.Adam([p], betas=(t.tensor(0.9), t.tensor(0.99)), foreach=True),
                  lambda: t.optim.Adam([p], betas=(t.tensor(0.9), t.tensor(0.99))).param_groups[0]["betas"],
                  lambda: t.optim.Adamax([p], betas=(0, 0.99)).param_groups[0]["betas"]])


@probe
def older_state_dicts_all(t):
    out = []
    for name in ("SGD", "Adam", "AdamW", "Adagrad", "Adadelta", "RMSprop", "Adamax", "NAdam", "RAdam", "ASGD", "Rprop"):
        p = t.nn.Parameter(t.tensor([1., -2.]))
        kw = {"lr": 0.1}
        o = getattr(t.optim, name)([p], **kw)
        p.grad = t.ones(2); o.step()
        sd = copy.deepcopy(o.state_dict())
        keep = {"params", "lr", "betas", "eps", "weight_decay", "momentum", "dampening", "alpha", "rho", "lr_decay",
                "initial_accumulator_value", "lambd", "t0", "etas", "step_sizes", "momentum_decay"}  # (as older saves)
        sd["param_groups"] = [{k: v for k, v in g.items() if k in keep} for g in sd["param_groups"]]
        q = t.nn.Parameter(t.tensor([1., -2.]))
        o2 = getattr(t.optim, name)([q], **kw)
        try:
            o2.load_state_dict(sd)
            q.grad = t.ones(2); o2.step()
            out.append((name, sorted(o2.param_groups[0]), q))
        except Exception as e:
            out.append((name, type(e).__name__, str(e)))
    return out


# -- test_dataloader.py: iterable lengths, collate maps, __getitems__, numpy leaves, loader attributes --------
@probe
def iterable_len_warning(t):
    D = t.utils.data
    class It(D.IterableDataset):
        def __iter__(self): return iter(range(7))
        def __len__(self): return 5
    out = [len(D.DataLoader(It(), batch_size=2)), len(D.DataLoader(It(), batch_size=2, drop_last=True))]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out.append([b.tolist() for b in D.DataLoader(It(), batch_size=2)])
    out.append([str(x.message)[:150] for x in w])
    return out


@probe
def collate_custom_map(t):
    D = t.utils.data
    C = t.utils.data._utils.collate
    class Box:
        def __init__(self, v): self.v = v
    def collate_box(batch, *, collate_fn_map=None):
        return sum(b.v for b in batch)
    m = dict(C.default_collate_fn_map); m[Box] = collate_box
    return [C.collate([(Box(1), t.ones(1)), (Box(2), t.zeros(1))], collate_fn_map=m),
            sorted(k.__name__ if hasattr(k, "__name__") else str(k) for k in C.default_collate_fn_map)]


@probe
def getitems_and_subset(t):
    D = t.utils.data
    class Batched(D.Dataset):
        def __len__(self): return 6
        def __getitem__(self, i): return i * 10
        def __getitems__(self, idx): return [i * 100 for i in idx]
    out = [[b.tolist() for b in D.DataLoader(Batched(), batch_size=4)]]
    s = D.Subset(Batched(), [5, 1, 3])
    out.append([b.tolist() for b in D.DataLoader(s, batch_size=2)])
    out.append(s.__getitems__([0, 2]))
    ss = D.Subset(s, [2, 0])
    out += [ss[0], len(ss), list(ss)]
    out.append(type(Batched() + Batched()).__name__)
    return out


@probe
def collate_numpy_kinds(t):
    D = t.utils.data
    return _errs([lambda: D.default_collate([np.array([1, 2], dtype=np.uint16), np.array([3, 4], dtype=np.uint16)]),
                  lambda: D.default_collate([np.float16(1), np.float16(2)]),
                  lambda: D.default_collate([np.bool_(True), np.bool_(False)]),
                  lambda: D.default_collate([np.array(1, dtype=np.int8), np.array(2, dtype=np.int8)]),
                  lambda: D.default_collate([np.array([1.5]), np.array([2.5])]).dtype,
                  lambda: D.default_collate([np.complex64(1 + 1j), np.complex64(2)]),
                  lambda: D.default_collate([np.array(["a"], dtype=object), np.array(["b"], dtype=object)]),
                  lambda: D.default_collate([[1, 2], [3, 4]]),
                  lambda: D.default_collate([(t.ones(2), "a"), (t.zeros(2), "b")]),
                  lambda: D.default_collate([t.ones(2, dtype=t.int8), t.ones(2, dtype=t.int8)]),
                  lambda: D.default_collate([t.ones(2), t.ones(3)]),
                  lambda: D.default_collate([t.tensor(1.), t.tensor(2.)]),
                  lambda: D.default_collate([{"a": 1, "b": [1, 2]}, {"a": 2, "b": [3, 4]}]),
                  lambda: D.default_convert([np.array([1, 2]), "x", (np.int32(3),)]),
                 ])


@probe
def dataloader_repr_attrs(t):
    D = t.utils.data
    dl = D.DataLoader(list(range(10)), batch_size=3, shuffle=False)
    it = iter(dl)
    out = [type(it).__name__, next(it).tolist(), dl.dataset[:3], dl.pin_memory, dl.timeout, dl.prefetch_factor,
           dl.persistent_workers, dl.multiprocessing_context, dl.in_order, dl.generator, callable(dl.collate_fn),
           dl.worker_init_fn, type(D.DataLoader([1], num_workers=1, multiprocessing_context="fork")
                                   .multiprocessing_context).__name__]
    out += _errs([lambda: D.DataLoader(list(range(3)), num_workers=0, prefetch_factor=2),
                  lambda: D.DataLoader(list(range(3)), num_workers=0, persistent_workers=True),
                  lambda: D.DataLoader(list(range(3)), multiprocessing_context="spawn"),
                  lambda: D.DataLoader(list(range(3)), num_workers=1, multiprocessing_context="bogus")])
    return out


@probe
def collate_types(t):
    D = t.utils.data
    out = _errs([lambda: D.default_collate([["X"], ["X", "X"]]),
                 lambda: type(D.default_convert(CustomDict({"a": np.ones(1)}))).__name__,
                 lambda: type(D.default_collate([CustomDict({"a": 1}), CustomDict({"a": 2})])).__name__,
                 lambda: type(D.default_collate([CustomList([1, 2]), CustomList([3, 4])])).__name__,
                 lambda: type(D.default_convert(CustomList([np.ones(1)]))).__name__,
                 lambda: D.default_collate([t.ones(2), t.ones(2)]).is_shared(),
                 lambda: D.default_collate([1.5, 2]).dtype, lambda: D.default_collate([True, 1]),
                 lambda: D.default_collate([np.array([1], dtype=np.float32), np.array([2], dtype=np.float64)]).dtype,
                 lambda: D.default_collate([{"a": 1}, {"a": 2, "b": 3}]),
                 lambda: D.default_collate([collections.defaultdict(int, a=1), collections.defaultdict(int, a=2)]),
                 lambda: D.default_collate([collections.OrderedDict(b=1, a=2), collections.OrderedDict(b=3, a=4)]),
                 lambda: D.default_collate([b"ab", b"cd"]), lambda: D.default_collate([None, None]),
                 lambda: D.default_collate([[t.ones(1), 2], [t.ones(1), 3]]),
                 lambda: D.default_collate([t.ones(2, dtype=t.bool), t.zeros(2, dtype=t.bool)]).dtype,
                ])
    mm = np.memmap(os.path.join(_scratch(), "m.dat"), dtype=np.float32, mode="w+", shape=(4, 2))
    mm[:] = 1.5
    out += _errs([lambda: D.default_collate([mm[0], mm[1]]), lambda: D.default_collate(mm)])
    return out


@probe
def growing_and_sampler_errors(t):
    D = t.utils.data
    class Grow(D.Dataset):
        def __init__(self): self.n = 3
        def __len__(self): return self.n
        def __getitem__(self, i):
            if i >= self.n: raise IndexError(f"index {i} out of range")
            return i
    g = Grow()
    dl = D.DataLoader(g, batch_size=2)
    a = len(dl)
    g.n = 5
    b = len(dl)
    class Big(D.Sampler):
        def __iter__(self): return iter([0, 2 ** 40])
        def __len__(self): return 2
    out = [a, b, [x.tolist() for x in dl]]
    out += _errs([lambda: list(D.DataLoader(g, sampler=Big())), lambda: len(D.DataLoader(g, sampler=iter([1, 2]))),
                  lambda: list(D.DataLoader(g, sampler=iter([1, 2])))])
    return out


@probe
def random_sampler_lengths(t):
    D = t.utils.data
    return _errs([lambda: len(D.RandomSampler(range(10), replacement=True)),
                  lambda: len(D.RandomSampler(range(10), num_samples=20)),
                  lambda: len(list(D.RandomSampler(range(10), num_samples=25))),
                  lambda: len(D.RandomSampler([], replacement=True)), lambda: list(D.RandomSampler([])),
                  lambda: D.RandomSampler(range(10), num_samples=-1),
                  lambda: D.RandomSampler(range(10), num_samples="a"),
                  lambda: D.BatchSampler(D.SequentialSampler(range(10)), 3, drop_last=True).__len__(),
                  lambda: list(D.BatchSampler([1, 2, 3], 2, False)), lambda: D.BatchSampler([1], -1, False)])


# -- test_serialization.py: save/load of tensors, modules, containers --------------------------------------------
def rt(t, obj, **kw):
    """`obj` saved to memory and loaded back."""
    buf = io.BytesIO()
    t.save(obj, buf)
    buf.seek(0)
    return t.load(buf, **kw)


@probe
def nested_containers(t):
    x = t.arange(6.).reshape(2, 3)
    obj = {"a": [x, x[0], (x[:, 1], {"b": x.T})], "n": 3, "s": "str", "f": 1.5, "none": None,
           "od": collections.OrderedDict([("k", t.ones(2, dtype=t.int8))]), "set": {1, 2}, "bytes": b"xy",
           "dt": t.float16, "size": t.Size([2, 3]), "dev": t.device("cpu"), "np": np.arange(3)}
    y = rt(t, obj, weights_only=False)  # (NumPy arrays need it)
    a = y["a"]
    a[0][0, 0] = 100
    return [y["a"][1], y["a"][2][0], y["a"][2][1]["b"], y["a"][2][1]["b"].is_contiguous(), y["n"], y["s"],
            type(y["od"]).__name__, y["od"]["k"], y["set"], y["bytes"], y["dt"], y["size"], type(y["size"]).__name__,
            y["dev"], y["np"].tolist(), type(y["np"]).__name__]


@probe
def shared_storage_views(t):
    x = t.arange(10.)
    v = x[2:5]
    y = rt(t, [x, v])
    y[0][3] = -1
    out = [y[1], y[1].storage_offset(), len(y[1].untyped_storage()) if hasattr(y[1], "untyped_storage") else None]
    z = rt(t, v)
    out += [z, z.storage_offset(), z.untyped_storage().nbytes()]
    return out


@probe
def module_save_load(t):
    m = t.nn.Sequential(t.nn.Linear(2, 3), t.nn.BatchNorm1d(3))
    with t.no_grad():
        for i, p in enumerate(m.parameters()):
            p.fill_(i + 0.5)
    sd = rt(t, m.state_dict())
    out = [list(sd), type(sd).__name__, sd["0.weight"], sd["0.weight"].requires_grad, type(sd["0.weight"]).__name__,
           hasattr(sd, "_metadata"), getattr(sd, "_metadata", None) and dict(sd._metadata)]
    p = rt(t, t.nn.Parameter(t.ones(2)))
    out += [type(p).__name__, p.requires_grad]
    p2 = rt(t, t.nn.Parameter(t.ones(2), requires_grad=False))
    out += [type(p2).__name__, p2.requires_grad]
    g = t.ones(2, requires_grad=True)
    g2 = rt(t, g)
    out += [g2.requires_grad, g2.is_leaf]
    out += _errs([lambda: rt(t, g * 2)])
    return out


@probe
def weights_only_errors(t):
    class Custom:
        pass
    out = _errs([lambda: rt(t, Custom(), weights_only=True),
                 lambda: type(rt(t, Custom(), weights_only=False)).__name__])
    m = t.nn.Linear(2, 2)
    out += _errs([lambda: type(rt(t, m)).__name__, lambda: type(rt(t, m, weights_only=False)).__name__])
    out = [(o[0], o[1].split("\n")[0][:120]) if isinstance(o, tuple) and isinstance(o[1], str) else o for o in out]
    out.append(rt(t, {"x": 1, "y": [1.5, "a", None, True], "z": (t.ones(1),)}, weights_only=True))
    return out


@probe
def map_location(t):
    x = t.ones(2)
    return [rt(t, x, map_location="cpu").device, rt(t, x, map_location=t.device("cpu")).device,
            rt(t, x, map_location=lambda s, loc: s).device, rt(t, x, map_location={"cpu": "cpu"}).device] + _errs([
        lambda: rt(t, x, map_location="meta").device, lambda: rt(t, x, map_location="cuda:0")])


@probe
def dtypes_roundtrip(t):
    xs = [t.tensor([1, 2], dtype=d) for d in (t.uint8, t.int8, t.int16, t.int32, t.int64, t.float16, t.bfloat16,
                                              t.float64, t.bool, t.complex64)]
    return [(y.dtype, y.tolist() if y.dtype != t.bfloat16 else y.float().tolist()) for y in rt(t, xs)]


@probe
def legacy_pickle_protocol(t):
    buf = io.BytesIO()
    t.save({"a": t.ones(2)}, buf, _use_new_zipfile_serialization=False)
    buf.seek(0)
    return [rt(t, t.ones(2), mmap=False)] + _errs([lambda: t.load(buf)["a"], lambda: rt(t, t.ones(1), mmap=True)])


@probe
def pickle_module(t):
    x = t.arange(3.)
    return [pickle.loads(pickle.dumps(x)), pickle.loads(pickle.dumps(t.nn.Parameter(x))).requires_grad,
            type(pickle.loads(pickle.dumps(t.nn.Linear(1, 1)))).__name__, pickle.loads(pickle.dumps(t.float32)),
            pickle.loads(pickle.dumps(t.device("cpu"))), pickle.loads(pickle.dumps(t.Size([1, 2])))]


class Cfg:
    """A user class in a checkpoint (weights_only refuses it unless allow-listed)."""

    def __init__(self, n):
        self.n = n


Pair = collections.namedtuple("Pair", "a b")


class CustomDict(collections.abc.Mapping):
    """A mapping that is not a dict (default_convert keeps its type)."""

    def __init__(self, d):
        self.d = dict(d)

    def __getitem__(self, k):
        return self.d[k]

    def __iter__(self):
        return iter(self.d)

    def __len__(self):
        return len(self.d)


class CustomList(list):
    """A list subclass (collation rebuilds it)."""
_SCRATCH: list = []


def _scratch() -> str:
    """A temporary folder, removed at exit (a memory-mapped load may still use its file until then)."""
    _SCRATCH.append(tempfile.TemporaryDirectory())
    return _SCRATCH[-1].name


@probe
def safe_globals_api(t):
    tmp = _scratch()
    S = t.serialization
    out = []
    p = os.path.join(tmp, "cfg.pt"); t.save({"cfg": Cfg(3), "w": t.ones(2), "pair": Pair(1, 2)}, p)
    out.append(sorted(S.get_unsafe_globals_in_checkpoint(p)))
    out += _errs([lambda: t.load(p)["cfg"].n])
    with S.safe_globals([Cfg, Pair]):
        out += _errs([lambda: (t.load(p)["cfg"].n, type(t.load(p)["pair"]).__name__)])
    S.add_safe_globals([(Cfg, "__main__.Cfg")])
    out += _errs([lambda: t.load(p)["cfg"].n])
    S.clear_safe_globals()
    out.append(S.get_safe_globals())
    return out


@probe
def mmap_and_callable_location(t):
    tmp = _scratch()
    p = os.path.join(tmp, "m.pt"); t.save({"a": t.arange(4.), "b": t.ones(2, 2)}, p)
    out = [t.load(p, mmap=True)["a"], t.load(p, map_location=lambda s, loc: s)["b"]]  # (file closed by then)
    seen = []
    t.load(p, map_location=lambda s, loc: seen.append(loc))
    out.append(seen)
    out += _errs([lambda: t.load(io.BytesIO(open(p, "rb").read()), mmap=True)])
    return out


@probe
def load_into_module_and_assign(t):
    tmp = _scratch()
    src = t.nn.Linear(2, 2)
    with t.no_grad(): src.weight.fill_(2.0); src.bias.fill_(1.0)
    p = os.path.join(tmp, "lin.pt"); t.save(src.state_dict(), p)
    dst = t.nn.Linear(2, 2)
    r = dst.load_state_dict(t.load(p, mmap=True), assign=True)
    return [str(r), dst.weight, type(dst.weight).__name__, dst.weight.requires_grad, dst.weight.is_leaf]


@probe
def save_views_and_grad(t):
    x = t.arange(6., requires_grad=True)
    y = rt(t, {"leaf": x, "det": x.detach()[2:]})
    out = [y["leaf"].requires_grad, y["leaf"].is_leaf, y["det"].requires_grad, y["det"], y["det"].storage_offset()]
    out += _errs([lambda: rt(t, x[2:])])
    return out


@probe
def save_big_objects(t):
    obj = {"ints": list(range(5)), "tuple": (1, (2, 3)), "none": None, "bool": True, "float": 1e-30,
           "nested": {"a": {"b": [t.zeros(1)]}}, "str_keys": {1: "a", (1, 2): "b"}, "complex": 1 + 2j,
           "bytes": b"\x00\x01", "bytearray": bytearray(b"ab"), "set": {1}, "counter": collections.Counter("ab")}
    refused = [slice(1, 2), frozenset({1}), range(3), ..., collections.defaultdict(list)]
    return _errs([lambda: rt(t, obj), lambda: rt(t, obj, weights_only=False)] +
                  [lambda v=v: rt(t, v) for v in refused] +
                  [lambda v=v: rt(t, v, weights_only=False) for v in refused])


@probe
def storage_sharing(t):
    a = t.zeros(4)
    b = a.view(2, 2)
    c = a[1:3]
    y = rt(t, (a, b, c))
    y[0].fill_(7)
    return [y[1], y[2], y[1].is_contiguous(), y[2].stride()]


@probe
def generic_data_classes(t):
    D = t.utils.data
    out = [str(x).replace(t.__name__ + ".", "torch.").replace("tidal.", "torch.") for x in
           (D.Dataset[int], D.IterableDataset[typing.Tuple[int, str]], D.Sampler[int], D.DataLoader[int], D.Subset[int],
            D.ConcatDataset[int], D.DistributedSampler[int])]
    class My(D.Dataset[typing.Tuple[t.Tensor, int]]):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            return t.tensor([float(i)]), i

    class MyIt(D.IterableDataset[int]):
        def __iter__(self):
            return iter(range(3))

    class MySampler(D.Sampler[int]):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n - 1, -1, -1))

        def __len__(self):
            return self.n
    out.append([[x.tolist() for x in b] for b in D.DataLoader(My(), batch_size=2, sampler=MySampler(3))])
    out.append([b.tolist() for b in D.DataLoader(MyIt(), batch_size=2)])
    out += [type(D.IterableDataset).__name__, isinstance([1], D.IterableDataset), isinstance(MyIt(), D.Dataset),
            D.Dataset.__parameters__ == D.Sampler.__parameters__]
    return out

@probe
def legacy_mmap(t):
    b = io.BytesIO()
    t.save(t.ones(2), b, _use_new_zipfile_serialization=False)
    p = os.path.join(_scratch(), "legacy.pt")
    with open(p, "wb") as fh:
        fh.write(b.getvalue())
    from pathlib import Path
    found = _errs([lambda: t.load(p, mmap=True), lambda: t.load(Path(p), mmap=True)])
    return [(kind, message.replace(p, "P")) for kind, message in found]



@probe
def lazy_placeholders_in_nn_parameter(t):
    m = t.nn.LazyLinear(3)
    out = [isinstance(m.weight, t.nn.parameter.UninitializedParameter), t.nn.parameter.is_lazy(m.weight),
           isinstance(m.weight, t.nn.parameter.UninitializedTensorMixin), repr(m.weight)]
    m(t.ones(1, 2))
    buf = t.nn.parameter.UninitializedBuffer()
    return out + [t.nn.parameter.is_lazy(m.weight), tuple(m.weight.shape), type(m.weight).__name__,
                  t.nn.parameter.is_lazy(buf), type(buf).__name__]


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert_same(fn)
