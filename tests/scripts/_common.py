"""Framework-neutral helpers shared by the end-to-end scripts: weights and output that do not depend on the RNG."""
import json

import numpy as np
import torch


def init_params(model, seed=0):
    """Fill every parameter from NumPy so torch and tidal start from identical weights."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                fan_in = int(np.prod(p.shape[1:]))
                values = rng.normal(0.0, 1.0 / np.sqrt(fan_in), size=tuple(p.shape))
            elif name.endswith("weight"):  # normalization scales
                values = np.ones(tuple(p.shape))
            else:
                values = rng.uniform(-0.1, 0.1, size=tuple(p.shape))
            p.copy_(torch.from_numpy(values.astype(np.float32)))


def report(losses, **extra):
    """Print the per-step losses (and any extras) as JSON on the last line."""
    print(json.dumps({"losses": [float(x) for x in losses], "framework": torch.__name__, **extra}))
