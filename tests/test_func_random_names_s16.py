"""torch.func.debug_unwrap and torch.random.thread_safe_generator under tidal.compat, as torch answers them outside
thread workers and transforms' wrappers."""
import torch

import tidal
import tidal.compat



def test_debug_unwrap_returns_the_tensor_inside_and_outside_transforms():
    seen = []

    def f(x):
        seen.append(tidal.func.debug_unwrap(x))
        return (x * x).sum()
    x = tidal.randn(3, 2)
    g = tidal.func.vmap(tidal.func.grad(f))(x)
    # (as torch: the batched value, batch dim in front)
    assert all(isinstance(s, tidal.Tensor) for s in seen) and tuple(seen[0].shape) == (3, 2)
    assert tidal.func.debug_unwrap(x, recurse=False) is x
    torch.testing.assert_close(torch.from_numpy(g.numpy()), 2 * torch.from_numpy(x.numpy()))
    assert torch.func.debug_unwrap(torch.ones(1)) is not None


def test_thread_safe_generator_is_none_outside_thread_workers_as_torch():
    assert torch.random.thread_safe_generator() is None
    assert tidal.compat.random.thread_safe_generator() is None
    assert "thread_safe_generator" in tidal.compat.random.__all__
