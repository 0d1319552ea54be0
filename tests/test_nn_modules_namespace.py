"""torch.nn.modules' own namespace under compat: every public class torch exports there (Module and the
containers included, as `from torch.nn.modules import Module` needs) is the tidal class of the same name."""
import inspect

import pytest
import torch
import torch.nn.modules

import tidal
import tidal.compat as tc


def _public_classes(space) -> set:
    return {n for n in dir(space) if not n.startswith("_") and inspect.isclass(getattr(space, n))}


def test_every_class_torch_nn_modules_exports():
    missing = sorted(_public_classes(torch.nn.modules) - _public_classes(tc.nn.modules))
    assert missing == []
    assert tc.nn.modules.Module is tidal.nn.Module and tc.nn.modules.ModuleList is tidal.nn.ModuleList


def test_classes_present_are_tidal_s():
    for name in sorted(_public_classes(torch.nn.modules) & _public_classes(tc.nn.modules)):
        assert getattr(tc.nn.modules, name) is getattr(tidal.nn, name), name
