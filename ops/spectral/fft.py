"""tidal.fft: discrete Fourier transforms (NumPy's pocketfft), with PyTorch's arguments and gradients.

Three primitives run as kernels on the VM: c2c (complex to complex, forward or inverse), r2c (real
to the one-sided half spectrum) and c2r (half spectrum to a real signal). Every public transform is
one of them after its input is trimmed or zero-padded to the sizes asked for (`n`/`s`), so the
resizing differentiates through narrow/cat. hfft/ihfft are c2r/r2c of the conjugate with the norm
swapped. Each primitive's gradient is its adjoint (PyTorch's convention: g -> A^H g), itself a
transform: c2c with the other direction and the swapped norm; r2c's is the real part of the
inverse of the zero-extended gradient; c2r's is r2c of the gradient with the mirrored bins doubled.
"""
from __future__ import annotations

import numpy as np

from ...tensor import Tensor
from ..dispatch import torch_function as _torch_function
from ...tensor import dtype as dt
from ..elementwise import copies
from ..complex_numbers.tensors import complex, conj, conj_physical, real
from ..factories.creation import zeros, zeros_like
from ..dispatch.primitive import Primitive
from ..dispatch.dim_args import as_int
from ..elementwise.plans import torch_name
from ..factories.ranges import arange
from ..movement.shape_ops import cat, roll

__all__ = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "hfft2", "ihfft2",
           "fftn", "ifftn", "rfftn", "irfftn", "hfftn", "ihfftn", "fftfreq", "rfftfreq", "fftshift", "ifftshift"]

_SWAP = {"backward": "forward", "forward": "backward", "ortho": "ortho"}


# -- kernels ----------------------------------------------------------------------------------------
def _c2c_kernel(ins, outs, attrs) -> None:
    axes, norm, forward = attrs
    outs[0][...] = (np.fft.fftn if forward else np.fft.ifftn)(ins[0], axes=axes, norm=norm)


def _r2c_kernel(ins, outs, attrs) -> None:
    axes, norm = attrs
    outs[0][...] = np.fft.rfftn(ins[0], axes=axes, norm=norm)


def _c2r_kernel(ins, outs, attrs) -> None:
    axes, norm, last = attrs
    sizes = [ins[0].shape[a] for a in axes[:-1]] + [last]
    outs[0][...] = np.fft.irfftn(ins[0], s=sizes, axes=axes, norm=norm)


# -- the three primitives and their adjoints -----------------------------------------------------------
def _c2c(x: Tensor, axes: tuple, norm: str, forward: bool) -> Tensor:
    return FFT_C2C((x,), (axes, norm, forward))


def _c2c_backward(node, g):
    axes, norm, forward = node.attrs
    return _c2c(g, axes, _SWAP[norm], not forward)


def _r2c(x: Tensor, axes: tuple, norm: str) -> Tensor:
    return FFT_R2C((x,), (axes, norm))


def _r2c_shapes(ins: tuple, attrs: tuple) -> list:
    x, axes = ins[0], attrs[0]
    shape = list(x._v.shape)
    shape[axes[-1]] = shape[axes[-1]] // 2 + 1
    return [(tuple(shape), x.dtype.to_complex())]


def _r2c_backward(node, g):
    axes, norm, n = node.attrs
    full = _resize(g, axes[-1], n)  # the bins r2c dropped get no gradient
    return real(_c2c(full, axes, _SWAP[norm], False))


def _c2r(x: Tensor, axes: tuple, norm: str, last: int) -> Tensor:
    return FFT_C2R((x,), (axes, norm, last))


def _c2r_shapes(ins: tuple, attrs: tuple) -> list:
    x, axes, last = ins[0], attrs[0], attrs[2]
    shape = list(x._v.shape)
    shape[axes[-1]] = last
    return [(tuple(shape), x.dtype.to_real())]


def _c2r_backward(node, g):
    axes, norm, last = node.attrs
    grad = _r2c(g, axes, _SWAP[norm])
    doubled = last - grad.shape[axes[-1]]  # bins 1..doubled stand for two of the full spectrum
    if doubled > 0:
        weights = np.ones(grad.shape[axes[-1]], np.float64)
        weights[1:1 + doubled] = 2
        view = [1] * grad.ndim
        view[axes[-1]] = -1
        grad = grad * Tensor._from_array(weights.reshape(view), g.dtype)
    return grad


FFT_C2C = Primitive("fft_c2c", lambda ins, attrs: [(ins[0]._v.shape, ins[0].dtype)], cpu=_c2c_kernel, cuda=None,
                    backward=_c2c_backward)
# (r2c's backward also reads the transformed dim's length, which its output no longer shows)
FFT_R2C = Primitive("fft_r2c", _r2c_shapes, cpu=_r2c_kernel, cuda=None, backward=_r2c_backward,
                    node_attrs=lambda ins, attrs: attrs + (ins[0]._v.shape[attrs[0][-1]],))
FFT_C2R = Primitive("fft_c2r", _c2r_shapes, cpu=_c2r_kernel, cuda=None, backward=_c2r_backward)


# -- argument handling ---------------------------------------------------------------------------------
def _norm(norm) -> str:
    if norm is None:
        return "backward"
    if norm not in _SWAP:
        raise RuntimeError(f'Invalid normalization mode: "{norm}"')
    return norm


def _wrap(dim, ndim: int, op: str) -> int:
    dim = as_int(dim, op, "dim")
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if not -ndim <= dim < ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-ndim}, {ndim - 1}], but got {dim})")
    return dim % ndim


def _check_input(op: str, x, real_only: bool = False) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"fft_{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}")
    if x.dtype.is_complex:
        if real_only:  # torch's wording differs between the 1-d and n-d transforms
            if op in ("rfft2", "rfftn"):
                raise RuntimeError(f"rfftn expects a real-valued input tensor, but got {torch_name(x.dtype)}")
            if op in ("ihfft2", "ihfftn"):
                raise RuntimeError(f"Only supports floating-point dtypes, but found: {torch_name(x.dtype)}")
            raise RuntimeError(f"{op} expects a real input tensor, but got {torch_name(x.dtype)}")
        return x
    if x.dtype in (dt.float16, dt.bfloat16):
        raise RuntimeError(f"Unsupported dtype {torch_name(x.dtype)}")
    return x if x.dtype.is_floating_point else copies.convert(x, dt.get_default_dtype())


def _dims_and_sizes(op: str, x: Tensor, s, dim, default_dims) -> tuple:
    """PyTorch's resolution of (s, dim): wrapped unique dims and the signal size along each."""
    if dim is not None:
        dims = [dim] if isinstance(dim, int) else list(dim)
        dims = [_wrap(d, x.ndim, op) for d in dims]
        if s is not None and len(s) != len(dims):
            raise RuntimeError("When given, dim and shape arguments must have the same length")
    elif s is not None:
        if len(s) > x.ndim:
            raise RuntimeError(f"Got shape with {len(s)} values but input tensor only has {x.ndim} dimensions.")
        dims = list(range(x.ndim - len(s), x.ndim))
    else:
        dims = [_wrap(d, x.ndim, op) for d in default_dims] if default_dims is not None else list(range(x.ndim))
    if len(set(dims)) != len(dims):
        raise RuntimeError("FFT dims must be unique")
    sizes = [x.shape[d] for d in dims] if s is None else [x.shape[d] if n == -1 else as_int(n, op, "s")
                                                           for d, n in zip(dims, s)]
    for n in sizes:
        if n < 1:
            raise RuntimeError(f"Invalid number of data points ({n}) specified")
    return tuple(dims), sizes


def _resize(x: Tensor, d: int, n: int) -> Tensor:
    """`x` trimmed or zero-padded to `n` along dim `d` (differentiable)."""
    have = x.shape[d]
    if have == n:
        return x
    if have > n:
        return x.narrow(d, 0, n)
    shape = list(x.shape)
    shape[d] = n - have
    return cat([x, zeros(shape, dtype=x.dtype, device=x.device)], d)


def _to_complex(x: Tensor) -> Tensor:
    """A real signal as complex numbers; its gradient is the real part (a cast would warn that it drops the
    imaginary part)."""
    return complex(x, zeros_like(x))


def _resized(x: Tensor, dims: tuple, sizes: list) -> Tensor:
    for d, n in zip(dims, sizes):
        x = _resize(x, d, n)
    return x


# -- the transforms ------------------------------------------------------------------------------------------
def _out(result: Tensor, out: Tensor | None) -> Tensor:
    return result if out is None else out.copy_(result)


def _complex_fft(op, input, s, dim, norm, forward, default_dims, out):
    x = _check_input(op, input)
    dims, sizes = _dims_and_sizes(op, x, s, dim, default_dims)
    x = _resized(x, dims, sizes)
    if not x.dtype.is_complex:
        x = _to_complex(x)
        if op == "ifft" and dims:  # torch's 1-d inverse of real input: the conjugate of the forward one (a conj view)
            return _out(conj(_c2c(x, dims, _SWAP[_norm(norm)], True)), out)
    return _out(_c2c(x, dims, _norm(norm), forward) if dims else copies.clone(x), out)


def _real_fft(op, input, s, dim, norm, default_dims, out, hermitian=False):
    x = _check_input(op, input, real_only=True)
    dims, sizes = _dims_and_sizes(op, x, s, dim, default_dims)
    x = _resized(x, dims, sizes)
    if hermitian:  # ihfft: the conjugate of r2c with the norm swapped (torch's 1-d one a conj view, the others not)
        conjugate = conj if op == "ihfft" else conj_physical
        return _out(conjugate(_r2c(x, dims, _SWAP[_norm(norm)])), out)
    return _out(_r2c(x, dims, _norm(norm)), out)


def _inverse_real_fft(op, input, s, dim, norm, default_dims, out, hermitian=False):
    x = _check_input(op, input)
    dims, sizes = _dims_and_sizes(op, x, s, dim, default_dims)
    if s is None:  # the last dim's output size defaults to 2 * (m - 1)
        sizes[-1] = 2 * (x.shape[dims[-1]] - 1)
        if sizes[-1] < 1:
            raise RuntimeError(f"Invalid number of data points ({sizes[-1]}) specified")
    last = sizes[-1]
    x = _resized(x, dims, sizes[:-1] + [last // 2 + 1])
    if not x.dtype.is_complex:
        x = _to_complex(x)
    norm = _norm(norm)
    if hermitian:  # hfft: c2r of the conjugate with the norm swapped
        return _out(_c2r(conj(x), dims, _SWAP[norm], last), out)
    return _out(_c2r(x, dims, norm, last), out)


def _one_dim(n, dim):
    return None if n is None else [n], [dim]


def fft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The one-dimensional discrete Fourier transform along `dim` (signal length `n`)."""
    return _complex_fft("fft", input, *_one_dim(n, dim), norm, True, None, out)


def ifft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The one-dimensional inverse discrete Fourier transform."""
    return _complex_fft("ifft", input, *_one_dim(n, dim), norm, False, None, out)


def rfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The one-sided FFT of a real signal (n // 2 + 1 bins)."""
    return _real_fft("rfft", input, *_one_dim(n, dim), norm, None, out)


def irfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The real signal of a one-sided spectrum (length n, by default 2 * (m - 1))."""
    return _inverse_real_fft("irfft", input, *_one_dim(n, dim), norm, None, out)


def hfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The (real) FFT of a Hermitian-symmetric signal given by its first half."""
    return _inverse_real_fft("hfft", input, *_one_dim(n, dim), norm, None, out, hermitian=True)


def ihfft(input: Tensor, n: int | None = None, dim: int = -1, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of hfft: the one-sided half of the inverse FFT of a real signal."""
    return _real_fft("ihfft", input, *_one_dim(n, dim), norm, None, out, hermitian=True)


def fft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional FFT (over the last two dims by default)."""
    return _complex_fft("fft2", input, s, dim, norm, True, None, out)


def ifft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional inverse FFT."""
    return _complex_fft("ifft2", input, s, dim, norm, False, None, out)


def rfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional FFT of a real signal, one-sided along the last dim."""
    return _real_fft("rfft2", input, s, dim, norm, None, out)


def irfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of rfft2."""
    return _inverse_real_fft("irfft2", input, s, dim, norm, None, out)


def hfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The two-dimensional FFT of a Hermitian-symmetric signal given by its half."""
    return _inverse_real_fft("hfft2", input, s, dim, norm, None, out, hermitian=True)


def ihfft2(input: Tensor, s=None, dim=(-2, -1), norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of hfft2."""
    return _real_fft("ihfft2", input, s, dim, norm, None, out, hermitian=True)


def fftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The N-dimensional FFT (over every dim by default, or the last len(s))."""
    return _complex_fft("fftn", input, s, dim, norm, True, None, out)


def ifftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The N-dimensional inverse FFT."""
    return _complex_fft("ifftn", input, s, dim, norm, False, None, out)


def rfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The N-dimensional FFT of a real signal, one-sided along the last dim."""
    return _real_fft("rfftn", input, s, dim, norm, None, out)


def irfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of rfftn."""
    return _inverse_real_fft("irfftn", input, s, dim, norm, None, out)


def hfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The N-dimensional FFT of a Hermitian-symmetric signal given by its half."""
    return _inverse_real_fft("hfftn", input, s, dim, norm, None, out, hermitian=True)


def ihfftn(input: Tensor, s=None, dim=None, norm: str | None = None, *, out=None) -> Tensor:
    """The inverse of hfftn."""
    return _real_fft("ihfftn", input, s, dim, norm, None, out, hermitian=True)


# -- frequencies and shifts -------------------------------------------------------------------------------
def fftfreq(n: int, d: float = 1.0, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
            requires_grad: bool = False) -> Tensor:
    """The sample frequencies of an n-point FFT: [0, 1, ..., -(n // 2), ..., -1] / (d * n)."""
    n = as_int(n, "fft_fftfreq", "n")
    ks = np.concatenate([np.arange(0, (n - 1) // 2 + 1), np.arange(-(n // 2), 0)]).astype(np.int64)
    return _frequencies(Tensor._from_array(ks), n, d, dtype, device, requires_grad, out)


def rfftfreq(n: int, d: float = 1.0, *, out=None, dtype: dt.dtype | None = None, layout=None, device=None,
             requires_grad: bool = False) -> Tensor:
    """The sample frequencies of rfft's n // 2 + 1 bins: [0, 1, ..., n // 2] / (d * n)."""
    n = as_int(n, "fft_rfftfreq", "n")
    return _frequencies(arange(n // 2 + 1), n, d, dtype, device, requires_grad, out)


def _frequencies(ks: Tensor, n: int, d: float, dtype, device, requires_grad: bool, out) -> Tensor:
    dtype = dtype or dt.get_default_dtype()
    result = copies.convert(ks, dtype) * (1.0 / (n * d))
    if device is not None:
        result = result.to(device)
    result.requires_grad_(requires_grad)
    return _out(result, out)


def _shift(input: Tensor, dim, sign: int) -> Tensor:
    dims = list(range(input.ndim)) if dim is None else [_wrap(d, input.ndim, "fftshift")
                                                         for d in ([dim] if isinstance(dim, int) else dim)]
    if not dims:
        return copies.clone(input)
    return roll(input, [sign * (input.shape[d] // 2) for d in dims], dims)


def fftshift(input: Tensor, dim=None) -> Tensor:
    """The zero frequency moved to the centre: roll by n // 2 along `dim` (every dim by default)."""
    return _shift(input, dim, 1)


def ifftshift(input: Tensor, dim=None) -> Tensor:
    """The inverse of fftshift: roll by -(n // 2)."""
    return _shift(input, dim, -1)



for _name in __all__:
    if _name not in ("fftfreq", "rfftfreq"):
        globals()[_name] = _torch_function.asking_tensor_likes(globals()[_name])
