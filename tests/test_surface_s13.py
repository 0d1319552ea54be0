"""Session 13's surface fixes, each compared with real torch: model files saved by real torch (torch.save(model), as
pytorch/examples' word_language_model writes and its generate.py reads) load into tidal's own classes; nested
tensors save and load in torch's forms (both ways between the frameworks)."""
import io
import pickle

import numpy as np
import pytest
import torch

import tidal.compat as tc

X = np.random.default_rng(13).normal(size=(5, 3)).astype(np.float32)


class TorchNet(torch.nn.Module):
    """A module class of the program's own, holding torch's modules (word_language_model's RNNModel shape)."""

    def __init__(self):
        super().__init__()
        self.encoder, self.rnn = torch.nn.Linear(3, 4), torch.nn.LSTM(4, 4, batch_first=True)
        self.norm, self.drop = torch.nn.LayerNorm(4), torch.nn.Dropout(0.25)

    def forward(self, x):
        return self.norm(self.rnn(self.drop(self.encoder(x)))[0])


def _saved_by_torch(model) -> io.BytesIO:
    torch.manual_seed(0)
    buf = io.BytesIO()
    torch.save(model.eval(), buf)
    buf.seek(0)
    return buf


def _sequential():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))


def test_a_whole_model_saved_by_torch_loads_as_tidal_modules():
    model = _sequential()
    got = tc.load(_saved_by_torch(model), weights_only=False)
    assert type(got) is tc.nn.Sequential and type(got[2]) is tc.nn.BatchNorm1d and not got.training
    want = model(torch.from_numpy(X)).detach().numpy()
    np.testing.assert_allclose(got(tc.from_numpy(X)).detach().numpy(), want, rtol=1e-6, atol=1e-7)
    assert [n for n, _ in got.named_parameters()] == [n for n, _ in model.named_parameters()]


def test_a_programs_own_module_class_holding_torch_modules():
    model = TorchNet()
    got = tc.load(_saved_by_torch(model), weights_only=False)
    assert type(got) is TorchNet and type(got.rnn) is tc.nn.LSTM and type(got.norm) is tc.nn.LayerNorm
    # the program's forward, written with torch's modules, runs on tidal's (eval mode: dropout off)
    want = model(torch.from_numpy(X[None])).detach().numpy()
    np.testing.assert_allclose(got(tc.from_numpy(X[None])).detach().numpy(), want, rtol=1e-5, atol=1e-6)


def test_weights_only_allows_torch_classes_given_as_safe_globals():
    buf = _saved_by_torch(_sequential())
    with tc.serialization.safe_globals([tc.nn.Sequential, tc.nn.Linear, tc.nn.ReLU, tc.nn.BatchNorm1d]):
        got = tc.load(buf)  # weights_only=True, torch's default: generate.py's way
    assert type(got) is tc.nn.Sequential
    np.testing.assert_allclose(got(tc.from_numpy(X)).detach().numpy(),
                               _sequential().eval()(torch.from_numpy(X)).detach().numpy(), rtol=1e-6, atol=1e-7)


def test_weights_only_refuses_a_torch_class_not_allowed_in_torchs_words():
    buf = _saved_by_torch(_sequential())
    with pytest.raises(pickle.UnpicklingError) as want:
        torch.load(buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError) as got:
        tc.load(buf)
    line = ("Unsupported global: GLOBAL torch.nn.modules.container.Sequential was not an allowed global by default. "
            "Please use `torch.serialization.add_safe_globals([torch.nn.modules.container.Sequential])`")
    assert line in str(want.value)
    # outside the runner tidal names its own namespace for the functions to call (tidal.serialization...)
    assert str(got.value).replace("`tidal.", "`torch.").replace("of tidal.load", "of torch.load") == str(want.value)


def test_a_torch_global_tidal_lacks_is_named_without_weights_only_words():
    buf = io.BytesIO()
    torch.save({"cls": torch.ao.nn.quantized.Linear}, buf)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="torch.ao.nn.quantized.modules.linear.Linear, which has no tidal "
                       "equivalent") as info:
        tc.load(buf, weights_only=False)
    assert "Weights only" not in str(info.value)


def test_tidal_saved_models_still_round_trip():
    tc.manual_seed(0)
    model = tc.nn.Sequential(tc.nn.Linear(3, 2), tc.nn.Tanh()).eval()
    buf = io.BytesIO()
    tc.save(model, buf)
    buf.seek(0)
    got = tc.load(buf, weights_only=False)
    np.testing.assert_array_equal(got(tc.from_numpy(X)).detach().numpy(), model(tc.from_numpy(X)).detach().numpy())


def _nested(T, kind: str, requires_grad: bool = False):
    a = T.arange(6.0).reshape(2, 3)
    b = T.arange(12.0).reshape(4, 3) + 100
    if kind == "strided":
        return T.nested.nested_tensor([a, b[:, :2]], requires_grad=requires_grad)
    nt = T.nested.nested_tensor([a, b], layout=T.jagged, requires_grad=requires_grad)
    return nt.transpose(1, 2) if kind == "jagged_transposed" else nt


def _described(nt) -> tuple:
    return (nt.is_nested, str(nt.layout), nt.dim(), nt.requires_grad, str(nt.dtype).split(".")[-1],
            [u.tolist() for u in nt.unbind()])


@pytest.mark.parametrize("kind", ["jagged", "jagged_transposed", "strided"])
@pytest.mark.parametrize("saver, loader", [(tc, tc), (torch, tc), (tc, torch)], ids=["tidal", "torch_to_tidal",
                                                                                     "tidal_to_torch"])
def test_nested_tensors_save_and_load_in_torchs_form(kind, saver, loader):
    want = _described(_nested(torch, kind))
    buf = io.BytesIO()
    saver.save({"nt": _nested(saver, kind)}, buf)
    buf.seek(0)
    got = loader.load(buf)["nt"]  # weights_only=True: torch's default accepts them, as tidal's does
    assert _described(got) == want
    if kind != "strided":
        assert got.size(1 if kind == "jagged" else 2) is not None and isinstance(got.size(0), int)


def test_a_saved_jagged_tensor_keeps_requires_grad_and_its_offsets():
    buf = io.BytesIO()
    tc.save(_nested(tc, "jagged", requires_grad=True), buf)
    buf.seek(0)
    got = tc.load(buf)
    assert got.requires_grad and got.offsets().tolist() == [0, 2, 6] and got.offsets().dtype == tc.int64
    (got * 2).values().sum().backward()  # a leaf again: the gradient lands on it
    assert got.grad.values().tolist() == [[2.0] * 3] * 6


# -- profiler: print(prof), print(prof.key_averages()), torch.ops.profiler (pytorch/examples' fx/profiling_tracer.py)


def _profiled(L, body):
    x = L.ones(5, 3)
    with L.autograd.profiler.profile() as prof:
        body(L, x)
    return prof


def _labelled(L, x):
    with L.profiler.record_function("foo"):
        L.relu(x)


def test_printing_a_profile_prints_its_table():
    for L in (torch, tc):
        prof = _profiled(L, _labelled)
        for text in (str(prof), str(prof.key_averages())):
            lines = text.splitlines()
            assert lines[1].split()[:4] == ["Name", "Self", "CPU", "%"], (L.__name__, text)
            assert any(line.split()[:1] == ["foo"] for line in lines), (L.__name__, text)
            assert lines[-1].startswith("Self CPU time total:"), (L.__name__, text)


@pytest.mark.parametrize("enter", ["_record_function_enter", "_record_function_enter_new"])
def test_record_function_ops_open_and_close_a_range(enter):
    def body(L, x):
        handle = getattr(L.ops.profiler, enter)("foo")
        L.relu(x)
        L.ops.profiler._record_function_exit(handle)

    for L in (torch, tc):
        foo = [e for e in _profiled(L, body).key_averages() if e.key == "foo"]
        assert len(foo) == 1 and foo[0].count == 1, L.__name__


def test_record_function_ops_errors_as_torch():
    for L in (torch, tc):
        with pytest.raises(RuntimeError, match=r"^profiler::_record_function_enter\(\) Expected a value of type 'str' "
                           r"for argument 'name' but instead found type 'int'\."):
            L.ops.profiler._record_function_enter(3)
        with pytest.raises(RuntimeError, match=r"^Overloaded torch operator invoked from Python failed to match any "
                           r"schema:\nprofiler::_record_function_exit\(\) Expected a value of type 'Tensor' for "
                           r"argument 'handle' but instead found type 'int'\."):
            L.ops.profiler._record_function_exit(3)
        with pytest.raises(AttributeError, match="'_OpNamespace' 'profiler' object has no attribute 'nope'"):
            L.ops.profiler.nope


def test_fx_graphs_record_profiler_ranges():
    """fx/profiling_tracer.py's tracer: record_function's enter/exit traced as the profiler ops."""
    def traced_keys(L):
        class Foo(L.nn.Module):
            def forward(self, x):
                with L.profiler.record_function("foo"):
                    return L.relu(x)

        class ProfilerTracer(L.fx.Tracer):
            def trace(self, root, concrete_args=None):
                rf = L.autograd.profiler.record_function
                enter, exit_ = rf.__enter__, rf.__exit__

                def fake_enter(rf_self):
                    rf_self._fx_ctx = self.create_proxy("call_function", L.ops.profiler._record_function_enter,
                                                        (rf_self.name,), {})
                    return rf_self._fx_ctx

                def fake_exit(rf_self, *exc):
                    L.ops.profiler._record_function_exit(rf_self._fx_ctx)

                rf.__enter__, rf.__exit__ = fake_enter, fake_exit
                try:
                    return super().trace(root, concrete_args)
                finally:
                    rf.__enter__, rf.__exit__ = enter, exit_

        tracer = ProfilerTracer()
        graph = tracer.trace(Foo())
        module = L.fx.GraphModule(tracer.root, graph)
        targets = [str(n.target).split(".")[-1] if "ops." in str(n.target) else n.target.__name__
                   for n in graph.nodes if n.op == "call_function"]
        prof = _profiled(L, lambda L, x: module(x))
        return targets, [e.key for e in prof.key_averages() if e.key == "foo"]

    want, got = traced_keys(torch), traced_keys(tc)
    assert got[1] == want[1] == ["foo"]
    ranges = ["_record_function_enter", "_record_function_exit"]
    assert [t for t in got[0] if "record_function" in t] == [t for t in want[0] if "record_function" in t] == ranges


# -- tidal's model files under torch's names: real torch loads them as its own modules


def test_tidal_layers_are_named_as_torch_names_them():
    """serialization_modules.torch_global: the torch module path of each of tidal's layers, against torch's own."""
    import inspect

    from tidal.serialization_modules import torch_global
    checked = 0
    for name, cls in vars(torch.nn).items():
        if inspect.isclass(cls) and issubclass(cls, torch.nn.Module) and hasattr(tc.nn, name) and \
                cls.__module__.startswith("torch.nn.modules."):
            assert torch_global(getattr(tc.nn, name)) == (cls.__module__, name)
            checked += 1
    assert checked > 150
    assert torch_global(tc.nn.functional.relu) == ("torch.nn.functional", "relu")
    assert torch_global(TorchNet) is None and torch_global(tc.optim.SGD) is None  # (not tidal's, no torch.nn name)


MODELS = {
    "sequential": (lambda L: L.nn.Sequential(L.nn.Linear(8, 4), L.nn.ReLU(), L.nn.BatchNorm1d(5), L.nn.Dropout(0.2)),
                   lambda m, x: m(x)),
    "lstm": (lambda L: L.nn.LSTM(8, 4, 2, batch_first=True), lambda m, x: m(x)[0]),
    "gru": (lambda L: L.nn.GRU(8, 3), lambda m, x: m(x)[0]),
    "transformer": (lambda L: L.nn.Transformer(8, 2, 1, 1, 16, batch_first=True), lambda m, x: m(x, x)),
    "attention": (lambda L: L.nn.MultiheadAttention(8, 2, batch_first=True), lambda m, x: m(x, x, x)[0]),
    "conv": (lambda L: L.nn.Sequential(L.nn.Conv1d(5, 3, 3), L.nn.GELU(), L.nn.AdaptiveAvgPool1d(2)),
             lambda m, x: m(x)),
}


@pytest.mark.parametrize("name", list(MODELS))
def test_a_model_saved_by_tidal_loads_in_torch(name):
    make, run = MODELS[name]
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype(np.float32)
    tc.manual_seed(0)
    model = make(tc).eval()
    buf = io.BytesIO()
    tc.save(model, buf)
    want = run(model, tc.from_numpy(x)).detach().numpy()
    buf.seek(0)
    theirs = torch.load(buf, weights_only=False)
    assert type(theirs) is type(make(torch))  # torch's own class
    np.testing.assert_allclose(run(theirs, torch.from_numpy(x)).detach().numpy(), want, rtol=1e-5, atol=1e-6)
    buf.seek(0)
    ours = tc.load(buf, weights_only=False)  # and back into tidal's classes
    assert type(ours) is type(model)
    # (the same weights: equal up to the last bit a kernel compiled between the two runs may round differently in)
    np.testing.assert_allclose(run(ours, tc.from_numpy(x)).detach().numpy(), want, rtol=2e-6, atol=1e-7)


def test_torch_weights_only_load_of_a_tidal_model_with_torchs_safe_globals():
    tc.manual_seed(0)
    buf = io.BytesIO()
    tc.save(tc.nn.Sequential(tc.nn.Linear(3, 2), tc.nn.ReLU()), buf)
    buf.seek(0)
    with torch.serialization.safe_globals([torch.nn.Sequential, torch.nn.Linear, torch.nn.ReLU]):
        theirs = torch.load(buf)
    assert type(theirs[0]) is torch.nn.Linear


def test_setup_cfg_lists_every_package():
    """A non-editable install holds only setup.cfg's packages: every directory with an __init__.py must be there
    (tidal.distributed, tidal.fx, tidal.nn.attention... were not, so `pip install .` lacked them)."""
    import configparser
    import os

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    config = configparser.ConfigParser()
    config.read(os.path.join(root, "setup.cfg"))
    listed = set(config["options"]["packages"].split())
    found = set()
    for here, dirs, files in os.walk(root):
        skipped = ("tests", "__pycache__", "perf-results", "build")
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in skipped and not d.endswith(".egg-info")]
        if "__init__.py" in files:
            rel = os.path.relpath(here, root)
            found.add("tidal" if rel == "." else "tidal." + rel.replace(os.sep, "."))
    assert "tidal.nested" in found and "tidal.distributed._tensor" in found
    assert sorted(found - listed) == []


def test_dtensor_old_import_path():
    """torch.distributed._tensor (torch's shim over torch.distributed.tensor) and tensor.device_mesh: the names
    programs import from them, present in torch's and tidal's, tidal's the same objects as its
    torch.distributed.tensor's."""
    import importlib

    import tidal.distributed.tensor as dtensor
    names = {"distributed._tensor": list(importlib.import_module("torch.distributed._tensor").__dict__.get(
                 "__all__", ["DeviceMesh", "distribute_module", "distribute_tensor", "DTensor", "empty", "full",
                             "init_device_mesh", "ones", "Partial", "Placement", "rand", "randn", "Replicate",
                             "Shard", "zeros"])),
             "distributed._tensor.device_mesh": ["DeviceMesh", "init_device_mesh"],
             "distributed.tensor.device_mesh": ["DeviceMesh", "init_device_mesh"],
             "distributed._tensor.api": ["DTensor", "distribute_tensor", "distribute_module", "zeros", "ones"],
             "distributed._tensor.placement_types": ["Placement", "Shard", "Replicate", "Partial"]}
    for path, wanted in names.items():
        theirs = importlib.import_module("torch." + path)
        ours = importlib.import_module("tidal." + path)
        assert all(hasattr(theirs, n) for n in wanted), path
        for n in wanted:
            assert getattr(ours, n) is getattr(dtensor, n), (path, n)
