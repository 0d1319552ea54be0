"""Variational autoencoder on synthetic binary 8x8 images: reparameterization, BCE + KL loss."""
import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

from _common import init_params, report


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc21 = nn.Linear(32, 4)
        self.fc22 = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps):
        std = torch.exp(0.5 * logvar)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps):
        mu, logvar = self.encode(x.view(-1, 64))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


def loss_function(recon_x, x, mu, logvar):
    bce = F.binary_cross_entropy(recon_x, x.view(-1, 64), reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return bce + kld


torch.manual_seed(0)
rng = np.random.default_rng(3)
prototypes = rng.random((4, 64)) < 0.5
data = np.where(rng.random((64, 64)) < 0.9, prototypes[rng.integers(0, 4, 64)], ~prototypes[0]).astype(np.float32)
data = torch.from_numpy(data.reshape(64, 1, 8, 8))
# the noise of the reparameterization trick comes from NumPy so both frameworks draw the same samples
noise = rng.standard_normal((20, 16, 4)).astype(np.float32)

model = VAE()
init_params(model)
optimizer = optim.Adam(model.parameters(), lr=1e-2)

losses = []
model.train()
step = 0
for epoch in range(5):
    for i in range(0, len(data), 16):
        batch = data[i:i + 16]
        optimizer.zero_grad()
        recon, mu, logvar = model(batch, torch.from_numpy(noise[step]))
        loss = loss_function(recon, batch, mu, logvar)
        loss.backward()
        optimizer.step()
        losses.append(loss.item() / len(batch))
        step += 1

with torch.no_grad():
    sample = model.decode(torch.from_numpy(noise[0][:2]))
report(losses, sample_mean=float(sample.mean()))
