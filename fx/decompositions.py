"""run_decompositions: an exported program lowered to core ATen, and functional.

The graph is traced again node by node (_export_trace.py's tracer, so every new node carries its real value):
an op with an entry in the decomposition table runs that Python function on the traced values (the ATen ops it
calls become the new nodes), any other op is recorded as it was. In-place ops are made functional: `add_` becomes
`add`, `copy_(dst, src)` becomes `src`, and later uses of the updated tensor read the new value; an update of a
buffer or a user input becomes an extra output (BUFFER_MUTATION / USER_INPUT_MUTATION) placed before the user
outputs, as torch's functionalization leaves it.
"""
from __future__ import annotations

import operator

from .graph import Graph
from .node import Node, map_aggregate
from .proxy import Proxy
from ._aten import OpOverload, aten
from ._export_trace import ExportTracer
from .graph_signature import ExportGraphSignature
from .graph_signature import InputKind
from .graph_signature import OutputKind
from .graph_signature import OutputSpec
from .graph_signature import TensorArgument

__all__ = ["CustomDecompTable", "default_decompositions", "decompose"]


class CustomDecompTable(dict):
    """The decomposition table run_decompositions uses: ATen op overload -> the Python function replacing it."""

    def copy(self) -> "CustomDecompTable":
        """A copy to edit."""
        return CustomDecompTable(self)

    def materialize(self) -> dict:
        """The table as a plain dict."""
        return dict(self)


def _linear(input, weight, bias=None):
    wt = aten.permute.default(weight, [1, 0])
    if input.dim() == 2:
        return aten.mm.default(input, wt) if bias is None else aten.addmm.default(bias, input, wt)
    flat = aten.view.default(input, [-1, input.shape[-1]])
    out = aten.mm.default(flat, wt) if bias is None else aten.addmm.default(bias, flat, wt)
    return aten.view.default(out, list(input.shape[:-1]) + [weight.shape[0]])


def _batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    if training and running_mean is not None:
        out = aten._native_batch_norm_legit_functional.default(input, weight, bias, running_mean, running_var,
                                                               training, momentum, eps)
        aten.copy_.default(running_mean, operator.getitem(out, 3))  # (made functional: mutation outputs)
        aten.copy_.default(running_var, operator.getitem(out, 4))
        return operator.getitem(out, 0)
    if training:
        raise NotImplementedError("run_decompositions: batch_norm in training without running statistics")
    out = aten._native_batch_norm_legit_no_training.default(input, weight, bias, running_mean, running_var,
                                                            momentum, eps)
    return operator.getitem(out, 0)


def _dropout(input, p, train):
    if not train or p == 0:
        return aten.clone.default(input)
    return aten.dropout.default(input, p, train)


def _flatten(x, start_dim: int = 0, end_dim: int = -1):
    n = max(x.dim(), 1)
    s, e = start_dim % n, end_dim % n
    shape = list(x.shape) or [1]
    size = 1
    for d in shape[s:e + 1]:
        size *= d
    return aten.view.default(x, shape[:s] + [size] + shape[e + 1:])


def _unbind(x, dim: int = 0):
    d = dim % x.dim()
    pieces = [aten.slice.Tensor(x, d, i, i + 1) for i in range(x.shape[d])]
    return [aten.squeeze.dims(p, [d]) for p in pieces]


def default_decompositions() -> CustomDecompTable:
    """The table run_decompositions() uses by default: linear to permute/addmm, softmax to _softmax, batch norm to
    its functional form, t to permute, eval dropout to clone, flatten to view, unbind to slices, rsub to sub."""
    return CustomDecompTable({
        aten.linear.default: _linear,
        aten.softmax.int: lambda x, dim, dtype=None: aten._softmax.default(x, dim, False),
        aten.log_softmax.int: lambda x, dim, dtype=None: aten._log_softmax.default(x, dim, False),
        aten.batch_norm.default: _batch_norm,
        aten.t.default: lambda x: aten.permute.default(x, list(range(x.dim()))[::-1]),
        aten.dropout.default: _dropout,
        aten.flatten.using_ints: _flatten,
        aten.unbind.int: _unbind,
        aten.rsub.Scalar: lambda x, other, alpha=1: aten.sub.Tensor(other, x if alpha == 1 else x * alpha),
    })


class _FunctionalTracer(ExportTracer):
    """Records in-place ATen ops as their functional forms and remembers which tensor each one updated."""

    def __init__(self) -> None:
        super().__init__()
        self.latest: dict = {}  # node of an updated tensor -> the node holding its new value

    def current(self, a):
        """The latest value of a traced tensor (after the in-place updates made so far)."""
        if isinstance(a, Proxy):
            node = a.node
            while node in self.latest:
                node = self.latest[node]
            return a if node is a.node else self.proxy(node)
        return a

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None):
        """As ExportTracer's, reading updated tensors' latest values; in-place ATen ops recorded functional."""
        args = map_aggregate(args, lambda a: self.current(a) if isinstance(a, Proxy) else a)
        if kind == "call_function" and isinstance(target, OpOverload):
            op = target.overloadpacket._name
            if op == "copy_":
                self._update(args[0], args[1])
                return args[1]
            if op.endswith("_") and not op.endswith("__"):
                functional = getattr(getattr(aten, op[:-1]), target._overloadname)
                out = super().create_proxy(kind, functional, args, kwargs, name, type_expr, proxy_factory_fn)
                self._update(args[0], out)
                return out
        return super().create_proxy(kind, target, args, kwargs, name, type_expr, proxy_factory_fn)

    def _update(self, dst, value) -> None:
        if isinstance(dst, Proxy) and isinstance(value, Proxy):
            self.latest[dst.node] = value.node


def decompose(ep, decomp_table: dict | None):
    """`ep` traced again through `decomp_table` (default_decompositions() when None), made functional."""
    table = default_decompositions() if decomp_table is None else decomp_table
    tracer = _FunctionalTracer()
    tracer.root = ep.graph_module
    graph = tracer.graph = Graph(tracer_cls=ExportTracer)
    tracer.symbols = graph._export_symbols = list(getattr(ep.graph, "_export_symbols", []))
    env: dict = {}
    placeholders = []
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            proxy = tracer.create_proxy("placeholder", node.name, (), {})
            proxy.node.meta.update(node.meta)
            tracer.placeholders[node.name] = proxy
            env[node] = proxy
            placeholders.append(proxy.node)
            continue
        args = map_aggregate(node.args, lambda a: env[a] if isinstance(a, Node) else a)
        kwargs = map_aggregate(node.kwargs, lambda a: env[a] if isinstance(a, Node) else a)
        if node.op == "output":
            outputs = [tracer.current(a) for a in args[0]]
            break
        if node.op != "call_function":
            raise NotImplementedError(f"run_decompositions: a {node.op} node ({node.name})")
        if node.target is operator.getitem and isinstance(args[0], (list, tuple)):  # (an item of a decomposition's
            env[node] = args[0][args[1]]                                              # list of results)
            continue
        rule = table.get(node.target)
        env[node] = rule(*args, **kwargs) if rule is not None else \
            tracer.create_proxy("call_function", node.target, args, kwargs)
    specs = {s.arg.name: s for s in ep.graph_signature.input_specs}
    mutations, out_specs = [], []
    for ph in placeholders:
        if ph in tracer.latest:
            spec = specs[ph.name]
            new = tracer.current(tracer.proxy(ph)).node
            kind = {InputKind.BUFFER: OutputKind.BUFFER_MUTATION, InputKind.PARAMETER: OutputKind.PARAMETER_MUTATION,
                    InputKind.USER_INPUT: OutputKind.USER_INPUT_MUTATION}.get(spec.kind)
            if kind is None:
                raise RuntimeError(f"run_decompositions: the constant {spec.target} is updated in place")
            mutations.append(new)
            out_specs.append(OutputSpec(kind, TensorArgument(new.name), spec.target or ph.name))
    user = [o.node if isinstance(o, Proxy) else o for o in outputs]
    for old_spec, value in zip([s for s in ep.graph_signature.output_specs if s.kind is OutputKind.USER_OUTPUT],
                               user):
        arg = TensorArgument(value.name) if isinstance(value, Node) else old_spec.arg
        out_specs.append(OutputSpec(OutputKind.USER_OUTPUT, arg, None))
    graph.output(tuple(mutations + user))
    graph.eliminate_dead_code()
    signature = ExportGraphSignature([s for s in ep.graph_signature.input_specs], out_specs)
    new = type(ep)({}, graph, signature, ep.state_dict, dict(ep.range_constraints), ep.module_call_graph,
                          ep.example_inputs, ep.constants, dialect="ATEN")
    new._guards = ep._guards
    return new
