"""ExportedProgram (torch.export.ExportedProgram): a traced module as one flat graph of ATen ops whose inputs are its
parameters, buffers and tensor constants (lifted, named p_/b_/c_) and then the user's inputs, with the graph
signature saying which is which, the state dict, and `module()` to run it again as a Module."""
from __future__ import annotations

import re
from .graph import Graph
from .graph_module import GraphModule
from .node import Node
from ..nn.module import Module
from ..tensor import Tensor
from ..utils._pytree import tree_flatten
from ..utils._pytree import tree_unflatten
from ._aten import aten
from ._export_trace import _attr
from .decompositions import decompose
from .dynamic_shapes import affine, spelled
from .graph_signature import (ConstantArgument, ExportGraphSignature, InputKind, InputSpec, OutputKind, OutputSpec,
                              TensorArgument)

__all__ = ["ExportedProgram", "ModuleCallEntry", "ModuleCallSignature"]

_ABBREVIATIONS = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "int64": "i64",
                  "int32": "i32", "int16": "i16", "int8": "i8", "uint8": "u8", "bool": "b8", "complex64": "c64",
                  "complex128": "c128", "complex32": "c32"}


class ModuleCallSignature:
    """The inputs, outputs and pytree specs of one module call (torch.export.ModuleCallSignature)."""

    def __init__(self, inputs: list, outputs: list, in_spec, out_spec, forward_arg_names: list | None = None):
        self.inputs, self.outputs, self.in_spec, self.out_spec = inputs, outputs, in_spec, out_spec
        self.forward_arg_names = forward_arg_names


class ModuleCallEntry:
    """A module's qualified name and its call signature (torch.export.ModuleCallEntry)."""

    def __init__(self, fqn: str, signature: ModuleCallSignature | None = None) -> None:
        self.fqn, self.signature = fqn, signature


def annotation(node) -> str:
    """torch's short type of a node's value: f32[5, 4], f32[s0, 3] (dims depending on dynamic dims by their
    symbols), Sym(s0) for a size."""
    if node is None:
        return ""
    value, probes = node.meta.get("val"), node.meta.get("probes")
    symbols = getattr(node.graph, "_export_symbols", [])

    def size(values: list) -> str:
        terms = affine(values, symbols) if probes and symbols else None
        return str(values[0]) if terms is None else spelled(values[0], terms)
    if isinstance(value, int) and not isinstance(value, bool) and probes:
        return f'"Sym({size([value] + list(probes))})"'
    if not isinstance(value, Tensor):
        return ""
    dtype = _ABBREVIATIONS.get(str(value.dtype).split(".")[-1], str(value.dtype))
    dims = [size([value.shape[d]] + ([p.shape[d] for p in probes] if probes else [])) for d in range(value.dim())]
    return f'"{dtype}[{", ".join(dims)}]"'


def _annotated_code(graph: Graph) -> str:
    """The graph's forward with torch's value annotations (`linear: "f32[5, 4]" = ...`)."""
    vals = {n.name: n for n in graph.nodes}
    src = graph.python_code("self").src.strip("\n")

    def signature(m):
        params = []
        for p in m.group(1).split(", "):
            note = annotation(vals.get(p))
            params.append(f"{p}: {note}" if note else p)
        return f"def forward({', '.join(params)}):"
    src = re.sub(r"def forward\((.*)\):", signature, src, count=1)

    def line(m):
        note = annotation(vals.get(m.group(2)))
        return f"{m.group(1)}{m.group(2)}: {note} = " if note else m.group(0)
    return re.sub(r"^(\s+)(\w+) = ", line, src, flags=re.M)


class ExportedProgram:
    """A module exported to a flat ATen graph (torch.export.ExportedProgram)."""

    def __init__(self, root, graph: Graph, graph_signature: ExportGraphSignature, state_dict: dict,
                 range_constraints: dict, module_call_graph: list, example_inputs=None, constants: dict | None = None,
                 *, verifiers=None, dialect: str = "TRAINING") -> None:
        self._graph_module = root if isinstance(root, GraphModule) else GraphModule(root or {}, graph)
        self._graph_signature = graph_signature
        self._state_dict = state_dict
        self._range_constraints = range_constraints
        self._module_call_graph = module_call_graph
        self._example_inputs = example_inputs
        self._constants = constants or {}
        self._dialect = dialect
        self._guards: list = []  # (placeholder name, tensor sizes or constant value), checked by module()

    # -- what torch's ExportedProgram offers ------------------------------------------------------------
    @property
    def graph_module(self) -> GraphModule:
        """The graph as a GraphModule taking the lifted state, then the user inputs, flat."""
        return self._graph_module

    @property
    def graph(self) -> Graph:
        """The graph of ATen ops."""
        return self._graph_module.graph

    @property
    def graph_signature(self) -> ExportGraphSignature:
        """What each input and output of the graph is."""
        return self._graph_signature

    @property
    def state_dict(self) -> dict:
        """The parameters and persistent buffers (the module's own tensors)."""
        return self._state_dict

    @property
    def constants(self) -> dict:
        """The lifted tensor constants and non-persistent buffers."""
        return self._constants

    tensor_constants = constants

    @property
    def range_constraints(self) -> dict:
        """The ranges of the dynamic dims' symbols (none: tidal's exported shapes are static)."""
        return self._range_constraints

    @property
    def module_call_graph(self) -> list:
        """The module calls whose signatures are kept (the root's)."""
        return self._module_call_graph

    @property
    def call_spec(self):
        """The root call's input and output pytree specs."""
        from types import SimpleNamespace
        sig = self._module_call_graph[0].signature
        return SimpleNamespace(in_spec=sig.in_spec, out_spec=sig.out_spec)

    @property
    def example_inputs(self):
        """The (args, kwargs) the program was exported with."""
        return self._example_inputs

    @property
    def dialect(self) -> str:
        """TRAINING for export(), ATEN after run_decompositions()."""
        return self._dialect

    @property
    def verifiers(self) -> list:
        """No verifier classes in tidal."""
        return []

    def parameters(self):
        """The parameters, in the graph's order."""
        for _, p in self.named_parameters():
            yield p

    def named_parameters(self):
        """(name, parameter) in the graph's order."""
        for name in self._graph_signature.parameters:
            yield name, self._state_dict[name]

    def buffers(self):
        """The buffers, in the graph's order."""
        for _, b in self.named_buffers():
            yield b

    def named_buffers(self):
        """(name, buffer) in the graph's order (non-persistent ones from constants)."""
        non_persistent = set(self._graph_signature.non_persistent_buffers)
        for name in self._graph_signature.buffers:
            yield name, self._constants[name] if name in non_persistent else self._state_dict[name]

    def __call__(self, *args, **kwargs):
        raise RuntimeError("Unable to call ExportedProgram directly. You should use `exported_program.module()` "
                           "instead.")

    def validate(self) -> None:
        """Check the graph and its signature agree."""
        self.graph.lint()
        names = [n.name for n in self.graph.nodes if n.op == "placeholder"]
        if names != [s.arg.name for s in self._graph_signature.input_specs]:
            raise AssertionError(f"graph placeholders {names} do not match the signature's inputs")

    def _lifted_values(self) -> list:
        out = []
        for spec in self._graph_signature.input_specs:
            if spec.kind is InputKind.PARAMETER or spec.kind is InputKind.BUFFER and spec.persistent:
                out.append(self._state_dict[spec.target])
            elif spec.kind in (InputKind.BUFFER, InputKind.CONSTANT_TENSOR):
                out.append(self._constants[spec.target])
        return out

    def module(self) -> Module:
        """A Module running the graph on the user's inputs (pytrees as exported) with this program's state
        (buffer mutations written back), checking the inputs against the example's static sizes."""
        return _unlift(self)

    def run_decompositions(self, decomp_table: dict | None = None, decompose_custom_triton_ops: bool = False):
        """A new program in core ATen: ops decomposed by `decomp_table` (default_decompositions()) and in-place
        updates of buffers and inputs turned into extra outputs (BUFFER_MUTATION / USER_INPUT_MUTATION)."""
        return decompose(self, decomp_table)

    def __str__(self) -> str:
        code = _annotated_code(self.graph)
        body = "\n".join("        " + line for line in code.split("\n"))
        sig = "\n".join(("    " + line) if i else line for i, line in enumerate(str(self.graph_signature).split("\n")))
        return (f"ExportedProgram:\n    class GraphModule(torch.nn.Module):\n{body}\n        \n"
                f"Graph signature: {sig}\nRange constraints: {self._range_constraints}\n")

    __repr__ = __str__


# -- module(): the state put back as attributes ---------------------------------------------------------


def _install(holder: Module, target: str, value, kind: InputKind, persistent: bool | None) -> None:
    *prefix, field = target.split(".")
    mod = holder
    for part in prefix:
        sub = mod._modules.get(part)
        if sub is None:
            sub = Module()
            mod.add_module(part, sub)
        mod = sub
    if kind is InputKind.PARAMETER:
        mod.register_parameter(field, value)
    elif kind is InputKind.BUFFER:
        mod.register_buffer(field, value, persistent=bool(persistent))
    else:
        object.__setattr__(mod, field, value)


class _ExportedModule(GraphModule):
    """ep.module(): flattens the inputs as exported, checks them, runs the graph, rebuilds the outputs."""

    def train(self, mode: bool = True):
        """Refused, as torch refuses it on exported modules."""
        raise NotImplementedError("Calling train() is not supported yet.")

    def eval(self):
        """Refused, as torch refuses it on exported modules."""
        raise NotImplementedError("Calling eval() is not supported yet.")

    def __call__(self, *args, **kwargs):
        info = self.__dict__["_export_info"]
        expected = list(info["in_spec"].children_specs[1].context) if info["in_spec"].children_specs else []
        if sorted(kwargs) != sorted(expected):
            raise ValueError(f"Ran into a kwarg keyword mismatch: Got the following keywords {list(kwargs)} but "
                             f"expected {expected}")
        kwargs = {k: kwargs[k] for k in expected}  # (the exported order)
        leaves, spec = tree_flatten((tuple(args), dict(kwargs)))
        if spec != info["in_spec"]:
            raise ValueError(f"Trying to flatten user inputs with exported input tree spec: \n{info['in_spec']}\n"
                             f"but actually got inputs with tree spec of: \n{spec}")
        flat = []
        for leaf, (name, want) in zip(leaves, info["guards"]):
            if name is None:
                continue
            _check_guard(name, want, leaf)
            flat.append(leaf)
        out = super().__call__(*flat)
        return tree_unflatten(list(out), info["out_spec"])


def _check_guard(name: str, want, value) -> None:
    if isinstance(want, tuple):  # a tensor's sizes: static ints, or (low, high) of a dynamic dim
        if not isinstance(value, Tensor):
            raise AssertionError(f"Guard failed: {name} is a Tensor")
        if value.dim() != len(want):
            raise AssertionError(f"Guard failed: {name}.dim() == {len(want)}")
        for i, (got, size) in enumerate(zip(value.shape, want)):
            if isinstance(size, tuple):
                low, high = size
                if got < low:
                    raise AssertionError(f"Guard failed: {name}.size()[{i}] >= {low}")
                if not high >= got:
                    raise AssertionError(f"Guard failed: {name}.size()[{i}] <= {high}")
            elif got != size:
                raise AssertionError(f"Guard failed: {name}.size()[{i}] == {size}")
    elif value != want:
        raise AssertionError(f"Guard failed: {name} == {want!r}")


def _unlift(ep: ExportedProgram) -> Module:
    holder = Module()
    sig = ep.graph_signature
    graph = Graph()
    env: dict = {}
    lifted = iter(ep._lifted_values())
    attrs: dict = {}
    for node in ep.graph.nodes:
        if node.op != "placeholder":
            break
        spec = next(s for s in sig.input_specs if s.arg.name == node.name)
        if spec.kind is InputKind.USER_INPUT:
            env[node] = graph.placeholder(node.name)
        else:
            _install(holder, spec.target, next(lifted), spec.kind, spec.persistent)
            attrs[node] = spec.target
    for node, target in attrs.items():
        env[node] = graph.get_attr(target)
        env[node].meta.update(node.meta)
    for node in ep.graph.nodes:
        if node.op == "placeholder":
            env[node].meta.update(node.meta)
            continue
        if node.op == "output":
            outs = []
            for value, spec in zip(node.args[0], sig.output_specs):
                mapped = env[value] if isinstance(value, Node) else value
                if spec.kind is OutputKind.BUFFER_MUTATION:
                    graph.call_function(aten.copy_.default, (graph.get_attr(spec.target), mapped))
                elif spec.kind is OutputKind.USER_INPUT_MUTATION:
                    user = next(n for n in env if n.name == spec.target)
                    graph.call_function(aten.copy_.default, (env[user], mapped))
                else:
                    outs.append(mapped)
            graph.output(tuple(outs))
            continue
        env[node] = graph.node_copy(node, lambda n: env[n])
    gm = _ExportedModule(holder, graph)
    for spec in sig.input_specs:  # (GraphModule makes every plain tensor a buffer: constants stay attributes)
        if spec.kind is InputKind.CONSTANT_TENSOR:
            *path, field = spec.target.split(".")
            owner = gm.get_submodule(".".join(path)) if path else gm
            value = owner._buffers.pop(field, None)
            if value is not None:
                object.__setattr__(owner, field, value)
    gm.__dict__["_export_info"] = {"in_spec": ep.call_spec.in_spec, "out_spec": ep.call_spec.out_spec,
                                   "guards": ep._guards}
    return gm


def user_output_specs(outputs: tuple) -> list:
    """USER_OUTPUT specs of a graph's outputs."""
    return [OutputSpec(OutputKind.USER_OUTPUT, TensorArgument(o.name) if isinstance(o, Node)
                       else ConstantArgument("", o), None) for o in outputs]


def lifted_input_specs(mod: Module, graph: Graph, tracer) -> tuple:
    """Lift the root's parameters, buffers and the tensor attributes the graph reads to placeholders before the
    user inputs: (input specs, state dict, constants)."""
    params = list(mod.named_parameters())
    buffers = list(mod.named_buffers())
    non_persistent = {f"{p}.{n}" if p else n for p, m in mod.named_modules()
                      for n in getattr(m, "_non_persistent_buffers_set", ())}
    gets = {}
    for node in list(graph.nodes):
        if node.op == "get_attr":
            gets.setdefault(node.target, []).append(node)
    constants = [t for t in dict.fromkeys(n for n in gets) if t not in dict(params) and t not in dict(buffers)]
    first = next(iter(graph.nodes))
    specs, state, consts = [], {}, {}

    def lift(prefix: str, target: str, value, kind: InputKind, persistent=None) -> None:
        with graph.inserting_before(first):
            ph = graph.placeholder(prefix + target.replace(".", "_"))
        ph.meta["val"] = value.detach() if isinstance(value, Tensor) else value
        for get in gets.get(target, ()):
            get.replace_all_uses_with(ph)
            graph.erase_node(get)
        specs.append(InputSpec(kind, TensorArgument(ph.name), target, persistent))

    for name, p in params:
        lift("p_", name, p, InputKind.PARAMETER)
        state[name] = p
    hidden = {}
    for name, b in buffers:
        keep = name not in non_persistent
        lift("b_", name, b, InputKind.BUFFER, keep)
        (state if keep else hidden)[name] = b
    for name in constants:
        value = _attr(mod, name)
        lift("c_", name, value, InputKind.CONSTANT_TENSOR)
        consts[name] = value
    consts.update(hidden)  # (torch's order: the lifted constants, then the non-persistent buffers)
    return specs, state, consts


def user_input_specs(graph: Graph) -> list:
    """USER_INPUT specs of the graph's traced placeholders (constants: ConstantArgument)."""
    specs = []
    for node in graph.nodes:
        if node.op == "placeholder" and node.meta.get("user_input"):
            val = node.meta["val"]
            arg = TensorArgument(node.name) if isinstance(val, Tensor) else ConstantArgument(node.name, val)
            specs.append(InputSpec(InputKind.USER_INPUT, arg, None))
    return specs
