"""torch.autograd: tidal.autograd plus torch's legacy `Variable` and the anomaly-mode switches."""
from __future__ import annotations

from ... import autograd as _tidal_autograd
from ...autograd import forward_ad
from . import functional  # torch.autograd.functional (tidal.func.autograd_functional)
from ...func.gradcheck import GradcheckError, gradcheck, gradgradcheck
from ...tensor import Tensor
from .._mirror import mirror
from ...autograd.anomaly import _anomaly, detect_anomaly, is_anomaly_enabled, set_detect_anomaly  # noqa: F401
from ...ops.factories.creation import empty
from . import function  # torch.autograd.function (once_differentiable) is reachable as an attribute
from . import profiler  # torch.autograd.profiler.profile


def Variable(data: Tensor | None = None, requires_grad: bool = False, volatile: bool = False) -> Tensor:
    """The pre-0.4 wrapper: a tensor sharing `data`'s memory, with `requires_grad` set (no data: an empty one)."""
    if volatile:
        import warnings
        warnings.warn("volatile was removed and now has no effect. Use `with torch.no_grad():` instead.",
                      UserWarning, stacklevel=2)
        if requires_grad:
            raise ValueError("Variable can't be volatile and require_grad at the same time!")
    if data is None:
        data = empty(0)
    if not isinstance(data, Tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
    out = data.detach()
    if requires_grad:
        out.requires_grad_(True)
    return out


_MULTITHREADING = [True]


class set_multithreading_enabled:
    """Whether backward may run device threads (tidal's engine runs on the caller's thread either way): set at once,
    and restored when used as a context manager."""

    def __init__(self, mode: bool) -> None:
        self.prev, _MULTITHREADING[0] = _MULTITHREADING[0], bool(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> bool:
        _MULTITHREADING[0] = self.prev
        return False

    def clone(self) -> "set_multithreading_enabled":
        return type(self)(_MULTITHREADING[0])


def is_multithreading_enabled() -> bool:
    """The switch set_multithreading_enabled sets (True by default)."""
    return _MULTITHREADING[0]


def kineto_available() -> bool:
    """False: the Kineto profiler library is not part of tidal (torch.profiler reports tidal's own timings)."""
    return False


__getattr__ = mirror(globals(), _tidal_autograd)
