"""torch.utils.tensorboard: SummaryWriter writing TensorBoard event files (scalars, histograms, text, images,
hyperparameters). Like torch's, it needs the `tensorboard` package (its protocol buffers and event writer)
and refuses to import without it."""
from __future__ import annotations

try:
    import tensorboard
except ModuleNotFoundError:  # torch's message, whatever is missing
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above") from None


def _version(text: str) -> tuple:
    parts = []
    for p in text.split(".")[:2]:
        digits = "".join(c for c in p if c.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


if _version(getattr(tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above")
del tensorboard

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
