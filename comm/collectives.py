"""Collectives on CPU tensors, with torch.distributed's names and arguments.

Each call validates its arguments on the calling thread (PyTorch's errors), then queues one
instruction on the VM's "comm" stream: its kernel runs the data-plane algorithm of
`tidal.comm.ring` on the tensors' memory while the compute stream goes on. The VM orders an
instruction after the other streams' writers of its blobs; the collective declares the
tensors it only reads as written too, so compute that later overwrites them waits for it,
and itself waits for earlier readers of what it overwrites (see `_queue`). With
`async_op=True` the caller also gets a `Work` whose `wait()` blocks until the collective ran.
Before moving data, the kernel compares the call with the other ranks' (`check.agree`).
"""
from __future__ import annotations

import operator
import time
import warnings

import numpy as np

from ..autograd.grad_mode import no_grad
from ..tensor import Tensor
from ..tensor import dtype as dt
from ..vm import Instruction
from ..vm import all_vms
from . import check as _check
from . import ring
from .base import ReduceOp
from .process_group import ProcessGroup, Work, _seconds, default_group, get_group_rank

__all__ = ["ReduceOp", "all_reduce", "broadcast", "reduce", "all_gather", "all_gather_into_tensor",
           "reduce_scatter", "reduce_scatter_tensor", "all_to_all", "all_to_all_single", "send", "recv",
           "isend", "irecv"]

COMM_STREAM = "comm"


_UFUNCS = {ReduceOp.SUM: np.add, ReduceOp.AVG: np.add, ReduceOp.PRODUCT: np.multiply,
           ReduceOp.MIN: np.minimum, ReduceOp.MAX: np.maximum, ReduceOp.BAND: np.bitwise_and,
           ReduceOp.BOR: np.bitwise_or, ReduceOp.BXOR: np.bitwise_xor}
_BITWISE = (ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def _reduction(name: str, op, dtype: dt.dtype, size: int) -> tuple:
    """(combine, finish) for `op` on `dtype` over `size` ranks; errors as PyTorch's."""
    if not isinstance(op, ReduceOp):
        raise TypeError(f"{name}(): argument 'op' must be ReduceOp, not {type(op).__name__}")
    if op in _BITWISE and dtype.category == dt.FLOAT:
        raise RuntimeError(f"Cannot use ReduceOp.{op.name} with non-integral dtype")
    if op is ReduceOp.AVG and dtype is dt.bool_:
        raise RuntimeError("Cannot use ReduceOp.AVG with boolean inputs")
    ufunc = _UFUNCS[op]

    def combine(a, b, out):
        ufunc(a, b, out=out)
    combine.op = op  # for the order check's description of the call
    finish = None
    if op is ReduceOp.AVG:
        finish = _average_float(size) if dtype.category == dt.FLOAT else _average_int(size)
    return combine, finish


def _average_float(size: int):
    def finish(x):
        np.divide(x, size, out=x, casting="unsafe")
    return finish


def _average_int(size: int):
    def finish(x):  # integer AVG truncates toward zero, as NCCL's does
        negative_remainder = (x < 0) & (x % size != 0)
        np.floor_divide(x, size, out=x)
        x += negative_remainder.astype(x.dtype)
    return finish


# -- arguments ------------------------------------------------------------------------------------
def _tensor(name: str, arg: str, t) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"Invalid function argument. Expected parameter `{arg}` of type tidal.Tensor "
                        f"but got {type(t)} instead.")
    if t.device.type != "cpu":
        raise RuntimeError(f"{name}: tidal has no data plane for {t.device.type} tensors yet (CPU tensors only)")
    return t


def _tensor_list(name: str, arg: str, ts, size: int, kind: str) -> list:
    if not isinstance(ts, (list, tuple)) or not all(isinstance(t, Tensor) for t in ts):
        raise TypeError(f"Invalid function argument. Expected parameter `{arg}` of type List[tidal.Tensor] "
                        f"but got {type(ts)} instead.")
    if len(ts) != size:
        raise RuntimeError(f"{name}: invalid {kind} tensor list at index 0 (expected length {size}, got {len(ts)})")
    for t in ts:
        _tensor(name, arg, t)
    return list(ts)


def _same_dtype(tensors) -> None:
    first = tensors[0].dtype
    for t in tensors[1:]:
        if t.dtype is not first:
            raise ValueError(f"Invalid usage of tensors with different dtypes Found tidal.{first} and tidal.{t.dtype}")


def _same_numel(name: str, want: int, tensors, shape_of) -> None:
    for k, t in enumerate(tensors):
        if t.numel() != want:
            raise RuntimeError(f"{name}: invalid tensor size at index {k} (expected ({shape_of}), "
                               f"got ({', '.join(map(str, t.shape))}))")


def _member(name: str, group: ProcessGroup | None) -> ProcessGroup | None:
    """The group, or None (with PyTorch's warning) when this rank is not in it."""
    group = default_group() if group is None else group
    if not group.is_member:
        warnings.warn(f"Running {name} on global rank {default_group().rank()} which does not belong to the "
                      "given group.", stacklevel=3)
        return None
    return group


def _peer(name: str, group: ProcessGroup, global_rank, group_rank, what: str) -> int:
    """The group rank named by a global rank or a group rank (exactly one given)."""
    if (global_rank is None) == (group_rank is None):
        raise ValueError(f"{name}: give exactly one of {what} and group_{what}")
    if group_rank is None:
        global_rank = operator.index(global_rank)
        if group is default_group():
            if not 0 <= global_rank < group.size():
                raise RuntimeError(f"{name}: invalid root rank: {global_rank}")
            return global_rank
        return get_group_rank(group, global_rank)
    group_rank = operator.index(group_rank)
    if not 0 <= group_rank < group.size():
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return group_rank


# -- queueing on the comm stream ----------------------------------------------------------------------
class CommWork(Work):
    """The handle of a collective queued on the comm stream: `wait()` blocks until it has run."""

    def __init__(self, vm, stream, seq: int, failure: list, result):
        super().__init__()
        self._vm, self._stream, self._seq, self._failure, self._result = vm, stream, seq, failure, result

    def is_completed(self) -> bool:
        """Whether the collective has run (successfully or not)."""
        return self._stream.done >= self._seq

    def exception(self):
        """The collective's error, if it failed."""
        return self._failure[0] if self._failure else None

    def wait(self, timeout=None) -> bool:
        """Block until the collective has run; re-raise its error; True."""
        if timeout is None:
            self._stream.wait(self._seq)
        else:
            deadline = time.monotonic() + _seconds(timeout)
            while not self.is_completed():
                if time.monotonic() > deadline:
                    raise ring.CommTimeoutError(f"tidal.comm: Work.wait timed out after {_seconds(timeout):g} s")
                time.sleep(0.001)
        if self._failure:
            exc = self._failure[0]
            self._vm.forget_error(exc)  # reported here, not again at the next sync point
            raise exc
        return True


def _mesh(group: ProcessGroup, call: tuple | None) -> ring.Mesh:
    """The group's data-plane sockets, connected on first use (every member gets here together, in
    collective `call`: its key and description)."""
    mesh = group.state.get("ring")
    if mesh is None:
        control = group.control
        client = getattr(control, "_client", control)
        ranks = group.ranks

        def blocked(key, op):
            client.note_blocked(key, op)
            return client.mismatches.pop(key, None)

        def broken():
            return client.out_of_step.get(getattr(control, "_name", ""))
        mesh = ring.Mesh(group.rank(), group.size(), f"ring-{group.name}", control.set,
                         lambda key, peer: control.get(key, True, source=ranks[peer], call=call),
                         client.raise_if_aborted, timeout=client.timeout, left=lambda peer: ranks[peer] in client.left,
                         blocked=blocked, broken=broken)
        group.state["ring"] = mesh
        group.on_destroy(lambda: _close(mesh))
    return mesh


def _close(mesh: ring.Mesh) -> None:
    for vm in all_vms():  # collectives still queued may use the sockets
        stream = vm.streams.get(COMM_STREAM)
        if stream is not None:
            stream.wait(stream.pushed)
    mesh.close()


def _comm_kernel(ins, outs, attrs):
    algorithm, mesh, earlier, extra, failure, n_writes, call = attrs
    try:
        for stream, seq in earlier:
            stream.wait(seq)
        if call is not None:
            _check.agree(mesh, call)  # the ranks issued the same collective: no data has moved yet
        algorithm(mesh, [ring.flat(a) for a in ins], [ring.flat(a) for a in outs[:n_writes]], extra)
        mesh.settle(everything=True)  # the tensors' memory is free to change once we return
    except BaseException as exc:
        failure.append(exc)
        raise


def _earlier_readers(vm, writes) -> list:
    """(stream, seq) pairs to wait for before overwriting `writes`: the VM orders an instruction
    after the writers of its blobs but knows no readers, so a collective that overwrites memory
    the program has used waits for everything queued before it on the other streams."""
    if not any(t._v.blob.data is not None or t._v.blob.writer is not None for t in writes):
        return []
    return [(stream, stream.pushed) for stream in vm.streams.values()
            if stream.name != COMM_STREAM and stream.done < stream.pushed]


def _queue(name: str, group: ProcessGroup, algorithm, reads: list, writes: list, extra, async_op: bool,
           result=None):
    """Queue `algorithm(mesh, read_arrays, write_arrays, extra)` on the comm stream."""
    if _check.ENABLED:  # debug mode: the ranks agree on this call before any data moves
        _check.verify(name, group, reads, writes, extra)
    call = None
    if name not in ("send", "recv") and group.size() > 1:  # numbered with the group's control calls
        call = _check.call_header(name, group, reads, writes, extra, group.control.next_call())
    mesh = _mesh(group, call and (call[-1], _check.describe_call(call)))
    staged = {}  # id(non-contiguous tensor) -> (tensor, contiguous stand-in)
    with no_grad():
        def stage(t):
            if t.is_contiguous():
                return t
            if id(t) not in staged:
                staged[id(t)] = (t, t.contiguous())
            return staged[id(t)][1]
        reads, writes = [stage(t) for t in reads], [stage(t) for t in writes]
        written = {id(t._v.blob) for t in writes}
        read_only = [t for t in reads if id(t._v.blob) not in written]
        vm = (writes or reads)[0]._vm
        vm.flush()  # the work queued so far gets its sequence numbers
        earlier = _earlier_readers(vm, writes)
        for t in writes:
            t._v.blob.version += 1
        failure: list = []  # the kernel's exception, for the Work
        ins = Instruction(name, _comm_kernel, tuple(t._v for t in reads), tuple(t._v for t in writes + read_only),
                          (algorithm, mesh, earlier, extra, failure, len(writes), call), stream=COMM_STREAM)
        vm.push(ins)
        vm.flush()
        for target, stand_in in staged.values():
            if any(stand_in is w for w in writes):
                target.copy_(stand_in)  # waits for the collective (its writer) on the compute stream
    if async_op:
        return CommWork(vm, vm.stream(COMM_STREAM), ins.seq, failure, result)
    return None


# -- algorithms (run on the comm stream; arrays are flat) ----------------------------------------------
def _all_reduce(mesh, ins, outs, reduction):
    buf = outs[0]
    if buf.nbytes * (mesh.size - 1) < ring.DIRECT_BELOW:
        ring.direct_all_reduce(mesh, buf, *reduction)
        return
    bounds = ring.split_bounds(buf.shape[0], mesh.size)

    def chunk(c):
        return buf[bounds[c]:bounds[c + 1]]
    ring.ring_reduce_scatter(mesh, chunk, chunk, mesh.rank, *reduction, forward=True)
    ring.ring_all_gather(mesh, chunk, mesh.rank, own_sent=True)


def _all_gather(mesh, ins, outs, _):
    if len(outs) == 1:  # one output tensor holding every rank's chunk
        m = ins[0].shape[0]
        parts = [outs[0][c * m:(c + 1) * m] for c in range(mesh.size)]
    else:
        parts = outs
    np.copyto(parts[mesh.rank], ins[0])
    ring.ring_all_gather(mesh, parts.__getitem__, mesh.rank)


def _reduce_scatter(mesh, ins, outs, reduction):
    out = outs[0]
    m = out.shape[0]
    if len(ins) == 1:
        sources = [ins[0][c * m:(c + 1) * m] for c in range(mesh.size)]
    else:
        sources = ins
    work = np.empty((mesh.size, m), out.dtype)  # partial sums on their way around the ring

    def dst(c):
        return out if c == mesh.rank else work[c]
    ring.ring_reduce_scatter(mesh, sources.__getitem__, dst, mesh.rank, *reduction)


def _broadcast(mesh, ins, outs, root):
    ring.chain_broadcast(mesh, outs[0], root)


def _reduce(mesh, ins, outs, extra):
    root, reduction = extra
    ring.chain_reduce(mesh, outs[0] if outs else ins[0], root, *reduction)


def _all_to_all(mesh, ins, outs, splits):
    if splits is None:
        outgoing, incoming = ins, outs
    else:
        (in_bounds, out_bounds) = splits
        source = ins[0] if not np.shares_memory(ins[0], outs[0]) else ins[0].copy()
        outgoing = [source[in_bounds[p]:in_bounds[p + 1]] for p in range(mesh.size)]
        incoming = [outs[0][out_bounds[p]:out_bounds[p + 1]] for p in range(mesh.size)]
    ring.exchange(mesh, outgoing, incoming)


def _send(mesh, ins, outs, extra):
    peer, header = extra
    ring.send_to(mesh, ins[0], peer, header)


def _recv(mesh, ins, outs, extra):
    peer, verify, source = extra
    source.append(ring.recv_from(mesh, outs[0], peer, verify))


# -- the public functions --------------------------------------------------------------------------------
def all_reduce(tensor: Tensor, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
               async_op: bool = False):
    """Reduce `tensor` over the group's ranks with `op`; every rank gets the result in place."""
    _tensor("all_reduce", "tensor", tensor)
    group = _member("all_reduce", group)
    if group is None:
        return None
    reduction = _reduction("all_reduce", op, tensor.dtype, group.size())
    return _queue("all_reduce", group, _all_reduce, [tensor], [tensor], reduction, async_op, [tensor])


def broadcast(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, async_op: bool = False,
              group_src: int | None = None):
    """Copy `tensor` from rank `src` (global; or `group_src`) to every rank of the group, in place."""
    _tensor("broadcast", "tensor", tensor)
    group = _member("broadcast", group)
    if group is None:
        return None
    root = _peer("broadcast", group, src, group_src, "src")
    return _queue("broadcast", group, _broadcast, [tensor], [tensor], root, async_op, [tensor])


def reduce(tensor: Tensor, dst: int | None = None, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
           async_op: bool = False, group_dst: int | None = None):
    """Reduce `tensor` over the group with `op` into rank `dst`'s tensor (the others are left as they are)."""
    _tensor("reduce", "tensor", tensor)
    group = _member("reduce", group)
    if group is None:
        return None
    root = _peer("reduce", group, dst, group_dst, "dst")
    reduction = _reduction("reduce", op, tensor.dtype, group.size())
    writes = [tensor] if group.rank() == root else []  # the other ranks' tensors are only read
    return _queue("reduce", group, _reduce, [tensor], writes, (root, reduction), async_op, [tensor])


def all_gather(tensor_list: list, tensor: Tensor, group: ProcessGroup | None = None, async_op: bool = False):
    """Gather every rank's `tensor` into `tensor_list` (one tensor per rank, in rank order)."""
    _tensor("all_gather", "tensor", tensor)
    group = _member("all_gather", group)
    if group is None:
        return None
    outs = _tensor_list("all_gather", "tensor_list", tensor_list, group.size(), "output")
    _same_dtype([tensor] + outs)
    _same_numel("all_gather", tensor.numel(), outs, ", ".join(map(str, tensor.shape)))
    return _queue("all_gather", group, _all_gather, [tensor], outs, None, async_op, outs)


def all_gather_into_tensor(output_tensor: Tensor, input_tensor: Tensor, group: ProcessGroup | None = None,
                           async_op: bool = False):
    """Gather every rank's `input_tensor` into `output_tensor` (concatenated or stacked, in rank order)."""
    _tensor("all_gather_into_tensor", "output_tensor", output_tensor)
    _tensor("all_gather_into_tensor", "input_tensor", input_tensor)
    group = _member("all_gather_into_tensor", group)
    if group is None:
        return None
    _same_dtype([output_tensor, input_tensor])
    if output_tensor.numel() != input_tensor.numel() * group.size():
        raise RuntimeError(f"all_gather_into_tensor: the output must have world size ({group.size()}) times the "
                           f"input's elements ({input_tensor.numel() * group.size()}), got {output_tensor.numel()}")
    return _queue("all_gather_into_tensor", group, _all_gather, [input_tensor], [output_tensor], None, async_op,
                  [output_tensor])


def reduce_scatter(output: Tensor, input_list: list, op: ReduceOp = ReduceOp.SUM, group: ProcessGroup | None = None,
                   async_op: bool = False):
    """Reduce the ranks' `input_list[i]` with `op` into rank i's `output`."""
    _tensor("reduce_scatter", "output", output)
    group = _member("reduce_scatter", group)
    if group is None:
        return None
    ins = _tensor_list("reduce_scatter", "input_list", input_list, group.size(), "input")
    _same_dtype([output] + ins)
    _same_numel("reduce_scatter", output.numel(), ins, ", ".join(map(str, output.shape)))
    reduction = _reduction("reduce_scatter", op, output.dtype, group.size())
    return _queue("reduce_scatter", group, _reduce_scatter, ins, [output], reduction, async_op, [output])


def reduce_scatter_tensor(output: Tensor, input: Tensor, op: ReduceOp = ReduceOp.SUM,
                          group: ProcessGroup | None = None, async_op: bool = False):
    """Reduce the ranks' `input` with `op` and give rank i the i-th equal part, in `output`."""
    _tensor("reduce_scatter_tensor", "output", output)
    _tensor("reduce_scatter_tensor", "input", input)
    group = _member("reduce_scatter_tensor", group)
    if group is None:
        return None
    _same_dtype([output, input])
    if input.numel() != output.numel() * group.size():
        raise RuntimeError(f"reduce_scatter_tensor: the input must have world size ({group.size()}) times the "
                           f"output's elements ({output.numel() * group.size()}), got {input.numel()}")
    reduction = _reduction("reduce_scatter_tensor", op, output.dtype, group.size())
    return _queue("reduce_scatter_tensor", group, _reduce_scatter, [input], [output], reduction, async_op, [output])


def all_to_all(output_tensor_list: list, input_tensor_list: list, group: ProcessGroup | None = None,
               async_op: bool = False):
    """Send `input_tensor_list[i]` to rank i and receive rank i's tensor into `output_tensor_list[i]`."""
    group = _member("all_to_all", group)
    if group is None:
        return None
    outs = _tensor_list("all_to_all", "output_tensor_list", output_tensor_list, group.size(), "output")
    ins = _tensor_list("all_to_all", "input_tensor_list", input_tensor_list, group.size(), "input")
    _same_dtype(outs + ins)
    me = group.rank()
    if outs[me].numel() != ins[me].numel():
        raise RuntimeError(f"all_to_all: output tensor {me} has {outs[me].numel()} elements but this rank sends "
                           f"itself {ins[me].numel()}")
    return _queue("all_to_all", group, _all_to_all, ins, outs, None, async_op, outs)


def all_to_all_single(output: Tensor, input: Tensor, output_split_sizes: list | None = None,
                      input_split_sizes: list | None = None, group: ProcessGroup | None = None,
                      async_op: bool = False):
    """Split `input` along dim 0 (equally, or by `input_split_sizes`), send part i to rank i, and gather the
    parts received into `output` (split by `output_split_sizes`)."""
    _tensor("all_to_all_single", "output", output)
    _tensor("all_to_all_single", "input", input)
    group = _member("all_to_all_single", group)
    if group is None:
        return None
    _same_dtype([output, input])
    n = group.size()
    in_bounds = _split_bounds("input", input, input_split_sizes, n)
    out_bounds = _split_bounds("output", output, output_split_sizes, n)
    me = group.rank()
    if in_bounds[me + 1] - in_bounds[me] != out_bounds[me + 1] - out_bounds[me]:
        raise RuntimeError(f"all_to_all_single: this rank sends itself {in_bounds[me + 1] - in_bounds[me]} elements "
                           f"but expects {out_bounds[me + 1] - out_bounds[me]}")
    return _queue("all_to_all_single", group, _all_to_all, [input], [output], (in_bounds, out_bounds), async_op,
                  [output])


def _split_bounds(arg: str, t: Tensor, sizes, n: int) -> list:
    """Element offsets of the n parts of `t` along dim 0."""
    if t.dim() == 0:
        raise RuntimeError(f"all_to_all_single: the {arg} tensor must have at least one dimension")
    rows = t.shape[0]
    row = t.numel() // rows if rows else 0
    if sizes is None or len(sizes) == 0:
        if rows % n:
            raise RuntimeError(f"all_to_all_single: the {arg} tensor's first dimension ({rows}) must be divisible "
                               f"by the world size ({n})")
        sizes = [rows // n] * n
    sizes = [int(s) for s in sizes]
    if len(sizes) != n or any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise RuntimeError(f"all_to_all_single: {arg}_split_sizes {sizes} must be {n} non-negative sizes adding up "
                           f"to the {arg} tensor's first dimension ({rows})")
    bounds = [0]
    for s in sizes:
        bounds.append(bounds[-1] + s * row)
    return bounds


def _p2p(name: str, tensor: Tensor, group, peer, group_peer, what: str):
    _tensor(name, "tensor", tensor)
    group = _member(name, group)
    if group is None:
        return None, None
    if peer is None and group_peer is None:
        return group, None
    target = _peer(name, group, peer, group_peer, what)
    if target == group.rank():
        noun = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {noun} rank: {noun} rank should not be the same as the rank of the current "
                         "process.")
    return group, target


def isend(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_dst: int | None = None):
    """Send `tensor` to rank `dst` (global; or `group_dst`) without blocking; returns a Work."""
    return _send_queued("isend", tensor, dst, group, tag, group_dst, True)


def send(tensor: Tensor, dst: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Send `tensor` to rank `dst` (global; or `group_dst`)."""
    _send_queued("send", tensor, dst, group, tag, group_dst, False)


def _send_queued(name: str, tensor, dst, group, tag, group_dst, async_op: bool):
    group, peer = _p2p(name, tensor, group, dst, group_dst, "dst")
    if group is None:
        return None
    if peer is None:
        raise ValueError(f"{name}: give dst or group_dst")
    return _queue("send", group, _send, [tensor], [], (peer, _check.p2p_header(tensor, int(tag))), async_op,
                  [tensor])


def irecv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
          group_src: int | None = None):
    """Receive into `tensor` from rank `src` (global; or `group_src`; None: any rank) without blocking."""
    return _recv_queued("irecv", tensor, src, group, tag, group_src, True)[0]


def recv(tensor: Tensor, src: int | None = None, group: ProcessGroup | None = None, tag: int = 0,
         group_src: int | None = None) -> int:
    """Receive into `tensor` from rank `src` (global; or `group_src`; None: any rank); returns the sender's
    global rank (when no source is named, this waits for the message)."""
    any_source = src is None and group_src is None
    work, group, source = _recv_queued("recv", tensor, src, group, tag, group_src, any_source)
    if group is None:
        return -1
    if any_source:
        work.wait()
    return group.ranks[source[0]] if any_source else src if src is not None else group.ranks[group_src]


def _recv_queued(name: str, tensor, src, group, tag, group_src, async_op: bool) -> tuple:
    group, peer = _p2p(name, tensor, group, src, group_src, "src")
    if group is None:
        return None, None, None
    source: list = []  # the kernel appends the sender's group rank
    expected = _check.p2p_header(tensor, int(tag))

    def verify(sender, header):
        _check.verify_p2p(group.ranks, group.rank(), expected, sender, header)
    work = _queue("recv", group, _recv, [], [tensor], (peer, verify, source), async_op, [tensor])
    if work is not None:
        work.source_rank = lambda: group.ranks[source[0]] if source else -1
    return work, group, source
