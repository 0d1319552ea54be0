"""torch.export against torch 2.13: the same modules (same weights) exported by both, compared by their graphs' ATen
ops, graph signatures, state dicts and constants, the values ep.module() computes (and the buffers it updates),
run_decompositions' core-ATen graph and mutation outputs, and torch's errors (fx/export.py, compat/export.py)."""
import warnings

import numpy as np
import pytest
import torch

import tidal.compat as tc
import tidal

X = (np.arange(15, dtype=np.float32).reshape(5, 3) - 7) / 5


def make_mlp(L):
    class MLP(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = L.nn.Linear(3, 4)
            self.bn = L.nn.BatchNorm1d(4)
            self.register_buffer("scale", L.arange(4.0) / 4 + 0.5)
            self.register_buffer("aux", L.ones(4), persistent=False)
            self.const = L.tensor(2.0)
            self.unused = L.nn.Linear(2, 2)

        def forward(self, x):
            h = self.bn(self.fc(x)).relu() * self.scale + self.aux
            h = h + x.sum(dim=1, keepdim=True) + self.const
            h = h.view(x.shape[0], 2, 2)[:, 0]
            return h.softmax(-1), h.mean()
    return MLP()


def make_dicts(L):
    class Dicts(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = L.nn.Linear(3, 4)

        def forward(self, x, *, scale=1.0, extra=None):
            out = self.fc(x)
            if extra is not None:
                out = out + extra["a"]
            return {"out": out * scale, "pair": (out - 1, x)}
    return Dicts()


def make_shapes(L):
    class Shapes(L.nn.Module):
        def forward(self, x):
            if x.shape[0] > 1 and x.dim() == 2:  # (shape control flow runs at export; the graph is specialized)
                y = x.flatten()[: x.shape[0]]
            else:
                y = x.flatten()
            rows = sum(r * i for i, r in enumerate(x))
            return y * 2, rows, x[1:, None, ::2], 1 - x
    return Shapes()


def make_seq(L):
    class Seq(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = L.nn.Embedding(10, 4)
            self.norm = L.nn.LayerNorm(4)
            self.drop = L.nn.Dropout(0.25)
            self.head = L.nn.Linear(4, 3)

        def forward(self, ids):
            h = self.drop(self.norm(self.emb(ids)))
            q = h.unsqueeze(1)
            a = L.nn.functional.scaled_dot_product_attention(q, q, q).squeeze(1)
            return L.nn.functional.log_softmax(self.head(a + h), dim=-1)
    return Seq()


MODELS = {"mlp": (make_mlp, lambda L: (L.tensor(X),), {}),
          "dicts": (make_dicts, lambda L: (L.tensor(X),), lambda L: {"scale": 2.0, "extra": {"a": L.ones(4)}}),
          "shapes": (make_shapes, lambda L: (L.tensor(X),), {}),
          "seq": (make_seq, lambda L: (L.tensor([[1, 2, 3], [4, 5, 9]]),), {})}


def build(L, name: str, training: bool = True):
    """The model in framework L with torch's seeded weights, and its example (args, kwargs)."""
    make, args, kwargs = MODELS[name]
    torch.manual_seed(0)
    ref = make(torch)
    model = make(L)
    if L is not torch:
        model.load_state_dict({k: tc.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    else:
        model = ref
    model.train(training)
    return model, args(L), (kwargs(L) if callable(kwargs) else kwargs)


def exported(L, name: str, training: bool = True):
    model, args, kwargs = build(L, name, training)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model, L.export.export(model, args, kwargs), args, kwargs


def ops(ep) -> list:
    return [str(n.target) for n in ep.graph.nodes if n.op == "call_function"]


def leaves(out) -> list:
    if isinstance(out, dict):
        return [x for k in sorted(out) for x in leaves(out[k])]
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in leaves(o)]
    return [np.asarray(out.detach().tolist())]


def assert_close(got, want):
    g, w = leaves(got), leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)


# (train and eval differ only for the modules holding batch norm or dropout)
CASES = [pytest.param(name, training, id=f"{'train' if training else 'eval'}-{name}")
         for name, training in (("mlp", True), ("mlp", False), ("dicts", True), ("shapes", True), ("seq", True),
                                ("seq", False))]


@pytest.mark.parametrize("name, training", CASES)
def test_graph_and_signature_like_torch(name, training):
    _, ep, _, _ = exported(tc, name, training)
    _, ref, _, _ = exported(torch, name, training)
    assert ops(ep) == ops(ref)
    assert str(ep.graph_signature) == str(ref.graph_signature)
    assert list(ep.state_dict) == list(ref.state_dict) and list(ep.constants) == list(ref.constants)
    sig, want = ep.graph_signature, ref.graph_signature
    for attr in ("parameters", "buffers", "non_persistent_buffers", "lifted_tensor_constants", "user_inputs",
                 "user_outputs", "inputs_to_parameters", "inputs_to_buffers", "inputs_to_lifted_tensor_constants",
                 "buffers_to_mutate"):
        assert getattr(sig, attr) == getattr(want, attr), attr
    assert [str(s) for s in sig.input_specs] == [str(s) for s in want.input_specs]
    assert ep.dialect == ref.dialect == "TRAINING" and ep.range_constraints == {} == ref.range_constraints


@pytest.mark.parametrize("name", list(MODELS))
def test_module_runs_like_torch(name):
    model, ep, args, kwargs = exported(tc, name)
    ref_model, ref, rargs, rkwargs = exported(torch, name)
    if name == "seq":  # (dropout in training: compare in eval, where export keeps it as an identity dropout)
        model, ep, args, kwargs = exported(tc, name, False)
        ref_model, ref, rargs, rkwargs = exported(torch, name, False)
    got, want = ep.module()(*args, **kwargs), ref.module()(*rargs, **rkwargs)
    assert_close(got, want)
    # ep.module() updates the state it shares with ep.state_dict (batch norm's running statistics), as torch's does
    assert [n for n, _ in ep.module().named_buffers()] == [n for n, _ in ref.module().named_buffers()]
    assert_close([b for _, b in ep.module().named_buffers()], [b for _, b in ref.module().named_buffers()])
    assert all(ep.state_dict[k] is v for k, v in model.state_dict(keep_vars=True).items() if k in ep.state_dict)
    assert_close(got, model(*args, **kwargs))


@pytest.mark.parametrize("name, training", CASES)
def test_run_decompositions_like_torch(name, training):
    _, ep, args, kwargs = exported(tc, name, training)
    _, ref, rargs, rkwargs = exported(torch, name, training)
    dec, rdec = ep.run_decompositions(), ref.run_decompositions()
    assert dec.dialect == rdec.dialect == "ATEN"
    assert sorted(dec.graph_signature.buffers_to_mutate.values()) == \
        sorted(rdec.graph_signature.buffers_to_mutate.values())
    assert len(dec.graph_signature.user_outputs) == len(rdec.graph_signature.user_outputs)
    if name != "seq":  # (torch lowers layer_norm, embedding, attention and dropout further than tidal's table)
        assert ops(dec) == ops(rdec)
    assert not any(o.endswith("_.Tensor") or o.endswith("_.default") for o in ops(dec))
    if training and name == "seq":
        return  # (dropout draws differ between frameworks)
    assert_close(dec.module()(*args, **kwargs), rdec.module()(*rargs, **rkwargs))


def test_buffer_mutation_written_back_after_decomposition():
    """After run_decompositions the running statistics are outputs; module() copies them back into its buffers."""
    results = []
    for L in (tc, torch):
        _, ep, args, _ = exported(L, "mlp")
        dec = ep.run_decompositions()
        mod = dec.module()
        mod(*args)
        results.append([np.asarray(b.tolist()) for _, b in mod.named_buffers()])
        assert "bn.num_batches_tracked" in dec.graph_signature.buffers_to_mutate.values()
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-5)


def test_custom_decomposition_table():
    """Deleting an entry keeps the op; a user entry replaces it."""
    for L in (tc, torch):
        _, ep, args, _ = exported(L, "mlp", False)
        table = L.export.default_decompositions()
        del table[L.ops.aten.linear.default if L is torch else tidal.fx._aten.aten.linear.default]
        assert "aten.linear.default" in ops(ep.run_decompositions(table))
        assert "aten.linear.default" not in ops(ep.run_decompositions())


def test_guards_and_call_errors_like_torch():
    for L in (tc, torch):
        _, ep, args, kwargs = exported(L, "dicts")
        with pytest.raises(RuntimeError, match=r"Unable to call ExportedProgram directly. You should use "
                                               r"`exported_program.module\(\)` instead."):
            ep(*args, **kwargs)
        mod = ep.module()
        with pytest.raises(AssertionError, match=r"^Guard failed: x.size\(\)\[0\] == 5$"):
            mod(L.ones(3, 3), **kwargs)
        with pytest.raises(AssertionError, match=r"^Guard failed: scale == 2.0$"):
            mod(*args, scale=3.0, extra=kwargs["extra"])
        with pytest.raises(ValueError, match=r"Ran into a kwarg keyword mismatch: Got the following keywords \[\] "
                                             r"but expected \['scale', 'extra'\]"):
            mod(*args)
        with pytest.raises(NotImplementedError, match=r"Calling eval\(\) is not supported yet."):
            mod.eval()


def test_export_argument_errors_like_torch():
    for L in (tc, torch):
        with pytest.raises(ValueError, match=r"^Expected `mod` to be an instance of `torch.nn.Module`, got "
                                             r"<class 'function'>.$"):
            L.export.export(lambda x: x + 1, (L.ones(2),))
        model, args, _ = build(L, "mlp")
        with pytest.raises(RuntimeError, match="Expecting `args` to be a tuple of example positional inputs"):
            L.export.export(model, args[0])


def test_data_dependent_control_flow_refused():
    class Branch:
        pass
    for L in (tc, torch):
        class Cf(L.nn.Module):
            def forward(self, x):
                return x + 1 if x.sum() > 0 else x - 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match="data-dependent expression"):
                L.export.export(Cf(), (L.ones(2),))


def test_export_leaves_module_state_alone():
    """Tracing runs batch norm in training on copies: the module's running statistics are unchanged."""
    model, args, _ = build(tc, "mlp")
    before = [np.asarray(b.tolist()) for _, b in model.named_buffers()]
    tc.export.export(model, args)
    for a, (_, b) in zip(before, model.named_buffers()):
        np.testing.assert_array_equal(a, np.asarray(b.tolist()))


def test_printed_program():
    _, ep, _, _ = exported(tc, "mlp", False)
    text = str(ep)
    assert text.startswith("ExportedProgram:\n    class GraphModule(torch.nn.Module):\n        def forward(self, "
                           'p_fc_weight: "f32[4, 3]", ')
    assert 'linear: "f32[5, 4]" = torch.ops.aten.linear.default(x, p_fc_weight, p_fc_bias)' in text
    assert "Graph signature: \n    # inputs\n    p_fc_weight: PARAMETER target='fc.weight'" in text
    assert text.rstrip().endswith("Range constraints: {}")
    node = next(n for n in ep.graph.nodes if n.op == "call_function")
    assert (node.target.name(), node.target._overloadname, str(node.target.overloadpacket)) == \
        ("aten::linear", "default", "aten.linear")


def test_torch_export_and_ops_aten_names():
    """`torch.export` without importing it first, and `torch.ops.aten.<op>.<overload>` as exported graphs' targets."""
    import subprocess
    import sys
    code = ("import tidal.compat as torch\n"
            "m = torch.nn.Linear(3, 2)\n"
            "ep = torch.export.export(m, (torch.ones(4, 3),))\n"
            "targets = [n.target for n in ep.graph.nodes if n.op == 'call_function']\n"
            "assert targets == [torch.ops.aten.linear.default], targets\n"
            "assert torch.ops.aten.relu.default(torch.tensor([-1.0, 2.0])).tolist() == [0.0, 2.0]\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def make_dynamic(L):
    class Dyn(L.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = L.nn.Linear(3, 4)

        def forward(self, x):
            h = self.fc(x).view(x.shape[0], 2, 2)
            return h.sum(-1) * x.size(0), x.flatten()[: x.shape[0]], L.cat([x, x], 0)[:, 1:]
    return Dyn()


def dynamic_pair(spec_of):
    """(tidal's program, torch's) for the Dyn module exported with dynamic_shapes=spec_of(L) on a (5, 3) input."""
    out = []
    torch.manual_seed(0)
    weights = None
    for L in (torch, tc):
        model = make_dynamic(L)
        if weights is None:
            weights = {k: v.detach().numpy() for k, v in model.state_dict().items()}
        else:
            model.load_state_dict({k: tc.tensor(v) for k, v in weights.items()})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out.append(L.export.export(model, (L.tensor(X),), dynamic_shapes=spec_of(L)))
    return out[1], out[0]


def _symbolic(text: str) -> str:
    import re
    return re.sub(r"\bs\d+\b", "s", text)


def test_dynamic_dim_like_torch():
    ep, ref = dynamic_pair(lambda L: {"x": {0: L.export.Dim("batch", min=3, max=9)}})
    assert ops(ep) == ops(ref)
    assert [repr(v) for v in ep.range_constraints.values()] == [repr(v) for v in ref.range_constraints.values()] \
        == ["VR[3, 9]"]
    got, want = _symbolic(str(ep)), _symbolic(str(ref))
    for fragment in ('x: "f32[s, 3]"', 'linear: "f32[s, 4]"', 'sym_size_int', 'flatten: "f32[3*s]"',
                     'slice_1: "f32[s]"', 'cat: "f32[2*s, 3]"'):
        assert fragment in got and fragment in want, fragment
    for rows in (3, 7, 9):
        x = np.arange(rows * 3, dtype=np.float32).reshape(rows, 3) / 7
        assert_close(ep.module()(tc.tensor(x)), ref.module()(torch.tensor(x)))
        assert_close(ep.run_decompositions().module()(tc.tensor(x)), ref.run_decompositions().module()(torch.tensor(x)))
    for L, program in ((tc, ep), (torch, ref)):
        with pytest.raises(AssertionError, match=r"^Guard failed: x.size\(\)\[0\] <= 9$"):
            program.module()(L.ones(10, 3))
        with pytest.raises(AssertionError, match=r"^Guard failed: x.size\(\)\[0\] >= 3$"):
            program.module()(L.ones(2, 3))
        with pytest.raises(AssertionError, match=r"^Guard failed: x.size\(\)\[1\] == 3$"):
            program.module()(L.ones(4, 2))


def test_dim_specialized_by_the_program():
    """A named Dim the program fixes to the example's size: torch's error; Dim.AUTO: the dim becomes static."""
    for L in (tc, torch):
        class Fixed(L.nn.Module):
            def forward(self, x):
                return x.view(5, 3) * 2
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with pytest.raises(RuntimeError, match=r"Constraints violated \(b\)!") as info:
                L.export.export(Fixed(), (L.ones(5, 3),), dynamic_shapes=({0: L.export.Dim("b")},))
            assert "specialized it to be a constant (5)" in str(info.value)
            auto = L.export.export(Fixed(), (L.ones(5, 3),), dynamic_shapes=({0: L.export.Dim.AUTO},))
        assert auto.range_constraints == {}
        with pytest.raises(AssertionError, match=r"Guard failed: .*x.size\(\)\[0\] =="):  # (torch: 3 * x... == 15)
            auto.module()(L.ones(6, 3))
    assert repr(tc.export.Dim("b")) == repr(torch.export.Dim("b")) == "Dim('b', min=0)"
    assert repr(tc.export.Dim("b", min=3, max=8)) == repr(torch.export.Dim("b", min=3, max=8))


def test_input_and_buffer_mutations_like_torch():
    """In-place updates of a user input and a buffer: kept in place by export, outputs after run_decompositions,
    written back by module()."""
    seen = []
    for L in (tc, torch):
        class Mutating(L.nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("count", L.zeros(1))

            def forward(self, x):
                x.mul_(2)
                self.count.add_(1)
                return x + self.count
        ep = L.export.export(Mutating(), (L.ones(3),))
        dec = ep.run_decompositions()
        x = L.ones(3)
        module = dec.module()
        out = module(x)
        seen.append((ops(ep), ops(dec), str(ep.graph_signature), str(dec.graph_signature), out.tolist(), x.tolist(),
                     module.count.tolist()))
    assert seen[0] == seen[1]
