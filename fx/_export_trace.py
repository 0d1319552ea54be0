"""Tracing for torch.export: symbolic tracing (tidal.fx) through every module, each traced value carrying the
real value it stands for.

The example inputs run alongside the trace, so the program sees real shapes, dtypes and devices (`x.shape[0]`,
`if x.dim() == 3`, loops over a tensor's rows) and the graph is specialized to them, as torch's export specializes
static shapes. Control flow on a tensor's values cannot be captured: torch's data-dependent error. Parameters,
buffers and tensor attributes become get_attr nodes computed on copies, so in-place updates made while tracing
(batch norm's running statistics) leave the module as it was. The calls recorded are then renamed to ATen ops
(fx/_aten.py), indexing becomes select/slice/unsqueeze nodes as in torch's graphs.
"""
from __future__ import annotations

import inspect
import operator
import re
import sys
from typing import Any

from .. import ops
from ..autograd import no_grad
from .graph import Graph
from .node import Node, map_aggregate
from .proxy import LibraryAttribute, Proxy, _check_caller
from .tracer import _TRACING, Tracer
from ..tensor import Tensor
from ..tensor import Size
from ..utils._pytree import MappingKey
from ..utils._pytree import SequenceKey
from ..utils._pytree import tree_flatten_with_path
from ..utils._pytree import tree_flatten
from ..utils._pytree import tree_unflatten
from ._aten import aten, aten_call
from ._patch import Patcher
from ._patch import _reused
from .dynamic_shapes import INT_OO
from .dynamic_shapes import Dim
from .dynamic_shapes import DimHint
from .dynamic_shapes import Symbol
from .dynamic_shapes import SymInt
from .dynamic_shapes import affine

__all__ = ["ExportTracer", "trace_module", "DataDependentError"]

INT_MAX = sys.maxsize


class DataDependentError(RuntimeError):
    """Control flow on the values of a traced tensor (torch's GuardOnDataDependentSymNode)."""


def _val(a):
    return a.node.meta.get("val") if isinstance(a, Proxy) else a


class ValueProxy(Proxy):
    """A traced value that answers what its real value knows statically: shape, sizes, dims, dtype, device."""

    def _value(self, what: str):
        _check_caller(self, what, LibraryAttribute)
        return self.node.meta["val"]

    @property
    def shape(self):
        """The real value's shape; a dim that depends on a dynamic dim is a SymInt (fx/dynamic_shapes.py)."""
        v = self._value(".shape")
        return Size(tuple(self.tracer.sym_size(self.node, d) for d in range(v.dim())))

    def size(self, dim: int | None = None):
        """The real value's sizes (SymInts for dims depending on dynamic dims)."""
        shape = self.shape
        return shape if dim is None else shape[dim]

    def dim(self) -> int:
        """The real value's number of dims."""
        return self._value(".dim").dim()

    ndimension = dim

    @property
    def ndim(self) -> int:
        """The real value's number of dims."""
        return self._value(".ndim").dim()

    def numel(self) -> int:
        """The real value's number of elements."""
        return self._value(".numel").numel()

    nelement = numel

    @property
    def dtype(self):
        """The real value's dtype."""
        return self._value(".dtype").dtype

    @property
    def device(self):
        """The real value's device."""
        return self._value(".device").device

    @property
    def is_cuda(self) -> bool:
        """Whether the real value is on a CUDA device."""
        return self._value(".is_cuda").is_cuda

    @property
    def requires_grad(self) -> bool:
        """Whether the real value requires grad."""
        return bool(getattr(self._value(".requires_grad"), "requires_grad", False))

    def is_floating_point(self) -> bool:
        """Whether the real value's dtype is floating point."""
        return self._value(".is_floating_point").is_floating_point()

    def is_complex(self) -> bool:
        """Whether the real value's dtype is complex."""
        return self._value(".is_complex").is_complex()

    def element_size(self) -> int:
        """Bytes per element of the real value."""
        return self._value(".element_size").element_size()

    def __len__(self) -> int:
        v = self._value("len()")
        return v.shape[0] if isinstance(v, Tensor) else len(v)

    def __iter__(self):
        v = self._value("iteration")
        if isinstance(v, Tensor):  # (torch's export: unbind, then one getitem per row)
            rows = aten.unbind.int(self)
            return iter([operator.getitem(rows, i) for i in range(v.shape[0])])
        return iter([self.tracer.create_proxy("call_function", operator.getitem, (self, i), {})
                     for i in range(len(v))])

    def __bool__(self) -> bool:
        _check_caller(self, "bool()")
        raise DataDependentError(f"Could not guard on data-dependent expression (a Python bool of the traced value "
                                 f"{self.node.name}): export captures no control flow on tensor values; use "
                                 "torch.cond to capture both branches")

    def item(self):
        """Refused: a Python number from a traced tensor's value would fix the program to this input."""
        raise DataDependentError(f"item() of the traced value {self.node.name}: export captures no Python number "
                                 "read from a tensor's values")

    def tolist(self):
        """Refused, as item()."""
        raise DataDependentError(f"tolist() of the traced value {self.node.name}: export captures no Python numbers "
                                 "read from a tensor's values")


class ExportTracer(Tracer):
    """Traces every module's forward (no leaves) on ValueProxies; tensors of the root become get_attr nodes."""

    def __init__(self) -> None:
        super().__init__()
        self.attr_values: dict = {}
        self.symbols: list = []        # the dynamic dims' Symbols (each with .example, .probe, .source)
        self.placeholders: dict = {}   # name -> placeholder proxy (the symbols' sources)
        self.sym_proxies: dict = {}    # symbol -> the proxy of aten.sym_size.int(its input, its dim)
        self.module_stack: list = []   # qualified names of the modules whose forward is being traced

    def create_arg(self, a: Any) -> Any:
        """As Tracer's, a SymInt being the node computing it."""
        if isinstance(a, SymInt):
            return a.proxy.node
        return super().create_arg(a)

    def sym_size(self, node: Node, d: int):
        """Dim `d` of `node`'s value: an int, or a SymInt computed from the symbols it depends on."""
        value = node.meta["val"].shape[d]
        probes = node.meta.get("probes")
        if not probes:
            return value
        terms = affine([value] + [p.shape[d] for p in probes], self.symbols)
        if terms is None:
            return value
        offset = value - sum(slope * symbol.example for symbol, slope in terms)
        if not all(float(x).is_integer() for x in [offset] + [slope for _, slope in terms]):
            return value
        total = None
        for symbol, slope in terms:
            term = self._sym_proxy(symbol)
            term = term if slope == 1 else term * int(slope)
            total = term if total is None else total + term
        return total + int(offset) if offset else total

    def _sym_proxy(self, symbol):
        proxy = self.sym_proxies.get(symbol)
        if proxy is None:  # (at the top, after the inputs and earlier sizes, where torch's graphs have them)
            name, dim = symbol.source
            first = next((n for n in self.graph.nodes if n.op != "placeholder" and not (
                getattr(n.target, "overloadpacket", None) is aten.sym_size)), None)
            with self.graph.inserting_before(first):
                proxy = self.sym_proxies[symbol] = aten.sym_size.int(self.placeholders[name], dim)
        return SymInt(symbol.example, proxy)

    def is_leaf_module(self, m, module_qualified_name: str) -> bool:
        """None: every forward is traced through to the functions it calls."""
        return False

    def call_module(self, m, forward, args: tuple, kwargs: dict):
        """`m`'s forward traced through, its qualified name on the module stack the nodes made inside note."""
        self.module_stack.append(self.path_of_module(m))
        try:
            return forward(*args, **kwargs)
        finally:
            self.module_stack.pop()

    def proxy(self, node: Node) -> Proxy:
        """A ValueProxy."""
        return ValueProxy(node, self)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict) -> Any:
        """Parameters, buffers and tensor attributes of the root read while tracing: get_attr proxies."""
        if isinstance(attr_val, Tensor):
            name = self._qualname(attr_val)
            if name is not None:
                if name not in parameter_proxy_cache:
                    parameter_proxy_cache[name] = self.create_proxy("get_attr", name, (), {})
                return parameter_proxy_cache[name]
        return attr_val

    def _qualname(self, t: Tensor) -> str | None:
        return self._names("_parameter_names", "named_parameters").get(id(t)) or \
            self._names("_buffer_names", "named_buffers").get(id(t)) or self.tensor_attrs.get(id(t))

    def create_node(self, kind: str, target: Any, args: tuple, kwargs: dict, name: str | None = None,
                    type_expr: Any = None) -> Node:
        """A node, with its real value in meta['val'] (get_attr: a copy of the attribute)."""
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["nn_module_stack"] = tuple(self.module_stack)
        if kind == "get_attr":
            if target not in self.attr_values:
                value = _attr(self.root, target)
                copies = [value.detach().clone() if isinstance(value, Tensor) else value
                          for _ in range(1 + len(self.symbols))]  # (the probes update their own copies)
                self.attr_values[target] = copies
            node.meta["val"] = self.attr_values[target][0]
            if self.symbols:
                node.meta["probes"] = self.attr_values[target][1:]
        elif kind in ("call_function", "call_method"):
            evaluate(node, self.symbols)
        return node


def _attr(root, qualname: str):
    """Attribute `qualname` (dotted) of module `root`, read without Module.__getattr__ (patched while tracing)."""
    for part in qualname.split("."):
        for table in (vars(root), vars(root).get("_parameters", {}), vars(root).get("_buffers", {}),
                      vars(root).get("_modules", {})):
            if part in table:
                root = table[part]
                break
        else:
            raise AttributeError(f"{type(root).__name__} has no attribute {part!r}")
    return root


def run_node(node: Node, probe: int | None = None):
    """The real value of a call node from its arguments' real values (or their values in probe `probe`),
    gradients off."""

    def value(a):
        if not isinstance(a, Node):
            return a
        probes = a.meta.get("probes")
        return a.meta.get("val") if probe is None or not probes else probes[probe]
    args = map_aggregate(node.args, value)
    kwargs = map_aggregate(node.kwargs, value)
    with no_grad():
        if node.op == "call_method":
            return getattr(args[0], node.target)(*args[1:], **kwargs)
        return node.target(*args, **kwargs)


class ConstraintViolation(RuntimeError):
    """A dim marked dynamic that the traced program fixes to the example's size (torch's UserError)."""

    def __init__(self, symbol) -> None:
        self.symbol = symbol
        name = symbol.dim_name
        super().__init__(f"Constraints violated ({name})! For more information, run with TORCH_LOGS=\"+dynamic\".\n"
                         f"  - You marked {name} as dynamic but your code specialized it to be a constant "
                         f"({symbol.example}). If you're using mark_dynamic, either remove it or use "
                         "maybe_mark_dynamic. If you're using Dim.DYNAMIC, replace it with either Dim.STATIC or "
                         f"Dim.AUTO.\nSuggested fixes:\n  {name} = {symbol.example}")


def evaluate(node: Node, symbols: list) -> None:
    """Set a call node's meta val, and its value in each symbol's probe (a probe that fails: the program fixed
    that symbol's size)."""
    node.meta["val"] = run_node(node)
    if symbols:
        probes = []
        for k, symbol in enumerate(symbols):
            try:
                probes.append(run_node(node, k))
            except Exception as e:
                raise ConstraintViolation(symbol) from e
        node.meta["probes"] = probes


def _leaf_names(fn, args: tuple, kwargs: dict) -> list:
    """The placeholder name of each (path, leaf) of the inputs, as torch's export names them: the parameter's
    name, then the path into its containers joined with '_' (extra_a, xs_0)."""
    params = list(inspect.signature(fn).parameters.values())[1:]
    bound: list = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = next((p for p in params if p.kind == p.VAR_POSITIONAL), None)
    for i, a in enumerate(args):
        bound.append(positional[i].name if i < len(positional) else f"{star.name if star else 'args'}_{i - len(positional)}")
    names = []
    for base, value in [(n, a) for n, a in zip(bound, args)] + list(kwargs.items()):
        for path, _ in tree_flatten_with_path(value)[0]:
            parts = [base] + [str(k.key) if isinstance(k, MappingKey) else str(k.idx) if isinstance(k, SequenceKey)
                              else str(getattr(k, "name", k)) for k in path]
            names.append("_".join(parts))
    return names


class _class_functions:
    """While tracing, the functionals tidal's modules hold as class attributes (`_fn = staticmethod(F.dropout)`,
    bound before any patch) record one node as the module-level ones do."""

    def __init__(self, mod) -> None:
        self.mod = mod
        self.undo: list = []

    def __enter__(self) -> None:
        for cls in {c for m in self.mod.modules() for c in type(m).__mro__}:
            held = cls.__dict__.get("_fn")
            fn = getattr(held, "__func__", None)
            if isinstance(held, staticmethod) and (getattr(fn, "__module__", None) or "").startswith("tidal."):
                self.undo.append((cls, held))
                cls._fn = staticmethod(_reused(fn))

    def __exit__(self, *exc) -> None:
        for cls, held in reversed(self.undo):
            cls._fn = held


def _symbols(leaves: list, names: list, dynamic: dict) -> list:
    """A Symbol per dynamic dim of the inputs, with its example size and the size its probe uses."""
    symbols = []
    for name, leaf in zip(names, leaves):
        for d, mark in sorted(dynamic.get(id(leaf), {}).items()):
            low, high = (mark.min, mark.max) if isinstance(mark, Dim) else (2 if mark.name == "AUTO" else 0, INT_OO)
            label = mark.__name__ if isinstance(mark, Dim) else f"{name}_{d}"
            symbol = Symbol(len(symbols), label, low, high)
            symbol.example, symbol.source, symbol.auto = leaf.shape[d], (name, d), mark is DimHint.AUTO
            symbol.tensor = leaf
            symbol.probe = leaf.shape[d] + 1 if leaf.shape[d] + 1 <= high else leaf.shape[d] - 1
            if symbol.probe < max(low, 0):
                raise ValueError(f"dynamic_shapes: {label} has no size but {leaf.shape[d]} in [{low}, {high}]")
            symbols.append(symbol)
    return symbols


def _probe_value(leaf, symbols: list, name: str) -> list:
    """The input's value in each probe: resized along the probed symbol's dim (ones, or zeros for integers: indices
    stay in range), else itself."""
    out = []
    for symbol in symbols:
        if symbol.source[0] != name:
            out.append(leaf)
            continue
        shape = list(leaf.shape)
        shape[symbol.source[1]] = symbol.probe
        out.append(ops.ones(shape, dtype=leaf.dtype) if leaf.is_floating_point() else
                   ops.zeros(shape, dtype=leaf.dtype))  # (only the shapes of a probe's values are read)
    return out


def trace_module(mod, args: tuple, kwargs: dict, dynamic: dict | None = None) -> tuple:
    """(graph, tracer, in_spec, out_spec, leaves): `mod`'s forward traced on the example inputs; placeholders
    are the input leaves (None leaves left out), the output is the flat tuple of the result's leaves; `dynamic`:
    {id(input tensor): {dim: Dim or Dim.AUTO/DYNAMIC}}."""
    tracer = ExportTracer()
    tracer.root = mod
    tracer.graph = Graph(tracer_cls=ExportTracer)
    tracer.submodule_paths = {}
    for name, m in mod.named_modules():
        tracer.submodule_paths.setdefault(id(m), name)
    tracer.tensor_attrs = tracer._collect_tensor_attrs()
    forward = type(mod).forward
    leaves, in_spec = tree_flatten((tuple(args), dict(kwargs)))
    names = _leaf_names(forward, tuple(args), dict(kwargs))
    tracer.symbols = _symbols(leaves, names, dynamic or {})
    traced = []
    for name, leaf in zip(names, leaves):
        if leaf is None:
            traced.append(None)
            continue
        proxy = tracer.create_proxy("placeholder", name, (), {})
        proxy.node.meta["val"] = leaf
        proxy.node.meta["user_input"] = True
        tracer.placeholders[proxy.node.name] = proxy
        if tracer.symbols:
            proxy.node.meta["probes"] = _probe_value(leaf, tracer.symbols, name) if isinstance(leaf, Tensor) else \
                [leaf] * len(tracer.symbols)
        for symbol in tracer.symbols:
            if symbol.source[0] == name:
                symbol.source = (proxy.node.name, symbol.source[1])
        traced.append(proxy if isinstance(leaf, Tensor) else leaf)
    targs, tkwargs = tree_unflatten(traced, in_spec)
    _TRACING.append(tracer)
    try:
        with Patcher(tracer, {}, getattr(forward, "__globals__", {})), _class_functions(mod):
            result = forward(mod, *targs, **tkwargs)
            flat, out_spec = tree_flatten(result)
            tracer.create_node("output", "output", (tuple(tracer.create_arg(o) for o in flat),), {})
    finally:
        _TRACING.pop()
    tracer.submodule_paths = None
    tracer.graph._export_symbols = tracer.symbols
    return tracer.graph, tracer, in_spec, out_spec, leaves


# -- the recorded calls as ATen ops -------------------------------------------------------------------------


def _insert(graph: Graph, op, args: tuple, kwargs: dict | None = None) -> Node:
    node = graph.create_node("call_function", op, args, kwargs or {})
    evaluate(node, getattr(graph, "_export_symbols", []))
    return node


def _index(graph: Graph, base: Node, index) -> Node | None:
    """x[index] as select / slice / unsqueeze nodes (torch's export spelling), or None for an index holding a
    tensor or list (kept as one aten.index / getitem node)."""
    items = index if isinstance(index, tuple) else (index,)
    if any(isinstance(i, (Node, list)) or isinstance(i, Tensor) for i in items):
        return None
    ndim = base.meta["val"].dim()
    consumed = sum(1 for i in items if i is not None and i is not Ellipsis)
    out, dim = base, 0
    for item in items:
        if item is Ellipsis:
            dim += ndim - consumed
        elif item is None:
            out = _insert(graph, aten.unsqueeze.default, (out, dim))
            dim += 1
        elif isinstance(item, bool):
            return None
        elif isinstance(item, int):
            out = _insert(graph, aten.select.int, (out, dim, item))
        elif isinstance(item, slice):
            if item == slice(None):
                dim += 1
                continue
            start = 0 if item.start is None else item.start
            stop = INT_MAX if item.stop is None else item.stop
            args = (out, dim, start, stop) + ((item.step,) if item.step not in (None, 1) else ())
            out = _insert(graph, aten.slice.Tensor, args)
            dim += 1
        else:
            return None
    if out is base:  # x[:] / x[...]: torch's alias
        out = _insert(graph, aten.alias.default, (base,))
    return out


def to_aten(graph: Graph) -> None:
    """Rename every recorded call to its ATen op in place (indexing into select/slice/unsqueeze nodes)."""
    for node in list(graph.nodes):
        if node.op not in ("call_function", "call_method"):
            continue
        values = tuple(a.meta.get("val") if isinstance(a, Node) else a for a in node.args)
        if node.op == "call_function" and node.target is operator.getitem:
            if not isinstance(values[0], Tensor):
                continue  # (an item of a multi-output op: kept, as torch keeps it)
            with graph.inserting_before(node):
                new = _index(graph, node.args[0], node.args[1])
                if new is None:
                    idx = node.args[1] if isinstance(node.args[1], tuple) else (node.args[1],)
                    if all(isinstance(i, Node) or i is None for i in idx):
                        new = _insert(graph, aten.index.Tensor, (node.args[0], list(idx)))
            if new is not None:
                _replace(graph, node, new)
            continue
        if node.op == "call_function" and getattr(node.target, "overloadpacket", None) is not None:
            continue  # (already an ATen op: a decomposition made it)
        named = aten_call(node.op, node.target, node.args, node.kwargs, values)
        if named is None:
            continue
        name, overload, args, kwargs = named
        try:
            op = getattr(getattr(aten, name), overload)
        except AttributeError:
            continue
        node.op, node.target = "call_function", op  # (in place: the node keeps its place and users)
        node.args, node.kwargs = args, kwargs
        if re.sub(r"_\d+$", "", node.name) != name.rstrip("_") and not name.endswith("_"):
            node.name = graph._namespace.create_name(name, None)  # (torch names a node after its ATen op: rsub)


def _replace(graph: Graph, old: Node, new: Node) -> None:
    for key in ("stack_trace", "nn_module_stack"):
        if key in old.meta and key not in new.meta:
            new.meta[key] = old.meta[key]
    old.replace_all_uses_with(new)
    graph.erase_node(old)
