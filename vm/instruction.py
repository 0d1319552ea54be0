"""Instructions: what the VM runs. A kernel, the views it reads and writes, attributes."""
from __future__ import annotations


class Instruction:
    """One unit of work for a stream.

    `kernel(ins, outs, attrs)` receives device arrays, never tensors. An elementwise
    instruction has `expr` (a template over `{0}`, `{1}`... for its inputs) instead of a
    kernel, so the fusion pass can merge it with its neighbours.

    A reduction the fusion pass may merge into the elementwise group computing its input
    declares `reduce = (axes, init, combine, finish)`: it reduces `ins[0]` over `axes` into
    its one output, each output element being `acc = init`, `acc = combine(acc, x)` over its
    elements, then `finish(acc, count)`; templates over `{0}`, `{1}` in the expression
    vocabulary. Its kernel stays valid on its own (sync mode, unfused windows).

    An instruction whose kernel checks its data (index ops) gets `origin`, the issuing site
    (`failure.issuing_site()`), so a deferred failure names the user's line. The slot is left
    unset on every other instruction (no cost on the hot path): read it with
    `getattr(ins, "origin", None)`.
    """

    __slots__ = ("name", "kernel", "ins", "outs", "attrs", "expr", "stream", "seq", "fused", "waits",
                 "reduce", "origin", "head")

    def __init__(self, name: str, kernel, ins: tuple, outs: tuple, attrs=None, expr: str | None = None,
                 stream: str = "compute", reduce: tuple | None = None, head: tuple | None = None):
        self.name = name
        self.kernel = kernel
        self.ins = ins        # Views, or plain scalars for elementwise inputs
        self.outs = outs      # Views
        self.attrs = attrs
        self.expr = expr
        self.stream = stream  # the name of the stream it runs on
        self.seq = 0
        self.fused = 1        # how many program instructions this one stands for
        self.waits = None     # (stream, seq) of writers on other streams to wait for
        self.reduce = reduce  # fusable reduction data (see above), or None
        self.head = head      # replay.head of this instruction, when the issuer made it once for many

    def __repr__(self) -> str:
        return f"<Instruction {self.name} seq={self.seq}>"


_new = object.__new__


def compute_instruction(name: str, kernel, ins: tuple, outs: tuple, attrs, expr: str | None, reduce: tuple | None,
                        head: tuple | None) -> Instruction:
    """`Instruction(name, kernel, ins, outs, attrs, expr, reduce=reduce, head=head)` on the compute stream, made without
    the constructor's call overhead: each op issues one. Keep in step with Instruction.__init__."""
    i = _new(Instruction)
    i.name = name
    i.kernel = kernel
    i.ins = ins
    i.outs = outs
    i.attrs = attrs
    i.expr = expr
    i.stream = "compute"
    i.seq = 0
    i.fused = 1
    i.waits = None
    i.reduce = reduce
    i.head = head
    return i
