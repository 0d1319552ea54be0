"""Edge-input variants of PyTorch's op database (OpInfo `op_db`) driven against `tidal.compat`.

For every op tidal has (tests/torch_op_db.PRESENT), one of torch's own sample inputs is turned into edge
variants, one kind at a time:

- dtypes:    the sample in every dtype torch's OpInfo lists for the CPU (integer, bool, half, complex);
- layout:    its tensors as a strided view of a larger tensor, a transposed view, and an overlapping
             (stride-0, expanded) view;
- empty:     a zero-size first dim on the input (and the arguments shaped like it);
- rank:      the input (and the arguments shaped like it) as a 0-d tensor and flattened to 1-D;
- nonfinite: NaN, inf and -inf written into its floating tensors.

Each variant runs in torch and in tidal: the results must match (values with NaN positions, dtypes,
shapes), or both must raise the same exception type, tidal's message naming the op. tests/test_op_edges.py
makes one test per (kind, op); KNOWN lists the differences still open (strict xfail); `summary()` counts
ops, samples, passes and known differences (printed at the end of the run).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

import tidal
import torch_op_db as db

KINDS = ("dtypes", "layout", "empty", "rank", "nonfinite")
CANDIDATES = 6  # samples looked at per op to pick the one that fits each kind
# (rtol, atol) per result dtype; integers and bool exact. Half precision: torch computes in float32 and rounds.
TOL = {torch.float16: (1e-2, 1e-3), torch.bfloat16: (2e-2, 1e-2), torch.float32: (1e-4, 1e-5),
       torch.float64: (1e-6, 1e-8)}
# Ops whose dtypes variant is slow (a sample per dtype through LAPACK-sized or wide composites): one sample kept.
SLOW: set[str] = set()
# Variants never run: (variant label, op id) -> why. torch crashes on them, or their answer is not unique (a
# factorization of the rank-deficient matrix an expanded view makes), or torch's own answer is wrong.
SKIP = {
    ("0-d", "_chunk_cat"): "torch segfaults on 0-d tensors",
    ("nan/inf", "linalg.eigvals"): "torch's LAPACK call segfaults on NaN",
    ("nan/inf", "linalg.eig"): "torch's LAPACK call segfaults on NaN",
    **{("expanded", name): "a rank-deficient matrix: the factorization is not unique" for name in (
        "geqrf", "qr", "linalg.qr", "svd_lowrank", "pca_lowrank", "pinverse", "linalg.cholesky_ex", "linalg.eig",
        "linalg.lstsq", "linalg.lstsq.grad_oriented")},
    ("empty", "nn.functional.embedding_bag"): "torch's message varies between runs (its parallel index check); "
                                              "tidal's repeats torch's usual one, which names no op",
    ("expanded", "masked.median"): "torch's answer is wrong on a stride-0 input (it repeats other rows' medians)",
}

# Known differences: (kind, op id) -> reason. strict xfail: remove an entry once its op passes.
KNOWN: dict[tuple[str, str], str] = {
    ("dtypes", "matrix_exp"): "bfloat16, float16: torch's result is NaN (it overflows computing in half); tidal computes in float64",
    ("dtypes", "nn.functional.softmin.with_dtype"): "uint8: torch negates in uint8 before converting (-x wraps around); tidal converts first",
    ("dtypes", "polygamma.polygamma_n_0"): "integer inputs at the poles (negative integers): tidal gives inf, torch a large finite value (ops/elementwise/special.py)",
    ("dtypes", "polygamma.polygamma_n_1"): "integer inputs at the poles (negative integers): tidal gives inf, torch a large finite value (ops/elementwise/special.py)",
    ("dtypes", "polygamma.polygamma_n_2"): "integer inputs at the poles (negative integers): tidal gives inf, torch a large finite value (ops/elementwise/special.py)",
    ("dtypes", "polygamma.polygamma_n_3"): "integer inputs at the poles (negative integers): tidal gives inf, torch a large finite value (ops/elementwise/special.py)",
    ("dtypes", "polygamma.polygamma_n_4"): "integer inputs at the poles (negative integers): tidal gives inf, torch a large finite value (ops/elementwise/special.py)",
    ("dtypes", "grid_sampler_2d"): "bfloat16: the grid's pixel coordinates are computed in bfloat16 (torch: float32 accumulation)",
    ("dtypes", "special.polygamma.special_polygamma_n_0"): "integer inputs at the poles (negative integers): tidal gives inf, torch a large finite value (ops/elementwise/special.py)",
    ("dtypes", "special.bessel_j0"): "precision at large arguments (uint32 inputs) and near zeros (ops/elementwise/special.py)",
    ("dtypes", "special.bessel_j1"): "precision at large arguments (uint32 inputs) and near zeros (ops/elementwise/special.py)",
    ("dtypes", "special.bessel_y0"): "precision at large arguments (uint32 inputs) and near zeros (ops/elementwise/special.py)",
    ("dtypes", "special.bessel_y1"): "precision at large arguments (uint32 inputs) and near zeros (ops/elementwise/special.py)",
    ("layout", "native_group_norm"): "strided: torch's native kernel requires a contiguous input; tidal takes any layout",
    ("layout", "native_batch_norm"): "expanded (stride-0) running stats: torch writes into them, tidal refuses the overlapping write",
    ("layout", "_native_batch_norm_legit"): "expanded (stride-0) running stats: torch writes into them, tidal refuses the overlapping write",
    ("layout", "nn.functional.batch_norm"): "expanded (stride-0) running stats: torch writes into them, tidal refuses the overlapping write",
    ("layout", "_segment_reduce.offsets"): "expanded: RuntimeError where torch computes (segment_reduce(): expected lengths to be non-negative and to)",
    ("empty", "baddbmm"): "empty: RuntimeError naming neither the op nor torch's text (Expected size for first two dimensions of batch2 t)",
    ("empty", "addr"): "empty: RuntimeError naming neither the op nor torch's text (The size of tensor a (0) must match the size of te)",
    ("empty", "cholesky"): "empty: RuntimeError where torch computes (linalg.cholesky: A must be batches of square matrices, but t)",
    ("empty", "stft"): "empty: RuntimeError naming neither the op nor torch's text (Argument #4: Padding size should be less than the )",
    ("empty", "masked_scatter"): "empty: RuntimeError naming neither the op nor torch's text (The size of tensor a (0) must match the size of te)",
    ("empty", "native_group_norm"): "empty: no error where torch raises RuntimeError (Expected X.numel() == N * C * HxW to be true, but got false.)",
    ("empty", "native_layer_norm"): "empty: RuntimeError naming neither the op nor torch's text (Given normalized_shape=[1, 2, 3], expected input w)",
    ("empty", "native_batch_norm"): "empty: no error where torch raises RuntimeError (input tensor must have at least one element, but got input_s)",
    ("empty", "_native_batch_norm_legit"): "empty: no error where torch raises RuntimeError (input tensor must have at least one element, but got input_s)",
    ("empty", "nn.functional.instance_norm"): "empty: IndexError naming neither the op nor torch's text (index 0 is out of bounds for dimension 0 with size)",
    ("empty", "nn.functional.layer_norm"): "empty: RuntimeError naming neither the op nor torch's text (Given normalized_shape=[1, 2, 3], expected input w)",
    ("empty", "nn.functional.rms_norm"): "empty: RuntimeError naming neither the op nor torch's text (Given normalized_shape=[1, 2, 3], expected input w)",
    ("empty", "nn.functional.pad.reflect"): "empty: no error where torch raises RuntimeError (Expected 2D or 3D (batch mode) tensor with possibly 0 batch )",
    ("empty", "nn.functional.pad.replicate"): "empty: no error where torch raises RuntimeError (Expected 2D or 3D (batch mode) tensor with possibly 0 batch )",
    ("empty", "nn.functional.multi_margin_loss"): "empty: RuntimeError naming neither the op nor torch's text (target out of range)",
    ("empty", "nn.functional.max_unpool1d"): "empty: RuntimeError naming neither the op nor torch's text (Expected shape of indices to be same as that of th)",
    ("empty", "nn.functional.max_unpool1d.grad"): "empty: RuntimeError naming neither the op nor torch's text (Expected shape of indices to be same as that of th)",
    ("empty", "index_fill"): "empty: IndexError where torch raises RuntimeError (index 0 is out of bounds for dimension 0 with size)",
    ("empty", "_unsafe_masked_index"): "empty: IndexError where torch computes (getitem: index -1 is out of bounds for dimension 0 with size)",
    ("empty", "_unsafe_masked_index_put_accumulate"): "empty: IndexError where torch computes (index_put: index -1 is out of bounds for dimension 0 with si)",
    ("empty", "__getitem__"): "empty: IndexError naming neither the op nor torch's text (index 1 is out of bounds for dimension 0 with size)",
    ("empty", "index_put"): "empty: IndexError naming neither the op nor torch's text (index 1 is out of bounds for dimension 0 with size)",
    ("empty", "take_along_dim"): "empty: RuntimeError naming neither the op nor torch's text (index 2 is out of bounds for dimension 0 with size)",
    ("empty", "nn.functional.embedding"): "empty: IndexError where torch raises RuntimeError (index out of range in self)",
    ("empty", "_segment_reduce.offsets"): "empty: RuntimeError where torch computes (segment_reduce(): expected lengths to be non-negative and to)",
    ("empty", "fft.fft"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.fft2"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.fftn"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.hfft"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.hfft2"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.hfftn"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.rfft"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.rfft2"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.rfftn"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.ifft"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.ifft2"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.ifftn"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.ihfft"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.ihfft2"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.ihfftn"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.irfft"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.irfft2"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "fft.irfftn"): "empty: no error where torch raises RuntimeError (MKL FFT error: Intel oneMKL DFTI ERROR: Inconsistent configu)",
    ("empty", "linalg.matrix_rank.hermitian"): "empty: RuntimeError where torch computes (linalg.eigvalsh: A must be batches of square matrices, but t)",
    ("empty", "linalg.pinv.hermitian"): "empty: RuntimeError where torch computes (linalg.eigh: A must be batches of square matrices, but they )",
    ("empty", "linalg.tensorsolve"): "empty: RuntimeError naming neither the op nor torch's text (Expected self to satisfy the requirement prod(self)",
    ("rank", "baddbmm"): "0-d: RuntimeError where torch raises IndexError (batch2 must be a 3D tensor)",
    ("rank", "mv"): "0-d: RuntimeError where torch raises IndexError (vector + matrix @ vector expected, got 1, 0, 1)",
    ("rank", "addr"): "1-D: RuntimeError naming neither the op nor torch's text (The size of tensor a (50) must match the size of t)",
    ("rank", "masked_scatter"): "1-D: RuntimeError naming neither the op nor torch's text (The size of tensor a (25) must match the size of t)",
    ("rank", "native_group_norm"): "0-d: RuntimeError naming neither the op nor torch's text (Expected at least 2 dimensions for input tensor bu)",
    ("rank", "native_layer_norm"): "0-d: RuntimeError naming neither the op nor torch's text (Given normalized_shape=[1, 2, 3], expected input w)",
    ("rank", "native_batch_norm"): "0-d: IndexError where torch raises RuntimeError (tuple index out of range)",
    ("rank", "_native_batch_norm_legit"): "0-d: IndexError where torch raises RuntimeError (tuple index out of range)",
    ("rank", "nn.functional.layer_norm"): "0-d: RuntimeError naming neither the op nor torch's text (Given normalized_shape=[1, 2, 3], expected input w)",
    ("rank", "nn.functional.rms_norm"): "0-d: RuntimeError naming neither the op nor torch's text (Given normalized_shape=[1, 2, 3], expected input w)",
    ("rank", "constant_pad_nd"): "0-d: RuntimeError naming neither the op nor torch's text (Padding length should be less than or equal to two)",
    ("rank", "nn.functional.multilabel_margin_loss"): "0-d: RuntimeError naming neither the op nor torch's text (shape '[1, 1]' is invalid for input of size 5)",
    ("rank", "nn.functional.avg_pool2d"): "0-d: RuntimeError where torch raises IndexError (non-empty 3D or 4D (batch mode) tensor expected fo)",
    ("rank", "nn.functional.fractional_max_pool2d"): "0-d: RuntimeError where torch raises IndexError (fractional_max_pool2d(): Expected 3D or 4D tensor,)",
    ("rank", "nn.functional.fractional_max_pool3d"): "0-d: RuntimeError where torch raises IndexError (fractional_max_pool3d(): Expected 4D or 5D tensor,)",
    ("rank", "_unsafe_masked_index"): "0-d: IndexError naming neither the op nor torch's text (tuple index out of range)",
    ("rank", "_unsafe_masked_index_put_accumulate"): "0-d: IndexError naming neither the op nor torch's text (tuple index out of range)",
    ("rank", "index_put"): "1-D: RuntimeError naming neither the op nor torch's text (shape mismatch: value tensor of shape [5] cannot b)",
    ("rank", "nn.functional.grid_sample"): "0-d: RuntimeError where torch raises IndexError (grid_sampler(): expected 4D or 5D input and grid w)",
    ("rank", "grid_sampler_2d"): "0-d: RuntimeError where torch raises IndexError (grid_sampler(): expected 4D or 5D input and grid w)",
    ("rank", "grid_sampler_3d"): "0-d: RuntimeError where torch raises IndexError (grid_sampler(): expected 4D or 5D input and grid w)",
    ("rank", "nn.functional.ctc_loss"): "0-d: RuntimeError where torch raises IndexError (ctc_loss(): expected log_probs to be 2-D or 3-D, g)",
    ("rank", "nn.functional.cosine_embedding_loss"): "0-d: no error where torch raises RuntimeError (1D target tensor expects 2D input tensors, but found inputs )",
    ("rank", "fft.fftshift"): "0-d: no error where torch raises RuntimeError (`shifts` required))",
    ("rank", "fft.ifftshift"): "0-d: no error where torch raises RuntimeError (`shifts` required))",
    ("rank", "linalg.tensorinv"): "0-d: no error where torch raises RuntimeError (ArrayRef: invalid slice, N = 3; size = 0))",
    ("rank", "linalg.tensorsolve"): "0-d: RuntimeError naming neither the op nor torch's text (shape '[1]' is invalid for input of size 6)",
    ("nonfinite", "stft"): "NaN/inf: which bins come out NaN or inf depends on the FFT algorithm (pocketfft vs MKL)",
    ("nonfinite", "geqrf"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "lu_solve"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "native_group_norm"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "native_batch_norm"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "_native_batch_norm_legit"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "nn.functional.instance_norm"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "nn.functional.multilabel_margin_loss"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "nn.functional.batch_norm"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "nn.functional.gelu"): "nan/inf: NaN/inf in other places than torch's",
    ("nonfinite", "qr"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "linalg.cholesky_ex"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "linalg.ldl_factor_ex"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "linalg.lstsq"): "nan/inf: LinAlgError naming neither the op nor torch's text (linalg: linalg.svd: The algorithm failed to conver)",
    ("nonfinite", "linalg.lstsq.grad_oriented"): "nan/inf: LinAlgError naming neither the op nor torch's text (linalg: linalg.svd: The algorithm failed to conver)",
    ("nonfinite", "linalg.qr"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "linalg.slogdet"): "LAPACK's NaN/inf propagation differs (NumPy's LAPACK vs torch's MKL): not a tidal bug",
    ("nonfinite", "linalg.matrix_rank.hermitian"): "nan/inf: LinAlgError naming neither the op nor torch's text (linalg: linalg.eigh: The algorithm failed to conve)",
    ("nonfinite", "special.zeta"): "nan/inf: NaN/inf in other places than torch's",
}

RESULTS: dict[str, dict[str, tuple[int, int]]] = {k: {} for k in KINDS}  # kind -> op id -> (samples, failing)
REFUSALS: dict[str, int] = {k: 0 for k in KINDS}  # variants both refused, by kind


# ---------------------------------------------------------------- variants


def _base_dtype(op) -> torch.dtype | None:
    supported = op.supported_dtypes("cpu")
    for dt in (torch.float32, torch.float64, torch.int64, torch.bool, torch.complex64):
        if dt in supported:
            return dt
    return None


def _tensors(sample) -> list:
    return db._torch_tensors([sample.input, sample.args, sample.kwargs])


_LAST: dict = {}


def _candidates(op, dtype) -> list:
    """The op's first samples (kept for the op's next kind: the tests run op by op)."""
    if _LAST.get("op") is not op:
        _LAST.update(op=op, samples=db._samples(op, dtype, CANDIDATES))
    return _LAST["samples"]


def _pick(samples: list, fits) -> object | None:
    return next((s for s in samples if fits(s)), None)


def _input(sample) -> torch.Tensor | None:
    inp = sample.input
    if isinstance(inp, (list, tuple)) and inp and isinstance(inp[0], torch.Tensor):
        inp = inp[0]
    return inp if isinstance(inp, torch.Tensor) else None


def _like_input(sample, f):
    """`sample` with f applied to the input and to every tensor argument of the input's shape and dtype."""
    inp = _input(sample)
    shape, dtype = tuple(inp.shape), inp.dtype
    return sample.transform(lambda t: f(t) if isinstance(t, torch.Tensor) and tuple(t.shape) == shape
                            and t.dtype == dtype else t)


def _of_dtype(sample, base, dtype):
    """The sample with its tensors of the base dtype (and a `dtype=` of it) converted to `dtype`."""
    return sample.transform(lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.dtype == base
                            else dtype if t is base else t)


def _tensors_only(f):
    """f applied to tensors only (SampleInput.transform hands it dtypes too)."""
    return lambda t: f(t) if isinstance(t, torch.Tensor) else t


@_tensors_only
def _transposed(t: torch.Tensor) -> torch.Tensor:
    return t.mT.contiguous().mT if t.dim() >= 2 else t


@_tensors_only
def _expanded(t: torch.Tensor) -> torch.Tensor:
    """An overlapping view: the first row repeated along dim 0 (stride 0)."""
    return t[:1].expand(t.shape) if t.dim() >= 1 and t.shape[0] > 1 else t


@_tensors_only
def _nonfinite(t: torch.Tensor) -> torch.Tensor:
    if not (t.is_floating_point() or t.is_complex()) or t.numel() == 0:
        return t
    out = t.clone().reshape(-1)
    for i, v in enumerate((float("nan"), float("inf"), -float("inf"))):
        out[(i * 7) % out.numel()] = v
    return out.reshape(t.shape)


def _build(kind: str, base, samples: list, supported) -> list[tuple[str, object]]:
    first = samples[0]
    if kind == "dtypes":
        return [(db._dtype_name(dt), _of_dtype(first, base, dt))
                for dt in sorted(supported - {base, torch.complex32}, key=str)]
    if kind == "layout":
        s = _pick(samples, lambda s: any(t.dim() >= 2 for t in _tensors(s))) or first
        return [("strided", s.noncontiguous()), ("transposed", s.transform(_transposed)),
                ("expanded", s.transform(_expanded))]
    if kind == "nonfinite":
        if not (base.is_floating_point or base.is_complex):
            return []
        s = _pick(samples, lambda s: _input(s) is not None and _input(s).numel() >= 3) or first
        return [("nan/inf", s.transform(_nonfinite))]
    s = _pick(samples, lambda s: _input(s) is not None and _input(s).dim() >= 1 and _input(s).numel() > 0)
    if s is None:
        return []
    if kind == "empty":
        return [("empty", _like_input(s, lambda t: t[:0]))]
    return [("0-d", _like_input(s, lambda t: t.reshape(-1)[0].clone())),
            ("1-D", _like_input(s, lambda t: t.reshape(-1)))]


def variants(op, kind: str) -> list[tuple[str, object]]:
    """[(label, SampleInput)] of one kind for an op (empty where its samples fit no variant of that kind, or
    torch can't build one: a sparse sample)."""
    base = _base_dtype(op)
    samples = _candidates(op, base) if base is not None else []
    if not samples:
        return []
    try:
        return _build(kind, base, samples, op.supported_dtypes("cpu"))
    except RuntimeError:
        return []


# ---------------------------------------------------------------- comparison


_FLOAT8 = {getattr(torch, n) for n in ("float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                                       "float8_e8m0fnu") if hasattr(torch, n)}


def _materialize(out) -> None:
    """db.materialize, float8 outputs read as float32 (no numpy() for them, in torch or tidal)."""
    if isinstance(out, tidal.Tensor) and "float8" in str(out.dtype):
        out = out.float()
    if isinstance(out, (list, tuple)):
        for o in out:
            _materialize(o)
    else:
        db.materialize(out)


def compare(mine, ref, values: bool = True, path: str = "out") -> None:
    """tidal's output against torch's: structure, dtypes, shapes, values (NaN and inf in the same places)."""
    if isinstance(ref, torch.Tensor) and ref.dtype in _FLOAT8:  # (exact: both store the same rounding)
        db.compare(mine, ref, values=False, path=path)
        if values:
            np.testing.assert_array_equal(mine.float().numpy(), ref.float().numpy(), err_msg=path)
    elif isinstance(ref, torch.Tensor) and ref.layout == torch.strided and ref.dtype in TOL and values:
        db.compare(mine, ref, values=False, path=path)
        got = mine.detach()
        got = (got.float() if got.dtype is tidal.bfloat16 else got).numpy().astype(np.float64)
        want = db._np(ref.float() if ref.dtype == torch.bfloat16 else ref).astype(np.float64)
        rtol, atol = TOL[ref.dtype]
        if ref.dtype in (torch.float16, torch.bfloat16):  # rounding errors scale with the terms summed, not the result
            finite = np.abs(want[np.isfinite(want)])
            atol += rtol / 4 * (finite.max() if finite.size else 0)
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=path)
    elif isinstance(ref, (tuple, list)) and isinstance(mine, (tuple, list)) and len(mine) == len(ref):
        for i, (m, r) in enumerate(zip(mine, ref)):
            compare(m, r, values, f"{path}[{i}]")
        db.compare(mine, ref, values=False, path=path)  # the sequence's type and fields
    else:
        db.compare(mine, ref, values, path)


def _names(op) -> set[str]:
    """The names a message may call the op by: its last name component (no underscores around it) and aliases."""
    names = {op.name, *(a.name for a in op.aliases)}
    return {n.split(".")[-1].strip("_").removesuffix("_") for n in names}


def _same_type(exc: Exception, ref_exc: Exception) -> bool:
    """torch's exception type, or tidal's class of the same name (torch.linalg.LinAlgError is torch._C's)."""
    want = type(ref_exc)
    if isinstance(exc, want):
        return True
    builtin = next(t for t in want.__mro__ if t.__module__ == "builtins")
    return isinstance(exc, builtin) and type(exc).__name__.strip("_") == want.__name__.strip("_")


def _first_line(exc: Exception) -> str:
    line = str(exc).replace("tidal", "torch").split("\n")[0].split("  (Could this error message be improved?")[0]
    return " ".join(line.split())


def _names_op(op, exc: Exception, ref_exc: Exception) -> bool:
    """Whether tidal's refusal names the op, or is torch's own message (which a torch user already knows)."""
    msg = str(exc).lower()
    return any(n.lower() in msg for n in _names(op)) or _first_line(ref_exc) in _first_line(exc)


def _run_torch(op, sample):
    torch.manual_seed(0)
    return op.op(sample.input, *sample.args, **sample.kwargs)


def check_sample(op, fn, kind: str, label: str, sample, failures: list) -> bool:
    """One variant in torch and tidal; a failure is added to `failures`. False where it was not judged."""
    memo: dict = {"storage": True}  # views, strides and overlaps reach tidal as torch has them
    try:  # converted first: torch may write into the sample (an in-place op)
        args = db.to_tidal((sample.input, tuple(sample.args), dict(sample.kwargs)), memo)
    except db.Unconvertible:
        return False
    try:
        ref, ref_exc = _run_torch(op, sample), None
    except Exception as exc:  # noqa: BLE001 - the refusal itself is compared
        ref, ref_exc = None, exc
    try:
        mine, exc = fn(args[0], *args[1], **args[2]), None
        _materialize(mine)
    except Exception as e:  # noqa: BLE001 - the error itself is compared
        mine, exc = None, e
    for _ in range(64):  # every failed instruction of this call reports once: drain them, so none reaches the next
        try:
            tidal.sync()
            break
        except Exception as e:  # noqa: BLE001 - a kernel error of this call, surfaced late
            exc = exc or e
    where = f"{kind} {label} {db._describe(sample)}"
    if ref_exc is not None:
        if exc is None:
            failures.append(f"{where}: no error (torch: {type(ref_exc).__name__}: {ref_exc})"[:600])
        elif not _same_type(exc, ref_exc):
            failures.append(f"{where}: {type(exc).__name__}: {exc} (torch: {type(ref_exc).__name__}: "
                            f"{ref_exc})"[:600])
        elif not _names_op(op, exc, ref_exc):
            failures.append(f"{where}: the message does not name the op: {type(exc).__name__}: {exc}"[:600])
        else:
            REFUSALS[kind] += 1
        return True
    if exc is not None:
        failures.append(f"{where}: {type(exc).__name__}: {exc} (torch takes it)"[:600])
        return True
    try:
        if db._is_random(op, sample):
            compare(mine, ref, values=False)
        elif op.name in db.TIES:
            db.compare_ties(op, sample, mine, ref)
        elif op.name in db.SIGN_FREE:
            k = db.SIGN_FREE[op.name]
            compare(tuple(db._signed(o) if i in k else o for i, o in enumerate(mine)),
                    tuple(db._signed(o) if i in k else o for i, o in enumerate(ref)))
        else:
            compare(mine, ref)
    except AssertionError as e:
        failures.append(f"{where}: {e}"[:600])
    return True


def check(op, fn, kind: str) -> None:
    """Every variant of one kind for an op: torch's result or torch's refusal."""
    key = db.op_id(op)
    failures, judged = [], 0
    for label, sample in variants(op, kind):
        if (label, key) in SKIP:
            continue
        judged += check_sample(op, fn, kind, label, sample, failures)
    if not judged:
        pytest.skip(f"{key}: no {kind} variant of its samples that tidal can take")
    RESULTS[kind][key] = (judged, len(failures))
    if failures:
        raise AssertionError(f"{key} {kind}: {len(failures)} failing variant(s)\n" + "\n".join(failures[:4]))


def summary() -> str:
    """Ops, variant samples, passes and known differences of this run, per kind."""
    ops = {k for res in RESULTS.values() for k in res}
    samples = sum(n for res in RESULTS.values() for n, _ in res.values())
    passed = sum(n - f for res in RESULTS.values() for n, f in res.values())
    lines = [f"op edges: {len(ops)} ops, {samples} samples, {passed} pass, {sum(REFUSALS.values())} refused "
             f"alike, {len(KNOWN)} known differences"]
    for kind in KINDS:
        res = RESULTS[kind]
        if res:
            lines.append(f"  {kind}: {len(res)} ops, {sum(n for n, _ in res.values())} samples, "
                         f"{sum(n - f for n, f in res.values())} pass, {REFUSALS[kind]} refused alike, "
                         f"{sum(1 for k in KNOWN if k[0] == kind)} known")
    return "\n".join(lines)
