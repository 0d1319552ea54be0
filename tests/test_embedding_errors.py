"""F.embedding's errors as torch's, and an index error found by the kernel names `embedding` (the op the
user called), not the index_select it once ran as."""
import pytest
import torch
import torch.nn.functional as TF

import tidal
import tidal.compat as ttorch

F = ttorch.nn.functional

CASES = {
    "index past the end": lambda L, F, w: F.embedding(L.tensor([7]), w),
    "negative index": lambda L, F, w: F.embedding(L.tensor([-1]), w),
    "float indices": lambda L, F, w: F.embedding(L.tensor([1.0]), w),
    "bool indices": lambda L, F, w: F.embedding(L.tensor([True]), w),
    "1-d weight": lambda L, F, w: F.embedding(L.tensor([1]), w[0]),
    "padding_idx past the end": lambda L, F, w: F.embedding(L.tensor([1]), w, padding_idx=9),
    "int32 indices": lambda L, F, w: F.embedding(L.tensor([[1, 4]], dtype=L.int32), w),
    "2-d int64 indices": lambda L, F, w: F.embedding(L.tensor([[0, 2], [4, 4]]), w),
}


@pytest.mark.parametrize("name", list(CASES))
def test_as_torch(name):
    w = torch.randn(5, 3)
    try:
        want, want_exc = CASES[name](torch, TF, w), None
    except Exception as exc:  # noqa: BLE001 - the outcome is compared
        want, want_exc = None, exc
    try:
        got = CASES[name](ttorch, F, tidal.tensor(w.numpy()))
        got.numpy()
    except Exception as exc:  # noqa: BLE001
        assert want_exc is not None, f"tidal raises {exc!r}, torch gives a result"
        assert type(exc) is type(want_exc) and str(want_exc).split(" (")[0] in str(exc)
        return
    assert want_exc is None, f"tidal gives a result where torch raises {want_exc!r}"
    assert got.tolist() == want.tolist()


def test_kernel_index_error_names_embedding():
    w = tidal.randn(5, 3)
    idx = tidal.tensor([1, 2]) * 4  # computed on the VM: checked by the kernel in async mode
    with pytest.raises(IndexError, match="index out of range in self") as info:
        F.embedding(idx, w).sum().item()
    assert "index_select" not in str(info.value)
    if tidal.vm.get_mode() != "sync":
        assert str(info.value).startswith("embedding:")


def test_module_error_names_embedding():
    emb = ttorch.nn.Embedding(4, 2)
    with pytest.raises(IndexError) as info:
        emb(ttorch.tensor([0, 1]) + 3).sum().item()
    assert "index_select" not in str(info.value)


def test_gradient_unchanged():
    w = torch.randn(5, 3, requires_grad=True)
    idx = torch.tensor([[0, 2, 2], [4, 1, 0]])
    TF.embedding(idx, w, padding_idx=2).pow(2).sum().backward()
    tw = tidal.tensor(w.detach().numpy(), requires_grad=True)
    F.embedding(tidal.tensor(idx.numpy()), tw, padding_idx=2).pow(2).sum().backward()
    assert torch.allclose(torch.from_numpy(tw.grad.numpy()), w.grad)
