"""DDP's gradient reducer: parameters grouped into flat buckets, each bucket all-reduced
(averaged) on the comm stream as soon as backward has produced all its gradients.

A post-accumulate-grad hook on every parameter copies its fresh .grad into its slice of the
bucket; when a bucket is full it is launched, buckets strictly in order so that every rank
issues the same collectives in the same order. The copy into the bucket, the all-reduce and
the copy back are all VM instructions: the comm stream orders itself after the compute that
filled the bucket, and the copy back after the all-reduce, so nothing here blocks the Python
thread and backward's compute goes on while earlier buckets travel. A callback queued on the
autograd engine copies the averaged buckets back into .grad when backward finishes.
"""
from __future__ import annotations

from ... import ops
from ...autograd.engine import queue_callback
from ...autograd.grad_mode import no_grad
from ...autograd.graph import gradient_edge
from ...autograd.graph_walk import leaves_reached
from ...comm import collectives as C
from ...tensor import Tensor
from ...tensor import dtype as dt

DEFAULT_FIRST_BUCKET_BYTES = 1 << 20   # torch.distributed._DEFAULT_FIRST_BUCKET_BYTES

_UNUSED = ("Expected to have finished reduction in the prior iteration before starting a new one. This error "
           "indicates that your module has parameters that were not used in producing loss. ")
_ENABLE_FIND = ("You can enable unused parameter detection by passing the keyword argument "
                "`find_unused_parameters=True` to `torch.nn.parallel.DistributedDataParallel`, and by \n")
_FIND_ON = ("Since `find_unused_parameters=True` is enabled, this likely  means that not all `forward` outputs "
            "participate in computing loss. You can fix this by ")
_OUTPUTS = ("making sure all `forward` function outputs participate in calculating loss. \nIf you already have done "
            "the above, then the distributed data parallel module wasn't able to locate the output tensors in the "
            "return value of your module's `forward` function. Please include the loss function and the structure "
            "of the return value of `forward` of your module when reporting this issue (e.g. list, dict, "
            "iterable).\n")
_DEBUG = (" In addition, you can set the environment variable TORCH_DISTRIBUTED_DEBUG to either INFO or DETAIL to "
          "print out information about which particular parameters did not receive gradient on this rank as part "
          "of this error")
_TWICE = ("Expected to mark a variable ready only once. This error is caused by one of the following reasons: 1) Use "
          "of a module parameter outside the `forward` function. Please make sure model parameters are not shared "
          "across multiple concurrent forward-backward passes. 2) Reused parameters in multiple reentrant backward "
          "passes (e.g. several `checkpoint` functions wrapping the same part of the model). DDP does not support "
          "such use cases in default.\nParameter at index {index} has been marked as ready twice. This means that "
          "multiple autograd engine  hooks have fired for this particular parameter during this iteration.")


def bucket_assignment(params: list, limits: list) -> list:
    """Indices of `params` grouped into buckets, as torch's compute_bucket_assignment_by_size: in
    registration order, one running bucket per dtype and device, closed once it holds `limits[k]`
    bytes (k counts that key's closed buckets; the last limit repeats). Returned last bucket
    first, the order backward fills them; so a small first limit makes a small final bucket,
    which shortens the wait after backward's last gradient."""
    open_buckets: dict = {}   # (dtype, device) -> (indices, bytes, number closed)
    closed = []
    for index, p in enumerate(params):
        key = (p.dtype, str(p.device))
        indices, size, count = open_buckets.get(key, ([], 0, 0))
        indices.append(index)
        size += p.numel() * p.dtype.itemsize
        if size >= limits[min(count, len(limits) - 1)]:
            closed.append(indices)
            indices, size, count = [], 0, count + 1
        open_buckets[key] = (indices, size, count)
    closed.extend(indices for indices, _, _ in open_buckets.values() if indices)
    return sorted(closed, key=lambda b: -b[0])


class _Bucket:
    """One flat gradient buffer: the parameters it holds and a view of it per parameter."""

    def __init__(self, indices: list, params: list):
        self.indices = indices
        first = params[indices[0]]
        total = sum(params[i].numel() for i in indices)
        self.flat = ops.zeros((total,), dtype=first.dtype, device=first.device)
        self.views = []
        offset = 0
        for i in indices:
            n = params[i].numel()
            self.views.append(self.flat[offset:offset + n].view(params[i].shape))
            offset += n
        self.pending = len(indices)


def _find_tensors(obj) -> list:
    """The tensors in a forward's output (nested in tuples, lists and dicts)."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for item in obj for t in _find_tensors(item)]
    if isinstance(obj, dict):
        return [t for item in obj.values() for t in _find_tensors(item)]
    return []


def _reachable_leaves(outputs: list) -> set:
    """ids of the leaf tensors whose gradient backward from `outputs` would reach."""
    return {id(t) for t in leaves_reached([gradient_edge(t) for t in outputs if t.requires_grad])}


class Reducer:
    """Averages the gradients of `params` over `group` in buckets during backward."""

    def __init__(self, params: list, bucket_indices: list, group, find_unused_parameters: bool,
                 gradient_as_bucket_view: bool):
        self.params, self.group = params, group
        self.find_unused = find_unused_parameters
        self.as_bucket_view = gradient_as_bucket_view
        self.buckets = [_Bucket(indices, params) for indices in bucket_indices]
        self.slot = {}  # param index -> (bucket, position in the bucket)
        for bucket in self.buckets:
            for k, i in enumerate(bucket.indices):
                self.slot[i] = (bucket, k)
        self.expect_hooks = False       # a synced forward ran: this backward's hooks count
        self.require_finalize = False   # a synced forward ran and its reduction has not finished
        self.marked = [False] * len(params)
        self.locally_unused: list = []
        self.used_map = None            # find_unused_parameters: global use counts, being all-reduced
        self.next_bucket = 0
        self.callback_queued = False
        self.op, self.divisor = C.ReduceOp.AVG, None  # (join: SUM, then divided by the ranks still running)
        self.handles = [p.register_post_accumulate_grad_hook(self._hook_for(i)) for i, p in enumerate(params)]

    def _hook_for(self, index: int):
        def hook(param):
            self.autograd_hook(index)
        return hook

    def remove_hooks(self) -> None:
        """Unregister the gradient hooks (the DDP module is being dropped)."""
        for handle in self.handles:
            handle.remove()

    # -- one iteration -------------------------------------------------------------------------------
    def check_prior_reduction(self) -> None:
        """Raise torch's error when the previous synced backward did not reduce every parameter."""
        if not self.require_finalize:
            return
        missing = " ".join(str(i) for i, m in enumerate(self.marked) if not m)
        advice = _FIND_ON if self.find_unused else _ENABLE_FIND
        raise RuntimeError(f"{_UNUSED}{advice}{_OUTPUTS}Parameter indices which did not receive grad for rank "
                           f"{self.group.rank()}: {missing}\n{_DEBUG}")

    def prepare_for_backward(self, outputs) -> None:
        """Reset for the backward of a synced forward; find the unused parameters from `outputs`."""
        self.expect_hooks = self.require_finalize = True
        self.marked = [False] * len(self.params)
        for bucket in self.buckets:
            bucket.pending = len(bucket.indices)
        self.next_bucket = 0
        self.callback_queued = False
        self.used_map = None
        self.locally_unused = []
        if self.find_unused:
            reached = _reachable_leaves(_find_tensors(outputs))
            self.locally_unused = [i for i, p in enumerate(self.params) if id(p) not in reached]

    def autograd_hook(self, index: int) -> None:
        """Parameter `index` has its gradient for this backward."""
        if not self.expect_hooks:
            return  # no_sync, or a backward that no synced forward prepared
        if self.marked[index]:
            raise RuntimeError(_TWICE.format(index=index))
        if not self.callback_queued:
            self.callback_queued = True
            try:
                queue_callback(self.finalize)
            except RuntimeError:  # a hook outside the engine (backward(inputs=...)): finalize when full
                self.callback_queued = None
            if self.find_unused:
                self._share_usage()
                for unused in self.locally_unused:
                    self._mark_ready(unused)
        self._mark_ready(index)
        if self.callback_queued is None and self.next_bucket == len(self.buckets):
            self.finalize()

    def _share_usage(self) -> None:
        """Start summing, over ranks, which parameters each rank used (before any bucket, on every rank)."""
        unused = set(self.locally_unused)
        self.used_map = ops.tensor([0 if i in unused else 1 for i in range(len(self.params))], dtype=dt.int32)
        C.all_reduce(self.used_map, group=self.group, async_op=True)

    def _mark_ready(self, index: int) -> None:
        bucket, k = self.slot[index]
        param, view = self.params[index], bucket.views[k]
        grad = param.grad
        with no_grad():
            if grad is None:
                view.zero_()
            elif grad is not view:
                view.copy_(grad)
                if self.as_bucket_view:
                    param.grad = view
        self.marked[index] = True
        bucket.pending -= 1
        if bucket.pending == 0:
            self._launch_ready()

    def _launch_ready(self) -> None:
        while self.next_bucket < len(self.buckets) and self.buckets[self.next_bucket].pending == 0:
            bucket = self.buckets[self.next_bucket]
            C.all_reduce(bucket.flat, op=self.op, group=self.group, async_op=True)
            if self.divisor is not None:
                with no_grad():
                    bucket.flat.div_(self.divisor)
            self.next_bucket += 1

    def finalize(self) -> None:
        """Copy the averaged buckets back into .grad, once every bucket was launched (the end of
        backward); otherwise leave the iteration unfinished for the next forward to report."""
        if self.next_bucket < len(self.buckets):
            return
        self.expect_hooks = False
        globally_used = None
        if self.locally_unused:
            globally_used = self.used_map.tolist()  # waits for the small usage all-reduce
        unused = set(self.locally_unused)
        with no_grad():
            for bucket in self.buckets:
                for i, view in zip(bucket.indices, bucket.views):
                    param = self.params[i]
                    if i in unused and not globally_used[i]:
                        continue  # no rank used it: its .grad stays as it was (None stays None)
                    if param.grad is view:
                        continue
                    if param.grad is None:
                        param.grad = view if self.as_bucket_view else view.clone()
                    else:
                        param.grad.copy_(view)
        self.require_finalize = False


def _broadcast_coalesced(tensors: list, group, src: int = 0) -> None:
    """Overwrite `tensors` with group rank `src`'s values: one broadcast per dtype (of their
    concatenation), queued on the comm stream; the copies back wait for it on the VM."""
    by_dtype: dict = {}
    for t in tensors:
        by_dtype.setdefault(t.dtype, []).append(t)
    with no_grad():
        for same in by_dtype.values():
            flat = ops.cat([t.reshape(-1) for t in same])
            C.broadcast(flat, group=group, group_src=src)
            offset = 0
            for t in same:
                n = t.numel()
                t.copy_(flat[offset:offset + n].view(t.shape))
                offset += n
