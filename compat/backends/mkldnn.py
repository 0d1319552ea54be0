"""torch.backends.mkldnn: oneDNN flags, settable; tidal's CPU kernels do not use oneDNN."""
from __future__ import annotations

enabled = True


def is_available() -> bool:
    """False: tidal does not use oneDNN."""
    return False
