"""torch.autograd: tidal.autograd plus torch's legacy `Variable` and the anomaly-mode switches."""
from __future__ import annotations

from ... import autograd as _tidal_autograd
from ...autograd import forward_ad, functional
from ...autograd.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ...tensor import Tensor
from .._mirror import mirror

_anomaly = {"enabled": False, "check_nan": True}


def Variable(data: Tensor, requires_grad: bool = False, volatile: bool = False) -> Tensor:
    """The pre-0.4 wrapper: a tensor sharing `data`'s memory, with `requires_grad` set."""
    out = data.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


def set_detect_anomaly(mode: bool, check_nan: bool = True) -> None:
    """Record the flag; tidal's backward does not add anomaly checks."""
    _anomaly.update(enabled=bool(mode), check_nan=bool(check_nan))


def is_anomaly_enabled() -> bool:
    """Whether set_detect_anomaly(True) is in force."""
    return _anomaly["enabled"]


class detect_anomaly:
    """`with detect_anomaly():` turns the (recorded-only) anomaly flag on for the block."""

    def __init__(self, check_nan: bool = True) -> None:
        self.check_nan = check_nan

    def __enter__(self) -> None:
        self._saved = dict(_anomaly)
        set_detect_anomaly(True, self.check_nan)

    def __exit__(self, *exc) -> bool:
        _anomaly.update(self._saved)
        return False


__getattr__ = mirror(globals(), _tidal_autograd)
