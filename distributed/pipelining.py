"""torch.distributed.pipelining: pipeline stages and their schedules (pipeline_stage.py), and the automatic split of
a traced module into stages (pipeline_split.py)."""
from .pipeline_split import Pipe, PipeInfo, SplitPoint, build_stage, pipe_split, pipeline
from .pipeline_stage import PipelineScheduleSingle, PipelineStage, Schedule1F1B, ScheduleGPipe

__all__ = ["PipelineStage", "PipelineScheduleSingle", "ScheduleGPipe", "Schedule1F1B", "Pipe", "PipeInfo",
           "SplitPoint", "build_stage", "pipe_split", "pipeline"]
