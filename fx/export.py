"""torch.export: a module traced on example inputs into one flat graph of ATen ops (ExportedProgram), its state
lifted to graph inputs; `run_decompositions` lowers it to core ATen without in-place updates.

Tracing is tidal.fx's symbolic tracing through every module, each traced value carrying its real value
(_export_trace.py), so Python control flow on shapes runs and the graph is specialized to the example's sizes (the
static shapes torch's export makes without `dynamic_shapes`). compat/export.py shows this module as torch.export;
loaded on first use, never at `import tidal`.

Files (in tidal.fx): _aten.py (torch.ops.aten names and what computes them), _export_trace.py (the tracer and the
renaming to ATen), graph_signature.py, exported_program.py (ExportedProgram, module()), decompositions.py
(run_decompositions).
"""
from __future__ import annotations

from ..nn.module import Module
from .decompositions import CustomDecompTable, default_decompositions
from .exported_program import (ExportedProgram, ModuleCallEntry, ModuleCallSignature, lifted_input_specs,
                               user_input_specs, user_output_specs)
from .graph_signature import ExportBackwardSignature, ExportGraphSignature

__all__ = ["CustomDecompTable", "default_decompositions", "export", "ExportBackwardSignature", "ExportedProgram",
           "ExportGraphSignature", "ModuleCallEntry", "ModuleCallSignature"]


class UserError(RuntimeError):
    """An export call given arguments it cannot use (torch._dynamo.exc.UserError)."""


def export(mod: Module, args: tuple, kwargs: dict | None = None, *, dynamic_shapes=None, strict: bool = False,
           preserve_module_call_signature: tuple = (),
           prefer_deferred_runtime_asserts_over_guards: bool = False) -> ExportedProgram:
    """Trace `mod` on the example inputs (args, kwargs) into an ExportedProgram of ATen ops (shapes specialized to
    the example's)."""
    from ._export_trace import to_aten, trace_module
    if not isinstance(mod, Module):
        raise ValueError(f"Expected `mod` to be an instance of `torch.nn.Module`, got {type(mod)}.")
    if not isinstance(args, tuple):
        raise UserError(f"Expecting `args` to be a tuple of example positional inputs, got {type(args)}")
    kwargs = {} if kwargs is None else kwargs
    if not isinstance(kwargs, dict):
        raise UserError(f"Expecting `kwargs` to be a dict of example keyword inputs, got {type(kwargs)}")
    if dynamic_shapes is not None:
        raise NotImplementedError("export(): dynamic_shapes is not supported by tidal yet; exported shapes are "
                                  "static (the example's)")
    graph, tracer, in_spec, out_spec, leaves = trace_module(mod, args, kwargs)
    to_aten(graph)
    graph.eliminate_dead_code()
    lifted, state, constants = lifted_input_specs(mod, graph, tracer)
    signature = ExportGraphSignature(lifted + user_input_specs(graph), user_output_specs(graph.output_node().args[0]))
    call = ModuleCallEntry("", ModuleCallSignature([], [], in_spec, out_spec))
    ep = ExportedProgram({}, graph, signature, state, {}, [call], (args, kwargs), constants)
    from ..tensor import Tensor
    names = iter(s.arg.name for s in signature.input_specs if s.kind.name == "USER_INPUT")
    ep._guards = [(None, None) if leaf is None else
                  (next(names), tuple(leaf.shape) if isinstance(leaf, Tensor) else leaf) for leaf in leaves]
    return ep
