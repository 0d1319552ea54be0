"""Behaviour probed from PyTorch's own unit tests, session 11, part 1 (test_nn.py's Module API beyond the s10
probes: state_dict strictness and messages, keep_vars/prefix/_metadata, load_state_dict dtype casts and assign,
duplicate members, buffer persistence, parameter assignment, train/eval, forward hooks with kwargs and always_call,
the containers' less common operations, Module.to's arguments, nn.utils, module constructors' checks and forward
calls with wrong inputs): see torch_probe_helpers; part 2 is test_torch_unit_probes_s11_data.py."""
import copy
import math
import pickle
import types
import warnings

import pytest

from torch_probe_helpers import assert_same, registry
from torch_probe_helpers import errs as _errs

PROBES, probe = registry()

@probe
def sd_strict_messages(t):
    class Net(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = t.nn.Linear(2, 3)
            self.b = t.nn.Sequential(t.nn.Linear(3, 3), t.nn.BatchNorm1d(3))
            self.register_buffer("nb", t.ones(2), persistent=False)
    n = Net()
    sd = n.state_dict()
    out = [list(sd), [type(v).__name__ for v in sd.values()]]
    bad = dict(sd); bad["a.weight"] = t.ones(3, 3); bad["zz"] = t.ones(1); del bad["b.1.running_mean"]
    out += _errs([lambda: n.load_state_dict(bad)])
    out += _errs([lambda: n.load_state_dict(bad, strict=False)])
    bad2 = dict(sd); bad2["b.1.num_batches_tracked"] = t.tensor(5)
    out.append(str(n.load_state_dict(bad2)))
    out.append(n.b[1].num_batches_tracked)
    del bad2["b.1.num_batches_tracked"]
    out += _errs([lambda: n.load_state_dict(bad2)])
    out += _errs([lambda: n.load_state_dict({"a.weight": 3}, strict=False)])
    out += _errs([lambda: n.load_state_dict(sd, assign=True)])
    return out

@probe
def sd_keep_vars_and_prefix(t):
    m = t.nn.Linear(2, 2)
    sd = m.state_dict(keep_vars=True)
    sd2 = m.state_dict(prefix="p.")
    out = [sd["weight"].requires_grad, type(sd["weight"]).__name__, list(sd2), sd2["p.weight"].requires_grad,
           sd["weight"] is m.weight]
    d = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = m.state_dict(d, "q.")  # (positional arguments: torch's FutureWarning)
    out.append([str(w.message) for w in caught])
    out += [r is d, list(d)]
    out.append(hasattr(m.state_dict(), "_metadata"))
    out.append(dict(m.state_dict()._metadata))
    return out

@probe
def sd_load_copies_and_dtype(t):
    m = t.nn.Linear(2, 2)
    sd = {"weight": t.ones(2, 2, dtype=t.float64), "bias": t.zeros(2, dtype=t.int64)}
    m.load_state_dict(sd)
    out = [m.weight.dtype, m.weight, m.bias.dtype, m.weight.requires_grad]
    sd["weight"].fill_(3)
    out.append(m.weight)
    m2 = t.nn.Linear(2, 2)
    m2.load_state_dict({"weight": t.ones(2, 2, dtype=t.float64), "bias": t.zeros(2)}, assign=True)
    out += [m2.weight.dtype, type(m2.weight).__name__, m2.weight.requires_grad]
    return out

@probe
def sd_shape_scalar(t):
    m = t.nn.Linear(1, 1)
    return _errs([lambda: m.load_state_dict({"weight": t.ones(1), "bias": t.ones(1)}),
                  lambda: m.load_state_dict({"weight": t.tensor(2.), "bias": t.ones(1)}),
                  lambda: m.load_state_dict({"weight": t.ones(1,1,1), "bias": t.ones(1)}),
                  lambda: m.load_state_dict({"weight": [[1.]], "bias": t.ones(1)})])

@probe
def named_dups(t):
    l = t.nn.Linear(2, 2)
    s = t.nn.Sequential(l, l, t.nn.ReLU())
    out = [[k for k, _ in s.named_parameters()], [k for k, _ in s.named_parameters(remove_duplicate=False)],
           [k for k, _ in s.named_modules()], [k for k, _ in s.named_modules(remove_duplicate=False)],
           list(s.state_dict()), len(list(s.parameters())), [k for k, _ in s.named_children()]]
    m = t.nn.Module()
    m.p = t.nn.Parameter(t.ones(1)); m.q = m.p
    out += [[k for k, _ in m.named_parameters()], list(m.state_dict()),
            [k for k, _ in m.named_modules(memo=None, prefix="z")]]
    return out

@probe
def buffers_persistence(t):
    m = t.nn.Module()
    m.register_buffer("a", t.ones(1))
    m.register_buffer("b", t.ones(1), persistent=False)
    m.register_buffer("c", None)
    out = [list(m.state_dict()), [k for k, _ in m.named_buffers()], sorted(m._non_persistent_buffers_set)]
    m.b = t.zeros(2)
    out += [list(m.state_dict()), m.b]
    del m.b
    out += [sorted(m._non_persistent_buffers_set), hasattr(m, "b")]
    m.register_buffer("b", t.ones(3))
    out.append(list(m.state_dict()))
    out += _errs([lambda: m.register_buffer("a", 3), lambda: m.register_buffer("zz", t.nn.Parameter(t.ones(1))),
                  lambda: m.register_buffer("training", t.ones(1))])
    return [str(x).replace("tidal Tensor", "torch Tensor") for x in out]  # (tidal names itself outside compat)

@probe
def param_assignment(t):
    m = t.nn.Linear(2, 2)
    out = _errs([lambda: setattr(m, "weight", t.ones(2, 2)),
                 lambda: setattr(m, "weight", 3),
                 lambda: m.register_parameter("weight2", t.nn.Parameter(t.ones(1) * 2)),
                 lambda: m.register_parameter("bad", t.nn.Parameter(t.ones(2)) * 2)])
    w = t.nn.Parameter(t.zeros(3))
    m.weight = w
    out += [m.weight is w, list(m.state_dict())]
    m.weight2 = t.nn.Parameter(t.ones(1))
    out.append([k for k, _ in m.named_parameters()])
    del m.weight2
    out.append([k for k, _ in m.named_parameters()])
    out += _errs([lambda: delattr(m, "zz")])
    out += _errs([lambda: m.register_parameter("x", t.nn.Parameter(t.ones(1), requires_grad=False) + 0)])
    return out

@probe
def train_eval(t):
    s = t.nn.Sequential(t.nn.Dropout(), t.nn.Sequential(t.nn.BatchNorm1d(2)))
    out = [s.training, s[1][0].training]
    r = s.eval()
    out += [r is s, s.training, s[1][0].training, s[0].training]
    s.train(False)
    s[1].train()
    out += [s.training, s[1][0].training]
    out += _errs([lambda: s.train(1), lambda: s.train(None)])
    return out

@probe
def forward_hooks_kwargs(t):
    log = []
    m = t.nn.Linear(2, 2)
    h1 = m.register_forward_pre_hook(lambda mod, args, kwargs: (args, kwargs), with_kwargs=True)
    h2 = m.register_forward_hook(lambda mod, args, kwargs, out: log.append(sorted(kwargs)), with_kwargs=True)
    h3 = m.register_forward_hook(lambda mod, args, out: out * 2, prepend=True)
    h4 = m.register_forward_hook(lambda mod, args, out: log.append("always"), always_call=True)
    y = m(t.ones(1, 2))
    out = [log[:], tuple(y.shape)]
    h1.remove(); h1.remove()
    out.append(len(m._forward_pre_hooks))
    out.append([len(m._forward_hooks), len(m._forward_hooks_with_kwargs), len(m._forward_hooks_always_called)])
    h4.remove()
    out.append([len(m._forward_hooks), len(m._forward_hooks_always_called)])
    def bad(mod, args): raise RuntimeError("boom")
    m.register_forward_pre_hook(bad)
    m2 = t.nn.Linear(2, 2)
    m2.register_forward_hook(lambda mod, a, o: log.append("ac"), always_call=True)
    m2.register_forward_pre_hook(bad)
    out += _errs([lambda: m(t.ones(1, 2)), lambda: m2(t.ones(1, 2))])
    out.append(log)
    return out

@probe
def pre_hook_modify(t):
    m = t.nn.Linear(2, 2, bias=False)
    with t.no_grad(): m.weight.copy_(t.eye(2))
    m.register_forward_pre_hook(lambda mod, args: args[0] + 1)
    a = m(t.zeros(1, 2))
    m2 = t.nn.Identity()
    m2.register_forward_pre_hook(lambda mod, args: (args[0] + 1, ))
    m2.register_forward_pre_hook(lambda mod, args, kw: ((args[0] * 3,), {}), with_kwargs=True)
    b = m2(t.ones(1))
    m3 = t.nn.Identity()
    m3.register_forward_pre_hook(lambda mod, args, kw: 5, with_kwargs=True)
    return [a, b] + _errs([lambda: m3(t.ones(1))])

@probe
def global_hooks(t):
    log = []
    h = t.nn.modules.module.register_module_forward_hook(lambda m, i, o: log.append(type(m).__name__))
    try:
        t.nn.Sequential(t.nn.ReLU())(t.ones(1))
    finally:
        h.remove()
    t.nn.ReLU()(t.ones(1))
    return log

@probe
def module_apply_and_children(t):
    s = t.nn.Sequential(t.nn.Linear(1, 1), t.nn.Sequential(t.nn.ReLU(), t.nn.Linear(1, 2)))
    names = []
    r = s.apply(lambda m: names.append(type(m).__name__))
    return [names, r is s, [type(c).__name__ for c in s.children()], [type(c).__name__ for c in s.modules()],
            s[1][1].weight.shape, str(s[1])]

@probe
def module_getattr_errors(t):
    m = t.nn.Linear(1, 1)
    return _errs([lambda: m.foo, lambda: t.nn.Module().forward(1), lambda: t.nn.Module()(1),
                  lambda: m.get_extra_state()])

@probe
def moduledict_ops(t):
    md = t.nn.ModuleDict()
    md["a"] = t.nn.ReLU()
    out = _errs([lambda: md.__setitem__(1, t.nn.ReLU()), lambda: md["zz"], lambda: md.update({"b": 3}),
                 lambda: t.nn.ModuleDict({"x.y": t.nn.ReLU()}), lambda: md.__setitem__("c", 3)])
    md.update(t.nn.ModuleDict({"z": t.nn.Tanh(), "b": t.nn.Sigmoid()}))
    out += [list(md.keys()), [type(v).__name__ for v in md.values()], [k for k, _ in md.items()]]
    md.clear()
    out += [len(md)]
    od = t.nn.ModuleDict([("q", t.nn.ReLU()), ("p", t.nn.ReLU())])
    out.append(list(od))
    return out

@probe
def modulelist_ops(t):
    ml = t.nn.ModuleList([t.nn.ReLU() for _ in range(5)])
    out = [len(ml[::2]), type(ml[::2]).__name__, list(ml[1:3]._modules)]
    ml[1] = t.nn.Tanh()
    ml[-1] = t.nn.Sigmoid()
    out.append([type(m).__name__ for m in ml])
    out += _errs([lambda: ml[10], lambda: ml.__setitem__(10, t.nn.ReLU()), lambda: ml.__setitem__(0, 3),
                  lambda: ml.extend(3), lambda: ml["a"], lambda: ml.__delitem__(10)])
    # (a refused insert leaves torch's list shifted: tried on a list of its own)
    out += _errs([lambda: t.nn.ModuleList([t.nn.ReLU()]).insert(0, 3)])
    del ml[-1]
    out.append(list(ml._modules))
    out += _errs([lambda: ml.insert(-1, t.nn.GELU())])  # (torch's negative insert fails with a KeyError)
    ml.insert(1, t.nn.GELU())
    out.append([type(m).__name__ for m in ml])
    ml2 = ml + ml
    out += [len(ml2), list(ml2._modules)]
    ml += [t.nn.ReLU()]
    out.append(len(ml))
    out.append(repr(t.nn.ModuleList([t.nn.ReLU(), t.nn.ReLU(), t.nn.ReLU(), t.nn.Tanh()])))
    out.append(ml.index(ml[2]) if hasattr(ml, "index") else None)
    return out

@probe
def paramlist_ops(t):
    pl = t.nn.ParameterList([t.ones(2), t.nn.Parameter(t.zeros(1))])
    out = [type(pl[0]).__name__, pl[0].requires_grad, list(pl._parameters) if hasattr(pl, "_parameters") else None]
    pl[0] = t.zeros(3)
    out += [type(pl[0]).__name__, tuple(pl[0].shape)]
    out += _errs([lambda: pl[5], lambda: pl.__setitem__(5, t.ones(1))])
    pl2 = t.nn.ParameterList()
    out.append(repr(pl2))
    out.append(repr(pl))
    out.append([k for k, _ in t.nn.Sequential(t.nn.Module()).named_parameters()])
    out.append(list(t.nn.ParameterList([t.ones(1)]).state_dict()))
    return out

@probe
def paramdict_ops(t):
    pd = t.nn.ParameterDict({"b": t.ones(2), "a": t.ones(1)})
    out = [list(pd), type(pd["a"]).__name__, pd["a"].requires_grad, repr(pd)]
    out += _errs([lambda: pd["zz"], lambda: pd.update(3), lambda: pd.pop("zz")])
    pd["s"] = "str"
    out.append(pd["s"])
    out.append(list(pd.state_dict()))
    out.append(sorted(pd.copy().keys()))
    out.append(list(reversed(pd)))
    out.append(pd.popitem()[0])
    return out


@probe
def always_call_hooks_when_a_hook_raises(t):
    log = []
    m = t.nn.Linear(2, 2)

    def always(mod, args, out):
        log.append(("always", tuple(out.shape)))
        raise ValueError("inner")
    m.register_forward_hook(always, always_call=True)
    m.register_forward_hook(lambda mod, a, kw, out: log.append(("kwargs", sorted(kw), tuple(out.shape))),
                            with_kwargs=True, always_call=True)

    def bad(mod, args, out):
        raise RuntimeError("outer")
    m.register_forward_hook(bad, prepend=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = _errs([lambda: m(t.ones(1, 2))])
    handle = t.nn.modules.module.register_module_forward_hook(
        lambda mod, args, o: log.append(("global", type(o).__name__)), always_call=True)
    try:
        out += _errs([lambda: tuple(t.nn.Linear(2, 3)(t.ones(1, 2)).shape)])
    finally:
        handle.remove()
    return out + [log, [str(w.message) for w in caught]]



@probe
def module_to_parse(t):
    L = lambda: t.nn.Linear(1, 1)
    calls = [lambda: L().to("cpu", "float32"), lambda: L().to("cpu", t.float32, True, True),
             lambda: L().to(t.float32, t.float32), lambda: L().to(-1), lambda: L().to("cpu", device="cpu"),
             lambda: L().to(non_blocking=1), lambda: L().to(t.float16, dtype=t.float32), lambda: L().to("cpu", True),
             lambda: L().to(copy=True), lambda: L().to("cpu", t.float64, True).weight.dtype,
             lambda: L().to(t.ones(1, dtype=t.float64)).weight.dtype, lambda: L().to(t.float16, True).weight.dtype,
             lambda: L().to(None).weight.dtype, lambda: L().to(None, None).weight.dtype,
             lambda: L().to("cpu", memory_format=t.channels_last).weight.dtype,
             lambda: L().to(dtype=t.float64, device=t.device("cpu")).weight.dtype, lambda: L().to(t.int32),
             lambda: L().to(tensor=t.ones(1, dtype=t.float64)).weight.dtype, lambda: L().to(),
             lambda: L().to(t.ones(1), t.float64), lambda: L().to(t.float64, non_blocking=True, copy=False),
             lambda: L().to(dtype=t.float64, non_blocking=True, copy=False)]
    return _errs(calls)


# -- test_nn.py: nn.utils (clipping, padding and packing, vectors, parametrizations) ------------------------------
@probe
def clip_grad_cases(t):
    U = t.nn.utils
    out = []
    for norm_type in (2.0, 1, math.inf, 0.5, 3):
        ps = [t.nn.Parameter(t.ones(3)), t.nn.Parameter(t.ones(2))]
        ps[0].grad = t.tensor([3., -4., 0.]); ps[1].grad = t.tensor([1., 2.])
        n = U.clip_grad_norm_(ps, 1.0, norm_type=norm_type)
        out.append((n, ps[0].grad, ps[1].grad))
    p = t.nn.Parameter(t.ones(2)); p.grad = t.tensor([math.inf, 1.])
    out += _errs([lambda: U.clip_grad_norm_([p], 1.0, error_if_nonfinite=True),
                  lambda: (U.clip_grad_norm_([p], 1.0), p.grad)[1]])
    q = t.nn.Parameter(t.ones(2))
    out += [U.clip_grad_norm_([q], 1.0), U.clip_grad_norm_([], 1.0), U.clip_grad_norm_(q, 1.0)]
    r = t.nn.Parameter(t.ones(2)); r.grad = t.tensor([-5., 0.5])
    U.clip_grad_value_(r, 1.0); out.append(r.grad)
    out += _errs([lambda: U.clip_grad_value_([r], -1.0), lambda: U.clip_grad_norm_([r], -1.0)])
    s = t.nn.Parameter(t.ones(2)); s.grad = t.tensor([3., 4.])
    out.append((U.get_total_norm([s.grad]), U.clip_grads_with_norm_([s], 1.0, t.tensor(10.)), s.grad))
    return out


@probe
def pad_pack(t):
    R = t.nn.utils.rnn
    seqs = [t.tensor([1., 2., 3.]), t.tensor([4.]), t.tensor([5., 6.])]
    out = [R.pad_sequence(seqs), R.pad_sequence(seqs, batch_first=True, padding_value=-1),
           R.pad_sequence(seqs, batch_first=True, padding_side="left")]
    out += _errs([lambda: R.pad_sequence(seqs, padding_side="middle"),
                  lambda: R.pad_sequence(seqs, padding_side=3), lambda: R.pad_sequence([]),
                  lambda: R.pack_padded_sequence(out[1], [1, 3, 2], batch_first=True),
                  lambda: R.pack_padded_sequence(out[1], [3, 2, 0], batch_first=True, enforce_sorted=False),
                  lambda: R.pack_padded_sequence(out[1], t.tensor([3, 1, 2]), batch_first=True,
                                                 enforce_sorted=False).batch_sizes,
                  lambda: R.pack_sequence(seqs).data,
                  lambda: R.pack_sequence(seqs, enforce_sorted=False).sorted_indices,
                  lambda: R.pad_packed_sequence(R.pack_sequence(seqs, enforce_sorted=False), batch_first=True,
                                                total_length=5),
                  lambda: R.pad_packed_sequence(R.pack_sequence(seqs, enforce_sorted=False), total_length=2),
                  lambda: R.unpad_sequence(out[1], t.tensor([3, 1, 2]), batch_first=True),
                  lambda: R.unpack_sequence(R.pack_sequence(seqs, enforce_sorted=False)),
                  lambda: R.pack_padded_sequence(out[1], [3, 1, 2], batch_first=True,
                                                 enforce_sorted=False).to(t.float64).data.dtype,
                 ])
    return out


@probe
def vector_utils(t):
    U = t.nn.utils
    m = t.nn.Linear(2, 2)
    v = U.parameters_to_vector(m.parameters())
    U.vector_to_parameters(t.arange(6.), m.parameters())
    return [v.shape, m.weight, m.bias] + _errs([
        lambda: U.vector_to_parameters(t.arange(5.), m.parameters()),
        lambda: U.vector_to_parameters([1.], m.parameters()),
        lambda: U.parameters_to_vector([t.ones(2), t.ones(2, dtype=t.float64)])])


@probe
def orthogonal_param(t):
    P = t.nn.utils.parametrizations
    m = P.orthogonal(t.nn.Linear(3, 3))
    w = m.weight
    return [t.allclose(w @ w.T, t.eye(3), atol=1e-5), [k for k, _ in m.named_parameters()], type(m).__name__,
            list(m.state_dict())]


# -- test_nn.py: more of the Module API (properties, early assignment, BatchNorm's old state dicts, the future
# flag, meta modules, assign loads) ----------------------------------------------------------------------------
@probe
def getattr_with_property(t):
    class Model(t.nn.Module):
        @property
        def some_property(self):
            return self.something_that_doesnt_exist
    return _errs([lambda: Model().some_property])


@probe
def assign_before_init(t):
    class Bad(t.nn.Module):
        def __init__(self):
            self.register_buffer("b", t.ones(1))
    class Bad2(t.nn.Module):
        def __init__(self):
            self.p = t.nn.Parameter(t.ones(1))
    class Bad3(t.nn.Module):
        def __init__(self):
            self.m = t.nn.Linear(1, 1)
    class Bad4(t.nn.Module):
        def __init__(self):
            self.x = 1
            super().__init__()
    return _errs([Bad, Bad2, Bad3, lambda: Bad4().x])


@probe
def non_leaf_parameter_assignment(t):
    l1, l2 = t.nn.Linear(2, 2), t.nn.Linear(2, 2)
    return _errs([lambda: setattr(l1, "weight", l2.weight * 2),
                  lambda: setattr(l1, "weight", t.ones(2, 2, dtype=t.float64)),
                  lambda: setattr(l1, "weight", t.nn.Parameter(t.ones(2, 2)) * 1)])


@probe
def dir_digits(t):
    s = t.nn.Sequential(t.nn.Linear(1, 1))
    d = dir(s)
    m = t.nn.Linear(1, 1)
    return ["0" in d, "weight" in dir(m), "bias" in dir(m), "forward" in dir(m), "_parameters" in dir(m)]


@probe
def bn_load_old_version(t):
    bn = t.nn.BatchNorm1d(3)
    sd = bn.state_dict()
    del sd["num_batches_tracked"]
    sd._metadata[""]["version"] = 1
    r = bn.load_state_dict(sd)
    out = [str(r), bn.num_batches_tracked]
    sd2 = t.nn.BatchNorm1d(3).state_dict(); del sd2["num_batches_tracked"]
    out += _errs([lambda: t.nn.BatchNorm1d(3).load_state_dict(sd2)])
    bn3 = t.nn.BatchNorm1d(3, track_running_stats=False)
    out += [list(bn3.state_dict()), list(t.nn.BatchNorm1d(3).state_dict()),
            dict(t.nn.BatchNorm1d(3).state_dict()._metadata)]
    return out


@probe
def module_type_and_future(t):
    m = t.nn.Linear(2, 2)
    w = m.weight
    out = [m.type(t.float64).weight.dtype, m.weight is w]
    with t.no_grad():
        pass
    fut = getattr(t, "__future__", None)
    if fut is None:
        return out + ["nofuture"]
    out.append(fut.get_overwrite_module_params_on_conversion())
    fut.set_overwrite_module_params_on_conversion(True)
    try:
        m2 = t.nn.Linear(2, 2); w2 = m2.weight
        m2.double()
        out += [m2.weight is w2, w2.dtype]
    finally:
        fut.set_overwrite_module_params_on_conversion(False)
    m3 = t.nn.Linear(2, 2); w3 = m3.weight
    m3.double()
    out += [m3.weight is w3, w3.dtype]
    return out


@probe
def zero_grad_variants(t):
    m = t.nn.Linear(2, 2)
    m.weight.requires_grad_(False)
    m(t.ones(1, 2)).sum().backward()
    out = [m.weight.grad, m.bias.grad]
    m.zero_grad(set_to_none=False)
    out.append(m.bias.grad)
    y = t.ones(2, requires_grad=True)
    m2 = t.nn.Module(); m2.p = t.nn.Parameter(t.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the create_graph reference-cycle warning)
        (m2.p * y).sum().backward(create_graph=True)
    g = m2.p.grad
    m2.zero_grad(set_to_none=False)
    out += [m2.p.grad, m2.p.grad.requires_grad, g.grad_fn is None]
    return out


@probe
def pickle_module_roundtrip(t):
    m = t.nn.Sequential(t.nn.Linear(2, 2), t.nn.BatchNorm1d(2))
    h = m.register_forward_hook(lambda *a: None) if False else None
    m2 = pickle.loads(pickle.dumps(m))
    m3 = copy.deepcopy(m)
    return [list(m2.state_dict()), type(m2[0].weight).__name__, m2[0].weight.requires_grad, m2.training,
            repr(m3), m3[1].num_batches_tracked]


@probe
def forward_monkeypatch(t):
    m = t.nn.Linear(2, 2, bias=False)
    with t.no_grad(): m.weight.copy_(t.eye(2))
    log = []
    m.register_forward_hook(lambda mod, a, o: log.append("hook"))
    orig = m.forward
    m.forward = lambda x: orig(x) * 3
    a = m(t.ones(1, 2))
    m.forward = types.MethodType(lambda self, x: x + 1, m)
    b = m(t.ones(1, 2))
    del m.forward
    c = m(t.ones(1, 2))
    class Sub(t.nn.Linear):
        def __call__(self, *args, **kwargs):
            log.append("call")
            return super().__call__(*args, **kwargs)
    s = Sub(2, 2)
    s(t.ones(1, 2))
    return [a, b, c, log, "forward" in m.__dict__]


@probe
def forward_kwargs_and_defaults(t):
    class M(t.nn.Module):
        def forward(self, x, *, scale=2.0, mask=None):
            y = x * scale
            return y if mask is None else y.masked_fill(mask, 0.0)
    m = M()
    log = []
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {**kwargs, "scale": 5.0}), with_kwargs=True)
    out = [m(t.ones(2)), m(t.ones(2), mask=t.tensor([True, False]))]
    out += _errs([lambda: m(t.ones(2), 3.0), lambda: M()(), lambda: M()(t.ones(2), bogus=1)])
    return [str(o) if isinstance(o, tuple) else o for o in out]


@probe
def module_properties(t):
    m = t.nn.Sequential(t.nn.Conv2d(1, 2, 3), t.nn.BatchNorm2d(2))
    return [m[0].in_channels, m[0].kernel_size, m[0].padding_mode, m[1].momentum, m[1].eps, m[1].affine,
            m[0].weight.shape, m[0].transposed, m[0].output_padding, m[0].groups, m[0].dilation,
            hasattr(m[0], "_reversed_padding_repeated_twice"), m[1].num_features]


@probe
def meta_and_to_empty(t):
    out = _errs([lambda: t.nn.Linear(2, 3, device="meta").weight.shape,
                 lambda: t.nn.Linear(2, 3, device="meta").weight.device,
                 lambda: t.nn.Linear(2, 3, device="meta").to_empty(device="cpu").weight.shape,
                 lambda: t.nn.Linear(2, 3, dtype=t.float64).weight.dtype,
                 lambda: type(t.nn.utils.skip_init(t.nn.Linear, 2, 3)).__name__,
                 lambda: t.nn.utils.skip_init(t.nn.Linear, 2, 3, device="cpu").weight.shape,
                 lambda: t.nn.Linear(2, 3, device="meta")(t.ones(1, 2, device="meta")).shape,
                 lambda: t.empty(2, device="meta").sum().device,
                ])
    return out


@probe
def buffers_non_persistent_listing(t):
    m = t.nn.Module()
    m.register_buffer("a", t.ones(1), persistent=False)
    m.register_buffer("b", t.ones(1))
    m.c = t.nn.Module(); m.c.register_buffer("d", t.zeros(1), persistent=False)
    m.e = m.c
    out = [[k for k, _ in m.named_buffers()], [k for k, _ in m.named_buffers(remove_duplicate=False)],
           list(m.state_dict()),
           len(list(m.buffers()))]
    r = m.load_state_dict({"b": t.ones(1) * 3})
    out += [str(r), m.b]
    out += _errs([lambda: m.load_state_dict({"b": t.ones(1), "a": t.ones(1)})])
    return out


@probe
def reset_parameters_all(t):
    mods = [t.nn.Linear(3, 2), t.nn.Conv1d(2, 2, 3), t.nn.BatchNorm1d(2), t.nn.LayerNorm(3), t.nn.Embedding(4, 2),
            t.nn.GRU(2, 2), t.nn.MultiheadAttention(4, 2), t.nn.Bilinear(2, 2, 1), t.nn.PReLU(), t.nn.GroupNorm(1, 2)]
    out = []
    for m in mods:
        out.append((type(m).__name__, hasattr(m, "reset_parameters"), sorted(k for k, _ in m.named_parameters())))
        if hasattr(m, "reset_parameters"):
            m.reset_parameters()
    bn = t.nn.BatchNorm1d(2); bn(t.ones(3, 2) * t.tensor([1., 2.]))
    bn.reset_running_stats()
    out.append((bn.running_mean, bn.running_var, bn.num_batches_tracked))
    return out


@probe
def assign_cases(t):
    m = t.nn.Linear(2, 2)
    m.bias.requires_grad_(False)
    src = {"weight": t.ones(2, 2, dtype=t.float64), "bias": t.nn.Parameter(t.zeros(2))}
    m.load_state_dict(src, assign=True)
    out = [type(m.weight).__name__, m.weight.dtype, m.weight.requires_grad, type(m.bias).__name__, m.bias.requires_grad,
           m.bias is src["bias"], m.weight.data_ptr() == src["weight"].data_ptr()]
    bn = t.nn.BatchNorm1d(2)
    bn.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in bn.state_dict().items()}, assign=True)
    out += [bn.running_mean.dtype, bn.weight.dtype, type(bn.running_mean).__name__]
    m2 = t.nn.Linear(2, 2)
    out += _errs([lambda: m2.load_state_dict({"weight": t.ones(3, 2), "bias": t.ones(2)}, assign=True),
                  lambda: m2.load_state_dict({"weight": t.ones(2, 2)}, assign=True)])
    m3 = t.nn.Linear(2, 2)
    w = m3.weight
    m3.load_state_dict({"weight": t.full((2, 2), 3.0), "bias": t.ones(2)})
    out += [m3.weight is w, m3.weight, m3.weight.requires_grad]
    p = t.nn.Parameter(t.ones(2, 2))
    m4 = t.nn.Linear(2, 2)
    with t.no_grad():
        pass
    m4.load_state_dict({"weight": p, "bias": t.ones(2)})
    out += [m4.weight is p, m4.weight.grad_fn is None, m4.weight._version if hasattr(m4.weight, "_version") else None]
    return out


@probe
def load_state_dict_nonstrict_shape(t):
    m = t.nn.Sequential(t.nn.Linear(2, 2), t.nn.Linear(2, 3))
    sd = {"0.weight": t.ones(2, 2), "1.weight": t.ones(2, 2), "9.x": t.ones(1)}
    return _errs([lambda: str(m.load_state_dict(sd, strict=False)), lambda: str(m.load_state_dict({}, strict=False)),
                  lambda: m.load_state_dict(sd), lambda: m.load_state_dict({"0.weight": t.ones(2, 2, 1)}, strict=False),
                  lambda: m.load_state_dict({"0.weight": t.ones(2, 2, requires_grad=True) * 2},
                     strict=False) and m[0].weight.requires_grad])


@probe
def constructor_checks(t):
    N = t.nn  # (padding strings and modes left out: torch prints them from sets, in an order the hash seed picks)
    calls = [lambda: N.Linear(0, 3).weight.shape, lambda: N.Linear(-1, 3), lambda: N.Linear(2.5, 3),
             lambda: N.Conv2d(3, 4, 0), lambda: N.Conv2d(3, 4, 3, groups=2), lambda: N.Conv2d(4, 3, 3, groups=2),
             lambda: N.Conv2d(4, 4, 3, padding="same", stride=2), lambda: N.Conv2d(4, 4, 3, padding="valid").padding,
             lambda: N.Conv1d(4, 4, 3, padding="same", dilation=2).padding,
             lambda: N.ConvTranspose2d(4, 4, 3, padding_mode="reflect"), lambda: N.Conv2d(0, 4, 3),
             lambda: N.Embedding(10, 3, padding_idx=10), lambda: N.Embedding(10, 3, padding_idx=-11),
             lambda: N.Embedding(10, 3, padding_idx=-1).padding_idx, lambda: N.Embedding(10, 3, _weight=t.ones(9, 3)),
             lambda: N.Dropout(p=1.5), lambda: N.Dropout(p=-0.1), lambda: N.Dropout2d(1.0).p,
             lambda: N.LSTM(3, 4, num_layers=0), lambda: N.LSTM(3, 4, dropout=2), lambda: N.LSTM(3, 0),
             lambda: N.LSTM(3, 4, proj_size=4), lambda: N.GRU(3, 4, proj_size=2),
             lambda: N.RNN(3, 4, nonlinearity="gelu"),
             lambda: N.MultiheadAttention(5, 2), lambda: N.TransformerEncoderLayer(5, 2), lambda: N.GroupNorm(3, 4),
             lambda: N.LayerNorm(0).normalized_shape, lambda: N.BatchNorm1d(0).num_features,
             lambda: N.InstanceNorm1d(3, affine=True).weight.shape,
             lambda: N.PixelShuffle(0), lambda: N.Unflatten(1, (2, 2))(t.ones(1, 5)),
             lambda: N.Unflatten(1, [2, -1])(t.ones(1, 6)).shape,
             lambda: N.MaxPool2d(0), lambda: N.MaxPool2d(2)(t.ones(1, 1, 1, 1)), lambda: N.AvgPool2d(3, padding=2),
             lambda: N.Upsample()(t.ones(1, 1, 2)), lambda: N.Upsample(size=2, scale_factor=2)(t.ones(1, 1, 2)),
             lambda: N.AdaptiveAvgPool2d(0)(t.ones(1, 1, 2, 2)).shape, lambda: N.Bilinear(0, 2, 2),
             lambda: N.Identity(5, foo=3)(t.ones(1)), lambda: N.Flatten(2, 1)(t.ones(2, 3, 4)),
             lambda: N.CrossEntropyLoss(reduction="bogus")(t.ones(2, 3), t.tensor([0, 1])),
             lambda: N.MSELoss(size_average=False).reduction, lambda: N.Softplus(beta=0)(t.ones(1)),
             lambda: N.Hardtanh(2, 1), lambda: N.Threshold(0.1, 20)(t.tensor([0.05, 1.])),
             lambda: N.ELU(alpha=-1)(t.ones(1)),
             lambda: N.CELU(alpha=0)(t.ones(1)), lambda: N.RReLU(0.5, 0.1), lambda: N.Softmax()(t.ones(2, 2)),
             lambda: N.LogSoftmax(dim=5)(t.ones(2)), lambda: N.GLU()(t.ones(3)),
             lambda: N.TransformerDecoderLayer(4, 2, activation="bogus")]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = _errs(calls)
    return [tuple(o) if isinstance(o, t.Size) else o for o in out] + [sorted(set(str(x.message)[:90] for x in w))]


@probe
def forward_shape_errors(t):
    N = t.nn
    calls = [lambda: N.Linear(3, 5)(t.ones(2, 4)), lambda: N.Linear(3, 5)(t.ones(3)).shape,
             lambda: N.Linear(3, 5)(t.ones(2, 3, dtype=t.float64)),
             lambda: N.Conv2d(3, 2, 3)(t.ones(1, 4, 5, 5)), lambda: N.Conv2d(3, 2, 3)(t.ones(3, 5, 5)).shape,
             lambda: N.Conv2d(3, 2, 3)(t.ones(5, 5)), lambda: N.Conv2d(3, 2, 3)(t.ones(1, 3, 2, 2)),
             lambda: N.BatchNorm1d(3)(t.ones(2, 4)), lambda: N.BatchNorm1d(3)(t.ones(1, 3)),
             lambda: N.BatchNorm2d(3)(t.ones(2, 3, 4)),
             lambda: N.LSTM(3, 4)(t.ones(5, 2, 4)),
             lambda: N.LSTM(3, 4, batch_first=True)(t.ones(2, 5, 3), (t.zeros(1, 3, 4), t.zeros(1, 2, 4))),
             lambda: N.GRU(3, 4)(t.ones(2, 3, 3, 3)), lambda: N.Embedding(5, 2)(t.tensor([5])),
             lambda: N.Embedding(5, 2)(t.tensor([1.0])),
             lambda: N.CrossEntropyLoss()(t.ones(2, 3), t.tensor([0, 5])),
             lambda: N.CrossEntropyLoss()(t.ones(2, 3), t.tensor([0.5, 1.])),
             lambda: N.CrossEntropyLoss()(t.ones(2, 3), t.ones(2, 4)),
             lambda: N.NLLLoss()(t.ones(2, 3), t.tensor([0, 1, 2])),
             lambda: N.LayerNorm(4)(t.ones(2, 3)), lambda: N.MaxPool2d(3)(t.ones(1, 1, 2, 2)),
             lambda: N.BCELoss()(t.ones(2), t.ones(3)),
             lambda: N.MultiheadAttention(4, 2)(t.ones(3, 4), t.ones(3, 5), t.ones(3, 5)),
             lambda: N.Sequential(N.Linear(2, 3), N.Linear(4, 1))(t.ones(1, 2)),
             lambda: N.Flatten()(t.ones(2)).shape, lambda: N.Softmax(dim=2)(t.ones(2, 2)),
             lambda: N.PixelShuffle(2)(t.ones(1, 3, 2, 2)),
             lambda: N.Conv1d(2, 2, 3, padding=1, padding_mode="circular")(t.ones(1, 2, 1)).shape,
             lambda: N.Upsample(scale_factor=2, mode="bilinear")(t.ones(1, 1, 3)),
             lambda: N.Embedding(5, 2, max_norm=1.0)(t.tensor([[1, 2]])).shape]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        out = _errs(calls)
        out += _errs([lambda: N.MSELoss()(t.ones(2, 1), t.ones(2)).item(),
        lambda: N.L1Loss()(t.ones(3), t.ones(1, 3)).item()])
    return [tuple(o) if isinstance(o, t.Size) else o for o in out] + [sorted(set(str(x.message)[:100] for x in w))]


@probe
def state_dict_layouts(t):
    N = t.nn
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (Transformer's nested-tensor note; both frameworks give it)
        mods = [N.MultiheadAttention(8, 2), N.MultiheadAttention(8, 2, kdim=4, vdim=6, bias=False, add_bias_kv=True),
                N.TransformerEncoderLayer(8, 2, dim_feedforward=16),
                N.TransformerDecoderLayer(8, 2, dim_feedforward=16), N.Transformer(8, 2, 1, 1, 16),
                N.LSTM(3, 4, 2, bidirectional=True, proj_size=2), N.GRU(3, 4, bias=False), N.RNN(3, 4),
                N.LSTMCell(3, 4), N.GRUCell(3, 4), N.RNNCell(3, 4, bias=False), N.Embedding(5, 3),
                N.EmbeddingBag(5, 3, mode="max"), N.BatchNorm2d(3), N.BatchNorm1d(3, affine=False),
                N.SyncBatchNorm(3), N.InstanceNorm2d(3, affine=True, track_running_stats=True),
                N.LayerNorm([3, 4], bias=False), N.GroupNorm(2, 4), N.RMSNorm(4), N.Conv2d(2, 4, 3, groups=2),
                N.ConvTranspose1d(2, 4, 3), N.PReLU(3), N.Bilinear(2, 3, 4),
                N.AdaptiveLogSoftmaxWithLoss(8, 10, [4, 8], div_value=2.0), N.Identity(), N.Sequential()]
    out = []
    for m in mods:
        sd = m.state_dict()
        layout = [(k, tuple(v.shape), str(v.dtype).split(".")[-1], v.requires_grad) for k, v in sd.items()]
        out.append((type(m).__name__, layout, sorted(dict(sd._metadata).items())))
    return out


@probe
def lazy_state_dicts(t):
    lazy = t.nn.LazyLinear(3)
    sd = lazy.state_dict()
    out = [type(sd["weight"]).__name__, sd["weight"].requires_grad, repr(sd["weight"])]
    out += _errs([lambda: sd["weight"].shape, lambda: lazy.weight.share_memory_(),
                  lambda: t.nn.Linear(2, 3).load_state_dict(sd)])
    filled = t.nn.LazyLinear(3)
    filled.load_state_dict(t.nn.Linear(2, 3).state_dict())
    return out + [type(filled).__name__, tuple(filled.weight.shape)]


@probe
def lazy_module_uses(t):
    m = t.nn.Sequential(t.nn.LazyLinear(3), t.nn.ReLU(), t.nn.LazyBatchNorm1d())
    out = [repr(m)]
    out += _errs([lambda: type(m.to(t.float64)[0].weight).__name__, lambda: type(m.double()[0].weight).__name__,
                  lambda: type(m[2].running_mean).__name__, lambda: len(list(m.parameters())),
                  lambda: t.optim.SGD(m.parameters(), lr=0.1).param_groups[0]["lr"], lambda: m.zero_grad(),
                  lambda: [k for k, _ in m.named_buffers()], lambda: m.train() is m,
                  lambda: str(m.state_dict()["0.weight"]), lambda: m.share_memory()])
    y = m.float()(t.ones(4, 2))
    out += [tuple(y.shape), repr(m), [tuple(p.shape) for p in m.parameters()]]
    return out


@probe
def lazy_more(t):
    out = []
    src = t.nn.Sequential(t.nn.Conv2d(2, 4, 3), t.nn.BatchNorm2d(4), t.nn.Linear(5, 2))
    dst = t.nn.Sequential(t.nn.LazyConv2d(4, 3), t.nn.LazyBatchNorm2d(), t.nn.LazyLinear(2))
    out.append([dst[i].has_uninitialized_params() for i in range(3)])
    r = dst.load_state_dict(src.state_dict())
    out += [str(r), [type(m).__name__ for m in dst], [tuple(p.shape) for p in dst.parameters()],
            [getattr(dst[i], "has_uninitialized_params", lambda: None)() for i in range(3)], dst[1].num_batches_tracked]
    lz = t.nn.LazyLinear(2)
    out += _errs([lambda: lz.load_state_dict({"weight": t.ones(2, 3)}),
                  lambda: str(lz.load_state_dict({"weight": t.ones(2, 3)}, strict=False)), lambda: type(lz).__name__,
                  lambda: tuple(lz.weight.shape), lambda: type(lz.bias).__name__])
    c = t.nn.LazyConv1d(3, 2, groups=1)
    c(t.ones(1, 4, 5))
    out += [type(c).__name__, tuple(c.weight.shape), c.in_channels]
    return out


@probe
def lazy_refusals(t):
    m = t.nn.Sequential(t.nn.LazyLinear(3), t.nn.ReLU(), t.nn.LazyBatchNorm1d())
    w = m[0].weight
    out = _errs([lambda: t.nn.utils.parameters_to_vector(m.parameters()), lambda: m.requires_grad_(False) is m,
                 lambda: sum(p.numel() for p in m.parameters()), lambda: w + 1, lambda: w * 2, lambda: -w,
                 lambda: w.sum(), lambda: w.view(-1), lambda: w.detach(), lambda: w.clone(), lambda: w.dim(),
                 lambda: bool(w), lambda: w.t(), lambda: w.tolist(), lambda: w.fill_(1),
                 lambda: t.nn.init.kaiming_uniform_(w), lambda: w.dtype, lambda: w.device, lambda: w.requires_grad,
                 lambda: w.is_leaf, lambda: type(w.to(t.float64)).__name__, lambda: type(w.double()).__name__,
                 lambda: w.size(), lambda: w.is_floating_point(), lambda: w.grad])
    m2 = pickle.loads(pickle.dumps(t.nn.LazyLinear(2)))
    out += [type(m2.weight).__name__, type(m2).__name__, tuple(m2(t.ones(1, 4)).shape)]
    # (the method torch names differs where tidal's function calls another one: the words before it are compared)
    return [(o[0], o[1].split(" in <")[0]) if isinstance(o, tuple) and len(o) == 2 and isinstance(o[1], str)
            else o for o in out]


@pytest.mark.parametrize("fn", PROBES, ids=lambda fn: fn.__name__)
def test_same_as_torch(fn):
    assert_same(fn)
