"""tidal.nn core: Parameter, Buffer, Module (registration, traversal, state_dict, modes, conversion,
hooks, repr, copying) and the containers, compared with torch.nn where behaviour is observable."""
from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

import tidal
import tidal.nn as nn
from nn_helpers import assert_close, load_from_torch, to_tidal, torch_repr


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(3, 4)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", tidal.zeros(1))
        self.register_buffer("scratch", tidal.ones(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class TorchNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.act = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(4, 2, bias=False)
        self.register_buffer("steps", torch.zeros(1))
        self.register_buffer("scratch", torch.ones(2), persistent=False)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


# -- Parameter and Buffer --------------------------------------------------------------------------
def test_parameter_basics():
    data = tidal.ones(2, 3)
    p = nn.Parameter(data)
    assert isinstance(p, tidal.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.shape == (2, 3)
    assert p.untyped_storage_id() == data.untyped_storage_id()  # shares memory, as torch
    assert not nn.Parameter(data, requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(p) == torch_repr(repr(torch.nn.Parameter(torch.ones(2, 3))))
    assert not isinstance(p * 2, nn.Parameter) and not isinstance(p.detach(), nn.Parameter)
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        nn.Parameter(tidal.ones(2, dtype=tidal.int64))


def test_parameter_data_and_copies():
    p = nn.Parameter(tidal.tensor([1.0, 2.0]))
    assert not p.data.requires_grad and not isinstance(p.data, nn.Parameter)
    p.data = tidal.tensor([5.0, 6.0, 7.0], dtype=tidal.float64)
    assert p.shape == (3,) and p.dtype is tidal.float64 and isinstance(p, nn.Parameter) and p.requires_grad
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q.untyped_storage_id() != p.untyped_storage_id()
    np.testing.assert_array_equal(q.detach().numpy(), [5.0, 6.0, 7.0])
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.dtype is tidal.float64 and r.requires_grad
    np.testing.assert_array_equal(r.detach().numpy(), [5.0, 6.0, 7.0])


def test_buffer_assignment_registers():
    m = nn.Module()
    m.a = nn.Buffer(tidal.ones(2))
    m.b = nn.Buffer(tidal.zeros(1), persistent=False)
    m.plain = tidal.ones(3)  # a plain tensor attribute is not a buffer
    assert [n for n, _ in m.named_buffers()] == ["a", "b"]
    assert list(m.state_dict()) == ["a"]
    assert isinstance(m.a, nn.Buffer) and not isinstance(tidal.ones(1), nn.Buffer)
    m.a = tidal.zeros(2)  # reassigning a buffer keeps it a buffer
    assert "a" in m._buffers and m.a.sum().item() == 0


# -- registration and attributes ---------------------------------------------------------------
def test_attribute_routing_matches_torch():
    m, ref = Net(), TorchNet()
    assert [n for n, _ in m.named_parameters()] == [n for n, _ in ref.named_parameters()]
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in ref.named_buffers()]
    assert [n for n, _ in m.named_children()] == [n for n, _ in ref.named_children()]
    assert [n for n, _ in m.named_modules()] == [n for n, _ in ref.named_modules()]
    assert list(m.state_dict()) == list(ref.state_dict())
    assert len(list(m.parameters())) == 3 and len(list(m.buffers())) == 2
    assert [n for n, _ in m.named_parameters(recurse=False)] == []
    assert [n for n, _ in m.named_parameters(prefix="net")][0] == "net.fc1.weight"
    assert "fc1" in dir(m) and "steps" in dir(m)


def test_setattr_replaces_and_deletes():
    m = Net()
    m.fc1 = None
    assert m.fc1 is None and "fc1" in m._modules
    m.fc1 = nn.Linear(3, 4)
    m.steps = None
    assert "steps" in m._buffers and m.steps is None
    del m.fc2
    assert "fc2" not in m._modules
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'fc2'"):
        m.fc2
    m.w = nn.Parameter(tidal.ones(1))
    m.w = None  # None is allowed for a parameter slot
    assert "w" in m._parameters and m.w is None
    m.extra = 5
    assert m.extra == 5 and "extra" not in m._parameters
    del m.extra
    assert not hasattr(m, "extra")


def test_setattr_errors_match_torch():
    m = nn.Linear(2, 2)
    ref = torch.nn.Linear(2, 2)
    with pytest.raises(TypeError) as err:
        m.weight = tidal.ones(2, 2)
    with pytest.raises(TypeError) as ref_err:
        ref.weight = torch.ones(2, 2)
    assert str(err.value) == str(ref_err.value).replace("torch.nn.", "tidal.nn.")
    s, sr = nn.Sequential(nn.ReLU()), torch.nn.Sequential(torch.nn.ReLU())
    with pytest.raises(TypeError) as err:
        setattr(s, "0", 3)
    with pytest.raises(TypeError) as ref_err:
        setattr(sr, "0", 3)
    assert str(err.value) == str(ref_err.value).replace("torch.nn.", "tidal.nn.")


class _Early(nn.Module):
    def __init__(self, what):
        if what == "param":
            self.p = nn.Parameter(tidal.ones(1))
        elif what == "module":
            self.m = nn.ReLU()
        else:
            self.register_buffer("b", tidal.ones(1))
        super().__init__()


@pytest.mark.parametrize("what,msg", [("param", "cannot assign parameters before Module.__init__"),
                                      ("module", "cannot assign module before Module.__init__"),
                                      ("buffer", "cannot assign buffer before Module.__init__")])
def test_assign_before_init(what, msg):
    with pytest.raises(AttributeError, match=msg):
        _Early(what)


def test_register_errors():
    m = nn.Module()
    m.x = 1
    with pytest.raises(KeyError, match="attribute 'x' already exists"):
        m.register_buffer("x", tidal.ones(1))
    with pytest.raises(KeyError, match='buffer name can.+t contain "."'):
        m.register_buffer("a.b", tidal.ones(1))
    with pytest.raises(KeyError, match="buffer name can.+t be empty string"):
        m.register_buffer("", tidal.ones(1))
    with pytest.raises(TypeError, match="buffer name should be a string. Got int"):
        m.register_buffer(3, tidal.ones(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'b'"):
        m.register_buffer("b", 3)
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' object to parameter 'p'"):
        m.register_parameter("p", tidal.ones(1))
    with pytest.raises(KeyError, match='module name can.+t contain "."'):
        m.add_module("a.b", nn.ReLU())
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("c", 3)
    w = nn.Parameter(tidal.ones(2))
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'q'"):
        m.register_parameter("q", _non_leaf_parameter(w))
    with pytest.raises(TypeError, match="unexpected keyword argument 'foo'"):
        nn.Module(foo=1)


def _non_leaf_parameter(w):
    p = nn.Parameter(tidal.ones(2))
    p.grad_fn = (w * 2).grad_fn  # a Parameter that is the output of an op
    return p


def test_get_submodule_parameter_buffer():
    m = nn.Sequential(Net(), nn.Linear(2, 2))
    assert m.get_submodule("0.fc1") is m[0].fc1
    assert m.get_submodule("") is m
    assert m.get_parameter("0.fc1.weight") is m[0].fc1.weight
    assert m.get_buffer("0.steps") is m[0].steps
    with pytest.raises(AttributeError, match="Net has no attribute `nope`"):
        m.get_submodule("0.nope")
    with pytest.raises(AttributeError, match="`steps` is not an nn.Parameter"):
        m.get_parameter("0.steps")
    with pytest.raises(AttributeError, match="`weight` is not a buffer"):
        m.get_buffer("1.weight")


def test_shared_modules_and_parameters_counted_once():
    lin = nn.Linear(2, 2)
    m = nn.Sequential(lin, lin)
    assert len(list(m.parameters())) == 2
    assert [n for n, _ in m.named_modules()] == ["", "0"]
    assert len(list(m.named_modules(remove_duplicate=False))) == 3
    assert len(list(m.named_parameters(remove_duplicate=False))) == 4
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]


# -- state_dict ---------------------------------------------------------------------------------
def test_state_dict_round_trip_with_torch():
    ref = TorchNet()
    m = Net()
    load_from_torch(m, ref)
    x = np.random.default_rng(0).standard_normal((5, 3)).astype(np.float32)
    assert_close(m(tidal.tensor(x)), ref(torch.from_numpy(x)))
    sd = m.state_dict()
    assert not any(v.requires_grad for v in sd.values())
    assert sd["fc1.weight"].untyped_storage_id() == m.fc1.weight.untyped_storage_id()  # detached alias
    assert m.state_dict(keep_vars=True)["fc1.weight"] is m.fc1.weight
    back = TorchNet()
    back.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in sd.items()})
    assert_close(m(tidal.tensor(x)), back(torch.from_numpy(x)))
    assert sd._metadata[""]["version"] == 1 and "fc1" in sd._metadata
    assert m.state_dict(prefix="model.")["model.fc1.bias"].shape == (4,)


def test_load_state_dict_strict_errors_match_torch():
    m, ref = nn.Linear(2, 3), torch.nn.Linear(2, 3)
    bad = {"weight": np.ones((2, 2), np.float32), "foo": np.ones(1, np.float32)}
    with pytest.raises(RuntimeError) as err:
        m.load_state_dict({k: tidal.tensor(v) for k, v in bad.items()})
    with pytest.raises(RuntimeError) as ref_err:
        ref.load_state_dict({k: torch.from_numpy(v) for k, v in bad.items()})
    assert str(err.value) == torch_repr(str(ref_err.value))
    assert str(err.value).startswith("Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: "
                                     '"bias". \n\tUnexpected key(s) in state_dict: "foo". \n\tsize mismatch for '
                                     "weight: copying a param with shape tidal.Size([2, 2]) from checkpoint, the "
                                     "shape in current model is tidal.Size([3, 2]).")
    ok = {"weight": np.ones((3, 2), np.float32), "foo": np.ones(1, np.float32)}
    result = m.load_state_dict({k: tidal.tensor(v) for k, v in ok.items()}, strict=False)
    ref_result = ref.load_state_dict({k: torch.from_numpy(v) for k, v in ok.items()}, strict=False)
    assert result.missing_keys == ref_result.missing_keys and result.unexpected_keys == ref_result.unexpected_keys
    assert repr(result) == repr(ref_result)
    assert repr(m.load_state_dict(m.state_dict())) == "<All keys matched successfully>"
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones((3, 2)))


def test_load_state_dict_more_errors():
    m = nn.Sequential(nn.Linear(2, 2))
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        m.load_state_dict([1, 2])
    with pytest.raises(RuntimeError, match='While copying the parameter named "0.bias", expected tidal.Tensor'):
        m.load_state_dict({"0.weight": tidal.ones(2, 2), "0.bias": [1.0, 2.0]})
    with pytest.raises(RuntimeError, match=r'Unexpected key\(s\) in state_dict: "1.weight"'):
        m.load_state_dict({"0.weight": tidal.ones(2, 2), "0.bias": tidal.ones(2), "1.weight": tidal.ones(1)})


def test_load_state_dict_copies_in_place_and_assign():
    m = nn.Linear(2, 2)
    w = m.weight
    new = {"weight": tidal.full((2, 2), 3.0, dtype=tidal.float64), "bias": tidal.zeros(2)}
    m.load_state_dict(new)
    assert m.weight is w and m.weight.dtype is tidal.float32  # copied into the existing parameter
    assert m.weight.detach().numpy().max() == 3.0
    m.load_state_dict(new, assign=True)
    assert m.weight is not w and isinstance(m.weight, nn.Parameter) and m.weight.dtype is tidal.float64
    assert m.weight.requires_grad


def test_nonpersistent_buffers_not_loaded_or_saved():
    m = Net()
    sd = m.state_dict()
    assert "scratch" not in sd and "steps" in sd
    m.load_state_dict(sd)


def test_state_dict_hooks():
    m = nn.Linear(2, 2)
    seen = []
    h = m.register_state_dict_post_hook(lambda mod, sd, prefix, meta: seen.append(sorted(sd)))
    m.state_dict()
    h.remove()
    m.state_dict()
    assert seen == [["bias", "weight"]]
    m.register_load_state_dict_post_hook(lambda mod, keys: keys.missing_keys.clear())
    m.load_state_dict({"weight": tidal.ones(2, 2)})  # the hook clears the missing 'bias'


# -- modes, gradients, conversion -----------------------------------------------------------------
def test_train_eval_and_apply():
    m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5), nn.Sequential(nn.ReLU()))
    assert all(x.training for x in m.modules())
    assert m.eval() is m and not any(x.training for x in m.modules())
    m.train()
    assert all(x.training for x in m.modules())
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        m.train(1)
    order = []
    m.apply(lambda mod: order.append(type(mod).__name__))
    assert order == ["Linear", "Dropout", "ReLU", "Sequential", "Sequential"]


def test_zero_grad_and_requires_grad():
    m = nn.Linear(2, 2)
    for p in m.parameters():
        p.grad = tidal.ones(tuple(p.shape))
    m.zero_grad(set_to_none=False)
    assert all(p.grad is not None and p.grad.abs().sum().item() == 0 for p in m.parameters())
    m.zero_grad()
    assert all(p.grad is None for p in m.parameters())
    assert m.requires_grad_(False) is m and not any(p.requires_grad for p in m.parameters())
    m.requires_grad_()
    assert all(p.requires_grad for p in m.parameters())


def test_to_and_float_conversions_keep_parameter_identity():
    m = Net()
    m.steps.add_(2)
    w = m.fc1.weight
    m.fc1.weight.grad = tidal.ones(4, 3)
    assert m.double() is m
    assert m.fc1.weight is w and w.dtype is tidal.float64 and isinstance(w, nn.Parameter) and w.requires_grad
    assert w.grad.dtype is tidal.float64 and m.steps.dtype is tidal.float64 and m.steps.item() == 2
    m.float()
    assert w.dtype is tidal.float32
    m.to(tidal.float16)
    assert w.dtype is tidal.float16
    m.to("cpu", dtype=tidal.float64)
    assert w.dtype is tidal.float64
    m.to(tidal.zeros(1, dtype=tidal.float32))
    assert w.dtype is tidal.float32
    bn = nn.BatchNorm1d(3).double()
    assert bn.num_batches_tracked.dtype is tidal.int64  # integer buffers keep their dtype
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        m.to(tidal.int64)
    m.half()
    assert w.dtype is tidal.float16
    m.bfloat16()
    assert w.dtype is tidal.bfloat16


# -- hooks ----------------------------------------------------------------------------------------
def test_forward_hooks():
    m = nn.Linear(2, 2)
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, args: calls.append("pre") or (args[0] * 0,))
    h2 = m.register_forward_hook(lambda mod, args, out: calls.append("post") or out + 1)
    h3 = m.register_forward_hook(lambda mod, args, out: calls.append("first"), prepend=True)
    out = m(tidal.ones(1, 2))
    assert calls == ["pre", "first", "post"]
    np.testing.assert_allclose(out.detach().numpy(), m.bias.detach().numpy()[None] + 1, rtol=1e-6)
    for h in (h1, h2, h3):
        h.remove()
    out = m(tidal.ones(1, 2))
    np.testing.assert_allclose(out.detach().numpy(), (m.weight.sum(1) + m.bias).detach().numpy()[None], rtol=1e-6)
    assert len(calls) == 3


def test_forward_hooks_with_kwargs_and_always_call():
    class Scale(nn.Module):
        def forward(self, x, *, factor=1.0):
            if factor < 0:
                raise ValueError("negative")
            return x * factor

    m = Scale()
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"factor": kwargs["factor"] * 2}), with_kwargs=True)
    seen = []
    m.register_forward_hook(lambda mod, args, kwargs, out: seen.append(kwargs["factor"]), with_kwargs=True)
    assert m(tidal.ones(1), factor=3.0).item() == 6.0 and seen == [6.0]
    called = []
    with m.register_forward_hook(lambda mod, args, out: called.append(out), always_call=True):
        with pytest.raises(ValueError, match="negative"):
            m(tidal.ones(1), factor=-1.0)
    assert called == [None]
    assert not m._forward_hooks_always_called or len(m._forward_hooks) == 1


def test_missing_forward():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(1)


# -- repr and copies ------------------------------------------------------------------------------
def test_repr_matches_torch():
    assert repr(Net()) == repr(TorchNet()).replace("TorchNet", "Net")
    assert repr(nn.Module()) == repr(torch.nn.Module())

    class Deep(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(2, 3), nn.Sequential(nn.Tanh(), nn.Dropout(0.2)))

        def extra_repr(self):
            return "depth=2\nwidth=3"

    class TorchDeep(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Sequential(torch.nn.Linear(2, 3),
                                            torch.nn.Sequential(torch.nn.Tanh(), torch.nn.Dropout(0.2)))

        def extra_repr(self):
            return "depth=2\nwidth=3"
    assert repr(Deep()) == repr(TorchDeep()).replace("TorchDeep", "Deep")


def test_deepcopy_and_pickle_module():
    m = Net()
    m.fc1.weight.grad = tidal.ones(4, 3)
    c = copy.deepcopy(m)
    assert c.fc1.weight is not m.fc1.weight and isinstance(c.fc1.weight, nn.Parameter)
    x = tidal.randn(2, 3)
    np.testing.assert_allclose(c(x).detach().numpy(), m(x).detach().numpy())
    with tidal.no_grad():
        c.fc1.weight.add_(1)
    assert not np.allclose(c.fc1.weight.detach().numpy(), m.fc1.weight.detach().numpy())
    p = pickle.loads(pickle.dumps(m))
    np.testing.assert_allclose(p(x).detach().numpy(), m(x).detach().numpy())
    assert list(p.state_dict()) == list(m.state_dict())


# -- containers -----------------------------------------------------------------------------------
def test_sequential_indexing_and_editing():
    a, b, c = nn.Linear(2, 2), nn.ReLU(), nn.Tanh()
    s = nn.Sequential(a, b, c)
    assert len(s) == 3 and s[0] is a and s[-1] is c and list(s) == [a, b, c]
    sub = s[1:]
    assert isinstance(sub, nn.Sequential) and list(sub._modules) == ["1", "2"]  # slices keep keys, as torch
    with pytest.raises(IndexError, match="index 3 is out of range"):
        s[3]
    s[1] = nn.Sigmoid()
    assert isinstance(s[1], nn.Sigmoid)
    del s[0]
    assert list(s._modules) == ["0", "1"] and s[0].__class__ is nn.Sigmoid
    s.append(nn.Identity())
    s.insert(0, nn.GELU())
    assert [type(x).__name__ for x in s] == ["GELU", "Sigmoid", "Tanh", "Identity"]
    assert s.pop(0).__class__ is nn.GELU and len(s) == 3
    s2 = s + nn.Sequential(nn.ReLU())
    assert len(s2) == 4
    s.extend([nn.ReLU()])
    assert len(s) == 4
    named = nn.Sequential(OrderedDict([("first", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(named._modules) == ["first", "act"] and named.act.__class__ is nn.ReLU
    ref = torch.nn.Sequential(OrderedDict([("first", torch.nn.Linear(2, 2)), ("act", torch.nn.ReLU())]))
    assert repr(named) == repr(ref)
    load_from_torch(named, ref)
    x = np.random.default_rng(0).standard_normal((3, 2)).astype(np.float32)
    assert_close(named(tidal.tensor(x)), ref(torch.from_numpy(x)))


def test_module_list_and_repr_compression():
    layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ref = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(3)])
    layers.append(nn.ReLU())
    ref.append(torch.nn.ReLU())
    assert repr(layers) == repr(ref)
    assert repr(nn.ModuleList()) == repr(torch.nn.ModuleList())
    assert len(layers) == 4 and isinstance(layers[-1], nn.ReLU) and isinstance(layers[1:3], nn.ModuleList)
    del layers[0]
    assert list(layers._modules) == ["0", "1", "2"]
    layers.insert(1, nn.Tanh())
    assert isinstance(layers[1], nn.Tanh) and len(layers) == 4
    layers += [nn.Identity()]
    assert len(layers) == 5 and len(layers + nn.ModuleList([nn.ReLU()])) == 6
    assert isinstance(layers.pop(1), nn.Tanh)
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable"):
        layers.extend(nn.ReLU)
    with pytest.raises(NotImplementedError):
        layers(tidal.ones(1))
    assert len(list(layers.parameters())) == 4


def test_module_dict():
    d = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    ref = torch.nn.ModuleDict({"a": torch.nn.Linear(2, 2), "b": torch.nn.ReLU()})
    assert repr(d) == repr(ref)
    assert list(d.keys()) == ["a", "b"] and "a" in d and len(d) == 2
    d["c"] = nn.Tanh()
    d.update([("e", nn.Identity())])
    assert list(d) == ["a", "b", "c", "e"]
    assert isinstance(d.pop("b"), nn.ReLU) and "b" not in d
    del d["c"]
    assert [k for k, _ in d.items()] == ["a", "e"] and len(list(d.values())) == 2
    with pytest.raises(ValueError, match="has length 3; 2 is required"):
        d.update([("x", nn.ReLU(), 1)])
    d.clear()
    assert len(d) == 0


def test_parameter_list_and_dict():
    pl = nn.ParameterList([nn.Parameter(tidal.ones(2, 3)), tidal.zeros(3)])
    ref = torch.nn.ParameterList([torch.nn.Parameter(torch.ones(2, 3)), torch.zeros(3)])
    assert repr(pl) == torch_repr(repr(ref))
    assert all(isinstance(p, nn.Parameter) for p in pl) and len(pl) == 2
    assert [n for n, _ in pl.named_parameters()] == ["0", "1"]
    pl.append(tidal.ones(1))
    assert len(pl) == 3 and isinstance(pl[-1], nn.Parameter) and len(pl[1:]) == 2
    with pytest.raises(IndexError):
        pl[3]
    with pytest.raises(RuntimeError, match="ParameterList should not be called"):
        pl()
    pd = nn.ParameterDict({"b": nn.Parameter(tidal.ones(2, 3)), "a": tidal.zeros(2)})
    pref = torch.nn.ParameterDict({"b": torch.nn.Parameter(torch.ones(2, 3)), "a": torch.zeros(2)})
    assert list(pd) == list(pref) == ["a", "b"]  # plain dicts are taken in sorted key order
    assert repr(pd) == repr(pref)
    pd["c"] = tidal.ones(1)
    assert isinstance(pd["c"], nn.Parameter) and "c" in pd and len(pd) == 3
    assert pd.get("zz") is None and isinstance(pd.pop("c"), nn.Parameter)
    assert sorted(n for n, _ in pd.named_parameters()) == ["a", "b"]
    with pytest.raises(TypeError, match="cannot be used as a key as it is not a string"):
        pd[1]
    merged = pd | nn.ParameterDict({"z": tidal.ones(1)})
    assert list(merged) == ["a", "b", "z"]
    pd.clear()
    assert len(pd) == 0


def test_containers_state_dict_round_trip():
    m = nn.ModuleDict({"enc": nn.ModuleList([nn.Linear(2, 2), nn.LayerNorm(2)]),
                       "head": nn.Sequential(nn.Linear(2, 1))})
    ref = torch.nn.ModuleDict({"enc": torch.nn.ModuleList([torch.nn.Linear(2, 2), torch.nn.LayerNorm(2)]),
                               "head": torch.nn.Sequential(torch.nn.Linear(2, 1))})
    assert list(m.state_dict()) == list(ref.state_dict())
    load_from_torch(m, ref)
    for k, v in ref.state_dict().items():
        assert_close(m.state_dict()[k], v)
    x = to_tidal(torch.ones(3, 2))
    assert_close(m["head"](m["enc"][1](m["enc"][0](x))),
                 ref["head"](ref["enc"][1](ref["enc"][0](torch.ones(3, 2)))))
