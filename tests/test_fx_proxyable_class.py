"""ProxyableClassMeta against torch.fx's: a class built from traced values is one call_function node of the
class and its methods are call_method nodes; an instance made before the trace is kept on the root as
`_<Class>_constant_<N>`; is_fx_tracing tells whether a trace runs. Compared by code, graph and values."""
import numpy as np
import torch
import torch.fx
import torch.fx._symbolic_trace

import tidal
import tidal.compat as tc


def _classes(lib):
    class TensorPair(metaclass=lib.fx.ProxyableClassMeta):
        def __init__(self, left, right):
            self.left, self.right = left, right

        def add(self, other):
            return TensorPair(self.left + other.left, self.right + other.right)

        def mul(self, other):
            return TensorPair(self.left * other.left, self.right * other.right)
    return TensorPair


def _programs(lib):
    TensorPair = _classes(lib)
    seen = []

    def use_ctor(x, y):
        seen.append(lib.fx._symbolic_trace.is_fx_tracing())
        s = TensorPair(x, y)
        return s.mul(s)
    const = TensorPair(lib.ones(2), lib.ones(2) * 3)

    def use_const(x):
        return TensorPair(x, x).add(const)  # `const` is an argument of the recorded call
    return use_ctor, use_const, seen, TensorPair


def test_proxyable_class_traces_as_torch():
    ref_ctor, ref_const, ref_seen, RefPair = _programs(torch)
    our_ctor, our_const, our_seen, OurPair = _programs(tc)
    gref, gm = torch.fx.symbolic_trace(ref_ctor), tc.fx.symbolic_trace(our_ctor)
    assert gm.code.replace("test_fx_proxyable_class", "M") == gref.code.replace("test_fx_proxyable_class", "M")
    assert [n.op for n in gm.graph.nodes] == [n.op for n in gref.graph.nodes]
    assert our_seen == ref_seen == [True]
    ctor = next(n for n in gm.graph.nodes if n.op == "call_function")
    assert ctor.target is OurPair and ctor.name == "tensor_pair"
    out = gm(tidal.tensor([1.0, 2.0]), tidal.tensor([3.0, 4.0]))
    assert isinstance(out, OurPair)
    np.testing.assert_allclose(out.left.numpy(), [1.0, 4.0])
    np.testing.assert_allclose(out.right.numpy(), [9.0, 16.0])
    gref2, gm2 = torch.fx.symbolic_trace(ref_const), tc.fx.symbolic_trace(our_const)
    assert [(n.op, n.name, n.target if isinstance(n.target, str) else "") for n in gm2.graph.nodes] == \
        [(n.op, n.name, n.target if isinstance(n.target, str) else "") for n in gref2.graph.nodes]
    assert isinstance(getattr(gm2, "_TensorPair_constant_0"), OurPair)
    np.testing.assert_allclose(gm2(tidal.tensor([1.0, 1.0])).right.numpy(), [4.0, 4.0])
    assert not tc.fx._symbolic_trace.is_fx_tracing()
    plain = OurPair(tidal.ones(1), tidal.ones(1))  # outside a trace: an ordinary instance
    assert isinstance(plain, OurPair) and plain.left.item() == 1.0
