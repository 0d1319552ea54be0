"""The weights-only loader's allow-list: the plain-data globals it rebuilds (torch's list), the globals a program
allows with add_safe_globals / safe_globals, and torch's words when it refuses one."""
from __future__ import annotations

import codecs
import contextlib
import pickle
from collections import Counter, OrderedDict

from .tensor import dtype as dt

__all__ = ["add_safe_globals", "get_safe_globals", "clear_safe_globals", "safe_globals"]


# plain-data globals that are safe to call with any arguments: torch's weights-only allow-list (no frozenset or
# slice, which torch refuses)
_SAFE_GLOBALS = {("collections", "OrderedDict"): OrderedDict, ("collections", "Counter"): Counter,
                 ("_codecs", "encode"): codecs.encode}
for _module in ("builtins", "__builtin__"):  # protocol 2 names builtins the Python 2 way
    _SAFE_GLOBALS.update({(_module, f.__name__): f for f in (set, bytearray, complex)})

_user_safe_globals: dict = {}  # "module.qualname" -> object, added with add_safe_globals


def _global_name(obj) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def add_safe_globals(safe_globals: list) -> None:
    """Allow these functions/classes (or (object, "module.name") pairs) in weights_only loads."""
    for item in safe_globals:
        obj, name = item if isinstance(item, tuple) else (item, _global_name(item))
        _user_safe_globals[name] = obj


def get_safe_globals() -> list:
    """The globals added with add_safe_globals."""
    return list(_user_safe_globals.values())


def clear_safe_globals() -> None:
    """Forget every global added with add_safe_globals."""
    _user_safe_globals.clear()


@contextlib.contextmanager
def safe_globals(globals_list: list):
    """Allow these globals in weights_only loads inside a `with` block."""
    saved = dict(_user_safe_globals)
    add_safe_globals(globals_list)
    try:
        yield
    finally:
        _user_safe_globals.clear()
        _user_safe_globals.update(saved)


def _refusal(module: str, name: str, reason: str) -> pickle.UnpicklingError:
    """torch 2.13's words for a global a weights-only load refuses (its two options for a class that is merely
    not allow-listed, else the issue-filing form), and the pointer to its documentation."""
    message = f"Unsupported global: GLOBAL {module if module == name else f'{module}.{name}'} {reason}"
    return _weights_only_failure(message, reason.startswith("was not an allowed global by default."))


def _weights_only_failure(message: str, allowlisting: bool) -> pickle.UnpicklingError:
    """torch's 'Weights only load failed' error around the weights-only unpickler's `message`."""
    ns = dt.repr_namespace[0]
    unsafe = (f"In PyTorch 2.6, we changed the default value of the `weights_only` argument in `{ns}.load` from "
              f"`False` to `True`. Re-running `{ns}.load` with `weights_only` set to `False` will likely succeed, but "
              "it can result in arbitrary code execution. Do it only if you got the file from a trusted source.")
    if allowlisting:
        text = ("Weights only load failed. This file can still be loaded, to do so you have two options, \033[1mdo "
                f"those steps only if you trust the source of the checkpoint\033[0m. \n\t(1) {unsafe}\n\t(2) "
                "Alternatively, to load with `weights_only=True` please check the recommended steps in the following "
                f"error message.\n\tWeightsUnpickler error: {message}")
    else:
        text = (f"Weights only load failed. {unsafe}\nPlease file an issue with the following so that we can make "
                f"`weights_only=True` compatible with your use case: WeightsUnpickler error: {message}")
    return pickle.UnpicklingError(text + f"\n\nCheck the documentation of {ns}.load to learn more about types accepted "
                                  "by default with weights_only https://pytorch.org/docs/stable/generated/torch.load.html.")
