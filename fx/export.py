"""torch.export: a module traced on example inputs into one flat graph of ATen ops (ExportedProgram), its state
lifted to graph inputs; `run_decompositions` lowers it to core ATen without in-place updates.

Tracing is tidal.fx's symbolic tracing through every module, each traced value carrying its real value
(_export_trace.py), so Python control flow on shapes runs and the graph is specialized to the example's sizes,
except the dims `dynamic_shapes` marks (Dim, Dim.AUTO/DYNAMIC: dynamic_shapes.py): sizes depending on them are
computed in the graph (aten.sym_size.int), their ranges are the program's range_constraints and module()'s guards.
compat/export.py shows this module as torch.export; loaded on first use, never at `import tidal`.

Files (in tidal.fx): _aten.py (torch.ops.aten names and what computes them), _export_trace.py (the tracer and the
renaming to ATen), graph_signature.py, exported_program.py (ExportedProgram, module()), decompositions.py
(run_decompositions).
"""
from __future__ import annotations

from ..nn.module import Module
from ..tensor import Tensor
from ._export_trace import ConstraintViolation
from ._export_trace import to_aten
from ._export_trace import trace_module
from .decompositions import CustomDecompTable, default_decompositions
from .exported_program import (ExportedProgram, ModuleCallEntry, ModuleCallSignature, lifted_input_specs,
                               user_input_specs, user_output_specs)
from .dynamic_shapes import Dim, dims
from .dynamic_shapes import ValueRange
from .dynamic_shapes import parse
from .graph_signature import ExportBackwardSignature, ExportGraphSignature

__all__ = ["CustomDecompTable", "default_decompositions", "Dim", "dims", "export", "ExportBackwardSignature",
           "ExportedProgram", "ExportGraphSignature", "ModuleCallEntry", "ModuleCallSignature"]


class UserError(RuntimeError):
    """An export call given arguments it cannot use (torch._dynamo.exc.UserError)."""


def export(mod: Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = (),
           prefer_deferred_runtime_asserts_over_guards: bool = False) -> ExportedProgram:
    """Trace `mod` on the example inputs (args, kwargs) into an ExportedProgram of ATen ops (shapes specialized to
    the example's but for the dims `dynamic_shapes` marks)."""
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise UserError(f"Expecting `kwargs` to be a dict of example keyword inputs, got {type(kwargs)}")
    dynamic = {} if dynamic_shapes is None else parse(dynamic_shapes, type(mod).forward, args, kwargs)
    while True:
        try:
            graph, tracer, in_spec, out_spec, leaves = trace_module(mod, args, kwargs, dynamic)
            to_aten(graph)
            break
        except ConstraintViolation as e:
            if not e.symbol.auto:  # (a named Dim or Dim.DYNAMIC the program fixes: torch's error)
                raise UserError(str(e)) from None
            del dynamic[id(e.symbol.tensor)][e.symbol.source[1]]  # (Dim.AUTO: that dim becomes static, as torch)
    graph.eliminate_dead_code()
    lifted, state, constants = lifted_input_specs(mod, graph, tracer)
    signature = ExportGraphSignature(lifted + user_input_specs(graph), user_output_specs(graph.output_node().args[0]))
    call = ModuleCallEntry("", ModuleCallSignature([], [], in_spec, out_spec))
    ranges = {symbol: ValueRange(symbol.low, symbol.high) for symbol in tracer.symbols}
    ep = ExportedProgram({}, graph, signature, state, ranges, [call], (args, kwargs), constants)
    names = iter(s.arg.name for s in signature.input_specs if s.kind.name == "USER_INPUT")
    ep._guards = [(None, None) if leaf is None else
                  (next(names), _sizes(leaf, tracer.symbols) if isinstance(leaf, Tensor) else leaf)
                  for leaf in leaves]
    return ep


def _sizes(leaf, symbols: list) -> tuple:
    """What module() checks of an input tensor: each dim's size, or (low, high) for a dynamic one."""
    sizes = list(leaf.shape)
    for symbol in symbols:
        if symbol.tensor is leaf:
            sizes[symbol.source[1]] = (symbol.low, symbol.high)
    return tuple(sizes)
