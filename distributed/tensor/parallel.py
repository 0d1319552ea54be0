"""torch.distributed.tensor.parallel on tidal: tensor-parallel styles that lay out a module's
parameters as DTensors (global tensors) and convert its inputs and outputs around forward.
The sharded compute itself is tidal's global-tensor dispatch: Linear with a split(0) weight is a
column-parallel matmul, with split(1) a row-parallel one whose partial sum is all-reduced."""
from __future__ import annotations

import fnmatch
import warnings

from ...comm.global_tensor import GlobalTensor
from ...nn import Embedding
from ...nn import Linear
from ...nn.parameter import Parameter
from ...tensor import Tensor
from ..device_mesh import DeviceMesh
from ._api import _mesh, distribute_module, distribute_tensor, from_local
from ._loss_parallel import loss_parallel
from .placement_types import Placement, Replicate, Shard

__all__ = ["ParallelStyle", "ColwiseParallel", "RowwiseParallel", "SequenceParallel", "PrepareModuleInput",
           "PrepareModuleOutput", "PrepareModuleInputOutput", "parallelize_module", "loss_parallel"]


def _one(layouts, default: Placement) -> tuple:
    if layouts is None:
        return (default,)
    return tuple(layouts) if isinstance(layouts, (tuple, list)) else (layouts,)


def _to_dtensor(x, mesh: DeviceMesh, layouts: tuple, desired: tuple | None):
    """`x` (local: this rank's part as `layouts`) as a DTensor laid out as `desired`."""
    if layouts is None or layouts[0] is None:
        return x
    if not isinstance(x, GlobalTensor):
        if not isinstance(x, Tensor):
            return x
        x = from_local(x, mesh, layouts)
    if desired is not None and x.placements != desired:
        x = x.redistribute(mesh, desired)
    return x


def _from_dtensor(x, mesh: DeviceMesh, layouts: tuple | None, use_local_output: bool):
    if not isinstance(x, GlobalTensor):
        return x
    if layouts is not None and layouts[0] is not None and x.placements != layouts:
        x = x.redistribute(mesh, layouts)
    return x.to_local() if use_local_output else x


def _shard_parameters(module, mesh: DeviceMesh, layouts: dict, src_data_rank) -> None:
    for name, placements in layouts.items():
        param = module._parameters.get(name)
        if param is not None and not isinstance(param, GlobalTensor):
            dt = distribute_tensor(param.detach(), mesh, placements, src_data_rank=src_data_rank)
            module.register_parameter(name, Parameter(dt, requires_grad=param.requires_grad))


def _kind(module) -> str:
    if isinstance(module, Linear):
        return "linear"
    if isinstance(module, Embedding):
        return "embedding"
    return "other"


class ParallelStyle:
    """How one module is parallelized; `parallelize_module` applies it."""

    src_data_rank: int | None = 0

    def _apply(self, module, device_mesh: DeviceMesh):
        raise NotImplementedError(f"{type(self).__name__} does not say how to parallelize a module")


class ColwiseParallel(ParallelStyle):
    """Linear: weight and bias sharded on dim 0 (output features); Embedding: weight on dim 1. Input
    replicated, output sharded on the last dim."""

    def __init__(self, *, input_layouts: Placement | None = None, output_layouts: Placement | None = None,
                 use_local_output: bool = True):
        self.input_layouts = _one(input_layouts, Replicate())
        self.output_layouts = _one(output_layouts, Shard(-1))
        self.desired_input_layouts = (Replicate(),)
        self.use_local_output = use_local_output

    def _partition(self, name: str, module, mesh: DeviceMesh) -> None:
        kind = _kind(module)
        if kind == "linear":
            _shard_parameters(module, mesh, {"weight": [Shard(0)], "bias": [Shard(0)]}, self.src_data_rank)
        elif kind == "embedding":
            _shard_parameters(module, mesh, {"weight": [Shard(1)]}, self.src_data_rank)
        else:
            raise NotImplementedError("ColwiseParallel currently only support nn.Linear and nn.Embedding!")

    def _apply(self, module, device_mesh: DeviceMesh):
        def inputs(mod, args, mesh):
            return (_to_dtensor(args[0], mesh, self.input_layouts, self.desired_input_layouts),) + tuple(args[1:])

        def outputs(mod, out, mesh):
            return _from_dtensor(out, mesh, self.output_layouts, self.use_local_output)
        return distribute_module(module, device_mesh, lambda n, m, mesh: self._partition(n, m, mesh) if m is module
                                 else None, inputs, outputs)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(input_layouts={self.input_layouts}, output_layouts={self.output_layouts}, "
                f"use_local_output={self.use_local_output})")


class RowwiseParallel(ColwiseParallel):
    """Linear: weight sharded on dim 1 (input features), bias replicated; Embedding: weight on dim 0. Input
    sharded on the last dim, output replicated (the partial sums all-reduced)."""

    def __init__(self, *, input_layouts: Placement | None = None, output_layouts: Placement | None = None,
                 use_local_output: bool = True):
        self.input_layouts = _one(input_layouts, Shard(-1))
        self.output_layouts = _one(output_layouts, Replicate())
        self.desired_input_layouts = (Shard(-1),)
        self.use_local_output = use_local_output

    def _partition(self, name: str, module, mesh: DeviceMesh) -> None:
        kind = _kind(module)
        if kind == "linear":
            _shard_parameters(module, mesh, {"weight": [Shard(1)], "bias": [Replicate()]}, self.src_data_rank)
        elif kind == "embedding":
            self.desired_input_layouts = (Replicate(),)
            _shard_parameters(module, mesh, {"weight": [Shard(0)]}, self.src_data_rank)
        else:
            raise NotImplementedError("RowwiseParallel currently only support nn.Linear and nn.Embedding!")


class SequenceParallel(ParallelStyle):
    """Parameters replicated; the input and output sharded on `sequence_dim` (for norms and dropout)."""

    def __init__(self, *, sequence_dim: int = 1, use_local_output: bool = False):
        self.sequence_dim = sequence_dim
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh: DeviceMesh):
        layouts = (Shard(self.sequence_dim),)

        def inputs(mod, args, mesh):
            return (_to_dtensor(args[0], mesh, layouts, layouts),) + tuple(args[1:])

        def outputs(mod, out, mesh):
            return _from_dtensor(out, mesh, layouts, self.use_local_output)
        return distribute_module(module, device_mesh, None, inputs, outputs)


class PrepareModuleInput(ParallelStyle):
    """Turn the module's (positional and keyword) inputs from `input_layouts` into `desired_input_layouts`."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None, input_kwarg_layouts: dict | None = None,
                 desired_input_kwarg_layouts: dict | None = None, use_local_output: bool = False):
        self.input_layouts = None if input_layouts is None else _layout_list(input_layouts)
        self.desired_input_layouts = None if desired_input_layouts is None else _layout_list(desired_input_layouts)
        if (self.input_layouts is None) != (self.desired_input_layouts is None) or (
                self.input_layouts is not None and len(self.input_layouts) != len(self.desired_input_layouts)):
            raise AssertionError("input_layouts and desired_input_layouts should have same length!")
        self.input_kwarg_layouts = dict(input_kwarg_layouts or {})
        self.desired_input_kwarg_layouts = dict(desired_input_kwarg_layouts or {})
        self.use_local_output = use_local_output

    def _convert(self, x, mesh, layout, desired):
        if layout is None:
            return x
        x = _to_dtensor(x, mesh, (layout,), None if desired is None else (desired,))
        return x.to_local() if self.use_local_output and isinstance(x, GlobalTensor) else x

    def _apply(self, module, device_mesh: DeviceMesh):
        def hook(mod, args, kwargs):
            if self.input_layouts is not None:
                if len(args) != len(self.input_layouts):
                    raise ValueError("module inputs and input_layouts should have same length!")
                args = tuple(self._convert(a, device_mesh, lay, want)
                             for a, lay, want in zip(args, self.input_layouts, self.desired_input_layouts))
            kwargs = {k: self._convert(v, device_mesh, self.input_kwarg_layouts.get(k),
                                       self.desired_input_kwarg_layouts.get(k)) for k, v in kwargs.items()}
            return args, kwargs
        module.register_forward_pre_hook(hook, with_kwargs=True)
        return module


class PrepareModuleOutput(ParallelStyle):
    """Turn the module's outputs from `output_layouts` into `desired_output_layouts`."""

    def __init__(self, *, output_layouts, desired_output_layouts, use_local_output: bool = True):
        self.output_layouts = _layout_list(output_layouts)
        self.desired_output_layouts = _layout_list(desired_output_layouts)
        if len(self.output_layouts) != len(self.desired_output_layouts):
            raise AssertionError("output_layouts and desired_output_layouts should have same length!")
        self.use_local_output = use_local_output

    def _apply(self, module, device_mesh: DeviceMesh):
        def hook(mod, args, out):
            single = not isinstance(out, tuple)
            outs = (out,) if single else out
            if len(outs) != len(self.output_layouts):
                raise ValueError("module outputs and output_layouts should have same length!")
            converted = tuple(_from_dtensor(_to_dtensor(o, device_mesh, (lay,), None), device_mesh, (want,),
                                            self.use_local_output)
                              for o, lay, want in zip(outs, self.output_layouts, self.desired_output_layouts))
            return converted[0] if single else converted
        module.register_forward_hook(hook)
        return module


class PrepareModuleInputOutput(ParallelStyle):
    """PrepareModuleInput and PrepareModuleOutput on one module (`use_local_input` is the input side's
    use_local_output)."""

    def __init__(self, *, input_layouts=None, desired_input_layouts=None, input_kwarg_layouts: dict | None = None,
                 desired_input_kwarg_layouts: dict | None = None, use_local_input: bool = False, output_layouts,
                 desired_output_layouts, use_local_output: bool = True):
        self.prepare_module_input = PrepareModuleInput(
            input_layouts=input_layouts, desired_input_layouts=desired_input_layouts,
            input_kwarg_layouts=input_kwarg_layouts, desired_input_kwarg_layouts=desired_input_kwarg_layouts,
            use_local_output=use_local_input)
        self.prepare_module_output = PrepareModuleOutput(
            output_layouts=output_layouts, desired_output_layouts=desired_output_layouts,
            use_local_output=use_local_output)

    def _apply(self, module, device_mesh: DeviceMesh):
        self.prepare_module_input._apply(module, device_mesh)
        return self.prepare_module_output._apply(module, device_mesh)


def _layout_list(layouts) -> list:
    return list(layouts) if isinstance(layouts, (tuple, list)) else [layouts]


def parallelize_module(module, device_mesh: DeviceMesh | None = None, parallelize_plan=None, *,
                       src_data_rank: int | None = 0):
    """Apply a ParallelStyle to `module`, or a plan {"submodule.path" (fnmatch patterns per dot): style}."""
    mesh = _mesh(device_mesh)
    if parallelize_plan is None:
        warnings.warn("No parallelize_plan is provided and auto-parallel is not supported at the moment, so this "
                      "parallelize_module call will do nothing.", stacklevel=2)
        return module
    if isinstance(parallelize_plan, ParallelStyle):
        if mesh.ndim != 1:
            raise ValueError(f"parallelize_module(): a ParallelStyle needs a 1-D mesh, got {mesh!r}; pass the tensor-"
                             "parallel sub-mesh (mesh['tp'])")
        parallelize_plan.src_data_rank = src_data_rank
        return parallelize_plan._apply(module, mesh)
    if not isinstance(parallelize_plan, dict):
        raise TypeError(f"Expect Union[ParallelStyle, Dict[str, ParallelStyle]] for parallelize_plan, "
                        f"{type(parallelize_plan)} found!")
    for path, style in parallelize_plan.items():
        if not path:
            raise ValueError("Expect module path to be non-empty, but got empty string!")
        atom, _, rest = path.partition(".")
        matched = [(name, child) for name, child in module.named_children() if fnmatch.fnmatch(name, atom)]
        if not matched:
            warnings.warn(f"Parallelize plan key '{path}' could not be resolved: no submodule matching token "
                          f"'{atom}' in module {type(module).__name__}, skipping this plan entry.", stacklevel=2)
        for _, child in matched:
            parallelize_module(child, mesh, {rest: style} if rest else style, src_data_rank=src_data_rank)
    return module
