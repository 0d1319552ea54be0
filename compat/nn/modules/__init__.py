"""torch.nn.modules: tidal.nn.modules laid out as torch lays it out.

tidal files its layers by its own concerns (MultiheadAttention in attention.py, the containers in
nn/containers.py, the lazy layers in lazy.py...), while scripts name torch's files:
`torch.nn.modules.activation.MultiheadAttention` in a `safe_globals` list, `torch.nn.modules.module.Module`
in isinstance checks. Each torch file whose names tidal keeps elsewhere is a module here holding
tidal's file of that name (where there is one) plus the names torch keeps in it; the rest resolve to
tidal.nn.modules itself.
"""
from __future__ import annotations

import collections.abc
import importlib.machinery
import itertools
import sys
import types

from .... import nn as _tidal_nn
from ....nn import modules as _tidal_modules
from ..._mirror import mirror

# torch's file -> the names torch defines there that tidal's file of that name lacks
_TORCH_FILES = {
    "activation": ("MultiheadAttention",),
    "batchnorm": ("LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm"),
    "container": ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"),
    "conv": ("LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
             "LazyConvTranspose3d"),
    "distance": ("PairwiseDistance", "CosineSimilarity"),
    "fold": ("Fold", "Unfold"),
    "instancenorm": ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LazyInstanceNorm1d",
                     "LazyInstanceNorm2d", "LazyInstanceNorm3d"),
    "linear": ("LazyLinear",),
    "module": ("Module",),
    "normalization": ("CrossMapLRN2d",),
    "pixelshuffle": ("PixelShuffle", "PixelUnshuffle"),
    "upsampling": ("Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"),
}


def _torch_file(name: str, extra: tuple) -> types.ModuleType:
    """The module standing for torch.nn.modules.<name>: tidal's file of that name, plus `extra`."""
    full = f"{__name__}.{name}"
    module = types.ModuleType(full, f"torch.nn.modules.{name}, over tidal's layers.")
    module.__spec__ = importlib.machinery.ModuleSpec(full, None)  # so the torch import hook finds it
    own = getattr(_tidal_modules, name, None)
    names = list(getattr(own, "__all__", ())) + list(extra)
    for attr in names:
        setattr(module, attr, getattr(own, attr) if hasattr(own, attr) else getattr(_tidal_nn, attr))
    module.__all__ = names
    sys.modules[full] = module
    return module


for _name, _extra in _TORCH_FILES.items():
    globals()[_name] = _torch_file(_name, _extra)

# the private bases libraries test layers against (timm, torchvision: isinstance(m, nn.modules.batchnorm._BatchNorm))
# and torch's private helpers custom layers call (the conv bases, _addindent in reprs)
for _file, _source, _names in (("batchnorm", _tidal_modules.batchnorm, ("_NormBase", "_BatchNorm")),
                               ("instancenorm", _tidal_modules.batchnorm, ("_InstanceNorm",)),
                               ("conv", _tidal_modules.conv, ("_ConvNd", "_ConvTransposeNd")),
                               ("module", _tidal_nn.module, ("_addindent",))):
    for _n in _names:
        setattr(globals()[_file], _n, getattr(_source, _n))

# torch.nn.modules itself exports Module and the containers (`from torch.nn.modules import Module`)
Module = module.Module  # noqa: F821 - made by the loop above
Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict = (  # noqa: F821
    getattr(container, _n) for _n in ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"))

# torch.nn.modules.module also holds the global module hooks (tidal keeps them in nn/module_hooks.py)
from ....nn import module_hooks as _module_hooks  # noqa: E402

for _hook_name in _module_hooks.__all__:
    setattr(module, _hook_name, getattr(_module_hooks, _hook_name))  # noqa: F821 - `module` made just above
    module.__all__.append(_hook_name)  # noqa: F821


def _ntuple(n: int, name: str = "parse"):
    """torch.nn.modules.utils._ntuple: a function making an n-tuple of a number (an iterable stays as is)."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))
    parse.__name__ = name
    return parse


utils = types.ModuleType(f"{__name__}.utils", "torch.nn.modules.utils: the n-tuple helpers layers import.")
utils.__spec__ = importlib.machinery.ModuleSpec(utils.__name__, None)
utils._ntuple = _ntuple
utils._single, utils._pair = _ntuple(1, "_single"), _ntuple(2, "_pair")
utils._triple, utils._quadruple = _ntuple(3, "_triple"), _ntuple(4, "_quadruple")
# torch's: reverse `t` and repeat each element n times (a layer's padding as F.pad takes it)
utils._reverse_repeat_tuple = lambda t, n: tuple(x for x in reversed(t) for _ in range(n))
from ....nn.state_dict import consume_prefix_in_state_dict_if_present  # noqa: E402 - DDP checkpoints' helper

utils.consume_prefix_in_state_dict_if_present = consume_prefix_in_state_dict_if_present
sys.modules[utils.__name__] = utils

__getattr__ = mirror(globals(), _tidal_modules)
