"""torch.distributed.pipelining's automatic split: pipeline(module, mb_args, split_spec), SplitPoint, pipe_split, and
the Pipe whose build_stage makes this rank's PipelineStage.

The module is traced on one example microbatch by torch.export's tracer (tidal.fx: every module traced through, each
node noting the modules it was made in) into a flat graph of ATen ops, then cut: before the first node made inside
a `SplitPoint.BEGINNING` module, after the last one made inside a `SplitPoint.END` module, and at each pipe_split()
call. Each piece becomes a GraphModule holding the parameters and buffers it reads (the model's own tensors, under
their qualified names), `submod_pp_<k>` of the Pipe's split_gm. As the graph is traced, its shapes are the example
microbatch's. tidal's stages hand one tensor on to the next stage: a cut crossed by several values, or by a value
skipping a stage, is refused.
"""
from __future__ import annotations

import enum

from ..nn.module import Module
from .pipeline_stage import PipelineStage

__all__ = ["Pipe", "PipeInfo", "SplitPoint", "build_stage", "pipe_split", "pipeline"]


class SplitPoint(enum.Enum):
    """Where split_spec cuts at a module: before its first op or after its last."""
    BEGINNING = 1
    END = 2


def _split_marker() -> None:
    """The node pipe_split() leaves in a traced graph (does nothing when run)."""


def pipe_split() -> None:
    """Mark a cut between two pipeline stages inside a forward being traced by pipeline() (does nothing otherwise)."""
    from ..fx._export_trace import ExportTracer  # fx loads on first use (keeps import light)
    from ..fx.tracer import _TRACING  # fx loads on first use (keeps import light)
    if _TRACING and isinstance(_TRACING[-1], ExportTracer):
        _TRACING[-1].create_node("call_function", _split_marker, (), {})


class PipeInfo:
    """What build_stage needs to know of a Pipe: its graph, its number of stages, whether it computes a loss."""

    def __init__(self, graph, num_stages: int, has_loss_and_backward: bool) -> None:
        self.graph, self.num_stages, self.has_loss_and_backward = graph, num_stages, has_loss_and_backward


def build_stage(stage_module, stage_index: int, pipe_info: PipeInfo, device, group=None):
    """The PipelineStage running `stage_module` (a Pipe's get_stage_module) as stage `stage_index`."""
    return PipelineStage(stage_module, stage_index, pipe_info.num_stages, device, group=group)


class Pipe:
    """A module cut into pipeline stages: `split_gm` runs them in order (children submod_pp_<k>)."""

    def __init__(self, split_gm, num_stages: int) -> None:
        self.split_gm, self.num_stages = split_gm, num_stages

    def info(self) -> PipeInfo:
        """The pipe's graph and number of stages (the model computes no loss: schedules take loss_fn)."""
        return PipeInfo(self.split_gm.graph, self.num_stages, False)

    def get_stage_module(self, stage_idx: int):
        """Stage `stage_idx`'s GraphModule."""
        if not 0 <= stage_idx < self.num_stages:
            raise ValueError(f"Invalid stage index {stage_idx}!")
        return getattr(self.split_gm, f"submod_pp_{stage_idx}")

    def build_stage(self, stage_index: int, device, group=None):
        """This rank's PipelineStage: stage `stage_index`'s module."""
        return build_stage(self.get_stage_module(stage_index), stage_index, self.info(), device, group)

    def forward(self, *args, **kwargs):
        """Every stage in order, on this process."""
        return self.split_gm(*args, **kwargs)

    __call__ = forward


def _inside(node, path: str) -> bool:
    return any(p == path or p.startswith(path + ".") for p in node.meta.get("nn_module_stack", ()))


def _stages(nodes: list, split_spec: dict) -> list:
    """The stage of each node: cuts from split_spec and pipe_split markers."""
    cuts_before = set()
    for path, point in (split_spec or {}).items():
        inside = [k for k, n in enumerate(nodes) if _inside(n, path)]
        if not inside:
            raise ValueError(f"pipeline(): split_spec names {path!r}, which no op of the traced forward runs in")
        cuts_before.add(inside[0] if point is SplitPoint.BEGINNING else inside[-1] + 1)
    cuts_before |= {k for k, n in enumerate(nodes) if n.op == "call_function" and n.target is _split_marker}
    stage, out = 0, []
    for k, node in enumerate(nodes):
        if k in cuts_before and any(n.op not in ("placeholder", "get_attr") for n in nodes[:k]):
            stage += 1
        out.append(stage)
    return out


def pipeline(module, mb_args: tuple, mb_kwargs: dict | None = None, split_spec: dict | None = None,
             split_policy=None) -> Pipe:
    """`module` traced on one microbatch (mb_args, mb_kwargs) and cut into stages at split_spec's modules and the
    forward's pipe_split() calls."""
    from ..fx._export_trace import to_aten, trace_module  # fx loads on first use (keeps import light)
    from ..fx.graph import Graph  # fx loads on first use (keeps import light)
    from ..fx.graph_module import GraphModule  # fx loads on first use (keeps import light)
    if split_policy is not None:
        raise NotImplementedError("pipeline(): split_policy is not supported by tidal; give split_spec or call "
                                  "pipe_split() in the forward")
    graph, _, _, _, _ = trace_module(module, tuple(mb_args), dict(mb_kwargs or {}))
    to_aten(graph)
    nodes = [n for n in graph.nodes if n.op != "output"]
    stage_of = dict(zip(nodes, _stages(nodes, split_spec)))
    for node in nodes:  # (a parameter read goes with its first user)
        if node.op == "get_attr" and node.users:
            stage_of[node] = min(stage_of[u] for u in node.users if u.op != "output")
    output = graph.output_node()
    count = max(stage_of.values()) + 1
    subgraphs, envs, handed = [Graph() for _ in range(count)], [{} for _ in range(count)], [None] * count
    for node in nodes:
        if node.op == "call_function" and node.target is _split_marker:
            continue
        k = stage_of[node]
        for used in node.all_input_nodes:
            j = stage_of[used]
            if j == k or used in envs[k]:
                continue
            if used.op == "placeholder" or j != k - 1 or handed[k] not in (None, used):
                raise NotImplementedError(f"pipeline(): stage {k} uses {used.name} from stage {j}; tidal's stages "
                                          "pass one tensor to the next stage only")
            handed[k] = used
            envs[k][used] = subgraphs[k].placeholder(used.name)
        if node.op == "placeholder" and k > 0:
            continue
        envs[k][node] = subgraphs[k].node_copy(node, lambda n: envs[k][n])
    for k in range(count - 1):
        if handed[k + 1] is None:
            raise NotImplementedError(f"pipeline(): stage {k + 1} takes no value from stage {k}")
        subgraphs[k].output(envs[k][handed[k + 1]])
    results = output.args[0]
    last = envs[count - 1]
    subgraphs[-1].output(last[results[0]] if len(results) == 1 else tuple(last[r] for r in results))
    split, holder = Graph(), Module()
    current = [split.placeholder(n.name) for n in nodes if n.op == "placeholder"]
    for k, sub in enumerate(subgraphs):
        holder.add_module(f"submod_pp_{k}", GraphModule(module, sub))
        current = [split.call_module(f"submod_pp_{k}", tuple(current))]
    split.output(current[0])
    return Pipe(GraphModule(holder, split), count)
