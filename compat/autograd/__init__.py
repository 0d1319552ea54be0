"""torch.autograd: tidal.autograd plus torch's legacy `Variable` and the anomaly-mode switches."""
from __future__ import annotations

from ... import autograd as _tidal_autograd
from ...autograd import forward_ad, functional
from ...autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ...tensor import Tensor
from .._mirror import mirror
from ...autograd.anomaly import _anomaly, detect_anomaly, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
from . import function  # torch.autograd.function (once_differentiable) is reachable as an attribute
from . import profiler  # torch.autograd.profiler.profile


def Variable(data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:
    """The pre-0.4 wrapper: a tensor sharing `data`'s memory, with `requires_grad` set."""
    out = data.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


__getattr__ = mirror(globals(), _tidal_autograd)
