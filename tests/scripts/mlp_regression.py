"""MLP regression on a synthetic nonlinear target, mini-batch SGD with momentum."""
import numpy as np
import torch
import torch.nn as nn

from _common import init_params, report

torch.manual_seed(0)
rng = np.random.default_rng(1)
x_np = rng.normal(size=(128, 8)).astype(np.float32)
y_np = (np.sin(x_np[:, :1]) + 0.5 * x_np[:, 1:2] * x_np[:, 2:3]).astype(np.float32)
x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)

model = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
init_params(model)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
criterion = nn.MSELoss()

losses = []
model.train()
for epoch in range(5):
    for i in range(0, len(x), 32):
        xb, yb = x[i:i + 32], y[i:i + 32]
        optimizer.zero_grad()
        loss = criterion(model(xb), yb)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

model.eval()
with torch.no_grad():
    final = criterion(model(x), y).item()
print(f"final mse {final:.4f}")
report(losses, final=final)
