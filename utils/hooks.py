"""torch.utils.hooks: the handle hook registrations return, for code that makes or checks its own."""
from __future__ import annotations

import warnings
from typing import Callable

from ..nn.hooks import RemovableHandle

__all__ = ["RemovableHandle", "unserializable_hook", "warn_if_has_hooks"]


def unserializable_hook(f: Callable) -> Callable:
    """Mark a hook as one that is not serialized with its tensor (the mark torch's warn_if_has_hooks reads)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """torch's warning for a tensor with backward hooks being serialized (hooks are not saved)."""
    hooks = tensor.__dict__.get("_hooks_list") if hasattr(tensor, "__dict__") else None
    for hook in hooks or ():
        if not getattr(hook, "__torch_unserializable__", False):
            name = getattr(hook, "__name__", repr(hook))
            warnings.warn(f"backward hook {name} on tensor will not be serialized.  If this is expected, you can "
                          "decorate the function with @torch.utils.hooks.unserializable_hook to suppress this "
                          "warning", stacklevel=2)

