"""torch.cuda.graphs: the names exist so scripts import, and each use raises, naming what is missing.

tidal's VM records windows of instructions and replays them (vm/replay.py: the fusion result of a window
seen before), but its CUDA device has no stream capture to turn such a window into a CUDA graph, nor the
static input/output buffers a graph replay writes; until it does, capturing silently as eager would be
wrong.
"""
from __future__ import annotations

__all__ = ["CUDAGraph", "graph", "make_graphed_callables", "graph_pool_handle", "is_current_stream_capturing"]


def _missing(name: str) -> NotImplementedError:
    return NotImplementedError(f"torch.cuda.{name}: tidal's CUDA device has no CUDA graph capture yet (its VM "
                               "replays recorded instruction windows, but there is no CUDA stream capture or "
                               "static-buffer graph replay); run the step eagerly instead.")


class CUDAGraph:
    """torch.cuda.CUDAGraph: raises NotImplementedError (no CUDA graph capture in tidal yet)."""

    def __init__(self, *args, **kwargs) -> None:
        raise _missing("CUDAGraph")


class graph:
    """torch.cuda.graph (capture context manager): raises NotImplementedError (no CUDA graph capture yet)."""

    def __init__(self, cuda_graph, pool=None, stream=None, capture_error_mode: str = "global") -> None:
        raise _missing("graph")


def make_graphed_callables(callables, sample_args, num_warmup_iters: int = 3, allow_unused_input: bool = False,
                           pool=None):
    """torch.cuda.make_graphed_callables: raises NotImplementedError (no CUDA graph capture yet)."""
    raise _missing("make_graphed_callables")


def graph_pool_handle():
    """torch.cuda.graph_pool_handle: raises NotImplementedError (no CUDA graph capture yet)."""
    raise _missing("graph_pool_handle")


def is_current_stream_capturing() -> bool:
    """False: tidal never captures a stream."""
    return False
