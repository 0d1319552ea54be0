"""Variational autoencoder written with torch.distributions: an Independent Normal posterior, a Bernoulli decoder
likelihood, kl_divergence to the prior, reparameterized samples (through icdf during training so both frameworks
draw the same noise from NumPy, and through rsample for the final checks)."""
import numpy as np
import torch
from torch import nn, optim
from torch.distributions import Bernoulli, Independent, Normal, kl_divergence
from torch.nn import functional as F

from _common import init_params, report


class VAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 32)
        self.fc_mu = nn.Linear(32, 4)
        self.fc_logvar = nn.Linear(32, 4)
        self.fc3 = nn.Linear(4, 32)
        self.fc4 = nn.Linear(32, 64)

    def posterior(self, x):
        h = F.relu(self.fc1(x.view(-1, 64)))
        mu, logvar = self.fc_mu(h), self.fc_logvar(h)
        return Independent(Normal(mu, torch.exp(0.5 * logvar)), 1)

    def likelihood(self, z):
        return Independent(Bernoulli(logits=self.fc4(F.relu(self.fc3(z)))), 1)


def elbo_loss(model, x, u):
    q = model.posterior(x)
    prior = Independent(Normal(torch.zeros_like(q.mean), torch.ones_like(q.mean)), 1)
    z = q.base_dist.icdf(u)  # reparameterized: z = mu + sigma * Phi^-1(u)
    log_lik = model.likelihood(z).log_prob(x.view(-1, 64))
    return (kl_divergence(q, prior) - log_lik).sum(), q


torch.manual_seed(0)
rng = np.random.default_rng(5)
prototypes = rng.random((4, 64)) < 0.5
data = np.where(rng.random((64, 64)) < 0.9, prototypes[rng.integers(0, 4, 64)], ~prototypes[0]).astype(np.float32)
data = torch.from_numpy(data.reshape(64, 1, 8, 8))
uniforms = rng.uniform(0.02, 0.98, (20, 16, 4)).astype(np.float32)

model = VAE()
init_params(model)
optimizer = optim.Adam(model.parameters(), lr=1e-2)

losses = []
step = 0
for epoch in range(5):
    for i in range(0, len(data), 16):
        batch = data[i:i + 16]
        optimizer.zero_grad()
        loss, q = elbo_loss(model, batch, torch.from_numpy(uniforms[step]))
        loss.backward()
        optimizer.step()
        losses.append(loss.item() / len(batch))
        step += 1

q = model.posterior(data[:8])
prior = Independent(Normal(torch.zeros(4), torch.ones(4)), 1)
kl = kl_divergence(q, prior).mean().item()
draws = q.rsample((2000,))  # the framework's own noise: only its statistics can be compared
standardized = ((draws - q.mean) / q.stddev).detach()
mu = q.base_dist.loc.detach().requires_grad_()
sigma = q.base_dist.scale.detach()
(grad,) = torch.autograd.grad(Normal(mu, sigma).rsample((7,)).sum(), [mu])
with torch.no_grad():
    sample_mean = model.likelihood(torch.from_numpy(uniforms[0][:2]) - 0.5).mean.mean().item()
report(losses, kl=kl, sample_mean=sample_mean, rsample_grad=grad.sum().item(),
       standardized=[standardized.mean().item(), standardized.std().item()])
