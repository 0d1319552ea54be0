"""Backward replay: a backward pass over a graph seen before issues that pass's recorded instructions.

A training step builds the same graph every iteration, and its backward spends most of its time in Python: each
node's formula makes views, checks arguments and records nothing but VM instructions (about 20 us a node in a small
transformer, half the step's issue time). What those formulas issue depends only on what the *signature* below
describes: each node's formula (its code and closure), its attributes and saved non-tensor values, the layout, dtype
and device of every saved tensor with blobs numbered by first appearance (aliasing), the graph's edges, the leaves
and their .grad, and the few global modes ops read at issue time. So the second pass over a signature runs the
engine while recording, in place-independent form, what it pushes to the VM; later passes over that signature push
the recorded instructions onto the new graph's tensors directly and set the leaves' gradients as the recording did.

A recording is kept only when nothing in the pass could make two runs with one signature issue different work:
the formulas are tidal's own (a user's Function or hook runs as usual), no value was read on the host (a sync; the
index checks that read computed values at the call only check them, ops/scatter.computed_values), no random number
was drawn, every pushed instruction came from this thread onto the compute stream (not a collective), every tensor
it read was made by a recorded instruction or is one of the graph's own (saved, leaf, .grad, root gradient), and
every leaf's gradient is a new tensor over such an instruction's result or the old one written in place. Anything
unexpected while making a signature or recording leaves the pass on the engine. `TIDAL_BACKWARD_REPLAY=0` turns
replay off.
"""
from __future__ import annotations

import dataclasses
import os
import threading
import types
import weakref
from marshal import dumps as _dumps

import numpy as np

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..vm.blob import Blob, View
from ..vm.failure import issuing_site
from ..vm.instruction import compute_instruction
from ..vm.replay import layout_id
from .graph import AccumulateGrad
from . import hooks, lowered_replay, replay_places

enabled = os.environ.get("TIDAL_BACKWARD_REPLAY", "1") != "0"
MAX_RECORDINGS = 256  # distinct graphs kept, and instructions in all of them (memory stays bounded: a large model's
MAX_STEPS = 200_000   # pass is thousands of instructions); past either, nothing more is recorded
_MAX_SEEN = 4096
MISSES_BEFORE_BACKOFF, BACKOFF = 16, 8  # after this many passes over new graphs in a row, walk one pass in BACKOFF
_FORMULA_PACKAGES = ("tidal.ops.", "tidal.nn.", "tidal.autograd.view_inplace")  # formulas that only issue ops (not user
# code, not comm): view_inplace's CopySlices narrows and masks the gradient with ops
_LEAF_HOOKS = ("_hooks_list", "_post_accumulate_hooks")

_seen: dict = {}        # signature -> passes seen (until recorded)
_recordings: dict = {}  # signature -> Recording, or None where the graph's pass cannot be replayed
_counts = {"recorded": 0, "replayed": 0, "refused": 0}
_kept_steps = [0]  # instructions in all recordings


def stats() -> dict:
    """Backward passes recorded, replayed, and recorded in vain (not replayable) so far in this process."""
    return dict(_counts, kept=len(_recordings), **lowered_replay._counts)


def forget() -> None:
    """Drop every recording (the next passes over each graph record again)."""
    _recordings.clear()
    _seen.clear()
    _tries.clear()
    _misses[:] = [0, 0]
    _kept_steps[0] = 0


class NotReplayable(Exception):
    """Raised inside the signature walk or the recorder: this pass runs (and stays) on the engine."""


# -- the signature ------------------------------------------------------------------------------
_MAX_KEYED_ELEMENTS = 4096  # a host array among a node's values is told by its contents up to this size
_open = threading.local()  # this thread's `walk` (the one making a signature), the `functions` whose key it is
# making (a recursive local function's closure holds itself), and whether a key just `named_tensor`s


def _value_key(x):
    """A hashable key that tells apart whatever a formula could act on differently (1, 1.0 and True included)."""
    cls = x.__class__
    if cls in (int, float, bool, str, complex) or x is None:
        return (cls, x)
    if cls is tuple or cls is list:
        return (cls,) + tuple([_value_key(v) for v in x])
    if isinstance(x, Tensor):
        walk = getattr(_open, "walk", None)  # (a node's attributes and closures name tensors too: graph places)
        if walk is None:
            raise NotReplayable("a tensor among an instruction's attributes")
        _open.named_tensor = True
        return walk._place(x)
    if isinstance(x, np.generic):
        return (cls, x)
    if cls is np.ndarray and x.size <= _MAX_KEYED_ELEMENTS:  # (tables made from shapes: adaptive pools')
        return (cls, x.dtype.str, x.shape, x.tobytes())
    if isinstance(x, (View, Blob)) or hasattr(x, "__array_interface__"):
        raise NotReplayable("an array outside the saved tensors")
    if cls is slice:
        return (slice, _value_key(x.start), _value_key(x.stop), _value_key(x.step))
    if cls is types.FunctionType:
        if x.__closure__ is None and x.__defaults__ is None and x.__kwdefaults__ is None:
            return x.__code__  # (a lambda made per call is the same function every call)
        return _function_key(x)
    if isinstance(x, tuple):  # named tuples
        return (cls,) + tuple([_value_key(v) for v in x])
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return (cls,) + tuple([_value_key(getattr(x, f.name)) for f in dataclasses.fields(x)])
    if isinstance(x, dict):
        return (dict,) + tuple(sorted((k, _value_key(v)) for k, v in x.items()))
    try:
        hash(x)
    except TypeError:
        raise NotReplayable(f"an unhashable {cls.__name__} among a node's values") from None
    return (cls, x)  # dtypes, devices, enums, classes


def _function_key(fn) -> tuple:
    """A function by its code, defaults and closure: a lambda made per call is the same function every call."""
    open_now = getattr(_open, "functions", None)
    if open_now is None:
        open_now = _open.functions = set()
    if fn in open_now:
        return (fn.__code__,)
    open_now.add(fn)
    try:
        cells = fn.__closure__
        return (fn.__code__, _value_key(fn.__defaults__), _value_key(fn.__kwdefaults__),
                tuple([_value_key(c.cell_contents) for c in cells]) if cells else ())
    finally:
        open_now.discard(fn)


_formula_codes: dict = {}  # code object -> whether its module is one of _FORMULA_PACKAGES
_plain_formulas: dict = {}  # a formula without closure or defaults (one of tidal's) -> its key, its code


def _formula_key(fn):
    """A node's backward formula, which must be one of tidal's own (user code runs on the engine)."""
    if fn.__class__ is not types.FunctionType:  # (a bound method or a callable object may keep state of its own)
        raise NotReplayable(f"a backward formula that is a {fn.__class__.__name__}")
    code = fn.__code__
    ok = _formula_codes.get(code)
    if ok is None:
        ok = _formula_codes[code] = (fn.__module__ or "").startswith(_FORMULA_PACKAGES)
    if not ok:
        raise NotReplayable(f"a backward formula outside tidal's ops ({fn.__module__})")
    if fn.__closure__ is None and fn.__defaults__ is None and fn.__kwdefaults__ is None:
        if len(_plain_formulas) < _MAX_KEYS:
            _plain_formulas[fn] = code
        return code  # (a module-level function, or a lambda without closure: its code is its identity)
    return _function_key(fn)


_keys: dict = {}  # id(values) -> (values, key): an op plan's attrs are one tuple for all its calls (kept alive
# here, so the id is not reused)
_MAX_KEYS = 8192


def _values_key(x):
    """_value_key, through marshal where `x` holds plain values only (one C call; it tells 1, 1.0 and True apart),
    remembered for the very object."""
    if x is None:
        return None
    hit = _keys.get(id(x))
    if hit is not None and hit[0] is x:
        return hit[1]
    try:
        key = _dumps(x, 2)  # (version 2: no back-references, whose flags follow reference counts)
    except ValueError:
        _open.named_tensor = False
        key = _value_key(x)
        if _open.named_tensor:
            return key  # (its places are this walk's: not remembered)
    if isinstance(x, tuple):  # (tuples and named tuples only: a list or dict could change under the same identity)
        if len(_keys) >= _MAX_KEYS:
            _keys.clear()
        _keys[id(x)] = (x, key)
    return key


_statics: dict = {}  # id(attrs) -> (attrs, node class, formula, key): what a plan's nodes share, keyed once


def _static_key(node, attrs, fn) -> tuple:
    """A node's class, formula and attributes as one key, remembered by the attributes' identity where all three
    are fixed objects (an op plan's attrs tuple and a module-level formula)."""
    key = (node.__class__, _plain_formulas.get(fn) or _formula_key(fn), _values_key(attrs))
    if attrs is not None and fn in _plain_formulas:
        hit = _keys.get(id(attrs))
        if hit is not None and hit[0] is attrs:  # (its key holds no graph places: _values_key remembered it)
            if len(_statics) >= _MAX_KEYS:
                _statics.clear()
            _statics[id(attrs)] = (attrs, node.__class__, fn, key)
    return key


class _Key:
    """A signature with its hash made once (a tuple hashes all its items again at every dict lookup)."""

    __slots__ = ("items", "_hash")

    def __init__(self, items: tuple):
        self.items = items
        self._hash = hash(items)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other) -> bool:
        return other.__class__ is _Key and self._hash == other._hash and self.items == other.items


class _Walk:
    """The signature of a backward pass, and the graph's tensors in the order the signature names them."""

    __slots__ = ("key", "places", "nodes", "leaves", "blobs", "vm")

    def __init__(self, roots: list, starts: list):
        _open.walk = self
        try:
            self._walk(roots, starts)
        finally:
            _open.walk = None

    def _walk(self, roots: list, starts: list) -> None:
        self.places: list = []   # tensors, in order of first appearance
        self.blobs: dict = {}    # blob -> its number (blobs stay alive through the walk)
        self.nodes: list = []
        self.leaves: list = []   # AccumulateGrad nodes
        self.vm = None
        sig = [dt.get_default_dtype(), hooks.autocast_dtype("cpu"), hooks.autocast_dtype("cuda")]
        add = sig.append
        place = self._place
        number: dict = {}
        queue = self.nodes
        for node in starts:
            if node not in number:
                number[node] = len(number)
                queue.append(node)
        for (t, g), node in zip(roots, starts):
            add((number[node], t._output_nr if t.grad_fn is not None else 0, place(t),
                 None if g is None else place(g)))
        for node in queue:  # (grows while walked: breadth first)
            if node._freed or node._pre_hooks or node._hooks:
                raise NotReplayable("a freed or hooked node")
            if node.__class__ is AccumulateGrad:
                leaf = node.variable
                extra = leaf.__dict__
                if extra and any(extra.get(name) for name in _LEAF_HOOKS):
                    raise NotReplayable("a leaf with hooks")
                self.leaves.append(node)
                grad = leaf.grad
                add((place(leaf), None if grad is None else place(grad), extra.get("_grad_dtype", leaf.dtype)))
                continue
            if node._hooked:
                raise NotReplayable("saved-tensor hooks")
            saved = node._saved
            for k, version in node._versions:
                t = saved[k]
                if (t._vc or t._v.blob).version != version:
                    raise NotReplayable("a saved tensor modified in place")  # (the engine raises)
            attrs, fn = node.attrs, node.backward_fn
            hit = _statics.get(id(attrs))
            if hit is not None and hit[0] is attrs and hit[1] is node.__class__ and hit[2] is fn:
                add(hit[3])
            else:
                add(_static_key(node, attrs, fn))
            edges = []  # (loops, not comprehensions: a comprehension is a call of its own on Python 3.11)
            for e in node.next_functions:
                nxt = e[0]
                if nxt is None:
                    edges.append(e)
                else:
                    n = number.get(nxt)
                    if n is None:
                        n = number[nxt] = len(number)
                        queue.append(nxt)
                    edges.append((n, e[1]))
            add(tuple(edges))
            add(tuple(node._input_meta))
            if saved:
                key = None
                if not node._versions:  # (numbers and None alone: one C call where marshal takes them)
                    try:
                        key = _dumps(saved, 2)
                    except ValueError:
                        pass
                add(key if key is not None else tuple([place(x) if isinstance(x, Tensor) else _values_key(x)
                                                       for x in saved]))
            if node._saved_outputs or node.n_outputs != 1 or node.__dict__:
                add((node.n_outputs, node._saved_outputs, _value_key(node.__dict__) if node.__dict__ else None))
            add(None)  # (the node's end: entries of varying length stay apart)
        self.key = _Key(tuple(sig))

    def _place(self, t: Tensor) -> tuple:
        cls = t.__class__
        if cls is not Tensor and not cls.__module__.startswith("tidal.nn.") or t.is_global or t._vc is not None:
            raise NotReplayable(f"a {cls.__name__} in the graph")
        if t._vm is not self.vm:
            if self.vm is not None:
                raise NotReplayable("tensors of several devices")
            self.vm = t._vm
        v = t._v
        blob = v.blob
        n = self.blobs.get(blob)
        if n is None:
            n = self.blobs[blob] = len(self.blobs)
            self.places.append(t)
        return (n, blob.nbytes, v.shape, v.strides, v.offset, t.dtype, t._requires_grad)


# -- recording ----------------------------------------------------------------------------------
@dataclasses.dataclass
class Recording:
    """A pass's instructions in graph places, laid out for a quick replay (all on the compute stream). `steps`: per
    instruction (name, kernel, attrs, expr, reduce, head, whether it has an issuing site, the views it names first,
    its inputs, its outputs, the views and internal blobs to forget before pushing it). A view it names first is
    (number, place or -1, internal blob number, nbytes, shape, strides, offset, NumPy dtype, layout); inputs are
    view numbers, or (view number or None, scalar) pairs where an input is a scalar. `grads`: per leaf (in walk
    order) None, or its new .grad as (internal blob number, shape, strides, offset, NumPy dtype, layout, tidal
    dtype); `bumps`: (place, versions) written in place. A blob that ends as a leaf's .grad is never forgotten."""

    steps: list
    grads: list
    bumps: list
    n_views: int
    n_blobs: int
    lowered: object = None  # its lowered_replay.Lowered, once captured
    capture_tries: int = 0
    replays: int = 0


class _Recorder:
    """Called by VirtualMachine.push for every instruction while a pass records (under the VM's lock)."""

    def __init__(self, walk: _Walk):
        self.thread = threading.get_ident()
        self.external = {id(b): (n, weakref.ref(b)) for b, n in walk.blobs.items()}
        self.views: list = []
        self.view_no: dict = {}   # id(view) -> (number, weakref)
        self.blob_no: dict = {}   # id(blob) -> (reference, weakref)
        self.n_blobs = 0
        self.steps: list = []
        self.first_use: list = []  # per view number: the step that names it first
        self.last_use: list = []  # per view number: the step that last names it
        self.failed: str | None = None
        self.foreign = False  # another thread pushed meanwhile (the pass may be recorded later)

    def __call__(self, ins) -> None:
        if self.failed is not None:
            return
        try:
            if threading.get_ident() != self.thread:
                self.foreign = True
                raise NotReplayable("another thread pushed during the pass")
            if ins.stream != "compute":  # (a collective's instruction carries its call's place in the job's order)
                raise NotReplayable(f"an instruction on the {ins.stream} stream")
            step = len(self.steps)
            outs = tuple([self._view(v, step, True) for v in ins.outs])
            args = tuple([("v", self._view(v, step, False)) if v.__class__ is View else ("s", _scalar(v))
                          for v in ins.ins])
            _value_key(ins.attrs)  # (raises for tensors, arrays or views inside)
            self._kernel_closure(ins.kernel)
            self.steps.append([ins.name, ins.kernel, ins.attrs, ins.expr, ins.reduce, ins.head,
                               getattr(ins, "origin", None) is not None, args, outs])
        except Exception as exc:  # noqa: BLE001 - a push never fails for the recorder's sake
            self.failed = str(exc) or exc.__class__.__name__

    @staticmethod
    def _kernel_closure(kernel) -> None:
        # a kernel bound to run-time data (a closure, a partial, a bound method) would replay that data: only where
        # it holds no tensor or array (values derived from Python numbers are in the node's signature)
        held = [c.cell_contents for c in getattr(kernel, "__closure__", None) or ()]
        held += list(getattr(kernel, "args", ())) + list((getattr(kernel, "keywords", None) or {}).values())
        held.append(getattr(kernel, "__self__", None))
        if any(_is_data(x) for x in held):
            raise NotReplayable("a kernel bound to a tensor or an array")

    def _view(self, v: View, step: int, written: bool) -> int:
        hit = self.view_no.get(id(v))
        if hit is not None and hit[1]() is v:
            self.last_use[hit[0]] = step
            return hit[0]
        ref = self._blob(v.blob, written)
        n = len(self.views)
        self.views.append((ref, v.shape, v.strides, v.offset, v.dtype))
        self.first_use.append(step)
        self.last_use.append(step)
        self.view_no[id(v)] = (n, weakref.ref(v))
        return n

    def _blob(self, blob: Blob, written: bool) -> tuple:
        ext = self.external.get(id(blob))
        if ext is not None and ext[1]() is blob:
            return ("e", ext[0])
        hit = self.blob_no.get(id(blob))
        if hit is not None and hit[1]() is blob:
            return hit[0]
        if not written:
            raise NotReplayable("a tensor made outside the recorded instructions")
        ref = ("i", self.n_blobs, blob.nbytes)  # (not len(blob_no): a dead blob's id may come again)
        self.n_blobs += 1
        self.blob_no[id(blob)] = (ref, weakref.ref(blob))
        return ref

    def finish(self, walk: _Walk, grads_before: list, versions_before: list, place_blobs: list) -> Recording:
        """The recording of the pass that just ran (NotReplayable where it cannot be replayed)."""
        if self.failed is not None:
            raise NotReplayable(self.failed)
        grads = []
        taken = set()
        for node, before in zip(walk.leaves, grads_before):
            after = node.variable.grad
            if after is before:
                grads.append(None)
                continue
            if before is not None or after.__class__ is not Tensor or after._base is not None or after.__dict__:
                raise NotReplayable("a leaf's .grad replaced")
            v = after._v
            ref = self._blob(v.blob, False)
            if ref[0] != "i" or ref[1] in taken:
                raise NotReplayable("a leaf's .grad is one of the graph's tensors, or shares memory with another's")
            taken.add(ref[1])
            layout = layout_id(v.shape, v.strides, v.offset, v.dtype)
            grads.append((ref[1], v.shape, v.strides, v.offset, v.dtype, layout, after.dtype))
        bumps = []
        for place, (ref, before) in enumerate(zip(place_blobs, versions_before)):
            blob = ref()
            if blob is not None and blob.version != before:
                bumps.append((place, blob.version - before))
        # each view and internal blob is forgotten at the step that names it last, so that the fusion pass sees
        # the replayed pass's temporaries die as the engine's did (it counts references: vm/fusion._is_dead)
        kept = {g[0] for g in grads if g is not None}
        bumped = {place for place, _ in bumps}
        first: list = [[] for _ in self.steps]
        drop_views: list = [[] for _ in self.steps]
        drop_blobs: list = [[] for _ in self.steps]
        drop_places: list = [[] for _ in self.steps]
        blob_last: dict = {}
        place_last: dict = {}  # a graph tensor's blob is forgotten once its last view is made
        for n, ((ref, shape, strides, offset, np_dtype), born, last) in enumerate(
                zip(self.views, self.first_use, self.last_use)):
            place, blob, nbytes = (ref[1], -1, 0) if ref[0] == "e" else (-1, ref[1], ref[2])
            layout = layout_id(shape, strides, offset, np_dtype)
            first[born].append((n, place, blob, nbytes, shape, strides, offset, np_dtype, layout))
            drop_views[last].append(n)
            if blob >= 0 and blob not in kept:
                blob_last[blob] = max(blob_last.get(blob, 0), last)
            if place >= 0 and place not in bumped:
                place_last[place] = max(place_last.get(place, 0), born)
        for b, step in blob_last.items():
            drop_blobs[step].append(b)
        for place, step in place_last.items():
            drop_places[step].append(place)
        steps = []
        for k, (name, kernel, attrs, expr, reduce, head, has_origin, args, outs) in enumerate(self.steps):
            if all(a[0] == "v" for a in args):
                args = tuple([a[1] for a in args])
            else:
                args = tuple([(a[1], None) if a[0] == "v" else (None, a[1]) for a in args])
            forget = tuple(drop_blobs[k]) + tuple([self.n_blobs + p for p in drop_places[k]])
            steps.append((name, kernel, attrs, expr, reduce, head, has_origin, tuple(first[k]), args, outs,
                          tuple(drop_views[k]), forget))
        return Recording(steps, grads, bumps, len(self.views), self.n_blobs)


def _is_data(x) -> bool:
    """Whether `x` is a tensor or an array (a NumPy scalar is a number): data a replay must not reuse."""
    return isinstance(x, (Tensor, View, Blob)) or hasattr(x, "__array_interface__") and getattr(x, "ndim", 0) > 0


def _scalar(x):
    if _is_data(x):
        raise NotReplayable("an array among an instruction's inputs")
    return x


# -- the pass -----------------------------------------------------------------------------------
_misses = [0, 0]  # passes in a row that met no graph seen before, passes skipped since


def run(roots: list, starts: list, retain_graph: bool, engine) -> bool:
    """Replay or record the backward pass from `roots` ((tensor, gradient or None) pairs) whose nodes are `starts`;
    `engine()` runs it on the engine. Whether the pass is done (False: the caller runs the engine itself)."""
    if _misses[0] >= MISSES_BEFORE_BACKOFF:  # a program whose graphs never repeat (shapes that vary): only every
        _misses[1] += 1                        # BACKOFF-th pass pays for a signature
        if _misses[1] < BACKOFF:
            return False
        _misses[1] = 0
    try:
        walk = _Walk(roots, starts)
        key = walk.key
    except Exception:  # noqa: BLE001 - NotReplayable, an unhashable or unsortable value: the engine runs it
        return False
    if walk.vm is None:
        return False
    recording = _recordings.get(key, False)
    if recording is not False:
        _misses[0] = 0
        if recording is None:
            return False
        vm = walk.vm
        if not lowered_replay.usable(vm, walk.places):
            _replay(recording, walk, retain_graph)
        elif recording.lowered is not None:
            lowered_replay.replay(recording, walk, retain_graph)
        elif lowered_replay.worth_capturing(recording):
            capture = lowered_replay.begin(vm)
            try:
                _replay(recording, walk, retain_graph, capture)
            finally:
                lowered_replay.end(capture, recording)
        else:
            _replay(recording, walk, retain_graph)
        _counts["replayed"] += 1
        return True
    seen = _seen.get(key, 0) + 1
    _misses[0] = 0 if seen > 1 else _misses[0] + 1
    if seen < 2 or len(_recordings) >= MAX_RECORDINGS or _kept_steps[0] >= MAX_STEPS:
        if len(_seen) >= _MAX_SEEN:
            _seen.clear()
        _seen[key] = seen
        return False
    _seen.pop(key, None)
    recording = _record(walk, engine)
    if recording is _RETRY:  # another thread's work may have met the recording: record a later pass, a few times
        tries = _tries.get(key, 0) + 1
        if tries < MAX_TRIES:
            if len(_tries) >= _MAX_SEEN:
                _tries.clear()
            _tries[key] = tries
            _seen[key] = 1
            return True
        recording = None
    _tries.pop(key, None)
    _recordings[key] = recording
    _counts["recorded" if recording is not None else "refused"] += 1
    if recording is not None:
        _kept_steps[0] += len(recording.steps)
    return True


_RETRY = object()  # _record's answer where the pass met another thread's pushes, or a sync or draw (maybe another's)
_tries: dict = {}  # signature -> recordings met by _RETRY so far
MAX_TRIES = 3
_install = threading.Lock()  # one recording at a time on a VM (a second thread's pass runs on the engine)


def _record(walk: _Walk, engine):
    vm = walk.vm
    grads_before = [node.variable.grad for node in walk.leaves]
    versions_before = [t._v.blob.version for t in walk.places]
    place_blobs = [weakref.ref(t._v.blob) for t in walk.places]
    syncs, draws = vm.stats.syncs, hooks.default_generator._offset
    recorder = _Recorder(walk)
    walk.places = walk.nodes = walk.blobs = None  # (the engine frees each node's saved tensors as it runs it)
    with _install:
        busy = vm.recorder is not None
        if not busy:
            vm.recorder = recorder
    if busy:
        engine()
        return _RETRY
    try:
        engine()
    finally:
        vm.recorder = None
    if recorder.foreign:
        return _RETRY
    if vm.stats.syncs != syncs or hooks.default_generator._offset != draws:
        return _RETRY  # (the pass's own, or another thread's: MAX_TRIES passes tell)
    try:
        return recorder.finish(walk, grads_before, versions_before, place_blobs)
    except NotReplayable:
        return None


def _replay(rec: Recording, walk: _Walk, retain_graph: bool, capture=None) -> None:
    vm = walk.vm
    push = vm.push
    n_blobs = rec.n_blobs
    blobs = replay_places.begin(n_blobs, walk, retain_graph)
    views: list = [None] * rec.n_views
    origin = None
    for name, kernel, attrs, expr, reduce, head, has_origin, first, args, outs, drop_views, drop_blobs in rec.steps:
        replay_places.make_views(first, views, blobs, n_blobs, vm)
        if capture is not None:
            for entry in first:
                capture.view_made(views[entry[0]], entry)
        instr = compute_instruction(name, kernel, replay_places.inputs(args, views), tuple([views[n] for n in outs]),
                                    attrs, expr, reduce, head)
        if has_origin:
            if origin is None:
                origin = issuing_site()
            instr.origin = origin
        for n in drop_views:  # (the fusion pass counts references: the replay's own die at their last use)
            views[n] = None
        for n in drop_blobs:  # (internal blob numbers, then places after n_blobs)
            blobs[n] = None
        push(instr)
        instr = None
    replay_places.finish(rec, walk, blobs, vm)
