"""A one-dimensional Fourier neural operator (spectral convolutions over rfft modes with complex weights held as
real pairs) learning a smoothing operator; ends with stft statistics of its prediction and fft round trips."""
import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

from _common import init_params, report


class SpectralConv1d(nn.Module):
    def __init__(self, channels, modes):
        super().__init__()
        self.modes = modes
        self.weight = nn.Parameter(torch.empty(channels, channels, modes, 2))

    def forward(self, x):
        spec = torch.fft.rfft(x, norm="ortho")                       # (batch, in, freq)
        w = torch.view_as_complex(self.weight)                       # (in, out, modes)
        low = torch.matmul(spec[..., :self.modes].permute(2, 0, 1), w.permute(2, 0, 1)).permute(1, 2, 0)
        rest = torch.zeros(x.shape[0], w.shape[1], spec.shape[-1] - self.modes, dtype=spec.dtype)
        return torch.fft.irfft(torch.cat([low, rest], -1), n=x.shape[-1], norm="ortho")


class FNO(nn.Module):
    def __init__(self, width=8, modes=6):
        super().__init__()
        self.lift = nn.Conv1d(1, width, 1)
        self.spectral = nn.ModuleList([SpectralConv1d(width, modes) for _ in range(2)])
        self.skip = nn.ModuleList([nn.Conv1d(width, width, 1) for _ in range(2)])
        self.project = nn.Conv1d(width, 1, 1)

    def forward(self, x):
        h = self.lift(x)
        for spectral, skip in zip(self.spectral, self.skip):
            h = F.gelu(spectral(h) + skip(h))
        return self.project(h)


rng = np.random.default_rng(11)
signals = rng.standard_normal((64, 1, 32)).astype(np.float32)
kernel = np.exp(-0.5 * (np.arange(-4, 5) / 1.5) ** 2)
kernel /= kernel.sum()
targets = np.stack([np.convolve(np.concatenate([s[0, -4:], s[0], s[0, :4]]), kernel, "valid") for s in signals])
x, y = torch.from_numpy(signals), torch.from_numpy(targets[:, None].astype(np.float32))

model = FNO()
init_params(model)
optimizer = optim.Adam(model.parameters(), lr=1e-2)
losses = []
for step in range(30):
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    losses.append(loss.item())

with torch.no_grad():
    pred = model(x[:4])
    spec = torch.stft(pred[:, 0], 8, hop_length=2, window=torch.hann_window(8), return_complex=True)
    energy = spec.abs().pow(2).mean().item()
    centred = torch.fft.fftshift(torch.fft.fft2(pred[:, 0]), dim=-1)
    back = torch.fft.ifft2(torch.fft.ifftshift(centred, dim=-1)).real
    roundtrip = (back - pred[:, 0]).abs().max().item()
    freqs = torch.fft.rfftfreq(32, d=0.5)
    mean_freq = (torch.fft.rfft(pred[:, 0]).abs() * freqs).sum().item()
report(losses, stft_energy=energy, mean_frequency=mean_freq, roundtrip_ok=float(roundtrip < 1e-4))
