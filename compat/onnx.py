"""torch.onnx: importable so scripts load; tidal cannot export ONNX graphs."""
from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def export(model, args=(), f=None, **kwargs):
    """Not supported: tidal records no graph to export."""
    raise NotImplementedError("torch.onnx.export: tidal cannot export ONNX models")


def is_in_onnx_export() -> bool:
    """False: no export is ever running."""
    return False
