"""Sorting short rows without ties through NumPy (ops/indexing/tie_order.py): the same indices as torch, and numba is
not imported for them (a fresh program's first sort would wait 0.6 s for it)."""
import subprocess
import sys

import numpy as np
import pytest
import torch

import tidal


@pytest.mark.parametrize("shape,dim", [((37,), 0), ((5, 300), 1), ((300, 4), 0), ((2, 3, 1024), -1)])
def test_short_rows_sort_select_as_torch(shape, dim):
    x = np.random.default_rng(len(shape)).standard_normal(shape)
    ours, theirs = tidal.tensor(x), torch.tensor(x)
    for descending in (False, True):
        np.testing.assert_array_equal(ours.sort(dim, descending=descending)[1].numpy(),
                                      theirs.sort(dim, descending=descending)[1].numpy())
    for largest in (True, False):
        got, want = ours.topk(3, dim, largest=largest), theirs.topk(3, dim, largest=largest)
        np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
        np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(ours.kthvalue(2, dim)[1].numpy(), theirs.kthvalue(2, dim)[1].numpy())


def test_short_rows_with_ties_or_nan_keep_torchs_indices():
    x = np.array([[2.0, 1.0, 2.0, 0.5, 1.0, 2.0], [np.nan, 1.0, np.nan, 3.0, 0.0, 1.0]])
    ours, theirs = tidal.tensor(x), torch.tensor(x)
    for descending in (False, True):
        np.testing.assert_array_equal(ours.sort(1, descending=descending)[1].numpy(),
                                      theirs.sort(1, descending=descending)[1].numpy())
    np.testing.assert_array_equal(ours.topk(2, 1)[1].numpy(), theirs.topk(2, 1)[1].numpy())
    np.testing.assert_array_equal(ours.kthvalue(3, 1)[1].numpy(), theirs.kthvalue(3, 1)[1].numpy())


def test_sorting_short_distinct_rows_does_not_import_numba():
    code = ("import sys, tidal\n"
            "x = tidal.tensor([3.0, 1.0, 2.0, 5.0])\n"
            "x.sort(); x.sort(descending=True); x.argsort(); x.topk(2); x.kthvalue(2)\n"
            "print(x.sort()[1].tolist(), 'numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[1, 2, 0, 3] False"


@pytest.mark.parametrize("ties", [False, True])
def test_long_float64_rows_sort_as_torch(ties):
    rng = np.random.default_rng(5)
    x = rng.integers(0, 50, 3000).astype(np.float64) if ties else rng.standard_normal(3000)
    for descending in (False, True):
        np.testing.assert_array_equal(tidal.tensor(x).sort(descending=descending)[1].numpy(),
                                      torch.tensor(x).sort(descending=descending)[1].numpy())
