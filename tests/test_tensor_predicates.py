"""Tensor predicates for layouts and device kinds tidal has none of: values and kinds (property or method)
as torch's for a dense CPU tensor, and not settable."""
import pytest
import torch

import tidal.compat as ttorch

PROPERTIES = ["is_sparse", "is_sparse_csr", "is_quantized", "is_meta", "is_nested", "is_mkldnn", "is_mps", "is_xpu",
              "is_xla", "is_ipu", "is_maia", "is_mtia", "is_vulkan"]


@pytest.mark.parametrize("name", PROPERTIES)
def test_property_as_torch(name):
    for make in (lambda L: L.zeros(2, 3), lambda L: L.ones(3, requires_grad=True) * 2, lambda L: L.arange(4)[1:]):
        assert getattr(make(ttorch), name) is getattr(make(torch), name)
    assert isinstance(getattr(ttorch.Tensor, name), property)
    with pytest.raises(AttributeError):
        setattr(ttorch.zeros(1), name, True)


@pytest.mark.parametrize("name", ["is_distributed", "is_shared"])
def test_method_as_torch(name):
    assert getattr(ttorch.zeros(2), name)() is getattr(torch.zeros(2), name)()
