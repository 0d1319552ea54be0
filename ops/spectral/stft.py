"""Short-time Fourier transforms: stft and istft, composed of padding, framing, windows, tidal.fft and
overlap-add (F.fold), so they run on the VM and differentiate through their parts, as PyTorch's.
"""
from __future__ import annotations

import warnings

from ...tensor import Tensor
from . import fft as _fft
from ..complex_numbers.tensors import complex as _complex
from ..complex_numbers.tensors import imag as _imag
from ..complex_numbers.tensors import real as _real
from ..complex_numbers.tensors import view_as_real
from ..factories.creation import ones, zeros
from ..movement.shape_ops import cat
from ..dispatch.user_frame import user_stacklevel
from ..movement.padding import pad as _pad
from ..windowed.fold import fold

__all__ = ["stft", "istft"]
METHODS: dict = {}


_NO_WINDOW_WARNED: list = []  # istft without a window has warned


def _padded_window(window: Tensor | None, n_fft: int, win_length: int, like: Tensor, where: str) -> Tensor:
    """The window as n_fft samples: ones by default, centred in zeros when win_length < n_fft."""
    if window is None:
        window = ones(win_length, dtype=like.dtype.to_real(), device=like.device)
    elif window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"{where}: expected a 1D window tensor of size equal to win_length={win_length}, but got "
                           f"window with size {list(window.shape)}")
    if win_length < n_fft:
        left = (n_fft - win_length) // 2
        window = cat([zeros(left, dtype=window.dtype, device=window.device), window,
                           zeros(n_fft - win_length - left, dtype=window.dtype, device=window.device)])
    return window


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None, align_to_window=None) -> Tensor:
    """The short-time Fourier transform: (freq, frames) per signal, as torch.stft."""
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real inputs, and will "
                               "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D tensor")
    if align_to_window is not None and center:
        raise RuntimeError("stft align_to_window should only be set when center = false")
    if center:
        pad = n_fft // 2
        shape = input.shape
        input = _pad(input.reshape((1,) * (3 - input.ndim) + tuple(shape)), [pad, pad], mode=pad_mode)
        input = input.reshape(input.shape[-len(shape):])
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    x = input if input.ndim == 2 else input.unsqueeze(0)
    length = x.shape[1]
    where = "stft"
    if not 0 < n_fft <= length:
        raise RuntimeError(f"{where}: expected 0 < n_fft < {length}, but got n_fft={n_fft}")
    if hop_length <= 0:
        raise RuntimeError(f"{where}: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{where}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if not return_complex and not complex_in:
        warnings.warn("stft with return_complex=False is deprecated. In a future pytorch release, stft will return "
                      "complex tensors for all inputs, and return_complex=False will raise an error.\nNote: you can "
                      "still call torch.view_as_real on the complex output to recover the old return format.",
                      UserWarning, stacklevel=user_stacklevel())
    if window is None:
        warnings.warn("A window was not provided. A rectangular window will be applied,which is known to cause "
                      "spectral leakage. Other windows such as torch.hann_window or torch.hamming_window are "
                      "recommended to reduce spectral leakage.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning,
                      stacklevel=2)
    if align_to_window and win_length < n_fft:
        # frames start where their window does: the signal gains the window's zero margins on both sides
        left = (n_fft - win_length) // 2
        x = _pad(x, [left, n_fft - win_length - left])
    frames = x.unfold(1, n_fft, hop_length) * _padded_window(window, n_fft, win_length, x, where)
    onesided = not complex_in if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spectrum = (_fft.rfft if onesided else _fft.fft)(frames, norm=norm).transpose(1, 2)
    if input.ndim == 1:
        spectrum = spectrum.squeeze(0)
    return spectrum if return_complex else view_as_real(spectrum)


def _overlap_add(frames: Tensor, hop: int, length: int) -> Tensor:
    """Frames (B, n_fft, T) summed into signals (B, length) at hop strides."""
    if frames.dtype.is_complex:
        return _complex(_overlap_add(_real(frames), hop, length), _overlap_add(_imag(frames), hop, length))
    n_fft = frames.shape[1]
    return fold(frames, (1, length), (1, n_fft), stride=(1, hop)).reshape(frames.shape[0], length)


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
          length: int | None = None, return_complex: bool = False) -> Tensor:
    """The inverse short-time Fourier transform (windowed overlap-add), as torch.istft."""
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output from stft with "
                           "return_complex=True.")
    if input.ndim < 2:  # torch's words: it asks a 1-D input (made 2-D) for dim -3, a 0-d one for dim -2
        lo = -2 if input.ndim else -1
        raise IndexError(f"istft: Dimension out of range (expected to be in range of [{lo}, {-lo - 1}], but got "
                         f"{lo - 1})")
    hop_length = n_fft // 4 if hop_length is None else hop_length
    win_length = n_fft if win_length is None else win_length
    x = input if input.ndim == 3 else input.unsqueeze(0)
    fft_size, n_frames = x.shape[1], x.shape[2]
    onesided = fft_size != n_fft if onesided is None else onesided
    where = "istft"
    if onesided and n_fft // 2 + 1 != fft_size:
        raise RuntimeError(f"{where}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft / 2 + 1 when onesided=True, but got {fft_size}")
    if not onesided and n_fft != fft_size:
        raise RuntimeError(f"{where}: expected the frequency dimension (3rd to the last) of the input tensor to "
                           f"match n_fft when onesided=False, but got {fft_size}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"{where}: expected 0 < win_length <= n_fft, but got win_length={win_length}")
    if window is None and not _NO_WINDOW_WARNED:  # torch's TORCH_WARN_ONCE
        _NO_WINDOW_WARNED.append(True)
        warnings.warn("A window was not provided. A rectangular window will be applied.Please provide the same window "
                      "used by stft to make the inversion lossless.To suppress this warning and use a rectangular "
                      "window, explicitly set `window=torch.ones(n_fft, device=<device>)`.", UserWarning,
                      stacklevel=user_stacklevel())
    window = _padded_window(window, n_fft, win_length, x, where)
    x = x.transpose(1, 2)  # (B, frames, freq)
    norm = "ortho" if normalized else "backward"
    if return_complex:
        if onesided:
            raise RuntimeError("cannot have onesided output if window or input is complex")
        frames = _fft.ifft(x, norm=norm)
    else:
        if not onesided:
            x = x.narrow(-1, 0, n_fft // 2 + 1)
        frames = _fft.irfft(x, n=n_fft, norm=norm)
    frames = (frames * window).transpose(1, 2)  # (B, n_fft, frames)
    expected = n_fft + hop_length * (n_frames - 1)
    y = _overlap_add(frames, hop_length, expected)
    envelope = _overlap_add((window * window).reshape(1, n_fft, 1).expand(1, n_fft, n_frames), hop_length,
                            expected)
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (expected - n_fft // 2 if center else expected)
    stop = min(end, expected)
    y, envelope = y[:, start:stop], envelope[:, start:stop]
    if bool((envelope.abs() < 1e-11).any()):
        raise RuntimeError(f"{where}: window overlap add min: {float(envelope.abs().min())}")
    y = y / envelope
    if end > expected:
        y = cat([y, zeros((y.shape[0], end - expected), dtype=y.dtype, device=y.device)], 1)
    return y.squeeze(0) if input.ndim == 2 else y


METHODS.update(stft=stft, istft=istft)
