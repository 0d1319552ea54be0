"""DataLoader over a TensorDataset: batches gathered by rows (one op per tensor) equal torch's collated samples,
and every case that path does not take (grad, odd indices, subclasses, custom collate) behaves as torch's."""
import numpy as np
import pytest
import torch

import tidal.compat as tc


def _data(lib, requires_grad=False):
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal((37, 3, 4)).astype(np.float32), requires_grad=requires_grad)
    y = lib.tensor(rng.integers(0, 10, 37))
    mask = lib.tensor(rng.random(37) < 0.5)
    return x, y, mask


def _batches(lib, shuffle, batch_size=8, drop_last=False, dataset=None, **kw):
    g = lib.Generator()
    g.manual_seed(7)
    data = dataset if dataset is not None else lib.utils.data.TensorDataset(*_data(lib))
    loader = lib.utils.data.DataLoader(data, batch_size=batch_size, shuffle=shuffle, drop_last=drop_last,
                                       generator=g, **kw)
    return list(loader)


def _same(got, want):
    assert type(got) is list and type(want) is list and len(got) == len(want)
    for a, b in zip(got, want):
        assert str(a.dtype) == str(b.dtype).replace("torch.", "tidal.")
        assert tuple(a.shape) == tuple(b.shape)
        assert a.is_contiguous()
        np.testing.assert_array_equal(a.numpy(), b.numpy())


@pytest.mark.parametrize("shuffle, drop_last", [(False, False), (True, False), (True, True)])
def test_batches_equal_torch(shuffle, drop_last, monkeypatch):
    rows = []
    plain = tc.utils.data.TensorDataset.__getitem__
    monkeypatch.setattr(tc.utils.data.TensorDataset, "__getitem__", lambda self, i: rows.append(i) or plain(self, i))
    got, want = _batches(tc, shuffle, drop_last=drop_last), _batches(torch, shuffle, drop_last=drop_last)
    assert rows == []  # gathered by rows, never sample by sample
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _same(a, b)


def test_a_dataset_that_requires_grad_stacks_as_torch():
    got = _batches(tc, False, dataset=tc.utils.data.TensorDataset(*_data(tc, True)))
    want = _batches(torch, False, dataset=torch.utils.data.TensorDataset(*_data(torch, True)))
    assert got[0][0].grad_fn.name() == want[0][0].grad_fn.name() == "StackBackward0"
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a[0].detach().numpy(), b[0].detach().numpy())


@pytest.mark.parametrize("indices", [[[0, -1, 3]], [[0, 40]]], ids=["negative", "past the end"])
def test_indices_from_a_custom_sampler_as_torch(indices):
    def load(lib):
        data = lib.utils.data.TensorDataset(*_data(lib))
        try:
            return [b[1].numpy().tolist() for b in lib.utils.data.DataLoader(data, batch_sampler=indices)]
        except Exception as e:  # noqa: BLE001 - compared with torch's
            return type(e).__name__, str(e)
    assert load(tc) == load(torch)


def test_a_subclass_and_a_custom_collate_see_every_sample():
    def subclass(lib):
        class Doubled(lib.utils.data.TensorDataset):
            def __getitem__(self, i):
                x, y, m = super().__getitem__(i)
                return x * 2, y, m
        return Doubled(*_data(lib))
    _same(_batches(tc, True, dataset=subclass(tc))[1], _batches(torch, True, dataset=subclass(torch))[1])

    def firsts(lib):
        return _batches(lib, True, collate_fn=lambda samples: [s[1] for s in samples])
    got, want = firsts(tc), firsts(torch)
    assert [[int(v) for v in b] for b in got] == [[int(v) for v in b] for b in want]


def test_a_random_split_subset_gathers_rows_as_torch(monkeypatch):
    def load(lib):
        g = lib.Generator()
        g.manual_seed(3)
        train, _ = lib.utils.data.random_split(lib.utils.data.TensorDataset(*_data(lib)), [30, 7], generator=g)
        return _batches(lib, True, dataset=train)
    rows = []
    plain = tc.utils.data.TensorDataset.__getitem__
    monkeypatch.setattr(tc.utils.data.TensorDataset, "__getitem__", lambda self, i: rows.append(i) or plain(self, i))
    got, want = load(tc), load(torch)
    assert rows == []
    assert len(got) == len(want)
    for a, b in zip(got, want):
        _same(a, b)
