"""The deprecated torch.testing.assert_allclose (old tutorials call it) against torch's: its FutureWarning,
NaNs equal, no dtype check, its default tolerances, torch's failure message."""
import warnings

import pytest
import torch
import torch.testing

import tidal.compat as tc


def _run(lib):
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.testing.assert_allclose(lib.tensor([1.0, float("nan")]), [1.00001, float("nan")])
        lib.testing.assert_allclose(lib.tensor([1, 2]), lib.tensor([1.0, 2.0]))
    out.append([(w.category.__name__, str(w.message)) for w in caught])
    for actual, expected in ((lib.tensor([1.0]), lib.tensor([1.1], dtype=lib.float64)),
                             (lib.tensor([1.0, 2.0]), [1.0, 2.001])):
        with pytest.raises(AssertionError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib.testing.assert_allclose(actual, expected)
        out.append(str(info.value))
    return out


def test_matches_torch():
    assert _run(tc) == _run(torch)
