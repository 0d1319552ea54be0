"""Graph nodes: what an op records so that its backward can run later.

An op that sees an input requiring grad calls `record(name, backward, inputs, outputs,
saved, attrs)`. `backward(node, *grad_outputs)` returns one gradient per input and is
written in tidal ops, so it runs on the VM, fuses, and can itself be differentiated.
"""
from __future__ import annotations

import collections
import contextlib
import itertools
import re
import types
import weakref

from ..tensor import Tensor
from ..tensor import dtype as dt
from ..tensor.dtype import FLOAT
from .grad_mode import is_grad_enabled, is_inference_mode_enabled
from .saved_names import SAVED_NAMES, saved_value

_seq = itertools.count()
_node_classes: dict = {}

FREED = ("Trying to backward through the graph a second time (or directly access saved tensors after they "
         "have already been freed). Saved intermediate values of the graph are freed when you call "
         ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
         "graph a second time or if you need to access saved tensors after calling backward.")


_NO_EDGE = (None, 0)
_dual_levels: list = []  # forward_ad's live dual levels; while empty, recording does no forward-AD work
_tangents_paused: list = []  # non-empty inside no_tangents(): no_grad then records nothing, tangents or not
_NO_PRE_HOOKS = types.MappingProxyType({})  # read-only: Node.pre_hooks makes a node its own table


INFERENCE_SAVED = ("Inference tensors cannot be saved for backward. Please do not use Tensors created in inference "
                   "mode in computation tracked by autograd. To work around this, you can make a clone to get a "
                   "normal tensor and use it in autograd, or use `torch.no_grad()` instead of "
                   "`torch.inference_mode()`.")


class Node:
    """A recorded op: its backward, saved tensors, and the nodes its inputs came from."""

    # `_freed` and `_saved_outputs` are slots, set by every node: written later (by backward, by ops that
    # save their output) they would otherwise give the node an instance dict each
    __slots__ = ("next_functions", "backward_fn", "attrs", "_saved", "_versions", "_input_meta", "seq",
                 "n_outputs", "_freed", "_saved_outputs", "__weakref__", "__dict__")
    # class-level until set on a node (recording then writes three fields fewer): hook tables are
    # shared empty ones until a hook is registered (most nodes never get one)
    _pre_hooks = _NO_PRE_HOOKS  # output index -> hooks on that output's grad (tensor hooks)
    _hooks = ()
    _hooked = False  # True on saved_hooks' twin classes: the node packs what it saves

    def __init__(self, backward_fn, inputs: tuple, saved: tuple, attrs, n_outputs: int, meta=None, nexts=None):
        self.backward_fn = backward_fn
        self.attrs = attrs
        self.seq = next(_seq)
        self.n_outputs = n_outputs
        self._freed = False
        self._saved_outputs = ()  # (place in _saved, output number) of this node's own outputs it saved (record)
        if nexts is None:  # (a caller that made the edges while looking at its inputs passes them, with meta)
            self._edges(inputs, meta)
        else:
            self.next_functions = nexts
            self._input_meta = meta
        self._saved = saved
        versions = []  # (place in saved, version) of each saved tensor: backward checks these alone
        k = -1
        for t in saved:
            k += 1
            if t is None or not isinstance(t, Tensor):
                continue
            if t._inference:  # class default False: one attribute read per saved tensor
                raise RuntimeError(INFERENCE_SAVED)
            versions.append((k, (t._vc or t._v.blob).version))
        self._versions = tuple(versions)

    def _edges(self, inputs: tuple, meta) -> None:
        # each input's edge (the node its gradient flows into, and which output) and (shape, dtype)
        nexts = []  # (loops, not comprehensions: a comprehension is a call of its own on Python 3.11)
        own_meta = meta is None  # (a caller whose plan fixes its inputs' shapes and dtypes passes them)
        if own_meta:
            meta = []
        for t in inputs:
            if isinstance(t, Tensor) and t._requires_grad:
                fn = t.grad_fn
                nexts.append((fn, t._output_nr) if fn is not None else (gradient_edge(t), 0))
                if own_meta:
                    meta.append((t._v.shape, t.dtype))
            else:
                nexts.append(_NO_EDGE)
                if own_meta:
                    meta.append(None)
        self.next_functions = tuple(nexts)
        self._input_meta = meta  # per input (shape, dtype), read for the inputs with an edge

    def name(self) -> str:
        """The node's class name, e.g. 'MulBackward0'."""
        return type(self).__name__

    @property
    def saved_tensors(self) -> tuple:
        """The tensors saved at forward time; errors if freed or modified in place since."""
        if self._freed:
            raise RuntimeError(FREED)
        saved = self._saved if not self._saved_outputs else self.outputs_restored(self._saved)
        for k, v in self._versions:
            t = saved[k]
            # (the counter read directly: a saved inference tensor was refused when the node was made)
            if (t._vc or t._v.blob).version != v:
                kind = dt.legacy_type_name(t.dtype)
                # torch names the tensor's node without "Backward" and a 0 overload (AddBackward0: Add, EluBackward1:
                # Elu1), and nothing for a leaf; a view written since it was made has a regenerated node (AsStrided)
                fn = t.grad_fn
                made = "" if fn is None else ", which is output 0 of AsStrided," if t._base is not None else \
                    f", which is output {t._output_nr} of {re.sub(r'Backward0?(?=[0-9]*$)', '', fn.name())},"
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by an inplace "
                    f"operation: [torch.{kind} {list(t.shape)}]{made} is at version {t._version}; expected "
                    f"version {v} instead. Hint: enable anomaly detection to find the operation that failed to "
                    "compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
        return saved

    def outputs_restored(self, saved: tuple) -> tuple:
        """`saved` with the node's saved outputs given back as its outputs: it keeps them without their
        grad_fn (record: no out -> node -> out cycle), and a create_graph backward differentiates through them."""
        saved = list(saved)
        for k, nr in self._saved_outputs:
            t = saved[k]
            if isinstance(t, Tensor):
                t = saved[k] = output_alias(t)
                t._requires_grad = True
                t.grad_fn = self
                if nr:
                    t._output_nr = nr
        return tuple(saved)

    def save_output(self, place: int, out: Tensor, output_nr: int = 0) -> None:
        """Save `out`, this node's output `output_nr`, at `place` of its saved tensors, at its current version
        (ops that save their result once it is written)."""
        kept = out if self._hooked else output_alias(out)  # (see _cut_output_cycles)
        saved = list(self._saved)
        saved[place] = kept
        self._saved = tuple(saved)
        # (the counter read directly: an output recorded in grad mode is never an inference tensor)
        self._versions = _versioned(self._versions, place, (out._vc or out._v.blob).version)
        mark = (place, output_nr)
        if not self._saved_outputs:
            self._saved_outputs = (mark,)
        elif mark not in self._saved_outputs:
            self._saved_outputs = self._saved_outputs + (mark,)

    def release(self) -> None:
        """Free saved tensors (after a backward without retain_graph). A node that saved none can run again,
        as torch's: its error is about freed saved values (`(x + 1).sum()` may backward twice)."""
        for s in _SAVED.__get__(self):  # (the slot: saved_hooks' property over it would unpack)
            if s is not None:
                self._saved = ()
                self._freed = True
                return

    def register_hook(self, fn) -> RemovableHandle:
        """Call `fn(grad_inputs, grad_outputs)` after this node's backward runs; a returned tuple replaces
        grad_inputs."""
        if not self._hooks:
            self._hooks = []
        self._hooks.append(fn)
        return RemovableHandle(self._hooks, fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Call `fn(grad_outputs)` before this node's backward runs; a returned tuple replaces grad_outputs."""
        hooks = self.pre_hooks(-1)
        hooks.append(fn)
        return RemovableHandle(hooks, fn)

    @property
    def metadata(self) -> dict:
        """A dict kept on the node for the user's own data (torch's Node.metadata)."""
        meta = self.__dict__.get("_metadata")
        if meta is None:
            meta = self.__dict__["_metadata"] = {}
        return meta

    def pre_hooks(self, output: int) -> list:
        """The (mutable) list of hooks on output `output`'s gradient (-1: on all of them)."""
        if self._pre_hooks is _NO_PRE_HOOKS:
            self._pre_hooks = {}
        return self._pre_hooks.setdefault(output, [])

    def __call__(self, *grads):
        return self.backward_fn(self, *grads)

    def __repr__(self) -> str:
        return f"<{self.name()} object at {hex(id(self))}>"


_SAVED = Node.__dict__["_saved"]  # Node's slot for its saved tensors


def _saved_property(name: str) -> property:
    def get(node):
        return saved_value(node, name)
    return property(get, doc=f"torch's grad_fn._saved_{name}: the value saved under that name (saved_names.py)")


# torch's grad_fn._saved_<name>, as properties rather than a __getattr__: a class with __getattr__ loses
# CPython's specialized attribute reads, and the backward engine reads a dozen attributes of every node
for _name in SAVED_NAMES:
    setattr(Node, f"_saved_{_name}", _saved_property(_name))


def _versioned(versions: tuple, place: int, version: int) -> tuple:
    """A node's (place, version) pairs with `place` now at `version`, in place order."""
    if not versions or versions[0][0] > place:  # the common case: an op saving its output (place 0)
        return ((place, version),) + versions
    return tuple(sorted([(k, v) for k, v in versions if k != place] + [(place, version)]))


class RemovableHandle:
    """Returned by hook registrations: `.remove()` unregisters the hook."""

    def __init__(self, hooks: list, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self) -> None:
        """Unregister the hook."""
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)

    def __enter__(self) -> "RemovableHandle":
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class AccumulateGrad(Node):
    """The node that adds a gradient into a leaf tensor's `.grad`."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor):  # (Node's fields set directly: one is made per leaf and graph)
        self.backward_fn = self.attrs = None
        self.seq = next(_seq)
        self.n_outputs = 1
        self._freed = False
        self._saved_outputs = ()
        self.next_functions = self._saved = self._versions = ()
        self._input_meta = []
        self.variable = variable

    def name(self) -> str:
        """torch's name for the leaf accumulator."""
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {hex(id(self))}>"


def gradient_edge(t: Tensor) -> Node:
    """The node a gradient for `t` flows into: its grad_fn, or its leaf accumulator."""
    if t.grad_fn is not None:
        return t.grad_fn
    if "_nograd_view" in t.__dict__:  # a view made under no_grad (ops/views.make_view): torch has no edge
        return None
    ref = t.__dict__.get("_grad_acc")
    acc = ref() if ref is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        t.__dict__["_grad_acc"] = weakref.ref(acc)
    return acc


GradientEdge = collections.namedtuple("GradientEdge", ("node", "output_nr", "ownership_token"), defaults=(None,))
GradientEdge.__doc__ = "A node of the graph and which of its outputs a gradient flows into (torch's GradientEdge)."


def get_gradient_edge(tensor: Tensor) -> GradientEdge:
    """The edge `tensor`'s gradient flows into: (its grad_fn or leaf accumulator, its output index)."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require "
                           "gradients")
    return GradientEdge(gradient_edge(tensor), tensor._output_nr if tensor.grad_fn is not None else 0)


def increment_version(tensor) -> None:
    """Bump the version counter of `tensor` (or of each tensor in an iterable), as an in-place write does."""
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        (t._vc or t._v.blob).version += 1


def node_class(name: str) -> type:
    """The Node subclass named like PyTorch's grad_fn classes: 'add' -> AddBackward0; each part title-cased
    as torch's codegen does ('log1p' -> Log1PBackward0, 'max_pool2d' -> MaxPool2DBackward0)."""
    cls = _node_classes.get(name)
    if cls is None:
        camel = "".join(p.title() for p in name.strip("_").split("_"))
        cls = _node_classes[name] = type(f"{camel}Backward0", (Node,), {"__slots__": ()})
    return cls


def record(name: str | type, backward_fn, inputs: tuple, outputs, saved: tuple = (), attrs=None,
           meta: tuple | None = None, saves_outputs: bool = True) -> Node:
    """Attach a new node to `outputs` (which then require grad); `name` may be its node_class already;
    `meta`: each input's (shape, dtype) (None for non-tensors), when the caller has it made once;
    `saves_outputs=False`: the caller never passes an output among `saved` (it uses Node.save_output)."""
    node = (name if name.__class__ is type else node_class(name))(backward_fn, inputs, saved, attrs, len(outputs),
                                                                   meta)
    if saved and saves_outputs:  # an output saved as it is would hold its own node (out -> grad_fn -> saved ->
        _cut_output_cycles(node, saved, outputs)  # out): a cycle that only the cyclic garbage collector frees
    if _dual_levels:
        _carry_duals(node, inputs, outputs)
    k = 0
    for out in outputs:
        if out.dtype.category >= FLOAT:  # (is_floating_point, without its property call)
            out._requires_grad = True
            out.grad_fn = node
            if k:
                out._output_nr = k
            elif out._output_nr:  # (an in-place write into a later output of another node, var_mean's mean: it is
                del out._output_nr  # this node's first now; backward indexed the old number past the node's outputs)
        k += 1
    return node


def _cut_output_cycles(node: Node, saved: tuple, outputs) -> None:
    # the node keeps grad-less aliases of the outputs it saved (Node.outputs_restored gives them back); under
    # saved_tensors_hooks the pack hook has seen the outputs themselves, as torch's does, and keeps its own
    kept = None
    for k, t in enumerate(saved):
        for j, out in enumerate(outputs):
            if t is out:
                kept = ((k, j),) if kept is None else kept + ((k, j),)
    if kept is not None:
        node._saved_outputs = kept
        if not node._hooked:
            places = [k for k, _ in kept]
            node._saved = tuple([output_alias(t) if k in places else t for k, t in enumerate(saved)])


def output_alias(t: Tensor) -> Tensor:
    """`t`'s values and version counter without its autograd history: what a node saves of its own output."""
    alias = Tensor._make(t._v, t.dtype, t.device, t._vm)
    if t._vc is not None:  # (`x.data`'s own counter)
        alias._vc = t._vc
    return alias


def needs_grad(args) -> bool:
    """Whether any tensor among `args` requires grad while grad mode is on (or, under no_grad, whether one
    carries a forward-AD tangent: torch keeps computing tangents there)."""
    for a in args:
        if isinstance(a, Tensor) and a._requires_grad:
            return is_grad_enabled() or (bool(_dual_levels) and _dual_in(args))
    return False


def _live_duals(t) -> tuple:
    """The live dual levels whose tangent tensor `t` carries (a flag make_dual sets and record copies)."""
    levels = t.__dict__.get("_fw_levels") if isinstance(t, Tensor) else None
    return tuple([lvl for lvl in levels if lvl.alive]) if levels else ()


def _dual_in(args) -> bool:
    return not _tangents_paused and not is_inference_mode_enabled() and any(_live_duals(a) for a in args)


@contextlib.contextmanager
def no_tangents():
    """For tidal's own writes under no_grad (the backward engine, copies into views): record nothing even
    for tensors that carry forward-AD tangents."""
    _tangents_paused.append(True)
    try:
        yield
    finally:
        _tangents_paused.pop()


def _carry_duals(node: Node, inputs: tuple, outputs) -> None:
    """record's forward-AD step, called only while a dual level is live: autograd.forward_ad (always loaded with
    autograd) installs its own here (`_carry_tangents`: the levels' flags, the eager tangents of jvp_rules, the
    edges kept under no_grad); nothing can call this one, as no level exists before forward_ad loads."""
    raise AssertionError("autograd.forward_ad installs graph._carry_duals")
