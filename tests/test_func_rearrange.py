"""torch.func.rearrange (einops-style) against torch's: shapes and values for transposes, compositions,
decompositions with axes_lengths, unit axes, ellipses (bare and grouped), lists of tensors, and the errors."""
import numpy as np
import pytest
import torch
from torch.func import rearrange as torch_rearrange

import tidal
from tidal.func.einops import rearrange

CASES = [
    ((2, 3, 4), "a b c -> c a b", {}),
    ((2, 3, 4), "a b c -> a (b c)", {}),
    ((2, 12), "a (b c) -> a b c", {"b": 3}),
    ((2, 12), "a (b c) -> c b a", {"c": 4}),
    ((2, 3, 4), "... c -> c ...", {}),
    ((2, 3, 4, 5), "b ... c -> b c ...", {}),
    ((2, 3, 4, 5), "b ... c -> b (...) c", {}),
    ((2, 3, 4, 5), "b ... c -> (b ... c)", {}),
    ((2, 3, 4), "a b c -> a 1 b c", {}),
    ((2, 1, 4), "a 1 b -> a b", {}),
    ((2, 1, 4), "a () b -> b a", {}),
    ((2, 3, 4), "a b c -> (a b) c", {}),
    ((2, 3, 4), "b h w -> b (w h)", {}),
    ((4, 6, 8, 3), "b (h h1) (w w1) c -> b h w (c h1 w1)", {"h1": 2, "w1": 2}),
    ((4, 6, 8, 3), "b (h1 h) (w1 w) c -> (b h1 w1) h w c", {"h1": 2, "w1": 2}),
    ((), " -> ", {}),
    ((3,), "a -> a", {}),
    ((2, 3), "x_1 y2 -> y2 x_1", {}),
]


@pytest.mark.parametrize("shape,pattern,lengths", CASES)
def test_values_match_torch(shape, pattern, lengths):
    arr = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    want = torch_rearrange(torch.tensor(arr), pattern, **lengths)
    got = rearrange(tidal.tensor(arr), pattern, **lengths)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_list_input_is_stacked():
    parts = [np.full((2, 3), float(i), np.float32) for i in range(4)]
    want = torch_rearrange([torch.tensor(p) for p in parts], "n a b -> a (n b)")
    got = rearrange([tidal.tensor(p) for p in parts], "n a b -> a (n b)")
    np.testing.assert_array_equal(got.numpy(), want.numpy())


ERRORS = [
    ("a b -> a b c", {}), ("a b c -> a b", {}), ("a (b c) -> a b c", {}), ("a b c -> a b c d", {"d": 2}),
    ("a a b -> a b", {}), ("a b c -> (a a) b c", {}), ("a b c", {}), ("a b c -> a b c -> a", {}),
    ("a b 2 -> a b", {}), ("a b c -> c b a", {"e": 3}),
    ("a b c -> c b a", {"a": 2.0}), ("a b c -> ... a b c", {}), ("(a ...) -> a ...", {}),
    ("a (b c -> a b c", {}), ("a b c) -> a b c", {}), ("a ((b c)) -> a b c", {}), ("_a b c -> _a b c", {}),
    ("a b c d e -> a b c d e", {}),
]


@pytest.mark.parametrize("pattern,lengths", ERRORS)
def test_errors_match_torch(pattern, lengths):
    with pytest.raises((ValueError, TypeError)) as want:
        torch_rearrange(torch.zeros(2, 3, 4), pattern, **lengths)
    with pytest.raises((ValueError, TypeError)) as got:
        rearrange(tidal.zeros(2, 3, 4), pattern, **lengths)
    assert type(got.value) is type(want.value)
    assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


def test_sizes_that_do_not_fit():
    # (torch raises functorch.dim's DimensionBindError here; tidal a ValueError naming the sizes)
    with pytest.raises(ValueError, match="Shape mismatch, 2 != 3"):
        rearrange(tidal.zeros(2, 3, 4), "a b c -> c b a", a=3)
    with pytest.raises(ValueError, match="can't divide axis of length 12 in chunks of 5"):
        rearrange(tidal.zeros(2, 12), "a (b c) -> a b c", b=5)


def test_torch_func_name():
    import tidal.compat as tc
    assert tc.func.rearrange is rearrange
