"""Grad mode: whether ops record the graph. Context managers that double as decorators."""
from __future__ import annotations

import functools
import inspect

from ..tensor.tensor import GRAD_MODE as _state  # the switch's per-thread state lives beside inference mode
from ..tensor.tensor import INFERENCE


def is_grad_enabled() -> bool:
    """Whether ops on tensors that require grad record a graph (per thread)."""
    return _state.enabled


def _set(enabled: bool) -> None:
    _state.enabled = enabled


def is_inference_mode_enabled() -> bool:
    """Whether an inference_mode block is active."""
    return INFERENCE.now()


class _GradMode:
    """Base: set grad mode on enter, restore on exit; usable as a decorator."""

    _value = True

    def __init__(self, *args):
        self._prev = None

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self._value)
        return self

    def __exit__(self, *exc) -> bool:
        _set(self._prev)
        return False

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            return self._wrap_generator(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.__class__(*self._args()):
                return fn(*args, **kwargs)
        return wrapper

    def _wrap_generator(self, fn):
        """A generator function whose body runs in this mode at each resume (not the caller's between them)."""
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            gen = fn(*args, **kwargs)
            try:
                with self.clone():
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        with self.clone():
                            gen.close()
                        raise
                    except BaseException as exc:
                        with self.clone():
                            response = gen.throw(exc)
                    else:
                        with self.clone():
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return wrapper

    def _args(self) -> tuple:
        return ()

    def clone(self):
        """A fresh manager with the same setting."""
        return self.__class__(*self._args())


class no_grad(_GradMode):
    """Disable gradient recording inside the block (or the decorated function)."""

    _value = False


class enable_grad(_GradMode):
    """Enable gradient recording inside the block (or the decorated function)."""

    _value = True


class set_grad_enabled(_GradMode):
    """Set gradient recording to `mode`; takes effect at once, as in PyTorch, and as a context."""

    def __init__(self, mode: bool):
        if not isinstance(mode, bool):
            raise TypeError(f"set_grad_enabled(): argument 'enabled' (position 1) must be bool, not "
                            f"{type(mode).__name__}")
        super().__init__()
        self._value = mode
        self._prev = is_grad_enabled()
        _set(self._value)

    def __enter__(self):
        return self

    def _args(self) -> tuple:
        return (self._value,)


class inference_mode(_GradMode):
    """Like no_grad; tensors made inside are inference tensors (Tensor.is_inference)."""

    def __init__(self, mode: bool = True):
        super().__init__()
        self._value = not mode
        self._mode = mode

    def __enter__(self):
        self._prev_inf = is_inference_mode_enabled()
        INFERENCE.set(self._mode)
        return super().__enter__()

    def __exit__(self, *exc) -> bool:
        INFERENCE.set(self._prev_inf)
        return super().__exit__(*exc)

    def _args(self) -> tuple:
        return (self._mode,)
