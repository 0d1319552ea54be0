"""Manually split pipeline stages and their schedules: PipelineStage, ScheduleGPipe, Schedule1F1B.

Each rank holds one stage (stage k on group rank k) and the schedule runs one step of the pipeline: the batch is cut
into microbatches (tensor_split along dim 0); the first stage feeds them to its submodule and sends each output to
the next stage, which receives it as an input that requires grad; the last stage computes `loss_fn(output, target)`
per microbatch; backward sends each input's gradient back to the previous stage. GPipe runs every forward before
any backward; 1F1B starts backwards as soon as the last stage can (fewer activations alive). Parameter gradients
accumulate over the microbatches and are divided by their number (`scale_grads`), so a step's gradients are those
of the mean loss, as torch's schedules leave them. Activations travel with a small header (rank, sizes, dtype)
over tidal.comm's point-to-point send/recv, so microbatches of different sizes need no shape inference step.
pipeline_split.py cuts a traced module into stages automatically (pipeline, SplitPoint, pipe_split, Pipe).
"""
from __future__ import annotations

from .. import ops
from ..autograd import backward, no_grad
from ..tensor import Tensor
from ..tensor import dtype as dt

__all__ = ["PipelineStage", "PipelineScheduleSingle", "ScheduleGPipe", "Schedule1F1B"]

_HEADER = 10  # ndim, up to 8 sizes, dtype code
_DTYPES = ("float32", "float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool")


class PipelineStage:
    """One stage of a pipeline: `submodule` run as stage `stage_index` of `num_stages` on this rank (group rank
    `stage_index` of `group`, default the world)."""

    def __init__(self, submodule, stage_index: int, num_stages: int, device, input_args=None, output_args=None,
                 output_grads=None, input_grads=None, group=None, dw_builder=None, get_mesh=None) -> None:
        from ..comm.process_group import default_group  # comm loads on first use (keeps import light)
        if not 0 <= stage_index < num_stages:
            raise ValueError(f"Stage index {stage_index} is out of range of {num_stages}")
        self.submod, self.stage_index, self.num_stages, self.device = submodule, stage_index, num_stages, device
        self.group = default_group() if group is None else group
        if self.group.size() != num_stages:
            raise ValueError(f"PipelineStage: tidal runs one stage per rank: {num_stages} stages need a group of "
                             f"{num_stages} ranks, got {self.group.size()}")
        self.group_rank = self.group.rank()
        self._chunks: dict = {}  # microbatch -> (input, output, loss), until its backward
        self._losses: dict = {}  # microbatch -> loss (last stage), for the step's `losses`

    @property
    def is_first(self) -> bool:
        """Whether this is stage 0."""
        return self.stage_index == 0

    @property
    def is_last(self) -> bool:
        """Whether this is the last stage."""
        return self.stage_index == self.num_stages - 1

    # -- point to point -------------------------------------------------------------------------------------
    def _send(self, tensor, stage: int) -> None:
        from ..comm import collectives as C  # comm loads on first use (keeps import light)
        t = tensor.detach().contiguous()
        shape = list(t.shape)
        if len(shape) > _HEADER - 2:
            raise ValueError(f"PipelineStage: activations of more than {_HEADER - 2} dims are not supported")
        dtype = str(t.dtype).split(".")[-1]
        header = [len(shape)] + shape + [0] * (_HEADER - 2 - len(shape)) + [_DTYPES.index(dtype)]
        C.send(ops.tensor(header), group=self.group, group_dst=stage)
        C.send(t, group=self.group, group_dst=stage)

    def _recv(self, stage: int):
        from ..comm import collectives as C  # comm loads on first use (keeps import light)
        header = ops.zeros((_HEADER,), dtype=_dtype("int64"))
        C.recv(header, group=self.group, group_src=stage)
        values = header.tolist()
        shape, dtype = values[1:1 + values[0]], _dtype(_DTYPES[values[-1]])
        buffer = ops.empty(tuple(shape), dtype=dtype)
        C.recv(buffer, group=self.group, group_src=stage)
        return buffer

    # -- one microbatch -------------------------------------------------------------------------------------
    def forward_one_chunk(self, index: int, args: tuple, kwargs: dict, target=None, loss_fn=None):
        """Run microbatch `index` through the submodule (receiving its input from the previous stage unless this
        is the first); send the output on, or compute the loss on the last stage."""
        if self.is_first:
            inputs = args
        else:
            received = self._recv(self.stage_index - 1)
            if received.is_floating_point():
                received.requires_grad_(True)
            inputs, kwargs = (received,), {}
        output = self.submod(*inputs, **kwargs)
        loss = None
        if self.is_last:
            if loss_fn is not None and target is not None:
                loss = loss_fn(output, target)
        else:
            self._send(output, self.stage_index + 1)
        self._chunks[index] = (inputs, output, loss)
        if loss is not None:
            self._losses[index] = loss
        return output

    def backward_one_chunk(self, index: int) -> None:
        """Backward of microbatch `index` (from its loss, or from the gradient the next stage sends); send the
        input's gradient to the previous stage."""
        inputs, output, loss = self._chunks.pop(index)
        if self.is_last:
            if loss is None:
                raise RuntimeError("PipelineStage: the last stage needs a loss_fn and a target to run backward")
            backward(loss)
        else:
            grad = self._recv(self.stage_index + 1)
            backward(output, grad)
        if not self.is_first:
            (received,) = inputs
            grad_in = received.grad
            self._send(grad_in if grad_in is not None else ops.zeros_like(received), self.stage_index - 1)

    def scale_grads(self, divisor: int) -> None:
        """Divide every parameter gradient by `divisor` (the number of microbatches)."""
        with no_grad():
            for p in self.submod.parameters():
                if p.grad is not None:
                    p.grad.div_(divisor)


def _dtype(name: str):
    return dt.from_name(name)


def _split(value, n: int) -> list:
    if isinstance(value, Tensor):
        return list(value.tensor_split(n, 0))
    return [value] * n


class PipelineScheduleSingle:
    """A schedule for one stage per rank: `step(*args, target=, losses=)` runs one pipelined step."""

    def __init__(self, stage: PipelineStage, n_microbatches: int, loss_fn=None, args_chunk_spec=None,
                 kwargs_chunk_spec=None, output_merge_spec=None, scale_grads: bool = True) -> None:
        if args_chunk_spec is not None or kwargs_chunk_spec is not None or output_merge_spec is not None:
            raise NotImplementedError("pipelining: custom chunk and merge specs are not supported by tidal "
                                      "(microbatches are split and merged along dim 0)")
        self._stage, self._n_microbatches, self._loss_fn = stage, n_microbatches, loss_fn
        self.scale_grads = scale_grads

    def _order(self) -> list:
        raise NotImplementedError

    def step(self, *args, target=None, losses: list | None = None, return_outputs: bool = True, loss_kwargs=None,
             **kwargs):
        """One step over the microbatches of (args, kwargs) (first stage) and `target` (last stage); the last
        stage appends each microbatch's loss to `losses` and returns the merged output."""
        stage, n = self._stage, self._n_microbatches
        if stage.is_last and self._loss_fn is not None and target is None and losses is not None:
            raise RuntimeError("pipelining: the last stage's step needs target= to compute the losses")
        arg_chunks = [tuple(c) for c in zip(*[_split(a, n) for a in args])] if args else [()] * n
        kwarg_chunks = [dict(zip(kwargs, c)) for c in zip(*[_split(v, n) for v in kwargs.values()])] \
            if kwargs else [{}] * n
        targets = _split(target, n) if target is not None else [None] * n
        outputs = {}
        training = self._loss_fn is not None and (not stage.is_last or target is not None)
        for kind, i in self._order() if training else [("F", i) for i in range(n)]:
            if kind == "F":
                outputs[i] = stage.forward_one_chunk(i, arg_chunks[i], kwarg_chunks[i], targets[i], self._loss_fn)
            else:
                stage.backward_one_chunk(i)
        if training and self.scale_grads:
            stage.scale_grads(n)
        if stage.is_last and losses is not None and stage._losses:
            losses.extend(stage._losses[i].detach() for i in range(n))
        stage._chunks, stage._losses = {}, {}
        if not (stage.is_last and return_outputs):
            return None
        return ops.cat([outputs[i].detach() for i in range(n)])


class ScheduleGPipe(PipelineScheduleSingle):
    """GPipe: every microbatch's forward, then every backward."""

    def _order(self) -> list:
        n = self._n_microbatches
        return [("F", i) for i in range(n)] + [("B", i) for i in range(n)]


class Schedule1F1B(PipelineScheduleSingle):
    """1F1B: after a warm-up of forwards (fewer on later stages), one forward and one backward in turn."""

    def _order(self) -> list:
        n, stage = self._n_microbatches, self._stage
        warmup = min(n, stage.num_stages - stage.stage_index - 1)
        order = [("F", i) for i in range(warmup)]
        forward, backward = warmup, 0
        while backward < n:
            if forward < n:
                order.append(("F", forward))
                forward += 1
            order.append(("B", backward))
            backward += 1
        return order
