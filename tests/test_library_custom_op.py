"""torch.library's Python custom operators (tidal.compat.library) against torch's: inferred schemas, calls,
autograd through register_autograd (and torch's error without it), per-device kernels, fake implementations
on meta tensors, opcheck, and torch.ops.<ns>.<name>."""

import itertools
from typing import Optional, Sequence

import numpy as np
import pytest
import torch
import torch.library
from torch.testing._internal.optests.generate_tests import OpCheckError as TorchOpCheckError

import tidal
import tidal.compat as tc
import tidal.compat.library as tlib
from nn_helpers import assert_close, to_tidal

_NAMES = itertools.count()


def _ns() -> str:
    """A fresh namespace per op: both libraries keep ops for the whole process."""
    return f"s11lib{next(_NAMES)}"


def _schema_fns(lib):
    T = lib.Tensor

    def plain(x: T, y: T, alpha: float = 2.0) -> T: ...
    def lists(xs: Sequence[T], sizes: list[int], maybe: Optional[T] = None, flag: bool = True) -> tuple[T, T]: ...
    def kw(x: T, *, scale: float, name: str = "a", dt: lib.dtype = lib.float32) -> list[T]: ...
    def mutates(out: T, x: T, n: int = 3) -> None: ...
    def scalars(x: T, s: Optional[float] = None, ints: Optional[Sequence[int]] = None) -> int: ...
    return [(plain, ()), (lists, ()), (kw, ()), (mutates, ("out",)), (scalars, "unknown")]


def test_infer_schema_matches_torch():
    for (mine, mut), (theirs, _) in zip(_schema_fns(tc), _schema_fns(torch)):
        assert tlib.infer_schema(mine, mutates_args=mut) == torch.library.infer_schema(theirs, mutates_args=mut)
        assert tlib.infer_schema(mine, mutates_args=mut, op_name="ns::f") == \
            torch.library.infer_schema(theirs, mutates_args=mut, op_name="ns::f")


def _bad_fns(lib):
    T = lib.Tensor

    def unannotated(x, y: T) -> T: ...
    def tuple_in(x: tuple[int, int]) -> T: ...
    def no_return(x: T): ...
    def bad_mut(x: T, n: int) -> T: ...
    def missing_mut(x: T) -> T: ...
    return [(unannotated, ()), (tuple_in, ()), (no_return, ()), (bad_mut, ("n",)), (missing_mut, ("y",))]


def test_infer_schema_errors_match_torch():
    for (mine, mut), (theirs, _) in zip(_bad_fns(tc), _bad_fns(torch)):
        with pytest.raises(ValueError) as want:
            torch.library.infer_schema(theirs, mutates_args=mut)
        with pytest.raises(ValueError) as got:
            tlib.infer_schema(mine, mutates_args=mut)
        head = str(want.value).split(" Got func with signature")[0].split(" The valid types")[0]
        assert str(got.value).startswith(head[:90]), (str(got.value), head)


def _define(lib, libmod, ns, with_autograd=True, with_fake=True):
    T = lib.Tensor

    @libmod.custom_op(f"{ns}::scale_add", mutates_args=())
    def scale_add(x: T, y: T, alpha: float = 2.0) -> T:
        return x * alpha + y.sin()

    if with_autograd:
        def setup_context(ctx, inputs, output):
            x, y, alpha = inputs
            ctx.alpha = alpha
            ctx.save_for_backward(y)

        def backward(ctx, grad):
            (y,) = ctx.saved_tensors
            return grad * ctx.alpha, grad * y.cos(), None
        scale_add.register_autograd(backward, setup_context=setup_context)
    if with_fake:
        @scale_add.register_fake
        def _(x, y, alpha=2.0):
            return lib.empty_like(x)
    return scale_add


def test_call_values_grads_and_ops_namespace_object():
    ns = _ns()
    ref, ours = _define(torch, torch.library, ns), _define(tc, tlib, ns)
    assert repr(ours) == repr(ref).replace("torch._library.custom_ops.", "")
    x = np.linspace(-1, 1, 6).astype(np.float32)
    y = np.linspace(0, 2, 6).astype(np.float32)
    xr, yr = torch.tensor(x, requires_grad=True), torch.tensor(y, requires_grad=True)
    xo, yo = to_tidal(x, True), to_tidal(y, True)
    out_r, out_o = ref(xr, yr, 3.0), ours(xo, yo, alpha=3.0)
    assert_close(out_o, out_r, rtol=1e-6, atol=1e-6)
    assert type(out_o.grad_fn).__name__ == type(out_r.grad_fn).__name__ == \
        f"GeneratedBackwardFor_{ns}_scale_add_defaultBackward"
    (out_r * out_r).sum().backward()
    (out_o * out_o).sum().backward()
    assert_close(xo.grad, xr.grad, rtol=1e-5, atol=1e-6)
    assert_close(yo.grad, yr.grad, rtol=1e-5, atol=1e-6)
    plain = ours(to_tidal(x), to_tidal(y))
    assert not plain.requires_grad and plain.grad_fn is None
    assert ours._schema == f"{ns}::scale_add(Tensor x, Tensor y, float alpha=2.0) -> Tensor"


def test_backward_without_formula_and_aliasing_raise_as_torch():
    ns = _ns()
    msgs = []
    for lib, mod in ((torch, torch.library), (tc, tlib)):
        op = _define(lib, mod, ns, with_autograd=False)
        out = op(lib.ones(3, requires_grad=True), lib.ones(3))
        assert out.requires_grad
        with pytest.raises(RuntimeError) as info:
            out.sum().backward()
        msgs.append(str(info.value))

        @mod.custom_op(f"{ns}::alias", mutates_args=())
        def alias(x: lib.Tensor) -> lib.Tensor:
            return x
        with pytest.raises(RuntimeError, match=r"The output of this custom operator \(1\) must not also be an input"):
            alias(lib.zeros(2))
    assert msgs[0] == msgs[1] and "no autograd formula was registered" in msgs[1]


def test_mutation_kernels_and_multiple_outputs():
    ns = _ns()
    results = []
    for lib, mod in ((torch, torch.library), (tc, tlib)):
        T = lib.Tensor

        @mod.custom_op(f"{ns}::acc", mutates_args=("buf",))
        def acc(buf: T, x: T) -> None:
            buf.add_(x * 2)

        @mod.custom_op(f"{ns}::split", mutates_args=())
        def split(x: T, k: int) -> tuple[T, T]:
            return x[:k].clone(), x[k:] * 1

        calls = []

        @split.register_kernel("cpu")
        def _(x, k):
            calls.append(k)
            return x[:k] * 10, x[k:] * 20
        buf = lib.zeros(3)
        acc(buf, lib.tensor([1.0, 2.0, 3.0]))
        a, b = split(lib.arange(5.0), 2)
        results.append((buf.tolist(), a.tolist(), b.tolist(), calls))
    assert results[0] == results[1] == ([2.0, 4.0, 6.0], [0.0, 10.0], [40.0, 60.0, 80.0], [2])


def test_fake_impl_on_meta_and_opcheck():
    ns = _ns()
    op = _define(tc, tlib, ns)
    with tidal.device("meta"):
        x = tidal.ones(4, 2)
    out = op(x, x)
    assert out.device.type == "meta" and tuple(out.shape) == (4, 2)
    args = (tidal.randn(3), tidal.randn(3))
    want = torch.library.opcheck(_define(torch, torch.library, ns), (torch.randn(3), torch.randn(3)))
    got = tlib.opcheck(op, args)
    assert {k: v for k, v in got.items() if v != "SKIPPED"} == \
        {k: v for k, v in want.items() if k != "test_aot_dispatch_dynamic"}
    assert got["test_aot_dispatch_dynamic"] == "SKIPPED"

    ns2 = _ns()
    messages = []
    for lib, mod in ((torch, torch.library), (tc, tlib)):
        @mod.custom_op(f"{ns2}::sneaky", mutates_args=())
        def sneaky(x: lib.Tensor) -> lib.Tensor:
            x.mul_(2)  # writes an input it does not declare
            return x + 1

        @sneaky.register_fake
        def _(x):
            return lib.empty(x.shape[0] + 1)  # the wrong shape
        err = TorchOpCheckError if lib is torch else tlib.OpCheckError
        for check in ("test_schema", "test_faketensor"):
            with pytest.raises(err) as info:
                mod.opcheck(sneaky, (lib.ones(2),), test_utils=check)
            messages.append(str(info.value).replace(ns2, "ns"))
    assert messages[:2] == messages[2:] and "Argument x is not defined as mutable but was mutated" in messages[2]
    no_fake = _define(tc, tlib, _ns(), with_fake=False)
    with pytest.raises(RuntimeError, match="There was no fake impl registered for"):
        no_fake(x, x)


def test_torch_ops_namespace_and_library_attribute():
    import subprocess
    import sys
    # `torch.library` after a plain `import torch`, in a fresh interpreter (importing the submodule anywhere in
    # this process would make it an attribute anyway)
    code = "import tidal.compat as torch; assert callable(torch.library.custom_op); print('ok')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-500:]
    ns = _ns()
    op = _define(tc, tlib, ns)
    packet = tc.ops.__getattr__(ns).scale_add
    assert str(packet) == f"{ns}.scale_add" and str(packet.default) == f"{ns}.scale_add.default"
    x = tidal.tensor([1.0, 2.0])
    np.testing.assert_allclose(packet.default(x, x, 1.0).numpy(), op(x, x, 1.0).numpy())
    with pytest.raises(AttributeError, match=f"'_OpNamespace' '{ns}' object has no attribute 'nope'"):
        getattr(tc.ops, ns).nope
