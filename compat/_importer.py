"""`import torch` resolving to tidal: the alias rule, the import hook, install(), and the runner.

`torch.<path>` stands for `tidal.compat.<path>` where compat defines it (the parts of torch
that differ), else `tidal.<path>` (the parts tidal spells like torch). install() puts every
commonly imported name into sys.modules at once and adds an import hook for the rest, so
`import torch.nn.modules.linear` finds `tidal.nn.modules.linear`. The aliases are the very
module objects, so `torch.nn.Linear is tidal.nn.Linear`.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import multiprocessing.spawn as _spawn
import os
import runpy
import sys
import types
import zipfile

from ..tensor import dtype as _dtype
from ..tensor.device import device
from ..tensor.dtype import dtype
from ..tensor.tensor import Size
from ..tensor.tensor import Tensor

__all__ = ["install", "uninstall", "is_installed", "run_script", "run_module", "SUBMODULES"]

# torch submodules scripts import by name; install() registers each one up front
SUBMODULES = ("nn", "nn.functional", "nn.init", "nn.utils", "nn.utils.rnn", "nn.parallel", "nn.modules",
              "nn.parameter", "optim", "optim.lr_scheduler", "utils", "utils.data", "utils.data.dataloader",
              "utils.data.dataset", "utils.data.sampler", "autograd", "cuda", "cuda.amp", "amp", "backends",
              "backends.cudnn", "backends.cuda", "backends.mps", "distributed", "testing", "onnx", "jit",
              "version", "func", "autograd.functional", "utils.checkpoint", "utils.benchmark", "nn.utils.parametrize",
              "nn.utils.parametrizations", "nn.utils.prune", "multiprocessing", "random", "_dynamo", "compiler")


def target_name(alias: str) -> str | None:
    """The tidal module that `alias` ('torch' or 'torch.<path>') stands for, or None."""
    path = alias[len("torch"):]
    for candidate in ("tidal.compat" + path, "tidal" + path):
        try:
            if importlib.util.find_spec(candidate) is not None:
                return candidate
        except ModuleNotFoundError:  # a parent along the way is a plain module, not a package
            continue
    return None


class _AliasLoader(importlib.abc.Loader):
    """Loads `torch.<path>` as the already-importable tidal module itself (no second copy)."""

    def __init__(self, target: str):
        self.target = target

    def create_module(self, spec):
        module = importlib.import_module(self.target)
        self._own_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        module.__spec__ = self._own_spec  # the import system stamped the alias's spec on it: undo that


class _TorchFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` and `torch.*` among tidal's modules."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != "torch" and not fullname.startswith("torch."):
            return None
        name = target_name(fullname)
        if name is None:
            return None  # the default machinery then reports "No module named 'torch....'"
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name))


_finder = _TorchFinder()
_command_line = _spawn.get_command_line


def _children_install(**kwds) -> list:
    """multiprocessing's command for a spawned child, installing tidal first: the child imports the script
    (for its functions) and unpickles tensors with `torch` resolving to tidal, as in this process."""
    command = _command_line(**kwds)
    if "-c" in command:
        at = command.index("-c") + 1
        command[at] = "import tidal.compat; tidal.compat.install(); " + command[at]
    return command
_displaced: dict = {}  # modules named torch* that install() took out of sys.modules


def _torch_names() -> list:
    return [name for name in sys.modules if name == "torch" or name.startswith("torch.")]


_class_modules: dict = {}  # class -> its own __module__, while install() shows torch's


def _torch_class_modules() -> dict:
    # the classes scripts print the type of, with the module torch defines them in (each importable under the
    # aliases, so pickle finds them by that name too)
    from ..nn.parameter import Parameter
    return {Tensor: "torch", Size: "torch", dtype: "torch", device: "torch", Parameter: "torch.nn.parameter"}


def install() -> None:
    """Make `import torch` and `import torch.<submodule>` give tidal in this process."""
    if is_installed():
        return
    for name in _torch_names():  # a real torch imported earlier must not shadow the aliases
        _displaced[name] = sys.modules.pop(name)
    sys.meta_path.insert(0, _finder)
    for alias in ("torch", *("torch." + path for path in SUBMODULES)):
        sys.modules[alias] = importlib.import_module(target_name(alias))
    _dtype.repr_namespace[0] = "torch"  # x.dtype and x.shape print as under torch
    for cls, module in _torch_class_modules().items():  # and type(x) too: <class 'torch.Tensor'>
        _class_modules[cls] = cls.__module__
        cls.__module__ = module
    _spawn.get_command_line = _children_install


def uninstall() -> None:
    """Undo install(): drop the aliases and give back any torch modules it displaced."""
    if not is_installed():
        return
    sys.meta_path.remove(_finder)
    _dtype.repr_namespace[0] = "tidal"
    for cls, module in _class_modules.items():
        cls.__module__ = module
    _class_modules.clear()
    _spawn.get_command_line = _command_line
    for name in _torch_names():
        del sys.modules[name]
    sys.modules.update(_displaced)
    _displaced.clear()


def is_installed() -> bool:
    """Whether install() is in force."""
    return _finder in sys.meta_path


def _fresh_main(**attrs) -> types.ModuleType:
    """A new `__main__` module, set up as python sets up the one it runs a program in."""
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __annotations__={}, **attrs)
    sys.modules["__main__"] = main
    return main


def run_script(path: str, args: list) -> None:
    """Run the file `path` as `python path args...` would, with `torch` resolving to tidal."""
    install()
    sys.argv = [path, *args]
    sys.path[0] = os.path.dirname(os.path.realpath(path))  # python resolves symlinks here...
    if os.path.isdir(path) or zipfile.is_zipfile(path):  # an application directory or zip: its __main__.py
        runpy.run_path(path, run_name="__main__")
        return
    file = os.path.join(os.getcwd(), path)  # ...but makes __file__ absolute without normalising it
    with io.open_code(file) as source:
        code = compile(source.read(), file, "exec", dont_inherit=True)
    main = _fresh_main(__file__=file, __cached__=None,
                       __loader__=importlib.machinery.SourceFileLoader("__main__", file))
    exec(code, main.__dict__)


def run_module(name: str, args: list) -> None:
    """Run module `name` as `python -m name args...` would, with `torch` resolving to tidal."""
    install()
    sys.argv = [name, *args]
    sys.path[0] = os.getcwd()
    _fresh_main()
    runpy._run_module_as_main(name)  # what `python -m` itself calls: argv[0] becomes the module's file
