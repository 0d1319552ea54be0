"""Primitive ops, each declared once as a record: the one place that says what a non-elementwise op is.

A record holds what the runtime needs to know of one primitive: its name; its shape rule, which turns the
inputs and attributes into the outputs' (shape, dtype) and raises the user's errors at the call; its kernel
per device type (the CPU kernel beside the CUDA slot, both entered into dispatch's one `(op, device type) ->
kernel` table); its backward, written in tidal ops (so gradients of any order are more tidal ops), and which
inputs and outputs that backward reads; and whether the kernel can fail on the values it reads (indices), so
that a deferred failure names the user's line. Calling the record runs the op: outputs made, the instruction
queued, the autograd node recorded. A public function is a front end: it parses torch's arguments into the
record's inputs and attributes. Composite ops call records (or other composites) and need none of their own.

Elementwise ops have their own records (`elementwise.ElemOp`: a scalar template, from which every kernel
and fusion follow) and derivatives (`derivatives.FORMULAS`).
"""
from __future__ import annotations

from typing import Callable, NamedTuple

from ...autograd.graph import needs_grad, record
from ...tensor import Tensor
from . import torch_function as _torch_function
from .kernel_launch import _kernels, launch, launch_into, register_kernel

DEVICE_TYPES = ("cpu", "cuda")  # the kernel slots every record shows


class Saved(NamedTuple):
    """One tensor a backward reads: input or output number `index`."""

    output: bool
    index: int


def saves(*names: str) -> tuple:
    """Saved entries from names such as "input0", "output1" (as a record declares them)."""
    out = []
    for name in names:
        kind, index = name.rstrip("0123456789"), name[len(name.rstrip("0123456789")):]
        if kind not in ("input", "output") or not index:
            raise ValueError(f"saves: expected names like 'input0' or 'output1', got {name!r}")
        out.append(Saved(kind == "output", int(index)))
    return tuple(out)


def _present(inputs: tuple) -> tuple:
    """The kernel's inputs of an optional record: its absent (None) inputs dropped."""
    return tuple([t for t in inputs if t is not None])


def _gather(saved: tuple, inputs: tuple, outs) -> tuple:
    """The tensors `saved` (Saved entries) names among a call's inputs and outputs."""
    out = ()
    for s in saved:  # (a loop: a comprehension's frame costs more for the usual one or two)
        out += ((outs if s.output else inputs)[s.index],)
    return out


PRIMITIVES: dict[str, "Primitive"] = {}  # name -> record, every primitive the library declares


class Primitive:
    """One non-elementwise op, declared once (see the module's docstring).

    shapes(inputs, attrs) -> [(shape, dtype), ...]: the outputs, in order; raises the op's errors.
    cpu / cuda: kernel(in_arrays, out_arrays, attrs), writing the outputs (None: no kernel on that device yet).
    backward(node, *grads) -> input gradients (one per input; None where none flows); `node.attrs` is
    `node_attrs(inputs, attrs)` when given, else `attrs`; `node.saved_tensors` are the `saved` tensors.
    grad_inputs: the input positions a gradient may flow to, ascending (None: all; the others, such as indices,
    get a None edge, and none after the last of them, as torch's); grad_outputs: the outputs the node is attached
    to, whose gradients `backward` receives (None: all).
    optional: None may stand for an absent input (a convolution's bias): the shape rule, the node (a None edge
    there, as torch's) and the backward see it in its place; the kernel gets the inputs present, in order.
    saved may also be a function saved(inputs, outs) -> the saved tensors (None in a place not saved): for an op
    that saves a tensor only for the gradients that need it, as torch does (matmul saves its second operand only
    when the first requires grad: a weight no gradient reads may then change in place before backward).
    inplace: a record of an in-place op, whose node takes the tensors `write` writes as its first inputs (self),
    then the kernel's inputs (all the kernel reads besides what it writes); `grad_inputs`, `saved`'s "inputN"
    and `node_attrs` see that whole tuple.
    sbp: the family of SBP signatures under which the op runs on global tensors' local shards ("reduction",
    "matmul", "concat", ...: comm/sbp_rules.py gives each family its rule; None: the op runs on broadcast inputs).
    A record with no kernel (shapes None, cpu None) declares the node of a composite whose gradient has a
    formula of its own (torch's derivatives.yaml entries for composite ops): the composite computes the
    outputs from other ops and calls `attach`.
    """

    __slots__ = ("name", "shapes", "backward", "saved", "node_attrs", "checks_data", "grad_inputs", "grad_outputs",
                 "optional", "saver", "inplace", "plain", "sbp")

    def __init__(self, name: str, shapes: Callable, *, cpu: Callable | None, cuda: Callable | None = None,
                 backward: Callable | None = None, saved: tuple | Callable = (), node_attrs: Callable | None = None,
                 checks_data: bool = False, grad_inputs: tuple | None = None, grad_outputs: tuple | None = None,
                 optional: bool = False, inplace: bool = False, sbp: str | None = None):
        if name in PRIMITIVES:
            raise ValueError(f"primitive {name!r} is declared twice")
        self.saver = saved if callable(saved) else None
        self.name, self.shapes, self.backward = name, shapes, backward
        self.saved = saves(*saved) if self.saver is None else ()
        self.node_attrs, self.checks_data = node_attrs, checks_data
        self.grad_inputs, self.grad_outputs, self.optional = grad_inputs, grad_outputs, optional
        self.inplace, self.sbp = inplace, sbp
        # a node that keeps the call's attrs and saves inputs or outputs by place (or nothing: a view's), on every
        # output, edged to every input: a view's, a composite's (hardtanh's, an activation's, a cast's)
        self.plain = not (self.saver or node_attrs or grad_inputs is not None or grad_outputs is not None)
        for device_type, kernel in (("cpu", cpu), ("cuda", cuda)):
            if kernel is not None:
                register_kernel(name, device_type)(kernel)
        PRIMITIVES[name] = self

    def kernels(self) -> dict:
        """The kernel per device type (None where the slot is empty)."""
        return {device_type: _kernels.get((self.name, device_type)) for device_type in DEVICE_TYPES}

    def __call__(self, inputs: tuple, attrs=None, node: str | None = None, *, checks_data: bool | None = None,
                 saved: tuple | None = None, device=None):
        """Run the op on `inputs` (tensors) with `attrs`: its output, or a tuple of its outputs. `node`: the
        autograd node's name where the public overload called decides it (`view_grads.overload("sum", 1)`
        for torch's `SumBackward1`), else the record's name. `checks_data` replaces the record's for this
        call: False where the front end has already checked the values the kernel reads (indices computed
        before the call), so no failure can be deferred and the issuing line is not looked up. `saved`
        replaces the declared saved tensors (an op with a variable number of inputs, such as x[i, j]).
        `device`: where the outputs go, for an op with no tensor inputs to take it from (a factory: arange)."""
        checks = self.checks_data if checks_data is None else checks_data
        outs = launch(self.name, _present(inputs) if self.optional else inputs, self.shapes(inputs, attrs), attrs,
                      device, checks_data=checks)
        if self.backward is not None:  # (a factory's record, with none, makes no further call)
            self.attach(inputs, outs, attrs, node, saved)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def write(self, inputs: tuple, outs: tuple, attrs=None, saved: tuple | None = None, node: str | None = None,
              record_first: bool = False, *, checks_data: bool | None = None) -> None:
        """Run the op in place, into `outs` (existing tensors: their versions are bumped), and record its node
        on them; `saved` replaces the declared saved tensors where the op overwrites one the backward reads
        (the caller then saves a copy made before the call); `node` as for a call. `record_first` (ops that
        save no output): the node is recorded before the write, so a saved input that is also the target
        keeps its version from before it and backward reports it modified, as torch's does. `checks_data` as
        for a call."""
        node_inputs = tuple(outs) + tuple(inputs) if self.inplace else inputs
        grad = self._needs_node(node_inputs)
        if grad and record_first:
            self._record(node_inputs, outs, attrs, saved, node)
        launch_into(self.name, self._kernel_inputs(inputs), outs, attrs,
                    self.checks_data if checks_data is None else checks_data)
        if grad and not record_first:
            self._record(node_inputs, outs, attrs, saved, node)

    def attach(self, inputs: tuple, outs: tuple, attrs=None, node: str | None = None,
               saved: tuple | None = None, node_attrs=None) -> None:
        """Record the op's node on `outs` that a composite computed in its place (a path that rounds as torch's
        does, or an op written from other ops whose gradient has a formula of its own), so that its gradient
        is the record's backward. `saved` replaces the declared saved tensors (intermediates the composite
        made, such as a softmax's row sums); `node_attrs`, the node's attrs a caller planned once (a
        reduction's, per signature), replaces the record's node_attrs(inputs, attrs)."""
        if _torch_function.TENSOR_LIKES_LIVE[0]:  # (vmap's batched values exist: one list read otherwise)
            _refuse_tensor_likes(self.name, inputs)
        # (views and composites attach a node on every call: a plain record's node is made without _record's
        # planning, with the saved tensors given or declared)
        if self.plain and node_attrs is None:
            if self.backward is not None and needs_grad(inputs):
                if saved is None:
                    saved = _gather(self.saved, inputs, outs) if self.saved else ()
                record(node or self.name, self.backward, inputs, outs, saved, attrs)
        elif self._needs_node(inputs):
            self._record(inputs, outs, attrs, saved, node, node_attrs)

    def queue(self, inputs: tuple, attrs=None, *, reduce=None) -> list:
        """Queue the op's instruction on `inputs` and return its outputs (a list), recording no node: for a
        record whose call records its node itself (a reduction, planned once per signature; `reduce` declares
        the reduction the VM may fuse, see vm/instruction.py)."""
        return launch(self.name, _present(inputs) if self.optional else inputs, self.shapes(inputs, attrs), attrs,
                      None, reduce, self.checks_data)

    def _needs_node(self, inputs: tuple) -> bool:
        # a backward, and an input it can send a gradient to that needs one (the edged tuple built only then)
        return self.backward is not None and needs_grad(inputs) and (
            self.grad_inputs is None or needs_grad(self._edged(inputs)))

    def _kernel_inputs(self, inputs: tuple) -> tuple:
        return _present(inputs) if self.optional else inputs

    def _edged(self, inputs: tuple) -> tuple:
        # the node's inputs: those a gradient may flow to, None in the other places, and none after the last of
        # them (torch lists no edge for an index input; the formula's gradients for those places are dropped)
        grad_inputs = self.grad_inputs
        if grad_inputs is None:
            return inputs
        present = [k for k in grad_inputs if k < len(inputs)]  # (a value scatter has no source input)
        n = present[-1] + 1 if present else 0
        if n == len(present):  # (the first n inputs: gather's, index_select's, getitem's)
            return inputs[:n]
        return tuple([t if k in grad_inputs else None for k, t in enumerate(inputs[:n])])

    def _record(self, inputs: tuple, outs, attrs, saved: tuple | None, node: str | None, node_attrs=None) -> None:
        # (`node_attrs`: given by a caller that planned them once)
        if saved is None:
            if self.saver is not None:
                saved = self.saver(inputs, outs)
            else:
                saved = _gather(self.saved, inputs, outs)
        if node_attrs is None:
            node_attrs = attrs if self.node_attrs is None else self.node_attrs(inputs, attrs)
        attached = tuple(outs) if self.grad_outputs is None else tuple([outs[k] for k in self.grad_outputs])
        edged = inputs if self.grad_inputs is None else self._edged(inputs)  # (no call on the hot path)
        record(node or self.name, self.backward, edged, attached, saved, node_attrs)

    def __repr__(self) -> str:
        slots = ", ".join(f"{k}={'yes' if v is not None else 'none'}" for k, v in self.kernels().items())
        return f"Primitive({self.name!r}, {slots}, backward={'yes' if self.backward else 'none'})"


def _refuse_tensor_likes(name: str, inputs: tuple) -> None:
    """A composite that computed its outputs from a tensor-like requiring grad (vmap's batched values) cannot attach
    its node to it, so the gradient would be lost without a word: fail instead, so that the caller's dispatch on
    failure (a batching rule) or vmap's per-sample loop takes the call."""
    for t in inputs:
        if t is not None and not isinstance(t, Tensor) and getattr(t, "requires_grad", False):
            raise TypeError(f"{name}: expected Tensor inputs to record the gradient, got {type(t).__name__}")
