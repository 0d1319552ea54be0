"""PyTorch's own op database (OpInfo `op_db`) driven against `tidal.compat`.

Each OpInfo is mapped onto the tidal callable of the same name (`nn.functional.relu` ->
`tidal.compat.nn.functional.relu`, a Tensor method where torch only has the method, the OpInfo's
own lambda with `torch` rebound to `tidal.compat`). Its sample inputs (the first few per dtype)
are converted to tidal tensors through NumPy and the outputs compared with torch's: values,
dtypes, shapes (complex64 samples too). Differentiable ops also compare the gradients of
sum(out * cotangent) (its real part for complex outputs) in float64 and complex128, and torch's
`error_inputs` must raise the same exception type in tidal.

tests/test_torch_op_db.py makes one test per op and check; KNOWN lists the failures still open
(strict xfail, so a fixed op must leave the list); tests/conftest.py prints `summary()`.
"""
from __future__ import annotations

import itertools
import types

import ml_dtypes
import numpy as np
import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

import tidal
import tidal.compat as ttorch

DTYPES = (torch.float32, torch.int64, torch.bool)
SAMPLES = 2          # samples per op and dtype (CI time)
GRAD_SAMPLES = 2
ERROR_SAMPLES = 64  # every error input torch lists (the most any op has is below this)
MAX_NUMEL = 200_000  # larger samples are skipped (CI time); the small ones cover the same code
TOL = {torch.float32: (1e-4, 1e-5), torch.float64: (1e-6, 1e-8)}  # (rtol, atol); others exact

# Complex samples run for every op that takes them (complex64 values, complex128 gradients): the first one per
# dtype (CI time), and as many as for real dtypes for the ops about complex numbers and torch.fft's.
COMPLEX_OPS = {"complex", "polar", "view_as_complex", "view_as_real", "chalf", "cfloat", "cdouble", "real", "imag",
               "angle", "conj", "conj_physical", "H", "mH", "stft", "istft", "linalg.eig", "linalg.eigvals"}
# Results that depend on a random stream or on uninitialized memory: shape and dtype only.
RANDOM = {"bernoulli", "normal", "rand_like", "randint", "randint_like", "randn", "randn_like", "uniform",
          "cauchy", "exponential", "geometric", "log_normal", "multinomial", "nn.functional.dropout",
          "nn.functional.dropout2d", "nn.functional.dropout3d", "nn.functional.alpha_dropout",
          "nn.functional.feature_alpha_dropout", "nn.functional.rrelu", "nn.functional.fractional_max_pool2d",
          "nn.functional.fractional_max_pool3d", "empty", "empty_like",
          "new_empty", "new_empty_strided", "empty_strided", "empty_permuted", "resize_", "resize_as_"}

# Known failures: (check, op id) -> reason. strict xfail: remove an entry once its op passes.
KNOWN: dict[tuple[str, str], str] = {
}

RESULTS: dict[str, dict[str, bool]] = {"values": {}, "grad": {}, "gradgrad": {}, "errors": {}}


def op_id(op) -> str:
    """The test id of an OpInfo: its name, and its variant when it has one."""
    return op.name + ("." + op.variant_test_name if op.variant_test_name else "")


def _lookup(root, dotted: str):
    obj = root
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def _method(name: str):
    if not hasattr(ttorch.Tensor, name):
        return None
    unbound = getattr(ttorch.Tensor, name)  # unbound, as torch's own method variants: `self` may be a number
    return lambda self, *args, **kwargs: unbound(self, *args, **kwargs)


_REBOUND_GLOBALS: dict[int, dict] = {}


def _rebind(fn):
    """The OpInfo's own Python wrapper, with `torch` meaning tidal.compat inside it."""
    glob = _REBOUND_GLOBALS.get(id(fn.__globals__))
    if glob is None:
        glob = dict(fn.__globals__, torch=ttorch, F=ttorch.nn.functional)
        _REBOUND_GLOBALS[id(fn.__globals__)] = glob
    return types.FunctionType(fn.__code__, glob, fn.__name__, fn.__defaults__, fn.__closure__)


def _is_wrapper(fn) -> bool:
    """Whether an OpInfo's op is its own Python wrapper (a lambda in torch's testing code)."""
    return isinstance(fn, types.FunctionType) and fn.__module__.startswith("torch.testing")


def resolve(op):
    """The tidal callable for an OpInfo, or None when tidal lacks the op."""
    names = [op.name] + [a.name for a in op.aliases]
    # an OpInfo of an in-place Tensor method (`cauchy` for `Tensor.cauchy_`) is present with that method
    present = any(_lookup(ttorch, n) is not None or hasattr(ttorch.Tensor, n) for n in names) or (
        op.inplace_variant is not None and hasattr(ttorch.Tensor, op.name + "_"))
    if not present:
        return None
    if _is_wrapper(op.op):
        return _rebind(op.op)
    for n in names:
        found = _lookup(ttorch, n)
        if callable(found) and not isinstance(found, type):
            return found
    for n in names:
        found = _method(n)
        if found is not None:
            return found
    return None


ENTRIES = [(op, resolve(op)) for op in op_db]
PRESENT = [(op, fn) for op, fn in ENTRIES if fn is not None]


def is_complex_op(op) -> bool:
    """Whether the op is about complex numbers (or torch.fft's): all its complex samples run, not just one."""
    return op.name in COMPLEX_OPS or op.name.startswith("fft.")


def differentiable(op) -> bool:
    """Whether torch differentiates the op in float64 on the CPU (and its OpInfo trusts that gradient)."""
    return (bool(op.supports_autograd) and torch.float64 in op.supported_backward_dtypes("cpu")
            and not torch_expects_failure(op, "TestBwdGradients", "test_fn_grad"))


# ---------------------------------------------------------------- conversion to tidal


def _np(t: torch.Tensor) -> np.ndarray:
    t = t.detach().resolve_conj().resolve_neg().cpu()
    if t.dim() > 64:  # past NumPy's limit on dims: tidal_tensor() reshapes it back
        t = t.reshape(-1)
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


class Unconvertible(Exception):
    """A sample tidal cannot be handed (complex32, sparse layouts): skipped, not a failure."""


def tidal_tensor(t: torch.Tensor, requires_grad: bool = False):
    """A tidal copy of a torch tensor (any number of dims)."""
    out = tidal.tensor(_np(t))
    if t.dim() > 64:
        out = out.reshape(tuple(t.shape))
    return out.requires_grad_() if requires_grad else out


def _storage_view(t: torch.Tensor, memo: dict):
    """`t` as tidal views its storage, as torch has it: tensors of one storage (and dtype) view one tidal
    tensor, so as_strided reads past the view and aliased or overlapping `out=` tensors overlap in tidal."""
    key = ("storage", t.untyped_storage().data_ptr(), t.dtype)
    if key not in memo:
        memo[key] = tidal.tensor(_np(torch.as_strided(t, (t.untyped_storage().nbytes() // t.element_size(),),
                                                      (1,), 0)))
    return ttorch.as_strided(memo[key], tuple(t.shape), t.stride(), t.storage_offset())


def to_tidal(obj, memo: dict, grad: bool = False):
    """torch tensors (nested in lists, tuples, dicts) as tidal tensors; dtypes and sizes mapped."""
    if obj is torch.complex32 or isinstance(obj, torch.Tensor) and obj.dtype == torch.complex32:
        raise Unconvertible("complex32")  # (NumPy has no complex32: this driver's tensors go through NumPy)
    if isinstance(obj, torch.Tensor):
        if obj.layout != torch.strided:
            raise Unconvertible(str(obj.layout))
        if id(obj) not in memo:
            rg = grad and obj.requires_grad
            if memo.get("storage") and not rg:
                memo[id(obj)] = _storage_view(obj, memo)
            elif memo.get("storage") and obj.is_leaf:  # a leaf view into a larger storage, as torch's sample has it
                memo[id(obj)] = _storage_view(obj, memo).detach().requires_grad_()
            else:
                memo[id(obj)] = tidal_tensor(obj, requires_grad=rg)
        return memo[id(obj)]
    if isinstance(obj, torch.dtype):
        return getattr(ttorch, str(obj).split(".")[-1])
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.device):
        return ttorch.device(str(obj))
    if isinstance(obj, (torch.memory_format, torch.layout)):
        found = getattr(ttorch, str(obj).split(".")[-1], None)
        if found is None:
            raise Unconvertible(str(obj))
        return found
    if isinstance(obj, torch.nn.Module) and not any(True for _ in obj.parameters()):
        mod = getattr(ttorch.nn, type(obj).__name__)()  # a stateless module (a loss's distance function)
        mod.__dict__.update({k: v for k, v in obj.__dict__.items() if not k.startswith("_")})
        return mod
    if isinstance(obj, list):
        return [to_tidal(o, memo, grad) for o in obj]
    if isinstance(obj, tuple):
        return tuple(to_tidal(o, memo, grad) for o in obj)
    if isinstance(obj, dict):
        return {k: to_tidal(v, memo, grad) for k, v in obj.items()}
    return obj


def _torch_tensors(obj) -> list:
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _torch_tensors(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in _torch_tensors(o)]
    return []


def call(fn, sample, memo: dict, grad: bool = False):
    """Run a tidal callable on a torch SampleInput."""
    inp = to_tidal(sample.input, memo, grad)
    args = to_tidal(tuple(sample.args), memo, grad)
    kwargs = to_tidal(dict(sample.kwargs), memo, grad)
    return fn(inp, *args, **kwargs)


def materialize(out) -> None:
    """Read every tensor of an output, so a deferred kernel error surfaces here."""
    if isinstance(out, tidal.Tensor):
        if out.dtype is tidal.bfloat16 or out.dtype is tidal.complex32:  # (no numpy() for these, as in torch)
            out = out.to(tidal.float32 if out.dtype is tidal.bfloat16 else tidal.complex64)
        out.resolve_conj().resolve_neg().numpy()  # (a conj view's values, as torch's numpy() wants them)
    elif isinstance(out, (list, tuple)):
        for o in out:
            materialize(o)


# ---------------------------------------------------------------- comparison


def _dtype_name(dt) -> str:
    return str(dt).split(".")[-1]


def compare(mine, ref, values: bool = True, path: str = "out", bits: bool = True) -> None:
    """Assert that a tidal output matches torch's: structure, dtypes, shapes, values and (with `bits`) the conjugate
    and negative bits."""
    if isinstance(ref, torch.Tensor):
        assert isinstance(mine, tidal.Tensor), f"{path}: {type(mine).__name__} where torch gives a Tensor"
        assert _dtype_name(mine.dtype) == _dtype_name(ref.dtype), f"{path}: dtype {mine.dtype} != {ref.dtype}"
        assert tuple(mine.shape) == tuple(ref.shape), f"{path}: shape {tuple(mine.shape)} != {tuple(ref.shape)}"
        if ref.layout != torch.strided:  # a sparse result: its layout, then its values as dense tensors
            assert str(mine.layout).split(".")[-1] == str(ref.layout).split(".")[-1], f"{path}: layout {mine.layout}"
            mine, ref = mine.to_dense(), ref.to_dense()
        assert not bits or (mine.is_conj(), mine.is_neg()) == (ref.is_conj(), ref.is_neg()), \
            f"{path}: conjugate/negative bits {(mine.is_conj(), mine.is_neg())} != {(ref.is_conj(), ref.is_neg())}"
        if not values:
            return
        if ref.dtype == torch.complex32:  # (NumPy has no complex32: both compared as complex64, which holds it)
            got, want = mine.detach().to(tidal.complex64).resolve_conj().numpy(), _np(ref.to(torch.complex64))
        else:
            mine = mine.detach().resolve_conj().resolve_neg()
            got = (mine.float() if mine.dtype is tidal.bfloat16 else mine).numpy()
            want = _np(ref)
        if ref.dtype in (torch.float16, torch.bfloat16):
            got, want = got.astype(np.float32), want.astype(np.float32)
        rtol, atol = TOL.get(ref.dtype.to_real() if ref.is_complex() else ref.dtype, (0, 0))
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)
    elif isinstance(ref, (tuple, list)):
        assert isinstance(mine, (tuple, list)), f"{path}: {type(mine).__name__} where torch gives a sequence"
        assert len(mine) == len(ref), f"{path}: {len(mine)} outputs != {len(ref)}"
        for i, (m, r) in enumerate(zip(mine, ref)):
            compare(m, r, values, f"{path}[{i}]", bits)
        fields = getattr(type(ref), "_fields", None)
        if fields:
            assert getattr(type(mine), "_fields", None) == fields, f"{path}: fields {type(mine)} != {fields}"
    elif isinstance(ref, torch.dtype):
        assert _dtype_name(mine) == _dtype_name(ref), f"{path}: {mine} != {ref}"
    elif isinstance(ref, (bool, int, float)) and not isinstance(ref, type(None)):
        assert isinstance(mine, (bool, int, float, np.number, np.bool_)), f"{path}: {type(mine)} != {type(ref)}"
        if values:
            assert type(mine) is type(ref), f"{path}: {type(mine).__name__} != {type(ref).__name__}"
            np.testing.assert_allclose(mine, ref, rtol=1e-5, equal_nan=True, err_msg=path)
    elif ref is None:
        assert mine is None, f"{path}: {type(mine).__name__} where torch gives None"


def _samples(op, dtype, n: int, requires_grad: bool = False):
    # the generator itself: OpInfo.sample_inputs wraps it in a tracker that walks the stack (slow)
    torch.manual_seed(0)
    samples = op.sample_inputs_func(op, "cpu", dtype, requires_grad)
    small = (s for s in samples if sum(t.numel() for t in _torch_tensors([s.input, s.args, s.kwargs])) <= MAX_NUMEL)
    return list(itertools.islice(small, n))


def _describe(sample) -> str:
    def short(o):
        if isinstance(o, torch.Tensor):
            return f"T{tuple(o.shape)}:{_dtype_name(o.dtype)}"
        if isinstance(o, (list, tuple)):
            return "[" + ", ".join(short(x) for x in o) + "]"
        return repr(o)
    return f"{short(sample.input)}, args={short(tuple(sample.args))}, kwargs={sample.kwargs}"


# ---------------------------------------------------------------- checks


def _arg(sample, pos: int, name: str, default):
    if name in sample.kwargs:
        return sample.kwargs[name]
    return sample.args[pos] if len(sample.args) > pos else default


# Ops whose index outputs depend on how ties are broken (torch's CPU sort is not stable by default):
# name -> (dim, keepdim) of a sample; their indices must point at the same values as torch's.
TIES = {
    "sort": lambda s: (_arg(s, 0, "dim", -1), True),
    "argsort": lambda s: (_arg(s, 0, "dim", -1), True),
    "topk": lambda s: (_arg(s, 1, "dim", -1), True),
    "kthvalue": lambda s: (_arg(s, 1, "dim", -1), _arg(s, 2, "keepdim", False)),
    "mode": lambda s: (_arg(s, 0, "dim", -1), _arg(s, 1, "keepdim", False)),
}
# Ops that read their input's storage beyond the view: tested on a view of the same storage (values), and for
# gradients on a leaf view into it, as torch's samples make them.
STORAGE = {"as_strided", "as_strided_scatter"}
# Outputs defined up to the sign (complex: the phase) of each column (eigenvectors): op name -> output index.
SIGN_FREE = {"linalg.eigh": (1,), "svd_lowrank": (0, 2), "pca_lowrank": (0, 2), "linalg.eig": (1,)}
# Samples whose results are random (dropout inside): shapes and dtypes only.
RANDOM_SAMPLE = {
    "nn.functional.scaled_dot_product_attention": lambda s: s.kwargs.get("dropout_p", 0.0) > 0,
    "nn.functional.multi_head_attention_forward": lambda s: s.kwargs.get("training", True) and s.args[9] > 0,
}


def _is_random(op, sample) -> bool:
    return op.name in RANDOM or RANDOM_SAMPLE.get(op.name, lambda s: False)(sample)


def _gathered(x: np.ndarray, idx: np.ndarray, dim: int, keepdim: bool) -> np.ndarray:
    if x.ndim == 0:
        return x.reshape(idx.shape)
    if not keepdim:
        idx = np.expand_dims(idx, dim)
    return np.take_along_axis(x, idx, dim)


def compare_ties(op, sample, mine, ref) -> None:
    """Outputs of a tie-breaking op: values as usual, indices checked by the values they point at."""
    dim, keepdim = TIES[op.name](sample)
    x = _np(sample.input)
    if isinstance(ref, torch.Tensor):  # argsort: indices only
        compare(mine, ref, values=False)
        np.testing.assert_array_equal(_gathered(x, mine.numpy(), dim, keepdim),
                                      _gathered(x, ref.numpy(), dim, keepdim), err_msg="values at indices")
        return
    compare(mine[0], ref[0], path="out[0]")
    compare(mine[1], ref[1], values=False, path="out[1]")
    np.testing.assert_array_equal(_gathered(x, mine[1].numpy(), dim, keepdim),
                                  _gathered(x, ref[1].numpy(), dim, keepdim), err_msg="values at indices")


def _signed(vectors):
    """Column vectors scaled by the sign (complex: the inverse phase) of each column's largest entry (a tidal
    tensor or a torch one)."""
    is_torch = isinstance(vectors, torch.Tensor)
    v = _np(vectors) if is_torch else vectors.resolve_conj().numpy()
    if v.size:
        pick = np.take_along_axis(v, np.round(np.abs(v), 4).argmax(-2)[..., None, :], -2)
        if np.iscomplexobj(v):
            v = v * (np.conj(pick) / np.where(pick == 0, 1, np.abs(pick))).astype(v.dtype)
        else:
            v = v * np.where(pick < 0, -1, 1).astype(v.dtype)
    return torch.from_numpy(v) if is_torch else tidal.tensor(v)


def torch_expects_failure(op, test_class: str, test_name: str) -> bool:
    """Whether torch's own OpInfo marks this test as an expected failure on the CPU in float64 (torch's
    result is known to be wrong there, as as_strided_scatter's gradient)."""
    for d in op.decorators:
        if getattr(d, "cls_name", None) != test_class or getattr(d, "test_name", None) not in (None, test_name):
            continue
        if getattr(d, "device_type", None) not in (None, "cpu"):
            continue
        if d.dtypes is not None and torch.float64 not in d.dtypes:
            continue
        if any(getattr(x, "__name__", "") == "expectedFailure" for x in d.decorators):
            return True
    return False


def _record(kind: str, name: str, failures: list) -> None:
    RESULTS[kind][name] = not failures
    if failures:
        raise AssertionError(f"{name} {kind}: {len(failures)} failing sample(s)\n" + "\n".join(failures[:4]))


def variants(op, fn) -> list:
    """(label, tidal callable, torch callable): the op, then its Tensor method and its aliases (their names
    stripped of "torch."; a missing one is None)."""
    out = [("fn", fn, op.op)]
    if op.method_variant is not None and hasattr(ttorch.Tensor, op.name) and not _is_wrapper(op.op):
        out.append(("method", _method(op.name), op.method_variant))
    for alias in op.aliases:
        name = alias.name.removeprefix("torch.")
        out.append((f"alias {name}", _lookup(ttorch, name), alias.op))
    return out


def check_values(op, fn) -> None:
    """Forward values of the first samples per dtype (float32, int64, bool, complex64) against torch; the method,
    the aliases and a non-contiguous copy (tidal views on the same storage layout) of the first sample."""
    failures, judged = [], 0
    supported = op.supported_dtypes("cpu")
    calls, first = variants(op, fn), True
    for dtype in DTYPES + (torch.complex64,):
        if dtype not in supported:
            continue
        for sample in _samples(op, dtype, SAMPLES if dtype in DTYPES or is_complex_op(op) else 1):
            for label, f, torch_f in calls if first else calls[:1]:
                judged += _check_sample(op, dtype, sample, label, f, torch_f, failures)
            if first and not _is_random(op, sample):
                try:
                    strided = sample.noncontiguous()
                except RuntimeError:  # torch can't make one (a sparse CSR sample)
                    strided = None
                if strided is not None:
                    judged += _check_sample(op, dtype, strided, "noncontiguous", fn, op.op, failures, storage=True)
            first = False
    if not judged:  # (a CUDA-only variant, or sparse CSR samples): nothing was compared
        pytest.skip(f"{op_id(op)}: no sample that torch computes on the CPU and tidal can take")
    _record("values", op_id(op), failures)


def _refused_alike(torch_fn, sample, exc: Exception) -> bool:
    """Whether torch refuses the sample too, with the same exception type (a non-contiguous copy that
    view_as_complex can't view, for one)."""
    try:
        torch_fn(sample.input, *sample.args, **sample.kwargs)
    except Exception as ref:  # noqa: BLE001 - the type is what is compared
        return isinstance(exc, type(ref))
    return False


def _check_sample(op, dtype, sample, label: str, fn, torch_fn, failures: list, storage: bool = False) -> bool:
    """Compare one sample (a failure is added to `failures`); False where it was skipped, not judged."""
    if fn is None:
        failures.append(f"{label}: missing in tidal")
        return True
    memo: dict = {"storage": storage or op.name in STORAGE}
    try:
        mine = call(fn, sample, memo)
        materialize(mine)
    except Unconvertible:
        return False
    except Exception as exc:  # noqa: BLE001 - any failure is a finding
        if _refused_alike(torch_fn, sample, exc):
            return True
        failures.append(f"{_dtype_name(dtype)} {label} {_describe(sample)}: {type(exc).__name__}: "
                        f"{exc}"[:400])
        return True
    torch.manual_seed(0)
    try:
        ref = torch_fn(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001 - torch refuses this sample itself
        return True
    try:
        if op.name in TIES:
            compare_ties(op, sample, mine, ref)
        elif op.name in SIGN_FREE:
            k = SIGN_FREE[op.name]
            mine = tuple(_signed(o) if i in k else o for i, o in enumerate(mine))
            compare(mine, tuple(_signed(o) if i in k else o for i, o in enumerate(ref)))
        else:
            compare(mine, ref, not _is_random(op, sample))
    except AssertionError as exc:
        failures.append(f"{_dtype_name(dtype)} {label} {_describe(sample)}: {exc}"[:600])
    return True


def check_errors(op, fn) -> None:
    """torch's error inputs that torch refuses: tidal raises the same exception type."""
    failures = []
    for ei in itertools.islice(op.error_inputs_func(op, "cpu"), ERROR_SAMPLES):
        si = ei.sample_input
        try:
            op.op(si.input, *si.args, **si.kwargs)
            continue  # torch takes it (the OpInfo marks a limit of a variant, not a refusal)
        except Exception as exc:  # noqa: BLE001 - the type is what is checked
            want = type(exc) if ei.error_type is Exception else ei.error_type
        memo: dict = {"storage": True}  # aliased and overlapping arguments stay so in tidal
        try:
            out = call(fn, si, memo)
            materialize(out)
            tidal.sync()
        except Unconvertible:
            continue
        except Exception as exc:  # noqa: BLE001 - the type is what is checked
            if not isinstance(exc, want):
                failures.append(f"{_describe(si)}: {type(exc).__name__}: {exc} "
                                f"(torch: {want.__name__}: {ei.error_regex})"[:600])
            continue
        failures.append(f"{_describe(si)}: no error (torch: {want.__name__}: {ei.error_regex})"[:600])
    _record("errors", op_id(op), failures)


def has_errors(op) -> bool:
    """Whether the OpInfo lists error inputs."""
    return op.error_inputs_func is not None


# ---------------------------------------------------------------- summary


def summary() -> str:
    """Entries, present, and the pass counts of the checks run in this session."""
    present = len(PRESENT)
    diff = sum(1 for op, _ in PRESENT if differentiable(op))
    lines = [f"torch op_db: {len(op_db)} entries, {present} present in tidal ({100 * present / len(op_db):.1f}%), "
             f"{diff} differentiable"]
    for kind, total in (("values", present), ("grad", diff), ("gradgrad", None),
                        ("errors", sum(1 for op, _ in PRESENT if has_errors(op)))):
        res = RESULTS[kind]
        if not res:
            continue
        total = len(res) if total is None else total  # (second gradients: the ops torch's OpInfo trusts them on)
        ok = sum(res.values())
        lines.append(f"  {kind}: {ok}/{total} pass ({100 * ok / max(total, 1):.1f}%), {len(res)} run, "
                     f"{sum(1 for k in KNOWN if k[0] == kind)} known failures")
    return "\n".join(lines)
